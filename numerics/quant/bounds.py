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
and the bound is ``inf``; non-finite inputs also get ``inf``.

Evaluation (never below the exact bound)
----------------------------------------
The returned float64 is the exact value of the table's formula rounded *up* to a float64 (it
is the formula's value itself whenever that is a float64).  ``u*|x|``, ``S*sub/2``,
``S*quantum/2`` are products by powers of two, exact unless they underflow; where one does
(checked by scaling back), it is replaced by the next float64 up.  ``S*max`` (``S*limit``) is
checked for exactness with TwoProduct on the frexp significands (exact whenever ``S`` has at
most ``53 - p`` significant bits, as every scale of :func:`numerics.quant.quantize` has);
where it is exact, ``|x| > S*max`` is decided exactly and ``|x| - S*max`` is rounded up using
TwoSum's error term.  Where ``S*max`` is inexact (an arbitrary float64 ``S`` given to this
function) or underflows, an element with ``|x|`` below the float64 under ``fl(S*max)`` is
surely inside the range; every other such element's bound is computed in exact rational
arithmetic (:class:`fractions.Fraction`) and rounded up: cancellation in ``|x| - S*max`` and
underflow with subnormal scales cannot push the result below the true error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from numerics import eft
from numerics.dtypes import is_torch_tensor
from numerics.quant._core import (
    ElementFormat,
    IntFormat,
    as_element_format,
    as_real_array,
    check_signed_elements,
    signed_limit,
)
from numerics.rounding import check_overflow, check_rounding

__all__ = ["element_bound"]

