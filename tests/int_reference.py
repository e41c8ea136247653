"""Exact reference of integer element rounding (int8, int4, MXINT8 elements, user IntFormats).

Every value is a ``fractions.Fraction``; the quotient ``x / s`` is formed exactly, divided
by the quantum and rounded to an integer in the requested mode by the definition of the
mode, then clamped to ``[qmin, qmax]``.  Stochastic rounding follows the rule documented in
:mod:`numerics.quant._core` and :func:`numerics.kernels.quant.round_int`: the float64
quotient ``yh = x / s`` (Python's correctly rounded division) nudged by the exact sign of
``x / s - yh``, the draw of element ``i`` from the documented stream (``sr_stream``).
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
    ``u`` (53 bits, or ``sr_bits``) is below the dropped fraction of the magnitude of the
    nudged quotient: ``F = |yh|/quantum - floor(|yh|/quantum)``, ``1 - 2**-53`` (a step
    down) when ``F == 0`` and the exact magnitude is below ``|yh|``, ``2**-60`` when
    ``F == 0`` and it is above; truncated to a multiple of ``2**-sr_bits``."""
    yh = x / s
    if math.isinf(yh):
        return qmax if yh > 0 else qmin
    exact = Fraction(x) / Fraction(s)
    negative = math.copysign(1.0, yh) < 0 or (yh == 0 and exact < 0)
    limit = -qmin if negative else qmax
    sm = (abs(exact) > abs(Fraction(yh))) - (abs(exact) < abs(Fraction(yh)))
    m = abs(Fraction(yh)) / Fraction(quantum)
    n = math.floor(m)
    frac = m - n
    if frac == 0 and sm < 0 and m > 0:
        n, frac = n - 1, 1 - Fraction(1, 2**53)
    elif frac == 0 and sm > 0:
        frac = Fraction(1, 2**60)
    bits = 53 if sr_bits is None else sr_bits
    if sr_bits is not None:
        frac = Fraction(math.floor(frac * 2**sr_bits), 2**sr_bits)
    up = Fraction(draw(seed, index, bits), 2**bits) < frac
    k = min(n + up, limit)
    return -k if negative else k
