"""Fused multi-term adders written independently of ``numerics``, used as black boxes.

Integer arithmetic throughout (sign and magnitude, explicit shifts), unlike the
probe's own float64 model, so that a shared mistake is unlikely:

* every input ``x`` is ``m 2**(e - t)`` with an integer ``m`` (``t`` trailing
  bits, ``e >= emin``); a product is ``(m_a m_b) 2**(e_a + e_b - 2t)``;
* a group is the previous result ``c`` (binary32, exponent clamped at -126) and
  ``G`` products; ``E`` is the largest exponent; every term becomes an integer
  count of ``2**(E - F)``: shifted left exactly, or shifted right with truncation
  (``"rtz"``) or round-half-even (``"rne"``);
* the signed integer total is rounded toward zero into binary32 (24 bits, or
  fewer below 2**-126; beyond the range: inf);
* with ``promote_every=N`` each run of N products starts from ``c = 0`` and its
  result is added to a running binary32 total with numpy's float32 ``+``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FusedAdderEmulation", "fused_sum"]

_FORMATS = {"bfloat16": (7, -126), "binary16": (10, -14)}


def _split(x: np.ndarray, t: int, emin: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sign, integer significand and exponent ``e`` (value ``s m 2**(e - t)``)."""
    mag = np.abs(x)
    _, ex = np.frexp(mag)
    e = np.maximum(ex.astype(np.int64) - 1, emin)
    m = np.round(np.ldexp(mag, (t - e).astype(np.int64))).astype(np.int64)
    e = np.where(mag == 0, -126, e)
    return np.where(x < 0, -1, 1).astype(np.int64), m, e


def _shift(m: np.ndarray, s: np.ndarray, rounding: str) -> np.ndarray:
    """``m * 2**-s`` as an integer: exact for s <= 0, else truncated or rounded."""
    out = np.zeros_like(m)
    left = s <= 0
    out[left] = m[left] << np.minimum(-s[left], 62)
    right = ~left & (s < 62)
    mm, ss = m[right], s[right]
    q = mm >> ss
    if rounding == "rne":
        rem = mm - (q << ss)
        half = np.int64(1) << (ss - 1)
        q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1))).astype(np.int64)
    out[right] = q
    return out


def _to_binary32_rtz(total: np.ndarray, scale_exp: np.ndarray) -> np.ndarray:
    """``total * 2**scale_exp`` (signed int64, exact) truncated toward zero to binary32."""
    mag = np.abs(total)
    _, nb = np.frexp(mag.astype(np.float64))  # bit length (total < 2**53)
    nb = nb.astype(np.int64)
    lsb = scale_exp  # weight of the integer's last bit
    top = lsb + nb - 1  # exponent of the leading bit
    keep_lsb = np.maximum(top - 23, -149)  # weight of the last kept bit
    drop = np.maximum(keep_lsb - lsb, 0)
    kept = mag >> np.minimum(drop, 62)
    value = np.ldexp(kept.astype(np.float64), lsb + drop)
    value = np.where(top >= 128, np.inf, value)
    value = np.where(mag == 0, 0.0, value)
    return np.where(total < 0, -value, value)


@dataclass(frozen=True)
class FusedAdderEmulation:
    """``mm(A, B)`` of a fused adder with the given parameters (module docstring)."""

    fractional_bits: int
    group_size: int
    alignment: str = "rtz"
    promote_every: int | None = None
    input_format: str = "bfloat16"

    def _chain(self, sa: np.ndarray, ma: np.ndarray, ea: np.ndarray, sb: np.ndarray,
               mb: np.ndarray, eb: np.ndarray, t: int) -> np.ndarray:
        """One interval: shapes (outputs, k); returns binary32 values as float64."""
        F, G = self.fractional_bits, self.group_size
        n_out, k = ma.shape
        c = np.zeros(n_out)
        for g0 in range(0, k, G):
            sl = slice(g0, min(g0 + G, k))
            sign = sa[:, sl] * sb[:, sl]
            m = ma[:, sl] * mb[:, sl]
            e = ea[:, sl] + eb[:, sl]
            cs, cm, ce = _split(c, 23, -126)
            E = np.maximum(e.max(axis=1), ce)
            # product weight 2**(e - 2t); c's weight 2**(ce - 23); unit 2**(E - F)
            terms = _shift(m, (E[:, None] - F) - (e - 2 * t), self.alignment)
            cterm = _shift(cm, (E - F) - (ce - 23), self.alignment)
            total = (sign * terms).sum(axis=1) + cs * cterm
            c = _to_binary32_rtz(total, E - F)
        return c

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        t, emin = _FORMATS[self.input_format]
        A = np.asarray(A, np.float64)
        B = np.asarray(B, np.float64)
        M, k = A.shape
        N = B.shape[1]
        a = np.repeat(A, N, axis=0)  # output (i, j) is row i * N + j
        b = np.tile(B.T, (M, 1))
        sa, ma, ea = _split(a, t, emin)
        sb, mb, eb = _split(b, t, emin)
        N_p = self.promote_every or k
        total = np.zeros(M * N, np.float32)
        for lo in range(0, k, N_p):
            sl = slice(lo, lo + N_p)
            part = self._chain(sa[:, sl], ma[:, sl], ea[:, sl], sb[:, sl], mb[:, sl],
                               eb[:, sl], t)
            total = total + part.astype(np.float32)
        return total.astype(np.float64).reshape(M, N)


def fused_sum(x: np.ndarray, fractional_bits: int, group_size: int) -> np.float32:
    """A float32 ``sum`` made of fused groups: the black box of a non-binary tree."""
    emu = FusedAdderEmulation(fractional_bits, group_size, input_format="bfloat16")
    t, emin = _FORMATS["bfloat16"]
    x = np.asarray(x, np.float64)[None, :]
    one = np.ones_like(x)
    s, m, e = _split(x, t, emin)
    s1, m1, e1 = _split(one, t, emin)
    return np.float32(emu._chain(s, m, e, s1, m1, e1, t)[0])
