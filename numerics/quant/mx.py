"""OCP Microscaling (MX v1.0) block formats.

Conversion (OCP MX v1.0 section 6.3; Rouhani et al., arXiv 2310.10537, Algorithm 1)
--------------------------------------------------------------------------------
For each block of 32 consecutive elements along ``axis``:

1. ``amax = max |V_i|`` and ``E = floor(log2(amax)) - emax_elem``, with ``floor(log2)`` taken
   *exactly* from the float64 exponent field (``np.frexp``), never from a rounded ``log2``:
   ``amax = 16*(1 - 2**-24)`` gives ``floor(log2) = 3``, where a float32 ``log2`` rounds to 4
   (gfloat's ``compute_scale_amax`` fed float32 gets the scale one binade too high).
   ``emax_elem``: E5M2 15, E4M3 8, E3M2 4, E2M3 2, E2M1 2, INT8 0.
2. The shared scale is ``X = 2**E`` stored in E8M0.  As in Microsoft's microxcaling reference
   (``mx/mx_ops.py``, ``_shared_exponents``): ``E < -127`` is clamped to ``-127``; ``E > 127``
   makes the scale NaN (E8M0 ``0xFF``).
3. ``P_i = quantize(V_i / X)``: round to nearest even, normals beyond the element maximum
   clamped to it with the sign kept (spec 6.3).  ``V_i / X`` is exact (``X`` is a power of two).

Special blocks (each choice and its source)
-------------------------------------------
* All-zero block: ``amax = 0`` has no logarithm; the scale is the smallest, ``2**-127`` (code
  0x00), and the elements are zeros with their signs (microxcaling adds a tiny number to
  ``amax`` and clamps to -127; gfloat's ``compute_scale_amax`` returns ``2**-127``).
* A NaN or an infinity anywhere in the block: the scale is NaN (``0xFF``) and the whole block
  dequantizes to NaN, the element codes are 0 (microxcaling: ``log2`` of a NaN/inf amax is
  NaN/inf, above 127, hence NaN; OCP MX v1.0: a NaN scale makes every element of the block
  NaN whatever its code).  The spec leaves inf elements unclamped in formats that have inf;
  since their block's ``amax`` is inf the spec's own scale is not representable, and we
  follow the reference implementation.
* MXINT8 elements are two's-complement int8 scaled by ``2**-6`` with the spec's range
  ``[-2, 127/64]`` (gfloat ``format_info_ocp_int8``; microxcaling clamps symmetrically to
  ``+-127/64``, which differs only for elements that round to ``-2``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from numerics.formats import Format, as_format
from numerics.quant._core import (
    INT_FORMATS,
    ElementFormat,
    encode_values,
    round_elements,
)
from numerics.quant.scaled import (
    Quantized,
    as_float_array,
    block_reduce_amax,
    broadcast_blocks,
    check_block,
    normalize_axis,
)

__all__ = ["MX_FORMATS", "mx", "mx_element_format"]

#: MX names -> (element format name, emax_elem).
MX_FORMATS: dict[str, tuple[str, int]] = {
    "mxfp8_e4m3": ("e4m3fn", 8),
    "mxfp8_e5m2": ("e5m2", 15),
    "mxfp6_e3m2": ("e3m2fn", 4),
    "mxfp6_e2m3": ("e2m3fn", 2),
    "mxfp4_e2m1": ("e2m1fn", 2),
    "mxint8": ("mxint8_element", 0),
}

MX_BLOCK = 32


def mx_element_format(name: str) -> ElementFormat:
    """The element format of an MX name."""
    elem, _ = _lookup(name)
    return INT_FORMATS[elem] if elem in INT_FORMATS else as_format(elem)


def _lookup(name: object) -> tuple[str, int]:
    if not isinstance(name, str):
        raise TypeError(f"Got name={name!r}, expected an MX format name")
    try:
        return MX_FORMATS[name.lower()]
    except KeyError:
        raise ValueError(f"Got name={name!r}, but the MX formats are "
                         + ", ".join(repr(n) for n in MX_FORMATS)) from None


def shared_exponent(amax: np.ndarray, emax_elem: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E, nan_block)``: the exact clamped shared exponent and where the scale is NaN."""
    amax = np.asarray(amax, dtype=np.float64)
    bad = ~np.isfinite(amax)
    _, ex = np.frexp(np.where(bad, 1.0, amax))
    e = ex.astype(np.int64) - 1 - emax_elem  # frexp: amax = m * 2**ex, m in [0.5, 1)
    e = np.where(amax == 0, -127, e)
    e = np.maximum(e, -127)
    bad = bad | (e > 127)
    return np.where(bad, 0, e), bad


