"""Anatomy of one stored value: fields, class, exact value, exact decimal and hex.

:func:`parts` rounds a value into a format (one rounding, with the exact
reference :func:`numerics.codec.encode_exact`) and takes the code apart;
:func:`parts_of_code` takes a code apart directly.  :func:`exact_decimal` and
:func:`hexfloat` write a dyadic rational out exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from numerics.codec import _check_code, _is_ml_dtypes_scalar, decode_exact, encode_exact, floor_log2
from numerics.digits import int_to_text
from numerics.encoding import _check_options
from numerics.formats import Format, as_format
from numerics.rounding import check_rng, sr_seed

__all__ = ["Kind", "Parts", "exact_decimal", "first_draw", "hexfloat", "parts", "parts_of_code"]

Kind = Literal["zero", "subnormal", "normal", "inf", "nan"]


@dataclass(frozen=True)
class Parts:
    """One code of a format, taken apart.

    Attributes
    ----------
    format : str
        The format's canonical name.
    code : int
        The code.
    sign : int
        Sign bit (0 for unsigned formats).
    exponent_field, trailing_field : int
        Biased exponent field and trailing significand ("mantissa") field.
    exponent : int or None
        Unbiased exponent (``emin`` for subnormals); None for zero, inf and NaN.
    kind : {"zero", "subnormal", "normal", "inf", "nan"}
        Class of the code.
    value : Fraction or None
        Exact value (``Fraction(0)`` for both zeros; None for inf and NaN).
    decimal : str
        Exact decimal expansion of the value (``"-0"`` for negative zero, ``"inf"``,
        ``"-inf"``, ``"nan"``).
    hex : str
        C99 hex-float string, normalized (``"0x1.99999ap-4"``, ``"0x0p+0"``,
        ``"-0x0p+0"``, ``"-inf"``, ``"nan"``).

    Examples
    --------
    >>> p = parts(0.1, "binary32")
    >>> p.kind, p.sign, p.exponent, p.exponent_field, hex(p.trailing_field), hex(p.code)
    ('normal', 0, -4, 123, '0x4ccccd', '0x3dcccccd')
    >>> p.decimal, p.hex
    ('0.100000001490116119384765625', '0x1.99999ap-4')
    """

    #: The format's canonical name.
    format: str
    #: The code, as an int.
    code: int
    #: Sign bit (0 for unsigned formats).
    sign: int
    #: Biased exponent field.
    exponent_field: int
    #: Trailing significand ("mantissa") field.
    trailing_field: int
    #: Unbiased exponent (``emin`` for subnormals); None for zero, inf and NaN.
    exponent: int | None
    #: Class of the code.
    kind: Kind
    #: Exact value (``0`` for both zeros; None for inf and NaN).
    value: Fraction | None
    #: Exact decimal expansion of the value (``"-0"`` for negative zero, ``"inf"``, ``"nan"``).
    decimal: str
    #: C99 hex-float string, normalized (``"0x1.99999ap-4"``, ``"0x0p+0"``, ``"-0x0p+0"``,
    #: ``"-inf"``, ``"nan"``).
    hex: str


def _decimal_digits(value: Fraction) -> int:
    """Number of decimal places of a terminating expansion; ValueError otherwise."""
    den = value.denominator
    twos = (den & -den).bit_length() - 1
    rest = den >> twos
    fives = 0
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        raise ValueError(
            f"Got value={value!r}, whose decimal expansion does not terminate"
        )
    return max(twos, fives)


def _plain(value: object) -> object:
    """An ml_dtypes scalar (bfloat16, float8_*, ...) as the Python float of its value,
    which holds it exactly; anything else as it is."""
    return float(value) if _is_ml_dtypes_scalar(value) else value  # type: ignore[arg-type]


def _special_text(value: object, name: str) -> str | None:
    """``"inf"``, ``"-inf"`` or ``"nan"`` for a non-finite float; None for a finite real;
    TypeError for anything that is not a real number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, Fraction, np.integer, np.floating)):
        raise TypeError(f"Got {name}={value!r} of type {type(value).__name__}, "
                        "expected an int, float or Fraction")
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("-inf" if value < 0 else "inf")
    return None


def _negative_zero(value: object) -> bool:
    """Whether ``value`` is a float ``-0.0`` (Python or numpy)."""
    return isinstance(value, (float, np.floating)) and value == 0 and bool(np.signbit(value))


def _rational(value: Fraction | int | float) -> Fraction:
    """The exact Fraction of a finite real (numpy scalars through Python ints and floats)."""
    if isinstance(value, np.integer):
        return Fraction(int(value))
    if isinstance(value, np.floating):
        return Fraction(float(value)) if value.dtype.itemsize <= 8 else Fraction(
            *value.as_integer_ratio())
    return Fraction(value)


