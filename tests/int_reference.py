"""Exact reference of integer element rounding (int8, int4, MXINT8 elements, user IntFormats).

Every value is a ``fractions.Fraction``; the quotient ``x / s`` is formed exactly, divided
by the quantum and rounded to an integer in the requested mode by the definition of the
mode, then clamped to ``[qmin, qmax]``.  Stochastic rounding follows the rule documented in
:func:`numerics.quant._core.divide_codes`, on the exact fraction of ``x / s``, with the draw
of element ``i`` from the documented stream (``sr_stream``).
Nothing here is shared with ``numerics/quant/_core.py`` or its kernels.
"""

from __future__ import annotations

import math
from fractions import Fraction

from sr_stream import draw

DETERMINISTIC = ("rne", "rna", "rtz", "ru", "rd", "rto")


def round_to_int(v: Fraction, rounding: str) -> int:
    """``v`` rounded to an integer in a deterministic mode, by the definition of the mode."""
    lo = math.floor(v)
    if v == lo:
        return lo
    hi = lo + 1
    if rounding == "rtz":
        return lo if v > 0 else hi
    if rounding == "ru":
        return hi
    if rounding == "rd":
        return lo
    if rounding == "rto":
        return lo if lo % 2 else hi
    d = v - lo
    if d != Fraction(1, 2):
        return lo if d < Fraction(1, 2) else hi
    if rounding == "rna":
        return hi if v > 0 else lo
    assert rounding == "rne"
    return lo if lo % 2 == 0 else hi


def int_code(k: int, bits: int) -> int:
    """The ``bits``-bit two's-complement code of ``k``."""
    return k & ((1 << bits) - 1)


def round_quotient(x: float, s: float, qmin: int, qmax: int, quantum: float,
                   rounding: str) -> int:
    """The integer of ``x / s`` (``x`` not NaN, ``s > 0``) on the grid ``k * quantum`` in a
    deterministic mode, clamped to ``[qmin, qmax]`` (an infinity saturates by its sign)."""
    if math.isinf(x):
        return qmax if x > 0 else qmin
    k = round_to_int(Fraction(x) / Fraction(s) / Fraction(quantum), rounding)
    return max(qmin, min(qmax, k))


def sr_quotient(x: float, s: float, qmin: int, qmax: int, quantum: float, seed: int,
                index: int, sr_bits: int | None) -> int:
    """Stochastic rounding of ``x / s`` for element ``index``: away from zero iff the draw
    ``u`` (53 bits: ``u < frac * 2**53``; ``sr_bits``: ``u < floor(frac * 2**sr_bits)``)
    says so, ``frac`` the exact fraction of the magnitude ``|x / s| / quantum`` above
    its integer part; then clamped (an infinity saturates by its sign)."""
    if math.isinf(x):
        return qmax if x > 0 else qmin
    exact = Fraction(x) / Fraction(s)
    negative = exact < 0 or (exact == 0 and math.copysign(1.0, x) < 0)
    limit = -qmin if negative else qmax
    m = abs(exact) / Fraction(quantum)
    n = math.floor(m)
    bits = 53 if sr_bits is None else sr_bits
    scaled = (m - n) * 2**bits
    u = draw(seed, index, bits)
    up = u < scaled if sr_bits is None else u < math.floor(scaled)
    k = min(n + up, limit)
    return -k if negative else k
