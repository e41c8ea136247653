"""References for the ulp / next_up / next_down kernels, written apart from them.

* :func:`exact_ulp`: the definition of :mod:`numerics.ulp` in Fractions.
* :func:`line_next`: the neighbour on the sorted line of every value of a format of at
  most 16 bits (built from the bit layout by ``strategies_core.magnitude_values``).
* :func:`formula_ulp`, :func:`formula_next`, :func:`formula_representable`: the chains of
  numpy float64 operations :mod:`numerics.ulp` used before the kernels, kept verbatim as
  the reference for the bits the kernels must give on every float64 input (NaN signs,
  the sign of zero, the ends), and for which inputs are values of a format.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from strategies_core import magnitude_values

from numerics.formats import Format


def floor_log2(a: Fraction) -> int:
    """``e`` with ``2**e <= a < 2**(e+1)`` for ``a > 0``, by integer comparisons."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def exact_ulp(v: float, fmt: Format) -> float:
    """``2**(max(e, emin) - t)`` for ``2**e <= |v| < 2**(e+1)`` (zero: ``emin``);
    ``inf`` for infinities, NaN for NaN."""
    if math.isnan(v):
        return math.nan
    if math.isinf(v):
        return math.inf
    a = abs(Fraction(v))
    e = floor_log2(a) if a else fmt.emin
    return float(Fraction(2) ** (max(e, fmt.emin) - fmt.trailing_bits))


@lru_cache(maxsize=None)
def _line(fmt: Format) -> tuple[list[Fraction], list[float]]:
    mags = list(magnitude_values(fmt)[:-1])
    line = mags if not fmt.signed else [-m for m in reversed(mags) if m != 0] + mags
    return line, [float(v) for v in line]


def line_next(v: float, fmt: Format, direction: int) -> float:
    """``next_up`` (``direction > 0``) or ``next_down`` of a value ``v`` of ``fmt`` (at most
    16 bits) from the sorted line; the ends as in :mod:`numerics.ulp`."""
    if math.isnan(v):
        return math.nan
    line, floats = _line(fmt)
    beyond = math.inf if fmt.has_infinity else math.nan
    if math.isinf(v):
        if (v > 0) == (direction > 0):
            return v
        return fmt.max if v > 0 else -fmt.max
    i = bisect.bisect_left(line, Fraction(v))
    assert line[i] == Fraction(v)
    j = i + (1 if direction > 0 else -1)
    if j >= len(line):
        return beyond
    if j < 0:
        return -beyond if fmt.signed else math.nan
    out = floats[j]
    if out == 0:  # the zero one reaches from below is -0 where it exists
        return -0.0 if direction > 0 and fmt.has_negative_zero else 0.0
    return out


# ------------------------------------------------------- the float64 formulas, verbatim
def _binade(a: np.ndarray) -> np.ndarray:
    _, ex = np.frexp(a)
    return ex.astype(np.int64) - 1


def _quantum(a: np.ndarray, fmt: Format) -> np.ndarray:
    e = np.where(a > 0, _binade(np.where(a > 0, a, 1.0)), fmt.emin)
    return np.ldexp(1.0, np.maximum(e, fmt.emin) - fmt.trailing_bits)


def formula_ulp(arr: np.ndarray, fmt: Format) -> np.ndarray:
    a = np.abs(arr)
    finite = np.isfinite(a)
    q = _quantum(np.where(finite, a, 0.0), fmt)
    return np.where(finite, q, a)


def formula_representable(arr: np.ndarray, fmt: Format) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        a = np.abs(arr)
        finite = np.isfinite(a)
        af = np.where(finite, a, 0.0)
        q = _quantum(af, fmt)
        on_grid = np.floor(af / q) * q == af
        ok = finite & on_grid & (af <= fmt.max)
        if not fmt.signed:
            ok &= (arr > 0) & (af >= fmt.smallest_normal)
        ok |= np.isnan(arr) & fmt.has_nan
        ok |= np.isinf(arr) & fmt.has_infinity & ((arr > 0) | fmt.signed)
    return ok


def _step_up_magnitude(a: np.ndarray, fmt: Format) -> np.ndarray:
    beyond = np.inf if fmt.has_infinity else np.nan
    up = a + _quantum(a, fmt)
    return np.where(a >= fmt.max, beyond, up)


def _step_down_magnitude(a: np.ndarray, fmt: Format) -> np.ndarray:
    q = _quantum(a, fmt)
    safe = np.where(a > 0, a, 1.0)
    mant, _ = np.frexp(safe)
    power_of_two = (mant == 0.5) & (_binade(safe) > fmt.emin)
    down = a - np.where(power_of_two, q / 2, q)
    if not fmt.signed:
        down = np.where(a <= fmt.smallest_normal, np.nan, down)
    return down


def formula_next(arr: np.ndarray, fmt: Format, direction: int) -> np.ndarray:
    """``next_up``/``next_down`` of values of ``fmt`` (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if not fmt.signed:
            af = np.where(np.isfinite(arr), arr, 1.0)
            step = _step_up_magnitude if direction > 0 else _step_down_magnitude
            return np.where(np.isnan(arr), np.nan, step(af, fmt)).astype(np.float64)
        y = arr * direction
        finite = np.isfinite(y)
        af = np.where(finite & (y != 0), np.abs(y), 1.0)
        down = _step_down_magnitude(af, fmt)
        neg_zero = -0.0 if fmt.has_negative_zero else 0.0
        res = np.where(y > 0, _step_up_magnitude(af, fmt), np.where(down == 0, neg_zero, -down))
        res = np.where(y == 0, fmt.smallest_subnormal, res)
        res = np.where(np.isposinf(y), np.inf, res)
        res = np.where(np.isneginf(y), -fmt.max, res)
        res = np.where(np.isnan(y), np.nan, res)
        if direction < 0:
            res = -res
            if not fmt.has_negative_zero:
                res = res + 0.0
    return res.astype(np.float64)
