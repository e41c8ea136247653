"""Probe real GPU GEMMs with ``numerics.probe`` and compare with the gemm presets.

Run on a machine with a CUDA GPU and PyTorch (never part of the test suite)::

    PYTHONPATH=.:cli python benchmarks/gpu_probe.py --out benchmarks/results/gpu_probe.json

For ``torch.mm`` in fp16 and bf16 (fp32 output where this torch can return it, else the
input dtype) and ``torch._scaled_mm`` in fp8 e4m3fn (unit scales, fp32 output) it
probes the accumulation at each K (order, group size, fractional bits, roundings,
promotion, subnormals), verifies the recovered model on fresh random inputs, and
checks which built-in ``accum.gemm`` presets reproduce the GPU bit for bit on the
same random inputs.  ``--device cpu`` is a dry run of the same code on torch's CPU
kernels (``_scaled_mm`` is then usually unavailable, which is recorded).

Cost: a probe of K = 256 takes a few dozen calls; the whole run takes well under a
minute on a GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from numerics import accum, get_format, probe
from numerics.probe.vectors import random_matrices


def torch_mm(dtype: Any, device: str, fp32_out: bool) -> Callable[[np.ndarray, np.ndarray],
                                                                  np.ndarray]:
    """``torch.mm`` in ``dtype`` on ``device`` as f(A, B) -> float64 ndarray."""
    import torch

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        a = torch.from_numpy(np.ascontiguousarray(A, np.float32)).to(device=device, dtype=dtype)
        b = torch.from_numpy(np.ascontiguousarray(B, np.float32)).to(device=device, dtype=dtype)
        out = torch.mm(a, b, out_dtype=torch.float32) if fp32_out else torch.mm(a, b)
        return out.float().cpu().numpy().astype(np.float64)

    return mm


def torch_scaled_mm_fp8(device: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``torch._scaled_mm`` with e4m3fn operands, unit scales and fp32 output."""
    import torch

    one = torch.tensor(1.0, device=device)

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        a = torch.from_numpy(np.ascontiguousarray(A, np.float32)).to(device)
        b = torch.from_numpy(np.ascontiguousarray(B, np.float32)).to(device)
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as required
        out = torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.float32)
        return out.float().cpu().numpy().astype(np.float64)

    return mm


def fp32_out_supported(device: str) -> bool:
    import torch

    try:
        a = torch.ones((16, 16), dtype=torch.float16, device=device)
        torch.mm(a, a, out_dtype=torch.float32)
        return True
    except (TypeError, RuntimeError):
        return False


def matching_presets(mm: Callable[[np.ndarray, np.ndarray], np.ndarray], fin: str, fout: str,
                     k: int, batch: int, seed: int) -> dict[str, float]:
    """Fraction of outputs each applicable preset reproduces on random inputs."""
    A, B = random_matrices(np.random.default_rng(seed), batch, k, batch, get_format(fin),
                           get_format(fout))
    got = mm(A.astype(np.float32), B.astype(np.float32))
    out: dict[str, float] = {}
    for name in accum.PRESETS:
        try:
            want = accum.gemm(A, B, input_format=fin, accumulator=name, output_format=fout)
        except ValueError:
            continue  # the preset does not model this input or output format
        out[name] = float(np.mean(want.view(np.uint64) == got.view(np.uint64)))
    return out


def run_case(label: str, mm: Callable[[np.ndarray, np.ndarray], np.ndarray], fin: str,
             fout: str, k: int, batch: int, trials: int) -> dict[str, Any]:
    case: dict[str, Any] = {"case": label, "input_format": fin, "output_format": fout, "k": k}
    t0 = time.perf_counter()
    try:
        r = probe.matmul(mm, input_format=fin, output_format=fout, k=k, batch=batch)
    except probe.ProbeError as err:
        case["error"] = str(err)
        case["findings"] = {key: (v if isinstance(v, (int, float, str, list)) else repr(v))
                            for key, v in err.findings.items() if key != "evidence"}
        return case
    except Exception as err:  # noqa: BLE001 - a kernel missing on this device is a result
        case["error"] = f"{type(err).__name__}: {err}"
        case["traceback"] = traceback.format_exc(limit=3)
        return case
    case["probe_seconds"] = round(time.perf_counter() - t0, 3)
    doc = r.as_dict()
    doc["evidence"] = len(r.evidence)  # the full evidence is large; count it
    case["model"] = doc
    case["order"] = [probe.describe_tree(m.order) for m in (r.classes or (r.model,))]
    try:
        acc = r.as_accumulator()
        a = acc["accumulator"]
        case["as_accumulator"] = a if isinstance(a, str) else {
            "structure": a.structure, "fractional_bits": a.fractional_bits,
            "group_16": a.group_16, "group_8": a.group_8, "e8m13": a.e8m13,
            "alignment_rounding": a.alignment_rounding, "output_rounding": a.output_rounding,
            "promote_every": acc["promote_every"]}
    except ValueError as err:
        case["as_accumulator"] = str(err)
    v = probe.verify(mm, r, trials=trials, batch=batch)
    case["verify"] = {"outputs": v.outputs, "matches": v.matches, "fraction": v.fraction,
                      "first_counterexample": None if v.first_counterexample is None else {
                          "model": v.first_counterexample["model"],
                          "observed": v.first_counterexample["observed"]}}
    case["presets"] = matching_presets(mm, fin, fout, k, batch, seed=k)
    return case


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--k", default="16,64,256", help="comma-separated K values")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--trials", type=int, default=3, help="verify calls per case")
    parser.add_argument("--out", default="benchmarks/results/gpu_probe.json")
    parser.add_argument("--skip-fp8", action="store_true")
    args = parser.parse_args()
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    ks = [int(x) for x in args.k.split(",")]
    wide = fp32_out_supported(args.device)
    results: dict[str, Any] = {
        "device": (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
                   else platform.processor() or "cpu"),
        "torch": torch.__version__, "python": platform.python_version(),
        "fp32_output": wide, "cases": []}
    cases: list[tuple[str, Callable[[np.ndarray, np.ndarray], np.ndarray], str, str]] = [
        ("torch.mm fp16", torch_mm(torch.float16, args.device, wide), "binary16",
         "binary32" if wide else "binary16"),
        ("torch.mm bf16", torch_mm(torch.bfloat16, args.device, wide), "bfloat16",
         "binary32" if wide else "bfloat16"),
    ]
    if not args.skip_fp8:
        cases.append(("torch._scaled_mm e4m3fn", torch_scaled_mm_fp8(args.device), "e4m3fn",
                      "binary32"))
    for label, mm, fin, fout in cases:
        for k in ks:
            case = run_case(label, mm, fin, fout, k, args.batch, args.trials)
            results["cases"].append(case)
            summary = case.get("error") or (
                f"{case['model']['adder']} G={case['model']['group_size']} "
                f"F={case['model']['fractional_bits']} verify={case['verify']['fraction']:.4f} "
                f"({case['probe_seconds']} s)")
            print(f"{label:26s} K={k:5d}  {summary}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=repr) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
