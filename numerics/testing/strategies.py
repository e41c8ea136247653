"""Hypothesis strategies for every registered floating-point format.

Every strategy draws one integer *position* in an ordered list of codes and
maps it to a value, so examples shrink the way positions do.  For
:func:`values` the order is ``+0, +smallest subnormal, ..., +max, +inf, -0,
-smallest subnormal, ..., -max, -inf, NaN``: a failing example shrinks to the
failing value that comes first, i.e. toward ``+0`` and small magnitudes,
positive before negative.  So ``find(values("e4m3fn"), lambda x: x > 1)`` is
``1.125``, the first e4m3fn value above 1, and
``find(values("binary16"), lambda x: 3 < x < 3.5)`` is ``3.001953125``.

Edge cases get deliberate weight: the strategy is
``one_of(uniform position, [binade, then position], edge position)``, where
the edges are the zeros, the smallest and largest subnormal, the smallest
normal, ``max``, ``2**emax``, the powers of two ``1, 2, 0.5, 4, 0.25``, the
values one ulp from each, the ends of the allowed range (the bounds), the
infinities and NaN.  (The binade branch exists for formats with more than
``2**16`` positions, where hypothesis would otherwise draw mostly tiny
positions.)  Every branch draws the position itself, which lets hypothesis
move an example found through the edge branch to the first branch while
shrinking; the shrink target is therefore the same whichever branch found it.

Arguments are checked when the strategy is built, as hypothesis does: a bad
argument raises :class:`InvalidArgument`, which is both a
``hypothesis.errors.InvalidArgument`` and a ``ValueError``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import errors as _hyp_errors
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.formats import _REGISTRY, FORMATS, Format, Infinity, NaNEncoding, as_format
from numerics.rounding import ROUNDINGS
from numerics.testing._codes import (
    mag_ceil,
    mag_floor,
    mag_to_float,
    native_dtype,
    subnormal_mags,
    values_to_codes,
)

__all__ = [
    "FORMAT_KINDS",
    "InvalidArgument",
    "arrays",
    "codes",
    "formats",
    "near_ties",
    "roundings",
    "ties",
    "values",
]

#: The kinds :func:`formats` understands (a format may have several).
FORMAT_KINDS: tuple[str, ...] = (
    "ieee", "fn", "fnuz", "finite", "p3109", "unsigned", "fp4", "fp6", "fp8", "wide",
)


class InvalidArgument(_hyp_errors.InvalidArgument, ValueError):
    """A strategy was given an argument it cannot honour (also a ValueError)."""


Interval = tuple[int, int]


# --------------------------------------------------------------------------- helpers
def _format_arg(fmt: Format | str, name: str = "fmt") -> Format:
    try:
        return as_format(fmt)
    except ValueError as exc:
        raise InvalidArgument(str(exc).replace("format=", f"{name}=", 1)) from None


def _check_bool(value: object, name: str, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, bool):
        extra = " or None" if optional else ""
        raise InvalidArgument(f"Got {name}={value!r}, but it must be True or False{extra}")


def _bound(value: object, name: str) -> tuple[Fraction, bool] | None:
    """``(exact value, is_negative)`` of a bound; None for no bound."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating,
                                                         np.integer)):
        raise InvalidArgument(f"Got {name}={value!r}, but it must be a real number or None")
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            raise InvalidArgument(f"Got {name}={value!r}, but a bound cannot be NaN")
        if math.isinf(f):
            return None if (f < 0) == (name == "min_value") else _raise_inf(name, value)
        return Fraction(f), math.copysign(1.0, f) < 0
    exact = Fraction(value)  # type: ignore[arg-type]
    return exact, exact < 0


def _raise_inf(name: str, value: object) -> tuple[Fraction, bool]:
    raise InvalidArgument(f"Got {name}={value!r}, which leaves no value to draw")


def _remove(intervals: list[Interval], lo: int, hi: int) -> list[Interval]:
    out: list[Interval] = []
    for a, b in intervals:
        if b < lo or a > hi:
            out.append((a, b))
            continue
        if a < lo:
            out.append((a, lo - 1))
        if b > hi:
            out.append((hi + 1, b))
    return out


