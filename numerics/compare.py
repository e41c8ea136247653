"""Element-by-element comparison of two tensors of codes in one format.

:func:`compare_codes` walks both tensors in chunks (memory-mapped inputs are
never loaded whole) and reports:

* bitwise mismatches (codes that differ, ``-0`` vs ``+0`` and NaN payloads
  included);
* the exact ULP distance of every element (:func:`numerics.ulp.ulp_distance`:
  the number of representable values passed between the two, ``+0`` and
  ``-0`` the same point, infinities one step beyond ``max``; in a format
  without zero ``-2**emin`` and ``+2**emin`` are one step apart) and its
  histogram in power-of-two buckets ``0, 1, 2, 3-4, 5-8, ...``;
* the largest absolute error ``|a - b|`` and relative error ``|a - b| / |a|``
  (``a``, the first tensor, is the reference) over elements finite on both
  sides;
* NaN mismatches (NaN on exactly one side; both NaN is agreement) and inf
  mismatches (an infinity on one side and not the same one on the other);
* the worst elements: NaN mismatches first, then by ULP distance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeGuard

import numpy as np

from numerics.dtypes import as_input
from numerics.encoding import decode
from numerics.formats import Format, as_format

__all__ = [
    "CHUNK",
    "ComparePartial",
    "DiffReport",
    "WorstElement",
    "check_chunk_size",
    "check_codes",
    "check_shape",
    "check_tolerances",
    "compare_chunk",
    "compare_codes",
    "compare_read",
    "element_values",
    "frozen",
    "report_of",
    "ulp_bucket_label",
    "value_table",
]

#: Elements per chunk (one compiled call each; chunks run on threads).
CHUNK = 1 << 22


@dataclass(frozen=True)
class WorstElement:
    """One element where the tensors differ.

    ``ulp_distance`` is None for a NaN mismatch (NaN has no place on the line).

    Attributes
    ----------
    index : tuple of int
        The element's index in the tensors' shape (``()`` for 0-d tensors).
    a_code, b_code : int
        Its codes in the two tensors.
    a_value, b_value : float
        Their values (float64, exact).
    ulp_distance : int or None
        The exact ULP distance between them (None for a NaN mismatch).
    """

    index: tuple[int, ...]
    a_code: int
    b_code: int
    a_value: float
    b_value: float
    ulp_distance: int | None


@dataclass(frozen=True)
class DiffReport:
    """What :func:`compare_codes` found.

    Attributes
    ----------
    format : Format
        The format of the codes.
    shape : tuple of int
        The tensors' shape.
    count : int
        Number of elements.
    bitwise_mismatches : int
        Elements whose codes differ.
    nan_mismatches : int
        Elements NaN on exactly one side.
    inf_mismatches : int
        Elements that are an infinity on one side and not the same infinity
        (nor NaN) on the other.
    ulp_histogram : tuple of (int, int, int)
        ``(low, high, count)``: elements at ``low <= distance <= high`` ULP,
        buckets ``[0, 0], [1, 1], [2, 2], [3, 4], [5, 8], ...`` (empty ones left out);
        NaN on both sides counts as distance 0, NaN mismatches are left out.
    max_ulp : int
        Largest ULP distance over elements not NaN on either side (0 if none).
    max_abs_error, max_rel_error : float
        Over elements finite on both sides (an inf mismatch is counted in
        ``inf_mismatches``, not here); ``max_rel_error`` is ``inf``
        where ``a == 0 != b``.  0 when there is no such element.
    worst : tuple of WorstElement
        The worst elements, worst first.
    beyond : int or None
        With ``max_ulp=N`` (or ``atol``/``rtol``): the elements that fail the
        check, elements more than ``N`` ULP apart plus NaN mismatches.
    """

    format: Format
    shape: tuple[int, ...]
    count: int
    bitwise_mismatches: int
    nan_mismatches: int
    inf_mismatches: int
    ulp_histogram: tuple[tuple[int, int, int], ...]
    max_ulp: int
    max_abs_error: float
    max_rel_error: float
    worst: tuple[WorstElement, ...]
    beyond: int | None


def ulp_bucket_label(low: int, high: int) -> str:
    """``"0"``, ``"1"``, ``"3-4"``, ``"(2^16, 2^17]"``: the label of a histogram bucket.

    Parameters
    ----------
    low, high : int
        The bucket's bounds in ULP, ``0 <= low <= high`` (as in
        :attr:`DiffReport.ulp_histogram`).

    Returns
    -------
    str
        ``"low"`` for a one-value bucket, ``"low-high"`` up to ``2**16``, and
        ``"(2^k-1, 2^k]"`` for buckets whose ``high`` is beyond it.

    Raises
    ------
    ValueError
        Unless both are ints (not bools) with ``0 <= low <= high``.

    Examples
    --------
    >>> ulp_bucket_label(0, 0), ulp_bucket_label(5, 8), ulp_bucket_label(65537, 131072)
    ('0', '5-8', '(2^16, 2^17]')
    """
    if not (_is_int(low) and _is_int(high) and 0 <= low <= high):
        raise ValueError(f"Got low={low!r}, high={high!r}, but they must be ints with "
                         "0 <= low <= high")
    low, high = int(low), int(high)
    if low == high:
        return str(low)
    if high > 1 << 16:
        k = high.bit_length() - 1
        return f"(2^{k - 1}, 2^{k}]"
    return f"{low}-{high}"


@lru_cache(maxsize=32)
def value_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of at most 16 bits (read-only, cached).

    Parameters
    ----------
    fmt : Format
        A format of at most 16 bits.

    Returns
    -------
    numpy.ndarray
        Read-only float64 array of ``fmt.num_codes`` values, indexed by code.

    Raises
    ------
    ValueError
        If ``fmt`` has more than 16 bits.

    Examples
    --------
    >>> value_table(as_format("e2m1fn"))[:8].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    if fmt.bits > 16:
        raise ValueError(f"Got format {fmt.name} of {fmt.bits} bits, but value tables stop at 16")
    table = np.asarray(decode(np.arange(fmt.num_codes, dtype=fmt.code_dtype), fmt), np.float64)
    table.setflags(write=False)
    return table


_NATIVE: dict[str, np.dtype] = {"binary32": np.dtype(np.float32), "binary64": np.dtype(np.float64)}
_EMPTY = np.empty(0, np.float64)


def element_values(codes: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """``(values, table)`` as the kernels take them: a float view of the codes, or a table.

    Formats up to 16 bits give ``(empty, value table)``; binary32 and binary64
    the codes' own bits as floats; any other format its decoded float64 values.

    Parameters
    ----------
    codes : numpy.ndarray of unsigned int
        Checked codes of ``fmt`` (``fmt.code_dtype`` for the float view).
    fmt : Format
        Their format.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(values, table)``: one of them is an empty float64 array.
    """
    if fmt.bits <= 16:
        return _EMPTY, value_table(fmt)
    native = _NATIVE.get(fmt.name)
    if native is not None and native.itemsize == codes.dtype.itemsize and fmt == as_format(
            fmt.name):
        return codes.view(native), _EMPTY
    return np.asarray(decode(codes, fmt), np.float64), _EMPTY


@dataclass
class ComparePartial:
    """The mergeable result of comparing some elements (see :func:`compare_chunk`).

    ``counts`` = [bitwise mismatches, NaN mismatches, inf mismatches,
    failures]; ``max_ulp``; ``errors`` = [max abs, max rel] over pairs finite
    on both sides; ``hist`` the ULP histogram (kernel buckets); ``top_key`` /
    ``top_index`` the worst elements (key: ULP distance, or ``NAN_KEY`` for a
    NaN mismatch; index -1 an empty slot).  Merging is exact and does not
    depend on the order, so any split of the work gives the same result.

    Attributes
    ----------
    count : int
        Number of elements compared.
    counts : numpy.ndarray of int64, shape (4,)
        Bitwise mismatches, NaN mismatches, inf mismatches and failures.
    max_ulp : int
        Largest ULP distance over elements not NaN on either side.
    errors : numpy.ndarray of float64, shape (2,)
        Largest absolute and relative error over elements finite on both sides.
    hist : numpy.ndarray of int64, shape (66,)
        Elements per ULP bucket (0, 1, then ``(2**(k-2), 2**(k-1)]`` at ``k >= 2``).
    top_key : numpy.ndarray of uint64, shape (worst,)
        The worst elements' keys.
    top_index : numpy.ndarray of int64, shape (worst,)
        Their flat indices (-1 for an empty slot).
    """

    count: int
    counts: np.ndarray
    max_ulp: int
    errors: np.ndarray
    hist: np.ndarray
    top_key: np.ndarray
    top_index: np.ndarray

    @classmethod
    def empty(cls, worst: int = 0) -> ComparePartial:
        """The partial of no elements."""
        return cls(0, np.zeros(4, np.int64), 0, np.zeros(2, np.float64),
                   np.zeros(66, np.int64), np.zeros(worst, np.uint64),
                   np.full(worst, -1, np.int64))

    def merge(self, other: ComparePartial) -> ComparePartial:
        """The partial of both sets of elements."""
        keys = np.concatenate([self.top_key, other.top_key])
        idx = np.concatenate([self.top_index, other.top_index])
        keep = idx >= 0
        keys, idx = keys[keep], idx[keep]
        order = np.lexsort((idx, ~keys))[: self.top_key.size]
        worst = self.top_key.size
        top_key = np.zeros(worst, np.uint64)
        top_index = np.full(worst, -1, np.int64)
        top_key[: order.size] = keys[order]
        top_index[: order.size] = idx[order]
        return ComparePartial(
            self.count + other.count, self.counts + other.counts,
            max(self.max_ulp, other.max_ulp), np.maximum(self.errors, other.errors),
            self.hist + other.hist, top_key, top_index)

    def histogram(self) -> tuple[tuple[int, int, int], ...]:
        """``(low, high, count)`` buckets as :attr:`DiffReport.ulp_histogram` gives them."""
        out = []
        for k, count in enumerate(self.hist.tolist()):
            if count:
                low, high = (k, k) if k <= 1 else ((1 << (k - 2)) + 1, 1 << (k - 1))
                out.append((low, high, int(count)))
        return tuple(out)


def _is_int(x: object) -> TypeGuard[int | np.integer[Any]]:
    """Whether ``x`` is an int or a numpy integer (not a bool)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def check_tolerances(max_ulp: object, atol: object, rtol: object) -> int:
    """Validate the tolerances; the kernel's mode (bit 0 ULP, bit 1 abs/rel).

    ``max_ulp`` is an int (or numpy integer) ``>= 0``; ``atol`` and ``rtol``
    finite real numbers ``>= 0`` (Python or numpy); each may be None.

    Parameters
    ----------
    max_ulp : int or None
        ULP tolerance.
    atol, rtol : float or None
        Absolute and relative tolerances.

    Returns
    -------
    int
        0 to 3: bit 0 set when ``max_ulp`` is given, bit 1 when ``atol`` or ``rtol``
        is.

    Raises
    ------
    ValueError
        For a tolerance of the wrong type, negative or not finite.

    Examples
    --------
    >>> check_tolerances(np.int64(1), None, 0.5)
    3
    >>> check_tolerances(-1, None, None)
    Traceback (most recent call last):
    ...
    ValueError: Got max_ulp=-1, but it must be a non-negative int
    """
    if max_ulp is not None and (not _is_int(max_ulp) or max_ulp < 0):
        raise ValueError(f"Got {max_ulp=!r}, but it must be a non-negative int")
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if tol is not None and (isinstance(tol, (bool, np.bool_))
                                or not isinstance(tol, (int, float, np.integer, np.floating))
                                or not math.isfinite(tol) or tol < 0):
            raise ValueError(f"Got {name}={tol!r}, but it must be a finite number >= 0")
    return (1 if max_ulp is not None else 0) | (2 if (atol is not None or rtol is not None)
                                                 else 0)


