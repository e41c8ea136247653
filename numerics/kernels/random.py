"""The random stream of stochastic rounding: a strong integer hash of (seed, index).

Element ``i`` of a call with seed ``s`` draws the 64-bit word
``mix(mix(s) ^ (i * GOLDEN))`` where ``mix`` is SplitMix64's finalizer
(Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) and ``GOLDEN = 0x9E3779B97F4A7C15``.  Its top ``k`` bits are the
element's ``k``-bit uniform draw ``u = word >> (64 - k)`` (the draw compared
with the dropped fraction).  A draw depends only on the seed and the element's
flat index in C order, never on the thread that computes it, so results are
identical for every thread count and every chunking.

A numpy Generator passed as ``rng`` contributes one 64-bit seed, drawn with
``rng.integers(0, 2**64, dtype=np.uint64)``; an int seed is used as it is
(reduced modulo ``2**64``).
"""

from __future__ import annotations

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel

__all__ = ["GOLDEN", "draw", "mix64"]

#: The odd constant that spreads consecutive indices (2**64 / golden ratio).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@numba.njit(cache=True, nogil=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64's finalizer: a bijection of 64-bit words with full avalanche."""
    z = np.uint64(z)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True, inline="always")
def draw(seed: np.uint64, index: np.uint64, bits: np.int64) -> np.uint64:
    """The ``bits``-bit uniform draw (1 <= bits <= 64) of element ``index``."""
    word = mix64(mix64(np.uint64(seed)) ^ (np.uint64(index) * GOLDEN))
    return word >> np.uint64(64 - bits)
