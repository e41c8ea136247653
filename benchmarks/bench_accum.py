"""Benchmarks for numerics.accum: ratios to numpy's own float32 sum / matmul.

Targets (issue 11): ``accum.sum`` recursive, pairwise and Kahan in bfloat16 and binary16
within 5x of numpy's float32 ``sum``; the hopper-fp8 GEMM (256x4096)@(4096x256) within 20x
of numpy's float32 matmul at the same thread count, and no slower on 2 threads than on 1.
Each row says which thread count it used: numba's threads for ours and, with
``threadpoolctl`` installed (the ``bench`` extra), as many BLAS threads for numpy's
matmul; without it numpy keeps its own setting, which the row names.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Iterator
from typing import Any

import numpy as np
from _timing import best_of  # benchmarks/ is on the path (run.py, mypy_path)

from numerics import accum, threads


def _peak_bytes_per_element(fn: Any, size: int) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / size
    finally:
        tracemalloc.stop()


@contextlib.contextmanager
def _blas_threads(n: int) -> Iterator[str]:
    """numpy's BLAS limited to ``n`` threads (threadpoolctl); yields the row's words for
    the peer's thread count."""
    try:
        from threadpoolctl import threadpool_limits
    except ModuleNotFoundError:
        yield "its own BLAS threads"
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield f"{n} BLAS thread(s)"


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Sums of (rows x 4096) float32 along the last axis; the hopper-fp8 GEMM."""
    rng = np.random.default_rng(0)
    rows = 256 if quick else 4096
    x = rng.random((rows, 4096)).astype(np.float32)
    out: list[dict[str, Any]] = []
    peer = best_of(lambda: x.sum(axis=-1), 5)
    n_threads = [1, threads.get_num_threads()] if threads.get_num_threads() > 1 else [1]
    before = threads.get_num_threads()
    try:
        for nt in n_threads:
            threads.set_num_threads(nt)
            for fmt in ("bfloat16", "binary16"):
                for alg in ("recursive", "pairwise", "kahan"):
                    def call(fmt: str = fmt, alg: str = alg) -> object:
                        return accum.sum(x, fmt, algorithm=alg)
                    ours = best_of(call, 1 if quick else 7)  # ~20 ms a call: best of 7
                    mem = _peak_bytes_per_element(call, x.size)
                    out.append({
                        "group": "accum",
                        "case": f"sum {alg} {fmt} ({rows}x4096, axis -1), {nt} thread(s), "
                                f"{mem:.1f} B/element temporaries",
                        "ours_s": ours, "peer": "numpy float32 sum (1 thread)",
                        "peer_s": peer, "target": "within 5x", "ok": ours <= 5 * peer})
        # no targets: float64 rows (rounded into the format first), an 8-bit format, and
        # dot products, on 1 thread beside numpy's float32 sum / einsum
        threads.set_num_threads(1)
        x64 = x.astype(np.float64)
        y = rng.random((rows, 4096)).astype(np.float32)
        peer_dot = best_of(lambda: np.einsum("ij,ij->i", x, y), 5)
        for case, job, peer_s, peer_name in (
                ("sum recursive bfloat16, float64 rows", lambda: accum.sum(x64, "bfloat16"),
                 peer, "numpy float32 sum (1 thread)"),
                ("sum recursive e4m3fn", lambda: accum.sum(x, "e4m3fn"), peer,
                 "numpy float32 sum (1 thread)"),
                ("dot recursive e4m3fn", lambda: accum.dot(x, y, "e4m3fn"), peer_dot,
                 "numpy float32 einsum (1 thread)"),
                ("dot recursive binary16", lambda: accum.dot(x, y, "binary16"), peer_dot,
                 "numpy float32 einsum (1 thread)"),
                ("dot recursive bfloat16", lambda: accum.dot(x, y, "bfloat16"), peer_dot,
                 "numpy float32 einsum (1 thread)")):
            out.append({"group": "accum", "case": f"{case} ({rows}x4096), 1 thread",
                        "ours_s": best_of(job, 1 if quick else 3), "peer": peer_name,
                        "peer_s": peer_s, "target": "report", "ok": None})
        m = 32 if quick else 256
        A = rng.standard_normal((m, 4096)).astype(np.float32)
        B = rng.standard_normal((4096, 256)).astype(np.float32)
        times = {}
        for nt in n_threads:
            threads.set_num_threads(nt)
            with _blas_threads(nt) as peer_threads:
                peer_mm = best_of(lambda: A @ B, 5)
            times[nt] = best_of(lambda: accum.gemm(A, B, input_format="e4m3fn",
                                                   accumulator="hopper-fp8"), 1 if quick else 2)
            out.append({
                "group": "accum",
                "case": f"gemm hopper-fp8 e4m3fn ({m}x4096 @ 4096x256), {nt} thread(s)",
                "ours_s": times[nt], "peer": f"numpy float32 matmul ({peer_threads})",
                "peer_s": peer_mm,
                "target": "within 20x; 2 threads no slower than 1",
                "ok": times[nt] <= 20 * peer_mm and times[nt] <= times[1] * 1.05})
    finally:
        threads.set_num_threads(before)
    return out


if __name__ == "__main__":
    for r in run():
        print(f"{r['case']}: {r['ours_s']:.4f} s, {r['peer']} {r['peer_s']:.4f} s, "
              f"ours/peer {r['ours_s'] / r['peer_s']:.1f}x (target {r['target']})")