def exact_decimal(value: Fraction | int | float) -> str:
    """Exact, complete decimal expansion of a rational with a terminating expansion.

    Every binary fraction terminates, so every finite float value has one; the
    non-finite floats give ``"inf"``, ``"-inf"`` and ``"nan"``, and a float ``-0.0``
    gives ``"-0"`` (a Fraction or int zero has no sign: ``"0"``).

    Parameters
    ----------
    value : Fraction, int, float, numpy or ml_dtypes scalar
        The value, taken exactly (bools are rejected).

    Returns
    -------
    str
        The expansion: an optional ``-``, the integer digits and, where the value is
        not an integer, ``.`` and every fraction digit (the last one non-zero).

    Raises
    ------
    ValueError
        If the denominator has a prime factor other than 2 and 5.
    TypeError
        If ``value`` is not a real number.

    Examples
    --------
    >>> exact_decimal(Fraction(1, 8)), exact_decimal(Fraction(-448)), exact_decimal(0)
    ('0.125', '-448', '0')
    >>> exact_decimal(Fraction(0.1))
    '0.1000000000000000055511151231257827021181583404541015625'
    >>> exact_decimal(float("-inf")), len(exact_decimal(Fraction(1, 10**5000)))
    ('-inf', 5002)
    >>> exact_decimal(-0.0), exact_decimal(Fraction(-0.0))
    ('-0', '0')
    """
    value = _plain(value)  # type: ignore[assignment]
    special = _special_text(value, "value")
    if special is not None:
        return special
    if _negative_zero(value):
        return "-0"
    value = _rational(value)
    digits = _decimal_digits(value)  # 10**digits * value is an integer
    scaled = value * 10**digits
    assert scaled.denominator == 1
    n = abs(scaled.numerator)
    sign = "-" if value < 0 else ""
    if digits == 0:
        return f"{sign}{int_to_text(n)}"
    text = int_to_text(n).rjust(digits + 1, "0")
    return f"{sign}{text[:-digits]}.{text[-digits:]}"


