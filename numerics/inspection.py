"""What a value, a code or an integer becomes in a format: the facts behind ``fpinspect``.

Each function returns a frozen dataclass of exact results (Fractions, ints),
computed with the exact scalar codec (:mod:`numerics.codec`), so the
inspector never shows a number that went through binary64 on the way.

* :func:`inspect_value` -- one value in one format: code, bit fields, stored
  value, error against the input, ULP there, class, overflow/saturation.
* :func:`inspect_code` -- one code: fields, value, both neighbours, ULP.
* :func:`inspect_integer` -- an integer in uint32, int32 and float formats:
  exact or not, stored value, spacing of representable values there.
* :func:`code_table` -- every code of a small format with its value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from numerics.codec import decode_exact, encode_exact, floor_log2
from numerics.digits import int_to_text
from numerics.formats import Format, NaNEncoding, as_format, get_format
from numerics.parse import ParsedValue, parse_value
from numerics.parts import exact_decimal, first_draw
from numerics.rounding import check_overflow, check_rounding

__all__ = [
    "DEFAULT_VALUE_FORMATS",
    "INTEGER_FORMATS",
    "MAX_DIGITS",
    "CodeReport",
    "Encoded",
    "IntegerReport",
    "IntegerRow",
    "code_fields",
    "code_hex",
    "nan_kind",
    "code_table",
    "decimal_text",
    "scientific_text",
    "inspect_code",
    "inspect_integer",
    "inspect_value",
]

#: Formats shown by ``fpinspect VALUE`` when none are chosen.
DEFAULT_VALUE_FORMATS: tuple[str, ...] = (
    "binary64", "binary32", "tf32", "bfloat16", "binary16", "e5m2", "e4m3fn",
)
#: Types compared by :func:`inspect_integer`.
INTEGER_FORMATS: tuple[str, ...] = (
    "uint32", "int32", "binary32", "bfloat16", "binary16", "binary64",
)

Kind = Literal["zero", "subnormal", "normal", "inf", "nan"]
Exact = Fraction | float  # Fraction for finite non-zero values; floats for +-0, +-inf, nan


#: The most significant digits :func:`scientific_text` shows.
MAX_DIGITS = 10_000


def _real_number(value: object) -> Fraction | float | int:
    """``value`` (an int, float, Fraction or numpy real scalar) as an int, float or Fraction
    of the same value; TypeError naming ``value`` for anything else (bool, str, None, ...)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, Fraction, np.integer, np.floating)):
        raise TypeError(f"Got value={value!r} of type {type(value).__name__}, but it must be "
                        "a real number (int, float, Fraction or a numpy real scalar)")
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):  # a long double keeps its exact value
        return Fraction(*value.as_integer_ratio()) if np.isfinite(value) and value != 0 \
            else float(value)
    return value


