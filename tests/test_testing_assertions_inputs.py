"""numerics.testing assertions: inputs (torch, ml_dtypes, bad types) and edge reports.

Issue 16 items 3, 5, 6 and issue 13 item 6 and its assertion items.  References
are independent: torch's own conversions, ml_dtypes, Fraction arithmetic.
"""

from __future__ import annotations

import math
import time
from decimal import Decimal
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from numerics.testing import (
    assert_bitwise_equal,
    assert_ulp_close,
    assert_within_bound,
    tolerance_for,
    ulp_distances,
)

try:
    import torch
except ImportError:  # torch is an optional extra: its tests skip without it
    torch = None  # type: ignore[assignment]
requires_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

TORCH_FP8 = [] if torch is None else [(torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn, "e4m3fn"),
             (torch.float8_e5m2, ml_dtypes.float8_e5m2, "e5m2"),
             (torch.float8_e4m3fnuz, ml_dtypes.float8_e4m3fnuz, "e4m3fnuz"),
             (torch.float8_e5m2fnuz, ml_dtypes.float8_e5m2fnuz, "e5m2fnuz")]


def _message(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- torch
@requires_torch
def test_torch_bfloat16_tensors_are_read_bit_for_bit() -> None:
    x = torch.tensor([1.0, -0.0, 3.0, float("nan")], dtype=torch.bfloat16)
    assert_ulp_close(x, x)
    assert_bitwise_equal(x, x.clone())
    y = x.clone()
    y[0] = 1.0078125                                   # one bf16 ulp above 1
    assert_ulp_close(x, y, max_ulp=1)
    msg = _message(assert_ulp_close, x, y, max_ulp=0)
    assert "format bfloat16" in msg and "0x3F81" in msg
    assert ulp_distances(x, y).tolist()[:3] == [1, 0, 0]


@requires_torch
@pytest.mark.parametrize(("tdtype", "mdtype", "name"), TORCH_FP8)
def test_torch_fp8_tensors_match_ml_dtypes_bits(tdtype: Any, mdtype: Any, name: str) -> None:
    values = torch.tensor([0.5, 1.0, -2.0, 0.0], dtype=torch.float32)
    t = values.to(tdtype)
    m = values.numpy().astype(mdtype)
    assert_bitwise_equal(t, m)                         # torch tensor against ml_dtypes array
    assert_bitwise_equal(t, m, fmt=name)


@requires_torch
def test_torch_float_tensors_and_mixed_kinds() -> None:
    t = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    assert_ulp_close(t, np.array([1.0, 2.0], np.float16), max_ulp=0)
    assert_ulp_close(torch.tensor([1.0, 2.0], dtype=torch.float64), [1.0, 2.0])
    assert_ulp_close(torch.tensor([1, 2], dtype=torch.int32),
                     np.array([1.0, 2.0], ml_dtypes.bfloat16), max_ulp=0)


@requires_torch
def test_torch_bf16_with_float64_reference_in_named_format() -> None:
    """fmt='bf16' with a float64 reference works (issue 13): fractional distances."""
    ref = np.array([1.0 + 2**-9, 3.0 + 2**-6 * 0.75, 100.0])       # exact references
    got = torch.tensor(ref, dtype=torch.float64).to(torch.bfloat16)  # torch's RNE cast
    assert_ulp_close(got, ref, fmt="bf16", max_ulp=0.5)               # correctly rounded
    bad = got.clone()
    bad[1] = 3.0                                                      # rounded down: 0.75 ulp
    msg = _message(assert_ulp_close, bad, ref, fmt="bf16", max_ulp=0.5)
    assert "worst: 0.75 ulp at index 1" in msg and "(between codes)" in msg
    assert_ulp_close(bad, ref, fmt="bf16", max_ulp=1)


@requires_torch
def test_complex_tensors_are_rejected() -> None:
    with pytest.raises(TypeError, match="complex"):
        assert_ulp_close(torch.tensor([1 + 2j]), [1.0])


# --------------------------------------------------------------------------- issue 13
@pytest.mark.parametrize(("actual", "desired"), [
    (1 + 2j, 1.0), ("1.5", 1.5), (None, None), (None, "1.5"), (b"1", 1.0),
    ([1.0, None], [1.0, 2.0]), (np.array(["1.5"]), [1.5]), ({1: 2}, 1.0),
    (np.array([True]), [1.0]),
])
def test_what_cannot_be_compared_raises_type_error(actual: Any, desired: Any) -> None:
    for fn in (assert_bitwise_equal, assert_ulp_close):
        with pytest.raises(TypeError):
            fn(actual, desired)
    with pytest.raises(TypeError):
        assert_within_bound(actual, desired, 1.0)


def test_ragged_lists_name_the_argument() -> None:
    with pytest.raises(ValueError, match="desired, a ragged"):
        assert_ulp_close([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="actual, a ragged"):
        assert_bitwise_equal([[1.0], [2.0, 3.0]], [1.0])
    with pytest.raises(ValueError, match="bound, a ragged"):
        assert_within_bound([1.0], [1.0], [[1.0], [1.0, 2.0]])


def test_huge_max_ulp_is_allowed() -> None:
    assert_ulp_close(np.ones(2), np.ones(2), max_ulp=2**70)
    big = np.finfo(np.float64).max
    assert_ulp_close(np.array([-big]), np.array([big]), max_ulp=2**70)
    with pytest.raises(AssertionError, match="NaN vs number"):
        assert_ulp_close(np.array([np.nan]), np.array([1.0]), max_ulp=2**70)
    with pytest.raises(TypeError, match="max_ulp=True"):
        assert_ulp_close([1.0], [1.0], max_ulp=True)


def test_tolerance_for_huge_n_is_inf_not_overflow_error() -> None:
    assert tolerance_for("dot", 10**9, "bfloat16") == math.inf
    assert tolerance_for("sum", 10**9, "e5m2", "kahan") == math.inf
    assert tolerance_for("sum", 10**9, "bfloat16") == math.inf
    assert tolerance_for("sum", 10**9, "binary64") < 1e-6       # stays finite where it is


def test_within_bound_with_huge_decimals_is_immediate() -> None:
    start = time.perf_counter()
    msg = _message(assert_within_bound, [1.0], [Decimal("1e99999999")], [1.0])
    assert "1E+99999999" in msg
    assert_within_bound([1.0], [Decimal("1e-99999999")], [1.0])
    with pytest.raises(AssertionError):           # 0.5 + tiny exceeds the bound 0.5
        assert_within_bound([0.5], [Decimal("-1e-99999999")], [0.5])
    assert_within_bound([0.5], [Decimal("1e-99999999")], [0.5])
    assert_within_bound([1.0], [Decimal("1e99999999")], [Decimal("1e999999999")])
    assert time.perf_counter() - start < 5


# --------------------------------------------------------------------------- item 5
def test_within_bound_fails_at_nan_and_inf_outputs() -> None:
    msg = _message(assert_within_bound, [1.0, np.nan, np.inf, 2.0], [1.0, 1.0, 1.0, 2.0], 0.5)
    assert "2 of 4 elements exceed it" in msg and "worst: |error| is nan at index 1" in msg
    assert "  2      inf" in msg
    assert_within_bound([np.inf, np.nan], [np.inf, np.nan], 0.0)   # same specials pass
    with pytest.raises(AssertionError):
        assert_within_bound([-np.inf], [np.inf], math.inf)
    assert_within_bound([1e300], [0.0], math.inf)
    with pytest.raises(ValueError, match="bound.flat\\[0\\]=nan"):
        assert_within_bound([1.0], [1.0], [np.nan])


@requires_torch
def test_within_bound_takes_torch_and_ml_dtypes() -> None:
    assert_within_bound(torch.tensor([1.0], dtype=torch.bfloat16), [Fraction(1001, 1000)],
                        [Fraction(1, 1000)])
    assert_within_bound(np.array([0.5], ml_dtypes.float8_e4m3fn), [0.5], [0])


# --------------------------------------------------------------------------- item 6
def test_nan_sign_and_zero_sign_mismatches_are_named() -> None:
    a = np.array([0x7FC00000, 0x00000000], dtype=np.uint32).view(np.float32)
    d = np.array([0xFFC00000, 0x80000000], dtype=np.uint32).view(np.float32)
    msg = _message(assert_bitwise_equal, a, d)
    assert "worst: NaN sign at index 0" in msg
    assert "nan     0x7FC00000  -nan     0xFFC00000  NaN sign" in msg
    assert "-0 vs +0" in msg and "worst: 0 ulp" not in msg
    p = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
    msg = _message(assert_bitwise_equal, a[:1], p, canonical_nan=False)
    assert "NaN payload" in msg


def test_crossing_into_inf_fails_unless_asked() -> None:
    mx = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    got = np.array([np.inf, -np.inf], dtype=ml_dtypes.bfloat16)
    want = np.array([mx, -mx], dtype=ml_dtypes.bfloat16)
    msg = _message(assert_ulp_close, got, want, max_ulp=1)
    assert "inf vs finite" in msg and "2 of 2" in msg
    assert_ulp_close(got, want, max_ulp=1, inf="ulp")        # the explicit option
    msg = _message(assert_ulp_close, got[:1], -got[:1], max_ulp=10**6)
    assert "inf sign" in msg
    with pytest.raises(ValueError, match="inf='loose'"):
        assert_ulp_close(got, want, inf="loose")  # type: ignore[arg-type]


def test_signed_zeros_default_is_strict_only_at_max_ulp_0() -> None:
    a, d = np.array([-0.0], np.float32), np.array([0.0], np.float32)
    msg = _message(assert_ulp_close, a, d, max_ulp=0)
    assert "1 (-0 vs +0)" in msg
    assert_ulp_close(a, d, max_ulp=1)
    assert_ulp_close(a, d, max_ulp=0, signed_zeros=False)
    msg = _message(assert_ulp_close, np.array([-0.0, 1.0], np.float32),
                   np.array([0.0, 2.0], np.float32))
    assert "-0 vs +0 (0 ulp)" in msg      # the passing pair is still shown for what it is


def test_unsigned_format_reads_zero_and_negative_references_as_nan() -> None:
    """e8m0fnu has no sign and no zero: encode gives NaN for a zero or negative input, so
    such a reference is NaN (it once read -4 as 4, and passed 4 against it at 0 ulp);
    a positive reference below 2**-127 still counts as 2**-127."""
    four = np.array([4.0], ml_dtypes.float8_e8m0fnu)
    for ref, max_ulp in (([-4.0], 0), ([-3.0], 0.5), ([0.0], 0), ([Fraction(-1, 3)], 0.5)):
        with pytest.raises(AssertionError):
            assert_ulp_close(four, ref, max_ulp=max_ulp)
        assert_ulp_close(np.array([np.nan], ml_dtypes.float8_e8m0fnu), ref, max_ulp=max_ulp)
    assert_ulp_close(np.array([2.0**-127], ml_dtypes.float8_e8m0fnu), [1e-50], max_ulp=0)


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_big_endian_floats_are_read_bit_for_bit(dtype: str) -> None:
    """A float array in either byte order holds the same codes: a signalling NaN's bits
    count with canonical_nan=False (a big-endian one was once read by value, as the
    canonical NaN), and big-endian unsigned codes are codes."""
    width = {"f2": "u2", "f4": "u4", "f8": "u8"}[dtype]
    bits = {"f2": 0x7C01, "f4": 0x7F800001, "f8": 0x7FF0000000000001}[dtype]
    be = np.array([bits, 0x3C00 if dtype == "f2" else 0], ">" + width).view(">" + dtype)
    le = be.astype("<" + dtype)
    assert le.view("<" + width)[0] == bits  # (the cast keeps the bits)
    assert_bitwise_equal(be, le, canonical_nan=False)
    with pytest.raises(AssertionError):
        assert_bitwise_equal(be, np.array([np.nan, le[1]], "<" + dtype), canonical_nan=False)
    with pytest.raises(AssertionError):
        assert_ulp_close(be, np.array([np.nan, le[1]], "<" + dtype), max_ulp=0, nan="code")
    assert_bitwise_equal(np.array([0x3F80], ">u2"), [1.0], fmt="bfloat16")


def test_long_double_and_decimal_zeros_keep_their_sign() -> None:
    """-0.0 as a long double or a Decimal is -0 (it once read as +0)."""
    negs: list[Any] = [np.array([-0.0], np.longdouble), [Decimal("-0")], [Decimal("-0E+5")]]
    for neg in negs:
        with pytest.raises(AssertionError, match="differ"):
            assert_bitwise_equal(np.array([0.0], np.float32), neg)
        assert_bitwise_equal(np.array([-0.0], np.float32), neg)
        with pytest.raises(AssertionError):
            assert_ulp_close(np.array([0.0], np.float32), neg, max_ulp=0)
