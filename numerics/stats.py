"""Range statistics of a tensor and how it would fit each candidate low-precision format.

For every candidate format :func:`tensor_stats` counts, over the finite
elements, what round-to-nearest-even would do to each one:

``saturate``
    ``|x|`` rounds above ``max`` (exponent range taken as unbounded): the
    element is clamped to ``+-max`` under ``overflow="saturate"`` (and under
    ``"ieee"`` in formats with neither inf nor NaN).
``overflow``
    The element becomes inf or NaN under ``overflow="ieee"``: the same
    elements as ``saturate`` in formats with an inf or a NaN, none otherwise.
``flush_to_zero``
    A non-zero element rounds to zero: ``0 < |x| <= smallest_subnormal / 2``
    (the tie goes to the even code, zero).
``subnormal``
    The element rounds to a non-zero subnormal:
    ``smallest_subnormal / 2 < |x| < smallest_normal - smallest_subnormal / 2``.

Each is a fraction in ``[0, 1]`` of *all* elements (NaN and inf included in
the denominator and counted apart).  Every threshold is a float64 exactly, so
the counts are exact.  The per-tensor scale that fits a format is
``max / amax`` (multiply the tensor by it); ``scale_pow2`` is the largest power
of two not above it, and ``*_scaled`` fractions are those after multiplying by
``scale_pow2`` (exact: a power-of-two scale does not round).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from numerics.codec import floor_log2
from numerics.formats import Format, as_format

__all__ = ["CANDIDATE_FORMATS", "CHUNK", "FormatFit", "TensorStats", "tensor_stats"]

#: Formats :func:`tensor_stats` reports on by default.
CANDIDATE_FORMATS: tuple[str, ...] = (
    "e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2fn", "e2m3fn", "e2m1fn",
    "bfloat16", "binary16",
)
#: Elements per chunk.
CHUNK = 1 << 20


@dataclass(frozen=True)
class FormatFit:
    """How the tensor fits one format (fractions of all elements, in ``[0, 1]``)."""

    format: Format
    overflow: float
    saturate: float
    flush_to_zero: float
    subnormal: float
    #: ``max / amax`` (None when the tensor has no non-zero finite element).
    scale: float | None
    #: Largest power of two ``<= max / amax`` (None likewise).
    scale_pow2: float | None
    #: ``flush_to_zero`` and ``subnormal`` after multiplying by ``scale_pow2``.
    flush_to_zero_scaled: float | None
    subnormal_scaled: float | None


@dataclass(frozen=True)
class TensorStats:
    """Range statistics of one tensor.

    Attributes
    ----------
    count, nan, inf, zero : int
        Elements in all, NaN, infinite, and (either) zero.
    amax, amin : float or None
        Largest and smallest magnitude of the non-zero finite elements.
    dynamic_range : float or None
        ``log2(amax / amin)``, in binades.
    exponent_histogram : tuple of (int, int)
        ``(e, count)`` for the non-zero finite elements with
        ``2**e <= |x| < 2**(e+1)``, ascending ``e``.
    fits : tuple of FormatFit
        One per candidate format.
    """

    count: int
    nan: int
    inf: int
    zero: int
    amax: float | None
    amin: float | None
    dynamic_range: float | None
    exponent_histogram: tuple[tuple[int, int], ...]
    fits: tuple[FormatFit, ...]


@dataclass(frozen=True)
class _Thresholds:
    over: float          # |x| > over saturates
    over_tie: bool       # |x| == over saturates too
    flush: float         # 0 < |x| <= flush flushes to zero
    normal_tie: float    # flush < |x| < normal_tie is subnormal


def _float(x: Fraction) -> float:
    """``float(x)``, or ``inf`` beyond binary64's range (no finite float64 exceeds it)."""
    try:
        return float(x)
    except OverflowError:
        return float("inf")


def _thresholds(fmt: Format) -> _Thresholds:
    t = fmt.trailing_bits
    e_max = floor_log2(fmt.max_exact)
    over = fmt.max_exact + Fraction(2) ** (e_max - t) / 2
    over_f = _float(over)
    if fmt.subnormals:
        half_sub = Fraction(2) ** (fmt.emin - t - 1)
        flush = float(half_sub)
        normal_tie = float(Fraction(2) ** fmt.emin - half_sub) if t else flush
    else:  # no zero: nothing flushes, nothing is subnormal
        flush = normal_tie = 0.0
    return _Thresholds(over_f, bool(fmt.max_finite_code & 1), flush, normal_tie)