def hexfloat(value: Fraction | int | float) -> str:
    """Normalized C99 hex-float string of a dyadic rational (``printf("%a")`` style).

    The leading digit is 1 (``0x0p+0`` for zero, ``-0x0p+0`` for a float ``-0.0``
    as ``printf("%a", -0.0)`` writes it), trailing zero digits are dropped and the
    binary exponent is written in decimal with its sign; the non-finite floats give
    ``"inf"``, ``"-inf"`` and ``"nan"`` (as :meth:`float.hex` does).

    Parameters
    ----------
    value : Fraction, int, float, numpy or ml_dtypes scalar
        The value, taken exactly (bools are rejected).

    Returns
    -------
    str
        The hex-float text, e.g. ``"-0x1.8p+0"``.

    Raises
    ------
    ValueError
        If the denominator is not a power of two.
    TypeError
        If ``value`` is not a real number.

    Examples
    --------
    >>> hexfloat(Fraction(1)), hexfloat(Fraction(-3, 2)), hexfloat(0)
    ('0x1p+0', '-0x1.8p+0', '0x0p+0')
    >>> hexfloat(Fraction(0.1)) == (0.1).hex()
    True
    >>> hexfloat(float("-inf")), hexfloat(-0.0)
    ('-inf', '-0x0p+0')
    """
    value = _plain(value)  # type: ignore[assignment]
    special = _special_text(value, "value")
    if special is not None:
        return special
    if _negative_zero(value):
        return "-0x0p+0"
    value = _rational(value)
    if value == 0:
        return "0x0p+0"
    den = value.denominator
    if den & (den - 1):
        raise ValueError(f"Got value={value!r}, which is not a binary fraction")
    sign = "-" if value < 0 else ""
    a = abs(value)
    e = floor_log2(a)
    sig = a / Fraction(2) ** e  # in [1, 2)
    # The fraction bits in hex digits: frac = m / 2**b takes ceil(b / 4) of them, the
    # fewest that make it integral (so the last one is not 0).
    frac = sig - 1
    k = -(-(frac.denominator.bit_length() - 1) // 4)
    digits = f"{int(frac * 16**k):0{k}x}" if k else ""
    mant = f"1.{digits}" if digits else "1"
    return f"{sign}0x{mant}p{e:+d}"


def parts_of_code(code: int, fmt: Format | str) -> Parts:
    """Take one code of ``fmt`` apart.

    Parameters
    ----------
    code : int
        The code, ``0 <= code < 2**fmt.bits`` (a Python or numpy int; not a bool).
    fmt : Format or str
        The format (anything :func:`numerics.as_format` takes).

    Returns
    -------
    Parts
        The fields, class, exact value and its decimal and hex texts.

    Raises
    ------
    TypeError
        If ``code`` is not an int.
    ValueError
        If ``code`` is out of range.

    Examples
    --------
    >>> p = parts_of_code(0x7E, "e4m3fn")   # 1.110 * 2**(15 - 7) = 448
    >>> p.kind, p.exponent_field, p.trailing_field, p.exponent, p.value, p.hex
    ('normal', 15, 6, 8, Fraction(448, 1), '0x1.cp+8')
    >>> parts_of_code(0x80, "e4m3fn").decimal, parts_of_code(0x80, "e4m3fnuz").kind
    ('-0', 'nan')
    >>> parts_of_code(0x01, "e4m3fn").kind, parts_of_code(0x01, "e4m3fn").exponent
    ('subnormal', -6)
    """
    fmt = as_format(fmt)
    code = _check_code(code, fmt)
    t = fmt.trailing_bits
    sign = (code >> (fmt.bits - 1)) & 1 if fmt.signed else 0
    mag = code & fmt.magnitude_mask
    field_e, trailing = mag >> t, mag & ((1 << t) - 1)
    decoded = decode_exact(code, fmt)
    exponent: int | None
    if isinstance(decoded, float):
        if math.isnan(decoded):
            kind: Kind = "nan"
            text = "nan"
        elif decoded in (float("inf"), float("-inf")):
            kind = "inf"
            text = "-inf" if decoded < 0 else "inf"
        else:
            kind = "zero"
            text = "-0" if sign else "0"
        value = Fraction(0) if kind == "zero" else None
        hex_text = ("-0x0p+0" if sign else "0x0p+0") if kind == "zero" else text
        return Parts(format=fmt.name, code=code, sign=sign, exponent_field=field_e,
                     trailing_field=trailing, exponent=None, kind=kind, value=value,
                     decimal=text, hex=hex_text)
    if fmt.subnormals and field_e == 0:
        kind, exponent = "subnormal", fmt.emin
    else:
        kind, exponent = "normal", field_e - fmt.bias
    return Parts(format=fmt.name, code=code, sign=sign, exponent_field=field_e,
                 trailing_field=trailing, exponent=exponent, kind=kind, value=decoded,
                 decimal=exact_decimal(decoded), hex=hexfloat(decoded))



def first_draw(rng: object, sr_bits: int | None = None) -> Fraction:
    """The draw ``u`` in ``[0, 1)`` that stochastic rounding uses for a scalar (element 0
    of the stream of :mod:`numerics.kernels.random`) with the seed taken from ``rng``
    (None, an int, or a Generator, which gives one draw): ``sr_bits`` bits, 64 by
    default.  :func:`numerics.encode` of a scalar rounds with this draw.

    Parameters
    ----------
    rng : None, int or numpy.random.Generator
        The seed, as :func:`numerics.rounding.sr_seed` takes it (None: a fresh one).
    sr_bits : int, optional
        Bits per draw (1 to 64, not checked here); None: 64.

    Returns
    -------
    Fraction
        ``u / 2**sr_bits`` of the ``sr_bits``-bit integer draw ``u``.

    Examples
    --------
    >>> first_draw(3) == first_draw(3), 0 <= first_draw(3) < 1
    (True, True)
    >>> first_draw(3, 8).denominator <= 256
    True
    """
    from numerics.kernels.codec import draws  # numba: compiled on first use

    bits = 64 if sr_bits is None else sr_bits
    return Fraction(int(draws(np.uint64(sr_seed(rng)), 1, bits)[0]), 1 << bits)

def parts(
    x: float | Fraction,
    fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    nan: str = "raise",
    rng: object = None,
    sr_bits: int | None = None,
) -> Parts:
    """Round ``x`` once into ``fmt`` and take the resulting code apart.

    Parameters
    ----------
    x : int, float, Fraction or numpy scalar
        Taken exactly (Python ints of any size); strings are rejected.
    fmt : Format or str
        The format.
    rounding, overflow, nan : str
        As for :func:`numerics.encode`.
    rng : None, int or numpy.random.Generator
        Source of the draw for ``rounding="sr"``, checked in every mode as
        :func:`numerics.encode` checks it: the draw is the one ``encode`` makes for
        element 0 (its stream of :mod:`numerics.kernels.random`, seeded by
        :func:`numerics.rounding.sr_seed`), taken exactly as ``Fraction(u, 2**k)`` of the
        ``k``-bit integer ``u`` (``k = sr_bits``, or 64), so that
        ``parts(x, fmt, rounding="sr", rng=seed).code`` equals
        ``int(encode(x, fmt, rounding="sr", rng=seed))`` for a scalar ``x``.
    sr_bits : int, optional
        Random bits for ``rounding="sr"`` (1 to 64), as for :func:`numerics.encode`:
        ValueError outside that range or with another rounding.

    Returns
    -------
    Parts
        The code ``x`` rounds to, taken apart as by :func:`parts_of_code`.

    Examples
    --------
    >>> parts(1 + 2**-8 + 2**-40, "bf16").decimal
    '1.0078125'
    >>> parts(500, "e4m3fn", overflow="saturate").value
    Fraction(448, 1)
    >>> parts(2**-8, "e4m3fn").kind, parts(2**-10, "e4m3fn").decimal  # a tie: to even, 0
    ('subnormal', '0')
    """
    fmt = as_format(fmt)
    if rng is not None:  # (checked in every mode, as encode does)
        check_rng(rng)
    sr_bits = _check_options(rounding, overflow, sr_bits, nan)
    uniform = first_draw(rng, sr_bits) if rounding == "sr" else None
    code = encode_exact(x, fmt, rounding=rounding, overflow=overflow, uniform=uniform,
                        sr_bits=sr_bits, nan=nan)
    return parts_of_code(code, fmt)
