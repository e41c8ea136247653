"""Error bounds for chains of elementwise operations, with the underflow term.

The model and every claim are proved in ``proofs/tolerances.md`` (claims
TOL1-TOL5, each tested by id in ``tests/test_testing_tolerances.py``).  With
``p`` the precision of a format, ``emin`` its smallest normal exponent:

* unit roundoff ``u = 2**-p`` for round to nearest, ``2**(1-p)`` for the
  other modes;
* underflow term ``eta = 2**(emin - p)`` for round to nearest (half the
  subnormal spacing), ``2**(emin - p + 1)`` for the others; ``2**emin`` in
  every mode for formats without zero (e8m0fnu), which round every
  ``|x| < 2**emin`` to ``+-2**emin``;
* ``gamma_k(u) = k u / (1 - k u)`` (``inf`` once ``k u >= 1``).

One rounding of a real ``x`` (no overflow; ``x > 0`` in unsigned formats,
where zero and negative values encode to NaN) errs by at most
``max(u |x|, eta)`` (TOL1).  A chain of ``K`` multiplicative roundings in a
work format ``W`` followed by a cast to ``F`` (through a power-of-two scale
``s``) errs by at most ``(gamma_K(u_W) + u_F (1 + gamma_K(u_W))) |y| + eta_F s``
(TOL3), which :func:`elementwise_bound` evaluates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numerics.dtypes import MAX_DIMS
from numerics.formats import Format, as_format
from numerics.testing._intake import as_array

__all__ = ["elementwise_bound", "eta", "gamma", "rmsnorm_roundings", "softmax_bound",
           "unit_roundoff"]

_NEAREST = ("rne", "rna")
_ROUNDINGS = ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")
_INFLATE = 1 + 2**-40          # covers the float64 evaluation of the bounds themselves


def _check_rounding(rounding: object, name: str = "rounding") -> str:
    if not isinstance(rounding, str) or rounding not in _ROUNDINGS:
        raise ValueError(f"Got {name}={rounding!r}, but the only valid values are "
                         + ", ".join(repr(r) for r in _ROUNDINGS))
    return rounding


def _real_values(x: Any, name: str) -> np.ndarray:
    """``x`` as a float64 array: real numbers only (numpy, torch, Python, Fraction, Decimal,
    nested lists); TypeError naming ``name`` for None, text, complex, bool and datetime
    inputs, ValueError for ragged ones and for more than ``MAX_DIMS`` dimensions."""
    arr = as_array(x, name)
    if arr.dtype.kind not in "fiuV":  # (a torch bool tensor comes through as_array as it is)
        raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must hold real numbers")
    if arr.ndim > MAX_DIMS:
        raise ValueError(f"Got {name} with {arr.ndim} dimensions, but at most {MAX_DIMS} are "
                         "supported")
    return arr.astype(np.float64)


def _check_axis(axis: object, ndim: int) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"Got {axis=!r}, but it must be an int")
    if not -ndim <= axis < ndim:
        raise ValueError(f"Got {axis=!r}, but x has {ndim} axes: it must be an int in "
                         f"[{-ndim}, {ndim - 1}]")
    return int(axis)


def unit_roundoff(fmt: Format | str, rounding: str = "rne") -> float:
    """``2**-p`` for round to nearest, ``2**(1 - p)`` otherwise.

    Examples
    --------
    >>> unit_roundoff("bfloat16"), unit_roundoff("bfloat16", "rtz")
    (0.00390625, 0.0078125)
    """
    f = as_format(fmt)
    p = f.precision
    return math.ldexp(1.0, -p if _check_rounding(rounding) in _NEAREST else 1 - p)


def eta(fmt: Format | str, rounding: str = "rne") -> float:
    """The underflow term: the largest error of one rounding below the normal range.

    ``2**(emin - p)`` for round to nearest (half the subnormal spacing
    ``2**(emin - p + 1)``), ``2**(emin - p + 1)`` for the other modes.  A
    format without zero (``subnormals=False``, e8m0fnu) has no value below
    ``2**emin``: it rounds every ``|x| < 2**emin`` to ``+-2**emin`` (zero to
    ``+2**emin``; NaN in unsigned formats, which hold no zero or negative
    value), an error of up to ``2**emin`` in every mode (claim TOL1).

    Examples
    --------
    >>> eta("bfloat16") == 2.0**-134                # half of the 2**-133 spacing
    True
    >>> eta("e4m3fn")                               # 2**(-6 - 4)
    0.0009765625
    >>> eta("e8m0fnu") == 2.0**-127                 # 1e-45 rounds up to 2**-127
    True
    >>> eta("binary64")                             # 2**-1075, rounded up to a float
    5e-324
    """
    f = as_format(fmt)
    nearest = _check_rounding(rounding) in _NEAREST
    if not f.has_zero:
        return math.ldexp(1.0, f.emin)
    # binary64's 2**-1075 is below the float range: round the bound up to 2**-1074
    return max(math.ldexp(1.0, f.emin - f.precision + (0 if nearest else 1)), math.ulp(0.0))


def gamma(k: int, u: float) -> float:
    """``k u / (1 - k u)``, or ``inf`` when ``k u >= 1`` (Higham's gamma_k), for an int
    ``k >= 0`` and a unit roundoff ``u``, a finite real number ``>= 0``.

    Examples
    --------
    >>> gamma(2, 2.0**-8) == 2 * 2.0**-8 / (1 - 2 * 2.0**-8)
    True
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"Got {k=!r}, but it must be an int >= 0")
    if isinstance(u, (bool, np.bool_)) or not isinstance(u, (int, float, np.integer, np.floating)) \
            or not 0 <= u < math.inf:
        raise ValueError(f"Got {u=!r}, but it must be a finite real number >= 0")
    ku = k * u
    return math.inf if ku >= 1 else ku / (1 - ku)