def scientific_text(value: Fraction | float | int, digits: int = 4, *,
                    plus: bool = False) -> str:
    """``value`` rounded (to nearest, ties to even) to ``digits`` significant digits, exactly.

    Unlike formatting ``float(value)``, this never turns a value outside
    binary64's range into ``0``, ``-0`` or ``inf``: ``-1e-400`` stays ``-1e-400``.
    The layout is ``%g``'s: plain digits for decimal exponents from -4 to
    ``digits - 1``, scientific notation otherwise, trailing zeros dropped.

    ``value`` is an int, float, Fraction or numpy real scalar; ``digits`` an int in
    ``[1, MAX_DIGITS]`` (10,000); ``plus`` (True or False) writes ``+`` before
    positive values.  Anything else raises TypeError (a wrong type) or ValueError
    (``digits`` out of range).

    Examples
    --------
    >>> scientific_text(Fraction(-1, 10**400)), scientific_text(Fraction(2, 3), 3)
    ('-1e-400', '0.667')
    >>> scientific_text(Fraction(5, 10**5000), plus=True), scientific_text(448)
    ('+5e-5000', '448')
    >>> scientific_text(123456), scientific_text(Fraction(1, 10**5))
    ('1.235e+05', '1e-05')
    >>> scientific_text(0.0), scientific_text(-0.0), scientific_text(float("inf"))
    ('0', '-0', 'inf')
    """
    value = _real_number(value)
    if isinstance(digits, (bool, np.bool_)) or not isinstance(digits, (int, np.integer)):
        raise TypeError(f"Got {digits=!r}, but it must be an int in [1, {MAX_DIGITS}]")
    if not 1 <= digits <= MAX_DIGITS:
        raise ValueError(f"Got {digits=!r}, but it must be an int in [1, {MAX_DIGITS}]")
    digits = int(digits)
    if not isinstance(plus, (bool, np.bool_)):
        raise TypeError(f"Got {plus=!r}, expected True or False")
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0:
            text = decimal_text(value)
            return "+" + text if plus and not text.startswith(("-", "n")) else text
    v = Fraction(value)
    sign = "-" if v < 0 else ("+" if plus else "")
    if v == 0:
        return sign + "0"
    a = abs(v)
    # e = floor(log10(a)), from the bit lengths, then corrected by at most one step each way.
    e = (a.numerator.bit_length() - a.denominator.bit_length()) * 30103 // 100000
    while Fraction(10) ** e > a:
        e -= 1
    while Fraction(10) ** (e + 1) <= a:
        e += 1
    scaled = a / Fraction(10) ** (e - digits + 1)  # in [10**(digits-1), 10**digits)
    n = round(scaled)  # Fraction.__round__: ties to even
    if n == 10**digits:
        n, e = n // 10, e + 1
    mantissa = int_to_text(n)
    if -4 <= e < digits:
        if e >= digits - 1:
            text = mantissa + "0" * (e - digits + 1)
        elif e >= 0:
            text = mantissa[:e + 1] + "." + mantissa[e + 1:]
        else:
            text = "0." + "0" * (-e - 1) + mantissa
        text = text.rstrip("0").rstrip(".") if "." in text else text
    else:
        head, tail = mantissa[0], mantissa[1:].rstrip("0")
        text = f"{head}.{tail}e{e:+03d}" if tail else f"{head}e{e:+03d}"
    return sign + text


