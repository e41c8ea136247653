"""Kernels under test, written as a kernel engineer would (numpy on the bits), with mutants.

Every kernel takes float32 inputs.  ``_round`` is the shared element
rounding: it rounds |x| on the target's grid (exact float64 arithmetic) with
a chosen rule; the mutants change one thing each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["KERNELS"]

E4M3FN = {"p": 4, "emin": -6, "max": 448.0, "dtype": ml_dtypes.float8_e4m3fn}
E2M1FN = {"p": 2, "emin": 0, "max": 6.0, "dtype": ml_dtypes.float4_e2m1fn}
BF16 = {"p": 8, "emin": -126, "max": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
        "dtype": ml_dtypes.bfloat16}


def _round(x: np.ndarray, fmt: dict[str, Any], *, mode: str = "rne", flush: bool = False,
           lose_negzero: bool = False) -> np.ndarray:
    """Round float values to ``fmt`` (saturating at max); returns fmt's dtype."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    e = np.maximum(e - 1, fmt["emin"])
    q = np.ldexp(1.0, e - (fmt["p"] - 1))
    r = a / q
    if mode == "rne":
        r = np.rint(r)
    elif mode == "away":
        r = np.floor(r + 0.5)
    elif mode == "rtz":
        r = np.floor(r)
    v = np.minimum(r * q, fmt["max"])
    if flush:
        v = np.where(v < 2.0 ** fmt["emin"], 0.0, v)
    v = np.where(np.isnan(x), np.nan, v)
    out = np.copysign(v, x)
    if lose_negzero:
        out = np.where(out == 0, 0.0, out)
    return out.astype(fmt["dtype"])


# --------------------------------------------------------------------------- fp8 cast
def fp8_scale(x: np.ndarray) -> np.float32:
    """``amax / 448`` in float32, or 1 where that is 0 (an all-zero tensor, or an amax
    below 448 times the smallest subnormal, whose quotient underflows)."""
    amax = np.float32(np.abs(x).max()) if x.size else np.float32(0)
    scale = np.float32(amax / np.float32(448.0))
    return scale if scale > 0 else np.float32(1.0)


def fp8_cast(x: np.ndarray, *, mode: str = "rne", flush: bool = False,
             lose_negzero: bool = False, via_f16: bool = False) -> np.ndarray:
    """Per-tensor-scaled cast of float32 to e4m3fn: ``round(x / (amax / 448))``."""
    y = (x / fp8_scale(x)).astype(np.float32)
    if via_f16:
        y = y.astype(np.float16).astype(np.float32)      # double rounding
    return _round(y, E4M3FN, mode=mode, flush=flush, lose_negzero=lose_negzero)


# --------------------------------------------------------------------------- RMSNorm
def rmsnorm(x: np.ndarray, w: np.ndarray, *, mode: str = "rne", flush: bool = False,
            lose_negzero: bool = False, bf16_accumulator: bool = False,
            bf16_rsqrt: bool = False) -> np.ndarray:
    """bfloat16 RMSNorm over the last axis, computed in float32: ``x / rms(x) * w``."""
    x = np.asarray(x, np.float32)
    if bf16_accumulator:
        acc = np.zeros(x.shape[:-1], np.float32)
        for i in range(x.shape[-1]):
            acc = (acc + x[..., i] * x[..., i]).astype(ml_dtypes.bfloat16).astype(np.float32)
        ms = acc / np.float32(x.shape[-1])
    else:
        ms = np.mean(x * x, axis=-1, dtype=np.float32)
    r = (np.float32(1) / np.sqrt(ms + np.float32(1e-6))).astype(np.float32)
    if bf16_rsqrt:
        r = r.astype(ml_dtypes.bfloat16).astype(np.float32)
    y = (x * r[..., None]).astype(np.float32) * np.asarray(w, np.float32)
    return _round(y, BF16, mode=mode, flush=flush, lose_negzero=lose_negzero)


