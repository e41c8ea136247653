"""Comparing two checkpoints tensor by tensor, streamed in chunks."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.checkpoint.run import Progress, check_run_options, execute
from numerics.checkpoint.sources import (
    Source,
    TensorFileError,
    TensorRef,
    check_ref,
    open_source,
)
from numerics.compare import (
    ComparePartial,
    DiffReport,
    check_tolerances,
    compare_chunk,
    report_of,
)
from numerics.encoding import encode
from numerics.formats import Format, as_format
from numerics.rounding import OVERFLOWS, ROUNDINGS
from numerics.tensors import fs_path

__all__ = [
    "CHUNK",
    "CheckpointDiff",
    "TensorDiff",
    "codes_in",
    "coarser",
    "compare_format",
    "compare_refs",
    "diff_sources",
    "paired_whole",
    "select",
    "within_tolerance",
]

#: Elements per chunk (per side): one task each.
CHUNK = 1 << 20
#: Elements rounded into another format at a time (bounds the temporaries).
_ROUND_BLOCK = 1 << 16


@dataclass(frozen=True)
class TensorDiff:
    """One tensor of a checkpoint diff.

    ``format`` is the format compared in (None: integers, compared as
    integers, one ULP being 1); ``rounded`` names the sides rounded into it
    (``""``, ``"A"``, ``"B"`` or ``"A,B"``).  ``max_abs_error`` and
    ``max_rel_error`` cover the pairs finite on both sides (relative to A);
    ``inf_mismatches`` counts the pairs with an infinity on one side and not
    the same one on the other (NaN aside).  ``failures`` are the elements
    that fail the check (see :func:`numerics.compare.compare_chunk`);
    ``status`` is ``"equal"`` (bit for bit), ``"pass"`` or ``"fail"``.

    Attributes
    ----------
    name : str
        The tensor's name (``"A / B"`` for two single-tensor files of other names).
    dtype_a, dtype_b : str
        The element type of each side (:attr:`TensorRef.dtype_name`).
    shape : tuple of int
        The shape both share.
    format : str or None
        The name of the format compared in; None for integers.
    rounded : str
        The sides rounded into it: ``""``, ``"A"``, ``"B"`` or ``"A,B"``.
    count : int
        Number of elements.
    mismatches : int
        Elements whose codes (or integers) differ.
    nan_mismatches, inf_mismatches : int
        Elements NaN on one side only; elements with an infinity on one side and not
        the same one on the other.
    failures : int
        Elements that fail the check (every mismatch when no check is given).
    max_ulp : int
        Largest ULP distance (integers: ``|a - b|``).
    max_abs_error, max_rel_error : float
        Over the pairs finite on both sides, relative to A.
    """

    name: str
    dtype_a: str
    dtype_b: str
    shape: tuple[int, ...]
    format: str | None
    rounded: str
    count: int
    mismatches: int
    nan_mismatches: int
    inf_mismatches: int
    failures: int
    max_ulp: int
    max_abs_error: float
    max_rel_error: float

    @property
    def status(self) -> str:
        """``"equal"``, ``"pass"`` or ``"fail"``."""
        if self.mismatches == 0:
            return "equal"
        return "fail" if self.failures else "pass"


@dataclass(frozen=True)
class CheckpointDiff:
    """What :func:`diff_sources` found.

    Attributes
    ----------
    a, b : str
        The sources' paths.
    tensors : tuple of TensorDiff
        The tensors both hold with the same shape, by name.
    only_a, only_b : tuple of str
        Names in one source only (after the key filter).
    shape_mismatches : tuple of (str, tuple, tuple)
        Names held by both with different shapes (not compared).
    max_ulp : int or None
        The ULP tolerance of the check (None: not given).
    atol, rtol : float or None
        The absolute and relative tolerances (None: not given; none of the three
        given: bit-equality).
    notes : tuple of str
        How mixed dtypes were compared ("binary32 vs bfloat16: compared in
        bfloat16, A rounded (rne) into it"), and the entries left out of a whole
        checkpoint's comparison as not real-number tensors of a readable dtype.
    """

    a: str
    b: str
    tensors: tuple[TensorDiff, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    shape_mismatches: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]
    max_ulp: int | None
    atol: float | None
    rtol: float | None
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Every compared tensor passes and both sources hold the same names and shapes."""
        return (all(t.status != "fail" for t in self.tensors) and not self.only_a
                and not self.only_b and not self.shape_mismatches)


def coarser(fa: Format | str, fb: Format | str) -> Format:
    """The coarser of two formats (or names): fewer significant bits, then the narrower
    range.

    Parameters
    ----------
    fa, fb : Format or str
        The formats (anything :func:`numerics.as_format` takes).

    Returns
    -------
    Format
        The one with the smaller ``(precision, emax, bits)``; ``fa`` on a tie.

    Examples
    --------
    >>> coarser(as_format("binary32"), as_format("bf16")).name
    'bfloat16'
    >>> coarser(as_format("binary16"), as_format("bf16")).name
    'bfloat16'
    """
    fa, fb = as_format(fa), as_format(fb)
    ka = (fa.precision, fa.emax, fa.bits)
    kb = (fb.precision, fb.emax, fb.bits)
    return fa if ka <= kb else fb


def compare_format(a: TensorRef, b: TensorRef, as_fmt: Format | None) -> Format | None:
    """The format two tensors are compared in (None: both integers).

    Parameters
    ----------
    a, b : TensorRef
        The two tensors.
    as_fmt : Format or None
        The format asked for (``-f/--as``), which wins when given.

    Returns
    -------
    Format or None
        ``as_fmt``; else the format of the side that has one, their common format, or
        the :func:`coarser` of the two; None when both are integers.

    Raises
    ------
    TensorFileError
        If a side holds raw bytes and ``as_fmt`` is None.
    """
    for t in (a, b):
        if t.is_raw and as_fmt is None:
            raise TensorFileError(
                f"Got tensor {t.name!r} in {t.file!r} of raw dtype {t.stored_dtype}, which has "
                "no float format; give one with -f/--as (raw bytes are read as it)")
    if as_fmt is not None:
        return as_fmt
    if a.format is None and b.format is None:
        return None
    if a.format is None or b.format is None:
        return a.format or b.format
    return a.format if a.format == b.format else coarser(a.format, b.format)


def select(names: Sequence[str], keys: str | Sequence[str] | None) -> list[str]:
    """The names matching any of the glob patterns (all without patterns; a str is one).

    Parameters
    ----------
    names : sequence of str
        The tensor names.
    keys : str, sequence of str or None
        Glob patterns (:func:`fnmatch.fnmatchcase`, case-sensitive); None or empty:
        every name.

    Returns
    -------
    list of str
        The matching names, in the order of ``names``.

    Examples
    --------
    >>> select(["w.0", "w.1", "b"], "w.*")
    ['w.0', 'w.1']
    """
    if not keys:
        return list(names)
    if isinstance(keys, str):
        keys = (keys,)
    return [n for n in names if any(fnmatch.fnmatchcase(n, k) for k in keys)]


def codes_in(ref: TensorRef, x: np.ndarray, fmt: Format, *, rounding: str = "rne",
             overflow: str = "ieee") -> np.ndarray:
    """Elements ``x`` read from ``ref`` as codes of ``fmt``, rounded once into it if needed.

    Parameters
    ----------
    ref : TensorRef
        The tensor the elements come from (its format says how to read them).
    x : numpy.ndarray
        Flat elements as :meth:`TensorRef.read` returns them.
    fmt : Format
        The format compared in.
    rounding, overflow : str
        How elements not in ``fmt`` are rounded into it (see :mod:`numerics.rounding`).

    Returns
    -------
    numpy.ndarray
        1-D codes in ``fmt.code_dtype``.

    Raises
    ------
    TensorFileError
        If an element is NaN and ``fmt`` has no NaN.
    """
    if ref.format == fmt:
        if x.dtype.kind == "u":
            return x.astype(fmt.code_dtype, copy=False)
        return np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}")).astype(
            fmt.code_dtype, copy=False)
    out = np.empty(x.size, fmt.code_dtype)
    for s in range(0, x.size, _ROUND_BLOCK):
        block = x[s:s + _ROUND_BLOCK]
        if ref.format is not None and (block.dtype.kind == "u" or block.dtype.type is np.void):
            from numerics.encoding import decode  # codes of a format numpy has no dtype for

            block = np.asarray(decode(block.view(ref.format.code_dtype), ref.format), np.float64)
        elif block.dtype.kind == "b":
            block = block.astype(np.uint8)
        elif ref.format is not None:
            block = block.astype(np.float64)  # exact: float64 holds every value of the format
        if not fmt.has_nan and block.dtype.kind == "f" and np.isnan(block).any():
            raise TensorFileError(
                f"Got NaN in tensor {ref.name!r} of {ref.file!r}, but {fmt.name} has no NaN to "
                "round it to; compare in a format that has one (-f/--as)")
        out[s:s + _ROUND_BLOCK] = encode(block, fmt, rounding=rounding, overflow=overflow)
    return out


