"""Units in the last place, neighbours and exact step counts, for every format.

Every value of every supported format is a float64 (the formats' ranges lie
inside binary64's), so these functions work on float64 arrays with exact
power-of-two arithmetic (``frexp``/``ldexp``); nothing here rounds.

Conventions
-----------
* ``ulp(x)`` is the quantum of ``x``'s binade in the format: for
  ``|x|`` in ``[2**e, 2**(e+1))`` it is ``2**(max(e, emin) - t)``, so below
  ``2**emin`` it is the subnormal quantum and ``ulp(0)`` is ``2**(emin - t)``,
  the smallest subnormal of a format that has subnormals (in one without, it is
  not a value).  For e8m0fnu (``t = 0``, no subnormals) that is ``2**max(e, emin)``.
  ``x`` need not be representable and may lie beyond ``max``.  ``ulp(+-inf)`` is
  ``inf`` (as :func:`math.ulp`); ``ulp(nan)`` is ``nan``.
* ``next_up``/``next_down`` follow IEEE 754 ``nextUp``/``nextDown`` on the
  format's values: ``next_up(-0) == next_up(+0) ==`` the smallest subnormal,
  ``next_up(-smallest) == -0.0`` (``+0.0`` where the format has no ``-0``),
  ``next_up(-inf) == -max``, ``next_up(+inf) == +inf``.  Beyond the ends:
  ``next_up(max)`` is ``+inf`` where the format has infinities and ``nan``
  otherwise (there is no larger value); likewise ``next_down(2**-127)`` in
  the unsigned e8m0fnu is ``nan``.  NaN maps to NaN.  ``x`` must be
  representable (ValueError naming the first offending index otherwise), with one
  exception: a longdouble that is not a float64 value lies strictly between two
  values of every format, and ``next_up`` gives the least value above it,
  ``next_down`` the greatest below it (``nan`` where there is none, as past ``max``
  in a format without infinities), in an array, a list or alone.
* ``ulp_distance(a, b)`` counts the representable values one passes going
  from ``a`` to ``b``; ``+0`` and ``-0`` count as the same point and
  infinities count as one step beyond ``max``.  It is computed from the
  magnitudes in ``uint64`` so it never wraps (binary64 ``-max`` to ``max`` is
  ``2**64 - 2**53 - 2``).  NaN has no place on the line: ValueError.
* A list (or object array) is taken element by element, each as the scalar
  call takes it: a Fraction that is not exactly a float64 value is a
  ValueError for ``next_up``/``next_down``/``ulp_distance``, and ``ulp``
  takes it exactly; None, booleans and Decimals are TypeErrors.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from numerics.codec import floor_log2
from numerics.dtypes import MAX_DIMS, as_input
from numerics.encoding import _check_codes as check_codes
from numerics.formats import Format, as_format

__all__ = ["next_down", "next_up", "ordinal", "ulp", "ulp_distance"]

#: Scalar types that are exactly a float64 (``float(x)`` is exact).
_FLOAT_SCALARS = frozenset({float, np.float64, np.float32, np.float16})
#: Integer scalar types, exactly a float64 up to ``2**53``.
_INT_SCALARS = frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32,
                          np.uint16, np.uint8})


def _exact_float(x: object) -> float | None:
    """``float(x)`` for a float scalar, or an int scalar up to ``2**53`` (exact); else None."""
    if type(x) in _FLOAT_SCALARS:
        return float(x)  # type: ignore[arg-type]
    if type(x) in _INT_SCALARS:
        i = int(x)  # type: ignore[call-overload]
        if -(2**53) <= i <= 2**53:
            return float(i)
    return None


def _scalar_or_array(out: np.ndarray, scalar: bool) -> Any:
    return out[()] if scalar else out


def _element_float64(v: object, name: str) -> float:
    """One scalar (or an element of an object array) as the float64 it is exactly: a
    ValueError where it is not a float64 value, a TypeError where it is not a real number
    (a bool, None, text, a Decimal, ...)."""
    if type(v) in _FLOAT_SCALARS:
        return float(v)  # type: ignore[arg-type]
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"Got {name}={v!r}, expected a real number, not a bool")
    if isinstance(v, np.floating):  # longdouble (the other numpy floats are float64s)
        with np.errstate(over="ignore"):
            f = float(v)
        if math.isfinite(f) and f != v or math.isinf(f) and np.isfinite(v):
            raise ValueError(f"Got {name}={v!r}, a longdouble that is not a float64 value, "
                             "so not a value of any supported format")
        return f
    if isinstance(v, np.integer):
        v = int(v)
    if isinstance(v, numbers.Rational):
        exact = Fraction(int(v.numerator), int(v.denominator))
        try:
            f = float(exact)
        except OverflowError:
            f = math.nan
        if not math.isfinite(f) or Fraction(f) != exact:
            raise ValueError(f"Got {name}={v!r}, which is not exactly a float64 value")
        return f
    if isinstance(v, float):  # a float subclass
        return float(v)
    raise TypeError(f"Got {name}={v!r} of type {type(v).__name__}, expected a real number")


def _objects(x: object, name: str) -> np.ndarray | None:
    """``x`` as an array when it is a list, tuple or ndarray (None for a scalar)."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return as_input(x, name)
    return None


