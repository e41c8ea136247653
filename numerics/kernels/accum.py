"""Summation and dot-product loops in any format (:mod:`numerics.accum.summation`).

Every operation is one rounding of an exact value into the working format ``P``,
as in the reference: an addition ``a + b`` of two values of the format is split by
TwoSum into ``hi + lo`` (exact) and rounded once by
:func:`numerics.kernels.rounding.round_pair`; a product ``x * y`` is exact in
float64 for precisions up to 26 and split by Dekker's TwoProduct above.

Fast rounding to nearest even
-----------------------------
For round-to-nearest-even into a format of precision ``p <= 25`` the kernel rounds
``hi = RN64(a + b)`` instead of ``hi + lo``: ``RN_p(RN_53(a + b)) = RN_p(a + b)`` for
``p``-bit ``a`` and ``b`` since ``53 >= 2p + 2`` (Figueroa 1995; with underflow,
Roux 2014; ``proofs/double_rounding.md``), and a product of two such values is exact.
``RN_p(hi)`` is ``rint(hi * 2**-k) * 2**k`` with ``k`` the quantum exponent of
``hi``'s binade (clamped at ``emin``); values beyond the format's largest finite
value, infinities and NaNs take :func:`round_pair` instead.  The tests pin both
ways to the exact references.

Layout and threads
------------------
``X`` (and ``Y`` for a dot product) is C-contiguous ``(batch, n)``: one sum per row.
Rows are split over threads (``prange``); a row is summed by one thread in the
documented order, so the bits do not depend on the thread count.  Stochastic
rounding: the ``j``-th rounding of row ``r`` (in the order the module docstring of
:mod:`numerics.accum.summation` lists the operations, input casts not counted)
draws element ``j * batch + r`` of :func:`numerics.kernels.random.draw` with the
call's seed.  Pairwise summation keeps a stack of at most 64 partial sums per row
instead of an array of block sums (the same tree: combining equal-sized subtrees
as they complete, then the leftovers from the right, is the level-by-level
pairing with the odd node moving up).
"""

from __future__ import annotations

import numba
import numpy as np

from numerics.kernels.random import draw
from numerics.kernels.rounding import (
    EMIN,
    MODE_RNE,
    MODE_SR,
    MODE_SR_EXACT,
    OVERFLOW_IEEE,
    T,
    decode_one,
    round_pair,
)

__all__ = ["ALG_KAHAN", "ALG_NEUMAIER", "ALG_PAIRWISE", "ALG_RECURSIVE", "sum_rows"]

ALG_RECURSIVE, ALG_PAIRWISE, ALG_KAHAN, ALG_NEUMAIER = range(4)

