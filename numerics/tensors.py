"""Reading tensors from ``.npy``, ``.npz`` and ``.safetensors`` files, as codes of a format.

Files are memory-mapped where the container allows it (``.npy`` and
``.safetensors``; a ``.npz`` member is a zip entry and is read whole), so a
multi-gigabyte checkpoint costs nothing until its elements are visited.

Formats
-------
A tensor's format is inferred from its dtype: ``float64``/``float32``/
``float16`` and the ml_dtypes types (``bfloat16``, ``float8_e4m3fn``, ...)
map to the registered formats, and safetensors' ``BF16``, ``F8_E4M3``,
``F8_E5M2``, ... to bfloat16, e4m3fn, e5m2, ....  numpy saves ml_dtypes arrays
with a raw void dtype (``'<V2'``): such a tensor has no format until one is
given, and then its bytes are *reinterpreted* as codes of that format
(:func:`load_tensor` with ``fmt=``).

safetensors files are read by parsing their header (an 8-byte little-endian
length, then JSON) and mapping each tensor's bytes with :func:`numpy.memmap`:
the ``safetensors`` package cannot hand bf16/fp8 tensors to numpy, and one
reader for every dtype keeps them all on the same, lazily-read path.
"""

from __future__ import annotations

import ast
import json
import math
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from numerics.dtypes import format_of_dtype
from numerics.encoding import decode, encode
from numerics.formats import Format, as_format

__all__ = [
    "SAFETENSORS_DTYPES",
    "TORCH_SUFFIXES",
    "Tensor",
    "TensorFileError",
    "check_raw_codes",
    "check_tensor_dtype",
    "element_range",
    "list_tensors",
    "load_tensor",
    "file_errors",
    "fs_path",
    "npy_header",
    "npz_members",
    "read_npz_member",
    "parse_json",
    "read_npy",
    "safetensors_entries",
    "safetensors_packed",
    "unpack_nibbles",
]

#: safetensors dtype strings and the numpy dtypes (or ml_dtypes type names) their bytes are.
#: ``SAFETENSORS_DTYPES`` (all numpy dtypes) is built from it on first use, since
#: importing ml_dtypes takes most of a second.
_SAFETENSORS: dict[str, np.dtype | str] = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F8_E8M0": "float8_e8m0fnu",
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
#: safetensors dtype strings of elements narrower than a byte, packed two to a byte with
#: the first element in the low four bits (torch's ``float4_e2m1fn_x2``): each is read
#: unpacked, one element per byte, as the ml_dtypes type named.
_PACKED: dict[str, str] = {"F4": "float4_e2m1fn"}
_SUFFIXES = (".npy", ".npz", ".safetensors")
#: The suffixes of torch files (zip or legacy pickles of a state dict), which
#: :mod:`numerics.checkpoint` reads with torch.
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
_MAX_HEADER = 100 * 2**20

if TYPE_CHECKING:
    #: safetensors dtype strings and the numpy/ml_dtypes dtypes their bytes are.
    SAFETENSORS_DTYPES: dict[str, np.dtype]


def _safetensors_dtype(code: str) -> np.dtype:
    """The numpy dtype of safetensors dtype string ``code`` (a key of ``_SAFETENSORS``, or of
    ``_PACKED``: the type of one element unpacked)."""
    dtype = _PACKED.get(code) or _SAFETENSORS[code]
    if isinstance(dtype, str):
        import ml_dtypes

        dtype = np.dtype(getattr(ml_dtypes, dtype))
    return dtype


def __getattr__(name: str) -> Any:
    # SAFETENSORS_DTYPES: safetensors dtype strings and the numpy/ml_dtypes dtypes their
    # bytes are, built on first access (it imports ml_dtypes).
    if name == "SAFETENSORS_DTYPES":
        table = {code: _safetensors_dtype(code) for code in _SAFETENSORS}
        globals()[name] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TensorFileError(ValueError):
    """A file that is not a readable tensor file, or lacks the tensor asked for."""


@lru_cache(maxsize=1)
def file_errors() -> tuple[type[Exception], ...]:
    """What numpy's and zipfile's parsers raise on a corrupt file: besides the usual, a
    tokenizer error (an unbalanced ``.npy`` header), a TypeError (a header with bytes
    keys), NotImplementedError and RuntimeError (zip members compressed with an
    unsupported method, or encrypted).  Caught where a file is parsed (``except
    file_errors():`` builds the tuple only when something is raised) and reported as a
    :class:`TensorFileError`.

    Returns
    -------
    tuple of type
        The exception classes (built once, cached).

    Examples
    --------
    >>> ValueError in file_errors() and RecursionError not in file_errors()
    True
    """
    import tokenize
    import zipfile
    import zlib

    return (ValueError, EOFError, OSError, SyntaxError, OverflowError, TypeError,
            NotImplementedError, RuntimeError, tokenize.TokenError, zipfile.BadZipFile,
            zlib.error, struct.error)


