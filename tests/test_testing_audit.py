"""Audit of numerics.testing: signs of infinities and of values no format holds, exact
values of any size, integers taken exactly, shapes, and the messages.

The references are written here: the neighbours come from the format's values listed
by the exact codec (``decode_exact``) and compared as Fractions, never from the
assertions under test.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from numerics import encode, round_to
from numerics.codec import decode_exact
from numerics.formats import Format, Infinity, NaNEncoding, get_format
from numerics.testing import (
    assert_bitwise_equal,
    assert_rounded_from,
    assert_stochastic_rounding,
    assert_ulp_close,
    assert_within_bound,
    ulp_distances,
)

#: signed, no zero: magnitude code 0 is 2**-3 = 0.125, the next values 0.15625, 0.1875
E3M2_NOZERO = Format(name="e3m2_nozero", exponent_bits=3, trailing_bits=2, bias=3,
                     subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.TOP)


def _values(fmt: Format) -> list[Fraction]:
    """Every finite value of ``fmt``, sorted, from the exact codec."""
    out = set()
    for code in range(fmt.num_codes):
        v = decode_exact(code, fmt)
        if not (isinstance(v, float) and not math.isfinite(v)):
            out.add(Fraction(v))
    return sorted(out)


def _codes(values: list[float], fmt: Format) -> np.ndarray:
    """Codes of ``values`` (floats of ``fmt``; NaN is the canonical NaN), via the codec."""
    out = []
    for v in values:
        if math.isnan(v):
            assert fmt.code_of_nan is not None
            out.append(fmt.code_of_nan)
            continue
        hits = [c for c in range(fmt.num_codes)
                if not (isinstance(decode_exact(c, fmt), float)
                        and math.isnan(decode_exact(c, fmt)))
                and decode_exact(c, fmt) == v
                and math.copysign(1.0, float(decode_exact(c, fmt))) == math.copysign(1.0, v)]
        out.append(hits[0])
    return np.array(out, dtype=fmt.code_dtype)


# ------------------------------------------------------------------ 1. signs of infinities
@pytest.mark.parametrize("name", ["e4m3fn", "e4m3fnuz", "e2m1fn", "e3m2fn"])
def test_an_infinity_the_format_cannot_hold_keeps_its_sign(name: str) -> None:
    """+inf may become NaN or +max (saturation), -inf NaN or -max; the other sign fails
    (before: inf_no_code ignored the sign, -448 passed for +inf in e4m3fn)."""
    f = get_format(name)
    top = float(_values(f)[-1])                        # max, from the codec's list
    for sign in (1.0, -1.0):
        x = np.array([sign * math.inf])
        allowed = [sign * top] + ([math.nan] if f.has_nan else [])
        for v in allowed:
            assert_rounded_from(_codes([v], f), x, f)
        with pytest.raises(AssertionError, match="not its neighbours"):
            assert_rounded_from(_codes([-sign * top], f), x, f)


def test_the_audit_example_and_a_stochastic_kernel_of_the_wrong_sign() -> None:
    x = np.array([np.inf])
    with pytest.raises(AssertionError, match="not its neighbours"):
        assert_rounded_from(np.array([-448.0], ml_dtypes.float8_e4m3fn), x, "e4m3fn")
    assert_rounded_from(np.array([448.0], ml_dtypes.float8_e4m3fn), x, "e4m3fn")

    def wrong_sign(v: Any, seed: int) -> np.ndarray:
        return np.full(np.shape(v), -448.0, ml_dtypes.float8_e4m3fn)
    with pytest.raises(AssertionError, match="not its neighbours"):
        assert_stochastic_rounding(wrong_sign, np.array([np.inf, -np.inf]), "e4m3fn", 3)


@pytest.mark.parametrize("x", [-1.0, -0.0, 0.0, -np.inf, -1e-45, -2.0**-127])
def test_an_unsigned_format_holds_no_neighbour_of_zero_or_a_negative_value(x: float) -> None:
    """e8m0fnu has no zero and no negative value: those encode to NaN (the format's rule,
    and what numerics.encode gives), and no number may come back (before: the library's
    own NaN failed, and |x| passed for negative x)."""
    f = get_format("e8m0fnu")
    nan = np.array([f.code_of_nan], np.uint8)
    assert_rounded_from(nan, np.array([x]), f)
    assert_rounded_from(np.asarray(encode(np.array([x]), f)), np.array([x]), f)
    for v in {abs(x) if x else 1.0, 2.0**-127, 1.0}:
        if math.isfinite(v) and 2.0**-127 <= v:
            with pytest.raises(AssertionError, match="not its neighbours"):
                assert_rounded_from(np.array([v], ml_dtypes.float8_e8m0fnu), np.array([x]), f)


@pytest.mark.parametrize("x, down, up", [(-0.14, -0.125, -0.15625), (-0.01, -0.125, None),
                                         (0.01, 0.125, None), (0.0, 0.125, None)])
def test_a_signed_format_without_zero_keeps_the_sign_of_a_small_value(
        x: float, down: float, up: float | None) -> None:
    """Magnitude code 0 of a format without zero is +-2**emin, signed like any other
    code: -0.14 lies between -0.125 and -0.15625 (before: +0.125 passed, -0.125 failed)."""
    f = E3M2_NOZERO
    values = _values(f)
    assert Fraction(down) in values and (up is None or Fraction(up) in values)
    for v in [down] + ([up] if up is not None else []):
        assert_rounded_from(_codes([v], f), np.array([x]), f)
    with pytest.raises(AssertionError, match="not its neighbours"):
        assert_rounded_from(_codes([-down], f), np.array([x]), f)
    for mode in ("rne", "rtz", "ru", "rd"):                 # the library's encoder agrees
        assert_rounded_from(np.asarray(encode(np.array([x]), f, rounding=mode)),
                            np.array([x]), f)


# ------------------------------------------------------------------ 2. values of any size
def test_exact_values_beyond_the_float_range_are_beyond_max() -> None:
    """10**400 lies beyond max of every format: max or the overflow code of its sign
    (before: OverflowError)."""
    big = np.array([Fraction(10) ** 400], dtype=object)
    assert_rounded_from(np.array([np.inf], ml_dtypes.bfloat16), big, "bf16")
    assert_rounded_from(np.array([float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)],
                                 ml_dtypes.bfloat16), big, "bf16")
    for wrong in (-np.inf, np.nan):
        with pytest.raises(AssertionError, match="not its neighbours"):
            assert_rounded_from(np.array([wrong], ml_dtypes.bfloat16), big, "bf16")
    assert_rounded_from(np.array([-np.inf], ml_dtypes.bfloat16), -big, "bf16")
    assert_rounded_from(np.array([np.nan], ml_dtypes.float8_e4m3fn), big, "e4m3fn")
    assert_rounded_from(np.array([448.0], ml_dtypes.float8_e4m3fn), big, "e4m3fn")
    with pytest.raises(AssertionError, match="1e\\+400"):
        assert_rounded_from(np.array([-448.0], ml_dtypes.float8_e4m3fn), big, "e4m3fn")
    huge = np.array([Decimal("1e400"), Decimal("-1e99999999")], dtype=object)
    assert_rounded_from(np.array([np.inf, -np.inf], ml_dtypes.bfloat16), huge, "bf16")
    mixed = np.array([math.inf, Fraction(10) ** 400], dtype=object)   # with a special
    assert_rounded_from(np.array([448.0, 448.0], ml_dtypes.float8_e4m3fn), mixed, "e4m3fn")
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_rounded_from(np.array([np.inf, np.nan], ml_dtypes.bfloat16), mixed, "bf16")


def test_tiny_and_near_one_exact_values_keep_both_neighbours() -> None:
    """A Fraction whose offset from the value below is under 2**-1074 of a step still
    has two neighbours (before: its probability read as 0, so the neighbour above
    failed), and one just below the value above is not taken as that value."""
    tiny = np.array([Fraction(1, 10**400)], dtype=object)
    smallest = Fraction(2) ** -133                        # bf16's smallest subnormal
    assert_rounded_from(np.array([0.0], ml_dtypes.bfloat16), tiny, "bf16")
    assert_rounded_from(np.array([float(smallest)], ml_dtypes.bfloat16), tiny, "bf16")
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([-0.0], ml_dtypes.bfloat16), tiny, "bf16")
    below = Fraction(1) + Fraction(1, 2**7) - Fraction(1, 2**200)   # just below 1 + 2**-7
    near = np.array([below], dtype=object)
    for v in (1.0, 1.0078125):
        assert_rounded_from(np.array([v], ml_dtypes.bfloat16), near, "bf16")

    def always(v: float) -> Any:
        return lambda x, seed: np.full(np.shape(x), v, ml_dtypes.bfloat16)
    assert_stochastic_rounding(always(1.0078125), near, "bf16", 200)   # p = 1 - 2**-193
    assert_stochastic_rounding(always(0.0), tiny, "bf16", 200)         # p ~ 1e-360
    with pytest.raises(AssertionError, match="binomial"):
        assert_stochastic_rounding(always(1.0), near, "bf16", 200)


def test_integer_exact_values_are_not_rounded_to_float64() -> None:
    """2**53 + 1 lies between the binary64 values 2**53 and 2**53 + 2; both are its
    neighbours (before: it was read as 2**53, and 2**53 + 2 failed)."""
    x = np.array([2**53 + 1])
    for v in (2**53, 2**53 + 2):
        assert Fraction(float(v)) == v
        assert_rounded_from(np.array([float(v)]), x, "binary64")
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([float(2**53 + 4)]), x, "binary64")


# ------------------------------------------------------------------ 3. integers exactly
@pytest.mark.parametrize("actual, desired", [
    (np.array([2**53 + 1]), np.array([2.0**53])),
    (np.array([2**63 - 1]), np.array([2.0**63])),
    (np.array([2**60 + 1], np.int64), np.array([2.0**60])),   # (uint64 would be codes)
    (np.array([2**70 + 1], dtype=object), np.array([2.0**70])),
])
def test_an_integer_that_is_not_a_value_is_refused_not_rounded(actual: np.ndarray,
                                                               desired: np.ndarray) -> None:
    """The documented rule: a value not in the format raises ValueError naming it
    (before: rounded to float64, so all three assertions passed)."""
    shown = str(int(actual[0]))
    assert Fraction(float(int(actual[0]))) != int(actual[0])   # not a binary64 value
    for check in (lambda: assert_ulp_close(actual, desired, max_ulp=0),
                  lambda: assert_bitwise_equal(actual, desired),
                  lambda: ulp_distances(actual, desired),
                  lambda: assert_rounded_from(actual, desired, "binary64")):
        with pytest.raises(ValueError, match=f"(actual|result).flat\\[0\\]={shown}, which "
                                             "is not a value of binary64"):
            check()
    with pytest.raises(ValueError, match=f"desired.flat\\[0\\]={shown}"):
        ulp_distances(desired, actual)


def test_integers_that_are_values_count_exactly() -> None:
    """2**53 + 2 is the binary64 value after 2**53 (spacing 2 there); 2**63 - 1024 the one
    before 2**63."""
    assert ulp_distances(np.array([2**53 + 2]), np.array([2.0**53])).tolist() == [1]
    assert ulp_distances(np.array([2**63 - 1024]), np.array([2**63], dtype=object)
                         ).tolist() == [1]
    assert_bitwise_equal(np.array([2**62]), np.array([2.0**62]))


def test_an_integer_or_fraction_reference_is_placed_exactly() -> None:
    """bf16 2**53 against the reference 2**53 + 1 is a fraction of an ulp off, not 0; a
    Fraction 2**-80 above a bf16 tie is nearer the value above (before: both references
    were rounded to float64, which put them on 2**53 and on the tie)."""
    got = np.array([2.0**53], ml_dtypes.bfloat16)
    with pytest.raises(AssertionError):
        assert_ulp_close(got, np.array([2**53 + 1]), fmt="bf16", max_ulp=0)
    assert_ulp_close(got, np.array([2**53 + 1]), fmt="bf16", max_ulp=0.5)
    tie = Fraction(1) + Fraction(1, 2**8)                 # between 1 and 1 + 2**-7
    for offset, nearest, other in ((1, 1.0078125, 1.0), (-1, 1.0, 1.0078125)):
        ref = np.array([tie + offset * Fraction(1, 2**80)], dtype=object)
        assert_ulp_close(np.array([nearest], ml_dtypes.bfloat16), ref, max_ulp=0.5)
        with pytest.raises(AssertionError, match="Not within 0.5 ulp"):
            assert_ulp_close(np.array([other], ml_dtypes.bfloat16), ref, max_ulp=0.5)


def test_codes_out_of_range_are_refused_by_the_rounding_assertions() -> None:
    f = get_format("e2m1fn")                               # 16 codes in uint8
    with pytest.raises(ValueError, match="code 255 at flat index 0"):
        assert_rounded_from(np.array([255], np.uint8), np.array([1.0]), f)


# ------------------------------------------------------------------ 5. rough edges
@pytest.mark.parametrize("check", [
    lambda a, d: assert_ulp_close(a, d),
    lambda a, d: assert_bitwise_equal(a, d),
    lambda a, d: ulp_distances(a, d),
    lambda a, d: assert_within_bound(a, d, 0.0),
])
def test_a_0d_actual_does_not_pass_for_a_larger_desired(check: Any) -> None:
    """desired broadcasts to actual's shape, and () is a shape too (before: a 0-d actual
    stretched to (3,) and passed)."""
    with pytest.raises(ValueError, match="broadcast to actual's shape"):
        check(np.float32(1.0), np.array([1.0, 1.0, 1.0], np.float32))
    check(np.float32(1.0), np.float32(1.0))
    check(np.array([1.0, 1.0, 1.0], np.float32), np.float32(1.0))


def test_half_an_ulp_does_not_fix_the_tie_rule_or_the_sign_of_zero() -> None:
    """What the docstring says max_ulp=0.5 certifies: a nearest value, whatever the tie
    rule and the sign of zero; a bitwise check against a reference rounded in the mode
    tells the rules apart."""
    tie = np.array([1.0 + 2.0**-8, -2.0**-140])         # a bf16 tie; a tiny negative
    rna = np.array([1.0078125, -0.0], ml_dtypes.bfloat16)   # away at the tie
    lost = np.array([1.0, 0.0], ml_dtypes.bfloat16)         # rne at the tie, +0 for -0
    for got in (rna, lost):
        assert_ulp_close(got, tie, fmt="bf16", max_ulp=0.5)
    rne = round_to(tie, "bf16", rounding="rne").astype(ml_dtypes.bfloat16)
    with pytest.raises(AssertionError):
        assert_bitwise_equal(rna, rne)
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):   # the +0
        assert_ulp_close(lost, tie, fmt="bf16", max_ulp=0.5, signed_zeros=True)


def _bf16_sr(shared: bool, le: bool = False) -> Any:
    """bfloat16 stochastic rounding of float32 with 4-bit draws: one per element, or one
    per call shared by every element."""
    def kernel(x: np.ndarray, seed: int) -> np.ndarray:
        u = np.random.default_rng(seed + 10**6).integers(0, 16, () if shared else x.shape)
        b = np.float32(x).view(np.uint32).astype(np.int64)
        frac = (b & 0xFFFF) >> 12
        away = (u <= frac) if le else (u < frac)
        return (((b >> 16) + away) << 16).astype(np.uint32).view(np.float32)
    return kernel


def test_the_pooled_message_tells_a_shared_draw_from_a_bias() -> None:
    """One uniform shared by every element keeps each element's law (no binomial test
    fails) but not the independence the pooled test assumes; the message says so, and
    says bias for a kernel that leans the same way everywhere."""
    x = (1 + np.random.default_rng(3).integers(1, 16, 512) / 16 * 2**-7).astype(np.float32)
    assert_stochastic_rounding(_bf16_sr(shared=False), x, "bf16", trials=200)
    with pytest.raises(AssertionError) as shared:
        assert_stochastic_rounding(_bf16_sr(shared=True), x, "bf16", trials=200)
    assert "0 of 512 inexact elements fail the binomial test" in str(shared.value)
    assert "not rounded independently" in str(shared.value)
    with pytest.raises(AssertionError) as biased:
        assert_stochastic_rounding(_bf16_sr(shared=False, le=True), x, "bf16", trials=200)
    assert "bias shared by the elements" in str(biased.value)
    assert "independently" not in str(biased.value)


# ------------------------------------------------- the second audit (session 53)
def test_a_whole_float_max_ulp_is_compared_exactly_beyond_2_53() -> None:
    """binary64 codes 2**62 + 1 ulps apart passed max_ulp=2.0**62: the distance was
    rounded to float64 (2**62) before the comparison; the int bound failed it."""
    x = np.array([1], np.int64).view(np.float64)
    y = np.array([2**62 + 2], np.int64).view(np.float64)
    for bound in (2.0**62, np.float64(2.0**62), 2**62):
        with pytest.raises(AssertionError):
            assert_ulp_close(x, y, max_ulp=bound)
    assert_ulp_close(x, y, max_ulp=2.0**62 + 1024)


def test_the_options_name_themselves_in_their_errors() -> None:
    from numerics.testing import elementwise_bound, softmax_bound, tolerance_for

    for call, name in [
        (lambda: elementwise_bound([1.0], "bfloat16", work_fmt="nope"), "work_fmt='nope'"),
        (lambda: softmax_bound([1.0], "bfloat16", work_fmt="nope"), "work_fmt='nope'"),
        (lambda: tolerance_for("sum", 4, "bf16", "blocked", promote_fmt="nope"),
         "promote_fmt='nope'"),
        (lambda: elementwise_bound([1.0], "bfloat16", work_rounding="x"),
         "work_rounding='x'"),
        (lambda: softmax_bound(np.float32(1.0), "bfloat16"), "a scalar"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()
