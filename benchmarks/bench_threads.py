"""Benchmark: 2 threads against 1 on mid-size calls, where handing a piece to a worker
thread costs as much as the piece.

Each row is one call (encode, decode, ulp, ops) at 2**17 to 2**21 elements, timed on 1
and on 2 threads (``numerics.set_num_threads``), 400 calls each for the smaller sizes;
it prints the best and the median of each and the speed-up of the medians.  A call
below the threads' size (``numerics.kernels.spread.PARALLEL_MIN``, or ``FAST_LOOP_MIN``
for the fastest loops) runs on one thread either way, and reads about 1.0x.

Usage::

    python benchmarks/bench_threads.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import numerics
from numerics import decode, encode, ops, round_to, ulp

__all__ = ["run"]


def _times(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Best and median seconds of ``calls`` calls of ``fn``."""
    fn()
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[0], ts[len(ts) // 2]


def run(quick: bool = False) -> list[dict[str, Any]]:
    if numerics.get_num_threads() < 2:
        return []
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for k in ((17, 19) if quick else (17, 18, 19, 20, 21)):
        n = 1 << k
        x = rng.standard_normal(n).astype(np.float32)
        codes = encode(x, "e4m3fn")
        b = round_to(x, "bfloat16", dtype=np.float32)
        cases: dict[str, Callable[[], Any]] = {
            "encode float32 -> e4m3fn": lambda: encode(x, "e4m3fn"),
            "encode float32 -> bfloat16": lambda: encode(x, "bfloat16"),
            "encode float32 -> e4m3fn rtz": lambda: encode(x, "e4m3fn", rounding="rtz"),
            "decode e4m3fn -> float32": lambda: decode(codes, "e4m3fn", dtype=np.float32),
            "ulp of float32": lambda: ulp(x, "binary32"),
            "ops.add bfloat16, float32 results": lambda: ops.add(b, b, "bfloat16",
                                                                 dtype=np.float32),
        }
        calls = max(20, (400 << 17) // n) if not quick else 20
        before = numerics.get_num_threads()
        try:
            for name, fn in cases.items():
                numerics.set_num_threads(1)
                one = _times(fn, calls)
                numerics.set_num_threads(2)
                two = _times(fn, calls)
                rows.append({"case": f"{name} 2**{k}", "one": one, "two": two,
                             "speedup": one[1] / two[1]})
        finally:
            numerics.set_num_threads(before)
    return rows


if __name__ == "__main__":
    print(f"{'call':44s} {'1 thread (best/median us)':>26s} {'2 threads':>18s}  speed-up")
    for r in run():
        print(f"{r['case']:44s} {r['one'][0] * 1e6:10.1f} / {r['one'][1] * 1e6:8.1f}    "
              f"{r['two'][0] * 1e6:7.1f} / {r['two'][1] * 1e6:8.1f}  {r['speedup']:6.2f}x")
