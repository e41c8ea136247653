"""Rounding scaled exact pairs into binary64 itself, every mode, with IEEE flags.

binary64 results cannot be rounded through a wider float: the kernels deliver
the exact value as ``(h + lo) * 2**k`` with ``h`` the 53-bit nearest-even of the
scaled value (``2**-300 <= |h| <= 2**300``) and ``lo`` the (sign of the)
residual, and this module rounds that exactly:

* normal results: the 53-bit rounding of ``|h| + rel`` is ``|h|`` or one of its
  float64 neighbours, chosen per mode from the sign of the residual ``rel`` and
  its comparison with half a spacing (:func:`_b64_magnitude`); scaling by
  ``2**k`` with ``ldexp`` is then exact, and an exponent beyond 1023 is overflow
  (to inf or to max by mode and ``overflow``);
* subnormal results: the value is rounded on the grid of ``2**-1074``
  (:func:`_b64_subnormal`): ``h * 2**(k + 1074)`` is split into its nearest
  integer and an exact difference, the residual decides ties and directions;
* stochastic rounding takes the truncation and the away neighbour and decides
  on the exact distance between them (:mod:`numerics._ops_stochastic`).

Flags: tininess before rounding from the exponent of ``h`` (and the sign of the
residual at a power of two), after rounding from the exponent of the rounded
significand, inexactness by scaling the result back and comparing with
``h`` and ``lo`` (:func:`_b64_inexact`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics._ops_stochastic import _draws, _sr_away
from numerics.formats import Format, Infinity

__all__ = ["_b64_inexact", "_b64_magnitude", "_b64_round", "_b64_subnormal",
           "_is_binary64", "_mode_codes"]


def _is_binary64(fmt: Format) -> bool:
    return (fmt.exponent_bits == 11 and fmt.trailing_bits == 52 and fmt.bias == 1023
            and fmt.infinity is Infinity.IEEE and fmt.signed and fmt.subnormals)


def _b64_magnitude(ah: np.ndarray, rel: np.ndarray, odd: np.ndarray, mode: np.ndarray
                   ) -> np.ndarray:
    """53-bit rounding of ``ah + rel`` (ah = RNE); mode per element: 0 rtz, 1 raz, 2 rne,
    3 rna, 4 rto."""
    sp_up = np.spacing(ah)
    sp_dn = ah - np.nextafter(ah, 0.0)
    down = ah - sp_dn
    up = ah + sp_up
    m = ah.copy()
    m = np.where((mode == 0) & (rel < 0), down, m)
    m = np.where((mode == 1) & (rel > 0), up, m)
    m = np.where((mode == 3) & (rel != 0) & (rel == 0.5 * sp_up), up, m)
    rto_move = (mode == 4) & (rel != 0) & ~odd
    m = np.where(rto_move & (rel > 0), up, m)
    m = np.where(rto_move & (rel < 0), down, m)
    return m


def _mode_codes(rounding: str, neg: np.ndarray) -> np.ndarray:
    base = {"rtz": 0, "raz": 1, "rne": 2, "rna": 3, "rto": 4}
    if rounding == "ru":
        return np.where(neg, 0, 1)
    if rounding == "rd":
        return np.where(neg, 1, 0)
    return np.full(neg.shape, base[rounding])


def _b64_round(h: np.ndarray, lo: np.ndarray, k: np.ndarray, rounding: str, overflow: str,
               rng: Any, sr_bits: int | None
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Round ``(h + lo) * 2**k`` into binary64 (h = RNE53 of the scaled exact value,
    ``2**-300 <= |h| <= 2**300`` or h = +-0)."""
    neg = np.signbit(h)
    s = np.where(neg, -1.0, 1.0)
    ah = np.abs(h)
    nz = ah != 0
    rel = lo * s
    odd = (h.view(np.uint64) & np.uint64(1)) == 1
    _, eh = np.frexp(ah)
    # tiny before rounding: |exact| < 2**-1022
    pow2 = ah == np.ldexp(0.5, eh)
    e_abs = eh + k - 1  # exponent of |h| * 2**k
    tiny_b = nz & ((e_abs < -1022) | ((e_abs == -1022) & pow2 & (rel < 0)))

    def one_mode(mode_name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        modes = _mode_codes(mode_name, neg)
        m = _b64_magnitude(ah, rel, odd, modes)
        _, em = np.frexp(m)
        with np.errstate(over="ignore"):
            big = np.ldexp(m, np.clip(k, -2300, 2300).astype(np.int32))
        ovf_ = nz & (em + k - 1 > 1023)
        tiny_a_ = nz & (em + k - 1 < -1022)
        away_inf = (modes == 1) | (modes == 2) | (modes == 3)
        if overflow == "saturate":
            big = np.where(ovf_, np.finfo(np.float64).max, big)
        else:
            big = np.where(ovf_, np.where(away_inf, np.inf, np.finfo(np.float64).max), big)
        sub, _, frac_sub = _b64_subnormal(ah, rel, eh, k, modes, tiny_b)
        mag = np.where(tiny_b, sub, big)
        return s * mag, ovf_, tiny_a_, frac_sub

    if rounding != "sr":
        res, ovf, tiny_a, _ = one_mode(rounding)
    else:
        trunc, ovf_t, tiny_a, frac_sub = one_mode("rtz")
        away, ovf_a, _, _ = one_mode("raz")
        q = np.abs(away - trunc)
        q = np.where(~np.isfinite(q) | (np.abs(away) == np.abs(trunc)) & ovf_t,
                     2.0**971, q)
        # Distance from trunc in scaled units: |h| - |trunc| * 2**-k + rel.
        with np.errstate(all="ignore"):
            kk = np.clip(-k, -2300, 2300).astype(np.int32)
            t_s = np.ldexp(np.abs(trunc), kk)  # exact for normal results
            q_s = np.ldexp(q, kk)
            x = (ah - t_s) + rel
            frac = np.where(tiny_b, frac_sub, np.where(q_s > 0, x / q_s, 0.0))
        go = _sr_away(x, q_s, _draws(rng, h.size, sr_bits), sr_bits, frac)
        exact_here = away == trunc
        go &= ~exact_here
        res = np.where(go, away, trunc)
        ovf = ovf_t | (go & ovf_a)
    inexact = _b64_inexact(res, h, lo, k, tiny_b) | ovf
    return res, {"inexact": inexact, "overflow": ovf, "tiny_before": tiny_b,
                 "tiny_after": tiny_a}


def _b64_inexact(res: np.ndarray, h: np.ndarray, lo: np.ndarray, k: np.ndarray,
                 tiny_b: np.ndarray) -> np.ndarray:
    """Whether ``res`` differs from ``(h + lo) * 2**k``."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        back = np.ldexp(res, np.clip(-k, -2300, 2300).astype(np.int32))
    # res * 2**-k is exact unless res is tiny and -k very negative; compare carefully.
    ok_scale = np.isfinite(back) & ((back != 0) | (res == 0))
    exact = ok_scale & (back == h) & (lo == 0)
    return ~exact


def _b64_subnormal(ah: np.ndarray, rel: np.ndarray, eh: np.ndarray, k: np.ndarray,
                   modes: np.ndarray, tiny: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Magnitude of the rounding of ``(ah + rel) * 2**k`` on the grid of 2**-1074."""
    sh = k + 1074
    deep = eh + sh < -60
    shc = np.clip(sh, -1100, 1100).astype(np.int32)
    with np.errstate(under="ignore", over="ignore"):
        hp = np.where(deep | ~tiny, 2.0**-61, np.ldexp(ah, shc))
        relc = np.where(rel == 0, 0.0, np.copysign(np.maximum(np.abs(rel), ah * 2.0**-120), rel))
        lp = np.where(deep | ~tiny, 0.0, np.ldexp(relc, shc))
    n = np.rint(hp)
    d = hp - n
    g = d + lp
    exact = (g == 0) & ~deep
    trunc = n - (g < 0)
    above = np.where(g >= 0, (d == 0.5) & (lp > 0), (d > -0.5) | ((d == -0.5) & (lp > 0)))
    tie = (np.abs(d) == 0.5) & (lp == 0)
    t_odd = np.fmod(trunc, 2.0) == 1
    away = np.zeros(ah.shape, bool)
    away = np.where(modes == 1, ~exact, away)
    away = np.where(modes == 2, above | (tie & t_odd), away)
    away = np.where(modes == 3, above | tie, away)
    away = np.where(modes == 4, ~exact & ~t_odd, away)
    mag = trunc + away
    return np.ldexp(mag, -1074), exact, (hp - trunc) + lp
