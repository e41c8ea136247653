"""Comparison and statistics passes: one loop over the elements, every figure at once.

``compare``
    Two arrays of codes of one format, element by element: bitwise
    mismatches, NaN and inf mismatches, the ULP distance (its maximum, its
    histogram in power-of-two buckets, the worst few elements), the largest
    absolute and relative error over pairs finite on both sides, and the
    elements that fail a tolerance.  The ULP distance follows
    :func:`numerics.ulp.ulp_distance`: a code's *ordinal* is its magnitude
    code with the sign of the value (``+0`` and ``-0`` both 0, an infinity one
    past ``max``), and the distance is ``|ordinal(a) - ordinal(b)|``, which is
    ``|ma - mb|`` for equal signs and ``ma + mb + gap`` otherwise, ``gap`` 1 in
    a signed format without zero (its ``-2**emin`` and ``+2**emin`` are
    neighbours, one step apart) and 0 otherwise (exact in uint64 for every
    format up to 64 bits: magnitude codes are below ``2**63``).

``stats``
    One array of values: NaN, inf and zero counts, the largest and smallest
    magnitude, and a histogram ``H[e, L]`` of the non-zero finite magnitudes
    by binade ``e`` (``2**e <= |x| < 2**(e+1)``, float64 subnormals included)
    and by ``L``, the number of leading one bits of the 52-bit trailing
    significand; column ``POW2`` counts exact powers of two.  Every
    round-to-nearest threshold of :mod:`numerics.stats` below the overflow
    threshold is ``2**k`` or ``2**k * (2 - 2**-t)``, so the flush and
    subnormal counts for any power-of-two scale follow from ``H`` exactly;
    the overflow thresholds are compared directly.

Both kernels take the element values either as a float array (``float32`` or
``float64``, the codes' own bits) or as codes plus a float64 table of the
value of every code (formats up to 16 bits); NaN is ``v != v`` either way.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers

__all__ = [
    "BINADE_OFFSET",
    "BINADES",
    "COMPARE_COUNTS",
    "HIST_BUCKETS",
    "KEY_BITS",
    "L_COLUMNS",
    "NAN_KEY",
    "POW2",
    "compare",
    "magnitude_extremes",
    "stats",
    "stats_pass",
]

#: Buckets of the ULP histogram: 0 for distance 0, k + 1 for ``2**(k-1) < d <= 2**k``.
HIST_BUCKETS = 66
#: Sort key of a NaN mismatch among the worst elements (above every distance).
NAN_KEY = np.uint64(2**64 - 1)
#: Slots of ``compare``'s count array: mismatches, NaN and inf mismatches, failures.
COMPARE_COUNTS = 4
#: Binades ``e`` of float64 magnitudes: ``-1074 <= e <= 1023`` at ``e + BINADE_OFFSET``.
BINADE_OFFSET = 1074
BINADES = 2098
#: Columns of the stats histogram: ``L = 0 .. 52``, then the powers of two.
L_COLUMNS = 53
POW2 = 53

_INF = np.inf


@numba.njit(cache=True, nogil=True)
def _bucket(d: np.uint64) -> int:
    """0 for d = 0, else ``bit_length(d - 1) + 1``: k + 1 for ``2**(k-1) < d <= 2**k``."""
    if d == 0:
        return 0
    return 65 - np.int64(leading_zeros(d - np.uint64(1)))  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def compare(ca: np.ndarray, cb: np.ndarray, va: np.ndarray, vb: np.ndarray, table: np.ndarray,
            sign_mask: int, mag_mask: int, gap: int, base: int, max_ulp: Any, atol: float,
            rtol: float, mode: int, counts: np.ndarray, max_d: np.ndarray, errors: np.ndarray,
            hist: np.ndarray, top_d: np.ndarray,
            top_i: np.ndarray) -> None:  # pragma: no cover - compiled
    """Compare codes ``ca`` and ``cb`` (1-D, same length), accumulating into the outputs.

    ``gap`` is the distance between ``-2**emin`` and ``+2**emin`` beyond their
    magnitude codes: 1 in a format without zero, else 0 (``+0`` and ``-0`` are
    one point).  Where ``|a - b|`` overflows float64 (finite ``a`` and ``b``
    near ``max`` of opposite signs) the relative error and the tolerance are
    computed on the halved values (exact at that size), so ``max_rel_error``
    stays finite: ``|a - b|`` rounded as without an exponent limit, then divided.

    Values come from ``va``/``vb`` (float arrays as long as the codes) or, when
    those are empty, from ``table[code]``.  ``base`` is the flat index of
    element 0 (for ``top_i``).  ``mode`` bit 0: an element passes within
    ``max_ulp`` ULP; bit 1: within ``atol + rtol * |a|``; neither: it passes
    only bit-equal.  NaN mismatches always fail, NaN against NaN never;
    bit-equal elements always pass.  ``counts`` += [mismatches, NaN mismatches, inf mismatches,
    failures]; ``max_d[0]`` and ``errors`` = [max abs, max rel] are running
    maxima; ``hist`` += the ULP histogram; ``top_d``/``top_i`` hold the worst
    elements found so far (key descending, index ascending; ``top_i`` -1 is
    an empty slot).
    """
    n = ca.shape[0]
    use_table = va.shape[0] == 0
    smask = np.uint64(sign_mask)
    mmask = np.uint64(mag_mask)
    across = np.uint64(gap)
    mism = nanmm = infmm = fails = 0
    md = max_d[0]
    emax_abs = errors[0]
    emax_rel = errors[1]
    k = top_d.shape[0]
    # the current weakest entry of the top list
    weak = 0
    for j in range(1, k):
        if top_i[j] == -1 or (top_i[weak] != -1 and (
                top_d[j] < top_d[weak] or (top_d[j] == top_d[weak] and top_i[j] > top_i[weak]))):
            weak = j
    same = 0
    for block in range(0, n, 512):
        end = min(block + 512, n)
        # a vectorised scan (most blocks are equal), over slices that index from 0: an
        # index into the whole arrays would need negative-index wraparound, which
        # keeps LLVM from vectorizing (4x slower)
        xa, xb = ca[block:end], cb[block:end]
        differ = False
        for i in range(xa.shape[0]):
            differ |= xa[i] != xb[i]
        if not differ:
            same += end - block
            continue
        for i in range(block, end):
            a = np.uint64(ca[i])
            b = np.uint64(cb[i])
            if a == b:
                same += 1
                continue
            if use_table:
                x = table[a]
                y = table[b]
            else:
                x = np.float64(va[i])
                y = np.float64(vb[i])
            mism += 1
            xn = x != x
            yn = y != y
            key = np.uint64(0)
            if xn or yn:
                if xn and yn:
                    hist[0] += 1  # NaN on both sides agrees: distance 0 (payloads differ)
                else:
                    nanmm += 1
                    fails += 1
                    key = NAN_KEY
            else:
                ma = a & mmask
                mb = b & mmask
                if (a & smask) == (b & smask):
                    d = ma - mb if ma >= mb else mb - ma
                else:
                    d = ma + mb + across
                key = d
                hist[_bucket(d)] += 1
                if d > md:
                    md = d
                xi = abs(x) == _INF
                yi = abs(y) == _INF
                ok = False
                if xi or yi:
                    if x != y:
                        infmm += 1
                else:
                    ax = abs(x)
                    err = abs(x - y)  # inf only where |x - y| is beyond float64's range
                    rel = 0.0
                    if err == _INF:
                        # halved, |x - y| / 2 is finite and rounds as |x - y| would without an
                        # exponent limit (here |x|, |y| >= 2**970: halving them is exact), and
                        # rel = |x - y| / |x| <= 2**1024 / 2**970 is finite
                        half = abs(x * 0.5 - y * 0.5)
                        rel = half / ax * 2.0
                        within = half <= atol * 0.5 + rtol * (ax * 0.5)
                    else:
                        if err != 0.0:
                            rel = err / ax  # inf where x == 0
                        within = err <= atol + rtol * ax
                    if err > emax_abs:
                        emax_abs = err
                    if rel > emax_rel:
                        emax_rel = rel
                    if mode & 2 and within:
                        ok = True
                if mode & 1 and d <= max_ulp:
                    ok = True
                if not ok:
                    fails += 1
            if k > 0:
                idx = base + i
                if top_i[weak] == -1 or key > top_d[weak]:
                    top_d[weak] = key
                    top_i[weak] = idx
                    weak = 0
                    for j in range(1, k):
                        if top_i[j] == -1 or (top_i[weak] != -1 and (
                                top_d[j] < top_d[weak]
                                or (top_d[j] == top_d[weak] and top_i[j] > top_i[weak]))):
                            weak = j
    hist[0] += same
    counts[0] += mism
    counts[1] += nanmm
    counts[2] += infmm
    counts[3] += fails
    max_d[0] = md
    errors[0] = emax_abs
    errors[1] = emax_rel


#: Bits of a magnitude's key in :func:`stats_pass`: its exponent field and leading trailing bits.
KEY_BITS = 16
#: Elements per block of :func:`stats_pass` (a block stays in L2 between its two loops).
_BLOCK = 1 << 16
#: Elements between two flushes of :func:`stats_pass`'s int32 key counts.
_FLUSH = 1 << 30


@numba.njit(cache=True, nogil=True)
def magnitude_extremes(u: np.ndarray, abs_mask: Any, exp_mask: Any,
                       out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out`` = [largest, smallest] magnitude bits of the finite non-zero elements (running).

    A vectorised pass over all magnitudes (zero drops out of the minimum by
    the unsigned wrap of ``m - 1``); only where an infinity or NaN is present
    does a second loop leave them out of the maximum.
    """
    mask = np.uint64(abs_mask)
    special = np.uint64(exp_mask)
    one = np.uint64(1)
    big = np.uint64(0)
    small = ~np.uint64(0)
    for i in range(u.shape[0]):
        m = np.uint64(u[i]) & mask
        big = max(big, m)
        small = min(small, m - one)
    if big >= special:
        big = np.uint64(0)
        for i in range(u.shape[0]):
            m = np.uint64(u[i]) & mask
            if m < special:
                big = max(big, m)
    small += one
    if small < special and small < out[1]:  # small == 0: no non-zero element
        if small != 0:
            out[1] = small
    if big != 0 and big > out[0]:
        out[0] = big


