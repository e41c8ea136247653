"""NVFP4: E2M1 elements, an E4M3 scale per block of 16, an FP32 scale per tensor.

Recipe implemented (two-level scaling)
--------------------------------------
With ``amax`` the largest finite ``|x|`` of the tensor and ``amax_b`` that of a block of 16
consecutive elements along ``axis``:

1. tensor (decode) scale ``g = RNE_fp32(amax / (6 * 448))``; ``g = 1`` if ``amax = 0``;
2. block scale ``s_b = RNE_e4m3(amax_b / (6 * g))``, saturating (it never exceeds 448 by
   more than a rounding);
3. elements ``RNE_e2m1(x / (s_b * g))``, saturated to ``+-6``; dequantized value
   ``e2m1 * s_b * g``.

Sources: the NVIDIA technical blog "Introducing NVFP4 for efficient and accurate low-precision
inference" (June 2025) for the format (E2M1, 16-element blocks, E4M3 block scale, FP32 tensor
scale), and TensorRT-LLM ``cpp/tensorrt_llm/thop/fp4Quantize.cpp``, whose per-tensor scale
is ``globalScale = (448 * 6) / amax`` (the reciprocal of our ``g``), with the block scale
``amax_b / 6 * globalScale`` cast to E4M3 (the same recipe is used by Transformer Engine and
ModelOpt).  The kernels evaluate these quotients in float32 with a reciprocal; we divide
exactly (one rounding each), which can differ from a kernel in the last bit of a rare tie.

Special cases: a block whose scale rounds to zero (``amax_b / (6 g) < 2**-10``) dequantizes
to zeros (elements code 0) and its bound is ``|x|``.  Infinite elements saturate to
``+-6 s_b g``; NaN raises ValueError (E2M1 has no NaN).
"""

from __future__ import annotations

import numpy as np

from numerics.formats import as_format
from numerics.quant._core import divide_with_sticky, encode_values, round_elements
from numerics.quant.scaled import (
    Quantized,
    as_float_array,
    block_reduce_amax,
    broadcast_blocks,
    check_block,
    normalize_axis,
)

__all__ = ["nvfp4"]

NVFP4_BLOCK = 16
_E4M3_MAX = 448.0
_E2M1_MAX = 6.0


def nvfp4(x: object, axis: int = -1) -> Quantized:
    """Quantize ``x`` to NVFP4 (blocks of 16 along ``axis``; see the module docstring).

    Examples
    --------
    >>> x = np.linspace(-3.0, 3.0, 32)
    >>> q = nvfp4(x)
    >>> q.global_scale == float(np.float32(3.0 / 2688))
    True
    >>> bool(np.all(np.abs(q.dequantize() - x) <= q.bound))
    True
    """
    xf = as_float_array(x)
    if xf.ndim == 0:
        raise ValueError("Got a 0-d x, but NVFP4 blocks need an axis of length a multiple of 16")
    if np.any(np.isnan(xf)):
        raise ValueError("Got NaN in x, but NVFP4 (E2M1 elements) has no NaN")
    ax = normalize_axis(axis, xf.ndim)
    block = tuple(NVFP4_BLOCK if i == ax else 1 for i in range(xf.ndim))
    check_block(xf.shape, block)
    e2m1, e4m3, fp32 = as_format("e2m1fn"), as_format("e4m3fn"), as_format("binary32")
    finite = np.where(np.isfinite(xf), xf, 0.0)
    amax = float(np.max(np.abs(finite))) if finite.size else 0.0
    if amax == 0.0:
        g = 1.0
    else:
        q, st = divide_with_sticky(np.array(amax), np.array(_E2M1_MAX * _E4M3_MAX))
        g = float(round_elements(q, fp32, sticky=st, rounding="rne", overflow="saturate"))
        if g == 0.0:
            g = fp32.smallest_subnormal
    amax_b = block_reduce_amax(finite, block)
    q, st = divide_with_sticky(amax_b, np.full(amax_b.shape, _E2M1_MAX * g))
    s_b = round_elements(q, e4m3, sticky=st, rounding="rne", overflow="saturate")
    scales = s_b * g  # exact: 4 + 24 significant bits
    s_full = broadcast_blocks(scales, block, xf.shape)
    zero = s_full == 0
    with np.errstate(invalid="ignore"):
        y, sticky = divide_with_sticky(np.where(zero, 0.0, xf), np.where(zero, 1.0, s_full))
    vals = round_elements(y, e2m1, sticky=sticky, rounding="rne", overflow="saturate")
    return Quantized(codes=encode_values(vals, e2m1), scales=scales,
                     scale_codes=encode_values(s_b, e4m3), element_format=e2m1,
                     scale_format=e4m3, scheme="nvfp4", block=block,
                     source=xf, global_scale=g)
