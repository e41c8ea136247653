"""Encode / decode throughput against ml_dtypes ``astype`` and gfloat's ndarray functions.

2**24 float32 values (normal, scaled to exercise the whole range of each format); gfloat
is timed on a 2**16 slice and scaled per element, since it runs at tens of ns per element.
"""

from __future__ import annotations

from typing import Any

import gfloat
import numpy as np
from _timing import best_of, row
from gfloat.formats import format_info_ocp_e4m3, format_info_ocp_e5m2

import numerics
from numerics.dtypes import dtype_of

EIGHT_BIT = ("e5m2", "e4m3", "e3m4", "e4m3fn", "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz", "e8m0fnu",
             "e2m3fn", "e3m2fn", "e2m1fn")


def run(quick: bool = False) -> list[dict[str, Any]]:
    n = 1 << (18 if quick else 24)
    rng = np.random.default_rng(0)
    x32 = (rng.standard_normal(n) * 8).astype(np.float32)
    x64 = x32.astype(np.float64) * (1 + 2**-30)  # not float32-exact: a real float64 workload
    rows = []
    for name in (*EIGHT_BIT, "bfloat16", "binary16"):
        fmt = numerics.get_format(name)
        dt = dtype_of(fmt)
        small = name not in ("bfloat16", "binary16")
        enc_target, enc_min = (">= 3x faster", 3.0) if small else ("<= 1.5x slower", 1 / 1.5)
        with np.errstate(all="ignore"):
            ours = best_of(lambda: numerics.encode(x32, fmt, nan="zero"))
            peer = best_of(lambda: x32.astype(dt))
        rows.append(row("encode f32 rne", name, ours, "ml_dtypes astype", peer, enc_target,
                        enc_min))
        ours64 = best_of(lambda: numerics.encode(x64, fmt, nan="zero"))
        rows.append(row("encode f64 rne", name, ours64, "ours from float32", ours,
                        "<= 2x slower", 0.5))
        codes = numerics.encode(x32, fmt, nan="zero")
        typed = codes.view(dt)
        ours_d = best_of(lambda: numerics.decode(codes, fmt))
        with np.errstate(all="ignore"):
            peer_d = best_of(lambda: typed.astype(np.float64))
        rows.append(row("decode to f64", name, ours_d, "ml_dtypes astype", peer_d,
                        enc_target, enc_min))
    # Stochastic rounding against gfloat (the only peer that has it).
    m = 1 << 16
    for name, fi in (("e4m3fn", format_info_ocp_e4m3), ("e5m2", format_info_ocp_e5m2)):
        gen = np.random.default_rng(1)
        ours = best_of(lambda: numerics.encode(x32, name, rounding="sr", rng=gen, sr_bits=8))
        srbits = gen.integers(0, 1 << 8, m)
        peer_small = best_of(lambda: gfloat.round_ndarray(
            fi, x32[:m].astype(np.float64), gfloat.RoundMode.Stochastic, True, srbits, 8), 1)
        rows.append(row("encode f32 sr(8 bits)", name, ours, "gfloat round_ndarray (scaled)",
                        peer_small * n / m, ">= 10x faster", 10.0))
        peer_small = best_of(lambda: gfloat.round_ndarray(
            fi, x32[:m].astype(np.float64), gfloat.RoundMode.TiesToEven, True), 1)
        ours_r = best_of(lambda: numerics.round_to(x32, name, overflow="saturate"))
        rows.append(row("round_to f32 rne sat", name, ours_r, "gfloat round_ndarray (scaled)",
                        peer_small * n / m, "faster", 1.0))
    return rows