@numba.njit(cache=True, nogil=True)
def _add_keys(keys, special, ebits, hist):  # pragma: no cover - compiled
    """Add the counts of the ordinary keys to ``hist``, and clear ``keys``.

    An ordinary key (``special[key] == 0``) is a normal magnitude whose
    ``k = KEY_BITS - ebits`` leading trailing bits are neither all zeros nor
    all ones: its binade is its exponent field, and its ``L`` (leading ones)
    is that of those ``k`` bits.
    """
    k = KEY_BITS - ebits
    bias = (1 << (ebits - 1)) - 1
    for key in range(1 << KEY_BITS):
        c = np.int64(keys[key])
        keys[key] = 0
        if c == 0 or special[key]:
            continue
        top = key & ((1 << k) - 1)
        ones = 0
        while top & (1 << (k - 1 - ones)):
            ones += 1
        hist[(key >> k) - bias + BINADE_OFFSET, ones] += c


@numba.njit(cache=True, nogil=True)
def _move_bounds(flags, extremes, key_shift, exp_mask, hi, lo):  # pragma: no cover - compiled
    """Clear flag 2 below the largest finite magnitude's key and flag 4 above the smallest's.

    ``hi`` and ``lo`` are the current bounds (flag 2 on keys ``>= hi``, flag 4
    on keys ``<= lo``); returns the new ones.  The extremes only grow apart,
    so every key is cleared at most once per call of :func:`stats_pass`.
    """
    big = np.uint64(extremes[0])
    small = np.uint64(extremes[1])
    if big != 0 and big < exp_mask:
        new_hi = np.int64(big >> key_shift)
        for k in range(hi, new_hi):
            flags[k] &= 5
        hi = max(hi, new_hi)
    if small < exp_mask:
        new_lo = np.int64(small >> key_shift)
        for k in range(new_lo + 1, lo + 1):
            flags[k] &= 3
        lo = min(lo, new_lo)
    return hi, lo