def rmsnorm_roundings(n: int) -> int:
    """Work-format roundings of RMSNorm ``x_i w_i / sqrt(mean(x**2) + eps)`` (TOL4).

    ``n`` for the sum of squares (products and additions, any order), then the
    mean, the ``+ eps``, the square root, the reciprocal, the product with
    ``x_i`` and the product with ``w_i``: ``n + 6`` (a division ``x_i / r``
    instead of reciprocal and product needs one fewer).

    Examples
    --------
    >>> rmsnorm_roundings(4096)
    4102
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"Got {n=!r}, but it must be an int >= 1")
    return int(n) + 6


def elementwise_bound(
    exact: Any,
    fmt: Format | str,
    *,
    work_roundings: int = 0,
    work_fmt: Format | str = "binary32",
    scale: Any = 1.0,
    rounding: str = "rne",
    work_rounding: str = "rne",
) -> np.ndarray:
    """Absolute error bound of a chain of roundings ending in a cast to ``fmt`` (TOL3).

    ``|y_hat - y| <= (g + u (1 + g)) |y| + eta s`` elementwise, with
    ``g = gamma_K(u_W)``, ``K = work_roundings``, ``u`` and ``eta`` the unit
    roundoff and underflow term of ``fmt`` (:func:`unit_roundoff`,
    :func:`eta`), ``s = scale`` the power-of-two scale of a scaled cast
    (``y_hat = s * round(y_work / s)``).

    Conditions: each of the ``K`` work roundings multiplies the exact value
    by ``(1 + delta)**rho`` with ``|rho| <= 1`` (products, quotients, square
    roots, sums of same-signed terms), none underflows in the work format,
    and nothing overflows.  ``work_roundings=0`` is a plain (scaled) cast: TOL1/TOL2.
    Where ``(1 + g) |y| / s`` exceeds ``fmt``'s largest finite value (or ``(1 + g) |y|``
    the work format's), the cast may overflow and the bound is ``inf``: nothing finite is
    promised there.

    Parameters
    ----------
    exact : array_like
        The exact results ``y``: real numbers (float64 is fine: the bound is inflated
        by ``1 + 2**-40`` to cover its own evaluation); complex, bool, text and
        datetime inputs raise TypeError.
    fmt : Format or str
        The format of the final result.
    work_roundings : int
        ``K``, e.g. :func:`rmsnorm_roundings` ``(n)``.
    work_fmt : Format or str
        The format of the intermediate computation.
    scale : float or array_like
        The power-of-two scale ``s`` of a scaled cast (1 for a plain cast): positive
        powers of two, broadcastable to ``exact``.
    rounding, work_rounding : str
        Rounding modes of the final cast and of the work format.

    Examples
    --------
    >>> import numpy as np
    >>> elementwise_bound(np.array([1.0, 0.0]), "bfloat16")          # u |y| + eta
    array([3.90625000e-03, 4.59177481e-41])
    >>> b = elementwise_bound([3.0], "e4m3fn", scale=2.0**-6)         # scaled cast
    >>> round(float(b[0] / 3.0), 4)                                   # ~ u = 2**-4
    0.0625
    """
    f, w = as_format(fmt), as_format(work_fmt, arg="work_fmt")
    _check_rounding(rounding)
    _check_rounding(work_rounding, "work_rounding")
    if isinstance(work_roundings, bool) or not isinstance(work_roundings, (int, np.integer)) \
            or work_roundings < 0:
        raise ValueError(f"Got {work_roundings=!r}, but it must be an int >= 0")
    y = np.abs(_real_values(exact, "exact"))
    s = _real_values(scale, "scale")
    try:
        np.broadcast_shapes(y.shape, s.shape)
    except ValueError:
        raise ValueError(f"Got scale of shape {s.shape}, but it must broadcast to the shape "
                         f"of exact, {y.shape}") from None
    if not np.all(np.isfinite(s)) or np.any(s <= 0) or np.any(np.frexp(s)[0] != 0.5):
        raise ValueError(f"Got {scale=!r}, but a scale must be a positive power of two")
    g = gamma(int(work_roundings), unit_roundoff(w, work_rounding))
    u = unit_roundoff(f, rounding)
    with np.errstate(over="ignore", invalid="ignore"):
        out = ((g + u * (1 + g)) * y + eta(f, rounding) * s) * _INFLATE
        # the cast sees the work value, up to (1 + g) |y|: past max it may overflow
        top = y * (1 + g)
        over = (top / s > f.max) | ((top > w.max) if work_roundings else False)
    return np.where(np.isnan(out) | over, np.inf, out)


def softmax_bound(x: Any, fmt: Format | str, *, axis: int = -1,
                  work_fmt: Format | str = "binary32", exp_error: float | None = None,
                  rounding: str = "rne") -> np.ndarray:
    """Absolute error bound of softmax computed in ``work_fmt`` and cast to ``fmt`` (TOL5).

    For ``y_i = exp(x_i - m) / sum_j exp(x_j - m)`` (``m = max x``) computed
    as ``d_i = fl(x_i - m)``, ``e_i = exp_W(d_i)`` (relative error at most
    ``exp_error``, default ``8 u_W``: eight units of ``W``'s roundoff, 4 ulps;
    numpy's float32 ``exp`` measured at most 3.57 on one AVX-512 machine),
    ``S = sum e_j`` in any order and ``fl(e_i / S)``, then cast to ``fmt``::

        work_i = r y_i + (1 + r) nu / (1 - nu) + eta_W (1 + u_W) / (A (1 - nu)) + eta_W
        |y_hat_i - y_i| <= work_i + u_F (y_i + work_i) + eta_F

    with ``r = max(hi - 1, 1 - lo)``, ``hi = exp(2 D u_W) (1 + e) (1 + u_W) /
    ((1 - e) (1 - gamma_{n-1}))``, ``lo = exp(-2 D u_W) (1 - e) (1 - u_W) /
    ((1 + e) (1 + gamma_{n-1}))``, ``A = exp(-D u_W) (1 - e) (1 - gamma_{n-1})``,
    ``nu = n eta_W (1 + gamma_{n-1}) / A``, ``D = max_j |x_j - m|`` and ``n``
    the length of the axis (the ``eta_W`` terms are the underflow of ``exp``
    and of the division).  ``x`` must hold the exact (work-format) inputs: finite
    real numbers (complex, bool, text and datetime inputs raise TypeError), with
    ``axis`` an int in ``[-x.ndim, x.ndim)``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[0.0, 1.0, 2.0]], dtype=np.float32)
    >>> b = softmax_bound(x, "bfloat16")
    >>> bool((b < 2.0**-8).all())
    True
    """
    f, w = as_format(fmt), as_format(work_fmt, arg="work_fmt")
    xs = _real_values(x, "x")
    if xs.ndim == 0:
        raise ValueError(f"Got x={x!r}, a scalar, but softmax_bound needs an array with the "
                         "axis the softmax runs along")
    if not np.all(np.isfinite(xs)):
        raise ValueError("Got x with NaN or infinite elements; softmax_bound needs finite x")
    axis = _check_axis(axis, xs.ndim)
    xs = np.moveaxis(xs, axis, -1)
    n = xs.shape[-1]
    if n == 0:
        raise ValueError("Got x with an empty axis")
    uw, uf = unit_roundoff(w), unit_roundoff(f, rounding)
    if exp_error is not None and (isinstance(exp_error, (bool, np.bool_)) or not isinstance(
            exp_error, (int, float, np.integer, np.floating))):
        raise TypeError(f"Got {exp_error=!r}, but it must be None or a real number in [0, 1)")
    e = 8 * uw if exp_error is None else float(exp_error)
    if not 0 <= e < 1:
        raise ValueError(f"Got {exp_error=!r}, but it must be in [0, 1)")
    m = xs.max(axis=-1, keepdims=True)
    d = (m - xs).max(axis=-1, keepdims=True)
    g = gamma(n - 1, uw)
    ew = eta(w)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        hi = np.exp(2 * d * uw) * (1 + e) * (1 + uw) / ((1 - e) * (1 - g))
        lo = np.exp(-2 * d * uw) * (1 - e) * (1 - uw) / ((1 + e) * (1 + g))
        r = np.maximum(hi - 1, 1 - lo)
        a_lo = np.exp(-d * uw) * (1 - e) * (1 - g)
        nu = n * ew * (1 + g) / a_lo
        ex = np.exp(xs - m)
        y = ex / ex.sum(axis=-1, keepdims=True)
        work = (r * y + (1 + r) * nu / (1 - nu) + ew * (1 + uw) / (a_lo * (1 - nu)) + ew)
        work = np.where(nu < 1, work, np.inf)
        out = (work + uf * (y + work) + eta(f, rounding)) * _INFLATE
    out = np.where(np.isnan(out), np.inf, out)
    return np.moveaxis(out, -1, axis)
