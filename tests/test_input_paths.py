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
