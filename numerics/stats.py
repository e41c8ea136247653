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
``unrepresentable``
    The element becomes NaN at any scale: zero and negative elements in an
    unsigned format (e8m0fnu has neither a sign nor a zero).  Such elements
    count here only: a negative one beyond ``max`` is not in ``overflow`` or
    ``saturate`` as well.  Always 0 in a signed format.

Each is a fraction in ``[0, 1]`` of *all* elements (NaN and inf included in
the denominator and counted apart).  Every threshold is a float64 exactly, so
the counts are exact.  The per-tensor scale that fits a format is
``max / amax`` (multiply the tensor by it); ``scale_pow2`` is the largest power
of two not above it, and ``*_scaled`` fractions are those after multiplying by
``scale_pow2`` (exact: a power-of-two scale does not round).  Where the scale is
beyond float64's range (a float64 tensor of tiny values) ``scale`` and
``scale_pow2`` are ``inf`` and ``scale_exact``/``scale_log2`` hold it exactly.

Integer tensors are read exactly: every count and the exponent histogram
(``2**e <= |x| < 2**(e+1)``, ``e = |x|.bit_length() - 1``) are exact for any
int64 or uint64.  ``amax`` and ``amin`` (and so the scales and the dynamic
range) are float64: beyond ``2**53`` an integer is rounded to the float64
towards zero, its last bit set when that dropped any (rounding to odd, which
keeps the binade), so they are within a relative ``2**-52`` of the exact
magnitude.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from numerics.codec import floor_log2
from numerics.compare import check_chunk_size, frozen, value_table
from numerics.dtypes import as_exact_array, is_torch_tensor, refuse_masked, torch_values
from numerics.formats import Format, as_format

__all__ = [
    "CANDIDATE_FORMATS",
    "CHUNK",
    "FormatFit",
    "StatsPartial",
    "TensorStats",
    "finish_stats",
    "stats_chunk",
    "tensor_stats",
]

#: Formats :func:`tensor_stats` reports on by default.
CANDIDATE_FORMATS: tuple[str, ...] = (
    "e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2fn", "e2m3fn", "e2m1fn",
    "bfloat16", "binary16",
)
#: Elements per chunk (one compiled call each; chunks run on threads).
CHUNK = 1 << 22


