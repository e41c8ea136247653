"""The same values through every input path (Python lists, numpy integer scalars and
arrays, float32 operands) give the exact answer or a clear error, never a value that
numpy rounded on the way in, and the float32 lanes of ``ops`` decline the formats they
do not model (the exact references: ``encode_exact`` and Fraction arithmetic)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import numerics
from numerics import Format, ops
from numerics.codec import decode_exact, encode_exact
from numerics.formats import Infinity, NaNEncoding

NO_SUBNORMALS = Format(name="e4m3_nosub", exponent_bits=4, trailing_bits=3, bias=7,
                       subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP)
UNSIGNED = Format(name="ue5m2", exponent_bits=5, trailing_bits=2, bias=10, signed=False,
                  subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP)


def _exact(op: str, a: float, b: float, fmt: Format) -> float:
    x, y = Fraction(a), Fraction(b)
    v = {"add": x + y, "sub": x - y, "mul": x * y}[op]
    if v == 0 and not fmt.has_zero or v < 0 and not fmt.signed:
        return float("nan")  # no value: invalid
    return float(decode_exact(encode_exact(v, fmt), fmt))


@pytest.mark.parametrize("fmt, op, a, b", [
    (NO_SUBNORMALS, "add", 1.0, -1.0),
    (NO_SUBNORMALS, "add", 0.009765625, -0.0078125),
    (UNSIGNED, "sub", 3.0, 1792.0),
    (UNSIGNED, "mul", 2.0**-8, 2.0**-8),
    (UNSIGNED, "add", 3.0, 1792.0),
])
def test_float32_operands_of_formats_the_lanes_do_not_model(fmt: Format, op: str, a: float,
                                                          b: float) -> None:
    """float32 operands give what float64 operands give (and the exact result): a format
    without subnormals or without a sign takes the general loop, not the float32 lanes."""
    want = _exact(op, a, b, fmt)
    for kind in (np.float64, np.float32):
        got = float(getattr(ops, op)(kind(a), kind(b), fmt))
        assert (np.isnan(got) and np.isnan(want)) or got == want, (kind, got, want)


def test_lists_with_wide_ints_are_taken_exactly() -> None:
    """numpy makes ``[2**63 + 1, 1]`` float64 (rounded); the values are taken exactly."""
    big = 2**63 + 1
    assert numerics.encode([big, 1], "binary64", rounding="ru")[0] == \
        numerics.encode([big], "binary64", rounding="ru")[0] == \
        encode_exact(big, "binary64", rounding="ru")
    assert int(numerics.round_to([2**53 + 1, 0.5], "binary64", rounding="ru")[0]) == 2**53 + 2
    with pytest.raises(ValueError, match="not representable in binary64"):
        ops.add([2**53 + 1, 0.5], 0.0, "binary64")
    with pytest.raises(ValueError, match="not exactly a float64"):
        numerics.next_up([2**53 + 1, 0.5], "binary64")


@pytest.mark.parametrize("x", [np.uint64(2**64 - 1), np.int64(2**54 - 1),
                               np.array([2**53 + 1]), np.array([2**64 - 1], np.uint64)])
def test_numpy_integers_beyond_2_53_are_exact_or_refused(x: object) -> None:
    """ulp/next_up of a numpy integer that is not a float64 value: an error, not the
    ulp of its float64 rounding (which may lie in the next binade)."""
    with pytest.raises(ValueError, match="not exactly a float64 value"):
        numerics.ulp(x, "binary32")
    with pytest.raises(ValueError, match="not exactly a float64 value"):
        numerics.next_up(x, "binary64")


@pytest.mark.parametrize("out", [np.zeros(4, np.int64), np.zeros(4, ">f8")])
def test_decode_names_a_bad_out(out: np.ndarray) -> None:
    with pytest.raises(ValueError, match="Got out with dtype"):
        numerics.decode(np.arange(4, dtype=np.uint8), "e4m3fn", out=out)


@pytest.mark.parametrize("bits", [np.int64(8), np.uint8(8), np.int32(40), np.int64(64)])
@pytest.mark.parametrize("x", [Fraction(1, 3), Fraction(2**70 + 1, 3**20)])
def test_numpy_integer_sr_bits_on_the_exact_path(bits: object, x: Fraction) -> None:
    # before: 2**bits wrapped in numpy arithmetic (ZeroDivisionError, or a ValueError
    # that blamed x); the codes are those of the same Python int
    for fmt in ("e4m3fn", "binary32"):
        want = numerics.encode(x, fmt, rounding="sr", rng=1, sr_bits=int(bits))  # type: ignore[call-overload]
        got = numerics.encode(x, fmt, rounding="sr", rng=1, sr_bits=bits)  # type: ignore[arg-type]
        assert got == want
    mixed = [0.1, 2**60 + 1]
    assert np.array_equal(
        numerics.round_to(mixed, "binary32", rounding="sr", rng=1, sr_bits=bits),
        numerics.round_to(mixed, "binary32", rounding="sr", rng=1, sr_bits=int(bits)))  # type: ignore[call-overload]


def test_numpy_integer_sr_bits_in_quantize() -> None:
    x = np.array([0.1, 0.37, -2.5])
    want = numerics.quant.quantize(x, "e4m3fn", rounding="sr", rng=1, sr_bits=3).codes
    got = numerics.quant.quantize(x, "e4m3fn", rounding="sr", rng=1,
                                  sr_bits=np.int64(3)).codes
    assert np.array_equal(got, want)


def test_ml_dtypes_scalars_and_narrow_ints_are_taken_exactly() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    # before: an ml_dtypes scalar beside a wide int or a Fraction was "not a real number",
    # and int4/uint4/int2/uint2 arrays were refused as packed integers
    big = 2**60 + 1
    for scalar in (ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e5m2(1.5),
                   ml_dtypes.float8_e4m3fn(1.5), ml_dtypes.int4(-3), ml_dtypes.uint4(7)):
        want = [encode_exact(Fraction(float(scalar)), numerics.get_format("binary64")),
                encode_exact(big, numerics.get_format("binary64"))]
        assert numerics.encode([scalar, big], "binary64").tolist() == want
        obj = np.array([scalar, Fraction(1, 3)], dtype=object)
        assert numerics.encode(obj, "e4m3fn").tolist() == [
            encode_exact(Fraction(float(scalar)), numerics.get_format("e4m3fn")),
            encode_exact(Fraction(1, 3), numerics.get_format("e4m3fn"))]
    for name, values in (("int4", [-8, -1, 0, 7]), ("uint4", [0, 9, 15]), ("int2", [-2, 1]),
                         ("uint2", [0, 3])):
        arr = np.array(values, dtype=getattr(ml_dtypes, name))
        assert np.array_equal(numerics.encode(arr, "e4m3fn"),
                              numerics.encode(np.array(values), "e4m3fn"))
        assert np.array_equal(numerics.round_to(arr, "e2m1fn"),
                              numerics.round_to(np.array(values, float), "e2m1fn"))
        assert np.array_equal(ops.add(arr, arr, "bf16"), 2 * np.array(values, float))