def check_shape(shape: object, name: str = "shape") -> tuple[int, ...]:
    """``shape`` as a tuple of Python ints: a tuple or list of ints (or numpy integers)
    ``>= 0``.

    Parameters
    ----------
    shape : tuple or list of int
        The shape argument.
    name : str, default "shape"
        The argument's name, quoted in the error messages.

    Returns
    -------
    tuple of int
        The shape, its entries Python ints.

    Raises
    ------
    TypeError
        If ``shape`` is not a tuple or list, or an entry is not an int.
    ValueError
        If an entry is negative.

    Examples
    --------
    >>> check_shape([2, np.int64(3)])
    (2, 3)
    >>> check_shape((2.9,))
    Traceback (most recent call last):
    ...
    TypeError: Got shape=(2.9,), but its entries must be ints >= 0 (2.9 is a float)
    """
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"Got {name}={shape!r} of type {type(shape).__name__}, but it must be "
                        "a tuple of ints >= 0")
    for n in shape:
        if not _is_int(n):
            raise TypeError(f"Got {name}={shape!r}, but its entries must be ints >= 0 "
                            f"({n!r} is a {type(n).__name__})")
        if n < 0:
            raise ValueError(f"Got {name}={shape!r}, but its entries must be ints >= 0")
    return tuple(int(n) for n in shape)


