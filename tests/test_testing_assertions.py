"""Tests of numerics.testing.assertions against independent references.

References: ULP distances from the index in the sorted list of all values
(decoded by the reference codec) for small formats, and from Python-int bit
arithmetic (struct) for binary32/binary64; perturbations from numpy.nextafter;
bounds from exact Fraction arithmetic.
"""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.codec import decode_exact, encode_exact
from numerics.formats import get_format
from numerics.testing import (
    assert_bitwise_equal,
    assert_ulp_close,
    assert_within_bound,
    tolerance_for,
    ulp_distances,
)
from numerics.testing.strategies import arrays, values

BF16 = ml_dtypes.bfloat16
E4M3FN = ml_dtypes.float8_e4m3fn


def _sorted_positions(name: str, signed_zeros: bool) -> dict[int, int]:
    """code -> rank among the distinct non-NaN values (reference ordinal)."""
    f = get_format(name)
    keyed: dict[int, tuple[Fraction | float, int]] = {}
    for c in range(f.num_codes):
        v = decode_exact(c, f)
        if isinstance(v, float) and math.isnan(v):
            continue
        zero_key = -1 if signed_zeros and v == 0 and math.copysign(1, float(v)) < 0 else 0
        keyed[c] = (v, zero_key)
    ranks = {k: i for i, k in enumerate(sorted(set(keyed.values())))}
    return {c: ranks[k] for c, k in keyed.items()}


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "e8m0fnu",
                                  "binary8p3"])
@pytest.mark.parametrize("signed_zeros", [False, True])
def test_ulp_distances_all_pairs_of_small_formats(name: str, signed_zeros: bool) -> None:
    f = get_format(name)
    pos = _sorted_positions(name, signed_zeros)
    codes = np.array(sorted(pos), dtype=f.code_dtype)
    a, b = np.meshgrid(codes, codes)
    got = ulp_distances(a, b, fmt=f, signed_zeros=signed_zeros)
    ref = np.abs(np.vectorize(pos.get)(a) - np.vectorize(pos.get)(b)).astype(np.uint64)
    assert np.array_equal(got, ref)


def _ordinal64(x: float) -> int:
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def test_binary64_distance_across_zero_has_no_wrap() -> None:
    big = np.finfo(np.float64).max
    d = ulp_distances(np.array([-big, -big, -5e-324]), np.array([big, np.inf, 5e-324]))
    assert d.tolist() == [2 * (2**63 - 2**52) - 2, 2**64 - 2**53 - 1, 2]
    assert int(d[0]) == _ordinal64(big) - _ordinal64(-big)


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_binary64_distance_matches_int_reference(x: float, y: float) -> None:
    assert int(ulp_distances(np.float64(x), np.float64(y))) == abs(_ordinal64(x) - _ordinal64(y))


@given(arrays("bfloat16", 8, elements=values("bfloat16", allow_nan=False,
                                               allow_infinity=False)),
       st.integers(0, 3))
@settings(max_examples=100, deadline=None)
def test_ulp_close_passes_at_boundary_and_fails_one_ulp_further(a: np.ndarray, k: int) -> None:
    """Perturb one element by k and by k+1 steps with numpy.nextafter (independent)."""
    max_val = float(ml_dtypes.finfo(BF16).max)
    x = a.astype(np.float32)
    i = 3
    y = x.copy()
    for _ in range(k + 1):
        y[i] = np.nextafter(BF16(y[i]), BF16(np.inf)).astype(np.float32)
    if not math.isfinite(float(y[i])) or abs(float(y[i])) > max_val:
        return
    at_k = y.copy()
    at_k[i] = np.nextafter(BF16(y[i]), BF16(-np.inf))
    # numpy.nextafter steps from -0 to +0 in zero steps: compare zeros unsigned
    assert_ulp_close(a, at_k.astype(BF16), max_ulp=k, signed_zeros=False)
    with pytest.raises(AssertionError, match=f"worst: {k + 1} ulp at index 3"):
        assert_ulp_close(a, y.astype(BF16), max_ulp=k, signed_zeros=False)


