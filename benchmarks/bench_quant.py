"""Quantization benchmarks: MX and NVFP4 quantize + dequantize on (4096, 4096) float32 against
torchao's CPU path in the same run; a numpy copy as the memory yardstick; TurboQuant.

Every row says its thread count.  torchao (a benchmark-only extra) is imported with its
warnings silenced; without it the peer column is empty.  Both sides dequantize to float32.

Run: ``python benchmarks/bench_quant.py`` (``--quick`` for (1024, 1024)).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

import numpy as np
from _timing import best_of, row

from numerics.quant import TurboQuant, mx, nvfp4, quantize
from numerics.threads import get_num_threads, set_num_threads

MX_NAMES = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1")


def _torchao() -> tuple[Any, Any, Any, Any] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import logging

            logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
            import torch
            from torchao.prototype.mx_formats import constants
            from torchao.prototype.mx_formats.mx_tensor import MXTensor
            from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor
    except ImportError:
        return None
    return torch, constants, MXTensor, NVFP4Tensor


def _peer_jobs(x: np.ndarray) -> dict[str, Callable[[], Any]]:
    """torchao's quantize + dequantize (float32) per format, or {} without torchao."""
    found = _torchao()
    if found is None:
        return {}
    torch, constants, mx_tensor, nvfp4_tensor = found
    t = torch.from_numpy(x)
    elem = {"mxfp8_e4m3": torch.float8_e4m3fn, "mxfp8_e5m2": torch.float8_e5m2,
            "mxfp6_e3m2": constants.DTYPE_FP6_E3M2, "mxfp6_e2m3": constants.DTYPE_FP6_E2M3,
            "mxfp4_e2m1": torch.float4_e2m1fn_x2}

    def job(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn()
        return run

    def mx_job(e: Any) -> Callable[[], Any]:
        return job(lambda: mx_tensor.to_mx(t, e, 32).dequantize(torch.float32))

    jobs: dict[str, Callable[[], Any]] = {name: mx_job(e) for name, e in elem.items()}
    jobs["nvfp4"] = job(lambda: nvfp4_tensor.to_nvfp4(t).dequantize(torch.float32))
    return jobs


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Benchmark rows (see benchmarks/run.py for the schema)."""
    n = 1024 if quick else 4096
    repeat = 2 if quick else 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    rows: list[dict[str, Any]] = []
    peers = _peer_jobs(x)
    torch = _torchao()
    before = get_num_threads()
    try:
        set_num_threads(1)
        if torch is not None:
            torch[0].set_num_threads(1)
        t_copy = best_of(lambda: x.copy(), 3)
        def ours_job(name: str) -> Callable[[], Any]:
            return lambda: mx(x, name).dequantize(np.float32)

        ours_jobs: dict[str, Callable[[], Any]] = {name: ours_job(name) for name in MX_NAMES}
        # torchao's to_nvfp4 without a per-tensor scale is one-level NVFP4: the same work
        # (and the same codes) as nvfp4(x, tensor_scale=None)
        ours_jobs["nvfp4"] = lambda: nvfp4(x, tensor_scale=None).dequantize(np.float32)
        for name, fn in ours_jobs.items():
            ours = best_of(fn, repeat)
            peer = peers.get(name)
            peer_s = None if peer is None else best_of(peer, repeat)
            rows.append(row("quant", f"{name} quantize+dequantize ({n}, {n}) float32, "
                                     f"1 thread [copy limit {t_copy * 1e3:.1f} ms]",
                            ours, "torchao 0.18 CPU" if peer else None, peer_s,
                            "faster than torchao", 1.0 if peer else None))
        # per-tensor e4m3fn (exact division by a binary32 scale, no target) beside the
        # numpy / ml_dtypes expression a user would write (a float32 quotient, rounded twice)
        import ml_dtypes

        ours = best_of(lambda: quantize(x, "e4m3fn", scaling="tensor"), repeat)
        peer_s = best_of(lambda: (x / np.float32(np.abs(x).max() / 448)).astype(
            ml_dtypes.float8_e4m3fn), repeat)
        rows.append(row("quant", f"e4m3fn per-tensor quantize ({n}, {n}) float32, 1 thread",
                        ours, "numpy x / s then ml_dtypes astype", peer_s, "report"))
        two_level = best_of(lambda: nvfp4(x).dequantize(np.float32), repeat)
        rows.append(row("quant", f"nvfp4 two-level (tensor_scale='tensor', the default) "
                                 f"quantize+dequantize ({n}, {n}), 1 thread",
                        two_level, "one-level, 1 thread", next(
                            r["ours_s"] for r in rows if r["case"].startswith("nvfp4")),
                        "report"))
        set_num_threads(before)
        two = best_of(lambda: nvfp4(x, tensor_scale=None).dequantize(np.float32), repeat)
        rows.append(row("quant", f"nvfp4 quantize+dequantize ({n}, {n}), {before} threads",
                        two, "same call, 1 thread", next(r["ours_s"] for r in rows
                                                         if r["case"].startswith("nvfp4")),
                        "report"))
    finally:
        set_num_threads(before)
    nv = 4096 if quick else 65536
    v = rng.standard_normal((nv, 128))
    tq = TurboQuant(128, 4, seed=0)
    t_tq = best_of(lambda: tq.quantize(v), 3)
    rows.append(row("quant", f"TurboQuant d=128 4-bit quantize {nv} vectors: "
                             f"{nv / t_tq:,.0f} vectors/s", t_tq, None, None, "report"))
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        ratio = "" if r["peer_s"] is None else f"  peer/ours {r['peer_s'] / r['ours_s']:.2f}x"
        peer = "" if r["peer_s"] is None else f", {r['peer']} {r['peer_s']:.4f} s"
        print(f"{r['case']}: ours {r['ours_s']:.4f} s{peer}{ratio}")
