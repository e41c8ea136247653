"""Boundaries the suite never reached exactly, found by mutation testing (session 55).

Each test pins one case at a boundary (a tie, a power of two, a clamp, a default) with
its value derived by hand from the documented rule; with the rule changed there (a
``<`` for a ``<=``, a clamp moved by one, another default) it fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.accum import gemm
from numerics.accum import sum as asum
from numerics.accum.tensorcore import fused_dot_add
from numerics.checkpoint.diff import coarser
from numerics.compare import compare_codes, ulp_bucket_label
from numerics.fingerprint import canonical_codes, fingerprint
from numerics.formats import as_format
from numerics.quant import quantize
from numerics.quant.bounds import element_bound
from numerics.quant.mx import mx_element_format, shared_exponent


# ---------------------------------------------------------------- quantization scales
def test_rceil_scale_of_a_block_whose_amax_is_the_element_max() -> None:
    """``scale_rounding="ru"`` is RCEIL: 2**ceil(log2(amax / 6)) = 2**0 for amax 6 (CEIL,
    which rounds the exponent of amax up first, gives 2)."""
    b = np.zeros(32)
    b[0] = 6.0
    assert float(quantize(b, "mxfp4_e2m1", scale_rounding="ru").scales[0]) == 1.0


@pytest.mark.parametrize(("amax", "mode", "want"), [
    (2.0**-140, "floor", -127),   # floor(-140) - 8 = -148, clamped to E8M0's least, -127
    (2.0**135, "floor", 127),     # 135 - 8 = 127: the greatest scale, not NaN
    (496.0, "even", 1),           # 1.1111b * 2**8: its mantissa rounds up, 2**9 -> 9 - 8
])
def test_shared_exponent_at_its_clamps_and_carry(amax: float, mode: str, want: int) -> None:
    e, nan = shared_exponent(np.array([amax]), mx_element_format("mxfp8_e4m3"), 8, mode)
    assert (e.tolist(), nan.tolist()) == ([want], [False])


def test_mxint8_bound_at_its_most_negative_value() -> None:
    """MXINT8 elements are int8 times 2**-6: -2 = -128 * 2**-6 is a value, so its bound is
    half a quantum, 2**-7."""
    b = element_bound([-2.0], [1.0], mx_element_format("mxint8"))
    assert float(b[0]) == 2.0**-7


# ---------------------------------------------------------------- comparisons
def test_ulp_bucket_label_up_to_2_16_is_a_range() -> None:
    assert ulp_bucket_label(32769, 65536) == "32769-65536"


def test_worst_elements_tie_to_the_lowest_index() -> None:
    r = compare_codes(np.full(3, 0x3F80, np.uint16), np.full(3, 0x3F81, np.uint16),
                      "bfloat16", worst=2)
    assert [w.index for w in r.worst] == [(0,), (1,)]


def test_two_nans_of_other_payloads_are_zero_ulps_apart() -> None:
    r = compare_codes(np.array([0x7FC0], np.uint16), np.array([0x7FC1], np.uint16),
                      "bfloat16", worst=1)
    assert (r.bitwise_mismatches, r.nan_mismatches) == (1, 0)  # (NaN meets NaN: agreement)
    assert [w.ulp_distance for w in r.worst] == [0]


def test_coarser_of_two_formats_alike_is_the_first() -> None:
    assert coarser("e5m2", "e5m2fnuz").name == "e5m2"


# ---------------------------------------------------------------- fingerprints
def test_canonical_codes_keep_the_infinities() -> None:
    bf = as_format("bfloat16")
    out = canonical_codes(np.array([0x7F80, 0xFF80, 0x7FC1], np.uint16), bf).tolist()
    assert out == [0x7F80, 0xFF80, 0x7FC0]


def test_fingerprint_refuses_a_code_beyond_the_format() -> None:
    with pytest.raises(ValueError):
        fingerprint(np.array([0x10], np.uint8), fmt=as_format("e2m1fn"))


# ---------------------------------------------------------------- accumulation
def test_blocked_sum_default_block_is_128() -> None:
    """Blocks of 128 (the default): 128 twos make 256 in bfloat16, the 1 a block of its
    own, and 256 + 1 is exact in the binary32 total (one block would tie to 256)."""
    r = asum(np.array([2.0] * 128 + [1.0]), "bfloat16", algorithm="blocked")
    assert float(np.asarray(r.value)) == 257.0


@pytest.mark.parametrize("promote_every", [None, 1])
def test_gemm_output_narrower_than_its_accumulator_rounds_to_nearest(
        promote_every: int | None) -> None:
    """1 + 0.75 ulp of bfloat16 rounds up to 1 + 2**-7 into the bfloat16 output."""
    d = gemm([[1.0]], [[1.0 + 3 * 2.0**-9]], input_format="binary32", accumulator="binary32",
             output_format="bfloat16", promote_every=promote_every)
    assert float(d[0, 0]) == 1.0078125


def test_fused_dot_add_beyond_binary32_is_inf() -> None:
    d = fused_dot_add([2.0**64], [2.0**64], 0.0, input_format="bfloat16", fractional_bits=23)
    assert float(d) == float("inf")


def test_cdna3_keeps_c_at_its_boundary() -> None:
    """The products cancel; c = -2**-25 sits on the boundary where CDNA3's fp8 rule still
    keeps it, and rounds it down to -2**-24."""
    A = np.zeros((1, 16))
    A[0, :2] = 1.0
    B = np.zeros((16, 1))
    B[0, 0], B[1, 0] = 1.0, -1.0
    d = gemm(A, B, [[-2.0**-25]], input_format="e4m3fnuz", accumulator="cdna3-fp8")
    assert float(d[0, 0]) == -2.0**-24


def test_cdna3_product_of_exactly_2_128_overflows() -> None:
    d = gemm([[2.0**64, 2.0**64]], [[2.0**64], [-2.0**63]], input_format="bfloat16",
             accumulator="cdna3-bf16")
    assert float(d[0, 0]) == float("inf")


# ---------------------------------------------------------------- codec, ulp, parsing (A)
LONG = np.dtype(np.longdouble).itemsize > 8 and np.finfo(np.longdouble).nmant >= 63


def test_nan_zero_gives_plus_zero_whatever_the_nan_sign() -> None:
    from numerics import encode_exact

    assert encode_exact(float("-nan"), "e2m1fn", nan="zero") == 0


def test_an_ml_dtypes_minus_zero_keeps_its_sign() -> None:
    import ml_dtypes

    from numerics import encode_exact

    assert encode_exact(ml_dtypes.bfloat16(-0.0), "e4m3fn") == 0x80


def test_ulp_of_the_top_binade_of_binary64() -> None:
    from fractions import Fraction

    from numerics import ulp

    assert float(ulp(Fraction(2**1075), "binary64")) == 2.0**1023  # (beyond max: its binade)


@pytest.mark.skipif(not LONG, reason="needs an x87 80-bit long double")
def test_ulp_of_a_long_double_below_the_subnormal_boundary() -> None:
    from numerics import ulp

    assert float(ulp(np.longdouble(2.0**-140), "binary32")) == 2.0**-149


def test_parse_limits_are_inclusive() -> None:
    from fractions import Fraction

    from numerics import parse_code, parse_value

    assert parse_value("1e10000").fraction == 10**10000
    assert parse_value("1e-10000").fraction == Fraction(1, 10**10000)
    assert parse_code("18446744073709551615", "binary64") == 2**64 - 1


def test_exact_decimal_of_fifths_and_long_doubles() -> None:
    from fractions import Fraction

    from numerics import exact_decimal

    assert exact_decimal(Fraction(1, 5)) == "0.2" and exact_decimal(Fraction(3, 25)) == "0.12"
    if LONG:
        x = np.longdouble(1) + np.longdouble(2.0**-60)
        assert exact_decimal(x) == "1." + str(5**60).rjust(60, "0")


def test_inspection_flags_at_the_special_inputs() -> None:
    from numerics.inspection import code_hex, inspect_value
    from numerics.parse import parse_value

    r = inspect_value(parse_value("inf"), as_format("e4m3fn"), overflow="saturate")
    assert (r.code, r.saturated) == (0x7E, True)
    r = inspect_value(parse_value("-inf"), as_format("e2m1fn"))
    assert (r.code, r.saturated) == (0xF, True)
    for zero in ("0", "-0"):
        assert inspect_value(parse_value(zero), as_format("e4m3fn")).flushed is False
    r = inspect_value(parse_value("-1e40"), as_format("e8m0fnu"))
    assert (r.code, r.overflow) == (0xFF, False)  # (a negative value, not an overflow)
    r = inspect_value(parse_value("inf"), as_format("binary32"))
    assert r.kind == "inf"
    assert code_hex(1, as_format("e2m3fn")) == "0x01"
    assert code_hex(1, as_format("tf32")) == "0x00001"


def test_format_properties_at_their_edges() -> None:
    from numerics import Format, Infinity, NaNEncoding, encode_exact, finfo

    assert as_format("binary32").unit_roundoff == 2.0**-24
    assert as_format("bf16").unit_roundoff == 2.0**-8
    assert as_format("binary32").is_nan_code(0x7F800000) is False
    nz = Format(name="nz", exponent_bits=3, trailing_bits=2, bias=3, subnormals=False,
                infinity=Infinity.NONE, nan=NaNEncoding.TOP)
    assert nz.has_negative_zero is False and encode_exact(-0.0, nz) == 0
    with pytest.raises(ValueError):  # smallest subnormal 2**-1075: no float64
        Format(name="x", exponent_bits=11, trailing_bits=52, bias=1024)
    p = Format(name="p", exponent_bits=3, trailing_bits=2, bias=-2, infinity=Infinity.NONE,
               nan=NaNEncoding.NONE)
    assert finfo(p).epsneg == 1.0  # emin = 3: below 1.0 only 0
