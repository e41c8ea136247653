"""Private exact helpers shared by the strategies and the assertions.

They map between codes, magnitudes, exact values and ordinals of one
:class:`~numerics.formats.Format` using only the format's base fields, so the
testing toolkit does not depend on the encoder it is used to test.

Ordinals
--------
The ordinal of a finite or infinite code counts representable values from
zero: ``+x`` has ordinal ``mag`` (its magnitude code), ``-x`` has ``-mag``.
With ``signed_zeros=True`` (formats that have ``-0`` only) negative codes get
``-mag - 1``, so ``-0`` and ``+0`` are one step apart.  Ordinals fit in int64
for every format up to binary64 (``|ordinal| <= 2**63 - 2**52 + 1``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from numerics.dtypes import dtype_of, format_of_dtype
from numerics.formats import Format, NaNEncoding, get_format

__all__: list[str] = []

def native_dtype(fmt: Format) -> np.dtype | None:
    """The numpy / ml_dtypes dtype holding ``fmt``'s values, or None (codes only)."""
    try:
        registered = get_format(fmt.name)
    except ValueError:
        return None
    return dtype_of(registered)


def dtype_format_name(dtype: np.dtype) -> str | None:
    """The registry name of a float dtype, or None when no format matches."""
    fmt = format_of_dtype(dtype)
    return None if fmt is None else fmt.name


def subnormal_mags(fmt: Format) -> tuple[int, int] | None:
    """Inclusive range of subnormal magnitude codes, or None when there are none."""
    if not fmt.subnormals or fmt.trailing_bits == 0:
        return None
    return 1, (1 << fmt.trailing_bits) - 1


def mag_to_float(fmt: Format, mag: int) -> float:
    """Exact value of a finite magnitude code as a Python float."""
    t = fmt.trailing_bits
    field_e, frac = mag >> t, mag & ((1 << t) - 1)
    if fmt.subnormals and field_e == 0:
        return math.ldexp(frac, fmt.emin - t)
    return math.ldexp((1 << t) | frac, field_e - fmt.bias - t)


def code_to_float(fmt: Format, code: int) -> float:
    """Exact value of any code as a Python float (NaN keeps the code's sign bit)."""
    negative = bool(code & fmt.sign_mask)
    if fmt.is_nan_code(code):
        nan = math.nan
        return -nan if negative and fmt.nan is not NaNEncoding.NEGATIVE_ZERO else nan
    if fmt.is_inf_code(code):
        return -math.inf if negative else math.inf
    value = mag_to_float(fmt, code & fmt.magnitude_mask)
    return -value if negative else value


def mag_floor(fmt: Format, x: Fraction) -> int:
    """Largest finite magnitude code whose value is ``<= x`` (``x >= 0``); -1 if none."""
    lo, hi = 0, fmt.max_finite_code
    if fmt.magnitude_value(lo) > x:
        return -1
    while lo < hi:  # invariant: value(lo) <= x
        mid = (lo + hi + 1) // 2
        if fmt.magnitude_value(mid) <= x:
            lo = mid
        else:
            hi = mid - 1
    return lo


def mag_ceil(fmt: Format, x: Fraction) -> int | None:
    """Smallest finite magnitude code whose value is ``>= x`` (``x >= 0``); None if none."""
    floor = mag_floor(fmt, x)
    if floor >= 0 and fmt.magnitude_value(floor) == x:
        return floor
    return floor + 1 if floor + 1 <= fmt.max_finite_code else None


