"""Summation and dot-product loops in any format (:mod:`numerics.accum.summation`).

Every operation is one rounding of an exact value into the working format ``P``,
as in the reference: an addition ``a + b`` of two values of the format is split by
TwoSum into ``hi + lo`` (exact) and rounded once by
:func:`numerics.kernels.rounding.round_pair`; a product ``x * y`` is exact in
float64 for precisions up to 26 (within binary64's normal range) and split by
Dekker's TwoProduct above.  Where binary64 cannot hold the exact value (finite
addends whose sum overflows; a product that overflows or underflows, or an
operand too large for Dekker's split) the exact value is an exact pair times a
power of two, rounded in the format scaled by that power (:func:`_round_shifted`),
so binary64 itself rounds correctly in every mode, overflow and subnormals included.

Fast rounding to nearest even
-----------------------------
For round-to-nearest-even into a format of precision ``p <= 25`` the kernel rounds
``hi = RN64(a + b)`` instead of ``hi + lo``: ``RN_p(RN_53(a + b)) = RN_p(a + b)`` for
``p``-bit ``a`` and ``b`` since ``53 >= 2p + 2`` (Figueroa 1995; with underflow,
Roux 2014; ``proofs/double_rounding.md``), and a product of two such values is exact.
binary32 and binary64 themselves (:func:`hardware`) add with the hardware's own
operations (binary64 also multiplies with them).
``RN_p(hi)`` is ``(|hi| + C) - C`` with the sign of ``hi``, where ``C = 1.5 * 2**(k + 52)``
and ``k`` is the quantum exponent of ``hi``'s binade (clamped at ``emin``); values
beyond the format's largest finite value, infinities and NaNs take :func:`round_pair`
instead.  The tests pin both ways to the exact references.

Layout and threads
------------------
``X`` (and ``Y`` for a dot product) is C-contiguous ``(batch, n)``: one sum per row.
Rows are split over threads (:func:`numerics.kernels.spread.spread`) in tiles of 8
that one thread sums side by side (8 independent chains keep the core busy); each
row is summed in the documented order, so the bits do not depend on the thread
count.  Pairwise summation keeps a stack of at most 64 partial sums per row
instead of an array of block sums (the same tree: combining equal-sized subtrees
as they complete, then the leftovers from the right, is the level-by-level
pairing with the odd node moving up).

Stochastic rounding: the ``j``-th rounding of row ``r`` (input casts not counted)
draws element ``j * batch + r`` of :func:`numerics.kernels.random.draw` with the
call's seed.  The roundings are counted in the order this module does them, which
is the order :mod:`numerics.accum.summation` lists the operations except in two
places: pairwise summation adds two subtrees as soon as both are complete (the
stack above, so a block sum and a merge can alternate, where the listing has
every block sum first), and a dot product rounds the product ``x_i * y_i`` just
before the addition that uses it (not every product first).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import (
    HAS_F16C,
    bits_of_f32,
    f16_bits_of_f32,
    f32_of_bits,
    f32_of_f16_bits,
    prefetch,
)
from numerics.kernels.narrow import odd32_bits
from numerics.kernels.random import draw
from numerics.kernels.rounding import (
    BIAS,
    EMAX,
    EMIN,
    INFMAG,
    MODE_RD,
    MODE_RNE,
    MODE_RTZ,
    MODE_SR,
    MODE_SR_EXACT,
    NAN_IEEE,
    NANKIND,
    NEGZERO,
    OVERFLOW_IEEE,
    SIGNED,
    SUBN,
    T,
    decode_one,
    round_pair,
)
from numerics.kernels.spread import spread

__all__ = [
    "ALG_KAHAN",
    "ALG_NEUMAIER",
    "ALG_PAIRWISE",
    "ALG_RECURSIVE",
    "ALIGN_RD",
    "ALIGN_RNE",
    "ALIGN_RTZ",
    "HW32",
    "HW64",
    "OP_ADD",
    "OP_MUL",
    "OP_PAIR",
    "chain_add",
    "chain_add_span",
    "exponents",
    "exponents_span",
    "fused_gemm",
    "fused_gemm_span",
    "dot_terms",
    "hardware",
    "lanes32_fit",
    "round_ops",
    "round_ops_span",
    "round_values",
    "round_values_span",
    "sum_rows",
    "sum_rows_f32",
    "sum_rows_f32_span",
    "sum_rows_f64",
    "sum_rows_f64_span",
    "sum_rows_span",
]

ALG_RECURSIVE, ALG_PAIRWISE, ALG_KAHAN, ALG_NEUMAIER = range(4)

_SPLIT = 134217729.0  # 2**27 + 1
_TILE = 8  # rows summed side by side by one thread


#: ``fast`` of :func:`_add`: the format is binary32 (32) or binary64 (64) itself, whose
#: sums rounded to nearest even are the hardware's.
HW32, HW64 = 32, 64


@numba.njit(cache=True, nogil=True)
def hardware(P: np.ndarray, maxval: float) -> int:
    """:data:`HW64` for binary64, :data:`HW32` for binary32 (the formats themselves:
    their range, subnormals, infinities and NaNs), else 0."""
    if P[INFMAG] < 0 or P[NANKIND] != NAN_IEEE or P[SIGNED] != 1 or P[SUBN] != 1:
        return 0
    if P[T] == 52 and P[EMIN] == -1022 and maxval == 1.7976931348623157e308:
        return HW64
    if P[T] == 23 and P[EMIN] == -126 and maxval == 3.4028234663852886e38:
        return HW32
    return 0


@numba.njit(cache=True, nogil=True)
def _pow2(k: int) -> float:
    """``2.0**k`` for -1022 <= k <= 1023, built from its exponent field."""
    return np.uint64((k + 1023) << 52).view(np.float64)


@numba.njit(cache=True, nogil=True)
def _rne_fast(hi: float, t: int, emin: int, maxval: float) -> tuple[float, bool]:
    """``RN_p(hi)`` for a finite ``hi`` within the format's range, and True; else False.
    Not for ``t = 0``: there a tie goes to the even code, whose parity is the exponent
    field's, not to the even multiple of the quantum (:func:`_round_slow` decides)."""
    if hi - hi != 0.0 or t == 0:  # inf or NaN; a format of one significant bit
        return hi, False
    e = np.int64((np.float64(hi).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))
    k = max(e - 1023, emin) - t
    if k > 970 or k < -1074:  # C (and |hi| + C) must be a finite, normal binary64
        return hi, False
    # C = 1.5 * 2**(k + 52): hi + C rounds hi to a multiple of 2**k, to nearest even
    # (|hi| < 2**(k + t + 1) <= 2**(k + 51)), and subtracting C is exact
    C = np.uint64(((k + 1075) << 52) | (1 << 51)).view(np.float64)
    r = (abs(hi) + C) - C  # ties to even on the magnitude; the sign is put back, so that
    return np.copysign(r, hi), r <= maxval  # a value that rounds to 0 keeps it


