"""The random stream of stochastic rounding: a strong integer hash of (seed, index).

Word ``q`` of a call with seed ``s`` is the 64-bit ``W(q) = mix(mix(s) ^ (q * GOLDEN))``,
where ``mix`` is SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
pseudorandom number generators", OOPSLA 2014) and ``GOLDEN = 0x9E3779B97F4A7C15``,
SplitMix64's increment.

A ``k``-bit draw (``1 <= k <= 64``) takes a ``k``-bit slice of a word.  One word
holds ``m = 2**floor(log2(64 // k))`` draws (the largest power of two with
``m * k <= 64``: 8 for ``k = 8``, 2 for ``k = 17 .. 32``, 1 above).  Element ``i``
takes word ``q = i // m`` and slot ``j = i % m``: the word's top ``m * k`` bits
``V = W(q) >> (64 - m * k)`` cut into ``m`` draws from the least significant end,

    ``u(i) = (V >> (k * j)) mod 2**k``,

so with ``m = 1`` the draw is the word's top ``k`` bits, and where ``m * k = 64``
(``k`` = 1, 2, 4, 8, 16, 32) the draws of ``m`` consecutive elements are the word's
``k``-bit pieces in little-endian order.  A draw depends only on the seed and the
element's flat index in C order, never on the thread that computes it, so results
are identical for every thread count and every chunking.  Slicing lets a loop that
needs 8 bits per element hash once per 8 elements: with a hash per element (two
64-bit multiplies, which AVX2 lacks), stochastic rounding of 2**24 float32 to e4m3fn
with 8 bits took 1.77 ns per element, the hash alone 1.18; with slices it takes 1.10
(AMD EPYC Zen 2, one thread).

A numpy Generator passed as ``rng`` contributes one 64-bit seed, drawn with
``rng.integers(0, 2**64, dtype=np.uint64)``; an int seed is used as it is
(reduced modulo ``2**64``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers

__all__ = ["GOLDEN", "draw", "fill", "mix64", "slots_log2", "words"]

#: The odd constant that spreads consecutive indices (2**64 / golden ratio).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_U64 = np.uint64


@numba.njit(cache=True, nogil=True)
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64's finalizer: a bijection of 64-bit words with full avalanche."""
    z = np.uint64(z)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def slots_log2(bits: Any) -> int:
    """``log2`` of the number of ``bits``-bit draws one word holds (``1 <= bits <= 64``):
    the largest ``L`` with ``2**L * bits <= 64``."""
    # (branch-free: a loop here kept per-element callers from vectorizing)
    return (int(bits <= 32) + int(bits <= 16) + int(bits <= 8) + int(bits <= 4)
            + int(bits <= 2) + int(bits <= 1))


@numba.njit(cache=True, nogil=True)
def draw(seed: np.uint64, index: np.uint64, bits: np.int64) -> np.uint64:
    """The ``bits``-bit uniform draw (1 <= bits <= 64) of element ``index``."""
    lk = slots_log2(bits)
    i = np.uint64(index)
    q = i >> _U64(lk)
    j = np.int64(i & _U64((1 << lk) - 1))
    word = mix64(mix64(np.uint64(seed)) ^ (q * GOLDEN))
    # slot j of the top (bits << lk) bits, shifted to the top, then down to the bottom
    return (word << _U64(bits * ((1 << lk) - 1 - j))) >> _U64(64 - bits)


@numba.njit(cache=True, nogil=True)
def words(out: np.ndarray, mixed_seed: Any, first: int) -> None:
    """``out[w] = W(first + w)``, the stream's words (``mixed_seed`` is ``mix64(seed)``).
    With ``m * k = 64`` and ``first`` word of element ``first * m``, ``out`` viewed as
    ``k``-bit integers (little-endian hosts) holds those elements' draws."""
    # the word's product carried from one word to the next: an addition in the
    # vectorized loop where the product would be a 64-bit multiply
    spread = _U64(first) * GOLDEN
    for w in range(out.size):
        out[w] = mix64(mixed_seed ^ spread)
        spread += GOLDEN


@numba.njit(cache=True, nogil=True)
def fill(out: np.ndarray, mixed_seed: Any, base: int, bits: int) -> None:
    """``out[i] = draw(seed, base + i, bits)`` for every ``i``, where ``mixed_seed`` is
    ``mix64(seed)`` (``out`` uint32 for ``bits <= 32``, else uint64): the words by
    :func:`words`, then cut into their slots."""
    n = out.size
    if n == 0:
        return
    lk = slots_log2(bits)
    if lk == 0:  # one draw per word (bits > 32, so out holds uint64): its top bits
        words(out, mixed_seed, base)
        top = _U64(64 - bits)
        for i in range(n):
            out[i] >>= top
        return
    m = 1 << lk
    first = base >> lk
    ws = np.empty(((base + n - 1) >> lk) - first + 1, np.uint64)
    words(ws, mixed_seed, first)
    mask = _U64((1 << bits) - 1)
    step = _U64(bits)
    low = _U64(64 - m * bits)  # the bits below the word's m slots
    j = base & (m - 1)  # the first element's slot
    i = 0
    if j == 0 and (m == 2 or m == 4 or m == 8):
        # whole words in a loop of a fixed count of slots, which vectorizes (17 to 32,
        # 9 to 16 and 5 to 8 bits), then the last word's first slots
        whole = n >> lk
        if m == 2:
            for w in range(whole):
                v = ws[w] >> low
                out[2 * w] = v & mask
                out[2 * w + 1] = (v >> step) & mask
        elif m == 4:
            for w in range(whole):
                v = ws[w] >> low
                out[4 * w] = v & mask
                out[4 * w + 1] = (v >> step) & mask
                out[4 * w + 2] = (v >> (step * _U64(2))) & mask
                out[4 * w + 3] = (v >> (step * _U64(3))) & mask
        else:
            for w in range(whole):
                v = ws[w] >> low
                for c in range(8):
                    out[8 * w + c] = (v >> (step * _U64(c))) & mask
        i = whole << lk
        if i < n:
            v = ws[whole] >> low
            for k in range(i, n):
                out[k] = v & mask
                v >>= step
        return
    for w in range(ws.size):
        v = (ws[w] >> low) >> _U64(bits * j)
        stop = min(n, i + m - j)
        while i < stop:
            out[i] = v & mask
            v >>= step
            i += 1
        j = 0
