"""Private hypothesis strategies and helpers for the core codec tests.

Values are built from the format's own grid (computed here with Fractions
from the base fields, independently of numerics.codec and numerics.kernels):
representable values, exact midpoints (ties), midpoints nudged by one or a
few binary64 ulps (near-ties), the subnormal boundary, ``max`` plus or minus
half a quantum (the overflow threshold), powers of two, huge and tiny
float64s, and the specials.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import cache

import numpy as np
from hypothesis import strategies as st

from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, get_format

__all__ = [
    "ALL_FORMATS",
    "DETERMINISTIC",
    "SMALL_FORMATS",
    "float64_near_grid",
    "grid",
    "magnitude_values",
    "nudge",
    "values_for",
]

ALL_FORMATS: tuple[Format, ...] = tuple(get_format(n) for n in FORMATS)
SMALL_FORMATS: tuple[Format, ...] = tuple(f for f in ALL_FORMATS if f.bits <= 8)
DETERMINISTIC: tuple[str, ...] = ("rne", "rna", "rtz", "ru", "rd", "rto")


def _max_magnitude_code(fmt: Format) -> int:
    top = (1 << (fmt.exponent_bits + fmt.trailing_bits)) - 1
    if fmt.infinity is Infinity.IEEE:
        return top - (1 << fmt.trailing_bits)
    if fmt.infinity is Infinity.TOP or fmt.nan is NaNEncoding.TOP:
        return top - 1
    return top


def magnitude_value(fmt: Format, mag: int) -> Fraction:
    """Value of a finite magnitude code, straight from the IEEE layout."""
    t = fmt.trailing_bits
    field_e, frac = mag >> t, mag % (1 << t)
    if fmt.subnormals and field_e == 0:
        return Fraction(frac) * Fraction(2) ** (1 - fmt.bias - t)
    return Fraction((1 << t) + frac) * Fraction(2) ** (field_e - fmt.bias - t)


@cache
def magnitude_values(fmt: Format) -> tuple[Fraction, ...]:
    """All finite non-negative values of a format with at most 16 bits, ascending,
    plus the virtual value one quantum above ``max`` (the rounding target beyond max)."""
    assert fmt.bits <= 16
    top = _max_magnitude_code(fmt)
    vals = [magnitude_value(fmt, m) for m in range(top + 1)]
    e_max = math.floor(math.log2(vals[-1]))
    vals.append(vals[-1] + Fraction(2) ** (e_max - fmt.trailing_bits))
    assert all(a < b for a, b in itertools.pairwise(vals))
    return tuple(vals)


def grid(fmt: Format, mag: int) -> Fraction:
    """Value of magnitude code ``mag`` (``mag == max + 1`` is the virtual value past max)."""
    if fmt.bits <= 16:
        return magnitude_values(fmt)[mag]
    top = _max_magnitude_code(fmt)
    if mag <= top:
        return magnitude_value(fmt, mag)
    mx = magnitude_value(fmt, top)
    return mx + Fraction(2) ** (math.floor(math.log2(mx)) - fmt.trailing_bits)


def nudge(x: float, steps: int) -> float:
    """``x`` moved by ``steps`` binary64 ulps (toward +inf for positive steps)."""
    with np.errstate(over="ignore"):
        for _ in range(abs(steps)):
            x = float(np.nextafter(x, math.inf if steps > 0 else -math.inf))
    return x


@st.composite
def float64_near_grid(draw: st.DrawFn, fmt: Format) -> float:
    """A float64 on or near a rounding boundary of ``fmt``."""
    top = _max_magnitude_code(fmt)
    where = draw(st.sampled_from(["code", "tie", "tie", "low", "max", "pow2", "any"]))
    if where == "code" or where == "tie":
        mag = draw(st.one_of(st.integers(0, top), st.integers(max(0, top - 2), top),
                             st.integers(0, min(top, 2 << fmt.trailing_bits))))
        lo, hi = grid(fmt, mag), grid(fmt, mag + 1)
        base = lo if where == "code" else (lo + hi) / 2
    elif where == "low":  # around the subnormal boundary and the smallest values
        k = draw(st.integers(-3, 3))
        base = Fraction(2) ** (fmt.emin + k) * draw(st.sampled_from([Fraction(1), Fraction(3, 2),
                                                                      Fraction(1, 2)]))
        base = base * Fraction(2) ** (-fmt.trailing_bits * draw(st.integers(0, 1)))
    elif where == "max":
        mx = grid(fmt, top)
        q = grid(fmt, top + 1) - mx
        base = mx + q * draw(st.sampled_from([
            Fraction(1, 2), Fraction(-1, 2), Fraction(1), Fraction(2), Fraction(0),
            Fraction(1, 4), Fraction(3, 4)]))
    elif where == "pow2":
        base = Fraction(2) ** draw(st.integers(fmt.emin - fmt.trailing_bits - 3, fmt.emax + 3))
    else:
        return draw(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
    try:
        x = float(base)
    except OverflowError:  # rounds beyond binary64's max
        x = math.inf
    steps = draw(st.sampled_from([0, 0, 0, 1, -1, 2, -2, 1000, -1000]))
    x = nudge(x, steps)
    return -x if draw(st.booleans()) else x


def values_for(fmt: Format, size: int = 40) -> st.SearchStrategy[list[float]]:
    """Lists of float64 inputs concentrated on the boundaries of ``fmt``."""
    specials = st.sampled_from([math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0,
                                5e-324, -5e-324, 1.7976931348623157e308])
    return st.lists(st.one_of(float64_near_grid(fmt), specials), min_size=1, max_size=size)
