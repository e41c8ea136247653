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

from numerics.quant._core import ElementFormat, IntFormat, as_element_format
from numerics.rounding import check_overflow, check_rounding

__all__ = ["element_bound"]

_NEAREST = ("rne", "rna")
_MARGIN = 1.0 + 2.0**-40


def element_bound(x: object, scale: object, fmt: ElementFormat | str, *,
                  rounding: str = "rne", overflow: str = "saturate") -> np.ndarray:
    """Proven bound on ``|S*q(x/S) - x|`` for each element (same shape as ``x``).

    Parameters
    ----------
    x : array_like
        The input (real; Python ints beyond the float64 range count as infinite).
    scale : array_like
        The effective scale ``S >= 0`` of each element, broadcastable to ``x``.
    fmt : str, Format or IntFormat
        Element format (a name such as ``"e4m3fn"`` or ``"int8"``, or an instance).
    rounding, overflow : str
        The rounding and overflow rules used for the elements (validated: an unknown name
        raises ValueError).

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
    fmt = as_element_format(fmt, name="fmt")
    if not isinstance(rounding, str):
        raise TypeError(f"Got {rounding=}, but it must be a rounding mode name")
    check_rounding(rounding)
    if not isinstance(overflow, str):
        raise TypeError(f"Got {overflow=}, but it must be an overflow rule name")
    check_overflow(overflow)
    x = _float64(x, "x")
    try:
        s = np.broadcast_to(_float64(scale, "scale"), x.shape)
    except ValueError:
        raise ValueError(f"Got scale of shape {_float64(scale, 'scale').shape}, but it must "
                         "broadcast to "
                         f"the shape of x, {x.shape}") from None
    if np.any(s < 0):
        raise ValueError("Got a negative scale, but scales must be >= 0")
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


def _float64(v: object, name: str) -> np.ndarray:
    """``v`` as float64; Python ints beyond the float64 range become +-inf (their bound is
    inf: no finite bound is promised there)."""
    if type(v).__module__.split(".")[0] == "torch":
        from numerics.quant.quantized import as_real_array

        v = as_real_array(v, name=name)
    try:
        arr = np.asarray(v)
    except ValueError:
        raise ValueError(f"Got a ragged nested sequence for {name}, but it must be a "
                         "rectangular array") from None
    if arr.dtype == object:
        flat = [_big_float(item, name) for item in arr.ravel()]
        return np.array(flat, dtype=np.float64).reshape(arr.shape)
    if arr.dtype.kind in "cUSMmb":
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be real")
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be real") from None


def _big_float(item: object, name: str) -> float:
    if isinstance(item, bool) or not isinstance(item, (int, float, np.integer, np.floating)):
        raise TypeError(f"Got {name} containing {item!r}, but it must be real numbers")
    try:
        return float(item)
    except OverflowError:
        return float("inf") if item > 0 else float("-inf")
