"""Error report of a quantized tensor."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from numerics.quant.quantized import Quantized, as_float_array

__all__ = ["ErrorReport", "error_report"]


@dataclass(frozen=True)
class ErrorReport:
    """Summary of ``x - dequantize(q)`` over the elements where both are finite.

    Attributes
    ----------
    mse : float
        Mean squared error.
    sqnr_db : float
        ``10 log10(sum x**2 / sum err**2)``; ``inf`` when the error is zero.
    max_abs_error : float
        Largest ``|err|``.
    fraction_saturated : float
        Fraction of finite elements with ``|x| > S * max_elem`` (clipped by saturation).
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
        Its quantization.

    Examples
    --------
    >>> from numerics.quant import quantize
    >>> x = np.array([0.0, 1e-9, 0.5, 1.0])
    >>> r = error_report(x, quantize(x, "int8"))
    >>> r.fraction_flushed, r.max_abs_error < 0.004
    (0.25, True)
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
    with np.errstate(over="ignore", under="ignore"):  # (the mean square itself may)
        noise = float(np.sum(err * err))
    # the ratio from sums scaled by a power of two near the largest magnitude (the
    # unscaled sums of squares under- or overflow for values beyond about 1e+-154)
    top = max(float(np.max(np.abs(xs))), float(np.max(np.abs(err))))
    k = int(np.frexp(top)[1]) if top > 0 else 0
    xs_k, err_k = np.ldexp(xs, -k), np.ldexp(err, -k)
    sig_k, noise_k = float(np.sum(xs_k * xs_k)), float(np.sum(err_k * err_k))
    if noise_k == 0 and not np.any(err):
        sqnr = float("inf")
    elif sig_k == 0:
        sqnr = float("-inf")
    else:
        sqnr = 10.0 * float(np.log10(sig_k / noise_k))
    s = q.scale_per_element()[ok]
    sat = np.abs(xs) > s * q.element_format.max
    flushed = (xs != 0) & (d[ok] == 0)
    return ErrorReport(mse=noise / n, sqnr_db=sqnr, max_abs_error=float(np.max(np.abs(err))),
                       fraction_saturated=float(np.mean(sat)),
                       fraction_flushed=float(np.mean(flushed)), count=n)
