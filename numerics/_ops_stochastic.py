"""Stochastic rounding decisions shared by the narrow and the binary64 rounding.

The definition is :func:`numerics.encode`'s: with ``frac`` the distance of the
exact value from its truncation in quanta (``0 <= frac < 1``) and ``u`` uniform
on ``[0, 1)``, the result rounds away from zero iff ``u < frac``.  With
``sr_bits=k``, ``u = randint(2**k) / 2**k`` and ``frac`` is truncated to ``k``
bits; both comparisons are then exact integers scaled by ``2**k``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.rounding import make_rng

__all__ = ["_draws", "_sr_away"]


def _sr_away(x: np.ndarray, q: np.ndarray, u: np.ndarray, sr_bits: int | None,
             frac: np.ndarray | None = None) -> np.ndarray:
    """Stochastic decision: away iff ``u < frac`` (``frac = x / q``, truncated to sr_bits)."""
    if frac is None:
        with np.errstate(all="ignore"):
            frac = np.where(q > 0, x / q, 0.0)
    if sr_bits is None:
        return u < frac
    return np.ldexp(u, sr_bits) < np.floor(np.ldexp(frac, sr_bits))


def _draws(rng: Any, n: int, sr_bits: int | None) -> np.ndarray:
    gen = make_rng(rng)
    if sr_bits is None:
        return gen.random(n)
    return np.ldexp(gen.integers(0, 1 << sr_bits, n, dtype=np.uint64).astype(np.float64),
                    -sr_bits)
