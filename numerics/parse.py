"""Exact parsing of values, codes and format lists as people type them.

A value string is taken *exactly as written*: ``"0.1"`` is the rational
``1/10``, never the binary64 number nearest to it, so that rounding it into a
format is a single rounding (``"1.00390625000000000000009"`` in bfloat16 is
``1.0078125``; going through binary64 first would give ``1.0``).

Accepted value syntax (case-insensitive, optional leading ``+``/``-``,
``_`` allowed between digits):

* decimals: ``0.1``, ``-1e-40``, ``.5``, ``1.``, ``6.02e23``, ``-0``
* integers of any size: ``340282366920938463463374607431768211456``
* hex floats as in C99 / :meth:`float.hex`: ``0x1.8p3``, ``-0x.1p-2``; a hex
  string without ``p`` is a hex integer (``0x10`` is 16)
* binary integers: ``0b1010``
* fractions of two such numbers: ``1/3``, ``-22/7``, ``1e3/7``
* ``inf``, ``infinity``, ``nan`` (with an optional sign)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from numerics.digits import text_to_int
from numerics.formats import Format, as_format, get_format

__all__ = [
    "MAX_EXPONENT_DIGITS",
    "ParsedValue",
    "parse_code",
    "parse_formats",
    "parse_value",
    "shown",
]

#: Largest decimal or binary exponent magnitude accepted in a value string. Every value
#: beyond ``10**+-10000`` overflows or underflows every supported format anyway.
MAX_EXPONENT_DIGITS = 10_000

_DIGITS = r"[0-9](?:_?[0-9])*"
_HEXDIGITS = r"[0-9a-f](?:_?[0-9a-f])*"
_DEC_RE = re.compile(
    rf"(?P<int>{_DIGITS})?(?:\.(?P<frac>{_DIGITS})?)?(?:e(?P<exp>[+-]?{_DIGITS}))?"
)
_HEX_RE = re.compile(
    rf"0x(?P<int>{_HEXDIGITS})?(?:\.(?P<frac>{_HEXDIGITS})?)?(?:p(?P<exp>[+-]?{_DIGITS}))?"
)
_BIN_RE = re.compile(r"0b(?P<int>[01](?:_?[01])*)")
_INF_NAMES = ("inf", "infinity")
_NAN_NAMES = ("nan",)

Kind = Literal["finite", "inf", "nan"]


@dataclass(frozen=True)
class ParsedValue:
    """A value read exactly from text.

    Attributes
    ----------
    text : str
        The string as given.
    kind : {"finite", "inf", "nan"}
        What the text denotes.
    negative : bool
        The sign as written (``"-0"`` and ``"-nan"`` are negative).
    magnitude : Fraction
        The exact absolute value (0 for ``inf`` and ``nan``).

    Examples
    --------
    >>> v = parse_value("-0")
    >>> v.kind, v.negative, v.exact
    ('finite', True, -0.0)
    >>> parse_value("0x1.8p3").exact
    Fraction(12, 1)
    """

    text: str
    kind: Kind
    negative: bool
    magnitude: Fraction

    @property
    def is_finite(self) -> bool:
        """Whether the value is a (possibly zero) finite number."""
        return self.kind == "finite"

    @property
    def fraction(self) -> Fraction:
        """The exact signed value; ValueError for ``inf`` and ``nan``."""
        if self.kind != "finite":
            raise ValueError(f"Got value={shown(self.text)}, which is {self.kind}, "
                             "not a finite number")
        return -self.magnitude if self.negative else self.magnitude

    @property
    def exact(self) -> Fraction | float:
        """The value in the form the exact encoders take.

        A Fraction for finite non-zero values; the floats ``0.0``/``-0.0`` for
        zero (so that its sign survives), ``+-inf`` and ``nan`` otherwise.
        """
        if self.kind == "nan":
            return float("-nan") if self.negative else float("nan")
        if self.kind == "inf":
            return float("-inf") if self.negative else float("inf")
        if self.magnitude == 0:
            return -0.0 if self.negative else 0.0
        return self.fraction


def _check_exponent(exp_text: str | None, text: str) -> int:
    if exp_text is None:
        return 0
    digits = exp_text.lstrip("+-").replace("_", "").lstrip("0")
    if len(digits) > len(str(MAX_EXPONENT_DIGITS)) or int(digits or "0") > MAX_EXPONENT_DIGITS:
        raise ValueError(
            f"Got value={shown(text)}, but its exponent is beyond +-{MAX_EXPONENT_DIGITS}, "
            "outside every format by far"
        )
    return int(exp_text.replace("_", ""))


def _parse_unsigned(body: str, text: str) -> Fraction | None:
    """Exact value of an unsigned number (no fraction bar), or None if malformed."""
    m = _HEX_RE.fullmatch(body)
    if m and (m["int"] or m["frac"]):
        int_part = (m["int"] or "").replace("_", "")
        frac_part = (m["frac"] or "").replace("_", "")
        if m["exp"] is None and "." in body:
            return None  # "0x1.8" is ambiguous without a binary exponent: refuse it
        mantissa = int(int_part + frac_part or "0", 16)
        exp2 = _check_exponent(m["exp"], text) - 4 * len(frac_part)
        return Fraction(mantissa) * Fraction(2) ** exp2
    m = _BIN_RE.fullmatch(body)
    if m:
        return Fraction(int(m["int"].replace("_", ""), 2))
    m = _DEC_RE.fullmatch(body)
    if m and (m["int"] or m["frac"]):
        int_part = (m["int"] or "").replace("_", "")
        frac_part = (m["frac"] or "").replace("_", "")
        exp10 = _check_exponent(m["exp"], text) - len(frac_part)
        mantissa = text_to_int(int_part + frac_part)
        return Fraction(mantissa) * Fraction(10) ** exp10
    return None


def parse_value(text: str) -> ParsedValue:
    """Read a number exactly, as written.

    Parameters
    ----------
    text : str
        A decimal, integer, hex float, binary integer, fraction ``a/b``,
        ``inf`` or ``nan`` (see the module docstring for the syntax).

    Returns
    -------
    ParsedValue
        The exact value with its sign (``-0`` keeps its sign).

    Raises
    ------
    ValueError
        If the text is not a number in that syntax, divides by zero, or has
        an exponent beyond ``+-MAX_EXPONENT_DIGITS``.

    Examples
    --------
    >>> parse_value("0.1").fraction
    Fraction(1, 10)
    >>> parse_value("-1/3").fraction
    Fraction(-1, 3)
    >>> parse_value("1e-40").fraction == Fraction(1, 10**40)
    True
    >>> parse_value("-inf").kind, parse_value("-inf").negative
    ('inf', True)
    """
    if not isinstance(text, str):
        raise TypeError(f"Got value={text!r}, expected a str")
    s = text.strip().lower()
    negative = s.startswith("-")
    if s[:1] in "+-" and s:
        s = s[1:]
    if s in _INF_NAMES:
        return ParsedValue(text, "inf", negative, Fraction(0))
    if s in _NAN_NAMES:
        return ParsedValue(text, "nan", negative, Fraction(0))
    if "/" in s:
        num_text, _, den_text = s.partition("/")
        den_negative = den_text.startswith("-")
        if den_text[:1] in "+-":
            den_text = den_text[1:]
        num = _parse_unsigned(num_text, text)
        den = _parse_unsigned(den_text, text)
        if num is None or den is None:
            raise ValueError(_bad_value(text))
        if den == 0:
            raise ValueError(f"Got value={shown(text)}, but its denominator is zero")
        return ParsedValue(text, "finite", negative != den_negative, num / den)
    mag = _parse_unsigned(s, text)
    if mag is None:
        raise ValueError(_bad_value(text))
    return ParsedValue(text, "finite", negative, mag)


def shown(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to its first 40 characters and its length beyond ``limit``: an
    error message quotes what was typed without echoing a 100,000-digit number.

    Examples
    --------
    >>> shown("0.1"), shown("9" * 1000)
    ("'0.1'", "'9999999999999999999999999999999999999999'... (1000 characters)")
    """
    return repr(text) if len(text) <= limit else f"{text[:40]!r}... ({len(text)} characters)"