# --------------------------------------------------------------------------- SR cast
def sr_bf16(x: np.ndarray, seed: int, *, le: bool = False, mode: str = "sr",
            u_bits: int = 16, lose_negzero: bool = False) -> np.ndarray:
    """Stochastic rounding of float32 to bfloat16 with a 16-bit draw per element."""
    x = np.asarray(x, np.float32)
    u = np.random.default_rng(seed).integers(0, 1 << u_bits, x.shape)
    b = x.view(np.uint32).astype(np.int64)
    low = b & 0xFFFF
    if mode == "rtz":
        away = np.zeros(x.shape, dtype=bool)
    elif mode == "rne":
        away = (low > 0x8000) | ((low == 0x8000) & ((b >> 16) & 1 == 1))
    else:
        away = (u <= low) if le else (u < low)
    nan = np.isnan(x)
    away &= ~nan
    hi = ((b >> 16) + away) << 16
    out = hi.astype(np.uint32).view(np.float32)
    if lose_negzero:
        out = np.where(out == 0, np.float32(0), out)
    return out.astype(ml_dtypes.bfloat16)


# --------------------------------------------------------------------------- MX fp4
def mx_fp4(x: np.ndarray, *, block: int = 32, mode: str = "rne", flush: bool = False,
           lose_negzero: bool = False, ceil_scale: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """OCP MX fp4 (e2m1fn elements, e8m0 scale) over blocks of ``block``.

    The shared exponent is ``floor(log2(amax)) - 2`` (2 = emax of e2m1); the
    elements are ``x / 2**e`` rounded to nearest even, saturating at 6.
    """
    b = np.asarray(x, np.float32).reshape(-1, block).astype(np.float64)
    amax = np.abs(b).max(axis=1)
    mant, e = np.frexp(np.where(amax > 0, amax, 1.0))
    e = e - 1
    if ceil_scale:
        e = e + (mant != 0.5)                            # ceil(log2 amax)
    scale_e = np.where(amax > 0, e - 2, -127).astype(np.int64)
    scaled = b / np.ldexp(1.0, scale_e)[:, None]
    q = _round(scaled, E2M1FN, mode=mode, flush=flush, lose_negzero=lose_negzero)
    return q.reshape(-1), scale_e


def _variants(fn: Callable[..., Any], **mutants: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {"correct": fn}
    for name, kw in mutants.items():
        def mutant(*args: Any, _kw: dict[str, Any] = kw, **kwargs: Any) -> Any:
            return fn(*args, **_kw, **kwargs)
        out[name] = mutant
    return out


#: kernel name -> {"correct": fn, mutant name: fn}
KERNELS: dict[str, dict[str, Callable[..., Any]]] = {
    "fp8_cast": _variants(fp8_cast, ties_away={"mode": "away"}, truncation={"mode": "rtz"},
                          flushed_subnormals={"flush": True},
                          lost_negative_zero={"lose_negzero": True},
                          double_rounding_via_f16={"via_f16": True}),
    "rmsnorm": _variants(rmsnorm, truncation={"mode": "rtz"},
                         flushed_subnormals={"flush": True},
                         lost_negative_zero={"lose_negzero": True},
                         bf16_accumulator={"bf16_accumulator": True},
                         bf16_rsqrt={"bf16_rsqrt": True}),
    "sr_bf16": _variants(sr_bf16, u_le_frac={"le": True}, truncation={"mode": "rtz"},
                         nearest_not_stochastic={"mode": "rne"},
                         fifteen_bit_draw={"u_bits": 15},
                         lost_negative_zero={"lose_negzero": True}),
    "mx_fp4": _variants(mx_fp4, ceil_in_scale={"ceil_scale": True},
                        truncation={"mode": "rtz"}, ties_away={"mode": "away"},
                        flushed_subnormals={"flush": True},
                        lost_negative_zero={"lose_negzero": True}),
}