def check_chunk_size(chunk: np.ndarray, start: int, stop: int, name: str) -> np.ndarray:
    """``chunk`` (what ``name(start, stop)`` returned) flattened, checked to hold exactly
    ``stop - start`` elements.

    Parameters
    ----------
    chunk : numpy.ndarray
        What the reader returned, any shape.
    start, stop : int
        The flat element range asked for.
    name : str
        The reader's name, quoted in the error message.

    Returns
    -------
    numpy.ndarray
        ``chunk`` reshaped to 1-D (a view where numpy can make one).

    Raises
    ------
    ValueError
        If it holds more or fewer.

    Examples
    --------
    >>> check_chunk_size(np.zeros(3), 4, 6, "read_a")
    Traceback (most recent call last):
    ...
    ValueError: Got 3 elements from read_a(4, 6), but it must return stop - start = 2
    """
    if chunk.size != stop - start:
        raise ValueError(f"Got {chunk.size} elements from {name}({start}, {stop}), but it "
                         f"must return stop - start = {stop - start}")
    return chunk.reshape(-1)


def check_codes(codes: object, fmt: Format, name: str) -> np.ndarray:
    """``codes`` as an array, checked to be codes of ``fmt``: unsigned integers (at most
    64 bits) each below ``fmt.num_codes``; ``name`` names them in the errors.

    Parameters
    ----------
    codes : array_like of unsigned int
        The codes: a numpy array or torch tensor of an unsigned dtype (taken as
        :func:`numerics.dtypes.as_input` takes it).
    fmt : Format
        Their format.
    name : str
        The argument's name, quoted in the error messages.

    Returns
    -------
    numpy.ndarray
        The codes as an array, in their own dtype and shape.

    Raises
    ------
    TypeError
        If the dtype is not an unsigned integer one.
    ValueError
        If a code is beyond the format's codes.

    Examples
    --------
    >>> check_codes(np.array([0x10], np.uint8), as_format("e2m1fn"), "a")
    Traceback (most recent call last):
    ...
    ValueError: Got a holding code 0x10, beyond the 4-bit codes of e2m1fn
    """
    arr = as_input(codes, name)
    if arr.dtype.kind != "u" or arr.dtype.itemsize > 8:
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but codes are unsigned integers")
    if arr.size and fmt.bits < 8 * arr.dtype.itemsize and int(arr.max()) >= fmt.num_codes:
        raise ValueError(f"Got {name} holding code {int(arr.max()):#x}, beyond the "
                         f"{fmt.bits}-bit codes of {fmt.name}")
    return arr


