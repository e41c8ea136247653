"""Per-element error bounds of scaled quantization (proofs/quantization_bounds.md).

Every quantizer in :mod:`numerics.quant` rounds ``y = x / S`` onto an element grid and
dequantizes to ``S * q(y)``, with ``S`` the element's effective scale (tensor, channel, block,
MX ``2**E`` or NVFP4 ``s_block * s_tensor``).  :func:`element_bound` evaluates the bound that the
proofs establish for ``|S*q(y) - x|``, in the units of ``x``:

=================  =======================================  ==========================
mode               ``|y| <= max`` (normal / below normal)   ``|y| > max``
=================  =======================================  ==========================
rne, rna           ``max(u*|x|, S*sub/2)``   (Q1, Q2)       ``|x| - S*max``  (Q5)
rtz, ru, rd, rto,  ``max(2u*|x|, S*sub)``    (Q3, Q4)       ``|x| - S*max``  (Q5)
sr
int, nearest       ``S*quantum/2``           (Q9)           ``|x| - S*limit`` (Q9)
int, other modes   ``S*quantum``             (Q9)           ``|x| - S*limit`` (Q9)
=================  =======================================  ==========================

``u = 2**-p``; ``sub`` is the smallest positive subnormal (the smallest normal for formats
without subnormals).  Under ``overflow="ieee"`` an element beyond ``max`` may become inf/NaN
and the bound is ``inf``; non-finite inputs also get ``inf``.  The float64 evaluation is made
an upper bound by a relative margin of ``2**-40``.
"""

from __future__ import annotations

import numpy as np

from numerics.quant._core import ElementFormat, IntFormat

__all__ = ["element_bound"]

_NEAREST = ("rne", "rna")
_MARGIN = 1.0 + 2.0**-40


def element_bound(x: np.ndarray, scale: np.ndarray, fmt: ElementFormat, *,
                  rounding: str = "rne", overflow: str = "saturate") -> np.ndarray:
    """Proven bound on ``|S*q(x/S) - x|`` for each element (same shape as ``x``).

    Parameters
    ----------
    x : ndarray
        The input, float64.
    scale : ndarray
        The effective scale ``S >= 0`` of each element, broadcastable to ``x``.
    fmt : Format or IntFormat
        Element format.
    rounding, overflow : str
        The rounding and overflow rules used for the elements.

    Returns
    -------
    ndarray
        float64 bounds; ``inf`` where nothing finite is promised.

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> round(float(element_bound(np.array([1.1]), np.array([1.0]), get_format("e4m3fn"))[0]), 12)
    0.06875
    """
    x = np.asarray(x, dtype=np.float64)
    s = np.broadcast_to(np.asarray(scale, dtype=np.float64), x.shape)
    a = np.abs(x)
    nearest = rounding in _NEAREST
    with np.errstate(invalid="ignore", over="ignore"):
        if isinstance(fmt, IntFormat):
            limit = np.where(np.signbit(x), -fmt.qmin, fmt.qmax) * fmt.quantum
            inner = s * fmt.quantum * (0.5 if nearest else 1.0)
            top = s * limit
        else:
            u = fmt.unit_roundoff
            sub = fmt.smallest_subnormal if fmt.subnormals else fmt.smallest_normal
            if nearest:
                inner = np.maximum(u * a, s * (sub / 2 if fmt.subnormals else sub))
            else:
                inner = np.maximum(2 * u * a, s * sub)
            top = s * fmt.max
        over = a > top
        bound = np.where(over, a - top, inner)
        if overflow == "ieee" and not isinstance(fmt, IntFormat):
            bound = np.where(over, np.inf, bound)
        bound = np.where(s == 0, a, bound)
        bound = np.where(np.isfinite(x) & np.isfinite(s), bound * _MARGIN, np.inf)
    return bound
