"""Exact kernels of :mod:`numerics.ops`: the exact result as an unevaluated pair.

Each kernel returns ``(h, lo, k)`` with ``(h + lo) * 2**k`` the exact result of
the operation on finite operands (``k is None``: no scaling, ``2**0``), where
``h`` is the binary64 round-to-nearest-even of the (scaled) exact value and
``lo`` the residual, or a value of the same sign that rounds identically (all
that the single rounding afterwards needs, see :func:`numerics.eft.three_sum_rne`):

* ``add``: TwoSum (:func:`numerics.eft.two_sum`), exact.  The sign of an exact
  zero sum follows IEEE 754-2019 6.3 (:func:`_zero_sign`).
* ``mul``: for narrow formats (:func:`_is_narrow`: at most 26 significant bits,
  exponents within +-250) the float64 product of two values is exact
  (``proofs/double_rounding.md``, D4); wider formats use Dekker's TwoProd on the
  significands scaled by ``frexp``, so nothing overflows or underflows.
* ``div``: ``q = fl(a / b)`` and the exact remainder ``r = a - q*b`` (TwoProd);
  ``lo = r / b`` carries the sign of the residual.  ``sqrt``: ``s = fl(sqrt(a))``
  and ``r = a - s*s``, ``lo = r / (2s)``.  On scaled significands the rounded
  ``lo`` (``r / b`` is itself rounded) is kept strictly inside half a spacing of
  ``h`` (:func:`_nudge_residual`), so that it cannot turn into a tie or cross one.
* ``fma``: exact product, then an exact sum of three terms renormalised so that
  ``h = RNE64(a*b + c)`` (:func:`numerics.eft.three_sum_rne`); terms more than
  2**150 apart only contribute their sign (a "sticky" term, :func:`_sticky`),
  which changes no rounding.

``wide=False`` (narrow formats) needs no scaling: every intermediate stays far
inside binary64's range.  :func:`_unscale` maps a scaled pair of a wide format
other than binary64 back to float64, clamping values far outside the format's
range to ones that round the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from numerics import eft
from numerics.formats import Format

__all__ = ["Kernel", "_frexp", "_is_narrow", "_k_add", "_k_div", "_k_fma", "_k_mul",
           "_k_sqrt", "_nudge_residual", "_sticky", "_unscale", "_zero_sign"]


def _is_narrow(fmt: Format) -> bool:
    """Exact pairs need no scaling: products of two values are exact in float64."""
    return (fmt.precision <= 26 and fmt.emax <= 250
            and fmt.emin - fmt.trailing_bits >= -250)


def _zero_sign(h: np.ndarray, x: np.ndarray, y: np.ndarray, rounding: str) -> np.ndarray:
    """IEEE sign of an exact zero sum ``x + y``: same-signed zeros keep it, else +0 (rd: -0)."""
    z = h == 0
    if not np.any(z):
        return h
    both_neg = (x == 0) & (y == 0) & np.signbit(x) & np.signbit(y)
    both_pos = (x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y)
    neg = both_neg | ((rounding == "rd") & ~both_pos)
    return np.where(z, np.where(neg, -0.0, 0.0), h)


def _frexp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, e = np.frexp(x)
    return m, e.astype(np.int64)


def _sticky(m: np.ndarray) -> np.ndarray:
    return np.where(m == 0, 0.0, np.copysign(2.0**-300, m))


Kernel = Callable[..., tuple[np.ndarray, np.ndarray, "np.ndarray | None"]]


def _k_add(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        h, lo = eft.two_sum(a, b)
        return _zero_sign(h, a, b, rounding), lo, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    k = np.where(a == 0, eb, np.where(b == 0, ea, np.maximum(ea, eb)))
    da, db = ea - k, eb - k
    a2 = np.where(da < -150, _sticky(ma), np.ldexp(ma, np.maximum(da, -150).astype(np.int32)))
    b2 = np.where(db < -150, _sticky(mb), np.ldexp(mb, np.maximum(db, -150).astype(np.int32)))
    h, lo = eft.two_sum(a2, b2)
    return _zero_sign(h, a, b, rounding), lo, k


def _k_mul(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        return a * b, np.zeros_like(a), None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    h, lo = eft.two_prod(ma, mb)
    return h, lo, ea + eb


def _nudge_residual(h: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Keep an approximate residual strictly inside half the spacing on its side."""
    ah = np.abs(h)
    rel = lo * np.sign(h)
    hs = np.where(rel > 0, np.spacing(ah), ah - np.nextafter(ah, 0.0)) * 0.5
    return np.where((np.abs(lo) >= hs) & (lo != 0), np.copysign(np.nextafter(hs, 0.0), lo), lo)