@numba.njit(cache=True, nogil=True)
def stats_pass(u: np.ndarray, x: np.ndarray, special: np.ndarray, mbits: int, ebits: int,
               over: np.ndarray, over_tie: np.ndarray, min_over_bits: int, counts: np.ndarray,
               extremes: np.ndarray, hist: np.ndarray,
               over_counts: np.ndarray) -> None:  # pragma: no cover - compiled
    """The statistics of every element of ``u`` (arguments as for :func:`stats`).

    One loop over the elements, block by block (``_BLOCK`` elements), counts
    every magnitude's *key* (its exponent field and ``KEY_BITS - ebits``
    leading trailing bits) and lists the elements of flagged keys.  An
    ordinary key settles the binade and ``L`` of every element it counts
    (:func:`_add_keys`).  Flagged are the keys in ``special``, which must
    flag every key of exponent field 0 or all ones, every key at or above
    ``min_over_bits >> (mbits + ebits - KEY_BITS)``, and every key whose
    leading trailing bits are all zeros (a power of two?) or all ones (``L``
    longer); their elements are placed one by one: zeros and normal
    magnitudes below ``min_over_bits`` here, the others (subnormals,
    infinities, NaNs, possible overflows) by :func:`stats`.  Flagged too,
    for the extremes, are the keys at or beyond the largest and smallest
    magnitude's keys so far (:func:`_move_bounds`; the first block's
    extremes come from a vectorised pass, :func:`magnitude_extremes`), so
    only a few ordinary elements per block are listed for them.  Every
    figure is a count or an extreme, so the blocks never change a result.
    """
    one = np.uint64(1)
    mant_mask = (one << np.uint64(mbits)) - one
    exp_mask = ((one << np.uint64(ebits)) - one) << np.uint64(mbits)
    abs_mask = exp_mask | mant_mask
    min_normal = one << np.uint64(mbits)
    lim = min(np.uint64(min_over_bits), exp_mask)
    key_shift = np.uint64(mbits + ebits - KEY_BITS)
    top_shift = np.uint64(64 - mbits)
    bias = (1 << (ebits - 1)) - 1
    no_weights = np.empty(0, np.int64)
    n = u.shape[0]
    keys = np.zeros(1 << KEY_BITS, np.int32)
    where = np.empty(min(n, _BLOCK), np.int64)
    # flags[key]: 1 special (as given), 2 at or above the largest magnitude's key so far,
    # 4 at or below the smallest's: the elements of flagged keys are listed
    flags = special.copy()
    top_key = (1 << KEY_BITS) - 1
    hi = 0  # keys >= hi carry flag 2
    lo = top_key  # keys <= lo carry flag 4
    for k in range(1 << KEY_BITS):
        flags[k] |= 6
    zero = 0
    counted = 0
    for b0 in range(0, n, _BLOCK):
        b1 = min(b0 + _BLOCK, n)
        if b0 == 0:  # the first block's extremes: few elements are listed for them after it
            magnitude_extremes(u[b0:b1], abs_mask, exp_mask, extremes)
            hi, lo = _move_bounds(flags, extremes, key_shift, exp_mask, hi, lo)
        j = 0
        block = u[b0:b1]  # indices from 0: no negative-index wraparound in the hot loop
        for i in range(block.shape[0]):
            key = (np.uint64(block[i]) & abs_mask) >> key_shift
            keys[key] += 1
            if flags[key]:
                where[j] = b0 + i
                j += 1
        e = 0
        big = np.uint64(extremes[0])
        small = np.uint64(extremes[1])
        for t in range(j):
            i = where[t]
            m = np.uint64(u[i]) & abs_mask
            if m == 0:
                zero += 1
            elif m < min_normal or m >= lim:  # subnormal, inf, NaN, possible overflow
                where[e] = i  # e <= t: the list is compacted in place
                e += 1
            else:
                big = max(big, m)
                small = min(small, m)
                if special[m >> key_shift]:  # else only listed for the extremes
                    mant = m & mant_mask
                    row = np.int64(m >> np.uint64(mbits)) - bias + BINADE_OFFSET
                    if mant == 0:
                        hist[row, POW2] += 1
                        hist[row, 0] += 1
                    else:
                        hist[row, np.int64(leading_zeros(~(mant << top_shift)))] += 1  # type: ignore[call-arg]
        extremes[0] = big
        extremes[1] = small
        if e:
            stats(u, x, where[:e], no_weights, mbits, ebits, over, over_tie, min_over_bits,
                  counts, extremes, hist, over_counts)
        hi, lo = _move_bounds(flags, extremes, key_shift, exp_mask, hi, lo)
        counted += b1 - b0
        if counted >= _FLUSH:
            _add_keys(keys, special, ebits, hist)
            counted = 0
    _add_keys(keys, special, ebits, hist)
    counts[2] += zero


