"""Benchmarks for numerics.accum: ratios to numpy's own float32 sum / matmul."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from numerics import accum


def _best(f: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def run(quick: bool = False) -> list[dict]:
    """Recursive bf16 sum (4096 x 4096, axis -1) and hopper-fp8 GEMM (256x4096x256)."""
    rng = np.random.default_rng(0)
    rows = 512 if quick else 4096
    x = rng.random((rows, 4096)).astype(np.float32)
    ours = _best(lambda: accum.sum(x, "bfloat16"), 1 if quick else 3)
    peer = _best(lambda: x.sum(axis=-1), 5)
    out = [{"group": "accum", "case": f"sum recursive bf16 ({rows}x4096, axis -1)",
            "ours_s": ours, "peer": "numpy float32 sum", "peer_s": peer,
            "target": "within 30x", "ok": ours <= 30 * peer}]
    m = 32 if quick else 256
    A = rng.standard_normal((m, 4096)).astype(np.float32)
    B = rng.standard_normal((4096, 256)).astype(np.float32)
    ours = _best(lambda: accum.gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8"),
                 1 if quick else 2)
    peer = _best(lambda: A @ B, 3)
    out.append({"group": "accum", "case": f"gemm hopper-fp8 e4m3fn ({m}x4096 @ 4096x256)",
                "ours_s": ours, "peer": "numpy float32 matmul", "peer_s": peer,
                "target": "within 200x", "ok": ours <= 200 * peer})
    return out


if __name__ == "__main__":
    for row in run():
        print(row, f"ratio ours/peer = {row['ours_s'] / row['peer_s']:.1f}x")
