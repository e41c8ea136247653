"""A content fingerprint of a tensor: its element type, shape and bits, nothing else.

Two files holding the same tensor (``.npy`` on one machine, ``.safetensors``
on another; a raw ``'<V2'`` array read as bfloat16 and a ``BF16`` tensor) get
the same fingerprint; the file's path, name, container and the tensor's key
do not enter it.

The hashed *stream* is the codes, little-endian, in C order, each in the
format's code width (one byte per code for formats narrower than 8 bits).
It is cut into blocks of :data:`BLOCK_BYTES` (1 MiB; the last block may be
shorter, an empty tensor has none), each block is hashed with XXH64 (seed
0), and the digest is SHA-256 over::

    b"numerics.fingerprint/2\\n"
    + JSON {"dtype": <format name or numpy dtype name>, "shape": [...]} + b"\\n"
    + the XXH64 of every block in order, each as 8 little-endian bytes

where the JSON is written compactly, keys in that order, ASCII:
``{"dtype":"bfloat16","shape":[2,3]}`` (``json.dumps(..., separators=(",", ":"))``),
and a code's width is that of the format's code dtype (4 bytes for the 19-bit tf32).

The blocks are defined on the tensor's own stream, never on offsets in a
file, so the digest does not depend on the container, the sharding, the
chunks read or the threads; the blocks are hashed independently, on all
cores (:func:`block_digests` releases the GIL), at several GB/s.  The
fingerprint is for telling changed tensors and checkpoints apart: a change
to a block goes unnoticed with probability about ``2**-64``.  XXH64 is not
a cryptographic hash, so the fingerprint is *not* meant to resist an
adversary who crafts a colliding tensor; hash the files with SHA-256 for
that.

With ``canonicalize=True`` the codes are first made canonical: ``-0`` becomes
``+0`` and every NaN becomes the format's canonical NaN code
(:attr:`numerics.formats.Format.code_of_nan`), so results that differ only
there (a sign of zero, a NaN payload) compare equal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from numerics.compare import check_chunk_size, check_shape
from numerics.dtypes import as_input, refuse_masked
from numerics.formats import Format, NaNEncoding, as_format

__all__ = [
    "ALGORITHM",
    "BLOCK_BYTES",
    "CHUNK",
    "Fingerprint",
    "block_digests",
    "canonical_codes",
    "code_stream",
    "combine_digests",
    "fingerprint",
    "hashed_dtype",
]

#: Elements read per chunk (rounded to whole blocks; the digest does not depend on it).
CHUNK = 1 << 22
#: Bytes of the stream per XXH64 block: part of the definition of the digest.
BLOCK_BYTES = 1 << 20
#: How the digest is made: XXH64 per block, SHA-256 over the block digests.
ALGORITHM = "xxh64-sha256"
_MAGIC = b"numerics.fingerprint/2\n"


@dataclass(frozen=True)
class Fingerprint:
    """A tensor's fingerprint: the hex digest (see the module docstring), and what went into it.

    Attributes
    ----------
    digest : str
        The SHA-256 hex digest (64 lowercase hex digits).
    dtype : str
        The hashed dtype name: the format's name, or the numpy dtype name of integer
        elements (``"int32"``).
    shape : tuple of int
        The hashed shape.
    canonical : bool
        Whether ``-0`` and NaN codes were canonicalised first (only with a format).
    algorithm : str
        :data:`ALGORITHM`, how the digest is made.
    """

    digest: str
    dtype: str
    shape: tuple[int, ...]
    canonical: bool
    algorithm: str = ALGORITHM


def canonical_codes(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """``-0`` to ``+0`` and every NaN to the canonical NaN code.

    Parameters
    ----------
    codes : array_like of unsigned int
        Codes of ``fmt`` (not checked), any shape.
    fmt : Format
        Their format.

    Returns
    -------
    numpy.ndarray
        A new array of ``fmt.code_dtype``, shaped like ``codes`` (``codes`` is left
        as it is).

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> canonical_codes(np.array([0x8000, 0xFFC1, 0x7F81, 0x3F80], np.uint16),
    ...                 get_format("bfloat16")).tolist() == [0, 0x7FC0, 0x7FC0, 0x3F80]
    True
    """
    c = np.asarray(codes).astype(fmt.code_dtype, copy=True)
    mag = c & fmt.code_dtype.type(fmt.magnitude_mask)
    if fmt.nan is NaNEncoding.IEEE:
        nan = mag > fmt.code_dtype.type(fmt.code_of_inf)
    elif fmt.nan is NaNEncoding.TOP:
        nan = mag == fmt.code_dtype.type(fmt.magnitude_mask)
    else:  # NEGATIVE_ZERO: one NaN code already; NONE: no NaN
        nan = np.zeros(c.shape, bool)
    if fmt.has_negative_zero:
        c[c == fmt.code_dtype.type(fmt.sign_mask)] = 0
    if fmt.code_of_nan is not None:
        c[nan] = fmt.code_of_nan
    return c


def fingerprint(
    chunks: np.ndarray | Callable[[int, int], np.ndarray],
    shape: tuple[int, ...] | None = None,
    *,
    fmt: Format | str | None = None,
    canonicalize: bool = False,
    chunk: int = CHUNK,
) -> Fingerprint:
    """Fingerprint a tensor of codes of ``fmt`` (or of integers, without ``fmt``).

    Parameters
    ----------
    chunks : ndarray, or callable ``(start, stop) -> ndarray``
        The codes (unsigned ints) when ``fmt`` is given, else an integer or
        bool array; or a function giving the flattened elements chunk by chunk
        (then ``shape`` is required), so memory-mapped tensors stream through;
        ``chunks(start, stop)`` must return exactly ``stop - start`` elements.
    shape : tuple of int, optional
        The tensor's shape: ints ``>= 0``.  Required with a callable; with an array,
        the shape hashed in place of the array's own (flat codes of a shaped tensor),
        so it must hold as many elements as the array.
    fmt : Format or str, optional
        The format of the codes; its name is the dtype that is hashed.
    canonicalize : bool
        Canonicalise ``-0`` and NaN codes first (float formats only): True or False.
    chunk : int
        Elements read and hashed at a time, rounded down to whole blocks
        (the digest does not depend on it); a positive int.

    Returns
    -------
    Fingerprint
        The digest, with the dtype name and shape it covers.

    Raises
    ------
    TypeError
        If the elements are not codes (unsigned) with a format, nor integers without,
        ``chunks`` is not array-like, ``shape`` is not a tuple of ints or
        ``canonicalize`` not a bool.
    ValueError
        For an unknown format, a code beyond the format's width, a negative entry of
        ``shape``, a ``shape`` of another size than the array ``chunks``, a ragged
        ``chunks``, a callable ``chunks`` returning more or fewer elements than asked,
        a callable ``chunks`` without ``shape``, or a ``chunk`` that is not a positive
        int.

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> bf16 = get_format("bfloat16")
    >>> a = fingerprint(np.array([0x3F80, 0x8000], np.uint16), fmt=bf16)
    >>> b = fingerprint(np.array([0x3F80, 0x0000], np.uint16), fmt=bf16)
    >>> a.digest == b.digest, a.digest == fingerprint(
    ...     np.array([0x3F80, 0x0000], np.uint16), fmt=bf16, canonicalize=True).digest
    (False, False)
    >>> fingerprint(np.array([0x3F80, 0x8000], np.uint16), fmt=bf16, canonicalize=True) \\
    ...     .digest == b.digest
    True
    """
    if fmt is not None:
        fmt = as_format(fmt)
    if isinstance(chunk, (bool, np.bool_)) or not isinstance(chunk, (int, np.integer)) \
            or chunk < 1:
        raise ValueError(f"Got {chunk=!r}, but it must be a positive int")
    chunk = int(chunk)
    if not isinstance(canonicalize, (bool, np.bool_)):
        raise TypeError(f"Got canonicalize={canonicalize!r}, but it must be a bool")
    if callable(chunks):
        if shape is None:
            raise ValueError("Got shape=None, but a callable chunks needs the tensor's shape")
        dims = check_shape(shape)
        read = chunks
        dtype = np.asarray(read(0, 0)).dtype

        def get(start: int, stop: int) -> np.ndarray:
            block = check_chunk_size(np.asarray(read(start, stop)), start, stop, "chunks")
            if hashed_dtype(block.dtype, fmt)[0] != hashed_dtype(dtype, fmt)[0]:
                raise TypeError(f"Got chunks({start}, {stop}) of dtype {block.dtype}, but "
                                f"chunks(0, 0) gave {dtype}: every chunk must be of one dtype")
            return block
    else:
        # (an array as it is: as_input would read ml_dtypes' int4 as int8, another dtype)
        refuse_masked(chunks, "chunks")
        arr = chunks if isinstance(chunks, np.ndarray) else as_input(chunks, "chunks")
        dims = tuple(int(n) for n in arr.shape)
        if shape is not None:
            dims = check_shape(shape)
            if math.prod(dims) != arr.size:
                raise ValueError(f"Got shape={shape!r} of {math.prod(dims)} elements, but "
                                 f"chunks holds {arr.size} (shape {arr.shape})")
        flat = arr.reshape(-1)
        dtype = arr.dtype

        def get(start: int, stop: int) -> np.ndarray:
            return flat[start:stop]

    name, out_dtype = hashed_dtype(dtype, fmt)
    n = math.prod(dims)  # exact: a Python int never wraps
    per = _elements_per_read(chunk, out_dtype.itemsize)
    digests = [block_digests(code_stream(get(start, min(start + per, n)), fmt,
                                         out_dtype, canonicalize=canonicalize))
               for start in range(0, n, per)]
    return Fingerprint(combine_digests(name, dims, digests), name, dims,
                       bool(canonicalize and fmt is not None))


def hashed_dtype(dtype: np.dtype, fmt: Format | None) -> tuple[str, np.dtype]:
    """The dtype name a fingerprint hashes, and the little-endian dtype of its stream.

    Parameters
    ----------
    dtype : numpy.dtype
        The elements' dtype.
    fmt : Format or None
        The format of the codes, or None for integer or bool elements.

    Returns
    -------
    tuple of (str, numpy.dtype)
        The format's name (or the numpy dtype name without a format) and the
        little-endian dtype of the stream (``fmt.code_dtype``, or ``dtype``'s own).

    Raises
    ------
    TypeError
        If the elements are not codes (unsigned) with a format, nor integers without.

    Examples
    --------
    >>> name, stream = hashed_dtype(np.dtype(">i4"), None)
    >>> name, stream.str
    ('int32', '<i4')
    >>> hashed_dtype(np.dtype(np.uint8), as_format("e2m1fn"))[0]
    'e2m1fn'
    """
    if fmt is None:
        if dtype.kind not in "iub":
            raise TypeError(
                f"Got elements of dtype {dtype}, but without a format only integer and bool "
                "tensors are fingerprinted (pass fmt= and the codes)"
            )
        return dtype.name, dtype.newbyteorder("<")
    if dtype.kind != "u" or dtype.itemsize > fmt.code_dtype.itemsize:
        raise TypeError(f"Got codes of dtype {dtype}, but {fmt.name} codes are unsigned "
                        f"integers of at most {fmt.code_dtype.itemsize} byte(s)")
    return fmt.name, fmt.code_dtype.newbyteorder("<")


def _elements_per_read(chunk: int, itemsize: int) -> int:
    """``chunk`` elements rounded down to whole blocks (at least one block)."""
    per_block = BLOCK_BYTES // itemsize
    return max(1, chunk // per_block) * per_block


def code_stream(codes: np.ndarray, fmt: Format | None, out_dtype: np.dtype, *,
                canonicalize: bool = False) -> np.ndarray:
    """Elements as the fingerprint hashes them: checked, canonical if asked, contiguous.

    ``out_dtype`` is :func:`hashed_dtype`'s; the result holds the stream's
    bytes for these elements.

    Parameters
    ----------
    codes : numpy.ndarray
        The elements (flattened): codes of ``fmt``, or integers without a format.
    fmt : Format or None
        The format of the codes.
    out_dtype : numpy.dtype
        The stream's little-endian dtype.
    canonicalize : bool, default False
        Canonicalise ``-0`` and NaN codes first (with a format only).

    Returns
    -------
    numpy.ndarray
        1-D, C-contiguous array of ``out_dtype``.

    Raises
    ------
    ValueError
        For a code beyond the format's width.
    """
    block = np.asarray(codes).reshape(-1)
    if fmt is not None and fmt.bits < 8 * block.dtype.itemsize and block.size \
            and int(block.max()) >= fmt.num_codes:
        raise ValueError(f"Got code {int(block.max()):#x}, beyond the {fmt.bits}-bit codes "
                         f"of {fmt.name}")
    if fmt is not None and canonicalize:
        block = canonical_codes(block, fmt)
    return np.ascontiguousarray(block, dtype=out_dtype)


def block_digests(stream: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of every :data:`BLOCK_BYTES` block of a stream's bytes, as uint64.

    ``stream`` is a contiguous array whose first byte starts a block (the
    last block may be shorter).  Compiled; releases the GIL.

    Parameters
    ----------
    stream : numpy.ndarray
        The stream's elements (any dtype; their bytes in memory are hashed).

    Returns
    -------
    numpy.ndarray of uint64
        One digest per block, ``ceil(nbytes / BLOCK_BYTES)`` of them.

    Examples
    --------
    >>> import xxhash
    >>> s = np.arange(3 * 2**18 + 5, dtype="<u4")
    >>> d = block_digests(s)
    >>> raw = s.tobytes()
    >>> [int(v) for v in d] == [xxhash.xxh64_intdigest(raw[i:i + BLOCK_BYTES])
    ...                         for i in range(0, len(raw), BLOCK_BYTES)]
    True
    """
    from numerics.kernels.hash import xxh64_blocks

    data = np.ascontiguousarray(stream).reshape(-1).view(np.uint8)
    words = data[:data.size // 8 * 8].view("<u8")
    if not words.dtype.isnative:
        words = words.astype(np.uint64)  # a big-endian machine: the words as numbers
    out = np.empty(-(-data.size // BLOCK_BYTES), np.uint64)
    xxh64_blocks(words, data, BLOCK_BYTES, out)
    return out


def combine_digests(name: str, dims: tuple[int, ...], digests: list[np.ndarray]) -> str:
    """The hex digest of a tensor from its dtype name, shape and block digests (in order).

    Parameters
    ----------
    name : str
        The hashed dtype name (:func:`hashed_dtype`).
    dims : tuple of int
        The tensor's shape.
    digests : list of numpy.ndarray of uint64
        The block digests of each read (:func:`block_digests`), in stream order.

    Returns
    -------
    str
        The SHA-256 hex digest (see the module docstring).

    Examples
    --------
    >>> len(combine_digests("int32", (0,), []))
    64
    """
    import hashlib  # imported here: a few ms that `import numerics` does not pay

    h = hashlib.sha256(_MAGIC)
    h.update(json.dumps({"dtype": name, "shape": list(dims)}, separators=(",", ":")).encode())
    h.update(b"\n")
    for d in digests:
        h.update(np.asarray(d, np.uint64).astype("<u8").tobytes())
    return h.hexdigest()