def frozen(x: np.ndarray) -> np.ndarray:
    """A read-only view of ``x`` (no copy): what the compiled passes take, so that a
    memory map and a fresh array share one compiled signature (whether an array is
    read-only is part of its numba type).

    Parameters
    ----------
    x : numpy.ndarray
        Any array (left writeable itself).

    Returns
    -------
    numpy.ndarray
        A read-only view of the same memory.

    Examples
    --------
    >>> frozen(np.zeros(2)).flags.writeable
    False
    """
    v = x.view()
    v.setflags(write=False)
    return v


def compare_chunk(ca: np.ndarray, cb: np.ndarray, fmt: Format, *, base: int = 0, worst: int = 0,
                  max_ulp: int | None = None, atol: float | None = None,
                  rtol: float | None = None) -> ComparePartial:
    """Compare two 1-D arrays of codes of ``fmt`` in one compiled pass.

    An element *fails* when its codes differ and it is neither within
    ``max_ulp`` ULP nor within ``|a - b| <= atol + rtol * |a|`` (each only
    when given; with no tolerance every difference fails); a NaN mismatch
    always fails, NaN against NaN never does.  ``base`` is the flat index of
    element 0 (for the worst elements).

    Parameters
    ----------
    ca, cb : numpy.ndarray of unsigned int
        Codes of ``fmt``, the same size (flattened); ``ca`` is the reference.
    fmt : Format
        Their format.
    base : int, default 0
        Flat index of element 0 in the whole tensor (``>= 0``).
    worst : int, default 0
        How many of the worst elements to keep (``>= 0``).
    max_ulp : int, optional
        ULP tolerance (``>= 0``).
    atol, rtol : float, optional
        Absolute and relative tolerances (finite, ``>= 0``).

    Returns
    -------
    ComparePartial
        The chunk's result, to merge with others and turn into a report with
        :func:`report_of`.

    Raises
    ------
    TypeError
        If ``ca`` or ``cb`` is not an array of unsigned integers.
    ValueError
        If they differ in size, hold a code beyond ``fmt``'s codes, or an option is out
        of range.
    """
    mode = check_tolerances(max_ulp, atol, rtol)
    if not _is_int(worst) or worst < 0:
        raise ValueError(f"Got {worst=!r}, but it must be a non-negative int")
    if not _is_int(base) or base < 0:
        raise ValueError(f"Got {base=!r}, but it must be a non-negative int")
    ca = check_codes(ca, fmt, "ca")
    cb = check_codes(cb, fmt, "cb")
    if ca.size != cb.size:
        raise ValueError(f"Got ca of {ca.size} codes and cb of {cb.size}, but they must match")
    return _chunk_pass(ca, cb, fmt, int(base), int(worst), max_ulp, atol, rtol, mode)


