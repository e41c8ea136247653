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
``RN_p(hi)`` is ``(|hi| + C) - C`` with the sign of ``hi``, where ``C = 1.5 * 2**(k + 52)``
and ``k`` is the quantum exponent of ``hi``'s binade (clamped at ``emin``); values
beyond the format's largest finite value, infinities and NaNs take :func:`round_pair`
instead.  The tests pin both ways to the exact references.

Layout and threads
------------------
``X`` (and ``Y`` for a dot product) is C-contiguous ``(batch, n)``: one sum per row.
Rows are split over threads (``prange``) in tiles of 8 that one thread sums side by
side (8 independent chains keep the core busy); each row is summed in the
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

from typing import Any

import numba
import numpy as np

from numerics.kernels.random import draw
from numerics.kernels.rounding import (
    EMIN,
    MODE_RNE,
    MODE_RTZ,
    MODE_SR,
    MODE_SR_EXACT,
    OVERFLOW_IEEE,
    T,
    decode_one,
    round_pair,
)

__all__ = [
    "ALG_KAHAN",
    "ALG_NEUMAIER",
    "ALG_PAIRWISE",
    "ALG_RECURSIVE",
    "ALIGN_RD",
    "ALIGN_RNE",
    "ALIGN_RTZ",
    "exponents",
    "fused_gemm",
    "round_values",
    "sum_rows",
    "sum_rows_f32",
]

ALG_RECURSIVE, ALG_PAIRWISE, ALG_KAHAN, ALG_NEUMAIER = range(4)

_SPLIT = 134217729.0  # 2**27 + 1
_TILE = 8  # rows summed side by side by one thread


