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
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from numerics.dtypes import dtype_of, format_of_dtype
from numerics.formats import Format, NaNEncoding, get_format
from numerics.testing._intake import as_array, show_exact, split_exact

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
    format has it; an unsigned format takes ``|x|``: :func:`read_codes` makes
    zero and negative references NaN there).  Values below the smallest value
    of formats without zero clamp to it with ``frac = 0``.
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
        # a negative value keeps its sign unless the code toward zero is a zero the
        # format cannot sign (without zero, magnitude code 0 is 2**emin: signed)
        keep = neg & ((mag != 0) | np.bool_(fmt.has_negative_zero or not fmt.has_zero))
        mag = np.where(keep, mag | sign, mag)
    return mag, frac


def _frac_float(rest: Fraction, *, beyond: bool) -> float:
    """``rest`` (``>= 0``) as a float that is 0 exactly when ``rest`` is, and below 1
    unless ``beyond`` (then ``inf`` past the float range)."""
    if rest == 0:
        return 0.0
    try:
        out = float(rest)
    except OverflowError:
        return math.inf
    if out == 0.0:
        return math.ulp(0.0)          # a nonzero rest must not read as exact
    if not beyond and out >= 1.0:
        return 1.0 - 2.0**-53
    return out


def fraction_floor(fmt: Format, q: Fraction) -> tuple[int, float, Fraction]:
    """:func:`floor_codes` for one exact value: ``(code, frac, rest)``.

    ``rest`` is ``(|q| - value(code)) / spacing`` exactly and ``frac`` its
    float64 value, but never rounded to 0 (it is 0 exactly when ``q`` is a
    value of ``fmt``) nor, below ``max``, up to 1; beyond ``max`` both count
    steps of the top binade (``frac`` is ``inf`` past the float64 range).
    Values below the smallest value of a format without zero clamp to it with
    ``rest = 0``.
    """
    mag_q = abs(q)
    beyond = mag_q > fmt.max_exact
    if beyond:
        m = fmt.max_finite_code
        rest = (mag_q - fmt.max_exact) / Fraction(2) ** (fmt.emax - fmt.trailing_bits)
    else:
        m = mag_floor(fmt, mag_q)
        if m < 0:                     # below 2**emin without zero: clamps to it
            m, rest = 0, Fraction(0)
        else:
            lo = fmt.magnitude_value(m)
            rest = Fraction(0) if lo == mag_q else (mag_q - lo) / (
                fmt.magnitude_value(m + 1) - lo)
    code = m
    if q < 0 and fmt.signed and (m != 0 or fmt.has_negative_zero or not fmt.has_zero):
        code |= fmt.sign_mask
    return code, _frac_float(rest, beyond=beyond), rest


class ReadCodes(NamedTuple):
    """What :func:`read_codes` reads from an array."""

    #: uint64 codes (toward zero for a reference between two values).
    codes: np.ndarray
    #: Fraction of a step beyond ``codes`` (float64), or None when every element is a value.
    frac: np.ndarray | None
    #: float64 values of a reference (None when every element is a value).
    real: np.ndarray | None
    #: The exact ``frac`` (flat index -> Fraction) where the float64 one is rounded.
    exact_frac: dict[int, Fraction]
    #: The exact reference (flat index -> Fraction) where its float64 ``real`` is rounded.
    exact_values: dict[int, Fraction]


def read_codes(arr: np.ndarray, fmt: Format, name: str, *, real_ok: bool = False,
               hint: str = "") -> ReadCodes:
    """Codes of ``fmt`` from an array.

    An array of ``fmt``'s own dtype is read bit for bit; one of the unsigned
    dtype ``fmt.code_dtype`` as codes.  Anything else is taken at its exact
    value (integers, Fractions, Decimals and long doubles too: nothing is
    rounded to float64 first) and must be a value of ``fmt``, or with
    ``real_ok`` a finite reference within the float64 range, which gives the
    code toward zero and ``frac`` (see :func:`floor_codes`) with ``real`` its
    float64 value.  Raises ValueError naming the first element that is neither
    (``hint`` is appended to the message).
    """
    native = native_dtype(fmt)
    in_order = arr.dtype.newbyteorder("=")  # (either byte order: the same bits)
    if native is not None and in_order == native:
        width = np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[
            native.itemsize]).newbyteorder(arr.dtype.byteorder)
        codes = arr.view(width).astype(np.uint64) & np.uint64((1 << fmt.bits) - 1)
        return ReadCodes(codes, None, None, {}, {})
    if arr.dtype.kind == "u" and in_order == fmt.code_dtype:
        codes = arr.astype(np.uint64)
        if codes.size and int(codes.max()) >= fmt.num_codes:
            bad = int(np.argmax(codes >= fmt.num_codes))
            raise ValueError(f"Got {name} with code {int(codes.flat[bad])} at flat index "
                             f"{bad}, but {fmt.name} has only {fmt.num_codes} codes")
        return ReadCodes(codes, None, None, {}, {})
    as64, rest = split_exact(arr)
    shape = as64.shape
    codes, ok = (v.ravel().copy() for v in values_to_codes(as64, fmt))
    between: dict[int, tuple[int, float, Fraction]] = {}
    for i, q in rest.items():          # float64 rounded these: decide them exactly
        floor = fraction_floor(fmt, q)
        if floor[2] == 0:
            codes[i], ok[i] = floor[0], True
        else:
            ok[i] = False
            between[i] = floor
    if ok.all():
        return ReadCodes(codes.reshape(shape), None, None, {}, {})
    finite = np.isfinite(as64).ravel()
    if real_ok and (ok | finite).all():
        floor_code, floor_frac = floor_codes(np.where(finite, as64.ravel(), 0.0), fmt)
        codes = np.where(ok, codes, floor_code)
        fracs = np.where(ok, 0.0, floor_frac)
        exact_frac: dict[int, Fraction] = {}
        for i, (code, frac, exact) in between.items():
            codes[i], fracs[i] = code, frac
            if frac != exact:
                exact_frac[i] = exact
        if not fmt.signed:  # (no zero, as e8m0fnu) zero and below round to NaN, as in encode
            low = ~ok & (as64.ravel() <= 0)
            for i in between:
                low[i] = rest[i] <= 0
                if low[i]:
                    exact_frac.pop(i, None)
            codes = np.where(low, np.uint64(fmt.code_of_nan), codes)  # type: ignore[arg-type]
            fracs = np.where(low, 0.0, fracs)
        return ReadCodes(codes.reshape(shape), fracs.reshape(shape), as64, exact_frac,
                         {i: rest[i] for i in between})
    # the first element that is neither a value nor (with real_ok) a finite reference
    bad = int(np.argmin(ok | (finite & real_ok)))
    shown = show_exact(rest[bad]) if bad in rest else repr(float(as64.flat[bad]))
    if bad in rest and not finite[bad]:
        raise ValueError(f"Got {name}.flat[{bad}]={shown}, beyond the float64 range; use "
                         "assert_within_bound for exact values")
    raise ValueError(f"Got {name}.flat[{bad}]={shown}, which is not a value of {fmt.name}"
                     + hint)


def result_codes(x: object, fmt: Format, name: str) -> np.ndarray:
    """Codes of what a kernel returned (any input :func:`as_array` takes), each a value of
    ``fmt`` (ValueError naming the first that is not)."""
    return read_codes(as_array(x, name, exact=True), fmt, name).codes
