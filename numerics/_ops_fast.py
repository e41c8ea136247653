"""Chunked fast path of :mod:`numerics.ops` for narrow formats without flags.

For the deterministic modes rne, rna, rtz, ru, rd in a narrow format
(:func:`numerics._ops_kernels._is_narrow`) that is signed, has subnormals and at
least one trailing bit, the exact pair ``h + lo`` is formed in float64 in chunks
of :data:`_CHUNK` elements (TwoSum inline; products exact, D4 of
``proofs/double_rounding.md``; the division and square-root kernels) and rounded
to the format's grid with float64 arithmetic (:func:`_fast_round`: adding and
subtracting ``1.5 * 2**52 * Q`` rounds to nearest-even multiples of the quantum
``Q`` of ``|h|``'s binade; the residual breaks ties and steers the directed
modes).  Where Figueroa's theorem applies (``+ - * / sqrt``, ``p <= 25``, rne:
D1) the residual is not needed at all, and binary32 is numpy's float32 cast.

Elements whose rounded magnitude is beyond ``max`` (overflow, inf, NaN) are
recomputed by the exact path, which also raises for invalid operations in
formats without NaN (the caller then reruns everything there to name the
element).
"""

from __future__ import annotations

import numpy as np

from numerics._ops_exact import _run_exact
from numerics._ops_kernels import _is_narrow, _k_div, _k_sqrt, _zero_sign
from numerics._ops_narrow import _BINARY32
from numerics.formats import Format

__all__ = ["_CHUNK", "_FAST_MODES", "_fast_applies", "_fast_round", "_fast_run"]

#: Elements per chunk of the fast path: a dozen float64 temporaries stay in L2.
_CHUNK = 1 << 14
_FAST_MODES = ("rne", "rna", "rtz", "ru", "rd")


def _fast_applies(fmt: Format, rounding: str, flags: bool) -> bool:
    return (not flags and rounding in _FAST_MODES and _is_narrow(fmt) and fmt.signed
            and fmt.subnormals and fmt.trailing_bits >= 1)


def _fast_round(h: np.ndarray, lo: np.ndarray | None, fmt: Format, rounding: str
                ) -> np.ndarray:
    """Round finite ``h + lo`` to fmt's grid (unbounded above: the caller redoes
    |result| > max).  The quantum of |h|'s binade is ``Q``; ``(h + 1.5*2**52*Q) - ...``
    rounds to nearest-even multiples of ``Q``; directed modes step by one quantum
    according to the sign of the residual (half a quantum below a power of two)."""
    t = fmt.trailing_bits
    ebits = h.view(np.uint64) & np.uint64(0x7FF0000000000000)
    binade = ebits.view(np.float64)  # 2**e of |h| (0 for h = 0)
    q = np.maximum(binade, fmt.smallest_normal)
    q *= 2.0**-t
    magic = q * 1.5 * 2.0**52
    r = h + magic
    r -= magic
    if lo is None and rounding == "rne":
        return np.copysign(r, h, out=r)
    d0 = h - r  # exact
    diff = d0 + lo if lo is not None else d0  # sign of exact - r
    if rounding in ("rne", "rna"):
        half = q * 0.5
        tie_h = np.abs(d0) == half
        if lo is not None:
            # the residual breaks ties that h sits on
            flip = tie_h & (lo * d0 > 0)
            r = np.where(flip, r + 2.0 * d0, r)
        if rounding == "rna":
            exact_tie = tie_h if lo is None else tie_h & (lo == 0)
            # ties away from zero: take the candidate of larger magnitude
            r = np.where(exact_tie & (np.abs(r) < np.abs(h)), r + 2.0 * d0, r)
        return np.copysign(r, h, out=r)
    sgn = np.sign(h)
    dm = diff * sgn  # > 0: |exact| > |r|
    m = np.abs(r)
    if rounding == "rtz":
        away = np.zeros(h.shape, bool)
    elif rounding == "ru":
        away = sgn > 0
    else:
        away = sgn < 0
    down_step = np.where((m == binade) & (binade > fmt.smallest_normal), q * 0.5, q)
    m = np.where(away & (dm > 0), m + q, m)
    m = np.where(~away & (dm < 0), m - down_step, m)
    return np.copysign(m, h, out=m)


def _fast_run(op: str, xs: list[np.ndarray], fmt: Format, rounding: str, overflow: str,
              names: list[str]) -> np.ndarray:
    n = xs[0].size
    out = np.empty(n, np.float64)
    figueroa = op != "fma" and fmt.precision <= 25
    use_lo = not (figueroa and rounding == "rne")
    f32 = fmt == _BINARY32 and rounding == "rne" and figueroa
    with np.errstate(all="ignore"):
        for start in range(0, n, _CHUNK):
            sl = slice(start, min(start + _CHUNK, n))
            c = [x[sl] for x in xs]
            lo: np.ndarray | None = None
            if op == "add":
                h = c[0] + c[1]
                if use_lo:
                    bb = h - c[0]
                    lo = (c[0] - (h - bb)) + (c[1] - bb)
                z = h == 0
                if z.any():
                    h = _zero_sign(h, c[0], c[1], rounding)
            elif op == "mul":
                h = c[0] * c[1]
            elif op == "fma":
                p = c[0] * c[1]
                h = p + c[2]
                bb = h - p
                lo = (p - (h - bb)) + (c[2] - bb)
                if (h == 0).any():
                    h = _zero_sign(h, p, c[2], rounding)
            elif op == "div":
                h, lo = _k_div(c[0], c[1], False, rounding)[:2]
                if not use_lo:
                    lo = None
            else:
                h, lo = _k_sqrt(c[0], False, rounding)[:2]
                if not use_lo:
                    lo = None
            if f32:
                r = h.astype(np.float32).astype(np.float64)
            else:
                r = _fast_round(h, lo, fmt, rounding)
            bad = ~(np.abs(r) <= fmt.max)
            if bad.any():
                idx = np.flatnonzero(bad)
                r[idx] = _run_exact(op, [x[idx] for x in c], names, fmt, rounding,
                                    overflow, "after", False, None, None)
            out[sl] = r
    return out