_NEAREST = ("rne", "rna")


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
        float64 bounds, each the exact bound of the claims rounded up to a float64 (module
        docstring); ``inf`` where nothing finite is promised.

    Examples
    --------
    >>> from numerics.formats import get_format
    >>> round(float(element_bound(np.array([1.1]), np.array([1.0]), get_format("e4m3fn"))[0]), 12)
    0.06875
    >>> float(element_bound([4e-323], [5e-324], "e2m3fn")[0])  # 8 > 7.5: saturates by 2**-1075
    5e-324
    """
    fmt = as_element_format(fmt, name="fmt")
    check_signed_elements(fmt, "fmt")
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
    nearest = rounding in _NEAREST
    finite = np.isfinite(x) & np.isfinite(s)
    a = np.where(finite, np.abs(x), 0.0)
    s = np.where(finite, s, 0.0)
    ieee = overflow == "ieee" and not isinstance(fmt, IntFormat)
    # the formula: |x| - S*limit beyond the range, else max(rel*|x|, S*step); rel and step
    # are powers of two (rel = 0 for integers), limit has at most 24 significant bits
    limit = signed_limit(fmt, x)
    # (as exponents: half of binary64's smallest subnormal, 2**-1075, is no float64)
    if isinstance(fmt, IntFormat):
        step, rel = _exponent(fmt.quantum) - (1 if nearest else 0), None
    else:
        sub = fmt.smallest_subnormal if fmt.subnormals else fmt.smallest_normal
        step = _exponent(sub) - (1 if nearest and fmt.subnormals else 0)
        rel = _exponent(fmt.unit_roundoff) + (0 if nearest else 1)
    top, top_exact = _product(s, limit)
    inner = _product_up(s, step)
    if rel is not None:
        inner = np.maximum(inner, _product_up(a, rel))
    over = a > top
    sat = np.inf if ieee else _difference_up(a, np.where(over, top, 0.0))
    bound = np.where(over, sat, inner)
    bound = np.where(s == 0, a, bound)
    # S*limit inexact (an arbitrary float64 scale) or underflowed, and |x| not below the
    # float64 just under fl(S*limit) (below it, |x| < S*limit for sure and the bound is
    # inner): decide and subtract in exact rationals
    near = a > np.nextafter(top, 0.0)
    limits = np.broadcast_to(limit, x.shape)
    for i in np.flatnonzero(finite & ~top_exact & (s != 0) & near):
        bound.flat[i] = _exact_bound(float(a.flat[i]), float(s.flat[i]), float(limits.flat[i]),
                                     step, rel, ieee)
    return np.where(finite, bound, np.inf)


def _product(v: np.ndarray, c: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """``(fl(v*c), exact)`` for ``v, c >= 0``: ``exact`` where the float64 product is ``v*c``.

    Overflow to inf also counts as exact: the true product then exceeds every finite ``|x|``,
    which is all the callers compare it with.  The test: with ``v = mv 2**ev`` and ``c = mc
    2**ec`` (frexp, significands in ``[1/2, 1)``), TwoProduct gives ``mv*mc = p + e`` exactly
    (no underflow there), and ``fl(v*c) = v*c`` iff ``e = 0`` and ``fl(v*c) 2**-(ev+ec) = p``
    (no bit lost to underflow).
    """
    c_arr = np.broadcast_to(np.asarray(c, dtype=np.float64), v.shape)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        prod = v * c_arr
        mv, ev = np.frexp(v)
        mc, ec = np.frexp(c_arr)
        p, e = eft.two_prod(mv, mc)
        back = np.ldexp(prod, -(ev.astype(np.int64) + ec.astype(np.int64)))
    exact = ((e == 0) & (back == p)) | np.isinf(prod)
    return prod, exact


def _exponent(c: float) -> int:
    """``k`` with ``c == 2**k`` (``c`` a positive power of two: every step and unit
    roundoff of an element format)."""
    mantissa, k = math.frexp(c)
    if mantissa != 0.5:
        raise ValueError(f"Got {c!r} as a step of the element format, but it must be a "
                         "power of two")
    return k - 1


def _product_up(v: np.ndarray, k: int) -> np.ndarray:
    """The smallest float64 ``>= v * 2**k`` for ``v >= 0``.

    ``ldexp(v, k)`` is ``v * 2**k`` rounded to nearest (exact unless it underflows or
    overflows), and scaling it back by ``2**-k`` is exact when it underflowed (the
    product then lies below ``2**-1022``, and ``v`` is a float64), so a result below ``v``
    says it rounded down: then the next float64 up is the answer, else the product
    itself (an overflow gives inf, which scales back to inf).
    """
    with np.errstate(over="ignore", under="ignore"):
        prod = np.ldexp(v, k)
        return np.where(np.ldexp(prod, -k) < v, np.nextafter(prod, np.inf), prod)


def _difference_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A float64 ``>= a - b`` for finite ``a >= b >= 0``: ``fl(a - b)``, moved up one float64
    where TwoSum's error term says it fell below."""
    d, e = eft.two_sum(a, -b)
    with np.errstate(over="ignore"):  # (nextafter(max, inf) = inf, where it is not chosen)
        return np.where(e > 0, np.nextafter(d, np.inf), d)


def _round_up(value: Fraction) -> float:
    """The smallest float64 ``>= value`` (inf beyond the float64 range)."""
    try:
        f = float(value)
    except OverflowError:
        return math.inf
    return math.nextafter(f, math.inf) if Fraction(f) < value else f


def _exact_bound(a: float, s: float, limit: float, step: int, rel: int | None,
                 ieee: bool) -> float:
    """The bound of one element in exact rational arithmetic, rounded up (``step`` and
    ``rel`` as exponents of two; ``rel`` None for an integer format)."""
    fa, fs = Fraction(a), Fraction(s)
    top = fs * Fraction(limit)
    if fa > top:
        return math.inf if ieee else _round_up(fa - top)
    relative = Fraction(0) if rel is None else Fraction(2) ** rel * fa
    return _round_up(max(fs * Fraction(2) ** step, relative))


def _float64(v: object, name: str) -> np.ndarray:
    """``v`` as float64; Python ints beyond the float64 range become +-inf (their bound is
    inf: no finite bound is promised there)."""
    if is_torch_tensor(v):
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