def decimal_text(value: Fraction | float) -> str:
    """Exact decimal text of a value: ``"-0"``, ``"inf"``, ``"nan"``, or ``p/q`` if it does not
    terminate.

    Examples
    --------
    >>> decimal_text(Fraction(1, 10)), decimal_text(Fraction(-3, 8)), decimal_text(Fraction(1, 3))
    ('0.1', '-0.375', '1/3')
    >>> decimal_text(-0.0), decimal_text(float("-inf")), decimal_text(2.0**-3)
    ('-0', '-inf', '0.125')
    """
    value = _real_number(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "-inf" if value < 0 else "inf"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0"
    v = Fraction(value)
    try:
        return exact_decimal(v)
    except ValueError:  # not a terminating decimal (int_to_text: no 4300-digit limit)
        return f"{int_to_text(v.numerator)}/{int_to_text(v.denominator)}"


def _kind(code: int, fmt: Format) -> Kind:
    if fmt.is_nan_code(code):
        return "nan"
    if fmt.is_inf_code(code):
        return "inf"
    mag = code & fmt.magnitude_mask
    if fmt.subnormals and mag >> fmt.trailing_bits == 0:
        return "zero" if mag == 0 else "subnormal"
    return "normal"


def _fields(code: int, fmt: Format) -> tuple[int | None, int, int]:
    t = fmt.trailing_bits
    sign = (code >> (fmt.bits - 1)) & 1 if fmt.signed else None
    mag = code & fmt.magnitude_mask
    return sign, mag >> t, mag & ((1 << t) - 1)


def _is_finite(v: Exact) -> bool:
    return isinstance(v, Fraction) or math.isfinite(v)


def _ulp_exact(v: Exact, fmt: Format) -> Fraction | None:
    """Quantum of the binade of a finite value in ``fmt`` (exact), None otherwise."""
    if not _is_finite(v):
        return None
    a = abs(Fraction(v))
    e = floor_log2(a) if a else fmt.emin
    return Fraction(2) ** (max(e, fmt.emin) - fmt.trailing_bits)


@dataclass(frozen=True)
class Encoded:
    """One value rounded into one format.

    Attributes
    ----------
    format : Format
    input : Fraction or float
        The exact input (floats only for ``+-0``, ``+-inf``, ``nan``).
    code : int
        The code stored.
    sign : int or None
        The sign bit (None for unsigned formats).
    exponent_field, trailing_field : int
        The raw exponent and trailing-significand fields.
    value : Fraction or float
        The stored value, exactly (floats only for ``+-0``, ``+-inf``, ``nan``).
    kind : {"zero", "subnormal", "normal", "inf", "nan"}
    abs_error : Fraction or None
        ``stored - input``; None when either is not finite.
    rel_error : Fraction or None
        ``(stored - input) / |input|``; None when that is undefined (zero input).
    ulp : Fraction or None
        The quantum of the stored value's binade (None for inf and NaN).
    overflow : bool
        A finite input became inf or NaN.
    saturated : bool
        The input lies beyond the range (it would round above ``max``, or is
        infinite) and was clamped to ``+-max``.
    flushed : bool
        A non-zero finite input became zero.
    """

    format: Format
    input: Exact
    code: int
    sign: int | None
    exponent_field: int
    trailing_field: int
    value: Exact
    kind: Kind
    abs_error: Fraction | None
    rel_error: Fraction | None
    ulp: Fraction | None
    overflow: bool
    saturated: bool
    flushed: bool

    @property
    def exact(self) -> bool:
        """Whether the stored value is the input (NaN for NaN and the same infinity count)."""
        if self.abs_error is not None:
            return self.abs_error == 0
        x, v = self.input, self.value
        if isinstance(x, Fraction) or isinstance(v, Fraction):
            return False
        return (math.isnan(x) and math.isnan(v)) or x == v

    @property
    def hex(self) -> str:
        """The code in hex, zero-padded to the format's width (:func:`code_hex`)."""
        return code_hex(self.code, self.format)

    @property
    def bit_string(self) -> tuple[str, str, str]:
        """The sign, exponent and trailing fields as binary strings (sign '' if unsigned;
        :func:`code_fields`)."""
        return code_fields(self.code, self.format)


def code_hex(code: int, fmt: Format) -> str:
    """``code`` in hex, zero-padded to the width of ``fmt``'s codes.

    Parameters
    ----------
    code : int
        A code of ``fmt`` (not checked).
    fmt : Format
        Its format.

    Returns
    -------
    str
        ``0x`` and ``ceil(bits / 4)`` hex digits.

    Examples
    --------
    >>> code_hex(0x7E, as_format("e4m3fn")), code_hex(1, as_format("e2m1fn"))
    ('0x7e', '0x1')
    """
    return f"{code:#0{2 + (fmt.bits + 3) // 4}x}"


def nan_kind(code: int, fmt: Format) -> str | None:
    """``"quiet"`` or ``"signalling"`` for a NaN code of a format with IEEE NaNs (the top
    trailing bit set: quiet, IEEE 754-2019 6.2.1); None for any other code, and for the
    one NaN of the other formats (fn, fnuz, P3109, e8m0fnu), which is neither.

    Parameters
    ----------
    code : int
        A code of ``fmt`` (not checked).
    fmt : Format
        Its format.

    Returns
    -------
    str or None
        The kind of NaN, as above.

    Examples
    --------
    >>> f32 = as_format("binary32")
    >>> nan_kind(0x7FC00000, f32), nan_kind(0xFF800001, f32), nan_kind(0x7F800000, f32)
    ('quiet', 'signalling', None)
    >>> nan_kind(0x7F, as_format("e4m3fn")) is None
    True
    """
    t = fmt.trailing_bits
    if fmt.nan is not NaNEncoding.IEEE or not fmt.has_nan or t == 0:
        return None
    mag = code & fmt.magnitude_mask
    if mag >> t != (1 << fmt.exponent_bits) - 1 or mag & ((1 << t) - 1) == 0:
        return None
    return "quiet" if mag >> (t - 1) & 1 else "signalling"


def code_fields(code: int, fmt: Format) -> tuple[str, str, str]:
    """The sign, exponent and trailing fields of ``code`` as binary strings.

    Parameters
    ----------
    code : int
        A code of ``fmt`` (not checked).
    fmt : Format
        Its format.

    Returns
    -------
    tuple of str
        ``(sign, exponent, trailing)``, each zero-padded to its field's width; the sign
        is ``""`` in an unsigned format, the trailing field ``""`` when it has no bits.

    Examples
    --------
    >>> code_fields(0x7E, as_format("e4m3fn"))
    ('0', '1111', '110')
    >>> code_fields(0x7F, as_format("e8m0fnu"))
    ('', '01111111', '')
    """
    t = fmt.trailing_bits
    sign = str((code >> (fmt.bits - 1)) & 1) if fmt.signed else ""
    mag = code & fmt.magnitude_mask
    exp = format(mag >> t, f"0{fmt.exponent_bits}b")
    trail = format(mag & ((1 << t) - 1), f"0{t}b") if t else ""
    return sign, exp, trail


def _unbounded_beyond_max(x: Fraction, fmt: Format, rounding: str,
                          uniform: Fraction | None) -> bool:
    """Whether ``|x|`` rounds above ``max`` when the exponent range is unbounded above.

    Every binade of a format holds the same ``p``-bit grid, so rounding ``x`` with an
    unbounded exponent range is ``2**k`` times rounding ``x / 2**k`` in the format's
    lowest normal binade, ``[2**emin, 2**(emin + 1))`` (the same draw for ``sr``; the
    result may reach ``2**(emin + 1)``, a value too).  (Asking the format itself under
    overflow="ieee" misses the directed roundings that stop at max, such as rtz: 1e5 in
    binary16 rounds to 98304 > max.)"""
    if abs(x) <= fmt.max_exact or (x < 0 and not fmt.signed):
        return False
    k = floor_log2(abs(x)) - fmt.emin
    scaled = x / Fraction(2) ** k
    v = decode_exact(encode_exact(scaled, fmt, rounding=rounding, uniform=uniform), fmt)
    return not _is_finite(v) or abs(Fraction(v)) * Fraction(2) ** k > fmt.max_exact


def _encoded(x: Exact, code: int, fmt: Format, beyond: bool) -> Encoded:
    v = decode_exact(code, fmt)
    kind = _kind(code, fmt)
    x_finite = _is_finite(x)
    abs_err = rel_err = None
    if x_finite and _is_finite(v):
        abs_err = Fraction(v) - Fraction(x)
        if x != 0:
            rel_err = abs_err / abs(Fraction(x))
    stored_max = _is_finite(v) and abs(Fraction(v)) == fmt.max_exact
    sign, e_field, t_field = _fields(code, fmt)
    return Encoded(
        format=fmt, input=x, code=code, sign=sign, exponent_field=e_field, trailing_field=t_field,
        value=v, kind=kind, abs_error=abs_err, rel_error=rel_err, ulp=_ulp_exact(v, fmt),
        overflow=x_finite and not _is_finite(v) and beyond,
        saturated=stored_max and (beyond or (not x_finite and not math.isnan(x))),
        flushed=x_finite and x != 0 and kind == "zero",
    )


def inspect_value(
    value: ParsedValue | str,
    fmt: Format | str,
    *,
    rounding: str = "rne",
    overflow: str = "ieee",
    seed: int | None = 0,
) -> Encoded:
    """Round one exact value into ``fmt`` and describe the result.

    Parameters
    ----------
    value : ParsedValue or str
        The input, taken exactly (a string is read with :func:`parse_value`).
    fmt : Format or str
    rounding, overflow : str
        As in :func:`numerics.codec.encode_exact`.
    seed : int or None
        Seed of the draw used by ``rounding="sr"``: None (fresh entropy) or an int
        ``>= 0``, the draw :func:`numerics.encode` makes for a scalar with ``rng=seed``
        (:func:`numerics.parts.first_draw`).

    Raises
    ------
    TypeError
        For a ``value`` that is neither a str nor a ParsedValue (give a number as
        text, ``"0.1"``, so that its exact value is the one written), or a ``seed``
        that is not None or an int.
    ValueError
        For a bad value, rounding or overflow name, a negative seed, or NaN into a
        format without NaN.

    Examples
    --------
    >>> r = inspect_value("448", "e4m3fn")
    >>> hex(r.code), r.kind, r.abs_error
    ('0x7e', 'normal', Fraction(0, 1))
    >>> r = inspect_value("500", "e4m3fn", overflow="saturate")
    >>> r.value, r.saturated, r.abs_error
    (Fraction(448, 1), True, Fraction(-52, 1))
    >>> inspect_value("500", "e4m3fn").kind, inspect_value("500", "e4m3fn").overflow
    ('nan', True)
    """
    fmt = as_format(fmt)
    check_rounding(rounding)
    check_overflow(overflow)
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"Got {seed=!r}, but it must be None or an int >= 0")
    if seed is not None and seed < 0:
        raise ValueError(f"Got {seed=!r}, but it must be None or an int >= 0")
    if not isinstance(value, (str, ParsedValue)):
        raise TypeError(f"Got value={value!r} of type {type(value).__name__}, but it must be "
                        "a str (read exactly as written) or a ParsedValue")
    pv = parse_value(value) if isinstance(value, str) else value
    x = pv.exact
    uniform = first_draw(seed) if rounding == "sr" else None
    try:
        code = encode_exact(x, fmt, rounding=rounding, overflow=overflow, uniform=uniform)
    except ValueError:
        raise ValueError(
            f"Got value={pv.text!r}, but format {fmt.name} has no NaN to store it in"
        ) from None
    beyond = isinstance(x, Fraction) and _unbounded_beyond_max(x, fmt, rounding, uniform)
    return _encoded(x, code, fmt, beyond)


