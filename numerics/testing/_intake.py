"""Private: turn what a test has in hand into a numpy array, or say why not.

Accepted: numpy arrays (float, int, bool; ml_dtypes dtypes), torch tensors
(any device: moved to the CPU; bfloat16 and the float8 dtypes viewed as the
ml_dtypes dtype with the same bits), Python and numpy real scalars
(``int``, ``float``, :class:`fractions.Fraction`, :class:`decimal.Decimal`)
and nested lists of them.  Rejected with TypeError: ``None``, strings,
bytes, complex numbers, and anything else; with ValueError: ragged lists.

:func:`split_exact` reads such an array as float64 and names the elements
float64 does not hold (integers beyond ``2**53``, Fractions, Decimals, long
doubles) with their exact values, so that no caller rounds them silently.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from numerics.dtypes import as_exact_array, is_torch_tensor, refuse_masked, torch_values

__all__: list[str] = []

_ACCEPTED = ("a numpy array, a torch tensor, a real number or a (nested) list of them")


def _check_scalar(v: object, name: str) -> None:
    if isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, (str, bytes)):
        raise TypeError(f"Got {name} containing {v!r}, but elements must be real numbers")
    if isinstance(v, (complex, np.complexfloating)):
        raise TypeError(f"Got {name} containing {v!r}, but complex numbers cannot be "
                        "compared in a floating-point format")
    if not isinstance(v, (numbers.Real, Decimal, np.floating, np.integer)):
        raise TypeError(f"Got {name} containing {v!r} of type {type(v).__name__}, but "
                        "elements must be real numbers")


def as_array(x: object, name: str, *, exact: bool = False) -> np.ndarray:
    """A numpy array of ``x`` (object dtype for Fractions, Decimals and big ints when ``exact``).

    Raises TypeError for what cannot be compared, ValueError for ragged lists.
    """
    if x is None or isinstance(x, (str, bytes, complex, np.complexfloating, dict, set)):
        raise TypeError(f"Got {name}={x!r}, but it must be {_ACCEPTED}")
    if is_torch_tensor(x):
        arr = torch_values(x, name)  # (its dtype checked below, as a numpy array's)
    elif isinstance(x, np.ndarray):
        refuse_masked(x, name)
        arr = x
    else:
        refuse_masked(x, name)
        try:
            # a list mixing big ints with floats, or holding bools, stays exact (objects)
            arr = as_exact_array(x)
        except ValueError:
            raise ValueError(f"Got {name}, a ragged nested sequence (its rows differ in "
                             "length); it must be rectangular") from None
        except OverflowError:
            arr = np.asarray(x, dtype=object)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but complex numbers cannot be "
                        "compared in a floating-point format")
    if kind == "V" and arr.dtype.type.__module__.split(".")[0] != "ml_dtypes" \
            or kind in "USaMmb":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be {_ACCEPTED}")
    if exact and kind == "f" and arr.dtype.itemsize > 8:  # long double: its exact values
        arr = np.array([Fraction(*v.as_integer_ratio()) if np.isfinite(v) and v != 0
                        else float(v) for v in arr.ravel()],  # (a zero keeps its sign)
                       dtype=object).reshape(arr.shape)
        kind = "O"
    if kind == "O":
        for v in arr.ravel().tolist():
            _check_scalar(v, name)
        if not exact:
            try:
                arr = np.array([float(v) for v in arr.ravel().tolist()],
                               dtype=np.float64).reshape(arr.shape)
            except OverflowError:
                raise ValueError(f"Got {name} with an element beyond the float64 range; "
                                 "use assert_within_bound for exact values") from None
    return arr


HUGE_DIGITS = 4000   # a Decimal beyond 10**+-4000 becomes a proxy (see exact_value)
_EXACT_INT = 2**53   # integers up to this magnitude are float64 values


def exact_value(v: Any) -> tuple[Fraction | float, str | None]:
    """``(value, shown)``: a Fraction (or a float NaN/inf) and, for proxies, the original text.

    A :class:`decimal.Decimal` beyond ``10**+-4000`` becomes ``+-10**+-4001``:
    exact comparisons with anything of float size keep their outcome, and
    ``Decimal("1e99999999")`` costs nothing.
    """
    if isinstance(v, Decimal):
        if not v.is_finite():
            return float(v), None
        if v.is_zero():
            return Fraction(0), None
        exponent = v.adjusted()
        if abs(exponent) > HUGE_DIGITS:
            sign = -1 if v.is_signed() else 1
            power = HUGE_DIGITS + 1 if exponent > 0 else -HUGE_DIGITS - 1
            return sign * Fraction(10) ** power, str(v)
        return Fraction(v), None
    if isinstance(v, np.floating) and np.dtype(type(v)).itemsize > 8:   # long double
        return (Fraction(*v.as_integer_ratio()) if np.isfinite(v) else float(v)), None
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return (f, None) if not math.isfinite(f) else (Fraction(f), None)
    return Fraction(v), None


def show_exact(q: Fraction) -> str:
    """A short text for an exact value: an int in full (up to 30 digits), else its float
    (marked ``~`` where that is not the value), or its power of ten past the float range."""
    if q.denominator == 1 and abs(q.numerator) < 10**30:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    try:
        f = float(q)
    except OverflowError:
        return f"~{sign}1e+{len(str(abs(q.numerator) // q.denominator)) - 1}"
    if f == q:
        return repr(f)
    if f == 0:
        return f"~{sign}1e-{len(str(q.denominator // abs(q.numerator))) - 1}"
    return f"~{f!r}"


def split_exact(arr: np.ndarray) -> tuple[np.ndarray, dict[int, Fraction]]:
    """float64 values of a real array, and the exact values float64 does not hold.

    Returns ``(x, rest)``: ``x`` the float64 array (``+-inf`` for finite values
    beyond its range, ``+-0.0`` or the nearest float for the others), ``rest``
    maps the flat index of every element whose float64 value is not its exact
    value to that value.  Integer and long double arrays are checked in bulk (only
    the elements float64 does not hold are looked at one by one); object arrays
    element by element.
    """
    kind = arr.dtype.kind
    rest: dict[int, Fraction] = {}
    if kind in "iu":
        big = arr > _EXACT_INT if kind == "u" else (arr > _EXACT_INT) | (arr < -_EXACT_INT)
        for i in np.flatnonzero(big).tolist():
            v = int(arr.flat[i])
            if float(v) != v:
                rest[i] = Fraction(v)
        return arr.astype(np.float64), rest
    if kind == "f" and arr.dtype.itemsize > 8:  # long double: only inexact ones one by one
        with np.errstate(invalid="ignore", over="ignore"):
            x64 = arr.astype(np.float64)
            differ = (x64.astype(arr.dtype) != arr) & ~np.isnan(arr)
        for i in np.flatnonzero(differ).tolist():
            q, _ = exact_value(arr.flat[i])
            assert isinstance(q, Fraction)  # (finite: NaNs and infinities do not differ)
            rest[i] = q
        return x64, rest
    if kind != "O":
        with np.errstate(invalid="ignore", over="ignore"):
            return np.asarray(arr, dtype=np.float64), rest
    items = arr.ravel().tolist()
    out = np.empty(len(items), dtype=np.float64)
    for i, v in enumerate(items):
        if isinstance(v, (float, np.floating, Decimal)) and v == 0:  # a zero: its sign
            negative = v.is_signed() if isinstance(v, Decimal) else math.copysign(1, v) < 0
            out[i] = -0.0 if negative else 0.0
            continue
        q, _ = exact_value(v)
        if isinstance(q, float):                # NaN or an infinity
            out[i] = q
            continue
        try:
            fv = float(q)
        except OverflowError:
            fv = math.inf if q > 0 else -math.inf
        if fv != q:
            rest[i] = q
        out[i] = fv
    return out.reshape(arr.shape), rest