@dataclass(frozen=True)
class _Plan:
    a: TensorRef
    b: TensorRef
    format: Format | None
    rounding: str
    overflow: str
    max_ulp: int | None
    atol: float | None
    rtol: float | None
    #: How many of the worst elements each chunk keeps (:func:`compare_refs`).
    worst: int = 0


def _int_partial(xa: np.ndarray, xb: np.ndarray, plan: _Plan) -> ComparePartial:
    part = ComparePartial.empty(0)
    part.count = int(xa.size)
    if xa.size == 0:
        return part
    wide = np.uint64 if (xa.dtype == np.uint64 and xb.dtype.kind in "ub") or (
        xb.dtype == np.uint64 and xa.dtype.kind in "ub") else np.int64
    if wide is np.int64:
        for x, ref, other in ((xa, plan.a, plan.b), (xb, plan.b, plan.a)):
            if x.dtype == np.uint64 and int(x.max()) >= 2**63:
                raise TensorFileError(
                    f"Got tensor {ref.name!r} of {ref.file!r} as uint64 with values beyond "
                    f"2**63 - 1 against tensor {other.name!r} of {other.file!r} of signed "
                    f"type {other.dtype.name}: their differences may not fit in 64 bits; "
                    "compare them apart")
    a = xa.astype(wide)
    b = xb.astype(wide)
    with np.errstate(over="ignore"):
        d = np.where(a >= b, a - b, b - a).view(np.uint64)  # exact: wraps back into range
    differ = d != 0
    part.counts[0] = int(np.count_nonzero(differ))
    part.max_ulp = int(d.max())
    af = np.abs(a.astype(np.float64))
    df = d.astype(np.float64)
    part.errors[0] = float(df.max())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(differ, df / af, 0.0)
    part.errors[1] = float(rel.max())
    dm1 = np.where(differ, d - np.uint64(1), np.uint64(0))
    length = np.zeros(d.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = dm1 >= np.uint64(1 << s)
        length[big] += s
        dm1 = np.where(big, dm1 >> np.uint64(s), dm1)
    length += dm1 > 0
    bucket = np.where(differ, length + 1, 0)
    part.hist += np.bincount(bucket, minlength=66)[:66]
    ok = ~differ
    if plan.max_ulp is not None:
        ok |= d <= np.uint64(min(plan.max_ulp, 2**64 - 1))
    if plan.atol is not None or plan.rtol is not None:
        ok |= within_tolerance(d, af, plan.atol or 0.0, plan.rtol or 0.0)  # |a| is af
    part.counts[3] = int(np.count_nonzero(~ok))
    return part


def within_tolerance(d: np.ndarray, a: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """``d <= atol + rtol * |a|`` for integers ``d`` (uint64: ``|a - b|``) and ``a`` (int64
    or uint64, or its float64 values), elementwise: the bound is evaluated in float64 as for
    float tensors (``|a|`` as a float64, then the product and the sum rounded), and compared
    with the integer ``d`` exactly.  Integer and float tensors holding the same values
    get the same verdicts, and no ``d`` is rounded on the way to one: ``2**53 + 1 <= 2**53``
    is False here, True in float64.

    Parameters
    ----------
    d : numpy.ndarray of uint64
        The distances ``|a - b|``.
    a : numpy.ndarray
        The reference elements (int64, uint64 or float64), broadcast against ``d``.
    atol, rtol : float
        The tolerances, real numbers ``>= 0``.

    Returns
    -------
    numpy.ndarray of bool
        Whether each ``d`` is within the bound.

    Raises
    ------
    ValueError
        If ``atol`` or ``rtol`` is not a real number ``>= 0``.
    TypeError
        If ``d`` is not a uint64 array.

    Examples
    --------
    >>> d = np.array([2**53 + 1, 2**53], np.uint64)
    >>> within_tolerance(d, np.zeros(2, np.int64), float(2**53), 0.0).tolist()
    [False, True]
    >>> within_tolerance(np.array([3, 7], np.uint64), np.array([10, 10]), 0.0, 0.3).tolist()
    [True, False]
    """
    for name, v in (("atol", atol), ("rtol", rtol)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool) \
                or not v >= 0:
            raise ValueError(f"Got {name}={v!r}, but it must be a real number >= 0")
    if not isinstance(d, np.ndarray) or d.dtype != np.uint64:
        raise TypeError(f"Got d of type {type(d).__name__}, but it must be a uint64 array")
    with np.errstate(over="ignore"):  # beyond float64: inf, and every d passes
        bound = float(atol) + float(rtol) * np.abs(np.asarray(a, dtype=np.float64))
    every = bound >= 2.0**64
    # a float64 below 2**64 floors to an integer uint64 holds exactly
    return every | (d <= np.floor(np.where(every, 0.0, bound)).astype(np.uint64))


def _diff_item(item: tuple[_Plan, int, int], mmap: bool) -> ComparePartial:
    plan, start, stop = item
    xa = plan.a.read(start, stop, mmap=mmap)
    xb = plan.b.read(start, stop, mmap=mmap)
    if plan.format is None:
        return _int_partial(xa, xb, plan)
    fmt = plan.format
    ca = codes_in(plan.a, xa, fmt, rounding=plan.rounding, overflow=plan.overflow)
    cb = codes_in(plan.b, xb, fmt, rounding=plan.rounding, overflow=plan.overflow)
    return compare_chunk(ca, cb, fmt, base=start, worst=min(plan.worst, stop - start),
                         max_ulp=plan.max_ulp, atol=plan.atol, rtol=plan.rtol)


def _source_of(x: object, name: str) -> Source:
    """A source argument: a :class:`Source`, or a path opened with :func:`open_source`."""
    if isinstance(x, Source):
        return x
    return open_source(fs_path(x, name))


def _check_keys(keys: object) -> tuple[str, ...] | None:
    """``keys`` as a tuple of glob patterns (one str is one pattern); TypeError otherwise."""
    if keys is None:
        return None
    if isinstance(keys, str):
        return (keys,)
    if not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
        raise TypeError(f"Got keys={keys!r}, but it must be a glob pattern (str) or a list of "
                        "them")
    return tuple(keys)


def _check_common(rounding: str, overflow: str, max_ulp: object, atol: object, rtol: object,
                  chunk: object, threads: object, client: object, progress: object) -> None:
    if rounding not in ROUNDINGS or rounding == "sr":
        raise ValueError(f"Got {rounding=!r}, but the only valid values are "
                         f"{', '.join(r for r in ROUNDINGS if r != 'sr')}")
    if overflow not in OVERFLOWS:
        raise ValueError(f"Got {overflow=!r}, but the only valid values are {', '.join(OVERFLOWS)}")
    check_tolerances(max_ulp, atol, rtol)
    check_run_options(threads=threads, client=client, progress=progress, chunk=chunk)


class _Codes:
    """The codes of one tensor in a format, one element at a time (for the worst elements)."""

    def __init__(self, ref: TensorRef, fmt: Format, rounding: str, overflow: str) -> None:
        self.ref, self.fmt, self.rounding, self.overflow = ref, fmt, rounding, overflow

    def __getitem__(self, i: int) -> int:
        x = self.ref.read(i, i + 1)
        return int(codes_in(self.ref, x, self.fmt, rounding=self.rounding,
                            overflow=self.overflow)[0])


def compare_refs(
    a: TensorRef,
    b: TensorRef,
    fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    worst: int = 10,
    max_ulp: int | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    chunk: int = CHUNK,
    threads: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> DiffReport:
    """The detailed comparison of two tensors of one shape in ``fmt`` (worst elements and
    all, as :func:`numerics.compare.compare_codes` reports it), streamed in chunks.

    A side not in ``fmt`` is rounded once into it (``rounding``, ``overflow``),
    a chunk at a time.  The chunks run on ``threads`` local threads or as tasks
    on a Dask ``client``, and ``progress`` hears of each, as in
    :func:`diff_sources`; the report is the same whatever the split.

    Parameters
    ----------
    a, b : TensorRef
        The tensors (of :attr:`Source.tensors`); A is the reference.
    fmt : Format or str
        The format compared in.
    rounding, overflow : str
        How a side not in ``fmt`` is rounded into it.
    worst : int, default 10
        How many of the worst elements to keep (capped at the element count).
    max_ulp, atol, rtol : optional
        The check, as for :func:`numerics.compare.compare_codes`.
    chunk : int
        Elements per task.
    threads, client, progress
        As for :func:`diff_sources`.

    Returns
    -------
    DiffReport
        As :func:`numerics.compare.compare_codes` gives it.

    Raises
    ------
    ValueError
        If the shapes differ, or an option is invalid.
    TypeError
        If ``a`` or ``b`` is not a :class:`TensorRef`, or an option is of the wrong type.
    """
    check_ref(a, "a")
    check_ref(b, "b")
    fmt = as_format(fmt)
    _check_common(rounding, overflow, max_ulp, atol, rtol, chunk, threads, client, progress)
    if isinstance(worst, bool) or not isinstance(worst, int) or worst < 0:
        raise ValueError(f"Got {worst=!r}, but it must be a non-negative int")
    if a.shape != b.shape:
        raise ValueError(f"Got shapes {list(a.shape)} ({a.name!r}) and {list(b.shape)} "
                         f"({b.name!r}), but they must match")
    worst = min(worst, a.size)  # no more worst elements than elements: memory stays bounded
    plan = _Plan(a, b, fmt, rounding, overflow, max_ulp, atol, rtol, worst)
    items = [(plan, s, min(s + chunk, a.size)) for s in range(0, a.size, chunk)]
    sizes = [a.stored_bytes(start, stop) + b.stored_bytes(start, stop) for _, start, stop in items]
    total = [ComparePartial.empty(worst)]

    def fold(item: tuple[_Plan, int, int], part: ComparePartial) -> None:
        total[0] = total[0].merge(part)

    execute(_diff_item, items, fold, sizes=sizes, threads=threads, client=client,
            progress=progress)
    checked = check_tolerances(max_ulp, atol, rtol) != 0
    return report_of(total[0], fmt, a.shape, _Codes(a, fmt, rounding, overflow),
                     _Codes(b, fmt, rounding, overflow), checked=checked)


def paired_whole(sa: Source, sb: Source) -> bool:
    """Whether two sources are compared as one tensor each, whatever their names: each
    holds one tensor and one of them is a ``.npy`` or a ``PATH:KEY`` pick (a tensor the
    user chose).  A checkpoint holding one tensor (a ``.safetensors``, ``.npz`` or torch
    file, a directory, sharded files) is still matched by name.

    Parameters
    ----------
    sa, sb : Source
        The two sides (:func:`numerics.checkpoint.open_source`).

    Returns
    -------
    bool
        True when the two tensors are paired up by position.

    Examples
    --------
    >>> import tempfile, os
    >>> from numerics.checkpoint import open_source
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "a.npy"), np.ones(3))
    >>> np.savez(os.path.join(d, "b.npz"), w=np.ones(3))
    >>> np.savez(os.path.join(d, "c.npz"), v=np.ones(3))
    >>> a, b, c = (open_source(os.path.join(d, f)) for f in ("a.npy", "b.npz", "c.npz"))
    >>> paired_whole(a, b), paired_whole(b, c)
    (True, False)
    """
    return len(sa.tensors) == len(sb.tensors) == 1 and bool({sa.kind, sb.kind} & {
        "npy", "tensor"})


def diff_sources(
    a: Source | str | bytes | os.PathLike[str],
    b: Source | str | bytes | os.PathLike[str],
    *,
    keys: str | Sequence[str] | None = None,
    fmt: Format | str | None = None,
    rounding: str = "rne",
    overflow: str = "ieee",
    max_ulp: int | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    chunk: int = CHUNK,
    threads: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> CheckpointDiff:
    """Compare every tensor two sources share, by name, element by element.

    Parameters
    ----------
    a, b : Source or path
        The sources (see :func:`open_source`); A is the reference for
        relative errors.
    keys : str or sequence of str, optional
        Glob patterns (``fnmatch``, case-sensitive): only matching names (a
        str is one pattern).
    fmt : Format or str, optional
        Compare in this format (both sides rounded once into it; raw bytes
        read as it).  By default a pair of equal formats is compared as is,
        and mixed formats in the coarser one (:func:`coarser`), the finer
        side rounded once into it; integer tensors as integers.
    rounding, overflow : str
        How a side is rounded into the compared format.
    max_ulp, atol, rtol : optional
        The check: an element passes within ``max_ulp`` ULP or within
        ``|a - b| <= atol + rtol * |a|`` (either, when both are given); with
        neither, only bit-equal elements pass.  NaN against non-NaN fails.
    chunk : int
        Elements per task.
    threads : int, optional
        Local threads, a positive int (default :func:`numerics.get_num_threads`).
    client : dask.distributed.Client, optional
        Run the chunks as tasks on this cluster (each reads its byte range
        from the shared path); the result is identical to the local one.
    progress : callable, optional
        Called with the bytes each finished chunk read.

    Returns
    -------
    CheckpointDiff
        One :class:`TensorDiff` per tensor compared, and the names and shapes that did
        not pair up.

    Raises
    ------
    TensorFileError
        If a source cannot be read, or the ``keys`` match no tensor of either.
        Sources that share no tensor name are not an error: every name is then
        in ``only_a`` or ``only_b`` and the result is not ``ok``.
    ValueError, TypeError
        For an invalid option (the message names it).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> x = np.linspace(-1, 1, 1000, dtype=np.float32)
    >>> y = x.copy(); y[10] = np.nextafter(y[10], np.float32(2))
    >>> np.savez(os.path.join(d, "a.npz"), w=x, b=x[:3])
    >>> np.savez(os.path.join(d, "b.npz"), w=y, c=x[:3])
    >>> r = diff_sources(os.path.join(d, "a.npz"), os.path.join(d, "b.npz"), max_ulp=1)
    >>> [(t.name, t.mismatches, t.max_ulp, t.status) for t in r.tensors], r.only_a, r.only_b
    ([('w', 1, 1, 'pass')], ('b',), ('c',))
    """
    _check_common(rounding, overflow, max_ulp, atol, rtol, chunk, threads, client, progress)
    keys = _check_keys(keys)
    as_fmt = None if fmt is None else as_format(fmt)
    sa = _source_of(a, "a")
    sb = _source_of(b, "b")
    if as_fmt is not None:
        sa, sb = sa.with_raw_format(as_fmt), sb.with_raw_format(as_fmt)
    single = paired_whole(sa, sb) and not keys
    if single:
        pairs = [(sa.tensors[0], sb.tensors[0])]
        only_a: list[str] = []
        only_b: list[str] = []
    else:
        na, nb = select(sa.names, keys), select(sb.names, keys)
        if keys and not na and not nb:
            raise TensorFileError(f"Got --key {' '.join(keys)}, which matches no tensor in "
                                  f"{sa.path!r} or {sb.path!r}")
        common = sorted(set(na) & set(nb))  # none in common: every name is on one side only
        pairs = [(sa[n], sb[n]) for n in common]
        only_a = sorted(set(na) - set(nb))
        only_b = sorted(set(nb) - set(na))
    shape_mm = []
    plans: list[_Plan] = []
    notes: dict[str, None] = {}
    for ra, rb in pairs:
        if ra.shape != rb.shape:
            shape_mm.append((ra.name, ra.shape, rb.shape))
            continue
        f = compare_format(ra, rb, as_fmt)
        plans.append(_Plan(ra, rb, f, rounding, overflow, max_ulp, atol, rtol))
        sides = [s for s, r in (("A", ra), ("B", rb)) if f is not None and r.format != f]
        if f is not None and sides:
            notes[f"{ra.dtype_name} vs {rb.dtype_name}: compared in {f.name}"
                  f", {' and '.join(sides)} rounded once ({rounding}) into it"] = None
    left = [f"{side}: {', '.join(src.skipped[:8])}{', ...' if len(src.skipped) > 8 else ''}"
            for side, src in (("A", sa), ("B", sb)) if src.skipped]
    if left and not keys:  # (a torch file's non-tensors, an .npz member of strings, ...)
        notes["not compared, as not real-number tensors of a readable dtype: "
              + "; ".join(left)] = None
    hidden = [f"{side}: {', '.join(src.unindexed[:8])}"
              f"{', ...' if len(src.unindexed) > 8 else ''}"
              for side, src in (("A", sa), ("B", sb)) if src.unindexed]
    if hidden and not keys:  # (a stale index: transformers would load these too)
        notes["not compared, in the shards but not in the index: " + "; ".join(hidden)] = None
    unread = [f"{side}: {', '.join(src.unread[:8])}{', ...' if len(src.unread) > 8 else ''}"
              for side, src in (("A", sa), ("B", sb)) if src.unread]
    if unread and not keys:  # (a directory's .npy files beside its .safetensors, ...)
        notes["not compared, files of another kind than the directory's checkpoint: "
              + "; ".join(unread)] = None
    parts = {id(p): ComparePartial.empty(0) for p in plans}
    checked = check_tolerances(max_ulp, atol, rtol) != 0
    items = [(p, s, min(s + chunk, p.a.size)) for p in plans for s in range(0, p.a.size, chunk)]
    sizes = [p.a.stored_bytes(start, stop) + p.b.stored_bytes(start, stop)
             for p, start, stop in items]

    def fold(item: tuple[_Plan, int, int], part: ComparePartial) -> None:
        parts[id(item[0])] = parts[id(item[0])].merge(part)

    execute(_diff_item, items, fold, sizes=sizes, threads=threads, client=client,
            progress=progress)
    rows = []
    for p in plans:
        part = parts[id(p)]
        c = part.counts.tolist()
        rounded = ",".join(s for s, r in (("A", p.a), ("B", p.b))
                           if p.format is not None and r.format != p.format)
        rows.append(TensorDiff(
            name=p.a.name if not single else (p.a.name if p.a.name == p.b.name
                                              else f"{p.a.name} / {p.b.name}"),
            dtype_a=p.a.dtype_name, dtype_b=p.b.dtype_name, shape=p.a.shape,
            format=None if p.format is None else p.format.name, rounded=rounded,
            count=p.a.size, mismatches=c[0], nan_mismatches=c[1], inf_mismatches=c[2],
            # with no check only bit-equal elements pass: NaN payloads count too (the
            # kernel's NaN-against-NaN rule is for the checks)
            failures=c[3] if checked else c[0], max_ulp=part.max_ulp,
            max_abs_error=float(part.errors[0]),
            max_rel_error=float(part.errors[1])))
    return CheckpointDiff(
        a=sa.path, b=sb.path, tensors=tuple(rows), only_a=tuple(only_a), only_b=tuple(only_b),
        shape_mismatches=tuple(shape_mm), max_ulp=max_ulp,
        atol=None if atol is None else float(atol), rtol=None if rtol is None else float(rtol),
        notes=tuple(notes))

