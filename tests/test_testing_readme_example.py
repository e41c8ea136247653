"""The README section "Testing your kernel", verbatim, so it is proved to run."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings

from numerics.testing import assert_ulp_close, assert_within_bound, tolerance_for
from numerics.testing.strategies import arrays, values


def fp8_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The kernel under test: e4m3fn inputs, exact products, float32 accumulation."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):  # recursive accumulation, one rounding per step
        acc += a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)
    return acc


K = 8
elements = values("e4m3fn", min_value=0, max_value=448)  # finite, non-negative


@given(arrays("e4m3fn", (4, K), elements=elements), arrays("e4m3fn", (K, 3), elements=elements))
@settings(max_examples=50, deadline=None)
def test_fp8_matmul(a: np.ndarray, b: np.ndarray) -> None:
    c = fp8_matmul(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64  # exact: 8-bit products, K = 8 of them fit in 53 bits
    # 1. The error bound of recursive float32 accumulation, not a guessed rtol.
    bound = tolerance_for("dot", K, "binary32", "recursive") * (np.abs(a64) @ np.abs(b64))
    assert_within_bound(c, exact, bound)
    # 2. Rounded to bfloat16, the result is within 1 ulp of the rounded exact product.
    assert_ulp_close(c.astype(ml_dtypes.bfloat16),
                     exact.astype(np.float32).astype(ml_dtypes.bfloat16), max_ulp=1)


@given(arrays("bfloat16", (2, 3)))  # hypothesis.extra.numpy.from_dtype(bfloat16) raises
@settings(max_examples=20, deadline=None)
def test_bfloat16_arrays_one_liner(x: np.ndarray) -> None:
    assert x.dtype == ml_dtypes.bfloat16 and x.shape == (2, 3)
