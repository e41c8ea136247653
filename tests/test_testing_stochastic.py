"""assert_rounded_from and assert_stochastic_rounding against independent references.

The neighbours come from the sorted list of every value of a small format
(decoded by the reference codec) and exact Fraction comparisons; the
stochastic kernels are written here in numpy (a correct one and biased ones).
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.codec import decode_exact
from numerics.formats import get_format
from numerics.testing.stochastic import assert_rounded_from, assert_stochastic_rounding

E4M3FN = get_format("e4m3fn")
VALUES = sorted({Fraction(decode_exact(c, E4M3FN)) for c in range(256)
                 if not (isinstance(decode_exact(c, E4M3FN), float)
                         and math.isnan(decode_exact(c, E4M3FN)))})


def _neighbours(x: Fraction) -> tuple[Fraction, Fraction]:
    i = bisect.bisect_left(VALUES, x)
    if i < len(VALUES) and VALUES[i] == x:
        return x, x
    return VALUES[i - 1], VALUES[i]


@given(st.fractions(min_value=-448, max_value=448, max_denominator=2**12))
@settings(max_examples=300, deadline=None)
def test_bracket_matches_the_sorted_value_list(x: Fraction) -> None:
    lo, hi = _neighbours(x)
    exact = np.array([x], dtype=object)
    for v in {lo, hi}:
        assert_rounded_from(np.array([float(v)]), exact, "e4m3fn")
    # the next value outside the bracket on either side is rejected
    i, j = VALUES.index(lo), VALUES.index(hi)
    for k in (i - 1, j + 1):
        if 0 <= k < len(VALUES) and VALUES[k] not in (lo, hi) and not (
                VALUES[k] == 0 and x == 0):
            with pytest.raises(AssertionError, match="not its neighbours"):
                assert_rounded_from(np.array([float(VALUES[k])]), exact, "e4m3fn")
    if float(x) == x:                     # float64 input gives the same bracket
        for v in {lo, hi}:
            assert_rounded_from(np.array([float(v)]), np.array([float(x)]), "e4m3fn")


def test_zero_signs_beyond_max_and_specials() -> None:
    tiny = -2.0**-12                     # between -0 and -2**-9 in e4m3fn
    assert_rounded_from(np.array([-0.0]), np.array([tiny]), "e4m3fn")
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([0.0]), np.array([tiny]), "e4m3fn")  # lost -0
    assert_rounded_from(np.array([448.0]), np.array([470.0]), "e4m3fn")
    assert_rounded_from(np.array([np.nan]), np.array([470.0]), "e4m3fn")   # fn: NaN
    assert_rounded_from(np.array([np.inf]), np.array([60000.0]), "e5m2")
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([-np.inf]), np.array([60000.0]), "e5m2")
    assert_rounded_from(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), "bf16")
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([1.0]), np.array([np.nan]), "bf16")


def _sr_kernel(bits: int, *, le: bool = False) -> Any:
    """bfloat16 stochastic rounding of float32 with a ``bits``-bit draw (numpy)."""
    def kernel(x: np.ndarray, seed: int) -> np.ndarray:
        u = np.random.default_rng(seed).integers(0, 1 << bits, x.shape)
        b = np.float32(x).view(np.uint32).astype(np.int64)
        low = b & 0xFFFF
        frac_bits = low >> (16 - bits)                  # frac truncated to ``bits`` bits
        away = (u <= frac_bits) if le else (u < frac_bits)
        out = ((b >> 16) + away) << 16
        return out.astype(np.uint32).view(np.float32)
    return kernel


def test_stochastic_rounding_passes_a_correct_kernel_and_catches_u_le_frac() -> None:
    rng = np.random.default_rng(5)
    x = (1 + rng.integers(0, 16, 512) / 16 * 2**-7).astype(np.float32)   # 4-bit fracs
    assert_stochastic_rounding(_sr_kernel(4), x, "bf16", trials=200)
    with pytest.raises(AssertionError):
        assert_stochastic_rounding(_sr_kernel(4, le=True), x, "bf16", trials=200)
    # only inexact inputs: the bias is caught by the pooled test
    inexact = x[(x.view(np.uint32) & 0xFFFF) != 0]
    with pytest.raises(AssertionError, match="Bernstein"):
        assert_stochastic_rounding(_sr_kernel(4, le=True), inexact, "bf16", trials=200)


def test_false_alarm_rate_is_small_over_many_runs() -> None:
    """20 independent runs of a correct kernel at alpha = 0.05: at most a few alarms."""
    rng = np.random.default_rng(11)
    x = (1 + rng.integers(1, 16, 64) / 16 * 2**-7).astype(np.float32)
    alarms = 0
    for run in range(20):
        def kernel(v: np.ndarray, seed: int, run: int = run) -> np.ndarray:
            return _sr_kernel(4)(v, seed + 1000 * run)
        try:
            assert_stochastic_rounding(kernel, x, "bf16", trials=100, alpha=0.05)
        except AssertionError:
            alarms += 1
    assert alarms <= 3


def test_bad_arguments() -> None:
    x = np.array([1.0], np.float32)
    with pytest.raises(ValueError, match="trials=0"):
        assert_stochastic_rounding(_sr_kernel(4), x, "bf16", trials=0)
    with pytest.raises(ValueError, match="alpha=1.5"):
        assert_stochastic_rounding(_sr_kernel(4), x, "bf16", trials=3, alpha=1.5)
    with pytest.raises(TypeError, match="kernel="):
        assert_stochastic_rounding(3, x, "bf16", trials=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        assert_rounded_from(np.array([1.0, 2.0], np.float32), np.array([1.0], np.float32), "bf16")


@pytest.mark.parametrize("fmt", ["e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz"])
def test_small_negative_values_without_negative_zero(fmt: str) -> None:
    """Between -smallest and 0 in a format without -0 the neighbours are +0 and
    -smallest (the sign of the value, not of the +0 below it): the library's own SR
    passes, a kernel that returns +smallest fails (both were the other way round)."""
    from numerics import encode
    from numerics.formats import get_format

    f = get_format(fmt)
    tiny = f.smallest_subnormal
    x = np.array([-tiny / 4])
    assert_rounded_from(np.array([0], np.uint8), x, fmt)
    assert_rounded_from(np.array([f.sign_mask | 1], np.uint8), x, fmt)
    with pytest.raises(AssertionError):
        assert_rounded_from(np.array([1], np.uint8), x, fmt)
    assert_stochastic_rounding(
        lambda v, rng: np.asarray(encode(v, fmt, rounding="sr", rng=rng)), x, fmt, 200)
