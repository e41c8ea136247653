"""Compare the tensor-core presets of ``numerics.accum.gemm`` with real GPU GEMMs.

Run on a machine with a CUDA GPU and PyTorch (never part of the test suite)::

    PYTHONPATH=.:cli python benchmarks/gpu_tensorcore.py --preset hopper --out results.json

For fp16 and bf16 inputs (``torch.mm`` with fp32 output, or fp16/bf16 output when this
torch cannot return fp32) and for fp8 e4m3fn inputs (``torch._scaled_mm`` with unit
scales and fp32 output) it draws matrices whose entries span many binades (so that
alignment and truncation matter), multiplies them on the GPU, and counts, for each K,
how many outputs the model reproduces bit for bit, next to two simple baselines: the
exact product rounded once to fp32, and sequential fp32 accumulation.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

import numpy as np

import numerics
from numerics.accum import gemm


def draw(rng: np.random.Generator, shape: tuple[int, int], fmt: str, spread: int) -> np.ndarray:
    """Values of ``fmt`` with exponents spread over ``2 * spread`` binades, mixed signs."""
    mag = (1 + rng.random(shape)) * np.exp2(rng.integers(-spread, spread, shape))
    return numerics.round_to(np.where(rng.random(shape) < 0.5, -mag, mag), fmt)


def ulps32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in binary32 ulps between two arrays of binary32 values."""
    def ordinal(x: np.ndarray) -> np.ndarray:
        bits = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordinal(a) - ordinal(b))


def summarize(model: np.ndarray, gpu: np.ndarray) -> dict[str, Any]:
    d = ulps32(model, gpu)
    return {"bit_exact": float(np.mean(d == 0)), "max_ulp": int(d.max()),
            "mean_ulp": float(d.mean())}


