"""The README section "Testing your kernel", its torch part, verbatim, so it is proved
to run (skipped where torch is not installed)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

from numerics import encode
from numerics.testing import assert_bitwise_equal, assert_stochastic_rounding
from numerics.testing import strategies as ns

torch = pytest.importorskip("torch")  # the README's torch part needs the optional extra


def torch_fp8_cast(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel under test: a per-tensor-scaled cast to float8_e4m3fn."""
    scale = x.abs().amax().clamp(min=1e-30) / 448
    return (x / scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale


finite32 = ns.values("binary32", allow_nan=False, allow_infinity=False)


@given(ns.blocks("e4m3fn", 32) | ns.arrays("binary32", 32, elements=finite32))
@settings(max_examples=50, deadline=None)
def test_torch_fp8_cast(x: np.ndarray) -> None:
    q, scale = torch_fp8_cast(torch.from_numpy(x))
    want = encode(x / scale.numpy(), "e4m3fn", overflow="saturate")  # the exact reference
    assert_bitwise_equal(q, want.view(ml_dtypes.float8_e4m3fn))       # a torch fp8 tensor


def torch_sr_bf16(x: torch.Tensor, seed: int) -> torch.Tensor:
    """The kernel under test: stochastic rounding to bfloat16 (add 16 random bits, cut)."""
    noise = torch.randint(0, 1 << 16, x.shape, dtype=torch.int32,
                          generator=torch.Generator().manual_seed(seed))
    return ((x.view(torch.int32) + noise) & -65536).view(torch.float32).to(torch.bfloat16)


@given(ns.arrays("binary32", 256, elements=finite32))
@settings(max_examples=20, deadline=None)
def test_torch_sr_bf16(x: np.ndarray) -> None:
    assert_stochastic_rounding(lambda v, seed: torch_sr_bf16(torch.from_numpy(v), seed),
                               x, "bfloat16", trials=64)   # false alarms: at most 1e-6