@numba.njit(cache=True, nogil=True)
def stats(u: np.ndarray, x: np.ndarray, where: np.ndarray, weights: np.ndarray, mbits: int,
          ebits: int, over: np.ndarray, over_tie: np.ndarray, min_over_bits: int,
          counts: np.ndarray, extremes: np.ndarray, hist: np.ndarray,
          over_counts: np.ndarray) -> None:  # pragma: no cover - compiled
    """The exact statistics of elements ``where`` of float values given by their bits ``u``.

    ``u`` holds the bits of IEEE binary floats with ``mbits`` trailing and
    ``ebits`` exponent bits (float32 or float64, the same buffer as ``x``);
    element ``i`` counts ``weights[i]`` times (once when ``weights`` is empty).
    ``counts`` += [NaN, inf, zero]; ``extremes`` = [largest, smallest]
    magnitude *bits* of the non-zero finite elements, running;
    ``hist[e + BINADE_OFFSET, L]`` and ``hist[..., POW2]`` as in the module
    docstring; ``over_counts[f]`` += elements with ``|v| > over[f]`` or
    ``|v| == over[f]`` and ``over_tie[f]`` (tested for magnitude bits
    ``>= min_over_bits``).  :func:`stats_pass` sends here only the elements
    its key histogram cannot place (subnormals, infinities, NaNs, possible
    overflows); :func:`numerics.stats.stats_chunk` sends every code of a
    narrow format, weighted by its count.
    """
    one = np.uint64(1)
    mant_mask = (one << np.uint64(mbits)) - one
    exp_mask = ((one << np.uint64(ebits)) - one) << np.uint64(mbits)
    abs_mask = exp_mask | mant_mask
    min_over = np.uint64(min_over_bits)
    bias = (1 << (ebits - 1)) - 1
    top_shift = np.uint64(64 - mbits)
    weighted = weights.shape[0] != 0
    nan = inf = zero = 0
    big = np.uint64(extremes[0])
    small = np.uint64(extremes[1])
    nf = over.shape[0]
    for j in range(where.shape[0]):
        i = where[j]
        w = weights[i] if weighted else 1
        if w == 0:
            continue
        m_all = np.uint64(u[i]) & abs_mask
        if m_all >= exp_mask:
            if m_all > exp_mask:
                nan += w
            else:
                inf += w
            continue
        if m_all == 0:
            zero += w
            continue
        big = max(big, m_all)
        small = min(small, m_all)
        if m_all >= min_over:
            a = abs(np.float64(x[i]))
            for f in range(nf):
                if a > over[f] or (a == over[f] and over_tie[f]):
                    over_counts[f] += w
        ef = np.int64(m_all >> np.uint64(mbits))
        m = m_all & mant_mask
        if ef == 0:  # subnormal: normalise the significand
            lz = np.int64(leading_zeros(m << top_shift))  # type: ignore[call-arg]
            e = 1 - bias - (lz + 1)
            m = (m << np.uint64(lz + 1)) & mant_mask
        else:
            e = ef - bias
        row = e + BINADE_OFFSET
        if m == 0:
            hist[row, POW2] += w
            hist[row, 0] += w
        else:
            hist[row, np.int64(leading_zeros(~(m << top_shift)))] += w  # type: ignore[call-arg]
    counts[0] += nan
    counts[1] += inf
    counts[2] += zero
    extremes[0] = big
    extremes[1] = small
