"""The documented stochastic-rounding stream (numerics.kernels.random), in Python ints.

Element ``i`` of a call with seed ``s`` draws the 64-bit word
``mix64(mix64(s) ^ (i * 0x9E3779B97F4A7C15 mod 2**64))`` (SplitMix64's finalizer,
Steele, Lea and Flood 2014) and uses its top ``k`` bits.  Written from the docstring,
not from the kernel, so the tests that use it check the kernel's stream.
"""

from __future__ import annotations

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    """SplitMix64's finalizer."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def draw(seed: int, index: int, bits: int = 64) -> int:
    """The ``bits``-bit draw of element ``index``."""
    return mix64(mix64(seed) ^ ((index * GOLDEN) & M64)) >> (64 - bits)
