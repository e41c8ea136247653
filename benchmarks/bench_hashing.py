"""Benchmark: the compiled murmur3_32 / xxh32 / fnv1a32 versus per-key calls of mmh3 / xxhash.

Keys: 2**20 random 16-byte keys (2**16 with ``quick=True``), the rows of a uint8
array for numerics, a list of ``bytes`` for the peers (building the list is not
timed).  Neither peer has a batch API for many small keys (mmh3 5.x and xxhash 3.x
hash one buffer per call), so the peers are timed as a Python loop over the
keys, with their fastest per-key entry points.  Times are the best of a few runs.

    python benchmarks/bench_hashing.py          # prints the rows
    python benchmarks/run.py                    # the project's table (all areas)
"""

from __future__ import annotations

import importlib
from functools import partial
from typing import Any

import numpy as np
from _timing import best_of, row

from numerics.hashing import Arithmetic, fnv1a32, murmur3_32, poly_hash, spatial_hash, xxh32
from numerics.threads import get_num_threads, set_num_threads

__all__ = ["run"]

TARGET = ">= 5x faster"


def _row(group: str, case: str, ours: float, peer: str, peer_s: float | None,
         target: str = TARGET) -> dict[str, Any]:
    return row(group, case, ours, peer, peer_s, target=target,
               min_ratio=5.0 if target == TARGET else None)


def _optional(name: str) -> Any:
    """The peer module, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - peer missing
        return None


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Time the kernels; one dict per (kernel, peer) pair, in the benchmarks/run.py format."""
    n = 2**16 if quick else 2**20
    repeat = 3 if quick else 5
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    key_list = [keys[i].tobytes() for i in range(n)]
    keys_case = f"{n} keys x 16 B"
    case = f"{keys_case} [{get_num_threads()} threads; the peers: 1]"
    rows: list[dict[str, Any]] = []

    mmh3, xxhash = _optional("mmh3"), _optional("xxhash")

    ours_m = best_of(lambda: murmur3_32(keys, seed=0), repeat)  # all threads
    if mmh3 is not None:
        peer_hash = best_of(lambda: [mmh3.hash(k, 0, signed=False) for k in key_list], repeat)
        rows.append(_row("hashing", f"murmur3_32 {case}", ours_m,
                         "mmh3.hash(key, signed=False) per key", peer_hash))
        uint = getattr(mmh3, "mmh3_32_uintdigest", None)
        if uint is not None:
            peer_uint = best_of(lambda: [uint(k, 0) for k in key_list], repeat)
            rows.append(_row("hashing", f"murmur3_32 {case}", ours_m,
                             "mmh3.mmh3_32_uintdigest per key", peer_uint))
    else:
        rows.append(_row("hashing", f"murmur3_32 {case}", ours_m, "mmh3 (not installed)", None))

    ours_x = best_of(lambda: xxh32(keys, seed=0), repeat)
    if xxhash is not None:
        intd = xxhash.xxh32_intdigest
        peer_x = best_of(lambda: [intd(k, 0) for k in key_list], repeat)
        rows.append(_row("hashing", f"xxh32 {case}", ours_x, "xxhash.xxh32_intdigest per key",
                         peer_x))
        peer_obj = best_of(lambda: [xxhash.xxh32(k, 0).intdigest() for k in key_list], repeat)
        rows.append(_row("hashing", f"xxh32 {case}", ours_x, "xxhash.xxh32(key).intdigest()",
                         peer_obj))
    else:
        rows.append(_row("hashing", f"xxh32 {case}", ours_x, "xxhash (not installed)", None))

    # Context rows without a peer: FNV-1a (byte at a time) and the spatial hash.
    rows.append(_row("hashing", f"fnv1a32 {keys_case} [{get_num_threads()} threads]",
                     best_of(lambda: fnv1a32(keys), repeat), "-", None, target="-"))
    coords = rng.integers(0, 2**11, size=(n, 3))
    for arith in ("uint32", "float32", "bfloat16"):
        t = best_of(partial(spatial_hash, coords, 2**19, arithmetic=arith), repeat)
        rows.append(_row("hashing", f"spatial_hash {arith} {n} points", t, "-", None, target="-"))
    toks = rng.integers(0, 2**12, size=(n // 16, 16))
    poly_ariths: tuple[Arithmetic, ...] = ("uint32", "float32")
    for arith in poly_ariths:
        t = best_of(partial(poly_hash, toks, 1_000_003, modulus=10**9 + 7, arithmetic=arith),
                    repeat)
        rows.append(_row("hashing", f"poly_hash {arith} {n // 16} x 16 tokens", t, "-", None,
                         target="-"))
    # Threads: the same call on every thread versus one thread (the bits are identical).
    before = get_num_threads()
    try:
        set_num_threads(1)
        one = best_of(lambda: murmur3_32(keys, seed=0), repeat)
    finally:
        set_num_threads(before)
    rows.append(_row("hashing", f"murmur3_32 {keys_case}, {before} threads", ours_m,
                     "same call on 1 thread", one, target="-"))
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run():
        peer_ms = "" if r["peer_s"] is None else f"{r['peer_s'] * 1e3:8.2f} ms"
        ratio = "" if r["peer_s"] is None else f"  ratio {r['peer_s'] / r['ours_s']:.1f}x"
        print(f"{r['case']:<34} ours {r['ours_s'] * 1e3:8.2f} ms  {r['peer']:<38} {peer_ms}"
              f"{ratio}  ok={r['ok']}")