def test_nan_and_zero_options() -> None:
    nan_a = np.array([0x7F, 0x80], dtype=np.uint8).view(E4M3FN)   # +NaN, -0
    nan_b = np.array([0xFF, 0x00], dtype=np.uint8).view(E4M3FN)   # -NaN, +0
    assert_ulp_close(nan_a, nan_b, max_ulp=0, signed_zeros=False)
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        assert_ulp_close(nan_a, nan_b, max_ulp=0, nan="code", signed_zeros=False)
    with pytest.raises(AssertionError, match=r"worst: 1 \(-0 vs \+0\) ulp at index 1"):
        assert_ulp_close(nan_a, nan_b, max_ulp=0)     # strict zeros by default at max_ulp=0
    assert_ulp_close(nan_a, nan_b, max_ulp=1, signed_zeros=True)
    with pytest.raises(AssertionError, match="NaN vs number"):
        assert_ulp_close(np.array([np.nan], np.float32), np.array([1.0], np.float32),
                         max_ulp=10**9)


def test_bitwise_equal_zeros_and_nan_payloads() -> None:
    q = np.array([0x7FC00000, 0x7FC00001, 0xFFC00000], dtype=np.uint32).view(np.float32)
    assert_bitwise_equal(q[:1], q[1:2])                    # payloads ignored
    with pytest.raises(AssertionError):
        assert_bitwise_equal(q[:1], q[1:2], canonical_nan=False)
    with pytest.raises(AssertionError):
        assert_bitwise_equal(q[:1], q[2:3])                # NaN signs differ
    with pytest.raises(AssertionError, match="Not bitwise equal"):
        assert_bitwise_equal(np.array([0.0], np.float16), np.array([-0.0], np.float16))