def main() -> None:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="hopper")
    parser.add_argument("--fp8-preset", default="hopper-fp8")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--out", default="gpu_tensorcore.json")
    parser.add_argument("--fp8-only", action="store_true")
    parser.add_argument("--fp8-promotion", action="store_true")
    parser.add_argument("--skip-fp8", action="store_true")
    parser.add_argument("--dump", default=None, help="write small cases and GPU outputs (npz)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    dev = torch.device("cuda")
    rng = np.random.default_rng(2025)
    n = args.size
    results: dict[str, Any] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                               "python": platform.python_version(), "cases": []}
    for fmt, tdt in (() if args.fp8_only else
                     (("binary16", torch.float16), ("bfloat16", torch.bfloat16))):
        for K in (16, 64, 256, 1024):
            spread = 4 if fmt == "binary16" else 12
            A, B = draw(rng, (n, K), fmt, spread), draw(rng, (K, n), fmt, spread)
            ta, tb = torch.tensor(A, dtype=tdt, device=dev), torch.tensor(B, dtype=tdt, device=dev)
            try:
                out = torch.mm(ta, tb, out_dtype=torch.float32)
                out_fmt = "binary32"
            except (TypeError, RuntimeError):
                out = torch.mm(ta, tb)
                out_fmt = fmt
            gpu = out.float().cpu().numpy().astype(np.float64)
            start = time.perf_counter()
            model = gemm(A, B, input_format=fmt, accumulator=args.preset, output_format=out_fmt)
            seconds = time.perf_counter() - start
            exact = _exact_matmul(A, B, out_fmt)
            seq = gemm(A, B, input_format=fmt, accumulator="binary32", output_format=out_fmt)
            results["cases"].append({
                "inputs": fmt, "K": K, "output": out_fmt, "preset": args.preset,
                "model": summarize(model, gpu), "exact_rne": summarize(exact, gpu),
                "sequential_fp32": summarize(seq, gpu), "model_seconds": seconds})
            print(results["cases"][-1], flush=True)
    import ml_dtypes

    for K in () if args.skip_fp8 else (32, 128, 1024, 4096):
        A, B = draw(rng, (n, K), "e4m3fn", 5), draw(rng, (K, n), "e4m3fn", 5)

        a8 = np.ascontiguousarray(A.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
        b8 = np.ascontiguousarray(B.T.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
        ta = torch.from_numpy(a8).to(dev).view(torch.float8_e4m3fn).contiguous()
        tb = torch.from_numpy(b8).to(dev).view(torch.float8_e4m3fn).contiguous().t()
        one = torch.ones((), dtype=torch.float32, device=dev)
        out = torch._scaled_mm(ta, tb, scale_a=one, scale_b=one, out_dtype=torch.float32)
        gpu = out.cpu().numpy().astype(np.float64)
        for preset in (args.fp8_preset, args.preset):
            try:
                model = gemm(A, B, input_format="e4m3fn", accumulator=preset)
            except ValueError as err:
                results["cases"].append({"inputs": "e4m3fn", "K": K, "preset": preset,
                                         "error": str(err)})
                continue
            exact = _exact_matmul(A, B, "binary32")
            exact64 = _exact_matmul(A, B)
            results["cases"].append({
                "inputs": "e4m3fn", "K": K, "output": "binary32", "preset": preset,
                "model": summarize(model, gpu), "exact_rne": summarize(exact, gpu),
                "max_rel_err_gpu_vs_exact": float(np.max(np.abs(gpu - exact64)
                                                         / np.maximum(np.abs(exact64), 1e-30)))})
            print(results["cases"][-1], flush=True)
    if args.dump:
        # Small cases with their GPU outputs, kept as a test fixture (tests/data).
        cases: dict[str, Any] = {}
        for name, fmt, tdt, K in (("fp16_k64", "binary16", torch.float16, 64),
                                  ("bf16_k256", "bfloat16", torch.bfloat16, 256)):
            A, B = draw(rng, (16, K), fmt, 8), draw(rng, (K, 16), fmt, 8)
            ta, tb = torch.tensor(A, dtype=tdt, device=dev), torch.tensor(B, dtype=tdt, device=dev)
            out = torch.mm(ta, tb, out_dtype=torch.float32)
            cases[name + "_A"], cases[name + "_B"] = A, B
            cases[name + "_D"] = out.cpu().numpy()
        for name, K, fast in (("fp8_k512_fast", 512, True), ("fp8_k512", 512, False)):
            A, B = draw(rng, (16, K), "e4m3fn", 5), draw(rng, (K, 16), "e4m3fn", 5)
            a8 = np.ascontiguousarray(A.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
            b8 = np.ascontiguousarray(B.T.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
            ta = torch.from_numpy(a8).to(dev).view(torch.float8_e4m3fn).contiguous()
            tb = torch.from_numpy(b8).to(dev).view(torch.float8_e4m3fn).contiguous().t()
            one = torch.ones((), dtype=torch.float32, device=dev)
            out = torch._scaled_mm(ta, tb, scale_a=one, scale_b=one, out_dtype=torch.float32,
                                   use_fast_accum=fast)
            cases[name + "_A"], cases[name + "_B"] = A, B
            cases[name + "_D"] = out.cpu().numpy()
        np.savez_compressed(args.dump, gpu=np.array(results["gpu"]),
                            torch=np.array(torch.__version__),
                            **cases)
    if args.fp8_promotion:
        for K in (256, 1024, 4096):
            A, B = draw(rng, (n, K), "e4m3fn", 5), draw(rng, (K, n), "e4m3fn", 5)
            a8 = np.ascontiguousarray(A.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
            b8 = np.ascontiguousarray(B.T.astype(ml_dtypes.float8_e4m3fn)).view(np.uint8)
            ta = torch.from_numpy(a8).to(dev).view(torch.float8_e4m3fn).contiguous()
            tb = torch.from_numpy(b8).to(dev).view(torch.float8_e4m3fn).contiguous().t()
            one = torch.ones((), dtype=torch.float32, device=dev)
            for fast in (False, True):
                out = torch._scaled_mm(ta, tb, scale_a=one, scale_b=one, out_dtype=torch.float32,
                                       use_fast_accum=fast)
                gpu = out.cpu().numpy().astype(np.float64)
                for every in (None, 32, 64, 128, 256, 512):
                    if every is not None and every >= K:
                        continue
                    model = gemm(A, B, input_format="e4m3fn", accumulator=args.fp8_preset,
                                 promote_every=every)
                    case = {"inputs": "e4m3fn", "K": K, "use_fast_accum": fast,
                            "preset": args.fp8_preset, "promote_every": every,
                            "model": summarize(model, gpu)}
                    results["cases"].append(case)
                    print(case, flush=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)


def _exact_matmul(A: np.ndarray, B: np.ndarray, fmt: str = "binary64") -> np.ndarray:
    """A @ B: the exact dot products, each rounded once (nearest-even) into ``fmt``."""
    from numerics import accum

    x = np.broadcast_to(A[:, None, :], (A.shape[0], B.shape[1], A.shape[1]))
    y = np.broadcast_to(B.T[None, :, :], x.shape)
    return np.asarray(accum.dot(x, y, fmt, algorithm="exact").value)


if __name__ == "__main__":
    main()