def _elementwise(arr: np.ndarray, one: Any, name: str) -> np.ndarray:
    """``one(element, its name)`` (a float) of every element of the object array ``arr``,
    as a float64 array of its shape: a list behaves as the calls on its elements do."""
    out = np.empty(arr.shape, np.float64)
    flat = out.reshape(-1)
    for i, v in enumerate(arr.reshape(-1)):
        where = f"{name}[{i}]" if arr.ndim else name
        if isinstance(v, (list, tuple, np.ndarray)):  # (0-d arrays came unwrapped)
            raise TypeError(f"Got {where} of type {type(v).__name__}, expected a real number")
        flat[i] = one(v, where)
    return out


def _to_float64(x: object, name: str) -> tuple[np.ndarray, bool]:
    """float64 array of ``x``; Python ints and Fractions are converted exactly or rejected,
    and so is every element of an object array (a list of them)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"Got {name}={x!r}, expected a real number, not a bool")
    if isinstance(x, numbers.Rational) and not isinstance(x, np.integer):
        return np.asarray(_element_float64(x, name), dtype=np.float64), True
    arr = as_input(x, name)
    if arr.dtype.kind == "V" and _is_ml_float(arr.dtype):
        with np.errstate(invalid="ignore"):  # (a signalling NaN: a NaN)
            arr = arr.astype(np.float64)  # every ml_dtypes value is a float64
    if arr.dtype == object:  # element by element, as the scalars are taken
        return _elementwise(arr, _element_float64, name), arr.ndim == 0
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, expected a float or integer dtype")
    with np.errstate(invalid="ignore", over="ignore"):  # (a longdouble beyond: refused below)
        out = arr.astype(np.float64, copy=False)  # (callers only read it)
    if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 and arr.size:
        # int64/uint64 beyond 2**53 need not be float64 values: exact or refused
        top = 2.0**63 if arr.dtype.kind == "i" else 2.0**64
        fits = (out < top) & (out >= -top)  # int64's -2**63 is a float64
        bad = ~fits | (np.where(fits, out, 0).astype(arr.dtype) != arr)
        if bad.any():
            idx = int(np.flatnonzero(bad.ravel())[0])
            where = f"{name}[{idx}]" if arr.ndim else name
            raise ValueError(f"Got {where}={int(arr.ravel()[idx])}, which is not exactly a "
                             "float64 value")
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8 and arr.size:
        with np.errstate(invalid="ignore"):
            differs = (out != arr) & np.isfinite(arr)
        if differs.any():
            idx = int(np.flatnonzero(differs.ravel())[0])
            where = f"{name}[{idx}]" if arr.ndim else name
            raise ValueError(f"Got {where}={arr.ravel()[idx]!r}, a longdouble that is not a "
                             "float64 value, so not a value of any supported format")
    return out, arr.ndim == 0


#: The dtype of the results.
_FLOAT64 = np.dtype(np.float64)
#: dtype.num of float32 and float64 (the kernels read them without a copy).
_FLOAT_NUMS = (np.dtype(np.float32).num, np.dtype(np.float64).num)
#: numpy's own native float32 dtype, which nearly every float32 array holds (an identity
#: test is the quickest check, a dtype's attributes cost about 70 ns each).
_FLOAT32 = np.dtype(np.float32)

#: Per format argument (a name, or the identity of anything else; the entry holds the
#: argument): the Format, the kernel module, the format's parameter array and the size
#: from which the kernels run on the threads.
_KERNEL_PLANS: dict[object, tuple[object, Format, Any, np.ndarray, int]] = {}


def _kernel_plan(fmt: Any) -> tuple[object, Format, Any, np.ndarray, int]:
    """(the argument, the Format, numerics.kernels.ulp, its parameter array, the threads'
    size) of a format argument, cached by the argument (a name) or its identity; raises
    as :func:`as_format` does."""
    key = fmt if type(fmt) is str else id(fmt)
    plan = _KERNEL_PLANS.get(key)
    if plan is None or (plan[0] is not fmt and type(fmt) is not str):
        from numerics.kernels import ulp as kernels  # imports numba
        from numerics.kernels.spread import PARALLEL_MIN

        found = as_format(fmt)
        plan = (fmt, found, kernels, kernels.format_ulp_params(found), PARALLEL_MIN)
        if len(_KERNEL_PLANS) > 1024:
            _KERNEL_PLANS.clear()
        _KERNEL_PLANS[key] = plan
    return plan


def _run(arr: np.ndarray, fmt: Any, direction: int, name: str = "x") -> np.ndarray:
    """``ulp`` (``direction == 0``), ``next_up`` (1) or ``next_down`` (-1) of the
    C-contiguous native float32/float64 ``arr`` by one kernel call, as a float64 array of
    its shape; ValueError naming the first element that is not a value of ``fmt``.
    Below the threads' size the span runs directly (the driver's call costs about
    0.7 us)."""
    _, found, kernels, Q, parallel_min = _kernel_plan(fmt)
    n = arr.size
    if arr.ndim == 1:  # (a size and a dtype instance: the quickest np.empty)
        flat = arr
        out = flat_out = np.empty(n, _FLOAT64)
    else:
        out = np.empty(arr.shape, _FLOAT64)
        flat, flat_out = arr.reshape(-1), out.reshape(-1)
    if direction == 0:
        if n < parallel_min:
            kernels.ulp_span(flat, flat_out, 0, n, Q)
        else:
            kernels.ulp(flat, flat_out, Q)
    elif (kernels.next_span(flat, flat_out, 0, n, Q, direction) if n < parallel_min
          else kernels.next_value(flat, flat_out, Q, direction)):
        idx = int(kernels.first_unrepresentable(flat, Q))
        where = f"{name}[{idx}]" if arr.ndim else name
        raise ValueError(
            f"Got {where}={float(flat[idx])!r}, which is not a value of {found.name}")
    return out


def _c_order(arr: np.ndarray) -> np.ndarray:
    """``arr`` in C order (a copy only where it is not; 0-d stays 0-d)."""
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _is_native_floats(x: object) -> bool:
    """Whether ``x`` is a C-contiguous native float32/float64 ndarray (the kernels read it
    as it is)."""
    if type(x) is not np.ndarray:
        return False
    dt = x.dtype
    return (dt is _FLOAT64 or dt is _FLOAT32 or dt.num in _FLOAT_NUMS and dt.isnative) \
        and x.flags.c_contiguous and x.ndim <= MAX_DIMS


def _is_ml_float(dt: np.dtype) -> bool:
    """Whether ``dt`` is an ml_dtypes floating type (bfloat16, float8_*, ...)."""
    return dt.kind == "V" and dt.names is None and dt.name.startswith(
        ("bfloat16", "float8", "float6", "float4"))


def ulp(x: object, fmt: Format | str) -> Any:
    """Quantum of the binade of ``x`` in ``fmt``.

    Parameters
    ----------
    x : float, int, Fraction or array_like
        Any real (it need not be representable).  Python ints and Fractions
        are taken exactly, inside lists too: a list's elements are taken as they
        are alone (a numpy integer that is not a float64 value is a ValueError;
        None, booleans and Decimals are TypeErrors).
    fmt : Format or str
        The format.

    Returns
    -------
    numpy.float64 or ndarray of float64
        ``2**(max(e, emin) - t)`` where ``2**e <= |x| < 2**(e+1)``; ``inf`` for
        infinities, ``nan`` for NaN.

    Examples
    --------
    >>> float(ulp(1.0, "bf16")), float(ulp(-448.0, "e4m3fn")), float(ulp(0.0, "e4m3fn"))
    (0.0078125, 32.0, 0.001953125)
    >>> float(ulp(3.0, "e8m0fnu"))
    2.0
    """
    if _is_native_floats(x):
        return _scalar_or_array(_run(x, fmt, 0), x.ndim == 0)  # type: ignore[arg-type,attr-defined]
    return _ulp(x, as_format(fmt), "x")


def _ulp(x: object, fmt: Format, name: str) -> Any:
    """:func:`ulp` of anything but a native float array (``name`` names ``x`` in errors)."""
    f = _exact_float(x)
    if f is not None:  # the common scalar: plain Python arithmetic
        if not math.isfinite(f):
            return np.float64(abs(f))
        emin = fmt.emin
        e = math.frexp(f)[1] - 1 if f else emin
        return np.float64(math.ldexp(1.0, max(e, emin) - fmt.trailing_bits))
    if isinstance(x, numbers.Rational) and not isinstance(x, (bool, np.integer)):
        a = abs(Fraction(int(x.numerator), int(x.denominator)))
        e = floor_log2(a) if a else fmt.emin
        qexp = max(e, fmt.emin) - fmt.trailing_bits
        return np.float64(math.inf if qexp > 1023 else 2.0**qexp)
    if isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype.itemsize > 8 \
            or isinstance(x, np.floating) and x.dtype.itemsize > 8:
        return _ulp_longdouble(np.asarray(x), fmt, np.ndim(x) == 0 and
                               not isinstance(x, np.ndarray))
    arr = _objects(x, name)
    if arr is not None and isinstance(x, (list, tuple)) and _inexact_list(arr):
        arr = as_input(np.asarray(x, dtype=object), name)  # the elements as they are
    if arr is not None and arr.dtype == object:  # each element as the scalar call takes it
        values = _elementwise(arr, lambda v, where: _ulp(v, fmt, where), name)
        return _scalar_or_array(values, arr.ndim == 0)
    arr, scalar = _to_float64(x if arr is None else arr, name)
    out = _run(_c_order(arr), fmt, 0, name)  # inf -> inf, nan -> |nan|
    return _scalar_or_array(out, scalar)


def _inexact_list(arr: np.ndarray) -> bool:
    """Whether numpy's array of a list holds values that are not float64 values, which
    :func:`ulp` takes exactly one by one: longdoubles, or 64-bit integers beyond
    ``2**53`` (Python ints, which numpy made int64 or uint64)."""
    if arr.dtype.kind == "f":
        return arr.dtype.itemsize > 8
    if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 and arr.size:
        return bool(np.any(arr > 2**53) or arr.dtype.kind == "i" and np.any(arr < -(2**53)))
    return False


def _ulp_longdouble(arr: np.ndarray, fmt: Format, scalar: bool) -> Any:
    """``ulp`` of longdouble values taken exactly (not rounded to float64 first)."""
    a = np.abs(arr)
    finite = np.isfinite(a)
    with np.errstate(invalid="ignore"):
        _, ex = np.frexp(np.where(finite & (a > 0), a, 1))
    e = np.where(finite & (a > 0), ex.astype(np.int64) - 1, fmt.emin)
    q = np.maximum(e, fmt.emin) - fmt.trailing_bits
    with np.errstate(over="ignore"):
        quantum = np.ldexp(1.0, np.minimum(q, 1024).astype(np.int32))
        wide = a.astype(np.float64)  # (only its infinities and NaNs are used)
    out = np.where(finite, quantum, wide)
    return _scalar_or_array(out, scalar)


def _next(x: object, fmt: Any, direction: int, name: str = "x") -> Any:
    """:func:`next_up` (``direction`` 1) or :func:`next_down` (-1) of anything but a
    native float array (``name`` names ``x`` in errors); ``fmt`` as :func:`next_up`
    takes it."""
    f = _exact_float(x)
    if f is not None:  # the common scalar: one compiled call
        _, _, kernels, Q, _ = _kernel_plan(fmt)
        value, ok = kernels.next_scalar(f, Q, direction)
        if ok:
            return np.float64(value)
    fmt = as_format(fmt)
    if isinstance(x, np.floating) and x.dtype.itemsize > 8:
        return _next_longdouble(np.asarray(x), fmt, direction, True)
    arr = _objects(x, name)
    if arr is not None and arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        # longdoubles (an array, a scalar, or a list numpy made an array of them)
        return _next_longdouble(arr, fmt, direction, arr.ndim == 0 and
                                not isinstance(x, (np.ndarray, list, tuple)))
    if arr is not None and arr.dtype == object:  # each element as the scalar call takes it
        values = _elementwise(arr, lambda v, where: _next(v, fmt, direction, where), name)
        return _scalar_or_array(values, arr.ndim == 0)
    arr, scalar = _to_float64(x if arr is None else arr, name)
    return _scalar_or_array(_run(_c_order(arr), fmt, direction, name), scalar)


def _next_longdouble(arr: np.ndarray, fmt: Format, direction: int, scalar: bool) -> Any:
    """A longdouble that is not a float64 lies strictly between two values of every
    format: its neighbours are the value rounded down (``next_down``) or up."""
    from numerics.encoding import decode, encode

    with np.errstate(invalid="ignore", over="ignore"):  # (beyond float64's range: off)
        near = arr.astype(np.float64)
        off = (near != arr) & np.isfinite(arr)
    if not off.any():
        return _next(near if arr.ndim else near[()], fmt, direction)
    rounded = decode(encode(arr, fmt, rounding="ru" if direction > 0 else "rd", nan="zero"), fmt)
    least = float(decode(0, fmt))  # code 0: a value of every format (+0, or the least)
    if not fmt.signed:  # below an unsigned format's least value (code 0): that value is up
        rounded = np.where(arr < 0, least, rounded)
    elif not fmt.has_zero:  # between -2**emin and 2**emin, where encode gives +-2**emin
        rounded = np.where(abs(arr) < least, direction * least, rounded)
    # beyond the format's ends the rounding saturates (no infinity: fp6, fp4) or stops at
    # the smallest value (e8m0fnu): no value of the format lies on that side, nan
    with np.errstate(invalid="ignore"):
        beyond = rounded > arr if direction > 0 else rounded < arr
    rounded = np.where(beyond, rounded, np.nan)
    others = _next(np.where(off, least, near), fmt, direction)  # (off: any value)
    out = np.where(off, rounded, others)
    return _scalar_or_array(np.asarray(out, np.float64), scalar)


def next_up(x: object, fmt: Format | str) -> Any:
    """The least value of ``fmt`` greater than ``x`` (IEEE 754 ``nextUp``).

    Parameters
    ----------
    x : float or array_like
        Values of ``fmt`` (ValueError naming the first index otherwise), or
        longdoubles that are not float64 values, which lie between two values of
        every format (the module docstring).
    fmt : Format or str
        The format.

    Returns
    -------
    numpy.float64 or ndarray of float64
        See the module docstring for the ends: ``next_up(max)`` is ``inf``
        where the format has infinities and ``nan`` where it does not.

    Examples
    --------
    >>> float(next_up(1.0, "bf16")), float(next_up(-0.0, "e4m3fn")), float(next_up(448.0, "e4m3fn"))
    (1.0078125, 0.001953125, nan)
    >>> float(next_up(57344.0, "e5m2")), float(next_up(-0.001953125, "e4m3fn"))
    (inf, -0.0)
    """
    if _is_native_floats(x):
        return _scalar_or_array(_run(x, fmt, 1), x.ndim == 0)  # type: ignore[arg-type,attr-defined]
    return _next(x, fmt, +1)


def next_down(x: object, fmt: Format | str) -> Any:
    """The greatest value of ``fmt`` less than ``x`` (IEEE 754 ``nextDown``).

    ``next_down(x) == -next_up(-x)`` for signed formats.

    Parameters
    ----------
    x : float or array_like
        Values of ``fmt`` (ValueError naming the first index otherwise), or
        longdoubles that are not float64 values, which lie between two values of
        every format (the module docstring).
    fmt : Format or str
        The format.

    Returns
    -------
    numpy.float64 or ndarray of float64
        See the module docstring for the ends: ``next_down(-max)`` is ``-inf``
        where the format has infinities and ``nan`` where it does not (as is
        ``next_down`` of e8m0fnu's least value, ``2**-127``).

    Examples
    --------
    >>> float(next_down(1.0, "bf16")), float(next_down(2.0**-126, "binary32"))
    (0.99609375, 1.1754942106924411e-38)
    >>> float(next_down(2.0**-127, "e8m0fnu")), float(next_down(1.0, "e8m0fnu"))
    (nan, 0.5)
    """
    if _is_native_floats(x):
        return _scalar_or_array(_run(x, fmt, -1), x.ndim == 0)  # type: ignore[arg-type,attr-defined]
    return _next(x, fmt, -1)


def ordinal(codes: npt.ArrayLike, fmt: Format | str) -> Any:
    """Map codes to a monotone signed integer line (int64).

    Consecutive values of the format get consecutive integers; ``+0`` and
    ``-0`` both map to 0, negative values to negative integers, infinities
    to one past the largest finite value.  In a signed format without zero,
    ``+2**emin`` is 0 and ``-2**emin`` is -1 (they are neighbours).  NaN codes
    raise ValueError.

    Parameters
    ----------
    codes : array_like of int
        Codes in ``[0, 2**fmt.bits)``, checked as :func:`numerics.decode` checks them
        (any integer dtype or Python ints; ValueError naming the first one outside).
    fmt : Format or str
        The format.

    Returns
    -------
    numpy.int64 or ndarray of int64
        The ordinals, shaped like ``codes`` (a numpy scalar for a scalar input).

    Raises
    ------
    ValueError
        For a NaN code (naming its flat index) or a code out of range.

    Examples
    --------
    >>> ordinal([0x00, 0x80, 0x01, 0x81, 0x7E, 0xFE], "e4m3fn").tolist()
    [0, 0, 1, -1, 126, -126]
    >>> int(ordinal(0x7C, "e5m2"))   # +inf, one step beyond max (0x7B)
    124
    """
    fmt = as_format(fmt)
    # the checks decode makes: integer codes (a list of Python ints of any size, [] too)
    # within the format, the first one outside named with its index
    arr, _ = check_codes(codes, fmt)
    scalar = arr.ndim == 0
    c = arr.astype(np.uint64)
    mag = (c & np.uint64(fmt.magnitude_mask)).astype(np.int64)
    nan = np.zeros(c.shape, dtype=bool)
    inf_code = fmt.code_of_inf
    mm = fmt.magnitude_mask
    if fmt.has_nan:
        if fmt.nan.value == "ieee":
            nan = mag > inf_code
        elif fmt.nan.value == "top":
            nan = mag == mm
        else:
            nan = c == np.uint64(fmt.sign_mask)
    if nan.any():
        idx = int(np.flatnonzero(nan.ravel())[0])
        raise ValueError(
            f"Got codes[{idx}]={int(c.ravel()[idx]):#x}, a NaN of {fmt.name}, which has no ordinal"
        )
    if fmt.signed:
        negative = (c & np.uint64(fmt.sign_mask)) != 0
        out = np.where(negative, -mag - (0 if fmt.has_zero else 1), mag)
    else:
        out = mag
    return _scalar_or_array(np.asarray(out, dtype=np.int64), scalar)


def ulp_distance(a: object, b: object, fmt: Format | str) -> Any:
    """Exact number of steps between two values of ``fmt`` (uint64, never wraps).

    Parameters
    ----------
    a, b : float or array_like
        Values of ``fmt`` (broadcast together); ValueError if one is not
        representable or is NaN.
    fmt : Format or str
        The format.

    Returns
    -------
    numpy.uint64 or ndarray of uint64
        ``|ordinal(a) - ordinal(b)|``; ``+0`` and ``-0`` are 0 apart (in a
        format without zero, ``-2**emin`` and ``+2**emin`` are 1 apart).

    Examples
    --------
    >>> int(ulp_distance(1.0, 2.0, "bf16")), int(ulp_distance(-0.0, 0.0, "binary32"))
    (128, 0)
    >>> m = float(np.finfo(np.float64).max)
    >>> int(ulp_distance(-m, m, "binary64")) == 2**64 - 2**53 - 2
    True
    """
    fmt = as_format(fmt)
    xa, sa = _to_float64(a, "a")
    xb, sb = _to_float64(b, "b")
    from numerics.kernels.ulp import distance, first_unrepresentable, format_ulp_params

    for arr, name in ((xa, "a"), (xb, "b")):
        flat = np.ascontiguousarray(arr).reshape(-1)
        if np.isnan(flat).any():
            idx = int(np.flatnonzero(np.isnan(flat))[0])
            where = f"{name}[{idx}]" if arr.ndim else name
            raise ValueError(f"Got {where}=nan, but NaN has no place on the line of values")
        idx = first_unrepresentable(flat, format_ulp_params(fmt))
        if idx >= 0:
            where = f"{name}[{idx}]" if arr.ndim else name
            raise ValueError(f"Got {where}={float(flat[idx])!r}, which is not a value of "
                             f"{fmt.name}")
    try:
        shape = np.broadcast_shapes(xa.shape, xb.shape)
    except ValueError:
        raise ValueError(f"Got a with shape {xa.shape} and b with shape {xb.shape}, but they "
                         "must broadcast together") from None
    fa, fb = (np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1) for x in (xa, xb))
    out = np.empty(shape, np.uint64)
    inf_mag = fmt.code_of_inf if fmt.code_of_inf is not None else fmt.max_finite_code + 1
    distance(fa, fb, out.reshape(-1), fmt.trailing_bits, fmt.emin, fmt.bias, inf_mag,
             fmt.signed, fmt.has_zero)
    return _scalar_or_array(out, sa and sb)
