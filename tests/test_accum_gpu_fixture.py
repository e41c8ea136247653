"""The tensor-core presets reproduce real H200 GEMMs bit for bit.

``tests/data/h200_gemm_cases.npz`` holds small matrices and the outputs an NVIDIA H200
gave for them (written by ``benchmarks/gpu_tensorcore.py --dump``): ``torch.mm`` with
fp16/bf16 inputs and fp32 output, and ``torch._scaled_mm`` with e4m3fn inputs, unit
scales and fp32 output, with and without ``use_fast_accum``.  The full sweep (K up to
4096) is in ``benchmarks/results/h200_tensorcore.json``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from numerics.accum import gemm

DATA = np.load(Path(__file__).parent / "data" / "h200_gemm_cases.npz")


@pytest.mark.parametrize(("case", "input_format", "preset", "promote_every"), [
    ("fp16_k64", "binary16", "hopper", None),
    ("bf16_k256", "bfloat16", "hopper", None),
    ("fp8_k512_fast", "e4m3fn", "hopper-fp8", None),  # use_fast_accum=True: no promotion
    ("fp8_k512", "e4m3fn", "hopper-fp8", 128),  # cuBLAS default: promoted every 128
])
def test_hopper_presets_match_h200(case: str, input_format: str, preset: str,
                                   promote_every: int | None) -> None:
    A, B, D = DATA[case + "_A"], DATA[case + "_B"], DATA[case + "_D"]
    model = gemm(A, B, input_format=input_format, accumulator=preset,
                 promote_every=promote_every)
    np.testing.assert_array_equal(model.astype(np.float32).view(np.uint32), D.view(np.uint32))


def test_fp8_default_path_is_not_the_unpromoted_model() -> None:
    """The fixture can fail: without promotion the model misses the cuBLAS default."""
    A, B, D = DATA["fp8_k512_A"], DATA["fp8_k512_B"], DATA["fp8_k512_D"]
    model = gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8")
    assert np.mean(model.astype(np.float32) == D) < 0.5