def _chunk_pass(ca: np.ndarray, cb: np.ndarray, fmt: Format, base: int, worst: int,
                max_ulp: int | None, atol: float | None, rtol: float | None,
                mode: int) -> ComparePartial:
    """:func:`compare_chunk` of checked codes (unsigned, below ``fmt.num_codes``, the
    same size) and options."""
    from numerics.kernels import compare as kernels

    ca = np.ascontiguousarray(ca, fmt.code_dtype).reshape(-1)
    cb = np.ascontiguousarray(cb, fmt.code_dtype).reshape(-1)
    va, table = element_values(ca, fmt)
    vb, _ = element_values(cb, fmt)
    # read-only views throughout: whether an array is read-only is part of its numba
    # type, so mixed inputs (memory maps, fresh arrays) would compile the pass again
    ca, cb, va, vb, table = (frozen(x) for x in (ca, cb, va, vb, table))
    part = ComparePartial.empty(worst)
    part.count = int(ca.size)
    max_d = np.zeros(1, np.uint64)
    gap = 0 if fmt.has_zero else 1  # without zero, -2**emin and +2**emin are neighbours
    kernels.compare(ca, cb, va, vb, table, fmt.sign_mask, fmt.magnitude_mask, gap, base,
                    np.uint64(min(int(max_ulp or 0), 2**64 - 1)), float(atol or 0.0),
                    float(rtol or 0.0), mode, part.counts, max_d, part.errors, part.hist,
                    part.top_key, part.top_index)
    part.max_ulp = int(max_d[0])
    return part


