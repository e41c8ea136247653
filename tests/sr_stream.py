"""The documented stochastic-rounding stream (numerics.kernels.random), in Python ints.

Word ``q`` of a call with seed ``s`` is
``mix64(mix64(s) ^ (q * 0x9E3779B97F4A7C15 mod 2**64))`` (SplitMix64's finalizer,
Steele, Lea and Flood 2014).  A ``k``-bit draw is a ``k``-bit slice of a word: a word
holds ``m`` draws, the largest power of two with ``m * k <= 64``, and element ``i``
takes slot ``i % m`` of word ``i // m``: the word's top ``m * k`` bits cut into ``k``-bit
slots counted from their least significant end.  Written
from the docstring, not from the kernel, so the tests that use it check the kernel's
stream.
"""

from __future__ import annotations

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    """SplitMix64's finalizer."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def word(seed: int, q: int) -> int:
    """Word ``q`` of the stream of ``seed``."""
    return mix64(mix64(seed) ^ ((q * GOLDEN) & M64))


def per_word(bits: int) -> int:
    """How many ``bits``-bit draws one word holds."""
    m = 1
    while 2 * m * bits <= 64:
        m *= 2
    return m


def draw(seed: int, index: int, bits: int = 64) -> int:
    """The ``bits``-bit draw of element ``index``."""
    m = per_word(bits)
    slot = index % m
    top = word(seed, index // m) >> (64 - m * bits)
    return (top >> (bits * slot)) % (1 << bits)