def mx(x: object, name: str, axis: int = -1) -> Quantized:
    """Quantize ``x`` to the MX v1.0 format ``name`` in blocks of 32 along ``axis``.

    Parameters
    ----------
    x : array_like
        Real input; ``x.shape[axis]`` must be a multiple of 32 (pad with zeros otherwise).
    name : str
        ``"mxfp8_e4m3"``, ``"mxfp8_e5m2"``, ``"mxfp6_e3m2"``, ``"mxfp6_e2m3"``,
        ``"mxfp4_e2m1"`` or ``"mxint8"``.
    axis : int
        The blocked axis.

    Returns
    -------
    Quantized
        ``scales`` are ``2**E`` (NaN for NaN blocks), ``scale_codes`` the E8M0 codes.

    Examples
    --------
    >>> x = np.full(32, 16 * (1 - 2.0**-24))
    >>> q = mx(x, "mxfp8_e4m3")
    >>> float(q.scales[0]), hex(int(q.scale_codes[0])), hex(int(q.codes[0]))
    (0.03125, '0x7a', '0x7e')
    >>> float(q.dequantize()[0])  # 448 * 2**-5: the top binade saturates (claim Q7)
    14.0
    """
    elem, emax_elem = _lookup(name)
    fmt: ElementFormat = INT_FORMATS[elem] if elem in INT_FORMATS else as_format(elem)
    arr = np.asarray(x)
    if arr.dtype in _FLOAT32_EXACT and elem in _ML_DTYPES:
        return _mx_float32(arr.astype(np.float32, copy=False), name, axis, fmt, emax_elem)
    xf = as_float_array(x)
    if xf.ndim == 0:
        raise ValueError("Got a 0-d x, but MX blocks need an axis of length a multiple of 32")
    ax = normalize_axis(axis, xf.ndim)
    block = tuple(MX_BLOCK if i == ax else 1 for i in range(xf.ndim))
    check_block(xf.shape, block)
    amax = block_reduce_amax(xf, block)
    e, bad = shared_exponent(amax, emax_elem)
    e_full = broadcast_blocks(e, block, xf.shape)
    bad_full = broadcast_blocks(bad, block, xf.shape)
    y = np.ldexp(np.where(bad_full, 0.0, xf), -e_full)
    vals = round_elements(y, fmt, rounding="rne", overflow="saturate")
    codes = encode_values(vals, fmt)
    scales = np.where(bad, np.nan, np.ldexp(1.0, e))
    e8m0: Format = as_format("e8m0fnu")
    scale_codes = np.where(bad, 0xFF, e + 127).astype(np.uint8)
    return Quantized(codes=codes, scales=scales, scale_codes=scale_codes, element_format=fmt,
                     scale_format=e8m0, scheme=name.lower(), block=block, source=xf,
                     extra={"emax_elem": emax_elem})


_FLOAT32_EXACT = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_ML_DTYPES = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
              "e3m2fn": ml_dtypes.float6_e3m2fn, "e2m3fn": ml_dtypes.float6_e2m3fn,
              "e2m1fn": ml_dtypes.float4_e2m1fn}


def _mx_float32(x: np.ndarray, name: str, axis: int, fmt: ElementFormat,
                emax_elem: int) -> Quantized:
    """Fast path for float32-exact inputs and float elements.

    ``y = x * 2**-E`` is exact in float32 (``-E`` lies in [-125, 127] for float32 amax;
    a product that underflows to a float32 subnormal is below every element's smallest
    subnormal / 2 and rounds to a signed zero either way), then clipping to ``+-max`` and
    ml_dtypes' float32 -> element cast (RNE, correct from float32) give the codes.  The tests
    pin this path to the float64 path, to gfloat and to exact rationals.
    """
    if x.ndim == 0:
        raise ValueError("Got a 0-d x, but MX blocks need an axis of length a multiple of 32")
    ax = normalize_axis(axis, x.ndim)
    block = tuple(MX_BLOCK if i == ax else 1 for i in range(x.ndim))
    check_block(x.shape, block)
    inter = tuple(v for n, b in zip(x.shape, block) for v in (n // b, b))
    xb = x.reshape(inter)
    red = tuple(range(1, 2 * x.ndim, 2))
    amax = np.abs(xb).max(axis=red, keepdims=True)
    e, bad = shared_exponent(amax, emax_elem)
    inv = np.ldexp(np.float32(1.0), -e).astype(np.float32)
    with np.errstate(invalid="ignore", under="ignore"):
        y = xb * inv
        if np.any(bad):
            y = np.where(bad, np.float32(0.0), y)
    fmax = np.float32(fmt.max)
    np.clip(y, -fmax, fmax, out=y)
    codes = y.astype(_ML_DTYPES[fmt.name]).view(np.uint8).reshape(x.shape)
    e = e.squeeze(axis=red)
    bad = bad.squeeze(axis=red)
    scales = np.where(bad, np.nan, np.ldexp(1.0, e))
    scale_codes = np.where(bad, 0xFF, e + 127).astype(np.uint8)
    return Quantized(codes=codes, scales=scales, scale_codes=scale_codes, element_format=fmt,
                     scale_format=as_format("e8m0fnu"), scheme=name.lower(), block=block,
                     source=x, extra={"emax_elem": emax_elem})

