"""Quantization benchmarks: MX quantize+dequantize vs gfloat's block functions and a numpy
copy; TurboQuant throughput.

gfloat's block functions run in Python per element (about 15-25 us per element), so they are
timed on a slice of the matrix and scaled per element to the full (4096, 4096) size; the
``case`` string says so.
"""

from __future__ import annotations

import time

import numpy as np

from numerics.quant import TurboQuant, mx


def _best(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def _gfloat_per_element(name: str, x: np.ndarray) -> float | None:
    try:
        import gfloat
        from gfloat import formats as gf
    except ImportError:  # gfloat is a test-only dependency
        return None
    fi = {"mxfp8_e4m3": gf.format_info_mxfp8_e4m3, "mxfp4_e2m1": gf.format_info_mxfp4_e2m1}[name]
    blocks = x.astype(np.float64).reshape(-1, 32)

    def run() -> None:
        for b in blocks:
            gfloat.quantize_block(fi, b, gfloat.compute_scale_amax)

    return _best(run, 1) / blocks.size


def run(quick: bool = False) -> list[dict]:
    """Benchmark rows (see benchmarks/run.py for the schema)."""
    n = 1024 if quick else 4096
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    rows: list[dict] = []
    gslice = x[:2, :512] if quick else x[:8, :1024]
    t_copy = _best(lambda: x.copy(), 3)
    for name in ("mxfp8_e4m3", "mxfp4_e2m1"):
        ours = _best(lambda: mx(x, name).dequantize(), 1 if not quick else 2)
        g = _gfloat_per_element(name, gslice)
        g_full = None if g is None else g * x.size
        rows.append({
            "group": "quant",
            "case": f"MX {name} quantize+dequantize ({n}, {n}) float32 "
                    f"[gfloat timed on {gslice.size} elements, scaled per element]",
            "ours_s": ours, "peer": "gfloat 0.5 quantize_block", "peer_s": g_full,
            "target": ">= 10x faster",
            "ok": None if g_full is None else g_full / ours >= 10})
        rows.append({
            "group": "quant", "case": f"MX {name} quantize+dequantize ({n}, {n}) vs copy",
            "ours_s": ours, "peer": "numpy float32 copy", "peer_s": t_copy,
            "target": "report", "ok": None})
    nv = 4096 if quick else 65536
    v = rng.standard_normal((nv, 128))
    tq = TurboQuant(128, 4, seed=0)
    tq.quantize(v[:16])  # warm the codebook cache
    t_tq = _best(lambda: tq.quantize(v), 3)
    rows.append({"group": "quant",
                 "case": f"TurboQuant d=128 4-bit quantize {nv} vectors: "
                         f"{nv / t_tq:,.0f} vectors/s",
                 "ours_s": t_tq, "peer": "-", "peer_s": None, "target": "report", "ok": None})
    return rows


if __name__ == "__main__":
    for r in run():
        ratio = "" if r["peer_s"] is None else f"  ratio {r['peer_s'] / r['ours_s']:.1f}x"
        print(f"{r['case']}: ours {r['ours_s']:.4f} s, {r['peer']} "
              f"{r['peer_s'] if r['peer_s'] is None else round(r['peer_s'], 4)} s{ratio}")
