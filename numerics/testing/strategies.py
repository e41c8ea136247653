"""Hypothesis strategies for every registered floating-point format.

Values
------
:func:`values` draws four integer choices: a *piece* (zero, then the binades
of exponent 0, 1, 2, ..., then -1, -2, ..., the subnormals, the infinities
and NaN: the order hypothesis gives floats), a sign, a *width* ``k`` (how many
trailing significand bits are used) and the bits themselves (with the last
used bit set, read in reverse so the leading bits vary first).  Every choice
shrinks toward 0, so a failing example shrinks toward simple values: ``0``,
``1.0``, ``2.0``, ``1.5``, ``4.0``, small integers and powers of two, then
fewer significant bits, rather than toward tiny subnormals
(``find(values("binary32"), lambda x: 0 < abs(x) < 1)`` is ``0.5``).

The draws are weighted toward what kernels break on: the zeros, infinities,
NaNs, the subnormal, smallest-normal and ``max`` binades, the binades cut by
a bound; and toward widths equal to the precision of every narrower
registered format, whose values with the last bit set are that format's
midpoints when their exponent lies in that format's range.  The exponent is
drawn over the drawn format's whole range, so about 3.5% of
``values("binary32")`` are bfloat16 ties (same range) but well under 1% are
binary16 or fp8 ties; draw from :func:`ties` and :func:`near_ties` of the
narrow format to aim at those.  Past the widths, the draws lean toward values
one ulp above or below such a midpoint (what double rounding breaks on).

Arrays
------
:func:`arrays` is ``hypothesis.extra.numpy.arrays`` over these values: it
draws and shrinks at its speed, keeps its *fill* (one value repeated over
most elements, drawn with extra weight on zeros, infinities, NaN and max, so
constant arrays come up), and prints a falsifying array exactly
(:func:`exact_repr`): ``np.array([1.0, 1.0000001192092896], dtype=np.float32)``.
:func:`code_arrays` draws arbitrary bit patterns (signalling NaNs included)
viewed as the format's dtype; :func:`blocks` draws inputs for scaled and
block quantizers (ties in the scaled domain, per-block exponents, equal
blocks, outliers); :func:`seeds` and :func:`rngs` give stochastic rounding a
seed that hypothesis shrinks and replays.

Arguments are checked when a strategy is first drawn from (or its
``validate()`` is called), as hypothesis checks its own: a bad argument raises
:class:`InvalidArgument`, which is both a ``hypothesis.errors.InvalidArgument``
and a ``ValueError``, in the test that draws, and a module that builds a bad
strategy still collects.
"""

from __future__ import annotations

import bisect
import functools
import math
import numbers
import weakref
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, ParamSpec, TypeVar, cast

import numpy as np

try:
    from hypothesis import errors as _hyp_errors
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as _missing:  # pragma: no cover - hypothesis is installed for the tests
    raise ImportError("numerics.testing.strategies builds hypothesis strategies: install "
                      "hypothesis (pip install 'numerics[testing]')") from _missing

from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, as_format, get_format
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
    "BLOCK_KINDS",
    "FORMAT_KINDS",
    "MAX_ARRAY_SIZE",
    "InvalidArgument",
    "arrays",
    "blocks",
    "code_arrays",
    "codes",
    "exact_repr",
    "formats",
    "near_ties",
    "rngs",
    "roundings",
    "seeds",
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
        return as_format(fmt, arg=name)
    except (ValueError, TypeError) as exc:  # a wrong type too, as hypothesis does
        raise InvalidArgument(str(exc)) from None


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _checked_when_drawn(build: Callable[_P, st.SearchStrategy[_T]]
                        ) -> Callable[_P, st.SearchStrategy[_T]]:
    """``build`` as a strategy function whose arguments are checked when the strategy is
    first drawn from (or ``validate()``-d), as hypothesis checks its own: a bad argument
    fails the test that draws, not the collection of the module that builds it.  The
    strategy prints as the call that made it."""

    @functools.wraps(build)
    def strategy(*args: _P.args, **kwargs: _P.kwargs) -> st.SearchStrategy[_T]:
        def made() -> st.SearchStrategy[_T]:
            return build(*args, **kwargs)

        made.__name__ = made.__qualname__ = "%s(%s)" % (build.__name__, ", ".join(
            [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]))
        out = st.deferred(made)
        _MADE[out] = made
        return out

    return strategy


#: The strategies :func:`_checked_when_drawn` made, and how to build what they stand for.
_MADE: weakref.WeakKeyDictionary[st.SearchStrategy[Any], Callable[[], st.SearchStrategy[Any]]] \
    = weakref.WeakKeyDictionary()


