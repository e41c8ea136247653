"""numerics.parse: values read exactly as written, codes, format lists.

References: :class:`decimal.Decimal` (exact decimal -> Fraction) and
:meth:`float.fromhex` for hex floats, both independent of the parser.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.formats import get_format
from numerics.parse import parse_code, parse_formats, parse_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.1", Fraction(1, 10)),
        ("1e-40", Fraction(1, 10**40)),
        ("-1e-40", -Fraction(1, 10**40)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("+2.5E3", Fraction(2500)),
        ("1_000_000", Fraction(10**6)),
        ("340282366920938463463374607431768211457", Fraction(2**128 + 1)),
        ("0x1.8p3", Fraction(12)),
        ("-0x.1p-2", -Fraction(1, 64)),
        ("0X10", Fraction(16)),
        ("0b1010", Fraction(10)),
        ("1/3", Fraction(1, 3)),
        ("-22/7", Fraction(-22, 7)),
        ("1e3/7", Fraction(1000, 7)),
        ("1/-3", Fraction(-1, 3)),
        ("1.00390625000000000000009", Fraction(Decimal("1.00390625000000000000009"))),
    ],
)
def test_values_are_exact(text: str, expected: Fraction) -> None:
    v = parse_value(text)
    assert v.kind == "finite"
    assert v.fraction == expected


def test_negative_zero_keeps_its_sign() -> None:
    v = parse_value("-0")
    assert v.negative and v.magnitude == 0
    assert isinstance(v.exact, float) and math.copysign(1.0, v.exact) == -1.0
    assert math.copysign(1.0, parse_value("0.0").exact) == 1.0
    assert math.copysign(1.0, parse_value("-0/5").exact) == -1.0


@pytest.mark.parametrize(("text", "kind", "negative"), [
    ("inf", "inf", False), ("-Infinity", "inf", True), ("+inf", "inf", False),
    ("nan", "nan", False), ("-NaN", "nan", True),
])
def test_specials(text: str, kind: str, negative: bool) -> None:
    v = parse_value(text)
    assert (v.kind, v.negative) == (kind, negative)
    x = v.exact
    assert isinstance(x, float)
    assert (math.isnan(x) if kind == "nan" else math.isinf(x))
    if kind == "inf":
        assert (x < 0) == negative
    with pytest.raises(ValueError, match="not a finite number"):
        _ = v.fraction


@pytest.mark.parametrize("text", [
    "", "-", "abc", "1e", "1..2", "0x", "0x1.8", "1/0", "1/", "/2", "0b102", "1e99999", "--1",
    "1 2", "infinite",
])
def test_bad_values_name_the_input(text: str) -> None:
    with pytest.raises(ValueError, match="value="):
        parse_value(text)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10**30), st.integers(0, 10**20), st.integers(-400, 400), st.booleans(),
    st.integers(0, 25),
)
def test_decimal_strings_match_decimal_module(i: int, f: int, e: int, neg: bool,
                                              zeros: int) -> None:
    text = f"{'-' if neg else ''}{i}.{'0' * zeros}{f}e{e}"
    assert parse_value(text).fraction == Fraction(Decimal(text))


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_hex_floats_match_float_fromhex(x: float) -> None:
    text = x.hex()
    v = parse_value(text)
    assert v.fraction == Fraction(float.fromhex(text))
    assert v.negative == (math.copysign(1.0, x) < 0)


@settings(max_examples=100, deadline=None)
@given(st.integers(-(10**40), 10**40), st.integers(1, 10**20))
def test_fractions(p: int, q: int) -> None:
    assert parse_value(f"{p}/{q}").fraction == Fraction(p, q)


def test_codes() -> None:
    e5m2 = get_format("e5m2")
    assert parse_code("0b0_01111_00", e5m2) == 0b00111100
    assert parse_code("0x7C", e5m2) == 124
    assert parse_code("255", e5m2) == 255
    assert parse_code("0x3f800000", get_format("fp32")) == 0x3F800000
    with pytest.raises(ValueError, match="at most 0xff"):
        parse_code("0x100", e5m2)
    with pytest.raises(ValueError, match="at most 0xf"):
        parse_code("16", get_format("e2m1fn"))
    for bad in ("-1", "0x", "0b2", "1.5", "x12", ""):
        with pytest.raises(ValueError, match="code="):
            parse_code(bad, e5m2)


def test_format_lists() -> None:
    assert [f.name for f in parse_formats("bf16,fp32 , e4m3fn,bf16")] == [
        "bfloat16", "binary32", "e4m3fn"]
    with pytest.raises(ValueError, match="did you mean"):
        parse_formats("e4m3fm")
    with pytest.raises(ValueError, match="names no format"):
        parse_formats(" , ")


def test_parse_code_takes_ascii_digits_only() -> None:
    """int() reads other scripts' digits; a code is ASCII, as parse_value's numbers are."""
    with pytest.raises(ValueError, match="not a code"):
        parse_code("\u0663", "e4m3fn")  # ARABIC-INDIC DIGIT THREE


def test_decimal_codes_may_carry_leading_zeros() -> None:
    # review: more than 20 characters was "too wide" before the zeros were stripped
    assert parse_code("0" * 20 + "1", get_format("binary32")) == 1
    assert parse_code("0" * 100, get_format("binary32")) == 0
    with pytest.raises(ValueError, match="codes have 32 bits"):
        parse_code("1" + "0" * 20, get_format("binary32"))


def test_saturation_is_seen_under_the_directed_roundings() -> None:
    # review: asking the format itself under overflow="ieee" missed the roundings that
    # overflow to max (rtz: 1e5 rounds to 98304 in binary16 with an unbounded exponent),
    # so 65504 was reported "rounded", not saturated, in formats with inf or NaN
    from numerics.inspection import inspect_value

    for fmt in ("binary16", "e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "binary8p3"):
        for rounding, x in (("rtz", "1e5"), ("rd", "1e5"), ("ru", "-1e5"), ("rto", "1e5")):
            e = inspect_value(x, fmt, rounding=rounding)
            assert abs(e.value) == get_format(fmt).max and e.saturated and not e.overflow, \
                (fmt, rounding)
    # 65520 rounds toward zero to max itself: no saturation
    assert not inspect_value("65520", "binary16", rounding="rtz").saturated
    assert inspect_value("1e5", "binary16").overflow  # rne: overflow to inf, as before
    # the formats one more exponent bit could not widen (binary64 would need 65 bits; no
    # trailing bits and an IEEE NaN cannot be had): the same rule (third audit)
    for fmt, x in (("binary64", "0x1p1024"), ("e8m0fnu", "0x1p128"), ("binary8p1", "0x1p63")):
        for rounding in ("rtz", "rd", "rto"):
            e = inspect_value(x, fmt, rounding=rounding)
            assert e.value == get_format(fmt).max and e.saturated, (fmt, rounding)
    e = inspect_value("-1e400", "binary64", rounding="ru")
    assert e.value == -get_format("binary64").max and e.saturated
    # a tie at max + half a step rounds to even: max (e4m3fn's 448 is even) or beyond
    assert not inspect_value("464", "e4m3fn", overflow="saturate").saturated
    assert inspect_value("464", "e4m3fn", rounding="rna", overflow="saturate").saturated


def test_fractions_beyond_4300_digits_are_shown() -> None:
    # review: the fraction text went through str(int), which stops at 4300 digits
    from numerics.inspection import decimal_text

    text = decimal_text(Fraction(1, 3 * 10**4300))
    assert text == "1/3" + "0" * 4300


def test_parse_code_takes_underscores_after_the_prefix_only() -> None:
    """'0_x10' read as 0x10 once: the underscores were dropped before the prefix was
    looked for."""
    for text in ("0x_10", "0x1_0", "0x10_", "0b1_0000", "1_6"):
        assert parse_code(text, "binary32") == 16, text
    for text in ("0_x10", "_0x10", "_16", "0_b10000", "0x_", "0x"):
        with pytest.raises(ValueError, match="not a code"):
            parse_code(text, "binary32")