def compare_codes(
    a: np.ndarray,
    b: np.ndarray,
    fmt: Format | str,
    *,
    worst: int = 10,
    max_ulp: int | None = None,
    atol: float | None = None,
    rtol: float | None = None,
) -> DiffReport:
    """Compare two arrays of codes of ``fmt`` element by element.

    Parameters
    ----------
    a, b : ndarray of unsigned int
        Codes, the same shape; ``a`` is the reference for relative errors.
    fmt : Format or str
    worst : int
        How many of the worst elements to keep (at most every element: a
        larger value is capped at ``a.size``): the largest ULP distances, ties to the
        lowest flat index.
    max_ulp : int, optional
        Count the elements further apart than this (``DiffReport.beyond``).
    atol, rtol : float, optional
        With or instead of ``max_ulp``: an element within
        ``|a - b| <= atol + rtol * |a|`` passes too (see :func:`compare_chunk`).

    Returns
    -------
    DiffReport
        What the comparison found (``beyond`` None unless a tolerance is given).

    Raises
    ------
    TypeError
        If ``a`` or ``b`` is not an array of unsigned integers.
    ValueError
        If the shapes differ, a code is beyond ``fmt``'s codes, or an option is out of
        range.

    Examples
    --------
    >>> r = compare_codes(np.array([0x3F80, 0x3F80, 0x7FC0], np.uint16),
    ...                   np.array([0x3F80, 0x3F82, 0x3F80], np.uint16), "bfloat16")
    >>> r.bitwise_mismatches, r.nan_mismatches, r.max_ulp, r.max_rel_error
    (2, 1, 2, 0.015625)
    >>> [(w.index, w.ulp_distance) for w in r.worst]
    [((2,), None), ((1,), 2)]
    """
    fmt = as_format(fmt)
    a = check_codes(a, fmt, "a")
    b = check_codes(b, fmt, "b")
    if a.shape != b.shape:
        raise ValueError(f"Got shapes {list(a.shape)} and {list(b.shape)}, but they must match")
    shape = tuple(int(n) for n in a.shape)
    fa, fb = a.reshape(-1), b.reshape(-1)
    return _compare_flat(fa, fb, shape, fmt, worst, max_ulp, atol, rtol)


class _Reader:
    """Flat codes read on demand: ``r[start:stop]`` an array, ``r[i]`` one code; each
    read checked (:func:`check_chunk_size`, :func:`check_codes`) with errors that name
    the reader and the chunk (``read_a(0, 4)``)."""

    def __init__(self, read: Callable[[int, int], np.ndarray], name: str, fmt: Format) -> None:
        self.read = read
        self.name = name
        self.fmt = fmt

    def chunk(self, start: int, stop: int) -> np.ndarray:
        codes = check_codes(self.read(start, stop), self.fmt,
                            f"{self.name}({start}, {stop})")
        return check_chunk_size(codes, start, stop, self.name)

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return self.chunk(int(key.start), int(key.stop))
        return self.chunk(int(key), int(key) + 1)[0]


def compare_read(
    read_a: Callable[[int, int], np.ndarray],
    read_b: Callable[[int, int], np.ndarray],
    shape: tuple[int, ...],
    fmt: Format | str,
    *,
    worst: int = 10,
    max_ulp: int | None = None,
    atol: float | None = None,
    rtol: float | None = None,
) -> DiffReport:
    """:func:`compare_codes` of codes read a chunk at a time: ``read_a(start, stop)`` and
    ``read_b(start, stop)`` return the codes of the flat elements ``[start:stop]`` (of
    tensors of ``shape``), so that codes made on the fly (a tensor rounded into ``fmt``)
    never exist whole: memory stays bounded by the chunk size.

    Every chunk is checked as :func:`compare_codes` checks its arrays (unsigned integer
    codes below ``fmt.num_codes``), and must hold exactly ``stop - start`` codes.

    Parameters
    ----------
    read_a, read_b : callable ``(start, stop) -> ndarray``
        Readers of the codes of the two tensors' flat elements; ``a`` is the reference.
    shape : tuple of int
        The tensors' shape (a tuple or list of ints ``>= 0``).
    fmt : Format or str
        The format of the codes.
    worst, max_ulp, atol, rtol
        As for :func:`compare_codes`.

    Returns
    -------
    DiffReport
        As :func:`compare_codes` gives it for the whole tensors.

    Raises
    ------
    TypeError
        If ``shape`` is not a tuple of ints, or a reader returns codes that are not
        unsigned integers.
    ValueError
        If an entry of ``shape`` is negative, a reader returns more or fewer than
        ``stop - start`` codes or a code beyond ``fmt``'s codes, or an option is out of
        range.  The messages name the reader and the chunk (``read_a(0, 4)``).

    Examples
    --------
    >>> a = np.array([0x3F80, 0x3F80, 0x7FC0], np.uint16)
    >>> b = np.array([0x3F80, 0x3F82, 0x3F80], np.uint16)
    >>> r = compare_read(lambda s, e: a[s:e], lambda s, e: b[s:e], (3,), "bfloat16")
    >>> r.bitwise_mismatches, r.max_ulp
    (2, 2)
    """
    fmt = as_format(fmt)
    shape = check_shape(shape)
    return _compare_flat(_Reader(read_a, "read_a", fmt), _Reader(read_b, "read_b", fmt), shape,
                         fmt, worst, max_ulp, atol, rtol)


