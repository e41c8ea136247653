"""A content fingerprint of a tensor: its element type, shape and bits, nothing else.

Two files holding the same tensor (``.npy`` on one machine, ``.safetensors``
on another; a raw ``'<V2'`` array read as bfloat16 and a ``BF16`` tensor) get
the same fingerprint; the file's path, name, container and the tensor's key
do not enter it.

The digest is SHA-256 over::

    b"numerics.fingerprint/1\\n"
    + JSON {"dtype": <format name or numpy dtype name>, "shape": [...]} + b"\\n"
    + the codes, little-endian, in C order, each in the format's code width
      (one byte per code for formats narrower than 8 bits)

With ``canonicalize=True`` the codes are first made canonical: ``-0`` becomes
``+0`` and every NaN becomes the format's canonical NaN code
(:attr:`numerics.formats.Format.code_of_nan`), so results that differ only
there (a sign of zero, a NaN payload) compare equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from numerics.formats import Format, NaNEncoding, as_format

__all__ = ["CHUNK", "Fingerprint", "canonical_codes", "fingerprint"]

#: Elements hashed per chunk.
CHUNK = 1 << 22
_MAGIC = b"numerics.fingerprint/1\n"


@dataclass(frozen=True)
class Fingerprint:
    """A tensor's fingerprint: ``sha256`` hex digest, and what went into it."""

    digest: str
    dtype: str
    shape: tuple[int, ...]
    canonical: bool
    algorithm: str = "sha256"


def canonical_codes(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """``-0`` to ``+0`` and every NaN to the canonical NaN code.

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
        (then ``shape`` is required), so memory-mapped tensors stream through.
    shape : tuple of int, optional
        The tensor's shape (required with a callable).
    fmt : Format or str, optional
        The format of the codes; its name is the dtype that is hashed.
    canonicalize : bool
        Canonicalise ``-0`` and NaN codes first (float formats only).
    chunk : int
        Elements read and hashed at a time (the digest does not depend on it).

    Raises
    ------
    TypeError
        If the elements are not codes (unsigned) with a format, nor integers without.
    ValueError
        For an unknown format or a code beyond the format's width.

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
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"Got {chunk=!r}, but it must be a positive int")
    if callable(chunks):
        if shape is None:
            raise ValueError("Got shape=None, but a callable chunks needs the tensor's shape")
        get = chunks
        dims = tuple(int(n) for n in shape)
        first = np.asarray(get(0, 0))
        dtype = first.dtype
    else:
        arr = np.asarray(chunks)
        dims = tuple(int(n) for n in arr.shape)
        flat = arr.reshape(-1)
        dtype = arr.dtype

        def get(start: int, stop: int) -> np.ndarray:
            return flat[start:stop]

    if fmt is None:
        if dtype.kind not in "iub":
            raise TypeError(
                f"Got elements of dtype {dtype}, but without a format only integer and bool "
                "tensors are fingerprinted (pass fmt= and the codes)"
            )
        name = dtype.name
        out_dtype = dtype.newbyteorder("<")
    else:
        if dtype.kind != "u" or dtype.itemsize > fmt.code_dtype.itemsize:
            raise TypeError(f"Got codes of dtype {dtype}, but {fmt.name} codes are unsigned "
                            f"integers of at most {fmt.code_dtype.itemsize} byte(s)")
        name = fmt.name
        out_dtype = fmt.code_dtype.newbyteorder("<")
    import hashlib  # imported here: a few ms

    h = hashlib.sha256(_MAGIC)
    h.update(json.dumps({"dtype": name, "shape": list(dims)}, separators=(",", ":")).encode())
    h.update(b"\n")
    n = int(np.prod(dims, dtype=np.int64))
    for start in range(0, n, chunk):
        block = np.asarray(get(start, min(start + chunk, n)))
        if fmt is not None and fmt.bits < 8 * block.dtype.itemsize and block.size \
                and int(block.max()) >= fmt.num_codes:
            raise ValueError(f"Got code {int(block.max()):#x}, beyond the {fmt.bits}-bit codes "
                             f"of {fmt.name}")
        if fmt is not None and canonicalize:
            block = canonical_codes(block, fmt)
        h.update(np.ascontiguousarray(block, dtype=out_dtype).tobytes())
    return Fingerprint(h.hexdigest(), name, dims, bool(canonicalize and fmt is not None))
