"""Benchmark: numerics.ops add/mul/fma on 2**20 elements vs numpy's native float32 add/mul.

Targets (issue 4): round-to-nearest-even add/mul within 10x of numpy's float32
add for formats up to binary32; directed modes (rtz) within 30x.  Operands are
passed in the format's native dtype where one exists (float32, ml_dtypes
bfloat16/float8_e4m3fn), as a user holding such tensors would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from numerics import ops
from numerics.dtypes import dtype_of

__all__ = ["run"]


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(quick: bool = False) -> list[dict]:
    n = 1 << (16 if quick else 20)
    repeat = 2 if quick else 5
    rng = np.random.default_rng(0)
    a32 = (rng.standard_normal(n)).astype(np.float32)
    b32 = (rng.standard_normal(n)).astype(np.float32)
    c32 = (rng.standard_normal(n)).astype(np.float32)
    peer_add = _best(lambda: a32 + b32, repeat)
    peer_mul = _best(lambda: a32 * b32, repeat)
    rows: list[dict] = []
    for name in ("binary32", "bfloat16", "e4m3fn"):
        dt = dtype_of(name)
        from numerics import round_to

        def cast(x: np.ndarray, name: str = name, dt: Any = dt) -> np.ndarray:
            v = np.asarray(round_to(x.astype(np.float64), name, overflow="saturate"))
            return v.astype(dt) if dt is not None else v

        a, b, c = cast(a32), cast(b32), cast(c32)
        for rounding in ("rne", "rtz"):
            target_x = 10 if rounding == "rne" else 30
            for op, peer, peer_s in (("add", "numpy float32 add", peer_add),
                                     ("mul", "numpy float32 mul", peer_mul),
                                     ("fma", "numpy float32 add", peer_add)):
                args = (a, b, c) if op == "fma" else (a, b)
                fn = getattr(ops, op)
                def call(fn: Any = fn, args: tuple[Any, ...] = args, name: str = name,
                         rounding: str = rounding) -> Any:
                    return fn(*args, name, rounding=rounding)

                ours = _best(call, repeat)
                ok = None if op == "fma" else ours <= target_x * peer_s
                case = f"{op} {name} {rounding} n=2**{n.bit_length() - 1}"
                rows.append({"group": "ops", "case": case,
                             "ours_s": ours, "peer": peer, "peer_s": peer_s,
                             "target": f"within {target_x}x" if op != "fma" else "report",
                             "ok": ok})
    return rows


if __name__ == "__main__":
    for row in run():
        ratio = row["peer_s"] / row["ours_s"]
        print(f"{row['case']:32s} {row['ours_s']*1e3:8.2f} ms  peer {row['peer_s']*1e3:6.3f} ms"
              f"  slowdown {1/ratio:6.1f}x  ok={row['ok']}")