def values_to_codes(x: npt.ArrayLike, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Codes of float64 values that ``fmt`` holds exactly, and a mask of those it does.

    ``-0.0`` maps to ``+0`` where the format has no ``-0``; NaN maps to the
    canonical NaN code (with its sign where the format has signed NaNs).
    Elements outside the format get code 0 and ``False`` in the mask.
    """
    a64 = np.asarray(x, dtype=np.float64)
    t = fmt.trailing_bits
    neg = np.signbit(a64)
    nan = np.isnan(a64)
    inf = np.isinf(a64)
    a = np.where(nan | inf, 0.0, np.abs(a64))
    _, e = np.frexp(a)
    exp = e.astype(np.int64) - 1  # floor(log2 a) for a > 0
    if fmt.subnormals:
        exp = np.maximum(exp, fmt.emin)
    sig = np.ldexp(a, (t - exp).astype(np.int32))  # a / quantum: an integer when exact
    exact = sig == np.floor(sig)
    in_range = a <= fmt.max
    if not fmt.subnormals:
        in_range &= a >= fmt.smallest_normal
    normal = sig >= (1 << t)
    field = np.where(normal, exp + fmt.bias, 0).astype(np.uint64)
    frac = np.where(normal, sig - (1 << t), sig).astype(np.uint64)
    mag = (field << np.uint64(t)) | frac
    ok = ~nan & ~inf & exact & in_range
    zero = a == 0
    sign = np.uint64(fmt.sign_mask)
    if fmt.signed:
        neg_ok = neg & ~(zero & ~np.bool_(fmt.has_negative_zero))
        mag = np.where(neg_ok, mag | sign, mag)
    else:
        ok &= ~neg | zero
    codes = np.where(ok, mag, np.uint64(0))
    if fmt.has_infinity:
        inf_code = np.uint64(fmt.code_of_inf)  # type: ignore[arg-type]
        codes = np.where(inf, np.where(neg & np.bool_(fmt.signed), inf_code | sign, inf_code),
                         codes)
        ok |= inf & (~neg | np.bool_(fmt.signed))
    if fmt.has_nan:
        nan_code = np.uint64(fmt.code_of_nan)  # type: ignore[arg-type]
        signed_nan = fmt.signed and fmt.nan is not NaNEncoding.NEGATIVE_ZERO
        codes = np.where(nan, np.where(neg & np.bool_(signed_nan), nan_code | sign, nan_code),
                         codes)
        ok |= nan
    return codes, ok


def is_nan_codes(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """Vectorized :meth:`Format.is_nan_code` over uint64 codes."""
    mag = codes & np.uint64(fmt.magnitude_mask)
    if fmt.nan is NaNEncoding.IEEE:
        return mag > np.uint64(fmt.code_of_inf)  # type: ignore[arg-type]
    if fmt.nan is NaNEncoding.TOP:
        return mag == np.uint64(fmt.magnitude_mask)
    if fmt.nan is NaNEncoding.NEGATIVE_ZERO:
        return codes == np.uint64(fmt.sign_mask)
    return np.zeros(codes.shape, dtype=bool)


def ordinals(codes: np.ndarray, fmt: Format, *, signed_zeros: bool = False) -> np.ndarray:
    """int64 ordinals of non-NaN uint64 codes (see the module docstring)."""
    mag = (codes & np.uint64(fmt.magnitude_mask)).astype(np.int64)
    if not fmt.signed:
        return mag
    neg = (codes & np.uint64(fmt.sign_mask)) != 0
    # -0 one step below +0 when signed zeros count; without zero, -2**emin (magnitude
    # code 0) is the step below +2**emin, which takes ordinal 0
    shift = 1 if (signed_zeros and fmt.has_negative_zero) or not fmt.has_zero else 0
    return np.where(neg, -mag - shift, mag)


def ordinal_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact ``|a - b|`` of int64 arrays as uint64.

    The true difference lies in ``[0, 2**64)``, so the difference of the
    two's-complement bit patterns modulo ``2**64`` (what uint64 subtraction
    computes) equals it exactly: no wrap at +-max.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    return np.where(a >= b, ua - ub, ub - ua)


def floor_codes(x: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the values of ``fmt`` next to finite float64 ``x`` toward zero, and the rest.

    Returns ``(codes, frac)`` with ``|x| = value(codes) + frac * q`` where
    ``q`` is the spacing above ``value(codes)`` (the spacing of the top binade
    beyond ``max``, so ``frac`` may exceed 1 there); ``frac`` is exact in
    float64.  The sign of ``x`` is carried by the code (``-0`` where the
    format has it).  Values below the smallest value of formats without zero
    clamp to it with ``frac = 0``.
    """
    a64 = np.asarray(x, dtype=np.float64)
    t = fmt.trailing_bits
    neg = np.signbit(a64)
    a = np.abs(a64)
    top = a > fmt.max
    a_in = np.where(top, fmt.max, a)
    _, e = np.frexp(a_in)
    exp = e.astype(np.int64) - 1
    lowest = fmt.emin if fmt.subnormals else fmt.emin
    exp = np.maximum(exp, lowest)
    sig = np.ldexp(a_in, (t - exp).astype(np.int32))
    whole = np.floor(sig)
    frac = sig - whole
    if not fmt.subnormals:
        small = a < fmt.smallest_normal
        # the only step below the smallest normal is from zero (or nothing)
        frac = np.where(small, a / fmt.smallest_normal if fmt.has_zero else 0.0, frac)
        whole = np.where(small, 0.0 if fmt.has_zero else float(1 << t), whole)
        exp = np.where(small, fmt.emin, exp)
    normal = whole >= (1 << t)
    field = np.where(normal, exp + fmt.bias, 0).astype(np.uint64)
    mant = np.where(normal, whole - (1 << t), whole).astype(np.uint64)
    mag = (field << np.uint64(t)) | mant
    if not fmt.subnormals and not fmt.has_zero:
        mag = np.where(a < fmt.smallest_normal, np.uint64(0), mag)
    q_top = math.ldexp(1.0, fmt.emax - t)
    frac = np.where(top, (a - fmt.max) / q_top, frac)
    sign = np.uint64(fmt.sign_mask)
    if fmt.signed:
        keep = neg & ((mag != 0) | np.bool_(fmt.has_negative_zero))
        mag = np.where(keep, mag | sign, mag)
    return mag, frac