@dataclass(frozen=True)
class Tensor:
    """One tensor of a file, with the format of its elements when it has one.

    Attributes
    ----------
    path : str
        The file.
    key : str
        The tensor's name in the file (``""`` for ``.npy``).
    array : numpy.ndarray
        The elements as stored (often a read-only memory map); for a raw
        tensor reinterpreted with ``fmt``, the codes.
    format : Format or None
        The format of the elements; None for integer, bool and raw tensors.
    stored_dtype : str
        The dtype as the file gives it (``"float32"``, ``"BF16"``, ``"|V2"``).
    """

    path: str
    key: str
    array: np.ndarray
    format: Format | None
    stored_dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(int(n) for n in self.array.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(self.array.size)

    @property
    def dtype_name(self) -> str:
        """The element type: the format's name, or the numpy dtype name."""
        return self.format.name if self.format is not None else self.array.dtype.name

    def codes(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Codes of the flattened elements ``[start:stop]`` (the format's unsigned dtype)."""
        if self.format is None:
            raise TensorFileError(
                f"Got tensor {self.label} of dtype {self.stored_dtype}, which is not a float "
                "format; give a format (-f) to read it as one"
            )
        start, stop = element_range(start, stop, self.array.size)
        flat = self.array.reshape(-1)[start:stop]
        if flat.dtype.kind == "u":
            return np.asarray(flat)
        native = np.ascontiguousarray(flat)
        return native.view(np.dtype(f"u{native.dtype.itemsize}")).astype(
            self.format.code_dtype, copy=False
        )

    def values(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """float64 values of the flattened elements ``[start:stop]``, exactly where possible.

        Float formats decode exactly; integers beyond ``2**53`` are rounded.
        """
        if self.format is None:
            start, stop = element_range(start, stop, self.array.size)
            flat = self.array.reshape(-1)[start:stop]
            return np.asarray(flat, dtype=np.float64)
        return np.asarray(decode(self.codes(start, stop), self.format), dtype=np.float64)

    def codes_in(self, fmt: Format, start: int = 0, stop: int | None = None, *,
                 rounding: str = "rne", overflow: str = "ieee") -> np.ndarray:
        """Codes of the elements ``[start:stop]`` rounded (once) into ``fmt``.

        The tensor's own codes when it already is in ``fmt``.  ``rounding`` is a
        deterministic mode: a chunk of a stochastic rounding would restart the random
        stream at its first element (use :func:`numerics.encode` on :meth:`values`
        with ``rng=`` instead).
        """
        if rounding == "sr":
            raise ValueError("Got rounding='sr', but codes_in rounds deterministically: use "
                             "numerics.encode(tensor.values(), fmt, rounding='sr', rng=seed)")
        if self.format == fmt:
            return self.codes(start, stop)
        start, stop = element_range(start, stop, self.array.size)
        flat = self.array.reshape(-1)[start:stop]
        src = np.asarray(flat) if self.format is None else self.values(start, stop)
        if src.dtype == np.bool_:
            src = src.astype(np.uint8)
        return np.asarray(encode(src, fmt, rounding=rounding, overflow=overflow))

    @property
    def label(self) -> str:
        """``path`` or ``path:key`` for messages."""
        return f"{self.path}:{self.key}" if self.key else self.path


def check_tensor_dtype(dtype: np.dtype, label: str) -> None:
    """TensorFileError unless ``dtype`` holds real numbers this library reads exactly.

    Refused: dtypes of no real numbers (complex, strings, objects, datetimes, structured
    records), numpy's platform long double (its values would be rounded to float64),
    and raw bytes of a width no format has.

    Parameters
    ----------
    dtype : numpy.dtype
        The stored dtype.
    label : str
        What holds it, for the message (``"tensor 'w' in 'x.npz'"``).

    Raises
    ------
    TensorFileError
        For the dtypes above, naming ``label`` and the dtype.

    Examples
    --------
    >>> check_tensor_dtype(np.dtype(np.complex64), "tensor 'w'")
    Traceback (most recent call last):
    ...
    numerics.tensors.TensorFileError: Got tensor 'w' of dtype complex64, which holds no real numbers
    """
    if dtype.kind not in "fiubV" and format_of_dtype(dtype) is None:
        raise TensorFileError(f"Got {label} of dtype {dtype}, which holds no real numbers")
    if dtype.kind == "f" and format_of_dtype(dtype) is None:  # np.longdouble (float96/128)
        raise TensorFileError(
            f"Got {label} of dtype {dtype} (numpy's platform long double), which is not "
            "supported; save it as float64 (or a narrower float) first")
    if dtype.type is np.void and (dtype.names is not None or dtype.itemsize not in (1, 2, 4, 8)):
        raise TensorFileError(f"Got {label} of dtype {dtype}, which holds no real numbers")


def element_range(start: object, stop: object, size: int) -> tuple[int, int]:
    """``(start, stop)`` of a read of the flattened elements ``[start:stop]`` of ``size``.

    ``stop`` None or beyond ``size`` reads to the end, and ``start`` beyond ``stop``
    reads nothing, as a slice does; but the indices are counts from the first element:
    a negative one (which a slice would count from the end, and a file offset would take
    before the tensor) and anything but an int are refused.

    Parameters
    ----------
    start : int
        The first element, ``>= 0``.
    stop : int or None
        One past the last element, ``>= 0``, or None for the end.
    size : int
        The number of elements.

    Returns
    -------
    tuple of int
        ``0 <= start <= stop <= size``.

    Raises
    ------
    TypeError
        For an index that is not an int (a bool is not one).
    ValueError
        For a negative index.

    Examples
    --------
    >>> element_range(2, None, 6), element_range(5, 3, 6), element_range(0, 99, 6)
    ((2, 6), (3, 3), (0, 6))
    """
    for name, v in (("start", start), ("stop", stop)):
        if v is None and name == "stop":
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"Got {name}={v!r}, but it must be an int")
        if v < 0:
            raise ValueError(f"Got {name}={v!r}, but element indices count from 0")
    end = size if stop is None else min(int(stop), size)  # type: ignore[call-overload]
    return min(int(start), end), end  # type: ignore[call-overload]


def fs_path(path: object, name: str = "path") -> str:
    """A path argument as a str (bytes decoded as :func:`os.fsdecode` does).

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The path argument.
    name : str, default "path"
        The argument's name, quoted in the error message.

    Returns
    -------
    str
        The path (not checked for existence).

    Raises
    ------
    TypeError
        If ``path`` is not a str, bytes or ``os.PathLike``; the message names
        the argument ``name``.
    """
    if isinstance(path, (str, bytes, os.PathLike)):
        return os.fsdecode(path)
    raise TypeError(f"Got {name}={path!r}, but it must be a path (str, bytes or os.PathLike)")


def _kind_of(path: str) -> str:
    if os.path.isdir(path):
        raise TensorFileError(f"Got {path!r}, which is a directory; a file is needed here")
    for suffix in _SUFFIXES:
        if path.lower().endswith(suffix):
            return suffix
    if path.lower().endswith(TORCH_SUFFIXES):
        raise TensorFileError(
            f"Got file {path!r}: load_tensor reads .npy, .npz and .safetensors files; "
            "open torch files with numerics.checkpoint.open_source (needs torch)"
        )
    raise TensorFileError(
        f"Got file {path!r}, but load_tensor reads only .npy, .npz and .safetensors files"
    )


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def parse_json(text: str | bytes, what: str) -> Any:
    """``json.loads(text)``, or TensorFileError ``"{what} is not JSON: ..."``.

    Any malformed document is a TensorFileError: bad syntax or encoding, a number
    of more digits than Python converts, nesting deeper than the parser's
    recursion limit (``"[" * 2000``), and an object holding a key twice (readers
    disagree on which entry counts: Python's takes the last, safetensors' refuses it).

    Parameters
    ----------
    text : str or bytes
        The JSON document (bytes decoded as :func:`json.loads` decodes them).
    what : str
        The start of the error message, naming the document.

    Returns
    -------
    object
        The parsed document (dicts, lists, str, int, float, bool, None).

    Raises
    ------
    TensorFileError
        For any malformed document (see above).

    Examples
    --------
    >>> parse_json('{"a": [1, 2]}', "the header")
    {'a': [1, 2]}
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as err:
        raise TensorFileError(f"{what} holds the key {err.args[0]!r} twice, so which entry "
                              "counts is ambiguous") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise TensorFileError(f"{what} is not JSON: {err}") from None
    except RecursionError:
        raise TensorFileError(f"{what} is not readable JSON: it nests too deeply") from None


def safetensors_packed(code: str) -> bool:
    """Whether a safetensors dtype string names elements packed two to a byte (``"F4"``).

    Parameters
    ----------
    code : str
        The dtype string of a header entry.

    Returns
    -------
    bool
        True for the packed 4-bit dtypes, whose entries :func:`safetensors_entries` gives
        with the dtype of one unpacked element (read them through :func:`unpack_nibbles`).

    Examples
    --------
    >>> safetensors_packed("F4"), safetensors_packed("F8_E4M3")
    (True, False)
    """
    return code in _PACKED


def unpack_nibbles(packed: np.ndarray, first: int, count: int) -> np.ndarray:
    """Elements ``first .. first + count - 1`` of 4-bit codes packed two to a byte, the
    first of each pair in the low four bits (safetensors' ``F4``, torch's
    ``float4_e2m1fn_x2``), one code per byte.

    Parameters
    ----------
    packed : numpy.ndarray of uint8
        The bytes, from the one holding element ``first``.
    first : int
        0 or 1: the nibble of ``packed[0]`` that holds the first element wanted.
    count : int
        How many elements; ``packed`` holds at least ``(first + count + 1) // 2`` bytes.

    Returns
    -------
    numpy.ndarray of uint8
        ``count`` codes, each below 16.

    Examples
    --------
    >>> [hex(c) for c in unpack_nibbles(np.array([0x21, 0x43], np.uint8), 1, 3)]
    ['0x2', '0x3', '0x4']
    """
    b = np.asarray(packed, np.uint8)[:(first + count + 1) // 2]
    out = np.empty(2 * b.size, np.uint8)
    np.bitwise_and(b, 0x0F, out=out[0::2])
    np.right_shift(b, 4, out=out[1::2])
    return out[first:first + count]


def _safetensors_header(path: str) -> tuple[dict[str, Any], int]:
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise TensorFileError(f"Got file {path!r}, which is too short to be a safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, _MAX_HEADER):
            raise TensorFileError(
                f"Got file {path!r}, whose safetensors header length {n} does not fit the file "
                f"of {size} bytes (truncated, or not a safetensors file)"
            )
        header = parse_json(f.read(n), f"Got file {path!r}, whose safetensors header")
    if not isinstance(header, dict):
        raise TensorFileError(f"Got file {path!r}, whose safetensors header is not a JSON object")
    header.pop("__metadata__", None)
    return header, 8 + n


def read_npy(path: str) -> np.ndarray:
    """A ``.npy`` file, memory-mapped (TensorFileError for an empty, text or object file).

    Parameters
    ----------
    path : str
        The file (bytes and path-likes are taken too, as by :func:`fs_path`).

    Returns
    -------
    numpy.ndarray
        The array as stored, memory-mapped read-only, in the file's shape, order and
        byte order; a ``'<f1'`` descr (ml_dtypes' float8_e5m2) as raw bytes, ``|V1``.

    Raises
    ------
    TensorFileError
        An empty, text, truncated or corrupt file, or one of Python objects.
    FileNotFoundError, PermissionError
        If the file cannot be opened.
    """
    path = fs_path(path)  # (an int would be read as a file descriptor, and closed)
    if os.path.getsize(path) == 0:
        raise TensorFileError(f"Got file {path!r}, which is empty, not a .npy file")
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise TensorFileError(f"Got file {path!r}, which is not a .npy file (it does not "
                                  "start with the .npy magic bytes; a text file?)")
        _check_npy_size(path, f)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except file_errors() as err:
        one_byte = _one_byte_float_npy(path)
        if one_byte is not None:
            return one_byte
        reason = str(err).split("\n")[0]
        if "allow_pickle" in reason or "pickle" in reason:
            reason = "it holds Python objects, not numbers"
        raise TensorFileError(f"Got file {path!r}, which is not a readable .npy file: "
                              f"{reason}") from None
    return arr


def _check_npy_size(path: str, f: Any) -> None:
    """TensorFileError for a ``.npy`` shorter than its header promises (checked exactly, before
    numpy sizes a memory map from a shape whose product may not fit in an int64)."""
    try:
        f.seek(0)
        shape, _, dtype = npy_header(f)
        data = f.tell()
    except _BeyondNumpy as err:
        raise TensorFileError(f"Got file {path!r}, which is not a readable .npy file: "
                              f"{err}") from None
    except file_errors():
        return  # not a plain .npy header: np.load says why
    if dtype.hasobject:
        return  # np.load says it holds Python objects
    promised = data + math.prod(shape) * dtype.itemsize  # exact: a Python int never wraps
    size = os.path.getsize(path)
    if size < promised:
        raise TensorFileError(
            f"Got file {path!r}, whose header promises shape {list(shape)} of {dtype.str} "
            f"(a file of {promised} bytes) but which is {size} bytes long "
            "(truncated or corrupt)")


_ONE_BYTE_FLOAT_DESCRS = ("<f1", "|f1", ">f1", "=f1")


def _one_byte_float_header(f: Any) -> tuple[tuple[int, ...], bool] | None:
    """``(shape, fortran_order)`` of the ``.npy`` stream ``f`` if its descr is ``'<f1'``
    (``f`` is then just past the header), else None."""
    try:
        major, _ = np.lib.format.read_magic(f)
        size_bytes = 2 if major == 1 else 4
        (length,) = struct.unpack("<H" if major == 1 else "<I", f.read(size_bytes))
        header = ast.literal_eval(f.read(length).decode("utf-8" if major >= 3 else "latin1"))
    except (MemoryError, RecursionError):  # a header nested or long beyond the parser
        return None
    except file_errors():
        return None
    if not isinstance(header, dict) or header.get("descr") not in _ONE_BYTE_FLOAT_DESCRS:
        return None
    shape, fortran = header.get("shape"), header.get("fortran_order")
    if not (isinstance(shape, tuple) and all(isinstance(n, int) and n >= 0 for n in shape)
            and isinstance(fortran, bool)):
        return None
    return shape, fortran


def npy_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``f`` (a file or a zip
    member, at its start), leaving ``f`` at the first element.

    A descr of ``'<f1'`` (ml_dtypes' float8_e5m2, which numpy cannot read back) is raw
    bytes, ``|V1``, as in :func:`read_npy`.  A corrupt header raises one of
    :func:`file_errors`.

    Parameters
    ----------
    f : binary file object
        A readable stream positioned at the start of the ``.npy`` data.

    Returns
    -------
    tuple of (tuple of int, bool, numpy.dtype)
        The shape, whether the elements are in Fortran order, and the dtype.
    """
    start = f.tell()
    version = np.lib.format.read_magic(f)
    try:
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    except ValueError:
        f.seek(start)
        one_byte = _one_byte_float_header(f)
        if one_byte is None:
            raise
        shape, fortran, dtype = one_byte[0], one_byte[1], np.dtype("V1")
    if not numpy_shape(shape, dtype.itemsize):
        raise _BeyondNumpy(f"the header's shape {list(shape)} is beyond what an array can "
                           "have")
    return shape, fortran, dtype


class _BeyondNumpy(ValueError):
    """A ``.npy`` header's shape that no numpy array can have (:func:`numpy_shape`)."""


def numpy_shape(shape: tuple[int, ...], itemsize: int) -> bool:
    """Whether numpy can make an array of ``shape`` (non-negative Python ints) and
    ``itemsize``: every size and the bytes of the non-zero sizes below ``2**63`` (numpy
    checks the product of the sizes that are not 0, so an empty array's other sizes are
    bounded too).

    Examples
    --------
    >>> numpy_shape((0, 2**60), 4), numpy_shape((0, 2**61), 4), numpy_shape((0, 2**64), 1)
    (True, False, False)
    """
    nonzero = math.prod(n for n in shape if n) * max(itemsize, 1)
    return all(n < 2**63 for n in shape) and nonzero < 2**63


def _one_byte_float_npy(path: str) -> np.ndarray | None:
    """A ``.npy`` of ``descr '<f1'`` as raw bytes (``|V1``), else None.

    ``np.save`` writes that descr for ml_dtypes' float8_e5m2 (the other fp8
    types get ``'<V1'``), and numpy cannot read it back; it can only be a
    1-byte float of ml_dtypes, so it is read as raw bytes that ``-f`` (or
    :meth:`TensorRef.as_format`) names the format of.
    """
    with open(path, "rb") as f:
        header = _one_byte_float_header(f)
        offset = f.tell()
    if header is None:
        return None
    shape, fortran = header
    size = int(np.prod(shape, dtype=object))
    if os.path.getsize(path) < offset + size:
        raise TensorFileError(f"Got file {path!r}, which is truncated: its header promises "
                              f"{size} bytes of elements")
    if size == 0:
        return np.empty(shape, "V1")
    return np.memmap(path, dtype="V1", mode="r", offset=offset, shape=shape,
                     order="F" if fortran else "C")


def list_tensors(path: str | bytes | os.PathLike[str]) -> list[str]:
    """Names of the tensors in a file (``[""]`` for ``.npy``).

    Parameters
    ----------
    path : str, bytes or path-like
        A ``.npy``, ``.npz`` or ``.safetensors`` file (by its suffix, any case).

    Returns
    -------
    list of str
        The names, sorted (``[""]`` for a ``.npy`` file).

    Raises
    ------
    FileNotFoundError, PermissionError
        If the file cannot be opened.
    TensorFileError
        If it is not a tensor file of a known kind.
    """
    path = fs_path(path)
    kind = _kind_of(path)
    if kind == ".npy":
        os.stat(path)  # FileNotFoundError, or PermissionError inside an unsearchable directory
        return [""]
    if kind == ".npz":
        import zipfile  # imported here: a few ms

        try:
            with zipfile.ZipFile(path) as z:
                return sorted(npz_members(path, z.namelist()))
        except zipfile.BadZipFile:
            raise TensorFileError(f"Got file {path!r}, which is not a valid .npz (zip) file") \
                from None
    return sorted(_safetensors_header(path)[0])


def npz_members(path: str, names: list[str]) -> list[str]:
    """The tensor names of the zip members ``names`` of the ``.npz`` file ``path``.

    A member ``x.npy`` holds tensor ``x``.  Two members of one name (a zip may
    hold duplicate entries, or both ``x`` and ``x.npy``) are a TensorFileError:
    readers disagree on which one is the tensor (numpy's ``load`` takes the last).

    Parameters
    ----------
    path : str
        The file, named in the error message.
    names : list of str
        The zip member names, as :meth:`zipfile.ZipFile.namelist` gives them.

    Returns
    -------
    list of str
        The tensor name of each member, in the order of ``names``.

    Raises
    ------
    TensorFileError
        If two members give the same tensor name.

    Examples
    --------
    >>> npz_members("w.npz", ["a.npy", "b"])
    ['a', 'b']
    """
    out = [n.removesuffix(".npy") for n in names]
    seen: dict[str, str] = {}
    for member, name in zip(names, out):
        if name in seen:
            raise TensorFileError(
                f"Got file {path!r}, which holds tensor {name!r} twice (zip members "
                f"{seen[name]!r} and {member!r}); which one is the tensor is ambiguous, so the "
                "file is refused")
        seen[name] = member
    return out


def read_npz_member(path: str, name: str) -> np.ndarray:
    """Tensor ``name`` of the ``.npz`` file ``path`` (member ``name.npy`` or ``name``), read
    whole, in its shape and byte order; a ``'<f1'`` member as raw bytes (:func:`npy_header`).

    Parameters
    ----------
    path : str
        The ``.npz`` file.
    name : str
        The tensor's name (as :func:`npz_members` gives it).

    Returns
    -------
    numpy.ndarray
        A read-only array over the member's bytes (``numpy.frombuffer``).

    Raises
    ------
    TensorFileError
        A corrupt, truncated, encrypted or unsupported member, or one of Python objects.
    """
    import zipfile  # imported here: a few ms

    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            member = dict(zip(npz_members(path, names), names)).get(name)
            if member is None:
                raise TensorFileError(f"Got tensor {name!r}, which {path!r} does not hold")
            with z.open(member) as f:
                shape, fortran, dtype = npy_header(f)
                if dtype.hasobject:
                    raise TensorFileError(f"Got member {name!r} of {path!r}, which holds "
                                          "Python objects, not numbers")
                count = math.prod(shape)
                try:
                    data = f.read(count * dtype.itemsize)
                except MemoryError:  # (a member that inflates beyond memory: a zip bomb)
                    raise TensorFileError(
                        f"Got member {name!r} of {path!r}, whose {count * dtype.itemsize} "
                        "bytes of elements do not fit in memory (a compressed member is "
                        "read whole; store the array uncompressed to read it in pieces)"
                    ) from None
    except file_errors() as err:
        if isinstance(err, (FileNotFoundError, PermissionError, TensorFileError)):
            raise
        raise TensorFileError(f"Got member {name!r} of {path!r}, which is not readable: "
                              f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
                              ) from None
    if len(data) != count * dtype.itemsize:
        raise TensorFileError(f"Got member {name!r} of {path!r}, which is truncated: its "
                              f"header promises {count * dtype.itemsize} bytes of elements")
    return np.frombuffer(data, dtype, count).reshape(shape, order="F" if fortran else "C")


def _pick_key(path: str, keys: list[str], key: str | None) -> str:
    if key is None:
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise TensorFileError(f"Got file {path!r}, which holds no tensor")
        shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
        raise TensorFileError(
            f"Got file {path!r} holding {len(keys)} tensors ({shown}); pick one with --key"
        )
    if key not in keys:
        shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
        raise TensorFileError(f"Got key={key!r}, but {path!r} holds only {shown}")
    return key


def _load_raw(path: str, key: str | None) -> tuple[str, np.ndarray, str]:
    kind = _kind_of(path)
    if kind == ".npy":
        if key:
            raise TensorFileError(f"Got key={key!r}, but a .npy file holds one unnamed tensor")
        arr = read_npy(path)
        return "", arr, arr.dtype.str
    if kind == ".npz":
        keys = list_tensors(path)
        name = _pick_key(path, keys, key)
        arr = read_npz_member(path, name)
        return name, arr, arr.dtype.str
    others: dict[str, str] = {}
    entries = safetensors_entries(path, unsupported=others)
    name = _pick_key(path, sorted([*entries, *others]), key)
    if name in others:
        raise _unsupported(name, path, others[name])
    dtype_code, dtype, shape, offset = entries[name]
    count = math.prod(shape)
    if count == 0:
        arr = np.empty(shape, dtype)
    elif safetensors_packed(dtype_code):  # (unpacked into memory: a byte per element)
        packed = np.memmap(path, dtype=np.uint8, mode="r", offset=offset,
                           shape=((count + 1) // 2,))
        arr = unpack_nibbles(packed, 0, count).view(dtype).reshape(shape)
    else:
        arr = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
    return name, arr, dtype_code


def _unsupported(name: str, path: str, code: str) -> TensorFileError:
    return TensorFileError(
        f"Got tensor {name!r} in {path!r} of safetensors dtype {code!r}, which is not "
        f"supported (supported: {', '.join([*_SAFETENSORS, *_PACKED])})")


def _short(x: object, limit: int = 40) -> str:
    """``repr(x)``, cut to ``limit`` characters for a message."""
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def safetensors_entries(path: str, *, unsupported: dict[str, str] | None = None
                        ) -> dict[str, tuple[str, np.dtype, tuple[int, ...], int]]:
    """Every tensor of a safetensors file: ``name -> (dtype code, dtype, shape, byte offset)``.

    The header is checked: each entry names a known dtype (or goes to ``unsupported``),
    and its byte range matches its shape and lies inside the file.

    Parameters
    ----------
    path : str
        The ``.safetensors`` file (bytes and path-likes are taken too).
    unsupported : dict of str to str, optional
        Where entries of a dtype this module does not read (``F6_E2M3``, ``C64``, a code
        newer than it) go, ``name -> dtype code``, with their byte range checked against
        the file's size only; without it such an entry raises.

    Returns
    -------
    dict of str to (str, numpy.dtype, tuple of int, int)
        For each tensor (``__metadata__`` left out): its safetensors dtype code
        (``"BF16"``), the numpy / ml_dtypes dtype of its bytes (little-endian; of one
        element unpacked for a packed code, :func:`safetensors_packed`), its shape, and
        the byte offset of its data from the start of the file.

    Raises
    ------
    TensorFileError
        A truncated or corrupt header, or an entry that does not fit or overlaps
        another (as the safetensors library refuses them).
    """
    path = fs_path(path)
    header, data_start = _safetensors_header(path)
    size = os.path.getsize(path)
    out: dict[str, tuple[str, np.dtype, tuple[int, ...], int]] = {}
    ranges: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        # an object of a string dtype, a list shape and a list of two offsets, each size an
        # exact non-negative integer (JSON's 1.5, true and -1 are not sizes)
        if not isinstance(entry, dict):
            raise TensorFileError(f"Got tensor {name!r} in {path!r} with a malformed header "
                                  f"entry: a JSON {type(entry).__name__}, not an object")
        dtype_code, shape, offsets = (entry.get(k) for k in ("dtype", "shape", "data_offsets"))
        if not isinstance(dtype_code, str) or not isinstance(shape, list) or not isinstance(
                offsets, list) or len(offsets) != 2 or not all(
                type(n) is int and n >= 0 for n in (*shape, *offsets)):
            raise TensorFileError(
                f"Got tensor {name!r} in {path!r} with a malformed header entry: dtype "
                f"{_short(dtype_code)}, shape {_short(shape)}, data_offsets {_short(offsets)} "
                "(a dtype string, a list of sizes and a list of two byte offsets are needed)")
        shape = tuple(shape)
        begin, end = offsets
        if dtype_code not in _SAFETENSORS and dtype_code not in _PACKED:
            if unsupported is None:
                raise _unsupported(name, path, dtype_code)
            if end < begin or data_start + end > size:
                raise TensorFileError(
                    f"Got tensor {name!r} in {path!r} whose byte range [{begin}, {end}) is "
                    "empty backwards or lies beyond the end of the file (truncated?)")
            unsupported[name] = dtype_code
            continue
        dtype = _safetensors_dtype(dtype_code)
        count = math.prod(shape)  # exact: a Python int never wraps
        if not numpy_shape(shape, dtype.itemsize):
            raise TensorFileError(
                f"Got tensor {name!r} in {path!r} of shape {_short(list(shape))}, beyond what "
                "an array can have")
        if safetensors_packed(dtype_code):
            if count % 2:  # (the safetensors library refuses a part of a byte too)
                raise TensorFileError(
                    f"Got tensor {name!r} in {path!r} of {count} elements of {dtype_code}, "
                    "which packs two to a byte: an odd count leaves half a byte")
            nbytes = count // 2
        else:
            nbytes = count * dtype.itemsize
        if end - begin != nbytes or data_start + end > size:
            raise TensorFileError(
                f"Got tensor {name!r} in {path!r} whose byte range [{begin}, {end}) does not "
                f"match its shape {list(shape)} and dtype {dtype_code} or lies beyond the end "
                "of the file (truncated?)"
            )
        out[name] = (dtype_code, dtype, shape, data_start + begin)
        if nbytes:
            ranges.append((begin, end, name))
    ranges.sort()
    for (_, end, first), (begin, _, second) in zip(ranges, ranges[1:]):
        if begin < end:
            raise TensorFileError(f"Got tensors {first!r} and {second!r} in {path!r} whose "
                                  "byte ranges overlap (a corrupt header)")
    return out


def check_raw_codes(codes: np.ndarray, fmt: Format, what: str) -> None:
    """TensorFileError unless every one of ``codes`` (raw bytes read as codes of ``fmt``)
    is a code of ``fmt``: the bytes of an fp4 or fp6 tensor can hold more; ``what``
    names the tensor.

    Parameters
    ----------
    codes : numpy.ndarray of unsigned int
        The raw elements viewed as codes (``fmt.code_dtype``).
    fmt : Format
        The format they are read as.
    what : str
        The tensor's name as the message shows it (quoted by the caller).

    Raises
    ------
    TensorFileError
        If some element is ``fmt.num_codes`` or more.

    Examples
    --------
    >>> check_raw_codes(np.array([3, 0x1F], np.uint8), as_format("e2m1fn"), "'w'")
    Traceback (most recent call last):
    ...
    numerics.tensors.TensorFileError: Got raw tensor 'w' holding byte values up to 0x1f, \
beyond the 4-bit codes of e2m1fn
    """
    if fmt.bits < 8 * codes.itemsize and codes.size and int(codes.max()) >= fmt.num_codes:
        raise TensorFileError(
            f"Got raw tensor {what} holding byte values up to {int(codes.max()):#x}, "
            f"beyond the {fmt.bits}-bit codes of {fmt.name}")


def load_tensor(path: str | bytes | os.PathLike[str], *, key: str | None = None,
                fmt: Format | str | None = None) -> Tensor:
    """Open one tensor of a ``.npy``, ``.npz`` or ``.safetensors`` file.

    Parameters
    ----------
    path : str, bytes or path-like
        The file.
    key : str, optional
        The tensor's name; optional when the file holds exactly one.
    fmt : Format or str, optional
        Only for tensors stored as raw bytes (numpy's void dtype, how it saves
        ml_dtypes arrays): read the bytes as codes of this format.  The
        element width must be the format's code width.  Numeric tensors keep
        their own format (round them with :meth:`Tensor.codes_in`).

    Returns
    -------
    Tensor
        The tensor, its array memory-mapped where the container allows it (``.npy``,
        ``.safetensors``; a ``.npz`` member is read whole), big-endian data copied to
        native byte order; ``format`` None for integer, bool and unnamed raw tensors.

    Raises
    ------
    FileNotFoundError, PermissionError
        If the file cannot be opened.
    TypeError
        If ``path`` is not a path or ``key`` not a str.
    TensorFileError
        Wrong kind of file, missing or ambiguous key, raw bytes of the wrong
        width for ``fmt``, or codes outside the format.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "x.npy"), np.array([1.0, 0.1], np.float32))
    >>> t = load_tensor(os.path.join(d, "x.npy"))
    >>> t.format.name, t.shape, [hex(c) for c in t.codes()]
    ('binary32', (2,), ['0x3f800000', '0x3dcccccd'])
    """
    path = fs_path(path)
    if key is not None and not isinstance(key, str):
        raise TypeError(f"Got key={key!r}, but it must be a tensor name (a str) or None")
    if fmt is not None:
        fmt = as_format(fmt)  # checked even where the file's dtype names the format
    name, arr, stored = _load_raw(path, key)
    check_tensor_dtype(arr.dtype, "tensor " + (f"{path}:{name}" if name else repr(path)))
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.dtype.type is np.void:
        if fmt is None:
            return Tensor(path, name, arr, None, stored)
        fmt = as_format(fmt)
        width = fmt.code_dtype.itemsize
        if arr.dtype.itemsize != width:
            raise TensorFileError(
                f"Got raw tensor {name or path!r} with {arr.dtype.itemsize}-byte elements, but "
                f"{fmt.name} codes take {width} byte(s)"
            )
        codes = arr.view(fmt.code_dtype)
        check_raw_codes(codes, fmt, repr(name or path))
        return Tensor(path, name, codes, fmt, stored)
    if arr.dtype.kind not in "fiub" and format_of_dtype(arr.dtype) is None:
        raise TensorFileError(
            f"Got tensor {name or path!r} of dtype {arr.dtype}, which holds no real numbers"
        )
    return Tensor(path, name, arr, format_of_dtype(arr.dtype), stored)