def _finite_mags(fmt: Format, min_b: tuple[Fraction, bool] | None,
                 max_b: tuple[Fraction, bool] | None, *, negative: bool,
                 allow_subnormal: bool, allow_negative_zero: bool) -> list[Interval]:
    """Magnitude-code intervals of one sign's finite values inside the bounds.

    Bounds order ``-0 < +0`` as hypothesis does: ``min_value=0.0`` excludes ``-0``.
    """
    if negative and not fmt.signed:
        return []
    lo, hi = 0, fmt.max_finite_code
    if negative:
        # -v in [min, max]  <=>  v in [-max, -min]
        if max_b is not None:
            mx, mx_neg = max_b
            if mx > 0 or (mx == 0 and not mx_neg):  # +0 <= max: -0 is inside
                pass
            elif mx == 0:
                pass  # max is -0.0: -0 itself is inside
            else:
                c = mag_ceil(fmt, -mx)
                if c is None:
                    return []
                lo = c
        if min_b is not None:
            mn, mn_neg = min_b
            if mn > 0 or (mn == 0 and not mn_neg):
                return []
            hi = mag_floor(fmt, -mn)
    else:
        if min_b is not None:
            mn, _ = min_b
            if mn > 0:
                c = mag_ceil(fmt, mn)
                if c is None:
                    return []
                lo = c
        if max_b is not None:
            mx, mx_neg = max_b
            if mx < 0 or (mx == 0 and mx_neg):
                return []
            hi = mag_floor(fmt, mx)
    if lo > hi:
        return []
    intervals = [(lo, hi)]
    sub = subnormal_mags(fmt)
    if not allow_subnormal and sub is not None:
        intervals = _remove(intervals, *sub)
    if negative and fmt.has_zero and (not allow_negative_zero or not fmt.has_negative_zero):
        intervals = _remove(intervals, 0, 0)
    return intervals


def _edge_mags(fmt: Format) -> tuple[list[int], list[int]]:
    """Edge magnitude codes in shrink order, and their one-ulp neighbours."""
    primary: list[int] = []
    if fmt.has_zero:
        primary.append(0)
    for x in (1.0, 2.0, 0.5, 4.0, 0.25):
        floor = mag_floor(fmt, Fraction(x))
        if floor >= 0 and fmt.magnitude_value(floor) == x:
            primary.append(floor)
    sub = subnormal_mags(fmt)
    if sub is not None:
        primary += [sub[0], sub[1]]
    primary.append(0 if not fmt.subnormals else 1 << fmt.trailing_bits)  # smallest normal
    primary.append(fmt.max_finite_code)
    primary.append(fmt.max_finite_code >> fmt.trailing_bits << fmt.trailing_bits)  # 2**emax
    primary = list(dict.fromkeys(m for m in primary if 0 <= m <= fmt.max_finite_code))
    neighbours = [m + d for m in primary for d in (1, -1)
                  if 0 <= m + d <= fmt.max_finite_code]
    neighbours = [m for m in dict.fromkeys(neighbours) if m not in primary]
    return primary, neighbours


Piece = tuple[str, Interval, Callable[[int], Any]]


