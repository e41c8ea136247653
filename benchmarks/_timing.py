"""Timing helper shared by the benchmark modules."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls (after one warm-up call), in seconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def row(group: str, case: str, ours_s: float, peer: str | None, peer_s: float | None,
        target: str = "", min_ratio: float | None = None) -> dict[str, Any]:
    """One result row; ``ok`` checks ``peer_s / ours_s >= min_ratio`` when given."""
    ok = None
    if min_ratio is not None and peer_s is not None:
        ok = peer_s / ours_s >= min_ratio
    return {"group": group, "case": case, "ours_s": ours_s, "peer": peer, "peer_s": peer_s,
            "target": target, "ok": ok}