def test_codes_inputs_for_formats_without_dtype() -> None:
    f = get_format("binary8p3")
    one = encode_exact(1.0, f)
    assert_ulp_close(np.array([one], np.uint8), np.array([one + 1], np.uint8), fmt=f)
    with pytest.raises(AssertionError):
        assert_ulp_close(np.array([one], np.uint8), np.array([one + 2], np.uint8), fmt=f)
    assert_ulp_close([1.0, 2.0], np.array([one, encode_exact(2.0, f)], np.uint8), fmt=f,
                     max_ulp=0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_ulp=-1"):
        assert_ulp_close([1.0], [1.0], max_ulp=-1)
    with pytest.raises(ValueError, match="nan='x'"):
        assert_ulp_close([1.0], [1.0], nan="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"actual.flat\[0\]=0.1.*not a value of e4m3fn"):
        assert_ulp_close([0.1], [1.0], fmt="e4m3fn")
    with pytest.raises(TypeError, match="pass fmt="):
        assert_ulp_close(np.array([1.0], np.float16), np.array([1.0], np.float32))
    with pytest.raises(ValueError, match="do not broadcast"):
        assert_ulp_close([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="operation='prod'"):
        tolerance_for("prod", 3, "bfloat16", "recursive")
    with pytest.raises(ValueError, match="algorithm='fast'"):
        tolerance_for("sum", 3, "bfloat16", "fast")
    with pytest.raises(ValueError, match="n=0"):
        tolerance_for("sum", 0, "bfloat16")
    with pytest.raises(ValueError, match="bounds must be >= 0"):
        assert_within_bound([1.0], [1.0], [-1.0])


def test_within_bound_boundary_is_exact() -> None:
    exact = [Fraction(1, 3)]
    err = Fraction(0.5) - Fraction(1, 3)
    assert_within_bound([0.5], exact, [err])
    with pytest.raises(AssertionError, match="1 of 1 elements exceed it"):
        assert_within_bound([0.5], exact, [err - Fraction(1, 10**30)])
    b = np.float64(2.0**-30)
    assert_within_bound([1.0 + 2.0**-30], [1.0], b)
    with pytest.raises(AssertionError):
        assert_within_bound([np.nextafter(1.0 + 2.0**-30, 2.0)], [1.0], b)


@pytest.mark.parametrize(("operation", "algorithm", "k"), [
    ("sum", "recursive", lambda n: n - 1), ("dot", "recursive", lambda n: n),
    ("sum", "exact", lambda n: 1), ("sum", "pairwise", lambda n: (n - 1).bit_length()),
])
@pytest.mark.parametrize("n", [1, 2, 7, 100, 4096])
def test_tolerance_matches_exact_g(operation: str, algorithm: str, k: object, n: int) -> None:
    """tolerance_for >= (1+u)**k - 1 computed in Fractions, and within 1e-11 of it."""
    u = Fraction(1, 2**8)
    kk = k(n) if n > 1 or operation == "dot" else 0  # type: ignore[operator]
    exact = (1 + u) ** kk - 1
    got = tolerance_for(operation, n, "bfloat16", algorithm)
    assert Fraction(got) >= exact
    assert got <= float(exact) * (1 + 1e-11) + 1e-300


def _rne_bf16(x: Fraction) -> Fraction:
    return Fraction(decode_exact(encode_exact(x, "bfloat16"), "bfloat16"))


@given(arrays("bfloat16", st.integers(1, 40), elements=values(
    "bfloat16", min_value=-1e4, max_value=1e4, allow_subnormal=False)))
@settings(max_examples=100, deadline=None)
def test_recursive_bf16_sum_is_within_tolerance_for(x: np.ndarray) -> None:
    """Dogfooding: a reference recursive bf16 sum (exact steps, one RNE each) obeys the bound."""
    terms = [Fraction(float(v)) for v in x.astype(np.float64)]
    s = terms[0]
    for t in terms[1:]:
        s = _rne_bf16(s + t)
    bound = tolerance_for("sum", len(terms), "bfloat16", "recursive") * sum(abs(t)
                                                                              for t in terms)
    assert_within_bound([s], [sum(terms)], [Fraction(bound)])


# ----------------------------------------------------------------------------- snapshots
def _message(fn: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    return str(info.value)


def test_snapshot_ulp_close_2d_bfloat16() -> None:
    a = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, -0.0]], dtype=BF16)
    d = np.array([[1.0078125, 2.0625, 3.0], [np.inf, 1.0, 0.0]], dtype=BF16)
    assert _message(assert_ulp_close, a, d) == """\
Not within 1 ulp: 3 of 6 elements differ
worst: NaN vs number at index (1, 1) (actual nan, desired 1.0)
first 3 failing (format bfloat16):
  index   actual  bits                       desired  bits                       ulp
  (0, 1)  2.0     0x4000 0.10000000.0000000  2.0625   0x4004 0.10000000.0000100  4
  (1, 0)  4.0     0x4080 0.10000001.0000000  inf      0x7F80 0.11111111.0000000  inf vs finite
  (1, 1)  nan     0x7FC0 0.11111111.1000000  1.0      0x3F80 0.01111111.0000000  NaN vs number
ulp distances over all 6 elements:
  ulp               count
  0                 1
  1                 1
  3-4               1
  -0 vs +0 (0 ulp)  1
  NaN vs number     1
  inf vs finite     1"""


def test_snapshot_bitwise_binary64() -> None:
    a = np.array([1.0, 0.0, 2.0], np.float64)
    d = np.array([1.0, -0.0, np.nextafter(2.0, 3.0)], np.float64)
    assert _message(assert_bitwise_equal, a, d) == """\
Not bitwise equal: 2 of 3 elements differ
worst: 1 ulp at index 2 (actual 2.0, desired 2.0000000000000004)
first 2 failing (format binary64):
  index  actual  bits                desired             bits                ulp
  1      0.0     0x0000000000000000  -0.0                0x8000000000000000  -0 vs +0
  2      2.0     0x4000000000000000  2.0000000000000004  0x4000000000000001  1
ulp distances over all 3 elements:
  ulp       count
  0         1
  1         1
  -0 vs +0  1"""


def test_snapshot_within_bound() -> None:
    assert _message(assert_within_bound, [1.0, 2.5, 3.0], [1.0, 2.0, 2.0], 0.25) == """\
Not within bound: 2 of 3 elements exceed it
worst: |error| is 4 times the bound at index 2
  index  actual  exact  |error|  bound
  1      2.5     2.0    0.5      0.25
  2      3.0     2.0    1.0      0.25"""


_BF16_MAX = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
_BF16_TOP_STEP = 2.0**120  # bfloat16's spacing in its top binade


@pytest.mark.parametrize("actual, reference, kw, worst", [
    (_BF16_MAX, _BF16_MAX + 3 * _BF16_TOP_STEP, {}, "3 ulp"),
    (_BF16_MAX, 1e300, {}, "7.52316384526264e+263 ulp"),
    # inf="ulp": inf stands for every value from one step beyond max on
    (math.inf, _BF16_MAX + 0.25 * _BF16_TOP_STEP, {"max_ulp": 0.5, "inf": "ulp"}, "0.75 ulp"),
    (_BF16_MAX, _BF16_MAX + 1.5 * _BF16_TOP_STEP, {}, "1.5 ulp"),
])
def test_reference_beyond_max_is_steps_of_the_top_binade(actual: float, reference: float,
                                                        kw: dict, worst: str) -> None:
    """A real reference beyond ``max`` lies ``(ref - max) / spacing`` steps past it, a
    whole number of steps or more: the integer ``max_ulp`` check and the report count
    them (they passed, or printed a negative distance, before)."""
    a = np.array([actual], ml_dtypes.bfloat16)
    with pytest.raises(AssertionError, match=f"worst: {re.escape(worst)}"):
        assert_ulp_close(a, np.array([reference]), fmt="bf16", **kw)
    assert_ulp_close(np.array([_BF16_MAX], ml_dtypes.bfloat16),
                     np.array([_BF16_MAX + _BF16_TOP_STEP]), fmt="bf16")


def test_report_of_distances_beyond_2_63() -> None:
    """binary64 distances reach 2**64: the report's histogram has a last open bin."""
    with pytest.raises(AssertionError, match="9223372036854775809 or more"):
        assert_ulp_close(np.array([-1e300]), np.array([1e300]), max_ulp=1)


def test_neighbours_across_a_missing_zero() -> None:
    """In a signed format without zero, -2**emin and +2**emin are one step apart."""
    from numerics.formats import Format, Infinity, NaNEncoding
    from numerics.ulp import ordinal, ulp_distance

    f = Format(name="nz", exponent_bits=3, trailing_bits=1, bias=3, subnormals=False,
               infinity=Infinity.NONE, nan=NaNEncoding.TOP)
    low = f.smallest_normal
    assert int(ulp_distance(low, -low, f)) == 1
    assert int(ulp_distance(2 * low, -low, f)) == 3
    assert ordinal([0x00, 0x10, 0x01, 0x11], f).tolist() == [0, -1, 1, -2]
    codes = np.arange(f.num_codes, dtype=np.uint8)
    vals = np.array([float(decode_exact(int(c), f)) for c in codes])
    keep = ~np.isnan(vals)
    order = np.argsort(vals[keep], kind="stable")
    assert np.diff(ordinal(codes[keep][order], f)).tolist() == [1] * (keep.sum() - 1)
    zero, one = np.array([0x00], np.uint8), np.array([0x10], np.uint8)
    assert ulp_distances(zero, one, fmt=f).tolist() == [1]
    with pytest.raises(AssertionError):
        assert_ulp_close(zero, one, fmt=f, max_ulp=0)


def test_long_double_exact_values_are_not_rounded() -> None:
    """assert_within_bound compares a long double at its exact value (where long double
    is wider than float64)."""
    e = np.array([1.0], np.longdouble) + np.longdouble(2) ** -60
    if e[0] == 1.0:
        pytest.skip("long double is float64 here")
    with pytest.raises(AssertionError):
        assert_within_bound([1.0], e, [0.0])
    with pytest.raises(AssertionError):
        assert_within_bound(e, [1.0], [0.0])
    assert_within_bound([1.0], e, [2.0**-60])


@pytest.mark.parametrize("actual, desired", [(np.array([], np.float32),
                                              np.array([5.0], np.float32)),
                                             (np.zeros((2, 1), np.float32),
                                              np.zeros(3, np.float32))])
def test_a_result_of_the_wrong_shape_does_not_pass(actual: np.ndarray,
                                                   desired: np.ndarray) -> None:
    """desired broadcasts to actual's shape, never actual to a larger (or empty) one."""
    with pytest.raises(ValueError, match="broadcast to actual's shape"):
        assert_bitwise_equal(actual, desired)
    with pytest.raises(ValueError, match="broadcast to actual's shape"):
        assert_ulp_close(actual, desired)
    assert_ulp_close(np.zeros(3, np.float32), np.float32(0))  # a scalar still broadcasts