@numba.njit(cache=True, nogil=True, inline="always")
def _pow2(k: int) -> float:
    """``2.0**k`` for -1022 <= k <= 1023, built from its exponent field."""
    return np.uint64((k + 1023) << 52).view(np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _rne_fast(hi: float, t: int, emin: int, maxval: float) -> tuple[float, bool]:
    """``RN_p(hi)`` for a finite ``hi`` within the format's range, and True; else False."""
    if hi - hi != 0.0:  # inf or NaN
        return hi, False
    e = np.int64((np.float64(hi).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))
    k = max(e - 1023, emin) - t
    # C = 1.5 * 2**(k + 52): hi + C rounds hi to a multiple of 2**k, to nearest even
    # (|hi| < 2**(k + t + 1) <= 2**(k + 51)), and subtracting C is exact
    C = np.uint64(((k + 1075) << 52) | (1 << 51)).view(np.float64)
    r = (abs(hi) + C) - C  # ties to even on the magnitude; the sign is put back, so that
    return np.copysign(r, hi), r <= maxval  # a value that rounds to 0 keeps it


@numba.njit(cache=True, nogil=True)
def _round_slow(hi: float, lo: float, P: np.ndarray, mode: int, seed: int,
                index: int) -> float:
    """The value of ``hi + lo`` rounded once into ``P`` by :func:`round_pair`."""
    u = np.uint64(0)
    m = mode
    if mode == MODE_SR:
        u = draw(seed, index, 64)  # type: ignore[arg-type]
        m = MODE_SR_EXACT
    code = round_pair(hi, lo, P, m, OVERFLOW_IEEE, u, 64)
    return decode_one(code, P)


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
def _add_fast(a: float, b: float, P: np.ndarray, mode: int, t: int, emin: int,
              maxval: float, seed: int, index: int) -> float:
    """``fl(a + b)`` to nearest even for ``p <= 25``: ``RN_p(RN64(a + b))`` (module
    docstring); ``round_pair`` of ``RN64(a + b)`` beyond the format's range."""
    s = a + b
    r, ok = _rne_fast(s, t, emin, maxval)
    if not ok:
        r = _round_slow(s, 0.0, P, mode, seed, index)
    return r


@numba.njit(cache=True, nogil=True, inline="always")
def _add_exact(a: float, b: float, P: np.ndarray, mode: int, t: int, emin: int,
               maxval: float, seed: int, index: int) -> float:
    """``fl(a + b)`` in any mode: ``round_pair`` of the TwoSum pair."""
    hi, lo = _two_sum(a, b)
    return _round_slow(hi, lo, P, mode, seed, index)


@numba.njit(cache=True, nogil=True, inline="always")
def _cast(x: float, P: np.ndarray, t: int, emin: int, maxval: float) -> float:
    """The input ``x`` (exact in float64) rounded to nearest even into ``P``."""
    if t <= 24:
        r, ok = _rne_fast(x, t, emin, maxval)
        if ok:
            return r
    return _round_slow(x, 0.0, P, MODE_RNE, np.uint64(0), np.uint64(0))


@numba.njit(cache=True, nogil=True, inline="always")
def _term(X: np.ndarray, Y: np.ndarray, r: int, i: int, dot: bool, add: Any,
          P: np.ndarray, mode: int, t: int, emin: int, maxval: float,
          seed: int, index: int) -> tuple[float, float]:
    """Term ``i`` of row ``r`` (the input rounded to nearest even; for a dot product the
    rounded product of the two rounded inputs) and the exact ``|x y|`` (``|x|``)."""
    x = _cast(np.float64(X[r, i]), P, t, emin, maxval)
    if not dot:
        return x, abs(x)
    y = _cast(np.float64(Y[r, i]), P, t, emin, maxval)
    if t <= 25:  # p <= 26: the product is exact in float64
        return add(x * y, -0.0, P, mode, t, emin, maxval, seed, index), abs(x * y)
    p, lo = _two_prod(x, y)
    return _round_slow(p, lo, P, mode, seed, index), abs(p)


@numba.njit(cache=True, nogil=True, parallel=True)
def sum_rows(X: np.ndarray, Y: np.ndarray, dot: bool, alg: int, block: int,
             P: np.ndarray, mode: int, maxval: float, seed: int,
             value: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray) -> None:
    """Sum each row of ``X`` (of ``X * Y`` for ``dot``) into ``value[r]``.

    ``abs_sum[r]`` receives ``sum |x_i|`` of the rounded terms (``sum |x_i y_i|`` of the
    exact products for a dot product) summed in float64, ``tiny[r]`` the number of
    exact products below the format's smallest normal.  ``alg`` is one of the
    ``ALG_*`` codes, ``block`` the pairwise block length.
    """
    tiles = (X.shape[0] + _TILE - 1) // _TILE
    if mode == MODE_RNE and P[T] <= 24:
        for tile in numba.prange(tiles):
            _tile(X, Y, dot, alg, block, P, mode, maxval, seed, value, abs_sum, tiny, tile,
                  _add_fast)
    else:
        for tile in numba.prange(tiles):
            _tile(X, Y, dot, alg, block, P, mode, maxval, seed, value, abs_sum, tiny, tile,
                  _add_exact)


@numba.njit(cache=True, nogil=True, inline="always")
def _tile(X: np.ndarray, Y: np.ndarray, dot: bool, alg: int, block: int,
          P: np.ndarray, mode: int, maxval: float, seed: int, value: np.ndarray,
          abs_sum: np.ndarray, tiny: np.ndarray, tile: int, add: Any) -> None:
    """Rows ``8 tile .. 8 tile + 7``, summed side by side with the addition ``add``."""
    batch, n = X.shape
    t = P[T]
    emin = P[EMIN]
    smallest_normal = _pow2(emin)
    B = np.uint64(batch)
    r0 = tile * _TILE
    R = min(_TILE, batch - r0)
    # the state of each of the tile's rows (interleaved: R independent chains)
    s = np.zeros(_TILE)
    c = np.zeros(_TILE)
    acc_abs = np.zeros(_TILE)
    ntiny = np.zeros(_TILE, np.int64)
    j = np.empty(_TILE, np.uint64)  # the stream index of a row's next rounding
    stack = np.empty((_TILE, 64))
    level = np.empty((_TILE, 64), np.int64)
    depth = np.zeros(_TILE, np.int64)
    for q in range(R):
        r = r0 + q
        j[q] = np.uint64(r)
        t0, a0 = _term(X, Y, r, 0, dot, add, P, mode, t, emin, maxval, seed, j[q])
        if dot:
            j[q] += B
        acc_abs[q] = a0
        ntiny[q] = 1 if dot and a0 < smallest_normal else 0
        s[q] = t0
    for i in range(1, n + 1):
        for q in range(R):
            r = r0 + q
            x = 0.0
            if i < n:
                x, ax = _term(X, Y, r, i, dot, add, P, mode, t, emin, maxval, seed, j[q])
                if dot:
                    j[q] += B
                acc_abs[q] += ax
                if dot and ax < smallest_normal:
                    ntiny[q] += 1
            if alg == ALG_RECURSIVE:
                if i < n:
                    s[q] = add(s[q], x, P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
            elif alg == ALG_KAHAN:
                if i < n:
                    y = add(x, -c[q], P, mode, t, emin, maxval, seed, j[q])
                    tt = add(s[q], y, P, mode, t, emin, maxval, seed, j[q] + B)
                    d = add(tt, -s[q], P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    c[q] = add(d, -y, P, mode, t, emin, maxval, seed, j[q] + 3 * B)
                    j[q] += 4 * B
                    s[q] = tt
            elif alg == ALG_NEUMAIER:
                if i < n:
                    sq = s[q]
                    tt = add(sq, x, P, mode, t, emin, maxval, seed, j[q])
                    if abs(sq) >= abs(x):
                        d = add(sq, -tt, P, mode, t, emin, maxval, seed, j[q] + B)
                        d = add(d, x, P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    else:
                        d = add(x, -tt, P, mode, t, emin, maxval, seed, j[q] + B)
                        d = add(d, sq, P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    c[q] = add(c[q], d, P, mode, t, emin, maxval, seed, j[q] + 3 * B)
                    j[q] += 4 * B
                    s[q] = tt
                else:
                    s[q] = add(s[q], c[q], P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
            else:  # pairwise: s is the running block sum
                if i % block != 0 and i < n:
                    s[q] = add(s[q], x, P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
                    continue
                # a block is complete: push it, merging equal levels
                dq = depth[q]
                stack[q, dq] = s[q]
                level[q, dq] = 0
                dq += 1
                while dq >= 2 and level[q, dq - 1] == level[q, dq - 2]:
                    stack[q, dq - 2] = add(stack[q, dq - 2], stack[q, dq - 1], P, mode, t,
                                           emin, maxval, seed, j[q])
                    j[q] += B
                    level[q, dq - 2] += 1
                    dq -= 1
                if i == n:
                    while dq >= 2:
                        stack[q, dq - 2] = add(stack[q, dq - 2], stack[q, dq - 1], P, mode,
                                               t, emin, maxval, seed, j[q])
                        j[q] += B
                        dq -= 1
                    s[q] = stack[q, 0]
                else:
                    s[q] = x
                depth[q] = dq
    for q in range(R):
        value[r0 + q] = s[q]
        abs_sum[r0 + q] = acc_abs[q]
        tiny[r0 + q] = ntiny[q]


# ----------------------------------------------------------------------------------
# The "fused" matrix-unit adder (NVIDIA tensor cores) over a whole GEMM
# ----------------------------------------------------------------------------------

ALIGN_RTZ, ALIGN_RD, ALIGN_RNE = range(3)
_GEMM_ROWS = 8  # rows of A per pass over B


@numba.njit(cache=True, nogil=True, inline="always")
def _align_value(v: float, align: int) -> float:
    if align == ALIGN_RTZ:
        return np.trunc(v)
    if align == ALIGN_RD:
        return np.floor(v)
    return np.rint(v)


@numba.njit(cache=True, nogil=True, parallel=True)
def fused_gemm(A: np.ndarray, EA: np.ndarray, B: np.ndarray, EB: np.ndarray,
               d: np.ndarray, k0: int, k1: int, G: int, F: int,
               align: int, Pout: np.ndarray, out_mode: int, e8m13: bool) -> None:
    """Chain the groups ``k0 .. k1`` (a multiple of ``G`` apart) of the ``"fused"`` rule
    into ``d`` (M, N), in place (:mod:`numerics.accum.tensorcore`, steps 1-4).

    ``A`` (M, K) and ``B`` (K, N) hold values of the input format (precision <= 26, so
    every product is exact in float64) and ``EA``, ``EB`` their exponents of step 1
    (-126 for a zero); ``d`` holds finite values of the output format ``Pout``.  Each
    term ``a b 2**(F - E)`` is exact in float64 and rounded to an integer by ``align``
    (``trunc``, ``floor`` or ``rint``); a group's total is an integer below ``2**(F + 9)``,
    exact in float64 for ``F <= 44``, and ``total * 2**(E - F)`` is rounded once into
    ``Pout`` with ``out_mode``.  Rows are split over threads; each output is computed by
    one thread in the documented order.
    """
    M = A.shape[0]
    N = B.shape[1]
    t_out = Pout[T]
    emin_out = Pout[EMIN]
    top = _pow2(Pout[4] + 1)  # 2**(emax + 1)
    has_inf = Pout[9] >= 0  # an infinity code
    RB = _GEMM_ROWS
    for blk in numba.prange((M + RB - 1) // RB):
        i0 = blk * RB
        R = min(RB, M - i0)
        E = np.empty((RB, N), np.int32)  # int32: the max pass vectorizes
        scale = np.empty((RB, N))
        tot = np.empty((RB, N))
        for g0 in range(k0, k1, G):
            # steps 1-2: E = max(e_c, max_k e_a + e_b); c's own term
            for r in range(R):
                for j in range(N):
                    v = d[i0 + r, j]
                    e = np.int64((np.float64(v).view(np.uint64) >> np.uint64(52))
                                 & np.uint64(0x7FF))
                    E[r, j] = np.int32(-126 if v == 0.0 else max(e - 1023, emin_out))
            for k in range(g0, g0 + G):
                for r in range(R):
                    ea = EA[i0 + r, k]
                    for j in range(N):
                        E[r, j] = max(E[r, j], np.int32(ea + EB[k, j]))
            for r in range(R):
                for j in range(N):
                    scale[r, j] = _pow2(F - np.int64(E[r, j]))
                    tot[r, j] = _align_value(d[i0 + r, j] * scale[r, j], align)
            for k in range(g0, g0 + G):
                for r in range(R):
                    av = np.float64(A[i0 + r, k])
                    if av == 0.0:
                        continue
                    if align == ALIGN_RTZ:
                        for j in range(N):
                            tot[r, j] += np.trunc(av * B[k, j] * scale[r, j])
                    elif align == ALIGN_RD:
                        for j in range(N):
                            tot[r, j] += np.floor(av * B[k, j] * scale[r, j])
                    else:
                        for j in range(N):
                            tot[r, j] += np.rint(av * B[k, j] * scale[r, j])
            # steps 3-4: one rounding into the output format
            for r in range(R):
                i = i0 + r
                for j in range(N):
                    if tot[r, j] == 0.0:
                        d[i, j] = 0.0  # an exact zero is +0
                        continue
                    v = tot[r, j] * _pow2(np.int64(E[r, j]) - F)
                    rr = v
                    if out_mode == MODE_RTZ and has_inf and abs(v) >= top:
                        rr = np.copysign(np.inf, v)
                    elif t_out != 23 or np.float64(np.float32(v)) != v or abs(v) >= top:
                        rr = _round_slow(v, 0.0, Pout, out_mode, np.uint64(0), np.uint64(0))
                    if e8m13 and rr - rr == 0.0:
                        # clear the low 10 bits of the binary32 encoding: truncate to a
                        # multiple of 2**(max(e, -126) - 13)
                        e = np.int64((np.float64(rr).view(np.uint64) >> np.uint64(52))
                                     & np.uint64(0x7FF))
                        q = max(e - 1023, -126) - 13
                        rr = np.trunc(rr * _pow2(-q)) * _pow2(q)
                    d[i, j] = rr


@numba.njit(cache=True, nogil=True, parallel=True)
def round_values(x: np.ndarray, lo: np.ndarray, P: np.ndarray, mode: int,
                 seed: int, base: int, out: np.ndarray) -> None:
    """``out[i]``: the value of ``x[i] + lo[i]`` (exact, 1-D; ``lo`` may be one zero for
    all) rounded once into ``P`` (a NaN becomes +0 in a format without NaN).  Stochastic
    rounding draws element ``base + i`` of the stream with ``seed``."""
    t = P[T]
    emin = P[EMIN]
    maxval = _max_finite(P)
    paired = lo.size == x.size  # else lo is one zero
    for i in numba.prange(x.size):
        v = np.float64(x[i])
        low = lo[i] if paired else 0.0
        if mode == MODE_RNE and t <= 24 and low == 0.0:
            r, ok = _rne_fast(v, t, emin, maxval)
            if ok:
                out[i] = r
                continue
        out[i] = _round_slow(v, low, P, mode, seed, base + np.uint64(i))


@numba.njit(cache=True, nogil=True, inline="always")
def _max_finite(P: np.ndarray) -> float:
    return decode_one(np.uint64(P[8]), P)  # MAXMAG: the largest finite magnitude


@numba.njit(cache=True, nogil=True, parallel=True)
def exponents(x: np.ndarray, emin: int, out: np.ndarray) -> None:
    """``out[i]``: the exponent of ``x[i]`` clamped below at ``emin``; -126 for a zero or
    a non-finite value (step 1 of the ``"fused"`` rule)."""
    for i in numba.prange(x.size):
        v = np.float64(x[i])
        e = np.int64((np.float64(v).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))
        if v == 0.0 or e == 0x7FF:
            out[i] = -126
        else:
            out[i] = max(e - 1023, emin)


# ----------------------------------------------------------------------------------
# float32 rows into a format with binary32's exponent range (bfloat16, tf32): SIMD
# ----------------------------------------------------------------------------------

_LANES = 16  # rows summed side by side in float32 lanes
_CHUNK = 64  # terms per row copied (transposed) into a lane buffer at once


@numba.njit(cache=True, nogil=True, inline="always")
def _round_lanes(w: np.ndarray, wu: np.ndarray, half: int, mask: int, d: int, narrow: bool,
                 tiny: float, C: float, top: float) -> None:
    """Round the binary32 values ``w`` (``wu`` their bits) to nearest even, keeping
    ``23 - d`` fraction bits: ``(u + 2**(d-1) - 1 + lsb) & mask``, NaN kept.  For a
    ``narrow`` format (``emin > -126``) a value below ``tiny = 2**emin`` is rounded on the
    subnormal grid instead, ``(|v| + C) - C`` with ``C = 1.5 * 2**(emin - t + 23)``, and
    a result beyond ``top`` (the largest finite value) becomes an infinity."""
    if narrow:
        for q in range(w.size):
            v = w[q]
            a = abs(v)
            if a < tiny:
                w[q] = np.copysign((a + np.float32(C)) - np.float32(C), v)
                continue
            u = wu[q]
            r = (u + half + ((u >> d) & np.uint32(1))) & mask
            wu[q] = r if v == v else u
            if abs(w[q]) > top:
                w[q] = np.copysign(np.float32(np.inf), v)
        return
    for q in range(w.size):
        u = wu[q]
        r = (u + half + ((u >> d) & np.uint32(1))) & mask
        wu[q] = r if w[q] == w[q] else u


@numba.njit(cache=True, nogil=True, parallel=True)
def sum_rows_f32(X: np.ndarray, alg: int, block: int, drop: int, emin: int, top: float,
                 value: np.ndarray, abs_sum: np.ndarray) -> None:
    """:func:`sum_rows` for float32 ``X``, nearest even, into a format with infinities,
    IEEE NaNs, ``p = 24 - drop <= 11`` and ``-126 <= emin`` (bfloat16, tf32, binary16);
    ``top`` is its largest finite value.

    Each operation is computed in binary32 (``RN24``) and rounded to ``p`` bits by
    integer add-and-mask on its encoding: ``RN_p(RN24(a + b)) = RN_p(a + b)`` for
    ``p``-bit ``a``, ``b`` as ``24 >= 2p + 2``; the encodings are monotone, so the
    add-and-mask rounds subnormals and carries into infinity exactly as the format
    does (a narrower exponent range rounds its subnormals and overflow as
    :func:`_round_lanes` says).  16 rows run side by side in float32 lanes (their terms
    copied transposed in chunks of 64), in the documented order of each algorithm
    (recursive, pairwise with the same tree as :func:`sum_rows`, Kahan).
    """
    batch, n = X.shape
    R = _LANES
    half = np.uint32((1 << (drop - 1)) - 1)
    mask = np.uint32((0xFFFFFFFF >> drop) << drop)
    d = np.uint32(drop)
    narrow = emin > -126
    tiny = _pow2(emin)
    C = 1.5 * _pow2(emin - (23 - drop) + 23)
    for tile in numba.prange((batch + R - 1) // R):
        r0 = tile * R
        Rt = min(R, batch - r0)
        buf = np.zeros((_CHUNK, R), np.float32)
        bufu = buf.view(np.uint32)
        s = np.zeros(R, np.float32)
        c = np.zeros(R, np.float32)
        y = np.zeros(R, np.float32)
        w = np.zeros(R, np.float32)
        wu = w.view(np.uint32)
        stack = np.zeros((64, R), np.float32)
        level = np.zeros(64, np.int64)
        depth = 0
        acc = np.zeros(R)
        for i0 in range(0, n, _CHUNK):
            m = min(_CHUNK, n - i0)
            for q in range(Rt):
                for k in range(m):
                    buf[k, q] = X[r0 + q, i0 + k]
            for k in range(m):
                x = buf[k]
                # the term, rounded once
                _round_lanes(x, bufu[k], half, mask, d, narrow, tiny, C, top)
                for q in range(R):
                    acc[q] += abs(np.float64(x[q]))
                i = i0 + k
                if i == 0:
                    s[:] = x
                    continue
                if alg == ALG_RECURSIVE:
                    for q in range(R):
                        w[q] = s[q] + x[q]
                    _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                    s[:] = w
                elif alg == ALG_KAHAN:
                    for q in range(R):
                        w[q] = x[q] - c[q]
                    _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                    y[:] = w
                    for q in range(R):
                        w[q] = s[q] + y[q]
                    _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                    for q in range(R):
                        c[q] = w[q] - s[q]  # t - s, rounded below
                        s[q] = w[q]  # s = t
                    w[:] = c
                    _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                    for q in range(R):
                        w[q] = w[q] - y[q]
                    _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                    c[:] = w
                else:  # pairwise: s is the running block sum
                    if i % block != 0:
                        for q in range(R):
                            w[q] = s[q] + x[q]
                        _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                        s[:] = w
                        continue
                    depth = _push_lanes(stack, level, depth, s, w, wu, half, mask, d, narrow,
                                        tiny, C, top)
                    s[:] = x
        if alg == ALG_PAIRWISE:
            depth = _push_lanes(stack, level, depth, s, w, wu, half, mask, d, narrow,
                                        tiny, C, top)
            while depth >= 2:
                for q in range(R):
                    w[q] = stack[depth - 2, q] + stack[depth - 1, q]
                _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
                stack[depth - 2] = w
                depth -= 1
            s[:] = stack[0]
        for q in range(Rt):
            value[r0 + q] = s[q]
            abs_sum[r0 + q] = acc[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _push_lanes(stack: np.ndarray, level: np.ndarray, depth: int, s: np.ndarray,
                w: np.ndarray, wu: np.ndarray, half: int, mask: int, d: int, narrow: bool,
                tiny: float, C: float, top: float) -> int:
    """Push a completed block sum and merge equal levels (:func:`sum_rows`'s tree)."""
    stack[depth] = s
    level[depth] = 0
    depth += 1
    while depth >= 2 and level[depth - 1] == level[depth - 2]:
        for q in range(s.size):
            w[q] = stack[depth - 2, q] + stack[depth - 1, q]
        _round_lanes(w, wu, half, mask, d, narrow, tiny, C, top)
        stack[depth - 2] = w
        level[depth - 2] += 1
        depth -= 1
    return depth