_SPLIT = 134217729.0  # 2**27 + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _pow2(k: np.int64) -> float:
    """``2.0**k`` for -1022 <= k <= 1023, built from its exponent field."""
    return np.uint64((k + 1023) << 52).view(np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _rne_fast(hi: float, t: np.int64, emin: np.int64, maxval: float) -> tuple[float, bool]:
    """``RN_p(hi)`` for a finite ``hi`` within the format's range, and True; else False."""
    if hi - hi != 0.0:  # inf or NaN
        return hi, False
    e = np.int64((np.float64(hi).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))
    k = max(e - 1023, emin) - t
    r = np.rint(hi * _pow2(-k)) * _pow2(k)
    return r, abs(r) <= maxval


@numba.njit(cache=True, nogil=True)
def _round_slow(hi: float, lo: float, P: np.ndarray, mode: np.int64, seed: np.uint64,
                index: np.uint64) -> float:
    """The value of ``hi + lo`` rounded once into ``P`` by :func:`round_pair`."""
    u = np.uint64(0)
    m = mode
    if mode == MODE_SR:
        u = draw(seed, index, 64)
        m = MODE_SR_EXACT
    return decode_one(round_pair(hi, lo, P, m, OVERFLOW_IEEE, u, 64), P)


@numba.njit(cache=True, nogil=True, inline="always")
def _round(hi: float, lo: float, P: np.ndarray, mode: np.int64, fast: bool, maxval: float,
           seed: np.uint64, index: np.uint64) -> float:
    """The value of ``hi + lo`` rounded once into ``P`` (module docstring)."""
    if fast:
        r, ok = _rne_fast(hi, P[T], P[EMIN], maxval)
        if ok:
            return r
    return _round_slow(hi, lo, P, mode, seed, index)


@numba.njit(cache=True, nogil=True, inline="always")
def _two_sum(a: float, b: float) -> tuple[float, float]:
    s = a + b
    if s - s != 0.0:
        return s, 0.0
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@numba.njit(cache=True, nogil=True)
def _two_prod(a: float, b: float) -> tuple[float, float]:
    p = a * b
    if p - p != 0.0 or p == 0.0:
        return p, 0.0
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@numba.njit(cache=True, nogil=True, inline="always")
def _add(a: float, b: float, P: np.ndarray, mode: np.int64, fast: bool, maxval: float,
         seed: np.uint64, index: np.uint64) -> float:
    """``fl(a + b)``: the fast rounding of ``RN64(a + b)``, else ``round_pair`` of TwoSum."""
    if fast:
        r, ok = _rne_fast(a + b, P[T], P[EMIN], maxval)
        if ok:
            return r
    hi, lo = _two_sum(a, b)
    return _round_slow(hi, lo, P, mode, seed, index)


@numba.njit(cache=True, nogil=True, inline="always")
def _term(X: np.ndarray, Y: np.ndarray, r: np.int64, i: np.int64, dot: bool, exact_prod: bool,
          P: np.ndarray, mode: np.int64, fast: bool, fast_cast: bool, maxval: float,
          seed: np.uint64, index: np.uint64) -> tuple[float, float]:
    """Term ``i`` of row ``r`` (the input rounded to nearest even; for a dot product the
    rounded product of the two rounded inputs) and the exact ``|x y|`` (``|x|``)."""
    x = _round(np.float64(X[r, i]), 0.0, P, MODE_RNE, fast_cast, maxval, seed, index)
    if not dot:
        return x, abs(x)
    y = _round(np.float64(Y[r, i]), 0.0, P, MODE_RNE, fast_cast, maxval, seed, index)
    if exact_prod:
        p, lo = x * y, 0.0
    else:
        p, lo = _two_prod(x, y)
    return _round(p, lo, P, mode, fast, maxval, seed, index), abs(x * y)


@numba.njit(cache=True, nogil=True, parallel=True)
def sum_rows(X: np.ndarray, Y: np.ndarray, dot: bool, alg: np.int64, block: np.int64,
             P: np.ndarray, mode: np.int64, maxval: float, seed: np.uint64,
             value: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray) -> None:
    """Sum each row of ``X`` (of ``X * Y`` for ``dot``) into ``value[r]``.

    ``abs_sum[r]`` receives ``sum |x_i|`` of the rounded terms (``sum |x_i y_i|`` of the
    exact products for a dot product) summed in float64, ``tiny[r]`` the number of
    exact products below the format's smallest normal.  ``alg`` is one of the
    ``ALG_*`` codes, ``block`` the pairwise block length.
    """
    batch, n = X.shape
    p = P[T] + 1
    fast_cast = p <= 25
    fast = mode == MODE_RNE and fast_cast
    exact_prod = p <= 26
    smallest_normal = _pow2(P[EMIN])
    B = np.uint64(batch)
    for r in numba.prange(batch):
        j = np.uint64(r)  # the stream index of the row's next rounding: j * batch + r
        t0, a0 = _term(X, Y, r, 0, dot, exact_prod, P, mode, fast, fast_cast,
                                maxval, seed, j)
        if dot:
            j += B
        acc_abs = a0
        ntiny = 1 if dot and a0 < smallest_normal else 0
        s = t0
        c = 0.0
        stack = np.empty(64)
        level = np.empty(64, np.int64)
        depth = 0
        for i in range(1, n + 1):
            if i < n:
                x, ax = _term(X, Y, r, i, dot, exact_prod, P, mode, fast, fast_cast,
                                maxval, seed, j)
                if dot:
                    j += B
                acc_abs += ax
                if dot and ax < smallest_normal:
                    ntiny += 1
            else:
                x = 0.0
            if alg == ALG_RECURSIVE:
                if i < n:
                    s = _add(s, x, P, mode, fast, maxval, seed, j)
                    j += B
            elif alg == ALG_KAHAN:
                if i < n:
                    y = _add(x, -c, P, mode, fast, maxval, seed, j)
                    j += B
                    t = _add(s, y, P, mode, fast, maxval, seed, j)
                    j += B
                    d = _add(t, -s, P, mode, fast, maxval, seed, j)
                    j += B
                    c = _add(d, -y, P, mode, fast, maxval, seed, j)
                    j += B
                    s = t
            elif alg == ALG_NEUMAIER:
                if i < n:
                    t = _add(s, x, P, mode, fast, maxval, seed, j)
                    j += B
                    if abs(s) >= abs(x):
                        d = _add(s, -t, P, mode, fast, maxval, seed, j)
                        j += B
                        d = _add(d, x, P, mode, fast, maxval, seed, j)
                    else:
                        d = _add(x, -t, P, mode, fast, maxval, seed, j)
                        j += B
                        d = _add(d, s, P, mode, fast, maxval, seed, j)
                    j += B
                    c = _add(c, d, P, mode, fast, maxval, seed, j)
                    j += B
                    s = t
                else:
                    s = _add(s, c, P, mode, fast, maxval, seed, j)
                    j += B
            else:  # pairwise: s is the running block sum
                if i % block != 0 and i < n:
                    s = _add(s, x, P, mode, fast, maxval, seed, j)
                    j += B
                    continue
                # a block is complete: push it, merging equal levels
                stack[depth] = s
                level[depth] = 0
                depth += 1
                while depth >= 2 and level[depth - 1] == level[depth - 2]:
                    stack[depth - 2] = _add(stack[depth - 2], stack[depth - 1], P, mode, fast,
                                            maxval, seed, j)
                    j += B
                    level[depth - 2] += 1
                    depth -= 1
                s = x
        if alg == ALG_PAIRWISE:
            while depth >= 2:
                stack[depth - 2] = _add(stack[depth - 2], stack[depth - 1], P, mode, fast,
                                        maxval, seed, j)
                j += B
                depth -= 1
            s = stack[0]
        value[r] = s
        abs_sum[r] = acc_abs
        tiny[r] = ntiny