def _compare_flat(fa: Any, fb: Any, shape: tuple[int, ...], fmt: Format, worst: int,
                  max_ulp: int | None, atol: float | None, rtol: float | None) -> DiffReport:
    """The chunks of the flat codes ``fa``, ``fb`` (checked arrays, or :class:`_Reader`
    that check each chunk) compared on the threads and merged into one report (the
    options checked here)."""
    if not _is_int(worst) or worst < 0:
        raise ValueError(f"Got {worst=!r}, but it must be a non-negative int")
    mode = check_tolerances(max_ulp, atol, rtol)
    checked = mode != 0
    n = math.prod(shape)
    worst = min(int(worst), n)  # no more worst elements than elements: memory stays bounded

    def one(start: int) -> ComparePartial:
        stop = min(n, start + CHUNK)
        return _chunk_pass(fa[start:stop], fb[start:stop], fmt, start, min(worst, CHUNK),
                           max_ulp, atol, rtol, mode)

    starts = range(0, n, CHUNK)

    total = ComparePartial.empty(worst)
    if len(starts) > 1:
        from numerics.threads import get_num_threads, ordered_map

        for part in ordered_map(one, starts, get_num_threads()):
            total = total.merge(part)
    elif n:
        total = one(0)
    return report_of(total, fmt, shape, fa, fb, checked=checked)


def report_of(part: ComparePartial, fmt: Format, shape: tuple[int, ...], fa: Any,
              fb: Any, *, checked: bool) -> DiffReport:
    """A :class:`DiffReport` from a merged partial (``fa``, ``fb``: the flat codes, indexed
    for the worst elements).

    Parameters
    ----------
    part : ComparePartial
        The merged result of every chunk.
    fmt : Format
        The format of the codes.
    shape : tuple of int
        The tensors' shape (for the worst elements' indices).
    fa, fb : numpy.ndarray or indexable
        The flat codes; ``fa[i]`` is read only for the worst elements.
    checked : bool
        Whether a tolerance was given (``DiffReport.beyond`` is None otherwise).

    Returns
    -------
    DiffReport
        The report, worst elements sorted worst first.
    """
    part = part.merge(ComparePartial.empty(part.top_key.size))  # sorts the worst elements
    worst_items: list[WorstElement] = []
    for key, flat in zip(part.top_key.tolist(), part.top_index.tolist()):
        if flat < 0:
            continue
        ia_, ib_ = int(fa[flat]), int(fb[flat])
        va_, vb_ = (float(v) for v in np.asarray(
            decode(np.array([ia_, ib_], dtype=fmt.code_dtype), fmt)).tolist())
        index = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
        nan_one = math.isnan(va_) != math.isnan(vb_)
        worst_items.append(WorstElement(index, ia_, ib_, va_, vb_, None if nan_one else key))
    counts = part.counts.tolist()
    return DiffReport(
        format=fmt, shape=shape, count=part.count, bitwise_mismatches=counts[0],
        nan_mismatches=counts[1], inf_mismatches=counts[2], ulp_histogram=part.histogram(),
        max_ulp=part.max_ulp, max_abs_error=float(part.errors[0]),
        max_rel_error=float(part.errors[1]), worst=tuple(worst_items),
        beyond=counts[3] if checked else None,
    )