def _k_div(a: np.ndarray, b: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        q = a / b
        p, e = eft.two_prod(q, b)
        r = (a - p) - e
        return q, r / b, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    q = ma / mb
    p, e = eft.two_prod(q, mb)
    r = (ma - p) - e
    return q, _nudge_residual(q, r / mb), ea - eb


def _k_sqrt(a: np.ndarray, wide: bool, rounding: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        s = np.sqrt(a)
        p, e = eft.two_prod(s, s)
        r = (a - p) - e
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = np.where(s != 0, r / (2.0 * s), 0.0)
        return s, lo, None
    ma, ea = _frexp(a)
    odd = (ea & 1) == 1
    ma = np.where(odd, ma * 2.0, ma)
    ea = ea - odd
    s = np.sqrt(ma)
    p, e = eft.two_prod(s, s)
    r = (ma - p) - e
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(s != 0, r / (2.0 * s), 0.0)
    return s, _nudge_residual(s, lo), ea // 2


def _k_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, wide: bool, rounding: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if not wide:
        p = a * b
        h, lo = eft.two_sum(p, c)
        return _zero_sign(h, p, c, rounding), lo, None
    ma, ea = _frexp(a)
    mb, eb = _frexp(b)
    mc, ec = _frexp(c)
    x1, x2 = eft.two_prod(ma, mb)
    kp = ea + eb
    pz = x1 == 0
    cz = c == 0
    diff = ec - kp
    big_c = ~pz & ~cz & (diff > 150)
    small_c = ~pz & ~cz & (diff < -150)
    c2 = np.where(small_c, _sticky(mc),
                  np.ldexp(mc, np.clip(diff, -151, 151).astype(np.int32)))
    c2 = np.where(cz, 0.0, c2)
    h3, l3 = eft.three_sum_rne(x1, x2, c2)
    hb, lb = eft.two_sum(mc, _sticky(x1))
    h = np.where(big_c, hb, h3)
    lo = np.where(big_c, lb, l3)
    k = np.where(big_c, ec, kp)
    # Exact product zero: the result is c itself.
    h = np.where(pz, mc, h)
    lo = np.where(pz, 0.0, lo)
    k = np.where(pz, ec, k)
    psign = np.where(np.signbit(a) ^ np.signbit(b), -0.0, 0.0)
    h = _zero_sign(h, np.where(pz, psign, x1), c, rounding)
    return h, lo, k


def _unscale(h: np.ndarray, lo: np.ndarray, k: np.ndarray, fmt: Format
             ) -> tuple[np.ndarray, np.ndarray]:
    """Scaled pair back to float64 for a wide format that is not binary64."""
    if fmt.smallest_subnormal < 2.0**-900 or fmt.max > 2.0**900:
        raise NotImplementedError(f"{fmt.name}: only binary64 may reach float64's limits")
    _, eh = np.frexp(h)
    e = eh + k
    low = e < np.log2(fmt.smallest_subnormal) - 60
    high = e > fmt.emax + 60
    kc = np.clip(k, -1100, 1100).astype(np.int32)
    with np.errstate(under="ignore", over="ignore"):
        h2 = np.ldexp(h, kc)
        lo_c = np.where(lo == 0, 0.0, np.copysign(np.maximum(np.abs(lo), np.abs(h) * 2.0**-60),
                                                  lo))
        lo2 = np.ldexp(lo_c, kc)
    h2 = np.where(low, np.copysign(fmt.smallest_subnormal * 2.0**-60, h), h2)
    h2 = np.where(high, np.copysign(fmt.max * 2.0**60, h), h2)
    lo2 = np.where(low | high, 0.0, lo2)
    return h2, lo2