@numba.njit(cache=True, nogil=True)
def _round_slow(hi: float, lo: float, P: np.ndarray, mode: int, seed: int,
                index: int) -> float:
    """The value of ``hi + lo`` rounded once into ``P`` by :func:`round_pair` (through
    :func:`_round_shifted`, the one kernel that calls it)."""
    return _round_shifted(hi, lo, np.int64(0), P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _round_shifted(hi: float, lo: float, s: int, P: np.ndarray, mode: int, seed: int,
                   index: int) -> float:
    """The value of ``(hi + lo) * 2**s`` rounded once into ``P`` (``hi + lo`` a pair as
    :func:`round_pair` takes it), also for values beyond binary64's range or below its
    subnormals: :func:`round_pair` of ``hi + lo`` into the format scaled by ``2**-s``
    (``emin``, ``emax`` and the bias moved by ``s``: the same codes, each worth
    ``2**-s`` times as much), the code decoded in ``P``.  Every rounding decision
    depends on the value's position among the codes only, so it is the same at both
    scales, subnormals and overflow included."""
    Q = (P[T], P[1], P[BIAS] + s, P[EMIN] - s, P[EMAX] - s, P[5], P[6], P[7], P[8], P[9],
         P[10], P[11], P[12])
    u = np.uint64(0)
    m = mode
    if mode == MODE_SR:
        u = draw(seed, index, 64)  # type: ignore[arg-type]
        m = MODE_SR_EXACT
    code = round_pair(hi, lo, Q, m, OVERFLOW_IEEE, u, 64)
    return decode_one(code, P)


@numba.njit(cache=True, nogil=True)
def _add_exact(a: float, b: float, P: np.ndarray, mode: int, seed: int,
               index: int) -> float:
    """``fl(a + b)`` for any float64 ``a``, ``b`` in any mode: the TwoSum pair rounded
    once by :func:`round_pair`.  Finite addends whose sum overflows binary64, or whose
    TwoSum overflows inside (``s - a`` beyond binary64's max while the sum ``s`` is not:
    ``|b|`` at the top binade and ``a`` with a bit at ``2**970``, half of ``s``'s ulp),
    have ``|a|, |b| >= 2**970``: their halves and the TwoSum of those are exact, and the
    pair is rounded from the halves' at twice its value (:func:`_round_shifted`), which
    gives the format's max in the modes that round toward zero, not inf."""
    hi, lo = _two_sum(a, b)
    if (hi - hi != 0.0 or lo - lo != 0.0) and a - a == 0.0 and b - b == 0.0:
        h, l_ = _two_sum(0.5 * a, 0.5 * b)
        return _round_shifted(h, l_, np.int64(1), P, mode, seed, index)
    if hi == 0.0 and mode == MODE_RD:
        # an exact zero sum is -0 rounding down unless both addends are +0 (IEEE 754
        # 6.3); binary64's own sum gave +0: negating both addends and the sum gives it
        hi = -((-a) + (-b))
    return _round_slow(hi, lo, P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
def _mul_exact(x: float, y: float, P: np.ndarray, mode: int, seed: int,
               index: int) -> float:
    """``fl(x * y)`` for any float64 ``x``, ``y`` in any mode.  A zero, infinite or NaN
    operand gives the IEEE product (exact).  Within Dekker's conditions (operands below
    ``2**995``, product from ``2**-968`` to below ``2**1023``) the TwoProduct pair is
    rounded once; otherwise (a product that underflows or overflows binary64, or an
    operand whose split would overflow) the product of the operands' significands in
    ``[1/2, 1)``, an exact pair, is rounded at its scale by :func:`_round_shifted`."""
    p = x * y
    if x == 0.0 or y == 0.0 or x - x != 0.0 or y - y != 0.0:
        return _round_slow(p, 0.0, P, mode, seed, index)
    if 2.0**-968 <= abs(p) < 2.0**1023 and abs(x) < 2.0**995 and abs(y) < 2.0**995:
        p, lo = _two_prod(x, y)
        return _round_slow(p, lo, P, mode, seed, index)
    mx, ex = math.frexp(x)
    my, ey = math.frexp(y)
    ph, pl = _two_prod(mx, my)
    return _round_shifted(ph, pl, np.int64(ex + ey), P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
def _add(fast: int, a: float, b: float, P: np.ndarray, mode: int, t: int, emin: int,
         maxval: float, seed: int, index: int) -> float:
    """``fl(a + b)``.  ``fast`` (round to nearest even): :data:`HW64`, binary64 itself,
    the hardware's sum; :data:`HW32`, binary32, the hardware's float32 sum; else nonzero
    for ``p <= 25``: ``RN_p(RN64(a + b))`` (module docstring) inline, within the
    format's range; the rest by :func:`_add_slow`."""
    s = a + b
    if fast == HW64:
        return s
    if fast == HW32:
        return np.float64(np.float32(a) + np.float32(b))
    if fast:
        r, ok = _rne_fast(s, t, emin, maxval)
        if ok:
            return r
    return _add_slow(fast != 0, a, b, s, P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
def _add_slow(fast: bool, a: float, b: float, s: float, P: np.ndarray, mode: int, seed: int,
              index: int) -> float:
    """``fl(a + b)`` by :func:`round_pair`: of ``s = RN64(a + b)`` when ``fast`` (beyond the
    format's range: the module docstring's theorem still applies), else
    :func:`_add_exact`, in any mode."""
    if fast:
        return _round_slow(s, 0.0, P, mode, seed, index)
    return _add_exact(a, b, P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
def _cast(x: float, P: np.ndarray, t: int, emin: int, maxval: float, fast: int) -> float:
    """The input ``x`` (exact in float64) rounded to nearest even into ``P`` (in
    binary64, :data:`HW64`, ``x`` itself)."""
    if fast == HW64:
        return x
    if t <= 24:
        r, ok = _rne_fast(x, t, emin, maxval)
        if ok:
            return r
    return _round_slow(x, 0.0, P, MODE_RNE, np.uint64(0), np.uint64(0))


@numba.njit(cache=True, nogil=True)
def _term(X: np.ndarray, Y: np.ndarray, r: int, i: int, dot: bool, fast: int,
          P: np.ndarray, mode: int, t: int, emin: int, maxval: float,
          seed: int, index: int) -> tuple[float, float]:
    """Term ``i`` of row ``r`` (the input rounded to nearest even; for a dot product the
    rounded product of the two rounded inputs) and ``|x y|`` (``|x|``), exact unless the
    format's products leave binary64's normal range."""
    x = _cast(np.float64(X[r, i]), P, t, emin, maxval, fast)
    if not dot:
        return x, abs(x)
    y = _cast(np.float64(Y[r, i]), P, t, emin, maxval, fast)
    p = x * y
    if fast == HW64:  # the hardware's product is binary64's rounding of the exact one
        return p, abs(p)
    if x == 0.0 or y == 0.0:  # exact, with the product's sign (adding -0 would change
        # it in rd)
        return p, 0.0
    if t <= 25 and 2.2250738585072014e-308 <= abs(p) < np.inf:
        # p <= 26: the product of two values of the format is exact in float64
        return _add(fast, p, -0.0, P, mode, t, emin, maxval, seed, index), abs(p)
    return _mul_exact(x, y, P, mode, seed, index), abs(p)


def sum_rows(X: np.ndarray, Y: np.ndarray, dot: bool, alg: int, block: int,
             P: np.ndarray, mode: int, maxval: float, seed: int,
             value: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray) -> None:
    """Sum each row of ``X`` (of ``X * Y`` for ``dot``) into ``value[r]``, the tiles of
    :func:`sum_rows_span` on the threads.

    ``abs_sum[r]`` receives ``sum |x_i|`` of the rounded terms (``sum |x_i y_i|`` of the
    exact products for a dot product) summed in float64, ``tiny[r]`` the number of
    exact products below the format's smallest normal.  ``alg`` is one of the
    ``ALG_*`` codes, ``block`` the pairwise block length.
    """
    tiles = (X.shape[0] + _TILE - 1) // _TILE
    spread(lambda lo, hi: sum_rows_span(X, Y, dot, alg, block, P, mode, maxval, seed, value,
                                        abs_sum, tiny, lo, hi),
           tiles, unit=_TILE * X.shape[1])


@numba.njit(cache=True, nogil=True)
def sum_rows_span(X: np.ndarray, Y: np.ndarray, dot: bool, alg: int, block: int,
                  P: np.ndarray, mode: int, maxval: float, seed: int, value: np.ndarray,
                  abs_sum: np.ndarray, tiny: np.ndarray, start: int, stop: int) -> None:
    """:func:`sum_rows` for the tiles ``start .. stop - 1`` (rows ``8 start`` to
    ``8 stop - 1``) on this thread."""
    fast = hardware(P, maxval) if mode == MODE_RNE else 0
    if fast == 0 and mode == MODE_RNE and P[T] <= 24:
        fast = 1
    for tile in range(start, stop):
        _tile(X, Y, dot, alg, block, P, mode, maxval, seed, value, abs_sum, tiny, tile, fast)


def dot_terms(X: np.ndarray, Y: np.ndarray, P: np.ndarray, maxval: float,
              terms: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray) -> None:
    """The terms of dot products rounded to nearest even, for :func:`sum_rows_f32`:
    ``terms[r, i]`` (float32) is ``fl(x y)`` for float32 ``X`` and ``Y`` holding values
    of a format the lanes take (inputs already rounded into it), the rounded product
    exactly as :func:`sum_rows` forms it (:func:`_term`); ``abs_sum[r]`` and ``tiny[r]``
    as :func:`sum_rows` gives them (``sum |x_i y_i|`` of the exact products in float64
    in index order, the number of them below the smallest normal).  Summing the terms in
    the lanes then gives :func:`sum_rows`'s dot products, whose interleaved rows of
    general operations took about 70 ns per term; these loops vectorize.  Rows on the
    threads."""
    t, emin = int(P[T]), int(P[EMIN])
    drop = 23 - t
    prm = (np.int32(drop), np.float32(2.0**emin),
           np.float32(1.5 * 2.0 ** (emin - (23 - drop) + 23)), np.float32(maxval))
    span = _dot_terms_wide_span if emin == -126 else _dot_terms_narrow_span
    spread(lambda lo, hi: span(X, Y, prm, emin, terms, abs_sum, tiny, lo, hi),
           X.shape[0], unit=X.shape[1])


@numba.njit(cache=True, nogil=True, inline="always")
def _dot_terms_rows(X: np.ndarray, Y: np.ndarray, prm: tuple[Any, ...], emin: int,
                    terms: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray, start: int,
                    stop: int, rnd: Any) -> None:
    """Rows ``start .. stop - 1`` of :func:`dot_terms`: each product exact in float64
    (two values of at most 11 bits), rounded to odd in binary32 (itself when it is a
    binary32 number) and then by the lanes' rounding step ``rnd`` (claim D6: one
    rounding); a zero factor gives the raw product and a magnitude of 0, as in
    :func:`_term`."""
    smallest_normal = _pow2(emin)
    n = X.shape[1]
    for r in range(start, stop):
        tr = terms[r]
        xr, yr = X[r], Y[r]
        for i in range(n):
            p = np.float64(xr[i]) * np.float64(yr[i])
            v = rnd(f32_of_bits(odd32_bits(p)), prm)
            tr[i] = np.float32(p) if xr[i] == 0 or yr[i] == 0 else v
        # (a second loop: the index-order float64 sum would keep the first from vectorizing)
        acc = 0.0
        count = 0
        for i in range(n):
            a = 0.0 if xr[i] == 0 or yr[i] == 0 else abs(np.float64(xr[i]) * np.float64(yr[i]))
            acc += a
            if a < smallest_normal:
                count += 1
        abs_sum[r] = acc
        tiny[r] = count


@numba.njit(cache=True, nogil=True)
def _dot_terms_narrow_span(X: np.ndarray, Y: np.ndarray, prm: tuple[Any, ...], emin: int,
                           terms: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray,
                           start: int, stop: int) -> None:
    _dot_terms_rows(X, Y, prm, emin, terms, abs_sum, tiny, start, stop, _rne_narrow)


@numba.njit(cache=True, nogil=True)
def _dot_terms_wide_span(X: np.ndarray, Y: np.ndarray, prm: tuple[Any, ...], emin: int,
                         terms: np.ndarray, abs_sum: np.ndarray, tiny: np.ndarray,
                         start: int, stop: int) -> None:
    _dot_terms_rows(X, Y, prm, emin, terms, abs_sum, tiny, start, stop, _rne_wide)


@numba.njit(cache=True, nogil=True)
def _tile(X: np.ndarray, Y: np.ndarray, dot: bool, alg: int, block: int,
          P: np.ndarray, mode: int, maxval: float, seed: int, value: np.ndarray,
          abs_sum: np.ndarray, tiny: np.ndarray, tile: int, fast: int) -> None:
    """Rows ``8 tile .. 8 tile + 7``, summed side by side with :func:`_add`."""
    batch, n = X.shape
    t = P[T]
    emin = P[EMIN]
    # added to each result: +0.0 turns a -0 into +0 (a format without -0), -0.0 changes
    # nothing.  Inside, a zero's sign never changes a magnitude (the fast path's
    # copysign may leave -0), so the results' zeros are fixed here, once.
    zero = -0.0 if P[NEGZERO] != 0 else 0.0
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
        t0, a0 = _term(X, Y, r, 0, dot, fast, P, mode, t, emin, maxval, seed, j[q])
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
                x, ax = _term(X, Y, r, i, dot, fast, P, mode, t, emin, maxval, seed, j[q])
                if dot:
                    j[q] += B
                acc_abs[q] += ax
                if dot and ax < smallest_normal:
                    ntiny[q] += 1
            if alg == ALG_RECURSIVE:
                if i < n:
                    s[q] = _add(fast, s[q], x, P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
            elif alg == ALG_KAHAN:
                if i < n:
                    y = _add(fast, x, -c[q], P, mode, t, emin, maxval, seed, j[q])
                    tt = _add(fast, s[q], y, P, mode, t, emin, maxval, seed, j[q] + B)
                    d = _add(fast, tt, -s[q], P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    c[q] = _add(fast, d, -y, P, mode, t, emin, maxval, seed, j[q] + 3 * B)
                    j[q] += 4 * B
                    s[q] = tt
            elif alg == ALG_NEUMAIER:
                if i < n:
                    sq = s[q]
                    tt = _add(fast, sq, x, P, mode, t, emin, maxval, seed, j[q])
                    if abs(sq) >= abs(x):
                        d = _add(fast, sq, -tt, P, mode, t, emin, maxval, seed, j[q] + B)
                        d = _add(fast, d, x, P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    else:
                        d = _add(fast, x, -tt, P, mode, t, emin, maxval, seed, j[q] + B)
                        d = _add(fast, d, sq, P, mode, t, emin, maxval, seed, j[q] + 2 * B)
                    c[q] = _add(fast, c[q], d, P, mode, t, emin, maxval, seed, j[q] + 3 * B)
                    j[q] += 4 * B
                    s[q] = tt
                else:
                    s[q] = _add(fast, s[q], c[q], P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
            else:  # pairwise: s is the running block sum
                if i % block != 0 and i < n:
                    s[q] = _add(fast, s[q], x, P, mode, t, emin, maxval, seed, j[q])
                    j[q] += B
                    continue
                # a block is complete: push it, merging equal levels
                dq = depth[q]
                stack[q, dq] = s[q]
                level[q, dq] = 0
                dq += 1
                while dq >= 2 and level[q, dq - 1] == level[q, dq - 2]:
                    stack[q, dq - 2] = _add(fast, stack[q, dq - 2], stack[q, dq - 1], P, mode, t,
                                           emin, maxval, seed, j[q])
                    j[q] += B
                    level[q, dq - 2] += 1
                    dq -= 1
                if i == n:
                    while dq >= 2:
                        stack[q, dq - 2] = _add(fast, stack[q, dq - 2], stack[q, dq - 1], P, mode,
                                               t, emin, maxval, seed, j[q])
                        j[q] += B
                        dq -= 1
                    s[q] = stack[q, 0]
                else:
                    s[q] = x
                depth[q] = dq
    for q in range(R):
        value[r0 + q] = s[q] + zero
        abs_sum[r0 + q] = acc_abs[q]
        tiny[r0 + q] = ntiny[q]


# ----------------------------------------------------------------------------------
# The "fused" matrix-unit adder (NVIDIA tensor cores) over a whole GEMM
# ----------------------------------------------------------------------------------

ALIGN_RTZ, ALIGN_RD, ALIGN_RNE = range(3)
_GEMM_ROWS = 8  # rows of A per pass over B


@numba.njit(cache=True, nogil=True)
def _align_value(v: float, align: int) -> float:
    if align == ALIGN_RTZ:
        return np.trunc(v)
    if align == ALIGN_RD:
        return np.floor(v)
    return np.rint(v)


def fused_gemm(A: np.ndarray, EA: np.ndarray, B: np.ndarray, EB: np.ndarray,
               d: np.ndarray, k0: int, k1: int, G: int, F: int,
               align: int, Pout: np.ndarray, out_mode: int, e8m13: bool,
               lanes32: bool = False) -> None:
    """Chain the groups ``k0 .. k1`` (a multiple of ``G`` apart) of the ``"fused"`` rule
    into ``d`` (M, N), in place (:mod:`numerics.accum.tensorcore`, steps 1-4).

    ``A`` (M, K) and ``B`` (K, N) hold values of the input format (precision <= 26, so
    every product is exact in float64) and ``EA``, ``EB`` their exponents of step 1
    (-126 for a zero); ``d`` holds values of the output format ``Pout`` (an infinite or
    NaN value stays itself, the IEEE sum with finite products).  Each
    term ``a b 2**(F - E)`` is exact in float64 and rounded to an integer by ``align``
    (``trunc``, ``floor`` or ``rint``); a group's total is an integer below ``2**(F + 9)``,
    exact in float64 for ``F <= 44``, and ``total * 2**(E - F)`` is rounded once into
    ``Pout`` with ``out_mode``.  Blocks of :data:`_GEMM_ROWS` rows are split over the
    threads (:func:`fused_gemm_span`); each output is computed by one thread in the
    documented order.
    """
    blocks = (A.shape[0] + _GEMM_ROWS - 1) // _GEMM_ROWS
    spread(lambda lo, hi: fused_gemm_span(A, EA, B, EB, d, k0, k1, G, F, align, Pout,
                                          out_mode, e8m13, lanes32, lo, hi),
           blocks, unit=_GEMM_ROWS * B.shape[1] * (k1 - k0))


@numba.njit(cache=True, nogil=True)
def _terms64(A: np.ndarray, B: np.ndarray, scale: np.ndarray, tot: np.ndarray, i0: int,
             R: int, g0: int, G: int, align: int) -> None:
    """Step 2's terms of the group ``g0 .. g0 + G - 1`` added to ``tot`` (R, N) in binary64:
    each ``a b 2**(F - E)`` exact, aligned to an integer by ``align``."""
    N = B.shape[1]
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


@numba.njit(cache=True, nogil=True)
def _terms32(A: np.ndarray, B: np.ndarray, scale: np.ndarray, tot: np.ndarray,
             tot32: np.ndarray, scale32: np.ndarray, i0: int, R: int, g0: int, G: int,
             rtz: bool) -> None:
    """:func:`_terms64` in binary32 lanes (twice as many per register), for the operands
    :func:`lanes32_fit` admits, with ``trunc`` (``rtz``) or ``rint`` alignment: every
    product is exact in binary32 and a normal number; ``2**(F - E)`` is a binary32 normal
    number whenever some product of the (row, column) is non-zero (else any finite
    factor gives zero terms: it is clamped); each aligned term is an integer of at most
    ``F + 1`` bits, and ``tot`` (``G + 1`` of them) stays below ``2**24``, so every
    partial sum is exact.  A term below ``2**-126`` may round in binary32, but it is
    below 1/2 either way, so its alignment is still 0.  Same sums, same order."""
    N = B.shape[1]
    for r in range(R):
        for j in range(N):
            sc = min(max(scale[r, j], 2.0**-126), 2.0**127)
            scale32[r, j] = np.float32(sc)
            tot32[r, j] = np.float32(tot[r, j])
    # four k at a time (every partial sum is exact, so any order gives the same total;
    # a zero a adds a zero term, and the sign of a zero total is never read): the row of
    # totals is loaded and stored once per four terms
    k = g0
    while k + 4 <= g0 + G:
        for r in range(R):
            a0, a1 = np.float32(A[i0 + r, k]), np.float32(A[i0 + r, k + 1])
            a2, a3 = np.float32(A[i0 + r, k + 2]), np.float32(A[i0 + r, k + 3])
            b0, b1, b2, b3 = B[k], B[k + 1], B[k + 2], B[k + 3]
            sc, tt = scale32[r], tot32[r]
            if rtz:
                for j in range(N):
                    tt[j] += ((np.trunc(a0 * np.float32(b0[j]) * sc[j])
                               + np.trunc(a1 * np.float32(b1[j]) * sc[j]))
                              + (np.trunc(a2 * np.float32(b2[j]) * sc[j])
                                 + np.trunc(a3 * np.float32(b3[j]) * sc[j])))
            else:
                for j in range(N):
                    tt[j] += ((np.rint(a0 * np.float32(b0[j]) * sc[j])
                               + np.rint(a1 * np.float32(b1[j]) * sc[j]))
                              + (np.rint(a2 * np.float32(b2[j]) * sc[j])
                                 + np.rint(a3 * np.float32(b3[j]) * sc[j])))
        k += 4
    for k in range(k, g0 + G):
        for r in range(R):
            av = np.float32(A[i0 + r, k])
            if av == 0.0:
                continue
            if rtz:
                for j in range(N):
                    tot32[r, j] += np.trunc(av * np.float32(B[k, j]) * scale32[r, j])
            else:
                for j in range(N):
                    tot32[r, j] += np.rint(av * np.float32(B[k, j]) * scale32[r, j])
    for r in range(R):
        for j in range(N):
            tot[r, j] = np.float64(tot32[r, j])


def lanes32_fit(precision: int, emin: int, t: int, emax: int, emax_out: int, F: int,
                G: int, align: int) -> bool:
    """Whether :func:`fused_gemm` may add a group's terms in binary32 lanes
    (:func:`_terms32`): inputs of at most 12 bits whose products are binary32 normal
    numbers with exponents from ``F - 127`` up, output and product exponents at most
    ``F + 126`` (so ``2**(F - E)`` is a binary32 normal number when a product counts),
    ``(G + 1) 2**(F + 1) <= 2**24`` (exact totals), and ``trunc`` or ``rint`` alignment
    (``floor`` of a negative term that underflows binary32 to -0 would lose its -1).

    Examples
    --------
    >>> lanes32_fit(4, -6, 3, 8, 127, 13, 32, ALIGN_RTZ)  # e4m3fn on hopper-fp8
    True
    >>> lanes32_fit(8, -126, 7, 127, 127, 25, 16, ALIGN_RTZ)  # bfloat16 on hopper
    False
    """
    low = 2 * (emin - t)
    return (precision <= 12 and 2 * (emax + 1) <= 127 and low >= max(-126, F - 127)
            and max(emax_out, 2 * emax + 1) <= F + 126 and (G + 1) << (F + 1) <= 1 << 24
            and align in (ALIGN_RTZ, ALIGN_RNE))


@numba.njit(cache=True, nogil=True)
def fused_gemm_span(A: np.ndarray, EA: np.ndarray, B: np.ndarray, EB: np.ndarray,
                    d: np.ndarray, k0: int, k1: int, G: int, F: int, align: int,
                    Pout: np.ndarray, out_mode: int, e8m13: bool, lanes32: bool,
                    start: int, stop: int) -> None:
    """:func:`fused_gemm` for the row blocks ``start .. stop - 1`` on this thread."""
    M = A.shape[0]
    N = B.shape[1]
    t_out = Pout[T]
    emin_out = Pout[EMIN]
    top = _pow2(Pout[4] + 1)  # 2**(emax + 1)
    has_inf = Pout[9] >= 0  # an infinity code
    plain32 = t_out == 23 and emin_out == -126  # binary32's own grid
    keep = np.uint32(0xFFFFFC00) if e8m13 else np.uint32(0xFFFFFFFF)
    RB = _GEMM_ROWS
    for blk in range(start, stop):
        i0 = blk * RB
        R = min(RB, M - i0)
        E = np.empty((RB, N), np.int32)  # int32: the max pass vectorizes
        scale = np.empty((RB, N))
        tot = np.empty((RB, N))
        scale32 = np.empty((RB, N) if lanes32 else (1, 1), np.float32)
        tot32 = np.empty((RB, N) if lanes32 else (1, 1), np.float32)
        for g0 in range(k0, k1, G):
            # steps 1-2: E = max(e_c, max_k e_a + e_b); c's own term
            for r in range(R):
                for j in range(N):
                    v = d[i0 + r, j]
                    e = np.int64((np.float64(v).view(np.uint64) >> np.uint64(52))
                                 & np.uint64(0x7FF))
                    # a zero c, and an infinite or NaN one (whose aligned term stays
                    # itself: the IEEE sum with the finite products), counts as 2**-126
                    E[r, j] = np.int32(-126 if v == 0.0 or e == 0x7FF
                                       else max(e - 1023, emin_out))
            # four k at a time: the row of E is loaded and stored once per four
            k = g0
            while k + 4 <= g0 + G:
                for r in range(R):
                    e0, e1 = EA[i0 + r, k], EA[i0 + r, k + 1]
                    e2, e3 = EA[i0 + r, k + 2], EA[i0 + r, k + 3]
                    f0, f1, f2, f3, Er = EB[k], EB[k + 1], EB[k + 2], EB[k + 3], E[r]
                    for j in range(N):
                        Er[j] = max(Er[j], max(max(np.int32(e0 + f0[j]), np.int32(e1 + f1[j])),
                                               max(np.int32(e2 + f2[j]), np.int32(e3 + f3[j]))))
                k += 4
            for k in range(k, g0 + G):
                for r in range(R):
                    ea = EA[i0 + r, k]
                    for j in range(N):
                        E[r, j] = max(E[r, j], np.int32(ea + EB[k, j]))
            for r in range(R):
                for j in range(N):
                    scale[r, j] = _pow2(F - np.int64(E[r, j]))
                    tot[r, j] = _align_value(d[i0 + r, j] * scale[r, j], align)
            if lanes32:
                _terms32(A, B, scale, tot, tot32, scale32, i0, R, g0, G, align == ALIGN_RTZ)
            else:
                _terms64(A, B, scale, tot, i0, R, g0, G, align)
            # steps 3-4: one rounding into the output format.  First a straight pass
            # (it vectorizes) for binary32 results whose value is a binary32 number
            # below 2**(emax + 1), the common case: the rounding is exact, and e8m13
            # clears the low 10 bits of the binary32 encoding (a multiple of
            # 2**(max(e, -126) - 13), toward zero, subnormals included); an exact zero
            # is +0 (adding +0.0).  The others are marked and rounded after.
            slow = 0
            for r in range(R):
                i = i0 + r
                for j in range(N):
                    v = tot[r, j] * _pow2(np.int64(E[r, j]) - F) + 0.0
                    v32 = np.float32(v)
                    ok = plain32 & (np.float64(v32) == v) & (abs(v) < top)
                    rr = np.float64(f32_of_bits(bits_of_f32(v32) & keep))
                    d[i, j] = rr if ok else np.nan
                    slow += not ok
            if slow == 0:
                continue
            for r in range(R):
                i = i0 + r
                for j in range(N):
                    if d[i, j] == d[i, j]:
                        continue
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


def round_values(x: np.ndarray, lo: np.ndarray, P: np.ndarray, mode: int,
                 seed: int, base: int, out: np.ndarray) -> None:
    """``out[i]``: the value of ``x[i] + lo[i]`` (exact, 1-D; ``lo`` may be one zero for
    all) rounded once into ``P`` (a NaN becomes +0 in a format without NaN).  Stochastic
    rounding draws element ``base + i`` of the stream with ``seed``.  Pieces of
    :func:`round_values_span` run on the threads."""
    spread(lambda a, b: round_values_span(x, lo, P, mode, seed, base, out, a, b), x.size)


@numba.njit(cache=True, nogil=True)
def round_values_span(x: np.ndarray, lo: np.ndarray, P: np.ndarray, mode: int, seed: int,
                      base: int, out: np.ndarray, start: int, stop: int) -> None:
    """:func:`round_values` for ``start <= i < stop`` on this thread."""
    t = P[T]
    emin = P[EMIN]
    maxval = _max_finite(P)
    zero = -0.0 if P[NEGZERO] != 0 else 0.0  # added: +0 for -0 in a format without -0
    paired = lo.size == x.size  # else lo is one zero
    for i in range(start, stop):
        v = np.float64(x[i])
        low = lo[i] if paired else 0.0
        if mode == MODE_RNE and t <= 24 and low == 0.0:
            r, ok = _rne_fast(v, t, emin, maxval)
            if ok:
                out[i] = r + zero
                continue
        out[i] = _round_slow(v, low, P, mode, seed, base + np.uint64(i))


#: ``op`` of :func:`round_ops`: ``a + b``, ``a * b``, or the pair ``(a + b) * 2**shift``.
OP_ADD, OP_MUL, OP_PAIR = range(3)


def round_ops(a: np.ndarray, b: np.ndarray, shift: np.ndarray, op: int, P: np.ndarray,
              mode: int, seed: int, base: int, out: np.ndarray) -> None:
    """``out[i]``: ``a[i] + b[i]`` (:data:`OP_ADD`, :func:`_add_exact`), ``a[i] * b[i]``
    (:data:`OP_MUL`, :func:`_mul_exact`) or the exact pair ``(a[i] + b[i]) *
    2**shift[i]`` (:data:`OP_PAIR`; ``shift`` may be one int64 for all) rounded once
    into ``P``, for any float64 operands (1-D) in any mode.  Stochastic rounding draws
    element ``base + i`` of the stream with ``seed``.  Pieces of :func:`round_ops_span`
    run on the threads."""
    spread(lambda lo, hi: round_ops_span(a, b, shift, op, P, mode, seed, base, out, lo, hi),
           a.size)


@numba.njit(cache=True, nogil=True)
def round_ops_span(a: np.ndarray, b: np.ndarray, shift: np.ndarray, op: int, P: np.ndarray,
                   mode: int, seed: int, base: int, out: np.ndarray, start: int,
                   stop: int) -> None:
    """:func:`round_ops` for ``start <= i < stop`` on this thread.  A sum or pair whose
    exact value is a float64 number (zero residual) rounds inline to nearest even
    (:func:`_rne_fast`) for ``p <= 25``, as :func:`round_values_span` does."""
    t = P[T]
    emin = P[EMIN]
    maxval = _max_finite(P)
    zero = -0.0 if P[NEGZERO] != 0 else 0.0  # added: +0 for -0 in a format without -0
    fast = mode == MODE_RNE and t <= 24
    shifted = shift.size == a.size
    for i in range(start, stop):
        x = np.float64(a[i])
        y = np.float64(b[i])
        index = base + np.uint64(i)
        s = shift[i] if shifted else shift[0]
        if op == OP_MUL:
            out[i] = _mul_exact(x, y, P, mode, seed, index)
        elif op == OP_PAIR and s != 0:
            out[i] = _round_shifted(x, y, np.int64(s), P, mode, seed, index)
        elif op == OP_PAIR:
            out[i] = _pair_one(x, y, P, mode, seed, index, t, emin, maxval, zero, fast)
        else:
            out[i] = _add_one(x, y, P, mode, seed, index, t, emin, maxval, zero, fast)


@numba.njit(cache=True, nogil=True)
def _pair_one(x: float, y: float, P: np.ndarray, mode: int, seed: int, index: int, t: int,
              emin: int, maxval: float, zero: float, fast: bool) -> float:
    """The exact pair ``x + y`` rounded once (:data:`OP_PAIR` without a shift): inline
    to nearest even (``fast``: ``p <= 25``) when ``y`` is zero, else :func:`round_pair`."""
    if fast and y == 0.0:
        r, ok = _rne_fast(x, t, emin, maxval)
        if ok:
            return r + zero
    return _round_slow(x, y, P, mode, seed, index)


@numba.njit(cache=True, nogil=True)
def _add_one(x: float, y: float, P: np.ndarray, mode: int, seed: int, index: int, t: int,
             emin: int, maxval: float, zero: float, fast: bool) -> float:
    """``fl(x + y)`` (:data:`OP_ADD`): an exact float64 sum inline to nearest even
    (``fast``: ``p <= 25``), else :func:`_add_exact`."""
    if fast:
        hi, lo = _two_sum(x, y)
        if lo == 0.0:
            r, ok = _rne_fast(hi, t, emin, maxval)
            if ok:
                return r + zero
    return _add_exact(x, y, P, mode, seed, index)


def chain_add(init: np.ndarray, A: np.ndarray, P: np.ndarray, mode: int, seed: int,
              base: int, out: np.ndarray) -> None:
    """Recursive sums of independent chains: ``out[g, i]`` is ``init[g, i]`` plus
    ``A[g, 0, i]``, ``A[g, 1, i]``, ... in that order, each addition rounded once into
    ``P`` as :data:`OP_ADD` of :func:`round_ops` rounds it (``init`` (G, M), ``A``
    (G, L, M), ``out`` (G, M), float64, any strides).  Stochastic rounding: the
    ``l``-th addition of chain ``c = g M + i`` draws element ``base + l G M + c`` of the
    stream, as ``L`` calls of :func:`round_ops` on the (G, M) arrays would.  Tiles of 8
    chains on the threads (:func:`chain_add_span`)."""
    G, L, M = A.shape
    tiles = (G * M + _TILE - 1) // _TILE
    spread(lambda lo, hi: chain_add_span(init, A, P, mode, seed, base, out, lo, hi),
           tiles, unit=_TILE * max(L, 1))


@numba.njit(cache=True, nogil=True)
def chain_add_span(init: np.ndarray, A: np.ndarray, P: np.ndarray, mode: int, seed: int,
                   base: int, out: np.ndarray, start: int, stop: int) -> None:
    """:func:`chain_add` for the tiles of chains ``start .. stop - 1``: the 8 chains of
    a tile side by side, one addition of each per step."""
    G, L, M = A.shape
    C = G * M
    t = P[T]
    emin = P[EMIN]
    maxval = _max_finite(P)
    zero = -0.0 if P[NEGZERO] != 0 else 0.0
    fast = mode == MODE_RNE and t <= 24
    acc = np.empty(_TILE)
    gs = np.empty(_TILE, np.int64)
    js = np.empty(_TILE, np.int64)
    for tile in range(start, stop):
        c0 = tile * _TILE
        R = min(_TILE, C - c0)
        for q in range(R):
            gs[q], js[q] = divmod(c0 + q, M)
            acc[q] = init[gs[q], js[q]]
        for l_ in range(L):
            b = base + np.uint64(l_ * C + c0)
            for q in range(R):
                acc[q] = _add_one(acc[q], A[gs[q], l_, js[q]], P, mode, seed,
                                  b + np.uint64(q), t, emin, maxval, zero, fast)
        for q in range(R):
            out[gs[q], js[q]] = acc[q]


@numba.njit(cache=True, nogil=True)
def _max_finite(P: np.ndarray) -> float:
    return decode_one(np.uint64(P[8]), P)  # MAXMAG: the largest finite magnitude


def exponents(x: np.ndarray, emin: int, out: np.ndarray) -> None:
    """``out[i]``: the exponent of ``x[i]`` clamped below at ``emin``; -1000 (none: a
    product with it never sets the maximum) for a zero or a non-finite value (step 1 of
    the ``"fused"`` rule), pieces of
    :func:`exponents_span` on the threads."""
    spread(lambda lo, hi: exponents_span(x, emin, out, lo, hi), x.size)


@numba.njit(cache=True, nogil=True)
def exponents_span(x: np.ndarray, emin: int, out: np.ndarray, start: int, stop: int) -> None:
    """:func:`exponents` for ``start <= i < stop`` on this thread (on slices indexed
    from 0: numba then drops its negative-index check and the loop vectorizes)."""
    xs = x[start:stop]
    os = out[start:stop]
    for i in range(xs.size):
        v = np.float64(xs[i])
        e = np.int64((np.float64(v).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))
        if v == 0.0 or e == 0x7FF:
            os[i] = -1000
        else:
            os[i] = max(e - 1023, emin)


# ----------------------------------------------------------------------------------
# float32 rows, nearest even, into a narrow format with infinities: binary32 lanes
# ----------------------------------------------------------------------------------
#
# Why one binary32 operation and one rounding to the format is the correctly rounded
# operation (proofs/double_rounding.md, D5): for values x, y of a format F of
# precision p <= 11 whose exponent range lies inside binary32's (emin >= -126),
#     RN_F(RN_24(x +- y)) == RN_F(x +- y),
# including F's subnormals and its overflow to infinity: above 2**emin this is
# Figueroa's theorem (24 >= 2p + 2) with unbounded exponents, and the overflow of F is
# decided on that unbounded result; below 2**emin the exact x +- y is a multiple of
# F's smallest subnormal below 2**emin, so it has at most p - 1 bits and RN_24 is
# exact.  A float32 input is rounded once (RN_F of its exact value).
#
# binary32 itself (drop = 0) and binary64 (float64 rows, sum_rows_f64) take the same
# lanes with no rounding step: each lane operation is already the format's.  A tile
# of fewer than 4 rows (a 1-D sum) is summed row by row by _row, the same operations
# in the same order with the running sums in registers.

_LANES = 64  # rows summed side by side: eight AVX2 vectors of binary32
# terms of each row transposed into the lane buffer at once (at least _LANES: each
# term step of a chunk asks for one row of the chunk _AHEAD chunks on).  64 rather
# than 128, with those requests spread over the rounding pass, took the sums of
# (4096, 4096) float32 from 10-11 to about 8 ms (recursive, bfloat16) and from 13-14
# to about 11 ms (Kahan) on one Zen 4 core: the rows' next terms arrive from memory
# while the lanes work
_CHUNK = 64
_AHEAD = 2
_STACK = 64  # pairwise partial sums: one per level, n < 2**64
_PREFETCH = 128  # the transpose asks for each row's terms this far ahead


@intrinsic
def _rne_bits(typingctx: object, x: types.Type, d: types.Type) -> tuple[Any, Any] | None:
    """The binary32 ``x`` rounded to nearest even to ``23 - d`` fraction bits (``1 <= d
    <= 23``, int32) by add-and-mask on its encoding ``u``: ``(u + 2**(d-1) - 1 +
    bit_d(u)) & -2**d``, in 32-bit lanes.  The encoding is monotone in the magnitude,
    so this rounds binary32 subnormals on the coarser subnormal grid of a format with
    ``emin = -126`` and carries its largest value's upper half-ulp into the infinity's
    code, as RNE with IEEE overflow does.  A NaN whose low ``d`` fraction bits are zero
    (the quiet NaNs ``0x7FC00000``, ``0xFFC00000`` that :func:`_intake` and binary32
    arithmetic on them produce) is returned unchanged; other NaNs are not inputs."""
    if x != types.float32 or d != types.int32:
        return None
    sig = types.float32(types.float32, types.int32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        v, dd = args
        i32 = ir.IntType(32)
        one = ir.Constant(i32, 1)
        u = builder.bitcast(v, i32)
        lsb = builder.and_(builder.lshr(u, dd), one)
        half = builder.sub(builder.shl(one, builder.sub(dd, one)), one)
        mask = builder.shl(ir.Constant(i32, 0xFFFFFFFF), dd)
        r = builder.and_(builder.add(builder.add(u, half), lsb), mask)
        return builder.bitcast(r, ir.FloatType())

    return sig, codegen


@intrinsic
def _transpose8(typingctx: object, src: types.Type, i: types.Type, j: types.Type,
                dst: types.Type, a: types.Type, b: types.Type) -> tuple[Any, Any] | None:
    """``dst[a + c, b + r] = src[i + r, j + c]`` for ``r, c < 8``: eight 8-wide loads,
    24 shuffles, eight 8-wide stores (2-D C-contiguous float32; ``src`` may be read-only
    or unaligned, as a user's memory map is; the caller keeps the indices in bounds)."""
    if not (isinstance(src, types.Array) and src.dtype == types.float32 and src.ndim == 2
            and src.layout == "C") or dst != types.Array(types.float32, 2, "C"):
        return None
    load_align = 4 if src.aligned else 1
    sig = types.void(src, types.intp, types.intp, dst, types.intp, types.intp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        sa, si, sj, da, dk, dl = args  # dst row dk = a, column dl = b
        vec = ir.VectorType(ir.FloatType(), 8)

        def row_ptr(aty: Any, a: Any, r: Any, c: Any) -> Any:
            ary = context.make_array(aty)(context, builder, a)
            p = cgutils.get_item_pointer2(
                context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape),
                cgutils.unpack_tuple(builder, ary.strides), "C", [r, c], wraparound=False)
            return builder.bitcast(p, vec.as_pointer())

        def shuffle(a: Any, b: Any, mask: list[int]) -> Any:
            return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), 8),
                                                            mask))

        rows = []
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        for r in range(8):
            p = row_ptr(src, sa, builder.add(si, ir.Constant(si.type, r)), sj)
            rows.append(builder.load(p, align=load_align))
            # the same row _PREFETCH terms on (a hint: never faults, even past the end)
            ahead = builder.bitcast(builder.gep(p, [ir.Constant(ir.IntType(64),
                                                                _PREFETCH // 8)]), i8p)
            builder.call(hint, [ahead, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                    ir.Constant(i32, 1)])
        t = []  # interleave row pairs: t[2h] = (r0 c0, r1 c0, r0 c1, r1 c1 | c4 .. c5)
        for r in range(0, 8, 2):
            t.append(shuffle(rows[r], rows[r + 1], [0, 8, 1, 9, 4, 12, 5, 13]))
            t.append(shuffle(rows[r], rows[r + 1], [2, 10, 3, 11, 6, 14, 7, 15]))
        u = []  # column c and c + 4 of four rows: u[c] rows 0-3, u[c + 4] rows 4-7
        for a, b in ((0, 2), (1, 3), (4, 6), (5, 7)):
            u.append(shuffle(t[a], t[b], [0, 1, 8, 9, 4, 5, 12, 13]))
            u.append(shuffle(t[a], t[b], [2, 3, 10, 11, 6, 7, 14, 15]))
        for c in range(4):
            lo = shuffle(u[c], u[c + 4], [0, 1, 2, 3, 8, 9, 10, 11])
            hi = shuffle(u[c], u[c + 4], [4, 5, 6, 7, 12, 13, 14, 15])
            builder.store(lo, row_ptr(dst, da, builder.add(dk, ir.Constant(dk.type, c)), dl),
                          align=4)
            builder.store(hi, row_ptr(dst, da, builder.add(dk, ir.Constant(dk.type, c + 4)),
                                      dl), align=4)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _rne_wide(v: float, prm: tuple[Any, ...]) -> float:
    """RN_F of the binary32 ``v`` for ``emin = -126`` (bfloat16, tf32)."""
    return _rne_bits(v, prm[0])  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def _rne_same(v: float, prm: tuple[Any, ...]) -> float:
    """binary32 (or binary64) itself: each operation of the lanes' own type is already
    rounded."""
    return v


@numba.njit(cache=True, nogil=True)
def _rne_binary16(v: float, prm: tuple[Any, ...]) -> float:
    """RN_binary16 of the binary32 ``v``, in hardware (F16C's ``vcvtps2ph`` and
    ``vcvtph2ps``: binary16's subnormals and overflow to infinity; a quiet NaN stays
    itself).  Only where :data:`numerics.kernels.lanes.HAS_F16C`."""
    return f32_of_f16_bits(f16_bits_of_f32(v))


@numba.njit(cache=True, nogil=True)
def _rne_narrow(v: float, prm: tuple[Any, ...]) -> float:
    """RN_F of the binary32 ``v`` for ``emin > -126``: add-and-mask at or above
    ``tiny = 2**emin``; below it ``(|v| + C) - C`` with ``C = 1.5 * 2**(emin - t + 23)``
    (binary32's quantum at ``C`` is F's subnormal quantum); beyond ``top`` (F's largest
    finite value) an infinity.  Branch-free selects; a NaN as in :func:`_rne_bits`."""
    d, tiny, C, top = prm
    a = abs(v)
    r: Any = _rne_bits(v, d)  # type: ignore[call-arg]
    sub = np.float32(np.copysign((a + C) - C, v))
    r = sub if a < tiny else r
    return np.float32(np.copysign(np.float32(np.inf), v)) if abs(r) > top else r


@numba.njit(cache=True, nogil=True, inline="always")
def _intake(v: float, prm: tuple[Any, ...], rnd: Any) -> float:
    """An input rounded once by ``rnd``; a NaN becomes the quiet NaN with its sign (as
    :func:`numerics.kernels.rounding.round_pair` gives the format's canonical NaN)."""
    r = rnd(v, prm)
    return r if v == v else np.float32(np.copysign(np.float32(np.nan), v))


def sum_rows_f32(X: np.ndarray, alg: int, block: int, drop: int, emin: int, top: float,
                 value: np.ndarray, abs_sum: np.ndarray) -> None:
    """:func:`sum_rows` for C-contiguous float32 ``X`` (batch, n), nearest even, into a
    format with infinities, IEEE NaNs, ``p = 24 - drop <= 11`` and ``-126 <= emin``
    (bfloat16, tf32, binary16, e5m2), or binary32 itself (``drop = 0``: the hardware's
    operations); ``top`` is its largest finite value.  (A format with ``emin > -126``
    whose overflow is its NaN or that lacks -0, e4m3fn, fnuz, P3109, gives the same
    values up to those rules, which :mod:`numerics.accum.summation` applies after.)

    Each operation is computed in binary32 and rounded once to the format (the comment
    above this section: the pair is the correctly rounded operation): add-and-mask on
    the encoding for ``emin = -126``, F16C's conversion for binary16 (where the host has
    it), add-and-mask with a subnormal grid and an overflow test otherwise.  Up to 64
    rows run side by side in binary32 lanes, their terms transposed into a lane
    buffer 64 at a time; each row follows the documented order of its algorithm
    (recursive; pairwise with :func:`sum_rows`'s tree; Kahan; Neumaier), so the bits equal
    :func:`sum_rows`'s, for every thread count.  ``abs_sum`` is ``sum |x_i|`` of the
    rounded terms, in float64 in index order.  Tiles of rows
    (:func:`sum_rows_f32_span`) run on the threads.
    """
    batch = X.shape[0]
    R = min(_LANES, (batch + 7) // 8 * 8)
    tiles = (batch + R - 1) // R if R > 0 else 0
    prm = (np.int32(drop), np.float32(2.0**emin),
           np.float32(1.5 * 2.0 ** (emin - (23 - drop) + 23)), np.float32(top))
    # one compiled span per rounding step: a call compiles only the one it uses
    if drop == 0:
        span = sum_rows_f32_span
    elif emin == -126:
        span = _span_wide
    elif HAS_F16C and drop == 13 and emin == -14 and top == 65504.0:
        span = _span_binary16
    else:
        span = _span_narrow
    spread(lambda lo, hi: span(X, alg, block, prm, value, abs_sum, R, lo, hi),
           tiles, unit=R * X.shape[1])


@numba.njit(cache=True, nogil=True)
def sum_rows_f32_span(X: np.ndarray, alg: int, block: int, prm: tuple[Any, ...],
                      value: np.ndarray, abs_sum: np.ndarray, R: int, start: int,
                      stop: int) -> None:
    """:func:`sum_rows_f32` for the tiles of ``R`` rows ``start .. stop - 1`` on this
    thread, in binary32 itself (``prm``: the rounding step's constants, unused here);
    ``_span_wide``, ``_span_binary16`` and ``_span_narrow`` are the same with that
    rounding step."""
    for tile in range(start, stop):
        _lane_tile(X, alg, block, R, prm, value, abs_sum, tile, _rne_same, _load_chunk)


@numba.njit(cache=True, nogil=True)
def _span_wide(X: np.ndarray, alg: int, block: int, prm: tuple[Any, ...],
               value: np.ndarray, abs_sum: np.ndarray, R: int, start: int, stop: int) -> None:
    for tile in range(start, stop):
        _lane_tile(X, alg, block, R, prm, value, abs_sum, tile, _rne_wide, _load_chunk)


@numba.njit(cache=True, nogil=True)
def _span_binary16(X: np.ndarray, alg: int, block: int, prm: tuple[Any, ...],
                   value: np.ndarray, abs_sum: np.ndarray, R: int, start: int,
                   stop: int) -> None:
    for tile in range(start, stop):
        _lane_tile(X, alg, block, R, prm, value, abs_sum, tile, _rne_binary16, _load_chunk)


@numba.njit(cache=True, nogil=True)
def _span_narrow(X: np.ndarray, alg: int, block: int, prm: tuple[Any, ...],
                 value: np.ndarray, abs_sum: np.ndarray, R: int, start: int,
                 stop: int) -> None:
    for tile in range(start, stop):
        _lane_tile(X, alg, block, R, prm, value, abs_sum, tile, _rne_narrow, _load_chunk)


@numba.njit(cache=True, nogil=True)
def _load_chunk(X: np.ndarray, r0: int, Rt: int, i0: int, m: int, buf: np.ndarray) -> None:
    """``buf[k, q] = X[r0 + q, i0 + k]`` for ``q < Rt``, ``k < m``: whole 8x8 blocks by
    :func:`_transpose8`, the edges one by one."""
    for q0 in range(0, Rt, 8):
        k0 = 0
        if q0 + 8 <= Rt:
            while k0 + 8 <= m:
                _transpose8(X, r0 + q0, i0 + k0, buf, k0, q0)  # type: ignore[call-arg,arg-type]
                k0 += 8
        for q in range(q0, min(q0 + 8, Rt)):
            for k in range(k0, m):
                buf[k, q] = X[r0 + q, i0 + k]


@numba.njit(cache=True, nogil=True)
def _load_plain(X: np.ndarray, r0: int, Rt: int, i0: int, m: int, buf: np.ndarray) -> None:
    """:func:`_load_chunk` element by element (float64 rows)."""
    for q in range(Rt):
        for k in range(m):
            buf[k, q] = X[r0 + q, i0 + k]


def sum_rows_f64(X: np.ndarray, alg: int, block: int, value: np.ndarray,
                 abs_sum: np.ndarray) -> None:
    """:func:`sum_rows` for C-contiguous float64 ``X`` (batch, n) in binary64 rounded to
    nearest even: :func:`sum_rows_f32`'s lanes in binary64, whose operations are the
    format's own (the same order, so the same bits as :func:`sum_rows`)."""
    batch = X.shape[0]
    R = min(_LANES, (batch + 7) // 8 * 8)
    tiles = (batch + R - 1) // R if R > 0 else 0
    spread(lambda lo, hi: sum_rows_f64_span(X, alg, block, value, abs_sum, R, lo, hi),
           tiles, unit=R * X.shape[1])


@numba.njit(cache=True, nogil=True)
def sum_rows_f64_span(X: np.ndarray, alg: int, block: int, value: np.ndarray,
                      abs_sum: np.ndarray, R: int, start: int, stop: int) -> None:
    """:func:`sum_rows_f64` for the tiles of ``R`` rows ``start .. stop - 1``."""
    prm = (np.int32(0), 0.0, 0.0, 0.0)
    for tile in range(start, stop):
        _lane_tile(X, alg, block, R, prm, value, abs_sum, tile, _rne_same, _load_plain)


@numba.njit(cache=True, nogil=True, inline="always")
def _lane_tile(X: np.ndarray, alg: int, block: int, R: int, prm: tuple[Any, ...],
               value: np.ndarray, abs_sum: np.ndarray, tile: int, rnd: Any, load: Any) -> None:
    """Rows ``R tile .. R tile + R - 1`` of :func:`sum_rows_f32` in ``R`` lanes of
    ``X``'s type (lanes past the last row sum zeros), every operation rounded by
    ``rnd``; ``load`` transposes a chunk of terms (:func:`_load_chunk`)."""
    batch, n = X.shape
    r0 = tile * R
    Rt = min(R, batch - r0)
    if Rt < 4:  # a few rows: one at a time, the state in registers (a shorter chain)
        for q in range(Rt):
            _row(X, r0 + q, alg, block, prm, value, abs_sum, rnd)
        return
    xs = np.zeros((_CHUNK, R), X.dtype)  # the chunk's inputs transposed, then rounded
    s = np.zeros(R, X.dtype)  # the running (block) sum
    c = np.zeros(R, X.dtype)  # Kahan's or Neumaier's compensation
    acc = np.zeros(R)
    stack = np.zeros((_STACK, R), X.dtype)
    level = np.zeros(_STACK, np.int64)
    depth = 0
    left = block  # pairwise: terms left in the current block
    for i0 in range(0, n, _CHUNK):
        m = min(_CHUNK, n - i0)
        load(X, r0, Rt, i0, m, xs)
        nxt = i0 + _AHEAD * _CHUNK  # the chunk row k asks for, a cache line at a time
        for k in range(m):  # each term rounded, and summed in magnitude
            if nxt < n and k < Rt:
                row = (r0 + k) * n  # (X is C-contiguous: a flat index)
                for j in range(nxt, min(nxt + _CHUNK, n), 64 // X.itemsize):
                    prefetch(X, row + j)
            for q in range(R):
                v = _intake(xs[k, q], prm, rnd)
                xs[k, q] = v
                acc[q] += abs(np.float64(v))
        k0 = 0
        if i0 == 0:
            for q in range(R):
                s[q] = xs[0, q]
            k0 = 1
            left -= 1
        if alg == ALG_RECURSIVE:
            for k in range(k0, m):
                for q in range(R):
                    s[q] = rnd(s[q] + xs[k, q], prm)
        elif alg == ALG_KAHAN:
            for k in range(k0, m):
                for q in range(R):
                    y = rnd(xs[k, q] - c[q], prm)
                    t = rnd(s[q] + y, prm)
                    c[q] = rnd(rnd(t - s[q], prm) - y, prm)
                    s[q] = t
        elif alg == ALG_NEUMAIER:
            for k in range(k0, m):
                for q in range(R):
                    x = xs[k, q]
                    sq = s[q]
                    t = rnd(sq + x, prm)
                    big = abs(sq) >= abs(x)  # (selects, not a branch: it vectorizes)
                    a = sq if big else x
                    b = x if big else sq
                    c[q] = rnd(c[q] + rnd(rnd(a - t, prm) + b, prm), prm)
                    s[q] = t
        else:  # pairwise: s is the running block sum
            for k in range(k0, m):
                if left > 0:
                    for q in range(R):
                        s[q] = rnd(s[q] + xs[k, q], prm)
                else:  # a block is complete: push it, start the next one with this term
                    depth = _push_lanes(stack, level, depth, s, R, prm, rnd)
                    for q in range(R):
                        s[q] = xs[k, q]
                    left = block
                left -= 1
    if alg == ALG_PAIRWISE:
        depth = _push_lanes(stack, level, depth, s, R, prm, rnd)
        while depth >= 2:  # the leftovers, from the right
            for q in range(R):
                stack[depth - 2, q] = rnd(stack[depth - 2, q] + stack[depth - 1, q], prm)
            depth -= 1
        for q in range(R):
            s[q] = stack[0, q]
    elif alg == ALG_NEUMAIER:  # the compensation, added once
        for q in range(R):
            s[q] = rnd(s[q] + c[q], prm)
    for q in range(Rt):
        value[r0 + q] = s[q]
        abs_sum[r0 + q] = acc[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _row(X: np.ndarray, r: int, alg: int, block: int, prm: tuple[Any, ...],
         value: np.ndarray, abs_sum: np.ndarray, rnd: Any) -> None:
    """Row ``r`` of :func:`_lane_tile` on its own: the same operations in the same order
    (each input through :func:`_intake`, then recursive, Kahan, Neumaier or pairwise
    with the same tree), its running sums in registers."""
    n = X.shape[1]
    zero = np.zeros(1, X.dtype)[0]
    s = _intake(X[r, 0], prm, rnd)
    acc = abs(np.float64(s))
    c = zero
    stack = np.zeros(_STACK, X.dtype)
    level = np.zeros(_STACK, np.int64)
    depth = 0
    left = block - 1  # pairwise: terms left in the current block
    for i in range(1, n):
        x = _intake(X[r, i], prm, rnd)
        acc += abs(np.float64(x))
        if alg == ALG_RECURSIVE:
            s = rnd(s + x, prm)
        elif alg == ALG_KAHAN:
            y = rnd(x - c, prm)
            t = rnd(s + y, prm)
            c = rnd(rnd(t - s, prm) - y, prm)
            s = t
        elif alg == ALG_NEUMAIER:
            t = rnd(s + x, prm)
            if abs(s) >= abs(x):
                c = rnd(c + rnd(rnd(s - t, prm) + x, prm), prm)
            else:
                c = rnd(c + rnd(rnd(x - t, prm) + s, prm), prm)
            s = t
        elif left > 0:  # pairwise: s is the running block sum
            s = rnd(s + x, prm)
            left -= 1
        else:  # a block is complete: push it (merging equal levels), start the next
            lev = 0
            while depth >= 1 and level[depth - 1] == lev:
                s = rnd(stack[depth - 1] + s, prm)
                lev += 1
                depth -= 1
            stack[depth] = s
            level[depth] = lev
            depth += 1
            s = x
            left = block - 1
    if alg == ALG_PAIRWISE:
        lev = 0
        while depth >= 1 and level[depth - 1] == lev:
            s = rnd(stack[depth - 1] + s, prm)
            lev += 1
            depth -= 1
        stack[depth] = s
        depth += 1
        while depth >= 2:  # the leftovers, from the right
            stack[depth - 2] = rnd(stack[depth - 2] + stack[depth - 1], prm)
            depth -= 1
        s = stack[0]
    elif alg == ALG_NEUMAIER:  # the compensation, added once
        s = rnd(s + c, prm)
    value[r] = s
    abs_sum[r] = acc


@numba.njit(cache=True, nogil=True, inline="always")
def _push_lanes(stack: np.ndarray, level: np.ndarray, depth: int, s: np.ndarray, R: int,
                prm: tuple[Any, ...], rnd: Any) -> int:
    """Push the completed block sum ``s``, first merging it into the stack's top while
    their levels are equal (:func:`sum_rows`'s tree: older + newer); ``s`` is used as
    the carry.  Returns the new depth."""
    lev = 0
    while depth >= 1 and level[depth - 1] == lev:
        for q in range(R):
            s[q] = rnd(stack[depth - 1, q] + s[q], prm)
        lev += 1
        depth -= 1
    for q in range(R):
        stack[depth, q] = s[q]
    level[depth] = lev
    return depth + 1
