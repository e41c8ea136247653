"""ulp / next_up / next_down / ulp_distance / ordinal and parts, against independent oracles:
the sorted list of every value of a format (built here from the bit layout), numpy's
spacing / nextafter / bit views, Python's Decimal and float.hex."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_core import ALL_FORMATS, magnitude_values

import numerics
from numerics.formats import Format
from numerics.parts import exact_decimal, hexfloat, parts, parts_of_code
from numerics.ulp import next_down, next_up, ordinal, ulp, ulp_distance

SMALL = [f for f in ALL_FORMATS if f.bits <= 16]
#: Formats whose smallest normal exponent lies below binary64's -1022: their values
#: reach into float64's subnormals, with and without subnormals of their own.
DEEP = [Format(name="deep", exponent_bits=4, trailing_bits=2, bias=1070),
        Format(name="deep_nosub", exponent_bits=4, trailing_bits=3, bias=1030,
               subnormals=False),
        Format(name="deep_sub6", exponent_bits=5, trailing_bits=6, bias=1050),
        Format(name="nosub_1023", exponent_bits=11, trailing_bits=1, bias=1023,
               subnormals=False),
        # either side of the next_up/next_down kernel's narrow loop (emin - t >= -1022:
        # the smallest subnormal is binary64's smallest normal, or half of it)
        Format(name="edge_narrow", exponent_bits=4, trailing_bits=2, bias=1021),
        Format(name="edge_deep", exponent_bits=4, trailing_bits=2, bias=1022)]


def line_of_values(fmt: Format) -> list[float]:
    """Every finite value of the format, ascending, each once (zero once)."""
    mags = [float(v) for v in magnitude_values(fmt)[:-1]]
    if not fmt.signed:
        return mags
    return [-m for m in reversed(mags) if m != 0] + mags


@pytest.mark.parametrize("fmt", SMALL + DEEP, ids=lambda f: f.name)
def test_neighbours_and_distances_match_the_sorted_line(fmt: Format) -> None:
    line = np.array(line_of_values(fmt))
    beyond = math.inf if fmt.has_infinity else math.nan
    want_up = np.append(line[1:], beyond)
    want_down = np.insert(line[:-1], 0, -beyond if fmt.signed else math.nan)
    got_up, got_down = next_up(line, fmt), next_down(line, fmt)
    np.testing.assert_array_equal(got_up, want_up)
    np.testing.assert_array_equal(got_down, want_down)
    # ulp_distance from the smallest value is the index on the line.
    d = ulp_distance(line[0], line, fmt)
    assert d.dtype == np.uint64
    assert np.array_equal(d, np.arange(line.size, dtype=np.uint64))
    # ulp: the spacing to the next larger value for positive values below max.
    pos = line[(line > 0)]
    spacing = np.diff(np.append(pos, np.nan))[:-1]
    np.testing.assert_array_equal(ulp(pos[:-1], fmt), spacing)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_zeros_and_infinities(fmt: Format) -> None:
    if not fmt.signed:
        return
    s = fmt.smallest_subnormal
    assert float(next_up(-0.0, fmt)) == s and float(next_up(0.0, fmt)) == s
    assert float(next_down(0.0, fmt)) == -s and float(next_down(-0.0, fmt)) == -s
    z = next_up(-s, fmt)
    assert z == 0 and math.copysign(1, z) == (-1 if fmt.has_negative_zero else 1)
    z = next_down(s, fmt)
    assert z == 0 and math.copysign(1, z) == 1
    assert int(ulp_distance(-0.0, 0.0, fmt)) == 0
    assert int(ulp_distance(-s, s, fmt)) == 2
    assert float(ulp(0.0, fmt)) == s
    if fmt.has_infinity:
        assert float(next_up(-math.inf, fmt)) == -fmt.max
        assert float(next_down(math.inf, fmt)) == fmt.max
        assert float(next_up(math.inf, fmt)) == math.inf
        assert int(ulp_distance(fmt.max, math.inf, fmt)) == 1
    assert math.isnan(next_up(math.nan, fmt)) if fmt.has_nan else True


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_against_numpy_nextafter_and_spacing(dtype: Any) -> None:
    name = {np.float16: "binary16", np.float32: "binary32", np.float64: "binary64"}[dtype]
    rng = np.random.default_rng(11)
    width = np.dtype(dtype).itemsize * 8
    bits = rng.integers(0, 2**width, size=20_000, dtype=np.uint64).astype(f"u{width // 8}")
    x: np.ndarray = bits.view(dtype)
    x = x[np.isfinite(x)]
    info = np.finfo(dtype)
    with np.errstate(over="ignore"):
        want_up = np.nextafter(x, dtype(np.inf)).astype(np.float64)
        want_down = np.nextafter(x, dtype(-np.inf)).astype(np.float64)
    x64 = x.astype(np.float64)
    # numpy steps -0 -> smallest subnormal and keeps sign conventions of IEEE nextUp.
    np.testing.assert_array_equal(next_up(x64, name), want_up)
    np.testing.assert_array_equal(next_down(x64, name), want_down)
    np.testing.assert_array_equal(ulp(x64, name), np.abs(np.spacing(np.abs(x))).astype(np.float64))
    assert float(next_up(float(info.max), name)) == math.inf


def float_ordinal(x: float, dtype: Any) -> int:
    """Signed position on the line from the bit pattern, with Python ints."""
    width = np.dtype(dtype).itemsize * 8
    b = int(np.array([x], dtype=dtype).view(f"u{width // 8}")[0])
    mag = b & ((1 << (width - 1)) - 1)
    return -mag if b >> (width - 1) else mag


@settings(max_examples=300, deadline=None)
@given(a=st.floats(allow_nan=False), b=st.floats(allow_nan=False))
def test_ulp_distance_binary64_never_wraps(a: float, b: float) -> None:
    want = abs(float_ordinal(a, np.float64) - float_ordinal(b, np.float64))
    assert int(ulp_distance(a, b, "binary64")) == want


def test_ulp_distance_extremes() -> None:
    m = float(np.finfo(np.float64).max)
    assert int(ulp_distance(-m, m, "binary64")) == 2**64 - 2**53 - 2
    assert int(ulp_distance(-math.inf, math.inf, "binary64")) == 2**64 - 2**53
    assert int(ulp_distance(-448.0, 448.0, "e4m3fn")) == 2 * 126
    assert int(ulp_distance(2.0**-127, 2.0**127, "e8m0fnu")) == 254
    d = ulp_distance(np.array([1.0, 2.0]), np.array([[1.0], [1.5]]), "bf16")
    assert d.tolist() == [[0, 128], [64, 64]]


def test_ordinal() -> None:
    assert ordinal(np.arange(0x7F, dtype=np.uint8), "e4m3fn").tolist() == list(range(0x7F))
    assert ordinal(np.array([0x80, 0x81, 0xFE], np.uint8), "e4m3fn").tolist() == [0, -1, -126]
    assert int(ordinal(0xFE, "e8m0fnu")) == 254
    assert int(ordinal(0xFF, "binary8p3")) == -127  # -inf
    with pytest.raises(ValueError, match="NaN"):
        ordinal([0x7F], "e4m3fn")
    with pytest.raises(ValueError, match="NaN"):
        ordinal([0x80], "e4m3fnuz")
    with pytest.raises(ValueError, match="code 0x100 at flat index 0"):
        ordinal([256], "e4m3fn")


def test_ulp_conventions() -> None:
    assert float(ulp(math.inf, "e5m2")) == math.inf and math.isnan(ulp(math.nan, "e5m2"))
    assert float(ulp(1000.0, "e4m3fn")) == 64.0  # beyond max, the binade formula continues
    assert float(ulp(3.0, "e8m0fnu")) == 2.0 and float(ulp(2.0**-200, "e8m0fnu")) == 2.0**-127
    assert float(ulp(Fraction(2**54 - 1), "binary64")) == 2.0  # exact: binade [2**53, 2**54)
    assert float(ulp(2**54, "binary64")) == 4.0
    assert ulp(np.array([1, 3], dtype=np.int32), "bf16").tolist() == [2.0**-7, 2.0**-6]


def test_bad_input_ulp() -> None:
    with pytest.raises(ValueError, match=r"x\[1\]=0.1"):
        next_up(np.array([1.0, 0.1]), "e4m3fn")
    with pytest.raises(ValueError, match="not a value of e4m3fn"):
        next_down(500.0, "e4m3fn")
    with pytest.raises(ValueError, match="not a value of e4m3fn"):
        next_up(math.inf, "e4m3fn")
    with pytest.raises(ValueError, match="NaN"):
        ulp_distance(math.nan, 1.0, "binary32")
    with pytest.raises(ValueError, match="e8m0fnu"):
        next_up(0.0, "e8m0fnu")
    with pytest.raises(TypeError, match="x='1'"):
        ulp("1", "e4m3fn")
    with pytest.raises(ValueError, match="not exactly a float64"):
        next_up(Fraction(1, 3), "binary64")


# ------------------------------------------------------------------ parts
def test_parts_of_binary32_point_one() -> None:
    p = parts(0.1, "binary32")
    assert p.decimal == "0.100000001490116119384765625"
    assert p.hex == "0x1.99999ap-4"
    assert (p.sign, p.exponent_field, p.trailing_field, p.exponent, p.kind) == (
        0, 123, 0x4CCCCD, -4, "normal")
    assert p.code == 0x3DCCCCCD and p.value == Fraction(13421773, 2**27)


@pytest.mark.parametrize("name", ["binary32", "binary16"])
def test_parts_fields_match_numpy_bits(name: str) -> None:
    dtype, width, t = {"binary32": (np.float32, 32, 23), "binary16": (np.float16, 16, 10)}[name]
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**width, size=2000, dtype=np.uint64)
    for b in bits.tolist() + [0, 1 << (width - 1), 1, (1 << t) - 1, 1 << t]:
        v = float(np.array([b], dtype=f"u{width // 8}").view(dtype)[0])
        p = parts_of_code(b, name)
        assert p.sign == b >> (width - 1)
        assert p.exponent_field == (b >> t) & ((1 << (width - 1 - t)) - 1)
        assert p.trailing_field == b & ((1 << t) - 1)
        if math.isnan(v):
            assert p.kind == "nan" and p.value is None and p.decimal == "nan"
        elif math.isinf(v):
            assert p.kind == "inf" and p.hex == ("-inf" if v < 0 else "inf")
        else:
            assert p.value == Fraction(v)
            assert p.decimal == ("-0" if math.copysign(1, v) < 0 and v == 0 else
                                 format(Decimal(v), "f"))
            assert float.fromhex(p.hex) == v and math.copysign(1, float.fromhex(p.hex)) == \
                math.copysign(1, v)
            if v == 0:
                assert p.kind == "zero" and p.exponent is None
            elif abs(v) < 2.0 ** (1 - (1 << (width - 2 - t)) + 1):
                assert p.kind == "subnormal"
            else:
                assert p.kind == "normal" and p.exponent is not None
                assert 1 <= abs(v) / 2.0**p.exponent < 2


@settings(max_examples=300, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_exact_decimal_and_hexfloat_of_float64(x: float) -> None:
    assert exact_decimal(Fraction(x)) == (format(Decimal(x), "f") if x != 0 else "0")
    h = hexfloat(Fraction(x))
    assert float.fromhex(h) == x
    if x != 0 and abs(x) >= 2.0**-1022:  # Python writes normals as 0x1.<13 digits>
        mant, exp = x.hex().split("p")
        assert h == (mant.rstrip("0").rstrip(".") + "p" + exp)


@pytest.mark.parametrize("fmt", [f for f in ALL_FORMATS if f.bits <= 8], ids=lambda f: f.name)
def test_parts_of_every_8bit_code(fmt: Format) -> None:
    for code in range(fmt.num_codes):
        p = parts_of_code(code, fmt)
        assert p.code == code and p.format == fmt.name
        if p.kind in ("normal", "subnormal"):
            assert p.value is not None
            assert Fraction(Decimal(p.decimal)) == p.value
            assert Fraction(float.fromhex(p.hex)) == p.value
            assert parts(p.value, fmt).code == code  # value carries the sign


def test_parts_options_and_errors() -> None:
    assert parts(500, "e4m3fn").kind == "nan"
    assert parts(500, "e4m3fn", overflow="saturate").decimal == "448"
    assert parts(0.1, "bf16", rounding="rtz").decimal == "0.099609375"
    assert parts(-1e-9, "e4m3fn").decimal == "-0" and parts(-1e-9, "e4m3fn").hex == "-0x0p+0"
    assert parts(3.0, "e8m0fnu").value == 2  # tie to the even code 128
    assert parts(2**1000 + 1, "binary64", rounding="ru").value == 2**1000 + 2**948
    sr = {parts(1 + 1 / 32, "e4m3fn", rounding="sr", rng=s).decimal for s in range(40)}
    assert sr == {"1", "1.125"}
    with pytest.raises(TypeError):
        parts("0.1", "binary32")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no NaN"):
        parts(math.nan, "e2m1fn")
    with pytest.raises(ValueError, match="does not terminate"):
        exact_decimal(Fraction(1, 3))
    with pytest.raises(ValueError, match="not a binary fraction"):
        hexfloat(Fraction(1, 10))


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e8m0fnu", "e2m1fn", "e4m3fnuz",
                                  "binary8p1", "bfloat16"])
def test_next_of_a_python_float_matches_the_array_path(name: str) -> None:
    """Scalars step their code; arrays go through the float64 formulas: the same values."""
    fmt = numerics.get_format(name)
    vals = numerics.decode(np.arange(fmt.num_codes, dtype=fmt.code_dtype), fmt)
    vals = vals[np.isfinite(vals)][:: 1 if fmt.bits <= 8 else 41]
    for step in (numerics.next_up, numerics.next_down):
        whole = step(vals, fmt)
        for v, w in zip(vals.tolist(), whole.tolist()):
            got = float(step(v, fmt))
            assert (got == w and math.copysign(1, got) == math.copysign(1, w)) or (
                math.isnan(got) and math.isnan(w)), (name, step.__name__, v, got, w)


@pytest.mark.parametrize("fmt", [f for f in ALL_FORMATS if f.bits <= 16], ids=lambda f: f.name)
def test_next_of_a_longdouble_between_values_is_on_its_side(fmt: Format) -> None:
    """A longdouble that is no float64 value: next_up is the least value above it, nan where
    none is (beyond the largest value of a format without infinity; below e8m0fnu's least
    value for next_down), never a value on the wrong side.  Checked against a list of the
    format's values."""
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is float64 here")
    vals = numerics.decode(np.arange(fmt.num_codes, dtype=np.uint64).astype(fmt.code_dtype),
                           fmt)
    line = np.unique(vals[np.isfinite(vals)])
    tiny = np.longdouble(2) ** -60
    probes = [np.longdouble(v) * (1 + s * tiny) for v in line[[0, 1, -2, -1]] if v != 0
              for s in (-1, 1)] + [np.longdouble(2) ** -1080, -np.longdouble(2) ** -1080]
    for x in probes:
        assert np.float64(x) != x
        above = line[line > x]
        below = line[line < x]
        want_up = above[0] if above.size else (np.inf if fmt.infinity.value != "none" and
                                               x > 0 else np.nan)
        want_down = below[-1] if below.size else (-np.inf if fmt.infinity.value != "none"
                                                  and fmt.signed and x < 0 else np.nan)
        for got, want in ((next_up(x, fmt), want_up), (next_down(x, fmt), want_down)):
            assert (np.isnan(got) and np.isnan(want)) or got == want, (fmt.name, x, got, want)


