"""Benchmark: whole-checkpoint diff, stats and hash against plain numpy passes over the same data.

Rows (ratio = peer time / our time; the targets ask for at least 0.5, "within 2x"):

* compare of 2**26 float32 pairs in memory (``compare_codes``: counts, max ULP,
  histogram, worst elements) against ``np.array_equal`` on the same arrays;
* ``diff_sources`` of two float32 safetensors checkpoints against a plain chunked
  numpy comparison (``np.array_equal`` per chunk over the same memory maps);
* ``stats_source`` and ``hash_source`` against one numpy pass over the same
  memory maps (``np.abs(chunk).max()``, chunk by chunk); the hash also against
  ``hashlib.sha256`` over the same bytes (its digest is SHA-256, which bounds it).

The checkpoints are written to a temporary directory first (in the page cache
afterwards, so the rows measure compute, not the disk).  Each row also reports
the peak anonymous memory (RssAnon: beyond the mapped file pages) while it ran.
Our side uses :func:`numerics.get_num_threads` threads; numpy one.

    python benchmarks/bench_checkpoint.py --gb 1      # a 1 GB pair (0.5 GB each side)
    python benchmarks/run.py --only checkpoint --quick
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import best_of, row
from safetensors.numpy import save_file

from numerics.checkpoint import diff_sources, hash_source, open_source, stats_source
from numerics.compare import compare_codes
from numerics.threads import get_num_threads

__all__ = ["run"]

TARGET = "within 2x"
_CHUNK = 1 << 22


def _rss_anon() -> int:
    """Anonymous resident memory of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


def _peak(fn: Callable[[], Any]) -> tuple[float, int]:
    """Wall time of one call and the peak RssAnon above the level before it."""
    base = _rss_anon()
    peak = base
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_anon())
            time.sleep(0.005)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    return elapsed, max(0, peak - base)


def _write_pair(d: Path, total_bytes: int) -> tuple[Path, Path]:
    """Two float32 checkpoints of ``total_bytes`` each, 8 tensors, a few elements apart."""
    rng = np.random.default_rng(0)
    n = max(total_bytes // 4 // 8, 1024)
    (d / "a").mkdir()
    (d / "b").mkdir()
    for i in range(8):
        x = rng.standard_normal(n, dtype=np.float32)
        save_file({f"layers.{i}.w": x}, str(d / "a" / f"s{i}.safetensors"))
        x[rng.integers(0, n, 100)] += np.float32(1e-3)
        save_file({f"layers.{i}.w": x}, str(d / "b" / f"s{i}.safetensors"))
        del x
    return d / "a", d / "b"


def _numpy_diff(a: Path, b: Path) -> bool:
    sa, sb = open_source(a), open_source(b)
    same = True
    for ta in sa.tensors:
        xa, xb = ta.read(), sb[ta.name].read()
        for s in range(0, xa.size, _CHUNK):
            same &= bool(np.array_equal(xa[s:s + _CHUNK], xb[s:s + _CHUNK]))
    return same


def _numpy_pass(a: Path) -> float:
    top = 0.0
    for t in open_source(a).tensors:
        x = t.read()
        for s in range(0, x.size, _CHUNK):
            top = max(top, float(np.abs(x[s:s + _CHUNK]).max()))
    return top


def _compare_row(log2n: int, threads: int) -> dict[str, Any]:
    n = 1 << log2n
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = a.copy()
    b[rng.integers(0, n, 1000)] += np.float32(1e-3)
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    ours = best_of(lambda: compare_codes(ua, ub, "binary32", worst=10))
    peer = best_of(lambda: np.array_equal(a, b))
    return row("checkpoint", f"compare 2^{log2n} f32 pairs ({threads} thr)", ours,
               "np.array_equal", peer, TARGET, 0.5)


def _sha256_pass(a: Path) -> str:
    h = hashlib.sha256()
    for t in open_source(a).tensors:
        x = t.read()
        for s in range(0, x.size, _CHUNK):
            h.update(x[s:s + _CHUNK])
    return h.hexdigest()


def run(quick: bool = False, *, gb: float | None = None) -> list[dict[str, Any]]:
    """The benchmark rows (``quick``: 2**22 pairs and a 64 MB pair)."""
    threads = get_num_threads()
    rows = [_compare_row(22 if quick else 26, threads)]
    size = int((gb if gb is not None else (0.064 if quick else 1.0)) * 2**30 / 2)
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = _write_pair(Path(tmp), size)
        label = f"{2 * size / 2**30:.2f} GiB pair, {threads} thr"
        _numpy_diff(pa, pb)  # warm the page cache and the kernels
        diff_sources(pa, pb)
        ours_s, mem = _peak(lambda: diff_sources(pa, pb))
        peer_s = best_of(lambda: _numpy_diff(pa, pb), repeat=1)
        rows.append(row("checkpoint", f"diff ({label}); peak anon {mem / 2**20:.0f} MiB",
                        ours_s, "chunked np.array_equal", peer_s, TARGET, 0.5))
        stats_source(pa)
        ours_s, mem = _peak(lambda: stats_source(pa))
        peer_s = best_of(lambda: _numpy_pass(pa), repeat=1)
        rows.append(row("checkpoint", f"stats ({size / 2**30:.2f} GiB); peak anon "
                        f"{mem / 2**20:.0f} MiB", ours_s, "np.abs(x).max() pass", peer_s,
                        TARGET, 0.5))
        ours_s, mem = _peak(lambda: hash_source(pa))
        rows.append(row("checkpoint", f"hash ({size / 2**30:.2f} GiB); peak anon "
                        f"{mem / 2**20:.0f} MiB", ours_s, "np.abs(x).max() pass", peer_s,
                        TARGET, 0.5))
        sha_s = best_of(lambda: _sha256_pass(pa), repeat=1)
        rows.append(row("checkpoint", f"hash ({size / 2**30:.2f} GiB), SHA-256 itself",
                        ours_s, "hashlib.sha256 pass", sha_s))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0,
                        help="size of the checkpoint pair in GiB (default 1; both sides)")
    parser.add_argument("--quick", action="store_true", help="2**22 pairs in memory")
    args = parser.parse_args(argv)
    for r in run(args.quick, gb=args.gb):
        ratio = r["peer_s"] / r["ours_s"]
        verdict = "" if r["ok"] is None else f"  ({r['target']}: {'ok' if r['ok'] else 'NO'})"
        print(f"{r['case']:<60} ours {r['ours_s']:7.3f} s  {r['peer']:<24} "
              f"{r['peer_s']:7.3f} s  ratio {ratio:5.2f}{verdict}")
    import resource

    print(f"peak RSS of the process (file pages included): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
