"""Per-call cost of scalar and small-array calls, against ml_dtypes' cast of the same input.

What a caller pays for one value (or 1,000) through encode / decode / round_to / ulp /
next_up: argument checks, the format lookup and one kernel call.  The peer is ml_dtypes'
scalar cast ``ml_dtypes.bfloat16(x)`` (for arrays, ``astype``), which does the least
work a conversion can: a ratio well below 1 is expected, and the targets are absolute
(issue 11: at most 3 us a scalar call, 5 us a 1,000-element call).  Each time is the
best over several batches of process CPU time (steadier than wall time on a shared
machine) divided by the calls in a batch.

Run alone: ``python benchmarks/bench_scalar.py`` (prints microseconds per call and the
ratio ml_dtypes time / our time, as benchmarks/run.py).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import ml_dtypes
import numpy as np
from _timing import row

import numerics

SCALAR_TARGET_S = 3e-6
ARRAY_TARGET_S = 5e-6


def per_call(fn: Callable[[], Any], calls: int, repeat: int = 7) -> float:
    """Best process CPU seconds per call over ``repeat`` batches of ``calls`` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - start) / calls)
    return best


def _cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any], bool]]:
    """(case, ours, peer, is_array) for each timed call."""
    bf16 = ml_dtypes.bfloat16
    x, f32, f64, i = 0.1, np.float32(0.1), np.float64(0.1), 3
    v = 1.5  # a bfloat16 value (next_up needs one)
    a = np.linspace(-3.0, 3.0, 1000)
    av = a.astype(bf16).astype(np.float64)  # bfloat16 values
    a32, av32 = a.astype(np.float32), av.astype(np.float32)
    codes = numerics.encode(a, "bf16")
    code = int(codes[7])
    return [
        ("encode(float)", lambda: numerics.encode(x, "bf16"), lambda: bf16(x), False),
        ("encode(np.float32)", lambda: numerics.encode(f32, "bf16"), lambda: bf16(f32), False),
        ("encode(np.float64)", lambda: numerics.encode(f64, "bf16"), lambda: bf16(f64), False),
        ("encode(int)", lambda: numerics.encode(i, "bf16"), lambda: bf16(i), False),
        ("encode(float, e4m3fn)", lambda: numerics.encode(x, "e4m3fn"),
         lambda: ml_dtypes.float8_e4m3fn(x), False),
        ("decode(int)", lambda: numerics.decode(code, "bf16"),
         lambda: float(np.uint16(code).view(bf16)), False),
        ("round_to(float)", lambda: numerics.round_to(x, "bf16"), lambda: bf16(x), False),
        ("ulp(float)", lambda: numerics.ulp(x, "bf16"), lambda: bf16(x), False),
        ("ulp(np.float64)", lambda: numerics.ulp(f64, "bf16"), lambda: bf16(f64), False),
        ("next_up(float)", lambda: numerics.next_up(v, "bf16"), lambda: bf16(v), False),
        ("encode(1k float64)", lambda: numerics.encode(a, "bf16"), lambda: a.astype(bf16),
         True),
        ("decode(1k codes)", lambda: numerics.decode(codes, "bf16"),
         lambda: codes.view(bf16).astype(np.float64), True),
        ("round_to(1k float64)", lambda: numerics.round_to(a, "bf16"),
         lambda: a.astype(bf16), True),
        ("ulp(1k float64)", lambda: numerics.ulp(a, "bf16"), lambda: a.astype(bf16), True),
        ("next_up(1k float64)", lambda: numerics.next_up(av, "bf16"), lambda: a.astype(bf16),
         True),
        ("next_down(1k float64)", lambda: numerics.next_down(av, "bf16"),
         lambda: a.astype(bf16), True),
        ("encode(1k float32)", lambda: numerics.encode(a32, "bf16"), lambda: a32.astype(bf16),
         True),
        ("round_to(1k float32)", lambda: numerics.round_to(a32, "bf16"),
         lambda: a32.astype(bf16), True),
        ("round_to(1k, e4m3fn)", lambda: numerics.round_to(a, "e4m3fn"),
         lambda: a.astype(ml_dtypes.float8_e4m3fn), True),
        ("ulp(1k float32)", lambda: numerics.ulp(a32, "bf16"), lambda: a32.astype(bf16), True),
        ("next_up(1k float32)", lambda: numerics.next_up(av32, "bf16"),
         lambda: a32.astype(bf16), True),
    ]


def run(quick: bool = False) -> list[dict[str, Any]]:
    calls = 200 if quick else 5000
    rows = []
    for case, ours, peer, is_array in _cases():
        n = max(calls // 10, 20) if is_array else calls
        ours_s, peer_s = per_call(ours, n), per_call(peer, n)
        target = ARRAY_TARGET_S if is_array else SCALAR_TARGET_S
        r = row("scalar", case, ours_s, "ml_dtypes cast", peer_s,
                target=f"<= {target * 1e6:.0f} us per call")
        r["ok"] = ours_s <= target
        rows.append(r)
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['case']:24s} {r['ours_s'] * 1e6:7.2f} us   ml_dtypes {r['peer_s'] * 1e6:6.2f} us"
              f"   peer/ours {r['peer_s'] / r['ours_s']:5.2f}x   {r['target']}: "
              f"{'yes' if r['ok'] else 'no'}")
