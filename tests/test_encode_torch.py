"""torch CPU tensors are encoded exactly like the numpy arrays they hold (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

import numerics

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_torch_tensor_matches_numpy(dtype: str) -> None:
    rng = np.random.default_rng(7)
    values: np.ndarray = rng.standard_normal(5000) * 300
    if dtype == "int64":
        values = rng.integers(-(2**62), 2**62, 5000)
        tensor = torch.tensor(values, dtype=torch.int64)
    else:
        tensor = torch.tensor(values, dtype=getattr(torch, dtype))
    # the exact values: float64 holds every float tensor exactly; int64 goes as Python ints
    exact = tensor.to(torch.float64).numpy() if dtype != "int64" else values.astype(object)
    for fmt in ("e4m3fn", "bfloat16", "binary32"):
        expected = numerics.encode(exact, fmt, rounding="rtz")
        got = numerics.encode(tensor, fmt, rounding="rtz")
        np.testing.assert_array_equal(got, expected)


def test_torch_fp8_tensor_round_trips() -> None:
    values = torch.tensor([0.5, -448.0, 3.0]).to(torch.float8_e4m3fn)
    codes = numerics.encode(values, "e4m3fn")
    np.testing.assert_array_equal(codes, values.view(torch.uint8).numpy())