def _positions_or_edges(pieces: Sequence[Piece], edges: Sequence[tuple[str, int]], *,
                        chunk: int) -> st.SearchStrategy[Any]:
    """One position ``k`` over every piece in order, biased toward the edges.

    ``pieces`` are ``(tag, (lo, hi), fn)``: the integers ``lo..hi`` mapped by
    ``fn``, laid end to end.  ``edges`` are ``(tag, raw)`` items (those outside
    every piece are dropped).  The strategy is
    ``one_of(integers(0, total - 1), sampled_from(edge positions)).map(pick)``
    (with a branch drawing a chunk of ``chunk`` raw integers first, then a
    position in it, when there are many positions): every branch draws the
    *position itself*, so hypothesis carries examples
    from the edge branch over to the first branch while shrinking, and a
    failing example shrinks to the failing element of smallest position.
    """
    starts: list[int] = []
    total = 0
    for _, (lo, hi), _ in pieces:
        starts.append(total)
        total += hi - lo + 1
    if total == 0:
        raise InvalidArgument("no value satisfies the arguments")
    positions: list[int] = []
    for tag, raw in edges:
        for start, (ptag, (lo, hi), _) in zip(starts, pieces):
            if ptag == tag and lo <= raw <= hi:
                positions.append(start + raw - lo)
                break
    positions = list(dict.fromkeys(positions))

    def pick(k: int) -> Any:
        i = bisect.bisect_right(starts, k) - 1
        _, (lo, _), fn = pieces[i]
        return fn(lo + k - starts[i])

    branches: list[st.SearchStrategy[int]] = [st.integers(0, total - 1)]
    if total > 1 << 16:
        # Hypothesis draws most integers of a wide range below 2**16, which would
        # make nearly every value tiny; a third branch picks a binade first.
        binades: list[Interval] = []
        for start, (_, (lo, hi), _) in zip(starts, pieces):
            a = lo
            while a <= hi:
                b = min(hi, (a // chunk + 1) * chunk - 1)
                binades.append((start + a - lo, start + b - lo))
                a = b + 1
        branches.append(st.sampled_from(binades).flatmap(lambda ab: st.integers(*ab)))
    if positions:
        branches.append(st.sampled_from(positions))
    return st.one_of(*branches).map(pick)


# --------------------------------------------------------------------------- values
def values(
    fmt: Format | str,
    *,
    min_value: float | Fraction | None = None,
    max_value: float | Fraction | None = None,
    allow_nan: bool | None = None,
    allow_infinity: bool | None = None,
    allow_subnormal: bool = True,
    allow_negative_zero: bool = True,
) -> st.SearchStrategy[float]:
    """Python floats exactly representable in ``fmt``.

    Parameters
    ----------
    fmt : Format or str
        The format.
    min_value, max_value : real or None
        Inclusive bounds (any real; they need not be representable).  As in
        ``hypothesis.strategies.floats``, ``-0.0 < +0.0`` here, so
        ``min_value=0.0`` excludes ``-0.0``.
    allow_nan : bool or None
        None: NaN is drawn when the format has one and no bound is given.
    allow_infinity : bool or None
        None: an infinity is drawn when the format has one and the bound on
        its side is absent.
    allow_subnormal : bool
        Whether subnormal values are drawn.
    allow_negative_zero : bool
        Whether ``-0.0`` is drawn (only formats with a ``-0`` code have it).

    Returns
    -------
    SearchStrategy[float]
        Weighted toward the edge list of the module docstring.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(values("e4m3fn"), lambda x: x > 1)
    1.125
    >>> find(values("e2m1fn", min_value=0.1), lambda x: x < 1)
    0.5
    """
    f = _format_arg(fmt)
    for name, v in (("allow_subnormal", allow_subnormal),
                    ("allow_negative_zero", allow_negative_zero)):
        _check_bool(v, name)
    _check_bool(allow_nan, "allow_nan", optional=True)
    _check_bool(allow_infinity, "allow_infinity", optional=True)
    min_b, max_b = _bound(min_value, "min_value"), _bound(max_value, "max_value")
    if min_b is not None and max_b is not None and (
        min_b[0] > max_b[0] or (min_b[0] == max_b[0] == 0 and min_b[1] < max_b[1])
    ):
        raise InvalidArgument(f"Got {min_value=} and {max_value=}, but min_value > max_value")
    bounded = min_value is not None or max_value is not None
    if allow_nan is None:
        allow_nan = f.has_nan and not bounded
    elif allow_nan and not f.has_nan:
        raise InvalidArgument(f"Got {allow_nan=}, but {f.name} has no NaN")
    elif allow_nan and bounded:
        raise InvalidArgument(f"Got {allow_nan=} with {min_value=} and {max_value=}, but "
                              "NaN lies outside every bound")
    pos_inf = f.has_infinity and max_b is None
    neg_inf = f.has_infinity and f.signed and min_b is None
    if allow_infinity is None:
        allow_infinity = pos_inf or neg_inf
    elif allow_infinity and not f.has_infinity:
        raise InvalidArgument(f"Got {allow_infinity=}, but {f.name} has no infinities")
    elif allow_infinity and not (pos_inf or neg_inf):
        raise InvalidArgument(f"Got {allow_infinity=} with {min_value=} and {max_value=}, "
                              "but both infinities lie outside the bounds")
    if not allow_infinity:
        pos_inf = neg_inf = False

    kw = {"allow_subnormal": allow_subnormal, "allow_negative_zero": allow_negative_zero}
    pos = _finite_mags(f, min_b, max_b, negative=False, **kw)
    neg = _finite_mags(f, min_b, max_b, negative=True, **kw)

    def pos_value(mag: int) -> float:
        return mag_to_float(f, mag)

    def neg_value(mag: int) -> float:
        return -mag_to_float(f, mag)

    pieces: list[Piece] = [("+", iv, pos_value) for iv in pos]
    if pos_inf:
        pieces.append(("+inf", (0, 0), lambda _: math.inf))
    pieces += [("-", iv, neg_value) for iv in neg]
    if neg_inf:
        pieces.append(("-inf", (0, 0), lambda _: -math.inf))
    if allow_nan:
        nans = [math.nan]
        if f.signed and f.nan is not NaNEncoding.NEGATIVE_ZERO:
            nans.append(-math.nan)
        pieces.append(("nan", (0, len(nans) - 1), nans.__getitem__))
    if not pieces:
        raise InvalidArgument(
            f"Got {min_value=}, {max_value=}, {allow_subnormal=} and {allow_negative_zero=}: "
            f"no value of {f.name} satisfies them"
        )
    primary, neighbours = _edge_mags(f)
    edges = [(sign, m) for m in primary for sign in "+-"]
    edges += [("+inf", 0), ("-inf", 0), ("nan", 0), ("nan", 1)]
    edges += [(sign, m) for m in neighbours for sign in "+-"]
    # The ends of each allowed range (the bounds) and their neighbours are edges too.
    edges += [(tag, m) for tag, (a, b), _ in pieces for m in (a, a + 1, b - 1, b)]
    return _positions_or_edges(pieces, edges, chunk=1 << f.trailing_bits)


# --------------------------------------------------------------------------- codes
def _code_classes(fmt: Format) -> list[tuple[int, int, str]]:
    """Every code as inclusive intervals labelled zero/subnormal/normal/inf/nan/negzero."""
    t = fmt.trailing_bits
    out: list[tuple[int, int, str]] = []
    signs = (0, fmt.sign_mask) if fmt.signed else (0,)
    for s in signs:
        pieces: list[tuple[int, int, str]] = []
        normal_lo = 0
        if fmt.subnormals:
            pieces.append((0, 0, "zero" if s == 0 else "negzero"))
            if t:
                pieces.append((1, (1 << t) - 1, "subnormal"))
            normal_lo = 1 << t
        pieces.append((normal_lo, fmt.max_finite_code, "normal"))
        if fmt.code_of_inf is not None:
            pieces.append((fmt.code_of_inf, fmt.code_of_inf, "inf"))
        top = fmt.max_finite_code + (1 if fmt.code_of_inf is not None else 0)
        if top < fmt.magnitude_mask:
            pieces.append((top + 1, fmt.magnitude_mask, "nan"))
        for a, b, kind in pieces:
            if s and kind == "negzero" and fmt.nan is NaNEncoding.NEGATIVE_ZERO:
                kind = "nan"
            out.append((s | a, s | b, kind))
    return out


def codes(
    fmt: Format | str,
    *,
    allow_nan: bool = True,
    allow_infinity: bool = True,
    allow_subnormal: bool = True,
    allow_negative_zero: bool = True,
) -> st.SearchStrategy[int]:
    """Raw codes (Python ints) of ``fmt``; every code, NaN codes included, is reachable.

    Parameters
    ----------
    fmt : Format or str
        The format.
    allow_nan, allow_infinity, allow_subnormal, allow_negative_zero : bool
        Whether codes of each class are drawn (all by default).  FNUZ and P3109
        formats have no ``-0``: their ``0x80`` is NaN.

    Examples
    --------
    >>> from hypothesis import find
    >>> hex(find(codes("e4m3fn"), lambda c: c > 0x7E))
    '0x7f'
    """
    f = _format_arg(fmt)
    for name, v in (("allow_nan", allow_nan), ("allow_infinity", allow_infinity),
                    ("allow_subnormal", allow_subnormal),
                    ("allow_negative_zero", allow_negative_zero)):
        _check_bool(v, name)
    banned = {kind for kind, ok in (("nan", allow_nan), ("inf", allow_infinity),
                                    ("subnormal", allow_subnormal),
                                    ("negzero", allow_negative_zero)) if not ok}
    intervals = [(a, b) for a, b, kind in _code_classes(f) if kind not in banned]
    edges = [c for a, b in intervals for c in (a, b, a + 1, b - 1) if a <= c <= b]
    edges = sorted(set(edges), key=lambda c: (c & f.sign_mask, c & f.magnitude_mask))
    return _positions_or_edges([("", iv, _identity) for iv in intervals],
                              [("", c) for c in edges],
                              chunk=1 << f.trailing_bits)


def _identity(c: int) -> int:
    return c


# --------------------------------------------------------------------------- arrays
def arrays(
    fmt: Format | str,
    shape: int | tuple[int, ...] | st.SearchStrategy[int] | st.SearchStrategy[tuple[int, ...]],
    *,
    elements: st.SearchStrategy[float] | None = None,
    unique: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Numpy arrays of ``fmt``'s values, in its native dtype where one exists.

    The dtype is numpy's float16/32/64 for binary16/32/64 and ml_dtypes'
    (``bfloat16``, ``float8_*``, ``float6_*``, ``float4_*``) for the others it
    has; formats without a dtype (tf32, the P3109 family) give arrays of codes
    in ``fmt.code_dtype``.  This is the drop-in replacement for
    ``hypothesis.extra.numpy.from_dtype(ml_dtypes.bfloat16)``, which raises.

    Parameters
    ----------
    fmt : Format or str
        The format.
    shape : int, tuple of int, or a strategy of tuples
        As in ``hypothesis.extra.numpy.arrays``.
    elements : SearchStrategy[float] or None
        Strategy for the elements (Python floats exactly representable in
        ``fmt``); default ``values(fmt)``.
    unique : bool
        Whether all elements differ (``-0.0 == 0.0`` and NaN is never unique
        under float64 comparison).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(arrays("bfloat16", 3), lambda a: bool((a > 1).any())).dtype.name
    'bfloat16'
    """
    f = _format_arg(fmt)
    _check_bool(unique, "unique")
    if elements is None:
        elements = values(f)
    elif not isinstance(elements, st.SearchStrategy):
        raise InvalidArgument(f"Got {elements=}, but it must be a hypothesis strategy or None")
    dtype = native_dtype(f)

    def checked(x: float) -> float:
        _, ok = values_to_codes(np.float64(x), f)
        if not bool(ok):
            raise InvalidArgument(f"Got an element {x!r} from elements, but it is not "
                                  f"representable in {f.name}")
        return float(x)

    def convert(a: np.ndarray) -> np.ndarray:
        if dtype is None:
            c, _ = values_to_codes(a, f)
            return c.astype(f.code_dtype)
        if dtype == np.float64:
            return a
        with np.errstate(invalid="ignore", over="ignore"):
            return a.astype(dtype)

    base = hnp.arrays(np.float64, shape, elements=elements.map(checked), unique=unique)
    return base.map(convert)


# --------------------------------------------------------------------------- ties
def _tie(f: Format, mag: int) -> Fraction:
    lo = f.magnitude_value(mag)
    if mag < f.max_finite_code:
        return (lo + f.magnitude_value(mag + 1)) / 2
    return lo + Fraction(2) ** (f.emax - f.trailing_bits) / 2  # max + half an ulp


def _tie_mags(f: Format) -> tuple[list[int], Interval]:
    primary, neighbours = _edge_mags(f)
    edges = list(dict.fromkeys(primary + neighbours))
    return edges, (0, f.max_finite_code)


def ties(fmt: Format | str, *, exact: bool = False) -> st.SearchStrategy[Any]:
    """Exact midpoints between consecutive finite values of ``fmt``, both signs.

    The midpoint above ``max`` (``max`` plus half an ulp, where round to
    nearest decides between ``max`` and overflow) is included; the midpoint
    between ``-x`` and ``+x`` (zero) is not, nor anything below the smallest
    value of formats without zero.

    Parameters
    ----------
    fmt : Format or str
        The format.
    exact : bool
        Draw :class:`fractions.Fraction` instead of floats; required for
        binary64, whose midpoints are not floats.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(ties("e2m1fn"), lambda x: x > 5)
    7.0
    """
    f = _format_arg(fmt)
    _check_bool(exact, "exact")
    if not exact and f.precision >= 53:
        raise InvalidArgument(f"Got {exact=} for {f.name}, whose midpoints are not floats; "
                              "pass exact=True to draw Fractions")
    edges, (lo, hi) = _tie_mags(f)
    out: Callable[[Fraction], Any] = (lambda q: q) if exact else float
    mags = _positions_or_edges([("", (lo, hi), _identity)], [("", m) for m in edges],
                               chunk=1 << f.trailing_bits)
    signs = st.sampled_from((1, -1)) if f.signed else st.just(1)
    return st.tuples(mags, signs).map(lambda ms: out(ms[1] * _tie(f, ms[0])))


def near_ties(fmt: Format | str, wider: Format | str) -> st.SearchStrategy[float]:
    """Values of ``wider`` one ulp of ``wider`` above or below a midpoint of ``fmt``.

    Every midpoint of ``fmt`` (as in :func:`ties`) must be a value of
    ``wider``: ``wider`` needs at least one more bit of precision and a range
    reaching half the smallest subnormal and ``max`` plus half an ulp of
    ``fmt``; its values must be floats (not wider than binary64).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(near_ties("e2m1fn", "binary16"), lambda x: x > 5)
    5.00390625
    """
    f = _format_arg(fmt)
    w = _format_arg(wider, "wider")
    top = _tie(f, f.max_finite_code)
    low = _tie(f, 0) / 2 if f.has_zero else _tie(f, 0)
    if (w.precision <= f.precision or top >= w.max_exact
            or w.magnitude_value(1 if w.has_zero else 0) > low
            or (f.signed and not w.signed)):
        raise InvalidArgument(
            f"Got {wider=}, but {w.name} cannot hold every midpoint of {f.name} and its "
            "neighbours (it needs more precision and a wider range)"
        )
    edges, (lo, hi) = _tie_mags(f)

    def near(args: tuple[int, int, int]) -> float:
        mag, sign, step = args
        tie = _tie(f, mag)
        wmag = mag_floor(w, tie) + step
        return sign * mag_to_float(w, wmag)

    mags = _positions_or_edges([("", (lo, hi), _identity)], [("", m) for m in edges],
                               chunk=1 << f.trailing_bits)
    signs = st.sampled_from((1, -1)) if f.signed else st.just(1)
    return st.tuples(mags, signs, st.sampled_from((-1, 1))).map(near)


# --------------------------------------------------------------------------- registry
def _kinds_of(f: Format) -> set[str]:
    kinds: set[str] = set()
    if f.infinity is Infinity.IEEE:
        kinds.add("ieee")
    if f.nan is NaNEncoding.TOP:
        kinds.add("fn")
    if f.nan is NaNEncoding.NEGATIVE_ZERO and f.infinity is Infinity.NONE:
        kinds.add("fnuz")
    if not f.has_nan and not f.has_infinity:
        kinds.add("finite")
    if f.infinity is Infinity.TOP:
        kinds.add("p3109")
    if not f.signed:
        kinds.add("unsigned")
    kinds.add({4: "fp4", 6: "fp6", 8: "fp8"}.get(f.bits, "wide" if f.bits >= 16 else "other"))
    return kinds


def formats(*, kinds: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """Canonical names of registered formats, optionally only those of some kinds.

    Parameters
    ----------
    kinds : sequence of str or None
        Keep formats having any of these kinds: ``"ieee"`` (IEEE-placed inf
        and NaN), ``"fn"`` (NaN at the top code, no inf: e4m3fn, e8m0fnu),
        ``"fnuz"`` (NaN at ``0x80``, no inf), ``"finite"`` (no NaN, no inf),
        ``"p3109"`` (IEEE P3109 binary8pK), ``"unsigned"``, and the widths
        ``"fp4"``, ``"fp6"``, ``"fp8"`` and ``"wide"`` (16 bits or more).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(formats(kinds=["fp4"]), lambda name: True)
    'e2m1fn'
    """
    if kinds is None:
        return st.sampled_from(FORMATS)
    if isinstance(kinds, str) or not isinstance(kinds, Sequence):
        raise InvalidArgument(f"Got {kinds=}, but it must be a sequence of kind names or None")
    bad = [k for k in kinds if k not in FORMAT_KINDS]
    if bad or not kinds:
        raise InvalidArgument(f"Got {kinds=}, but the only valid kinds are "
                              + ", ".join(repr(k) for k in FORMAT_KINDS))
    names = [f.name for f in _REGISTRY if _kinds_of(f) & set(kinds)]
    return st.sampled_from(names)


def roundings(*, include_stochastic: bool = False) -> st.SearchStrategy[str]:
    """Rounding-mode names from :data:`numerics.rounding.ROUNDINGS`.

    ``"sr"`` (stochastic) only with ``include_stochastic=True``: its results
    depend on a random generator, so tests need ``rng`` as well.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(roundings(), lambda r: True)
    'rne'
    """
    _check_bool(include_stochastic, "include_stochastic")
    return st.sampled_from([r for r in ROUNDINGS if include_stochastic or r != "sr"])