@dataclass(frozen=True)
class FormatFit:
    """How the tensor fits one format (fractions of all elements, in ``[0, 1]``).

    Attributes
    ----------
    format : Format
        The candidate format.
    overflow, saturate, flush_to_zero, subnormal : float
        Fractions of all elements that overflow to inf/NaN under ``overflow="ieee"``,
        are clamped to ``+-max`` under ``"saturate"``, flush to zero, and round to a
        non-zero subnormal (see the module docstring).
    scale : float or None
        ``max / amax`` (None when the tensor has no non-zero finite element; ``inf``
        beyond float64's range).
    scale_pow2 : float or None
        Largest power of two ``<= max / amax`` (None likewise).
    flush_to_zero_scaled, subnormal_scaled : float or None
        ``flush_to_zero`` and ``subnormal`` after multiplying by ``scale_pow2``.
    scale_exact : Fraction or None
        ``max / amax`` exactly, whatever its size.
    scale_log2 : int or None
        ``log2(scale_pow2)``, exact whatever its size.
    unrepresentable : float
        Elements that become NaN at any scale: zero and negative ones in an unsigned
        format (0.0 in a signed one).
    """

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
    #: ``max / amax`` exactly: ``scale`` and ``scale_pow2`` are ``inf`` when it is beyond
    #: float64's range (a float64 tensor whose ``amax`` is below about ``1e-270``).
    scale_exact: Fraction | None = None
    #: ``log2(scale_pow2)``, exact whatever its size.
    scale_log2: int | None = None
    #: Elements that become NaN at any scale: zero and negative ones in an unsigned format.
    unrepresentable: float = 0.0


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
        ``log2(amax / amin)``, in binades (finite even where ``amax / amin`` is
        beyond float64's range).
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
    over, _ = _over_exact(fmt)
    over_f = _float(over)
    if fmt.subnormals:
        half_sub = Fraction(2) ** (fmt.emin - t - 1)
        flush = float(half_sub)
        normal_tie = float(Fraction(2) ** fmt.emin - half_sub) if t else flush
    else:  # no zero: nothing flushes, nothing is subnormal
        flush = normal_tie = 0.0
    return _Thresholds(over_f, bool(fmt.max_finite_code & 1), flush, normal_tie)


_BINADE_OFFSET = 1074  # the kernel's layout (numerics.kernels.compare), without importing numba
_BINADES = 2098
_POW2 = 53
_KEY_BITS = 16  # numerics.kernels.compare.KEY_BITS


@dataclass
class StatsPartial:
    """The mergeable statistics of some elements (see :func:`stats_chunk`).

    ``counts`` = [NaN, inf, zero]; ``extremes`` = [amax, amin] of the
    non-zero finite magnitudes (``0`` and ``inf`` when there is none);
    ``hist[e + 1074, L]`` counts the non-zero finite magnitudes in binade
    ``e`` whose trailing significand starts with ``L`` one bits, and column
    53 those that are powers of two; ``over[f]`` the elements beyond the
    overflow threshold of candidate ``f`` (positive ones only in an unsigned
    format); ``unrepresentable[f]`` the zero and negative finite elements
    when candidate ``f`` is unsigned (0 otherwise).  Merging is exact and
    order-independent.

    Attributes
    ----------
    count : int
        Number of elements.
    counts : numpy.ndarray of int64, shape (3,)
        NaN, infinite and zero elements.
    extremes : numpy.ndarray of float64, shape (2,)
        ``[amax, amin]`` of the non-zero finite magnitudes (``[0, inf]`` for none).
    hist : numpy.ndarray of int64, shape (2098, 54)
        The binade histogram described above.
    over, unrepresentable : numpy.ndarray of int64, shape (n_formats,)
        Per candidate format, as described above.
    """

    count: int
    counts: np.ndarray
    extremes: np.ndarray
    hist: np.ndarray
    over: np.ndarray
    unrepresentable: np.ndarray

    @classmethod
    def empty(cls, n_formats: int) -> StatsPartial:
        """The partial of no elements."""
        return cls(0, np.zeros(3, np.int64), np.array([0.0, np.inf]),
                   np.zeros((_BINADES, _POW2 + 1), np.int64), np.zeros(n_formats, np.int64),
                   np.zeros(n_formats, np.int64))

    def add(self, other: StatsPartial) -> None:
        """Merge ``other`` into this partial (in place).

        Only the binades from ``other``'s smallest to its largest magnitude
        can hold counts, so only those rows of ``hist`` are added.
        """
        self.count += other.count
        self.counts += other.counts
        self.extremes[:] = (max(self.extremes[0], other.extremes[0]),
                            min(self.extremes[1], other.extremes[1]))
        if other.extremes[0] > 0:
            lo, hi = (int(e) - 1 + _BINADE_OFFSET for e in np.frexp(other.extremes[::-1])[1])
            self.hist[lo:hi + 1] += other.hist[lo:hi + 1]
        self.over += other.over
        self.unrepresentable += other.unrepresentable

    def merge(self, other: StatsPartial) -> StatsPartial:
        """The partial of both sets of elements."""
        return StatsPartial(
            self.count + other.count, self.counts + other.counts,
            np.array([max(self.extremes[0], other.extremes[0]),
                      min(self.extremes[1], other.extremes[1])]),
            self.hist + other.hist, self.over + other.over,
            self.unrepresentable + other.unrepresentable)


@lru_cache(maxsize=64)
def _over_arrays(fmts: tuple[Format, ...]) -> tuple[np.ndarray, np.ndarray, float]:
    th = [_thresholds(f) for f in fmts]
    over = np.array([t.over for t in th], np.float64)
    tie = np.array([t.over_tie for t in th], np.bool_)
    return over, tie, float(over.min()) if over.size else float("inf")


def stats_chunk(values: np.ndarray, formats: tuple[Format, ...], *,
                fmt: Format | None = None) -> StatsPartial:
    """Statistics of a 1-D chunk, in compiled passes.

    ``values`` are float32/float64 values, integers (or bools), or with
    ``fmt`` (a format of at most 16 bits) its codes, read through the format's
    value table (each code counted once with its number of occurrences).
    float32/float64 values take one compiled pass
    (:func:`numerics.kernels.compare.stats_pass`); only subnormals,
    infinities, NaNs and possible overflows go through the exact per-element
    path (:func:`numerics.kernels.compare.stats`).  Integers are read exactly
    (see the module docstring).

    Parameters
    ----------
    values : numpy.ndarray
        The chunk (flattened): float32/float64 values, integers or bools (other floats
        are read as float64), or codes of ``fmt``.
    formats : tuple of Format
        The candidate formats.
    fmt : Format, optional
        The format whose codes ``values`` are (used only when it has at most 16 bits).

    Returns
    -------
    StatsPartial
        The chunk's statistics, to merge with :meth:`StatsPartial.add` and finish
        with :func:`finish_stats`.
    """
    from numerics.kernels import compare as kernels

    x = np.ascontiguousarray(values).reshape(-1)
    count = int(x.size)
    weights = np.empty(0, np.int64)
    mags = None  # integers beyond 2**53: their exact magnitudes (uint64)
    if fmt is not None and fmt.bits <= 16:
        weights = np.bincount(x.astype(fmt.code_dtype, copy=False),
                              minlength=fmt.num_codes).astype(np.int64, copy=False)
        x = value_table(fmt)
    elif x.dtype.kind in "iub":
        x, mags = _integers(x)
    elif x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    wide = x.dtype == np.float64
    x = frozen(x)  # (a memory map or a fresh array: one compiled pass)
    bits = x.view(np.uint64 if wide else np.uint32)
    mbits, ebits = (52, 11) if wide else (23, 8)
    part = StatsPartial.empty(len(formats))
    part.count = count
    over, tie, min_over = _over_arrays(formats)
    extremes = np.array([0, 2**64 - 1], np.uint64)
    min_over_bits = _bits_at_most(min_over, x.dtype)
    if weights.size:
        where = np.arange(x.size, dtype=np.int32)
        kernels.stats(bits, x, where, weights, mbits, ebits, over, tie, min_over_bits,
                      part.counts, extremes, part.hist, part.over)
    else:
        special = _special_keys(mbits, ebits, min_over_bits)
        kernels.stats_pass(bits, x, special, mbits, ebits, over, tie, min_over_bits,
                           part.counts, extremes, part.hist, part.over)
    if extremes[0]:
        amax, amin = extremes.astype(bits.dtype).view(x.dtype).astype(np.float64).tolist()
        part.extremes[:] = (amax, amin)
    unsigned = np.array([not f.signed for f in formats], np.bool_)
    if mags is not None:  # each overflow count exactly, in integers
        negative = x < 0
        part.over[:] = [_count_over(mags, f) - (_count_over(mags[negative], f)
                                                if not f.signed else 0) for f in formats]
        if unsigned.any():
            part.unrepresentable[unsigned] = int(np.count_nonzero(negative)) + part.counts[2]
    elif unsigned.any():
        # zero and negative elements become NaN in an unsigned format, whatever their size
        w = weights if weights.size else None
        negative = (x < 0) & (x != -np.inf)  # neither -0 nor NaN
        neg = np.abs(x[negative]).astype(np.float64)
        neg_w = w[negative] if w is not None else np.ones(neg.size, np.int64)
        for i in np.flatnonzero(unsigned):
            beyond = (neg > over[i]) | ((neg == over[i]) & tie[i])
            part.over[i] -= int(neg_w[beyond].sum())
        part.unrepresentable[unsigned] = int(neg_w.sum()) + part.counts[2]
    return part


def _integers(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Integers (or bools) as float64 values for the kernels, and their exact magnitudes
    where some are beyond ``2**53`` (None where float64 holds every one exactly).

    Beyond ``2**53`` a value is rounded to odd: truncated to 53 significant bits,
    the last of them set when any dropped bit was, which keeps its binade, its
    leading trailing bits and whether it is a power of two.
    """
    if x.dtype.kind == "b" or x.dtype.itemsize < 8:  # float64 holds every value exactly
        return x.astype(np.float64), None
    if x.dtype.kind == "u":
        mags = x.astype(np.uint64)
        negative = None
    else:
        signed = x.astype(np.int64)
        mags = signed.view(np.uint64).copy()
        negative = signed < 0
        np.negative(mags, out=mags, where=negative)  # exact: -2**63 is 2**63 in uint64
    if not mags.size or int(mags.max()) < 2**53:
        return x.astype(np.float64), None
    one = np.uint64(1)
    # frexp's exponent of the float64 rounded to nearest is the bit length, or one more where
    # the rounding carried into the next power of two: then the top bits are 1 and not 1x
    e = np.frexp(mags.astype(np.float64))[1].astype(np.int64)
    top = mags >> np.maximum(e - 2, 0).astype(np.uint64)
    length = e - ((top == one) & (e >= 2))  # exact bit lengths
    shift = np.maximum(length - 53, 0).astype(np.uint64)
    kept = (mags >> shift) << shift
    sticky = (mags & ((one << shift) - one)) != 0
    values = (kept | (sticky.astype(np.uint64) << shift)).astype(np.float64)  # exact
    if negative is not None:
        np.negative(values, out=values, where=negative)
    return values, mags


def _count_over(mags: np.ndarray, fmt: Format) -> int:
    """Integers of magnitudes ``mags`` (uint64) that round above ``fmt``'s max (exactly)."""
    over, tie = _over_exact(fmt)
    floor = over.numerator // over.denominator
    if floor >= 2**64:
        return 0
    n = int(np.count_nonzero(mags > np.uint64(floor)))
    if tie and over.denominator == 1:
        n += int(np.count_nonzero(mags == np.uint64(floor)))
    return n


@lru_cache(maxsize=64)
def _over_exact(fmt: Format) -> tuple[Fraction, bool]:
    """The overflow threshold of ``fmt`` exactly, and whether ``|x| == threshold`` overflows."""
    e_max = floor_log2(fmt.max_exact)
    return (fmt.max_exact + Fraction(2) ** (e_max - fmt.trailing_bits) / 2,
            bool(fmt.max_finite_code & 1))


def _bits_at_most(v: float, dtype: np.dtype) -> int:
    """Magnitude bits of the largest value of ``dtype`` (float32/64) not above ``v >= 0``."""
    if v == float("inf"):
        return (1 << (63 if dtype == np.float64 else 31)) - 1  # above every finite magnitude
    with np.errstate(over="ignore"):  # v beyond float32's max: inf, stepped back to max
        t = np.array([v], dtype)
    if float(t[0]) > v:
        t = np.nextafter(t, dtype.type(0))
    return int(t.view(np.uint64 if dtype == np.float64 else np.uint32)[0])


@lru_cache(maxsize=64)
def _special_keys(mbits: int, ebits: int, min_over_bits: int) -> np.ndarray:
    """The keys (15 top magnitude bits) that :func:`numerics.kernels.compare.stats_pass`
    does not settle from the key alone: exponent field 0 or all ones, leading
    trailing bits all zeros or all ones, and keys that may overflow a candidate."""
    k = _KEY_BITS - ebits
    key = np.arange(1 << _KEY_BITS)
    ef, top = key >> k, key & ((1 << k) - 1)
    lim = min(min_over_bits, ((1 << ebits) - 1) << mbits)
    special = (ef == 0) | (ef == (1 << ebits) - 1) | (top == 0) | (top == (1 << k) - 1) \
        | (key >= lim >> (mbits + ebits - _KEY_BITS))
    out = special.astype(np.uint8)
    out.setflags(write=False)
    return out


def _count_at_most(cum: np.ndarray, pow2: np.ndarray, k: int) -> int:
    """Non-zero finite magnitudes ``<= 2**k``."""
    i = k + _BINADE_OFFSET
    if i < 0:
        return 0
    if i >= _BINADES:
        return int(cum[-1])
    return int(cum[i] + pow2[i])


def _count_below(cum: np.ndarray, k: int) -> int:
    """Non-zero finite magnitudes ``< 2**k``."""
    return int(cum[min(max(k + _BINADE_OFFSET, 0), _BINADES)])


def _top(hist: np.ndarray, e: int, t: int) -> int:
    """Magnitudes in binade ``e`` at least ``2**e * (2 - 2**-(t-1))``: ``L >= t`` leading ones."""
    i = e + _BINADE_OFFSET
    if not 0 <= i < _BINADES:
        return 0
    return int(hist[i, t:_POW2].sum())


def _flush_and_subnormal(fmt: Format, cum: np.ndarray, hist: np.ndarray, j: int) -> tuple[int, int]:
    """Elements that flush to zero, and that become subnormal, after scaling by ``2**j``."""
    if not fmt.subnormals:
        return 0, 0
    t = fmt.trailing_bits
    k = fmt.emin - t - 1  # |x| <= 2**k flushes (the tie goes to zero)
    flush = _count_at_most(cum, hist[:, _POW2], k - j)
    if t == 0:
        return flush, 0
    # subnormal: 2**k < |x| < 2**(emin - 1) * (2 - 2**-t)
    sub = _count_below(cum, fmt.emin - j) - flush - _top(hist, fmt.emin - 1 - j, t)
    return flush, sub


def finish_stats(part: StatsPartial, formats: tuple[Format, ...]) -> TensorStats:
    """The :class:`TensorStats` of a merged partial.

    Parameters
    ----------
    part : StatsPartial
        The statistics of all elements.
    formats : tuple of Format
        The candidate formats, in the order ``part`` was gathered for.

    Returns
    -------
    TensorStats
        The statistics, one :class:`FormatFit` per format.
    """
    n = part.count
    nan, inf, zero = (int(c) for c in part.counts)
    amax, amin = float(part.extremes[0]), float(part.extremes[1])
    nonzero = amax > 0
    per_binade = part.hist[:, :_POW2].sum(axis=1)
    cum = np.concatenate([[0], np.cumsum(per_binade)])
    fits = []
    denom = max(n, 1)
    for i, fmt in enumerate(formats):
        sat = int(part.over[i]) / denom
        over = sat if (fmt.has_infinity or fmt.has_nan) else 0.0
        flush, sub = _flush_and_subnormal(fmt, cum, part.hist, 0)
        scale = scale2 = ftz_s = sub_s = exact = j = None
        if nonzero:
            exact = fmt.max_exact / Fraction(amax)
            scale = _float(exact)
            j = floor_log2(exact)
            scale2 = _float(Fraction(2) ** j)
            f_s, s_s = _flush_and_subnormal(fmt, cum, part.hist, j)
            ftz_s, sub_s = f_s / denom, s_s / denom
        fits.append(FormatFit(fmt, float(over), float(sat), flush / denom, sub / denom,
                              scale, scale2, ftz_s, sub_s, exact, j,
                              int(part.unrepresentable[i]) / denom))
    exps = tuple((k - _BINADE_OFFSET, int(c)) for k, c in enumerate(per_binade.tolist()) if c)
    return TensorStats(
        count=n, nan=nan, inf=inf, zero=zero,
        amax=amax if nonzero else None, amin=amin if nonzero else None,
        dynamic_range=_log2_ratio(amax, amin) if nonzero else None,
        exponent_histogram=exps, fits=tuple(fits),
    )


def _log2_ratio(big: float, small: float) -> float:
    """``log2(big / small)`` for positive finite floats, without forming ``big / small``
    (which overflows for ``1e300 / 1e-20``): the exponents apart, the significands
    (in ``[0.5, 1)``) divided.

    Examples
    --------
    >>> _log2_ratio(8.0, 0.5), round(_log2_ratio(1e300, 1e-20), 3)
    (4.0, 1063.017)
    """
    mb, eb = math.frexp(big)
    ms, es = math.frexp(small)
    return (eb - es) + math.log2(mb / ms)


def tensor_stats(
    values: np.ndarray | Callable[[int, int], np.ndarray],
    size: int | None = None,
    *,
    formats: tuple[Format | str, ...] = CANDIDATE_FORMATS,
) -> TensorStats:
    """Range statistics of a tensor and its fit to each format.

    Parameters
    ----------
    values : array_like, or callable ``(start, stop) -> ndarray``
        The values (real numbers that float64 holds: every value of every
        supported format), or a function giving the flattened values chunk by
        chunk (then ``size`` is required), so memory-mapped tensors are read
        lazily; torch tensors (bfloat16 and float8 too) are read exactly.
        float32 chunks and integers are read as they are (integers
        exactly, beyond ``2**53`` too: see the module docstring), anything
        else as float64.
    size : int, optional
        Number of elements, with a callable ``values`` (and only then);
        ``values(start, stop)`` must return exactly ``stop - start`` of them.
    formats : tuple of Format or str
        The candidate formats (a single format or name is taken as a 1-tuple).

    Returns
    -------
    TensorStats
        The counts, extremes and exponent histogram, with one :class:`FormatFit` per
        format in the order given.

    Raises
    ------
    TypeError
        If the values are not real numbers, or ``formats`` is not a tuple of formats.
    ValueError
        If a non-zero value is beyond float64's range (``10**400``, or a longdouble
        ``10**-4000`` that float64 would make 0), a callable ``values`` returns more or
        fewer elements than asked, or an argument is invalid.

    Examples
    --------
    >>> s = tensor_stats(np.array([1000.0, 1.0, 1e-4, 0.0, np.nan]), formats=("e4m3fn",))
    >>> s.count, s.nan, s.zero, s.exponent_histogram
    (5, 1, 1, ((-14, 1), (0, 1), (9, 1)))
    >>> f = s.fits[0]
    >>> f.overflow, f.saturate, f.flush_to_zero, f.subnormal, f.scale_pow2
    (0.2, 0.2, 0.2, 0.0, 0.25)
    """
    if isinstance(formats, (str, Format)):
        formats = (formats,)
    if not isinstance(formats, (tuple, list)):
        raise TypeError(f"Got formats={formats!r} of type {type(formats).__name__}, but it "
                        "must be a tuple of formats (Format or name)")
    fmts = tuple(as_format(f, arg="formats") for f in formats)
    if callable(values):
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) \
                or size < 0:
            raise ValueError(f"Got {size=!r}, but a callable values needs the element count "
                             "(an int >= 0)")
        get = values
        n = int(size)
    else:
        if size is not None:
            raise ValueError(f"Got {size=!r} with an array of values; size is only for a "
                             "callable values")
        flat = _as_real_array(values).reshape(-1)
        n = flat.size

        def get(start: int, stop: int) -> np.ndarray:
            return flat[start:stop]

    def one(start: int) -> StatsPartial:
        stop = min(start + CHUNK, n)
        chunk = check_chunk_size(_as_real_array(get(start, stop)), start, stop, "values")
        if chunk.dtype != np.float32 and chunk.dtype.kind not in "iub":  # read as they are
            chunk = chunk.astype(np.float64, copy=False)
        return stats_chunk(chunk, fmts)

    starts = range(0, n, CHUNK)
    total = StatsPartial.empty(len(fmts))
    if len(starts) > 1:
        from numerics.threads import get_num_threads, ordered_map

        for part in ordered_map(one, starts, get_num_threads()):
            total.add(part)
    elif n:
        total = one(0)
    return finish_stats(total, fmts)


_BEYOND = ("Got values beyond float64's range (such as 10**400, or 10**-4000 that float64 "
           "would make 0); tensor_stats takes values that float64 holds")


def _as_real_array(values: object) -> np.ndarray:
    """``values`` as a float64-compatible real array (TypeError/ValueError otherwise):
    float32, float64 and integers as they are, other floats (longdouble, float16,
    ml_dtypes, torch tensors) and objects as float64, checked to stay in its range."""
    if is_torch_tensor(values):
        values = torch_values(values, "values")
    refuse_masked(values, "values")
    try:
        arr = as_exact_array(values)  # (big ints beside floats stay exact, as objects)
    except (ValueError, OverflowError) as err:
        raise ValueError(f"Got values that are not an array of real numbers: {err}") from None
    if arr.dtype == np.float32 or arr.dtype == np.float64 or arr.dtype.kind in "biu":
        return arr  # integers stay integers: stats_chunk reads them exactly
    if arr.dtype.kind == "f" or (arr.dtype.kind == "V" and arr.dtype.names is None
                                    and hasattr(arr.dtype, "type") and arr.dtype.itemsize <= 2):
        try:
            # (range checked below; a signalling NaN of ml_dtypes is a NaN)
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                out = arr.astype(np.float64)
        except (TypeError, ValueError):
            pass
        else:
            if arr.dtype.itemsize > 8:  # longdouble: may be beyond float64's range
                _check_range(arr, out)
                _check_exact(arr, out)
            return out
    if arr.dtype.kind == "O":
        try:
            out = np.array([float(v) for v in arr.reshape(-1)], np.float64).reshape(arr.shape)
        except OverflowError:
            raise ValueError(_BEYOND) from None
        except (TypeError, ValueError):
            raise TypeError(f"Got values of dtype {arr.dtype}, but they must be real numbers") \
                from None
        _check_range(arr, out)
        _check_exact(arr, out)
        return out
    raise TypeError(f"Got values of dtype {arr.dtype}, but they must be real numbers")


def _check_exact(arr: np.ndarray, out: np.ndarray) -> None:
    """ValueError at the first value of ``arr`` (long doubles or objects, each in
    float64's range) that its float64 in ``out`` does not equal: the counts would be
    those of another value.  (Python compares ints, Fractions and Decimals with a float
    exactly; numpy integer scalars are compared as Python ints.)"""
    flat, conv = arr.reshape(-1), out.reshape(-1)
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            where = (np.isfinite(flat) & (conv.astype(arr.dtype) != flat)).nonzero()[0][:1]
        bad = where.tolist()
    else:
        bad = [i for i, (v, f) in enumerate(zip(flat.tolist(), conv.tolist()))
               if not isinstance(v, float) and f == f and abs(f) != np.inf
               and (int(v) if isinstance(v, np.integer) else v) != f][:1]
    if bad:
        raise ValueError(f"Got values.flat[{bad[0]}] = {flat[bad[0]]!r}, which float64 does "
                         "not hold exactly; tensor_stats takes values that float64 holds")


def _check_range(arr: np.ndarray, out: np.ndarray) -> None:
    """ValueError where a finite value of ``arr`` (longdouble or objects) became inf in
    ``out`` (its float64 values) or a non-zero one became 0."""
    flat, conv = arr.reshape(-1), out.reshape(-1)
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = (np.isinf(conv) & np.isfinite(flat)) | ((conv == 0) & (flat != 0))
        where = bad.nonzero()[0][:1].tolist()
    else:  # objects: only the infinities and zeros are looked at, one by one
        where = [i for i in (np.isinf(conv) | (conv == 0)).nonzero()[0].tolist()
                 if (flat[i] != 0 if conv[i] == 0 else flat[i] == flat[i]
                     and abs(flat[i]) != np.inf)][:1]
    if where:
        raise ValueError(f"{_BEYOND}: values.flat[{where[0]}] = {flat[where[0]]!r}")