def _bad_value(text: str) -> str:
    return (
        f"Got value={shown(text)}, which is not a number; expected e.g. 0.1, -1e-40, 12345, "
        "0x1.8p3, 1/3, inf or nan"
    )


def parse_code(text: str, fmt: Format | str) -> int:
    """Read a code of ``fmt`` written in hex, binary or decimal.

    Parameters
    ----------
    text : str
        ``0x3f800000``, ``0b0_01111_00`` (``_`` allowed anywhere after the
        prefix, or after the first digit of a decimal) or ``1065353216``.
    fmt : Format or str
        The format or its name; the code must fit in ``fmt.bits`` bits.

    Raises
    ------
    ValueError
        If the text is not a non-negative integer in one of those notations,
        or the code is too wide for the format.

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> parse_code("0b0_01111_00", get_format("e5m2"))
    60
    >>> parse_code("0x3f80", "bfloat16")
    16256
    """
    fmt = as_format(fmt)
    if not isinstance(text, str):
        raise TypeError(f"Got code={text!r}, expected a str")
    s = text.strip().lower()
    try:
        if not s.isascii():  # int() reads other scripts' digits; parse_value does not
            raise ValueError
        prefix = s[:2] if s.startswith(("0x", "0b")) else ""
        body = s[len(prefix):]
        if not prefix and body.startswith("_"):  # (a "_" follows the prefix or a digit)
            raise ValueError
        body = body.replace("_", "")
        if prefix:
            code = int(prefix + body, 0)  # (an empty body raises)
        elif body.isdigit() and len(body.lstrip("0")) <= 20:  # a code has at most 64 bits
            code = int(body.lstrip("0") or "0")
        elif body.isdigit():
            code = fmt.num_codes  # too wide for any format: reported below
        else:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"Got code={shown(text)}, which is not a code; expected hex (0x3f800000), "
            "binary (0b0_01111_00) or a non-negative decimal integer"
        ) from None
    if code >= fmt.num_codes:
        raise ValueError(
            f"Got code={shown(text)}, but {fmt.name} codes have {fmt.bits} bits "
            f"(at most {fmt.num_codes - 1:#x})"
        )
    return code


def parse_formats(text: str) -> tuple[Format, ...]:
    """Formats named in a comma-separated list, in order, without repeats.

    Raises
    ------
    ValueError
        For an empty list or an unknown name (the message suggests close names).

    Examples
    --------
    >>> [f.name for f in parse_formats("bf16, e4m3fn,fp32")]
    ['bfloat16', 'e4m3fn', 'binary32']
    """
    if not isinstance(text, str):
        raise TypeError(f"Got format={text!r}, expected a comma-separated str")
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError(f"Got format={text!r}, but it names no format")
    out: list[Format] = []
    for name in names:
        fmt = get_format(name)
        if fmt not in out:
            out.append(fmt)
    return tuple(out)