def test_exact_decimal_and_hexfloat_take_ml_dtypes_scalars() -> None:
    # review: ml_dtypes scalars raised TypeError here, though parts, ulp and encode take them
    import ml_dtypes

    for x in (ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e4m3fn(-0.0),
              ml_dtypes.float8_e5m2(-448), ml_dtypes.float4_e2m1fn(3)):
        v = float(x)
        assert exact_decimal(x) == exact_decimal(v) and hexfloat(x) == hexfloat(v)
    assert exact_decimal(ml_dtypes.bfloat16("nan")) == "nan"
    assert hexfloat(ml_dtypes.float8_e5m2("-inf")) == "-inf"


def test_int_to_text_writes_the_value_of_an_int_subclass() -> None:
    # review: an IntEnum member came out as 'Color.RED' (its own __str__)
    import enum

    from numerics.digits import int_to_text

    class Color(int, enum.Enum):
        RED = 5

    assert int_to_text(Color.RED) == "5" and int_to_text(-Color.RED) == "-5"


def test_ordinal_checks_codes_as_decode_does() -> None:
    # review: [] raised TypeError (its dtype float64), a Python int beyond 64 bits a
    # TypeError naming no value, and the message named "code=" without an index
    assert ordinal([], "e4m3fn").tolist() == []
    with pytest.raises(ValueError, match=r"codes\[0\]=1180591620717411303424"):
        ordinal(2**70, "binary64")
    with pytest.raises(ValueError, match="0x12c at flat index 1"):
        ordinal([1, 300], "e4m3fn")
    with pytest.raises(ValueError, match="negative code -1"):
        ordinal([-1], "e4m3fn")
    with pytest.raises(TypeError, match="integer codes"):
        ordinal([1.5], "e4m3fn")
    assert int(ordinal(np.array(0x81, np.uint8), "e4m3fn")) == -1
