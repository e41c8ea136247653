"""Exact scalar reference encoder and decoder.

This module is the slow, obviously-right definition of what every code means
and of what every rounding and overflow rule does.  It works on one value at
a time with Python integers and :class:`fractions.Fraction` only (no float
arithmetic is used to round), and it shares nothing with the vectorized fast
path in :mod:`numerics.kernels`; the tests pin the two together.

Rounding, step by step (:func:`encode_exact`)
---------------------------------------------
1. Let ``a = |x|`` exactly and ``e = floor(log2 a)``.
2. The quantum of ``a``'s binade is ``q = 2**(max(e, emin) - t)`` (the maximum
   with ``emin`` gives the subnormal quantum; formats without subnormals,
   e8m0fnu, have no values below ``2**emin`` and map them to the smallest
   code).
3. ``n = floor(a / q)`` is the truncated significand and ``r = a/q - n`` in
   ``[0, 1)`` the exact remainder, in quanta.
4. The rounding mode decides between ``n*q`` and ``(n+1)*q`` from ``r``, the
   sign, and, for ties to even and for round to odd, the parity of the *code*
   of ``n*q``.  For formats with trailing bits that is the parity of ``n``; for
   ``t = 0`` formats (e8m0fnu, binary8p1) it is the parity of the exponent
   field, as in gfloat (so 3.0 rounds to 2.0, code 128, in e8m0fnu).
5. Overflow is judged on that result, rounded as if the exponent were
   unbounded: a result above ``max`` overflows and the overflow rule decides.

Special cases
-------------
* NaN input gives the canonical NaN code, with the input's sign where the
  format has signed NaNs (IEEE-style and e4m3fn-style ``NaNEncoding.TOP``
  formats); FNUZ and P3109 formats have the single NaN ``0x80``.  A format
  without NaN raises ValueError (``nan="raise"``) or gives ``+0``
  (``nan="zero"``).
* Infinite input is exact, not an overflow of rounding: under
  ``overflow="ieee"`` it gives the infinity, else NaN, else (no inf, no NaN)
  ``+-max``, whatever the rounding mode.  Under ``"saturate"`` it gives
  ``+-max``.
* Zero keeps its sign where ``-0`` has a code; elsewhere it is ``+0``
  (negative underflow in FNUZ/P3109 formats also gives ``+0``).
* The unsigned e8m0fnu maps zero and negative values to NaN and positive
  values below ``2**-127`` to code 0 (``2**-127``) in every rounding mode.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from numerics.formats import Format, Infinity, NaNEncoding, as_format
from numerics.rounding import check_overflow, check_rounding, check_sr_options

__all__ = ["decode_exact", "encode_exact", "floor_log2"]

_NAN_POLICIES = ("raise", "zero")


def floor_log2(a: Fraction) -> int:
    """Exact ``floor(log2(a))`` of a positive rational.

    Examples
    --------
    >>> floor_log2(Fraction(3)), floor_log2(Fraction(1, 3)), floor_log2(Fraction(1, 4))
    (1, -2, -2)
    """
    if a <= 0:
        raise ValueError(f"Got a={a!r}, but floor_log2 needs a positive value")
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()
    # Now 2**(e-1) < a < 2**(e+1); settle which side of 2**e it is on.
    if (num < den << e) if e >= 0 else (num << -e < den):
        e -= 1
    return e


def _pow2(e: int) -> Fraction:
    return Fraction(2) ** e


def _check_code(code: object, fmt: Format) -> int:
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
        raise TypeError(f"Got code={code!r}, expected an int")
    code = int(code)
    if not 0 <= code < (1 << fmt.bits):
        raise ValueError(
            f"Got code={code}, but {fmt.name} codes lie in [0, {(1 << fmt.bits) - 1}]"
        )
    return code


def decode_exact(code: int, fmt: Format | str) -> Fraction | float:
    """Exact value of one code.

    Parameters
    ----------
    code : int
        The code, ``0 <= code < 2**fmt.bits``.
    fmt : Format or str
        The format.

    Returns
    -------
    Fraction or float
        A Fraction for finite non-zero values; the floats ``0.0``/``-0.0``
        for zeros (so the sign survives), ``inf``/``-inf`` and ``nan``.

    Examples
    --------
    >>> decode_exact(0x7E, "e4m3fn")   # 1.75 * 2**(15 - 7)
    Fraction(448, 1)
    >>> decode_exact(0x80, "e4m3fn"), decode_exact(0x80, "e4m3fnuz")
    (-0.0, nan)
    >>> decode_exact(0x01, "binary16")   # 2**(1 - 15 - 10)
    Fraction(1, 16777216)
    """
    fmt = as_format(fmt)
    code = _check_code(code, fmt)
    t, w = fmt.trailing_bits, fmt.exponent_bits
    sign_bit = (code >> (fmt.bits - 1)) & 1 if fmt.signed else 0
    mag = code & ((1 << (w + t)) - 1)
    field_e, trailing = mag >> t, mag & ((1 << t) - 1)
    all_ones = (1 << (w + t)) - 1

    # Specials, straight from the base fields.
    if fmt.nan is NaNEncoding.NEGATIVE_ZERO and sign_bit and mag == 0:
        return math.nan
    if fmt.nan is NaNEncoding.TOP and mag == all_ones:
        return math.nan
    if fmt.infinity is Infinity.TOP and mag == all_ones:
        return -math.inf if sign_bit else math.inf
    if fmt.infinity is Infinity.IEEE and field_e == (1 << w) - 1:
        if trailing == 0:
            return -math.inf if sign_bit else math.inf
        return math.nan

    if fmt.subnormals and field_e == 0:
        value = trailing * _pow2(1 - fmt.bias - t)
        if value == 0:
            return -0.0 if sign_bit else 0.0
    else:
        value = ((1 << t) + trailing) * _pow2(field_e - fmt.bias - t)
    return -value if sign_bit else value


def _nan_code(fmt: Format, negative: bool) -> int:
    """Canonical NaN code; the sign kept where NaNs are signed."""
    t, w = fmt.trailing_bits, fmt.exponent_bits
    sign = (1 << (fmt.bits - 1)) if (negative and fmt.signed) else 0
    if fmt.nan is NaNEncoding.IEEE:
        quiet = (1 << (t - 1)) if t else 0
        return sign | (((1 << w) - 1) << t) | quiet
    if fmt.nan is NaNEncoding.TOP:
        return sign | ((1 << (w + t)) - 1)
    if fmt.nan is NaNEncoding.NEGATIVE_ZERO:
        return 1 << (fmt.bits - 1)
    raise AssertionError("format has no NaN")  # pragma: no cover


def _inf_magnitude(fmt: Format) -> int | None:
    t, w = fmt.trailing_bits, fmt.exponent_bits
    if fmt.infinity is Infinity.IEEE:
        return ((1 << w) - 1) << t
    if fmt.infinity is Infinity.TOP:
        return (1 << (w + t)) - 1
    return None


def _max_magnitude_code(fmt: Format) -> int:
    t, w = fmt.trailing_bits, fmt.exponent_bits
    top = (1 << (w + t)) - 1
    if fmt.infinity is Infinity.IEEE:
        return (((1 << w) - 1) << t) - 1
    if fmt.infinity is Infinity.TOP or fmt.nan is NaNEncoding.TOP:
        return top - 1
    return top


def _code_of(n: int, k: int, fmt: Format) -> int:
    """Magnitude code of the value ``n * 2**k`` (``n >= 0``), where ``k`` is the quantum
    exponent of a binade (``k = max(e, emin) - t``).  Beyond ``max`` the codes keep
    counting as if the exponent field were unbounded, so they stay monotone."""
    t = fmt.trailing_bits
    if n == 0:
        return 0
    if n == (1 << (t + 1)):  # carried into the next binade: 2**(t+1) * 2**k == 2**t * 2**(k+1)
        n, k = 1 << t, k + 1
    if n < (1 << t):  # only in the subnormal binade of a format with subnormals
        return n
    return ((k + t + fmt.bias) << t) | (n - (1 << t))


def _to_fraction(value: object) -> Fraction | float:
    """Exact Fraction for finite input, the float itself for NaN/inf; TypeError otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Got value={value!r}, expected a real number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, np.timedelta64):  # (numpy makes it an np.integer)
        raise TypeError(f"Got value={value!r}, expected a real number, not a time span")
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return float(value)
        num, den = value.as_integer_ratio()
        return Fraction(num, den)
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if _is_ml_dtypes_scalar(value):  # bfloat16, float8_*, int4, ...: exact in binary64
        return _to_fraction(float(value))  # type: ignore[arg-type]
    raise TypeError(
        f"Got value={value!r} of type {type(value).__name__}, "
        "expected an int, float, Fraction or numpy scalar"
    )