def _built(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The strategy one of this module's functions stands for (its arguments checked),
    or ``strategy`` itself."""
    made = _MADE.get(strategy)
    return strategy if made is None else _built(made())


def _is_int(value: object) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


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


def _only_infinity(f: Format, min_value: object, max_value: object, allow_nan: bool | None,
                   allow_infinity: bool | None) -> float | None:
    """The infinity that bounds of ``min_value=inf`` (or ``max_value=-inf``) leave, as
    ``hypothesis.strategies.floats`` draws it; None for other bounds.  InvalidArgument
    where the format has no such infinity or another argument rules it out."""
    def infinite(v: object, sign: float) -> bool:
        return isinstance(v, (float, np.floating)) and float(v) == sign * math.inf

    if infinite(min_value, 1.0) and (max_value is None or infinite(max_value, 1.0)):
        value, name, bound = math.inf, "min_value", min_value
    elif infinite(max_value, -1.0) and (min_value is None or infinite(min_value, -1.0)):
        value, name, bound = -math.inf, "max_value", max_value
    else:
        return None
    if not f.has_infinity or (value < 0 and not f.signed) or allow_infinity is False:
        why = "allow_infinity=False rules it out" if allow_infinity is False else \
            f"{f.name} has no {'negative ' if value < 0 else ''}infinity"
        raise InvalidArgument(f"Got {name}={bound!r}, which leaves only {value}, but {why}")
    if allow_nan:
        raise InvalidArgument(f"Got {allow_nan=} with {name}={bound!r}, but NaN lies outside "
                              "every bound")
    return value


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
def _draw_int(data: Any, lo: int, hi: int, weights: dict[int, float] | None = None) -> int:
    """One integer choice in ``[lo, hi]`` that shrinks toward 0 (or ``lo``), with extra
    probability on a few values, as ``hypothesis.strategies.integers`` gives its bounds.

    This is hypothesis's ``ConjectureData.draw_integer``, the primitive its own
    strategies use; should a later hypothesis drop ``weights``, the draw stays
    valid without them (only the edge weighting is lost).
    """
    if weights:
        try:
            return int(data.draw_integer(lo, hi, weights=weights))
        except TypeError:  # pragma: no cover - a hypothesis without weighted draws
            pass
    return int(data.draw_integer(lo, hi))


def _bitrev(j: int, t: int) -> int:
    """``j``'s low ``t`` bits in reverse order: 0, 1, 2, 3 -> 0, 2**(t-1), 2**(t-2), ..."""
    out = 0
    for _ in range(t):
        out = (out << 1) | (j & 1)
        j >>= 1
    return out


class _ValueStrategy(st.SearchStrategy[float]):
    """Draws the four choices of a :class:`_Layout` (piece, sign, width, bits) directly.

    One strategy with four integer choices and no nested strategies: as fast
    per element as hypothesis's own ``floats()``.  The weights go to
    hypothesis's integer choice, as ``hypothesis.strategies.integers`` gives
    its bounds extra weight; every choice shrinks toward 0.
    """

    def __init__(self, layout: _Layout, piece_weights: dict[int, float],
                 width_weights: dict[int, float]) -> None:
        super().__init__()
        self.layout = layout
        n, t = len(layout.pieces), layout.f.trailing_bits
        self.n, self.t = n, t
        self.piece_weights = piece_weights if n > 1 and piece_weights else None
        self.width_weights = width_weights if t > 0 and width_weights else None
        self.k_max = t + len(layout.near)   # widths beyond t: near-midpoints
        self.j_max = max((1 << max(t - 1, 0)) - 1, 0)
        # As integers() does: extra weight at the ends (all bits set: the top of a binade).
        self.j_weights = {0: 0.02, self.j_max: 0.06} if self.j_max > 1 else None

    def __repr__(self) -> str:
        return f"values({self.layout.f.name!r}, ...)"

    def for_fill(self) -> _ValueStrategy:
        """The same values with more weight on zeros, infinities, NaNs and max.

        :func:`arrays` draws its fill value (one value for many elements) from
        it, so constant arrays of the values kernels break on come up often.
        """
        weights = dict(self.piece_weights or {})
        f = self.layout.f
        for i, (kind, ranges) in enumerate(self.layout.pieces):
            if kind in ("zero", "inf", "nan"):
                weights[i] = 0.15
            elif kind == "edge" and any(r is not None and r[1] == f.max_finite_code
                                        for r in ranges):
                weights[i] = 0.1
        total = sum(weights.values())
        if total >= 0.9:
            weights = {i: w * 0.9 / total for i, w in weights.items()}
        return _ValueStrategy(self.layout, weights, self.width_weights or {})

    def do_draw(self, data: Any) -> float:
        i = _draw_int(data, 0, self.n - 1, self.piece_weights)
        negative = data.draw_boolean()
        k = _draw_int(data, 0, self.k_max, self.width_weights)
        j = _draw_int(data, 0, self.j_max, self.j_weights)
        return self.layout.value((i, negative, k, j))


class _Layout:
    """The choices of :func:`values`: a binade, a sign, then a significand.

    Pieces are ``(kind, ranges)``: for a binade (``kind`` its field), the
    allowed magnitude codes ``(lo, hi)`` of ``+`` and of ``-`` (None where a
    sign has none); the kinds ``"zero"``, ``"inf"`` and ``"nan"`` hold the
    allowed specials of each sign.  Pieces are ordered as hypothesis orders
    floats: zero, then binades of exponent 0, 1, 2, ... (1.0, 2.0, 4.0 first),
    the infinities, then -1, -2, ... (0.5, 0.25), the subnormals, then NaNs; the
    edges (max, the smallest normal, a bound's ends, ...) each follow their binade.
    Inside a binade the significand is drawn as ``k`` (how many trailing bits
    it uses) and ``j`` (those bits, the last one set), so shrinking goes to
    fewer significant bits; a candidate outside ``lo..hi`` is clamped to the
    nearer end.  A sign that has nothing in a piece is replaced by the other.
    """

    def __init__(self, f: Format, pos: list[Interval], neg: list[Interval], *,
                 pos_inf: bool, neg_inf: bool, nans: list[float]) -> None:
        self.f = f
        t = f.trailing_bits
        mask = (1 << t) - 1
        Ranges = list[tuple[int, int] | None]
        fields: dict[int, Ranges] = {}
        zero: Ranges = [None, None]
        for s, ivs in enumerate((pos, neg)):
            for a, b in ivs:
                if a == 0 and f.has_zero:
                    zero[s] = (0, 0)
                    a = 1
                field = a >> t
                while a <= b:
                    top = min(b, (field << t) | mask)
                    fields.setdefault(field, [None, None])[s] = (a, top)
                    field += 1
                    a = field << t

        def key(field: int) -> tuple[bool, int, bool]:
            sub = f.subnormals and field == 0
            e = f.emin if sub else field - f.bias
            return e < 0, abs(e), sub

        pieces: list[tuple[Any, Ranges]] = []
        if zero != [None, None]:
            pieces.append(("zero", zero))
        binades = sorted(fields, key=key)
        # the infinities follow the largest binade of exponent >= 0 (after the binades
        # below 1 where there is none), so that an infinity that fails shrinks to max
        upper = [i for i, field in enumerate(binades) if not key(field)[0]]
        cut = upper[-1] + 1 if upper else len(binades)
        pieces += [(field, fields[field]) for field in binades[:cut]]
        if pos_inf or neg_inf:
            pieces.append(("inf", [(0, 0) if pos_inf else None, (0, 0) if neg_inf else None]))
        pieces += [(field, fields[field]) for field in binades[cut:]]
        if nans:
            pieces.append(("nan", [(0, 0), (1, 1) if len(nans) > 1 else None]))
        # Edges whose significand is all ones or a bound's end, as pieces of their own
        # (the same values are in their binades too): max, the largest subnormal, the
        # smallest normal, the value below 1, and the ends of each allowed range and
        # their neighbours.
        smallest_normal = _float_mag(f, f.smallest_normal)
        wanted = {f.max_finite_code, (1 << t) - 1 if f.subnormals else -1,
                  ((f.bias << t) - 1) if f.bias > 0 else -1,
                  -1 if smallest_normal is None else smallest_normal}
        for ivs in (pos, neg):
            for a, b in ivs:
                wanted |= {a, a + 1, b - 1, b}
        # Each edge follows its own binade, so that a failing edge shrinks into that
        # binade's simpler values and on through the binades before it (at the end of
        # the list, as before, the pieces just below an edge were other edges, NaN and
        # the subnormals, and hypothesis's shrinker stayed at the edge: max - 1 ulp).
        after: dict[int, list[tuple[Any, Ranges]]] = {}
        for m in sorted(w for w in wanted if 0 < w <= f.max_finite_code):
            ranges: Ranges = [None, None]
            for s, ivs in enumerate((pos, neg)):
                if any(a <= m <= b for a, b in ivs):
                    ranges[s] = (m, m)
            if ranges != [None, None]:
                after.setdefault(m >> t, []).append(("edge", ranges))
        placed: list[tuple[Any, Ranges]] = []
        for piece in pieces:
            placed.append(piece)
            if isinstance(piece[0], int):
                placed += after.pop(piece[0], [])
        self.pieces = placed + [edge for edges in after.values() for edge in edges]
        self.nans = nans
        #: Precisions p of narrower formats whose near-midpoints f holds (p < t).
        self.near = sorted({g.precision for g in _narrower(f) if 2 <= g.precision < t})

    def value(self, choice: tuple[int, bool, int, int]) -> float:
        i, negative, k, j = choice
        kind, ranges = self.pieces[i]
        s = int(negative)
        if ranges[s] is None:
            s = 1 - s
        lo, hi = ranges[s]  # type: ignore[misc]
        sign = -1.0 if s else 1.0
        if kind == "inf":
            return sign * math.inf
        if kind == "nan":
            return self.nans[lo]
        if kind == "zero":
            return sign * 0.0
        if kind == "edge":
            return sign * mag_to_float(self.f, lo)
        t = self.f.trailing_bits
        if k > t:
            # one ulp of f above or below a midpoint of a narrower format of precision p:
            # the p - 1 leading bits from j, then the tie bit, then +-1 in the last place
            p = self.near[min(k - t - 1, len(self.near) - 1)]
            lead = j % (1 << (p - 1))
            tie = (lead << (t - p + 1)) | (1 << (t - p))
            m = tie + 1 if (j >> (p - 1)) & 1 else tie - 1
        else:
            m = 0 if k == 0 else _bitrev((j % (1 << (k - 1))) | (1 << (k - 1)), t)
        mag = min(max((lo >> t << t) | m, lo), hi)
        return sign * mag_to_float(self.f, mag)


def _float_mag(f: Format, x: float) -> int | None:
    """Magnitude code of the positive float ``x`` in ``f``, None if ``f`` lacks it."""
    t = f.trailing_bits
    e = math.frexp(x)[1] - 1
    normal = e >= f.emin or not f.subnormals
    if not normal:
        e = f.emin
    sig = math.ldexp(x, t - e)
    if sig != math.floor(sig) or (normal and e < f.emin):
        return None
    sig_i = int(sig)
    mag = ((e + f.bias) << t) | (sig_i - (1 << t)) if normal else sig_i
    return mag if 0 <= mag <= f.max_finite_code else None


def _narrower(f: Format) -> list[Format]:
    """Registered formats whose midpoints and their neighbours are values of ``f`` (some)."""
    return [g for g in map(get_format, FORMATS)
            if g.precision < f.precision and g.precision <= 51 and g.signed <= f.signed
            and g.max_finite_code > 1 and g.name != f.name]


@_checked_when_drawn
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
        Weighted toward the edges, and toward midpoints of narrower formats
        (see the module docstring); shrinks toward simple values.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(values("e4m3fn"), lambda x: x > 1)       # 1.0 fails, 1.5 is simplest next
    1.5
    >>> find(values("binary32"), lambda x: 0 < abs(x) < 1)   # not a tiny subnormal
    0.5
    >>> find(values("e2m1fn", min_value=0.1), lambda x: x < 1)
    0.5
    """
    f = _format_arg(fmt)
    for name, v in (("allow_subnormal", allow_subnormal),
                    ("allow_negative_zero", allow_negative_zero)):
        _check_bool(v, name)
    _check_bool(allow_nan, "allow_nan", optional=True)
    _check_bool(allow_infinity, "allow_infinity", optional=True)
    only = _only_infinity(f, min_value, max_value, allow_nan, allow_infinity)
    if only is not None:
        return st.just(only)
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
    return _values(f, min_b, max_b, bool(allow_nan), pos_inf, neg_inf, allow_subnormal,
                   allow_negative_zero,
                   (min_value, max_value))


@functools.lru_cache(maxsize=256)
def _values(f: Format, min_b: tuple[Fraction, bool] | None,
            max_b: tuple[Fraction, bool] | None, allow_nan: bool, pos_inf: bool,
            neg_inf: bool, allow_subnormal: bool, allow_negative_zero: bool,
            bounds: tuple[object, object]) -> st.SearchStrategy[float]:
    kw = {"allow_subnormal": allow_subnormal, "allow_negative_zero": allow_negative_zero}
    pos = _finite_mags(f, min_b, max_b, negative=False, **kw)
    neg = _finite_mags(f, min_b, max_b, negative=True, **kw)
    nans: list[float] = []
    if allow_nan:
        nans = [math.nan]
        if f.signed and f.nan is not NaNEncoding.NEGATIVE_ZERO:
            nans.append(-math.nan)
    layout = _Layout(f, pos, neg, pos_inf=pos_inf, neg_inf=neg_inf, nans=nans)
    if not layout.pieces:
        min_value, max_value = bounds
        raise InvalidArgument(
            f"Got {min_value=}, {max_value=}, allow_subnormal={allow_subnormal} and "
            f"allow_negative_zero={allow_negative_zero}: no value of {f.name} satisfies them"
        )
    t = f.trailing_bits
    # Extra weight on the pieces kernels break on: zeros, infinities, NaNs, the
    # subnormals, the smallest normal and max binades, and the binades cut by a bound.
    special: list[int] = []
    for i, (kind, ranges) in enumerate(layout.pieces):
        cut = any(r is not None and (r[0] & ((1 << t) - 1) > 0
                                     or r[1] & ((1 << t) - 1) != (1 << t) - 1)
                  for r in ranges)
        if not isinstance(kind, int) or kind in (0, 1) or cut or any(
                r is not None and r[1] == f.max_finite_code for r in ranges):
            special.append(i)
    piece_weights = {i: min(0.03, 0.3 / len(special)) for i in special}
    for i, (kind, _) in enumerate(layout.pieces):
        if kind in ("zero", "inf", "nan"):
            piece_weights[i] = 0.06
        elif kind == "edge":
            piece_weights[i] = 0.02
    total = sum(piece_weights.values())
    if total >= 0.9:   # hypothesis needs weights summing below 1
        piece_weights = {i: w * 0.9 / total for i, w in piece_weights.items()}
    # Extra weight on significands of k trailing bits for every narrower format's
    # precision k: with the last bit set they are that format's midpoints.
    widths = sorted({g.precision for g in _narrower(f) if g.precision <= t} | {0, t})
    width_weights = {k: min(0.05, 0.4 / len(widths)) for k in widths}
    for n in range(len(layout.near)):     # near-midpoints of each narrower precision
        width_weights[t + 1 + n] = min(0.03, 0.2 / len(layout.near))
    return _ValueStrategy(layout, piece_weights, width_weights)


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


@_checked_when_drawn
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


# --------------------------------------------------------------------------- printing
def exact_repr(a: np.ndarray) -> str:
    """Python source that rebuilds ``a`` bit for bit (dtype, shape, NaN signs and payloads).

    Float arrays print every element in Python's exact float repr; arrays
    holding a NaN whose bits that would lose (a payload, a signalling NaN, a
    negative NaN) print as their codes, viewed as the dtype.

    Examples
    --------
    >>> import ml_dtypes
    >>> exact_repr(np.array([1.0, 1.0000001192092896], dtype=np.float32))
    'np.array([1.0, 1.0000001192092896], dtype=np.float32)'
    >>> exact_repr(np.array([1.0, 0.0078125], dtype=ml_dtypes.bfloat16))
    'np.array([1.0, 0.0078125], dtype=ml_dtypes.bfloat16)'
    >>> exact_repr(np.array([-np.inf, np.nan], dtype=np.float16))
    'np.array([-np.inf, np.nan], dtype=np.float16)'
    >>> exact_repr(np.array([0x7FC00001], dtype=np.uint32).view(np.float32))
    'np.array([0x7fc00001], dtype=np.uint32).view(np.float32)'
    """
    if not isinstance(a, np.ndarray):
        raise TypeError(f"Got a={a!r} of type {type(a).__name__}, expected a numpy array")
    dtype = a.dtype
    if dtype.kind not in "iubfV":
        raise TypeError(f"Got an array of dtype {dtype}, but exact_repr takes integer, bool "
                        "and real floating-point arrays")
    module = "np" if dtype.type.__module__ == "numpy" else dtype.type.__module__.split(".")[0]
    name = f"{module}.{dtype.name}"
    shape = "" if a.size else f".reshape({a.shape})"
    if dtype.kind == "f" and dtype.itemsize not in (1, 2, 4, 8):  # long double: exact digits
        digits = [np.format_float_scientific(v, unique=True) for v in a.reshape(-1)]
        return f"np.array({digits!r}, dtype=np.longdouble).reshape({a.shape})"
    if dtype.kind in "iub" or dtype.kind not in "fV" and dtype.itemsize not in (1, 2, 4, 8):
        return f"np.array({a.tolist()!r}, dtype={name}){shape}"
    if dtype.kind == "f" and dtype.itemsize == 8:
        as64 = a
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            as64 = a.astype(np.float64)
    width = np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize])
    nan = np.isnan(as64)
    with np.errstate(invalid="ignore", over="ignore"):
        rebuilt = np.where(nan, np.nan, as64).astype(dtype)
    if rebuilt.view(width).tolist() != a.view(width).tolist():
        codes = _hex_list(a.view(width).tolist())
        return f"np.array({codes}, dtype=np.{width.name}){shape}.view({name})"
    return f"np.array({_float_list(as64.tolist())}, dtype={name}){shape}"


def _hex_list(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_hex_list(v) for v in x) + "]"
    return hex(int(x))


def _float_list(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_float_list(v) for v in x) + "]"
    if math.isnan(x):
        return "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(x)


class _Printed(st.SearchStrategy[np.ndarray]):
    """``inner.map(pack)`` whose result prints as :func:`exact_repr` in hypothesis reports.

    ``.map`` would print ``pack(array([...]))``, or numpy's 8-digit repr when
    that is shorter; neither round-trips.
    """

    def __init__(self, inner: st.SearchStrategy[Any], pack: Callable[[Any], np.ndarray]
                 ) -> None:
        super().__init__()
        self.inner = inner
        self.pack = pack

    def __repr__(self) -> str:
        return f"{self.inner!r}.map({self.pack!r})"

    def do_draw(self, data: Any) -> np.ndarray:
        result = self.pack(data.draw(self.inner))
        try:
            from hypothesis.control import current_build_context
            from hypothesis.vendor.pretty import IDKey

            printers = current_build_context().known_object_printers
            printers[IDKey(result)].append(_print_exact)
        except Exception:  # pragma: no cover - another hypothesis version: plain repr
            pass
        return result


def _print_exact(obj: Any, p: Any, cycle: bool) -> None:
    p.text(exact_repr(obj))


# --------------------------------------------------------------------------- arrays
#: The largest number of elements :func:`arrays` and :func:`code_arrays` build.
MAX_ARRAY_SIZE: int = 1 << 24

ShapeArg = (int | tuple[int, ...] | list[int] | st.SearchStrategy[int]
            | st.SearchStrategy[tuple[int, ...]])


def _check_shape(shape: Any) -> Any:
    """Fixed shapes are checked up front: non-negative ints, at most MAX_ARRAY_SIZE elements;
    returned as hypothesis takes them (Python ints: a numpy int is not iterable to it)."""
    if isinstance(shape, st.SearchStrategy):
        return shape
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    # (a list too, as hypothesis.extra.numpy.arrays takes one)
    if (not isinstance(dims, (tuple, list)) or any(isinstance(d, bool)
                                                   or not isinstance(d, (int, np.integer))
                                                   or d < 0 for d in dims)):
        raise InvalidArgument(f"Got {shape=}, but it must be a non-negative int, a tuple or "
                              "list of them, or a strategy of shapes")
    size = math.prod(int(d) for d in dims)
    if size > MAX_ARRAY_SIZE:
        raise InvalidArgument(f"Got {shape=} ({size} elements), but arrays draws at most "
                              f"MAX_ARRAY_SIZE = {MAX_ARRAY_SIZE} elements")
    return int(shape) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in dims)


def _check_element(v: object, f: Format) -> None:
    """InvalidArgument unless ``v``, drawn by an ``elements`` strategy, is a real number
    whose float64 is its exact value (a Fraction, Decimal or int that float64 would round,
    a string, a bool: named, never rounded; the format checks the float64 next)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, Decimal)):
        raise InvalidArgument(f"Got an element {v!r} from elements, but elements of "
                              f"{f.name} arrays must be real numbers (floats)")
    if isinstance(v, (float, np.floating)) or (isinstance(v, Decimal) and not v.is_finite()):
        return
    try:
        x = float(v)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x) or Fraction(cast(Any, v)) != Fraction(x):
        raise InvalidArgument(f"Got an element {v!r} from elements, but it is not "
                              f"representable in {f.name}")


