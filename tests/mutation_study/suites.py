"""The same properties twice: with numerics.testing, and with hypothesis.extra.numpy +
torch.testing.assert_close (how they are commonly written today).

Each factory takes a kernel variant and hypothesis settings and returns a
test function; a test that raises has killed the variant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mutation_study.kernels import fp8_scale
from numerics import encode
from numerics.testing import assert_bitwise_equal, assert_stochastic_rounding, assert_ulp_close
from numerics.testing import strategies as ns

__all__ = ["SUITES", "budget"]

Factory = Callable[[Callable[..., Any], settings], Callable[[], None]]
EPS = float(np.float32(1e-6))


try:  # the baseline suite needs torch (an optional extra); numerics.testing's does not
    import torch
except ImportError:
    torch = None  # type: ignore[assignment]


def budget(max_examples: int, *, shrink: bool = True) -> settings:
    """The shared hypothesis budget: derandomized, no database, no deadline.

    ``shrink=False`` stops at the first failing example (enough to count a kill).
    """
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    phases=phases, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example])


def _codes_as(codes: np.ndarray, dtype: Any) -> np.ndarray:
    return np.asarray(codes, np.uint8).view(dtype)


def _rms_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    ms = np.mean(x64 * x64, axis=-1, keepdims=True)
    return x64 / np.sqrt(ms + EPS) * w.astype(np.float64)


def _mx_exponents(x: np.ndarray) -> np.ndarray:
    b = x.reshape(-1, 32).astype(np.float64)
    amax = np.abs(b).max(axis=1)
    _, e = np.frexp(np.where(amax > 0, amax, 1.0))
    return np.where(amax > 0, e - 1 - 2, -127).astype(np.int64)


# --------------------------------------------------------------------------- numerics.testing
F32_FINITE = ns.values("binary32", allow_nan=False, allow_infinity=False)


def n_fp8(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=st.one_of(ns.blocks("e4m3fn", 32), ns.arrays("binary32", 32, elements=F32_FINITE)))
    def test(x: np.ndarray) -> None:
        want = encode(x / fp8_scale(x), "e4m3fn", rounding="rne", overflow="saturate")
        assert_bitwise_equal(kernel(x), _codes_as(want, ml_dtypes.float8_e4m3fn))
    return test


def n_rmsnorm(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=ns.arrays("binary32", (4, 32),
                       elements=ns.values("binary32", min_value=-1e3, max_value=1e3)),
           w=ns.arrays("bfloat16", 32,
                       elements=ns.values("bfloat16", min_value=-4, max_value=4)))
    def test(x: np.ndarray, w: np.ndarray) -> None:
        w32 = w.astype(np.float32)
        # float32 arithmetic adds < 0.001 ulp of bfloat16 to the final rounding's 0.5
        assert_ulp_close(kernel(x, w32), _rms_reference(x, w32), fmt="bf16", max_ulp=0.51,
                         signed_zeros=True)
    return test


def n_sr(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=ns.arrays("binary32", 256, elements=F32_FINITE))
    def test(x: np.ndarray) -> None:
        assert_stochastic_rounding(kernel, x, "bf16", trials=64)
    return test


def n_mx(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=ns.blocks("e2m1fn", 32, n_blocks=st.integers(1, 3)))
    def test(x: np.ndarray) -> None:
        q, e = kernel(x)
        e_ref = _mx_exponents(x)
        assert_bitwise_equal(e.astype(np.float64), e_ref.astype(np.float64))
        scaled = x.reshape(-1, 32).astype(np.float64) / np.ldexp(1.0, e_ref)[:, None]
        want = encode(scaled.reshape(-1), "e2m1fn", rounding="rne", overflow="saturate")
        assert_bitwise_equal(q, _codes_as(want, ml_dtypes.float4_e2m1fn))
    return test


# --------------------------------------------------------------------------- baseline
def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(a, np.float32))


F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def b_fp8(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=hnp.arrays(np.float32, 32, elements=F32))
    def test(x: np.ndarray) -> None:
        ref = (torch.from_numpy(x) / float(fp8_scale(x))).clamp(-448, 448)
        ref = ref.to(torch.float8_e4m3fn).float()
        torch.testing.assert_close(_t(kernel(x).astype(np.float32)), ref, rtol=0, atol=0)
    return test


def b_rmsnorm(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=hnp.arrays(np.float32, (4, 32), elements=st.floats(-1e3, 1e3, width=32)),
           w=hnp.arrays(np.float32, 32, elements=st.floats(-4, 4, width=32)))
    def test(x: np.ndarray, w: np.ndarray) -> None:
        w = w.astype(ml_dtypes.bfloat16).astype(np.float32)
        ref = torch.from_numpy(_rms_reference(x, w)).to(torch.bfloat16)
        got = _t(kernel(x, w).astype(np.float32)).to(torch.bfloat16)
        torch.testing.assert_close(got, ref)           # bf16 defaults: rtol 1.6e-2, atol 1e-5
    return test


def b_sr(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(x=hnp.arrays(np.float32, 256, elements=F32))
    def test(x: np.ndarray) -> None:
        x = x[np.abs(x) < 3e38]                           # stay clear of overflow
        outs = np.stack([kernel(x, seed).astype(np.float64) for seed in range(64)])
        for out in outs:                                  # each draw within one bf16 ulp
            torch.testing.assert_close(torch.from_numpy(out), torch.from_numpy(
                x.astype(np.float64)), rtol=2**-7, atol=1e-40)
        torch.testing.assert_close(torch.from_numpy(outs.mean(axis=0)), torch.from_numpy(
            x.astype(np.float64)), rtol=2**-9, atol=1e-40)  # unbiased on average
    return test


def b_mx(kernel: Callable[..., Any], s: settings) -> Callable[[], None]:
    @s
    @given(n=st.integers(1, 3), data=st.data())
    def test(n: int, data: st.DataObject) -> None:
        x = data.draw(hnp.arrays(np.float32, 32 * n, elements=st.floats(-1e4, 1e4, width=32)))
        q, e = kernel(x)
        t = torch.from_numpy(x.astype(np.float64)).reshape(-1, 32)
        amax = t.abs().amax(dim=1)
        e_ref = torch.where(amax > 0, torch.floor(torch.log2(amax)) - 2,
                            torch.tensor(-127.0, dtype=torch.float64))
        torch.testing.assert_close(torch.from_numpy(e.astype(np.float64)), e_ref)
        scaled = (t / torch.exp2(e_ref)[:, None]).clamp(-6, 6).numpy()
        ref = scaled.astype(ml_dtypes.float4_e2m1fn).astype(np.float32).reshape(-1)
        torch.testing.assert_close(_t(q.astype(np.float32)), _t(ref), rtol=0, atol=0)
    return test


#: suite name -> kernel name -> factory
SUITES: dict[str, dict[str, Factory]] = {
    "numerics.testing": {"fp8_cast": n_fp8, "rmsnorm": n_rmsnorm, "sr_bf16": n_sr,
                         "mx_fp4": n_mx},
    "hnp + torch.testing": {"fp8_cast": b_fp8, "rmsnorm": b_rmsnorm, "sr_bf16": b_sr,
                            "mx_fp4": b_mx},
}