@dataclass(frozen=True)
class CodeReport:
    """One code, decoded, with its neighbours.

    ``below``/``above`` are the neighbouring values' codes (None at the ends
    of the line of values and for NaN); ``ulp`` is the quantum of the value's
    binade.
    """

    encoded: Encoded
    below: Encoded | None
    above: Encoded | None


def inspect_code(code: int, fmt: Format | str) -> CodeReport:
    """Decode one code and find its neighbours.

    Examples
    --------
    >>> r = inspect_code(0x3F80, "bfloat16")
    >>> r.encoded.value, r.below.value, r.above.value
    (Fraction(1, 1), Fraction(255, 256), Fraction(129, 128))
    >>> hex(r.below.code), hex(r.above.code)
    ('0x3f7f', '0x3f81')
    """
    fmt = as_format(fmt)
    v = decode_exact(code, fmt)
    here = _encoded(v, code, fmt, False)
    if here.kind == "nan":
        return CodeReport(here, None, None)
    below, above = (_neighbour(v, fmt, up) for up in (False, True))
    return CodeReport(here, *(None if c is None else _encoded(decode_exact(c, fmt), c, fmt, False)
                              for c in (below, above)))


def _neighbour(v: Fraction | float, fmt: Format, up: bool) -> int | None:
    """The code of the next value above (``up``) or below the non-NaN value ``v`` of
    ``fmt``, or None where there is none (beyond an infinity or ``max`` without one).

    Exact, with no kernel (``fpinspect bits`` compiles nothing): ``v`` moved by half the
    format's least spacing, ``2**(emin - t - 1)``, lies strictly between ``v`` and its
    neighbour, so rounding it up (down) gives the neighbour.  In a signed format without
    zero, ``-2**emin`` and ``2**emin`` are neighbours, which that rounding cannot reach
    (it rounds the values between them back to ``v``: :func:`numerics.ulp.next_up`'s
    rule, which a test checks on every code)."""
    if isinstance(v, float) and math.isinf(v):
        if (v > 0) == up:
            return None
        return encode_exact(fmt.max_exact if v > 0 else -fmt.max_exact, fmt)
    x = Fraction(v)
    half = Fraction(2) ** (fmt.emin - fmt.trailing_bits - 1)
    code = encode_exact(x + half if up else x - half, fmt, rounding="ru" if up else "rd")
    w = decode_exact(code, fmt)
    if w == x and fmt.signed and not fmt.has_zero and (x < 0) == up:
        return encode_exact(-x, fmt)  # across the gap around zero: -2**emin <-> 2**emin
    return None if w == x or (isinstance(w, float) and math.isnan(w)) else code