class _Pack:
    """Object array of exact Python floats -> the format's dtype (checked)."""

    def __init__(self, f: Format) -> None:
        self.f = f
        self.dtype = native_dtype(f)
        self.name = f"as_{self.dtype.name if self.dtype is not None else f.name + '_codes'}"

    def __repr__(self) -> str:
        return self.name

    def __call__(self, a: np.ndarray) -> np.ndarray:
        if a.dtype == np.float64:
            as64 = a
        else:
            items = a.ravel().tolist()
            if not all(type(v) is float for v in items):  # (the common case: no check)
                for v in items:
                    _check_element(v, self.f)
            as64 = np.array(items, dtype=np.float64).reshape(a.shape)
        codes, ok = values_to_codes(as64, self.f)
        if not ok.all():
            bad = float(as64.ravel()[int(np.argmin(ok.ravel()))])
            raise InvalidArgument(f"Got an element {bad!r} from elements, but it is not "
                                  f"representable in {self.f.name}")
        if self.dtype is None:
            return codes.astype(self.f.code_dtype)
        if self.dtype == np.float64:
            return as64
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[self.dtype.itemsize]
        return codes.astype(width).view(self.dtype)


@_checked_when_drawn
def arrays(
    fmt: Format | str,
    shape: ShapeArg,
    *,
    elements: st.SearchStrategy[float] | None = None,
    fill: st.SearchStrategy[float] | None = None,
    unique: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Numpy arrays of ``fmt``'s values, in its native dtype where one exists.

    The dtype is numpy's float16/32/64 for binary16/32/64 and ml_dtypes'
    (``bfloat16``, ``float8_*``, ``float6_*``, ``float4_*``) for the others it
    has; formats without a dtype (tf32, the P3109 family) give arrays of codes
    in ``fmt.code_dtype``.  This is the drop-in replacement for
    ``hypothesis.extra.numpy.from_dtype(ml_dtypes.bfloat16)``, which raises.

    Built on ``hypothesis.extra.numpy.arrays``: it draws and shrinks at its
    speed and fills arrays with one repeated value as it does, so mostly
    constant arrays (all ``-inf``, all ``max``) come up.  A falsifying array
    prints as Python source that rebuilds it bit for bit (:func:`exact_repr`):
    ``np.array([1.0, 1.0000001192092896], dtype=np.float32)``.

    Parameters
    ----------
    fmt : Format or str
        The format.
    shape : int, tuple of int, or a strategy of them
        As in ``hypothesis.extra.numpy.arrays``; a fixed shape may have at
        most :data:`MAX_ARRAY_SIZE` elements (checked when the strategy is
        built).
    elements : SearchStrategy[float] or None
        Strategy for the elements (Python floats exactly representable in
        ``fmt``, checked per drawn array); default ``values(fmt)``.
    fill : SearchStrategy[float] or None
        Strategy for the value of the elements hypothesis does not draw one by
        one; default ``elements`` (``nothing()`` when ``unique``).
    unique : bool
        Whether all elements differ (``-0.0 == 0.0`` and NaN is never unique
        under float64 comparison).

    Examples
    --------
    >>> import math
    >>> from hypothesis import find
    >>> find(arrays("bfloat16", 3), lambda a: bool((a > 1).any())).dtype.name
    'bfloat16'
    >>> a = find(arrays("bfloat16", 16, elements=values("bfloat16", allow_nan=False)),
    ...          lambda a: bool((a == -math.inf).all()))
    >>> a.dtype.name, a[:3].tolist()
    ('bfloat16', [-inf, -inf, -inf])
    """
    f = _format_arg(fmt)
    _check_bool(unique, "unique")
    dims = _check_shape(shape)
    if elements is None:
        elements = values(f)
    elif not isinstance(elements, st.SearchStrategy):
        raise InvalidArgument(f"Got {elements=}, but it must be a hypothesis strategy or None")
    if fill is None:
        # Python floats are immutable, so hypothesis may reuse one for many elements
        # (it would not, on its own, for a mapped strategy such as values()).
        fill = st.nothing() if unique else _built(elements)
        if isinstance(fill, _ValueStrategy):
            fill = fill.for_fill()
    elif not isinstance(fill, st.SearchStrategy):
        raise InvalidArgument(f"Got {fill=}, but it must be a hypothesis strategy or None")
    base = hnp.arrays(object, dims, elements=elements, fill=fill, unique=unique)
    return _Printed(base, _Pack(f))


@_checked_when_drawn
def code_arrays(
    fmt: Format | str,
    shape: ShapeArg,
    *,
    elements: st.SearchStrategy[int] | None = None,
    view: bool = True,
) -> st.SearchStrategy[np.ndarray]:
    """Arrays of arbitrary codes of ``fmt``, viewed as its native dtype.

    Every bit pattern is reachable: signalling and negative NaNs with any
    payload, ``-0``, subnormals, the codes just below the infinities.  Use it
    to feed a kernel the bits a ``float`` cannot carry.

    Parameters
    ----------
    fmt : Format or str
        The format.
    shape : int, tuple of int, or a strategy of them
        As in :func:`arrays`.
    elements : SearchStrategy[int] or None
        Strategy for the codes; default ``codes(fmt)``.
    view : bool
        True: the codes viewed as ``fmt``'s native dtype (when it has one);
        False: the unsigned integer codes themselves.

    Examples
    --------
    >>> from hypothesis import find
    >>> a = find(code_arrays("binary32", 1), lambda a: bool(a.view("u4")[0] == 0x7F800001))
    >>> a.dtype, hex(int(a.view("u4")[0]))           # a signalling NaN, bits intact
    (dtype('float32'), '0x7f800001')
    """
    f = _format_arg(fmt)
    _check_bool(view, "view")
    dims = _check_shape(shape)
    if elements is None:
        elements = codes(f)
    elif not isinstance(elements, st.SearchStrategy):
        raise InvalidArgument(f"Got {elements=}, but it must be a hypothesis strategy or None")
    else:
        elements = elements.map(_CodeOf(f))
    dtype = native_dtype(f)
    if not view or dtype is None:
        return hnp.arrays(f.code_dtype, dims, elements=elements, fill=elements)
    width = np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize])
    return _Printed(hnp.arrays(width, dims, elements=elements, fill=elements), _ViewAs(dtype))


class _CodeOf:
    """Checks that what an ``elements`` strategy drew is a code of ``f`` (an int in
    ``[0, 2**bits)``): InvalidArgument naming it, not a wrapped or truncated code."""

    def __init__(self, f: Format) -> None:
        self.f = f

    def __repr__(self) -> str:
        return f"code_of_{self.f.name}"

    def __call__(self, c: object) -> int:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)) \
                or not 0 <= c < self.f.num_codes:
            raise InvalidArgument(f"Got element {c!r} from elements, but codes of "
                                  f"{self.f.name} are ints in [0, {self.f.num_codes})")
        return int(c)


class _ViewAs:
    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"view_as_{self.dtype.name}"

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return a.view(self.dtype)


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


@_checked_when_drawn
def ties(fmt: Format | str, *, exact: bool = False,
         include_overflow: bool = False) -> st.SearchStrategy[Any]:
    """Exact midpoints between consecutive finite values of ``fmt``, both signs.

    The midpoint between ``-x`` and ``+x`` (zero) is not drawn, nor anything
    below the smallest value of formats without zero.  The midpoint above
    ``max`` (``max`` plus half an ulp, where round to nearest decides between
    ``max`` and overflow: 464 for e4m3fn) only with ``include_overflow=True``.

    Parameters
    ----------
    fmt : Format or str
        The format.
    exact : bool
        Draw :class:`fractions.Fraction` instead of floats; required for
        binary64, whose midpoints are not floats.
    include_overflow : bool
        Also draw ``+-(max + ulp(max) / 2)``.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(ties("e2m1fn"), lambda x: x > 4)
    5.0
    >>> find(ties("e2m1fn", include_overflow=True), lambda x: x > 6)
    7.0
    """
    f = _format_arg(fmt)
    _check_bool(exact, "exact")
    _check_bool(include_overflow, "include_overflow")
    if not exact and f.precision >= 53:
        raise InvalidArgument(f"Got {exact=} for {f.name}, whose midpoints are not floats; "
                              "pass exact=True to draw Fractions")
    edges, (lo, hi) = _tie_mags(f)
    if not include_overflow:
        hi -= 1
    if hi < lo:
        raise InvalidArgument(f"{f.name} has a single finite value: it has no midpoints")
    edges = [m for m in edges if lo <= m <= hi]
    return _TieStrategy(f, lo, hi, edges, exact=exact, near=None)


class _TieStrategy(st.SearchStrategy[Any]):
    """Midpoints of ``f`` (or values of ``near`` one ulp from them): a magnitude code
    (extra weight on the edges), a sign and, for near ties, a side: one choice each."""

    def __init__(self, f: Format, lo: int, hi: int, edges: list[int], *, exact: bool,
                 near: Format | None) -> None:
        super().__init__()
        self.f, self.lo, self.hi, self.exact, self.near = f, lo, hi, exact, near
        w = min(0.02, 0.4 / len(edges)) if edges else 0.0
        self.weights = {m: w for m in edges} if hi > lo and edges else None
        self.fast = f.precision <= 51

    def __repr__(self) -> str:
        return f"{'near_' if self.near else ''}ties({self.f.name!r}, ...)"

    def tie(self, mag: int) -> Any:
        f = self.f
        if self.exact or not self.fast:
            return _tie(f, mag)
        lo = mag_to_float(f, mag)
        if mag < f.max_finite_code:
            return (lo + mag_to_float(f, mag + 1)) / 2
        return lo + math.ldexp(1.0, f.emax - f.trailing_bits - 1)

    def do_draw(self, data: Any) -> Any:
        mag = _draw_int(data, self.lo, self.hi, self.weights)
        negative = self.f.signed and data.draw_boolean()
        t = self.tie(mag)
        if self.near is not None:
            above = data.draw_boolean()
            w = self.near
            wmag = _float_mag(w, t) if isinstance(t, float) else mag_floor(w, t)
            if wmag is None:  # pragma: no cover - near_ties checked the range
                wmag = mag_floor(w, Fraction(t))
            t = mag_to_float(w, wmag + (1 if above else -1))
        return -t if negative else t


@_checked_when_drawn
def near_ties(fmt: Format | str, wider: Format | str, *,
              include_overflow: bool = False) -> st.SearchStrategy[float]:
    """Values of ``wider`` one ulp of ``wider`` above or below a midpoint of ``fmt``.

    Every midpoint of ``fmt`` (as in :func:`ties`) must be a value of
    ``wider``: ``wider`` needs at least one more bit of precision and a range
    reaching half the smallest subnormal and ``max`` plus half an ulp of
    ``fmt``; its values must be floats (not wider than binary64).  The
    midpoint above ``max`` is used only with ``include_overflow=True``.

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
    _check_bool(include_overflow, "include_overflow")
    edges, (lo, hi) = _tie_mags(f)
    if not include_overflow:
        hi -= 1
    edges = [m for m in edges if lo <= m <= hi]

    return _TieStrategy(f, lo, hi, edges, exact=False, near=w)


# --------------------------------------------------------------------------- blocks
#: The kinds of block :func:`blocks` draws.
BLOCK_KINDS: tuple[str, ...] = ("ties", "near_ties", "values", "equal", "outlier",
                                 "spread")


def _finite(f: Format) -> st.SearchStrategy[float]:
    return values(f, allow_nan=False, allow_infinity=False)


class _BlocksStrategy(st.SearchStrategy[list[float]]):
    """The blocks of :func:`blocks` as one flat list of Python floats.

    Per block: the kind, the scale exponent ``s`` (shrinking toward 0), the
    elements (``hypothesis.extra.numpy.arrays`` with fill), the anchor index,
    its sign and the outlier/spread amount: a few choices, no nested maps.
    """

    def __init__(self, f: Format, w: Format, block_size: int, kinds: tuple[str, ...],
                 exponents: tuple[int, int], count: st.SearchStrategy[int]) -> None:
        super().__init__()
        self.f, self.block_size, self.kinds, self.exponents = f, block_size, kinds, exponents
        self.count = count
        self.anchor_max = float(f.max)

        def elements(inner: st.SearchStrategy[float]) -> st.SearchStrategy[np.ndarray]:
            raw = _built(inner)
            fill = raw.for_fill() if isinstance(raw, _ValueStrategy) else inner
            return hnp.arrays(object, block_size, elements=inner, fill=fill)

        finite = _finite(f)
        self.inner = {
            "ties": elements(ties(f)),
            "near_ties": elements(near_ties(f, w)) if "near_ties" in kinds else None,
            "values": elements(finite), "outlier": elements(finite),
            "spread": elements(finite), "equal": finite,
        }

    def __repr__(self) -> str:
        return f"blocks({self.f.name!r}, {self.block_size}, ...)"

    def do_draw(self, data: Any) -> list[float]:
        out: list[float] = []
        lo, hi = self.exponents
        for _ in range(data.draw(self.count)):
            kind = self.kinds[data.draw_integer(0, len(self.kinds) - 1)]
            s = data.draw_integer(lo, hi, shrink_towards=min(max(0, lo), hi))
            scale = math.ldexp(1.0, s)
            drawn = data.draw(self.inner[kind])
            if kind == "equal":
                out += [drawn * scale] * self.block_size
                continue
            xs = [x * scale for x in drawn.tolist()]
            i = data.draw_integer(0, self.block_size - 1)
            sign = -1.0 if self.f.signed and data.draw_boolean() else 1.0
            extra = data.draw_integer(1, 40)
            if kind in ("ties", "near_ties", "values"):
                xs[i] = sign * self.anchor_max * scale       # pins amax: the scale is 2**s
            elif kind == "outlier":
                xs[i] = sign * math.ldexp(self.anchor_max, s + extra)
            else:   # spread
                xs = [x * math.ldexp(1.0, -((k * extra) % 41)) for k, x in enumerate(xs)]
            out += xs
        return out


@_checked_when_drawn
def blocks(
    fmt: Format | str,
    block_size: int,
    *,
    n_blocks: int | st.SearchStrategy[int] = 1,
    dtype: Format | str = "binary32",
    kinds: Sequence[str] = BLOCK_KINDS,
    scale_exponents: tuple[int, int] = (-30, 30),
) -> st.SearchStrategy[np.ndarray]:
    """Inputs for scaled and block quantizers: 1-D arrays of ``n_blocks * block_size``.

    Each block draws its own power-of-two scale ``2**s`` (``s`` in
    ``scale_exponents``, so blocks have different exponents) and one kind:

    ``"ties"``
        Midpoints of ``fmt`` times ``2**s``, with one element ``+-max * 2**s``
        that pins the block's absolute maximum, so an amax-derived scale
        (per-tensor ``amax / max`` or MX's ``floor(log2 amax) - emax``) is
        ``2**s`` and every other element is a tie *in the scaled domain*.
    ``"values"``
        Values of ``fmt`` times ``2**s`` with the same anchor (exact after scaling).
    ``"equal"``
        Every element the same (zero included).
    ``"outlier"``
        Values of ``fmt`` times ``2**s`` and one element ``2**1..2**40`` times
        larger than ``max * 2**s``.
    ``"spread"``
        Values of ``fmt`` times ``2**s`` each shifted down by 0..40 binades.

    Every element is exactly representable in ``dtype``.  Use
    ``blocks(fmt, n)`` (one block) for per-tensor scaling.

    Parameters
    ----------
    fmt : Format or str
        The element format of the quantizer (its precision must be below ``dtype``'s).
    block_size : int
        Elements per block, ``>= 1``.
    n_blocks : int or SearchStrategy[int]
        Number of blocks.
    dtype : Format or str
        Format (and native dtype) of the arrays drawn; default binary32.
    kinds : sequence of str
        The block kinds to draw, a subset of :data:`BLOCK_KINDS`.
    scale_exponents : (int, int)
        Inclusive range of ``s``.

    Examples
    --------
    >>> from hypothesis import find
    >>> x = find(blocks("e2m1fn", 4, kinds=["ties"]), lambda x: bool(x.max() > 1))
    >>> x.dtype, x.tolist()        # s = 0: max = 6 pins the scale; 0.25 is a tie (0 | 0.5)
    (dtype('float32'), [6.0, 0.25, 0.25, 0.25])
    """
    f = _format_arg(fmt)
    w = _format_arg(dtype, "dtype")
    for name, v in (("block_size", block_size),) + (
            (("n_blocks", n_blocks),) if not isinstance(n_blocks, st.SearchStrategy) else ()):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InvalidArgument(f"Got {name}={v!r}, but it must be an int >= 1")
    if isinstance(kinds, str) or not isinstance(kinds, Sequence) or not kinds or any(
            not isinstance(k, str) or k not in BLOCK_KINDS for k in kinds):
        raise InvalidArgument(f"Got {kinds=}, but it must be a non-empty sequence of "
                              + ", ".join(repr(k) for k in BLOCK_KINDS))
    if (not isinstance(scale_exponents, tuple) or len(scale_exponents) != 2
            or not all(_is_int(e) for e in scale_exponents)
            or scale_exponents[0] > scale_exponents[1]):
        raise InvalidArgument(f"Got {scale_exponents=}, but it must be a pair (lo, hi) of "
                              "ints with lo <= hi")
    lo, hi = (int(e) for e in scale_exponents)
    # the headroom the kinds need: an outlier lies up to 40 binades above the block's
    # scale, a spread block's elements up to 40 below it, a near tie has the wider
    # format's bits below the narrow one's smallest midpoint, a tie one bit below
    top = hi + (40 if "outlier" in kinds else 0) + math.floor(math.log2(float(f.max))) + 1
    below = max([1] + [41] * ("spread" in kinds) + [w.precision + 1] * ("near_ties" in kinds))
    bottom = lo - below + (f.emin - f.trailing_bits if f.subnormals else f.emin)
    if (f.precision >= w.precision or top > w.emax
            or bottom < (w.emin - w.trailing_bits if w.subnormals else w.emin)):
        raise InvalidArgument(
            f"Got {fmt=}, {dtype=} and {scale_exponents=}, but {w.name} cannot hold every "
            f"scaled value of {f.name} exactly (it needs more precision and range)")
    _check_shape(block_size if isinstance(n_blocks, st.SearchStrategy)
                 else (int(n_blocks), int(block_size)))
    count = n_blocks if isinstance(n_blocks, st.SearchStrategy) else st.just(int(n_blocks))
    pack = _Pack(w)
    return _Printed(_BlocksStrategy(f, w, int(block_size), tuple(kinds), (lo, hi), count),
                    lambda xs: pack(np.array(xs, dtype=np.float64)))


# --------------------------------------------------------------------------- seeds
@_checked_when_drawn
def seeds(*, max_value: int = 2**32 - 1) -> st.SearchStrategy[int]:
    """Integer seeds in ``[0, max_value]``, for ``encode(..., rounding="sr", rng=seed)``.

    Hypothesis draws, shrinks (toward 0) and replays them like any integer,
    so a failing stochastic-rounding example reproduces.  The pytest fixture
    ``numerics_rng`` cannot serve under ``@given``: it is created once per
    test function, not per example, so its state would carry from one example
    to the next (a failure would not replay) and hypothesis rejects
    function-scoped fixtures in ``@given`` tests (health check
    ``function_scoped_fixture``).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(seeds(), lambda s: s >= 10)
    10
    """
    if not _is_int(max_value) or max_value < 0:
        raise InvalidArgument(f"Got {max_value=}, but it must be an int >= 0")
    return st.integers(0, int(max_value))


def rngs() -> st.SearchStrategy[np.random.Generator]:
    """Fresh ``numpy.random.Generator`` objects, one per example, from :func:`seeds`.

    A falsifying example prints as ``default_rng(SEED)``, which rebuilds the
    generator in its initial state.  See :func:`seeds` for why the
    ``numerics_rng`` fixture does not fit ``@given``.

    Examples
    --------
    >>> from hypothesis import find
    >>> g = find(rngs(), lambda g: g.integers(0, 4) == 3)
    >>> type(g).__name__
    'Generator'
    """
    return seeds().map(np.random.default_rng)


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


@_checked_when_drawn
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
    bad = [k for k in kinds if not isinstance(k, str) or k not in FORMAT_KINDS]
    if bad or not kinds:
        raise InvalidArgument(f"Got {kinds=}, but the only valid kinds are "
                              + ", ".join(repr(k) for k in FORMAT_KINDS))
    names = [f.name for f in map(get_format, FORMATS) if _kinds_of(f) & set(kinds)]
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