def tensor_stats(
    values: np.ndarray | Callable[[int, int], np.ndarray],
    size: int | None = None,
    *,
    formats: tuple[Format | str, ...] = CANDIDATE_FORMATS,
) -> TensorStats:
    """Range statistics of a tensor and its fit to each format.

    Parameters
    ----------
    values : ndarray, or callable ``(start, stop) -> float64 ndarray``
        The exact values (float64 holds every value of every supported
        format), or a function giving the flattened values chunk by chunk
        (then ``size`` is required), so memory-mapped tensors are read lazily.
    size : int, optional
        Number of elements, with a callable ``values``.
    formats : tuple of Format or str
        The candidate formats.

    Examples
    --------
    >>> s = tensor_stats(np.array([1000.0, 1.0, 1e-4, 0.0, np.nan]), formats=("e4m3fn",))
    >>> s.count, s.nan, s.zero, s.exponent_histogram
    (5, 1, 1, ((-14, 1), (0, 1), (9, 1)))
    >>> f = s.fits[0]
    >>> f.overflow, f.saturate, f.flush_to_zero, f.subnormal, f.scale_pow2
    (0.2, 0.2, 0.2, 0.0, 0.25)
    """
    fmts = tuple(as_format(f) for f in formats)
    if callable(values):
        if size is None:
            raise ValueError("Got size=None, but a callable values needs the element count")
        get = values
        n = int(size)
    else:
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        n = flat.size

        def get(start: int, stop: int) -> np.ndarray:
            return flat[start:stop]

    th = [_thresholds(f) for f in fmts]
    nan = inf = zero = 0
    amax = 0.0
    amin = float("inf")
    hist = np.zeros(2200, np.int64)  # exponents -1100 .. 1099
    counts = np.zeros((len(fmts), 4), np.int64)  # saturate, flush, subnormal (overflow derived)
    chunks = []
    for start in range(0, n, CHUNK):
        x = np.asarray(get(start, min(start + CHUNK, n)), dtype=np.float64)
        a = np.abs(x)
        nan += int(np.count_nonzero(np.isnan(x)))
        inf += int(np.count_nonzero(np.isinf(x)))
        zero += int(np.count_nonzero(x == 0))
        a = a[np.isfinite(a) & (a > 0)]
        if a.size:
            amax = max(amax, float(a.max()))
            amin = min(amin, float(a.min()))
            _, e = np.frexp(a)
            hist += np.bincount(e.astype(np.int64) - 1 + 1100, minlength=hist.size)
        for i, tt in enumerate(th):
            counts[i, 0] += np.count_nonzero((a > tt.over) | ((a == tt.over) & tt.over_tie))
            counts[i, 1] += np.count_nonzero(a <= tt.flush)
            counts[i, 2] += np.count_nonzero((a > tt.flush) & (a < tt.normal_tie))
        chunks.append((start, min(start + CHUNK, n)))
    nonzero = amax > 0
    fits = []
    denom = max(n, 1)
    for i, (fmt, tt) in enumerate(zip(fmts, th)):
        sat = counts[i, 0] / denom
        over = sat if (fmt.has_infinity or fmt.has_nan) else 0.0
        scale = scale2 = ftz_s = sub_s = None
        if nonzero:
            scale = _float(fmt.max_exact / Fraction(amax))
            scale2 = _float(Fraction(2) ** floor_log2(fmt.max_exact / Fraction(amax)))
            f_cnt = s_cnt = 0
            for start, stop in chunks:
                a = np.abs(np.asarray(get(start, stop), dtype=np.float64))
                with np.errstate(over="ignore", under="ignore"):
                    # exact (a power of two) except where it overflows float64 itself
                    a = a[np.isfinite(a) & (a > 0)] * scale2
                f_cnt += int(np.count_nonzero(a <= tt.flush))
                s_cnt += int(np.count_nonzero((a > tt.flush) & (a < tt.normal_tie)))
            ftz_s, sub_s = f_cnt / denom, s_cnt / denom
        fits.append(FormatFit(fmt, float(over), float(sat), float(counts[i, 1] / denom),
                              float(counts[i, 2] / denom), scale, scale2, ftz_s, sub_s))
    exps = tuple((int(k) - 1100, int(c)) for k, c in enumerate(hist.tolist()) if c)
    return TensorStats(
        count=n, nan=nan, inf=inf, zero=zero,
        amax=amax if nonzero else None, amin=amin if nonzero else None,
        dynamic_range=float(np.log2(amax / amin)) if nonzero else None,
        exponent_histogram=exps, fits=tuple(fits),
    )