@dataclass(frozen=True)
class IntegerRow:
    """How one integer fares in one type.

    Attributes
    ----------
    type : str
        ``"uint32"``, ``"int32"`` or a float format's name.
    exact : bool
        Whether the type holds the integer exactly.
    stored : int or None
        The value stored (None when it does not fit: out of range, or
        overflow to infinity).
    spacing : int or Fraction or None
        Distance between consecutive representable values around the integer
        (1 for integer types; the ULP of its binade for floats).
    contiguous_limit : int
        Every integer of magnitude up to this is exact in the type.
    note : str
        "exact", "rounded", "out of range" or "overflow".
    """

    type: str
    exact: bool
    stored: int | None
    spacing: int | Fraction | None
    contiguous_limit: int
    note: str


@dataclass(frozen=True)
class IntegerReport:
    """An integer and its rows, one per type."""

    value: int
    rows: tuple[IntegerRow, ...]


def inspect_integer(n: int, types: tuple[str, ...] = INTEGER_FORMATS) -> IntegerReport:
    """How integer ``n`` is stored in integer and float types.

    Examples
    --------
    >>> rows = {r.type: r for r in inspect_integer(16777217).rows}
    >>> rows["binary32"].stored, rows["binary32"].spacing, rows["binary32"].exact
    (16777216, 2, False)
    >>> rows["int32"].exact, rows["binary16"].note
    (True, 'overflow')
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"Got n={n!r}, expected an int")
    rows: list[IntegerRow] = []
    for name in types:
        if name in ("uint32", "int32"):
            lo, hi = (0, 2**32 - 1) if name == "uint32" else (-(2**31), 2**31 - 1)
            fits = lo <= n <= hi
            rows.append(IntegerRow(name, fits, n if fits else None, 1 if fits else None,
                                   hi, "exact" if fits else "out of range"))
            continue
        fmt = get_format(name)
        code = encode_exact(n, fmt)
        v = decode_exact(code, fmt)
        limit = 2**fmt.precision
        if not _is_finite(v):
            rows.append(IntegerRow(fmt.name, False, None, None, limit, "overflow"))
            continue
        stored = int(Fraction(v))
        spacing = _ulp_exact(Fraction(n), fmt)
        assert spacing is not None
        rows.append(IntegerRow(fmt.name, stored == n, stored,
                               int(spacing) if spacing.denominator == 1 else spacing, limit,
                               "exact" if stored == n else "rounded"))
    return IntegerReport(n, tuple(rows))


def code_table(fmt: Format | str) -> list[tuple[int, Exact]]:
    """Every code of a format of at most 8 bits with its exact value.

    Raises
    ------
    ValueError
        For formats wider than 8 bits (65,536 rows help nobody).

    Examples
    --------
    >>> [str(v) for _, v in code_table("e2m1fn")[:8]]
    ['0.0', '1/2', '1', '3/2', '2', '3', '4', '6']
    """
    fmt = as_format(fmt)
    if fmt.bits > 8:
        raise ValueError(
            f"Got format={fmt.name!r} with {fmt.bits} bits, but tables are for formats "
            "of at most 8 bits"
        )
    return [(c, decode_exact(c, fmt)) for c in range(fmt.num_codes)]