def _is_ml_dtypes_scalar(value: object) -> bool:
    """An ml_dtypes scalar (a numpy scalar, but neither np.floating nor np.integer)."""
    return isinstance(value, np.generic) and \
        type(value).__module__.partition(".")[0] == "ml_dtypes"


def _is_negative(value: object, exact: Fraction | float) -> bool:
    if isinstance(exact, float):
        return math.copysign(1.0, exact) < 0
    if exact != 0:
        return exact < 0
    if isinstance(value, (float, np.floating)) or _is_ml_dtypes_scalar(value):
        return math.copysign(1.0, float(value)) < 0  # type: ignore[arg-type]
    return False


def _beyond_max(fmt: Format, sign: int, negative: bool, *, to_max: bool) -> int:
    """Code of a result beyond the largest finite value: ``+-max`` when ``to_max``,
    else infinity, else NaN, else (a format with neither) ``+-max``."""
    inf_mag = _inf_magnitude(fmt)
    if not to_max and inf_mag is not None:
        return sign | inf_mag
    if not to_max and fmt.has_nan:
        return _nan_code(fmt, negative)
    return sign | _max_magnitude_code(fmt)


def encode_exact(
    value: float | Fraction,
    fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    uniform: float | Fraction | None = None,
    sr_bits: int | None = None,
    nan: str = "raise",
) -> int:
    """Code of ``value`` rounded once, exactly, to ``fmt``.

    Parameters
    ----------
    value : int, float, Fraction or numpy scalar
        The exact input; float NaN and infinities are allowed, and the sign of
        a float ``-0.0`` is kept.
    fmt : Format or str
        Target format.
    rounding : {"rne", "rna", "rtz", "ru", "rd", "rto", "sr"}
        Rounding mode (see :mod:`numerics.rounding`).
    overflow : {"ieee", "saturate"}
        Overflow rule (see :mod:`numerics.rounding`).
    uniform : float or Fraction, optional
        Required for ``rounding="sr"``, refused with any other mode: the draw ``u``
        in ``[0, 1)``, taken exactly.  The value rounds away from zero iff
        ``u < frac`` where ``frac`` is the exact distance from the truncated value
        in quanta.
    sr_bits : int, optional
        An int in ``[1, 64]``, for ``rounding="sr"`` only: ``frac`` is first truncated
        to ``sr_bits`` bits: ``floor(frac * 2**k) / 2**k``; ``uniform`` is then
        expected to be a multiple of ``2**-k``.
    nan : {"raise", "zero"}
        What a NaN input becomes in a format without NaN.

    Returns
    -------
    int
        The code.

    Examples
    --------
    >>> hex(encode_exact(464, "e4m3fn")), hex(encode_exact(465, "e4m3fn"))
    ('0x7e', '0x7f')
    >>> hex(encode_exact(465, "e4m3fn", overflow="saturate"))
    '0x7e'
    >>> encode_exact(3.0, "e8m0fnu")   # tie between 2 (code 128) and 4 (129): even code
    128
    >>> encode_exact(Fraction(1, 3), "binary16", rounding="ru") - encode_exact(
    ...     Fraction(1, 3), "binary16", rounding="rd")
    1
    """
    fmt = as_format(fmt)
    check_rounding(rounding)
    check_overflow(overflow)
    if not isinstance(nan, str) or nan not in _NAN_POLICIES:
        raise ValueError(f"Got nan={nan!r}, but the only valid values are 'raise', 'zero'")
    sr_bits = check_sr_options(rounding, sr_bits)
    if rounding != "sr" and uniform is not None:
        raise ValueError(f"Got uniform={uniform!r} with rounding={rounding!r}; uniform only "
                         "applies to rounding='sr'")
    if rounding == "sr":
        if uniform is None:
            raise ValueError("Got uniform=None, but rounding='sr' needs a draw u in [0, 1)")
        if isinstance(uniform, (bool, np.bool_)) or not isinstance(
                uniform, (int, float, np.integer, np.floating, numbers.Rational)):
            raise TypeError(f"Got uniform={uniform!r}, expected a real number in [0, 1)")
        if not 0 <= uniform < 1:
            raise ValueError(f"Got uniform={uniform!r}, but it must lie in [0, 1)")

    exact = _to_fraction(value)
    negative = _is_negative(value, exact)
    sign = (1 << (fmt.bits - 1)) if (negative and fmt.signed) else 0
    max_mag = _max_magnitude_code(fmt)

    if isinstance(exact, float) and math.isnan(exact):
        if fmt.has_nan:
            return _nan_code(fmt, negative)
        if nan == "zero":
            return 0
        raise ValueError(f"Got value={value!r}, but format {fmt.name} has no NaN (nan='raise')")

    if not fmt.signed and (negative or exact == 0):
        # e8m0fnu: no zero, no negative numbers.
        return _nan_code(fmt, False)

    if isinstance(exact, float):  # an infinity: exact, not a rounding overflow
        return _beyond_max(fmt, sign, negative, to_max=overflow == "saturate")

    if exact == 0:
        return sign if fmt.has_negative_zero else 0

    a = abs(exact)
    t = fmt.trailing_bits
    emin = (1 if fmt.subnormals else 0) - fmt.bias
    e = floor_log2(a)
    if not fmt.subnormals and e < emin:
        return sign | 0  # below the smallest value of a format without zero
    # a / 2**k = n + rem / den exactly, with k the quantum exponent of a's binade.
    k = max(e, emin) - t
    num, den = a.numerator, a.denominator
    if k >= 0:
        den <<= k
    else:
        num <<= -k
    n, rem = divmod(num, den)
    lower_code_odd = bool(_code_of(n, k, fmt) & 1)

    if rem == 0:
        up = False
    elif rounding == "rne":
        up = 2 * rem > den or (2 * rem == den and lower_code_odd)
    elif rounding == "rna":
        up = 2 * rem >= den
    elif rounding == "rtz":
        up = False
    elif rounding == "ru":
        up = not negative
    elif rounding == "rd":
        up = negative
    elif rounding == "rto":
        up = not lower_code_odd
    else:  # "sr": frac = rem / den quanta, truncated to sr_bits bits when given
        frac = Fraction(rem, den)
        if sr_bits is not None:
            frac = Fraction((rem << sr_bits) // den, 1 << sr_bits)
        up = Fraction(uniform) < frac  # type: ignore[arg-type]

    mag = _code_of(n + 1 if up else n, k, fmt)

    if mag > max_mag:
        toward_zero = (
            rounding in ("rtz", "rto")
            or (rounding == "rd" and not negative)
            or (rounding == "ru" and negative)
        )
        return _beyond_max(fmt, sign, negative, to_max=overflow == "saturate" or toward_zero)

    if mag == 0 and fmt.subnormals:  # without subnormals, magnitude code 0 is 2**emin
        return sign if fmt.has_negative_zero else 0
    return sign | mag
