"""Error report of a quantized tensor."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from numerics.quant._core import signed_limit
from numerics.quant.quantized import Quantized, as_float_array

__all__ = ["ErrorReport", "error_report"]


@dataclass(frozen=True)
class ErrorReport:
    """Summary of ``x - dequantize(q)`` over the elements where both are finite.

    Attributes
    ----------
    mse : float
        Mean squared error (computed from scaled sums: it under- or overflows only where the
        true mean square lies outside the float64 range).
    sqnr_db : float
        ``10 log10(sum x**2 / sum err**2)``; ``inf`` exactly when the error is zero,
        ``-inf`` when every ``x`` is zero and the error is not.  Scale-free: each sum is taken
        over its terms divided by a power of two near its own largest term, so neither sum
        under- or overflows however small the errors are against ``x`` (the result is
        within about ``1e-12`` dB of the exact value).
    max_abs_error : float
        Largest ``|err|``.
    fraction_saturated : float
        Fraction of finite elements clipped by saturation: ``S > 0`` and ``|x| > S * limit``
        with ``limit`` the element format's largest magnitude on the sign of ``x`` (``S``
        the element's scale).  Elements of a zero-scale block (flushed, e.g. an NVFP4
        block whose scale underflows) count as flushed, not saturated.
    fraction_flushed : float
        Fraction of finite elements with ``x != 0`` that dequantize to 0.
    count : int
        Number of elements compared.
    """

    mse: float
    sqnr_db: float
    max_abs_error: float
    fraction_saturated: float
    fraction_flushed: float
    count: int

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a plain dict."""
        return asdict(self)


def error_report(x: object, q: Quantized) -> ErrorReport:
    """MSE, SQNR (dB), max abs error, fraction saturated and flushed to zero.

    Parameters
    ----------
    x : array_like
        The original tensor.
    q : Quantized
        Its quantization, of ``x``'s shape.

    Returns
    -------
    ErrorReport
        The summary (every field NaN and ``count`` 0 where no element is finite on
        both sides).

    Raises
    ------
    TypeError
        If ``q`` is not a :class:`Quantized`, or ``x`` not a real numeric array.
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> from numerics.quant import quantize
    >>> x = np.array([0.0, 1e-9, 0.5, 1.0])
    >>> r = error_report(x, quantize(x, "int8"))
    >>> r.fraction_flushed, r.max_abs_error < 0.004
    (0.25, True)
    >>> x = np.array([448.0, 1e-170])  # the error 1e-170 is 1e-172 times the signal
    >>> round(error_report(x, quantize(x, "e4m3fn", scale_format="e8m0fnu")).sqnr_db, 3)
    3453.026
    """
    if not isinstance(q, Quantized):
        raise TypeError(f"Got q={q!r}, expected a numerics.quant.Quantized")
    xf = as_float_array(x)
    if xf.shape != q.shape:
        raise ValueError(f"Got x of shape {xf.shape}, but q has shape {q.shape}")
    d = q.dequantize()
    ok = np.isfinite(xf) & np.isfinite(d)
    n = int(ok.sum())
    if n == 0:
        nan = float("nan")
        return ErrorReport(nan, nan, nan, nan, nan, 0)
    err = (d - xf)[ok]
    xs = xf[ok]
    sig_m, sig_e = _scaled_sum_of_squares(xs)
    noise_m, noise_e = _scaled_sum_of_squares(err)
    if noise_m == 0:
        sqnr = float("inf")
    elif sig_m == 0:
        sqnr = float("-inf")
    else:  # sum x**2 / sum err**2 = (sig_m / noise_m) * 2**(sig_e - noise_e)
        sqnr = 10.0 * (math.log10(sig_m / noise_m) + (sig_e - noise_e) * math.log10(2.0))
    with np.errstate(over="ignore", under="ignore"):  # a mean square beyond float64's range
        mse = float(np.ldexp(noise_m / n, noise_e))
    limit = signed_limit(q.element_format, xs)
    s = q.scale_per_element()[ok]
    sat = (s > 0) & (np.abs(xs) > s * limit)  # S * limit is exact (claim Q10)
    flushed = (xs != 0) & (d[ok] == 0)
    return ErrorReport(mse=mse, sqnr_db=sqnr, max_abs_error=float(np.max(np.abs(err))),
                       fraction_saturated=float(np.mean(sat)),
                       fraction_flushed=float(np.mean(flushed)), count=n)


def _scaled_sum_of_squares(v: np.ndarray) -> tuple[float, int]:
    """``(m, e)`` with ``sum v**2 = m * 2**e`` up to rounding, ``m`` in ``[1/4, len(v)]``.

    The terms are divided by ``2**k`` with ``2**(k-1) <= max |v| < 2**k`` (exact, or a
    rounding far below the result's last bit for terms ``2**-537`` times smaller than the
    largest), so the largest squared term lies in ``[1/4, 1)`` and nothing under- or
    overflows; ``(0.0, 0)`` when ``v`` is all zero.
    """
    top = float(np.max(np.abs(v), initial=0.0))
    if top == 0:
        return 0.0, 0
    k = int(np.frexp(top)[1])
    with np.errstate(under="ignore"):
        scaled = np.ldexp(v, -k)
        return float(np.sum(scaled * scaled)), 2 * k
