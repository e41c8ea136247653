"""NVFP4: E2M1 elements, an E4M3 scale per block of 16, an FP32 scale per tensor.

Recipe implemented (two-level scaling, ``tensor_scale="tensor"``)
-----------------------------------------------------------------
With ``amax`` the largest finite ``|x|`` of the tensor and ``amax_b`` that of a block of 16
consecutive elements along ``axis``:

1. tensor (decode) scale ``g = RNE_fp32(amax / (6 * 448))``; ``g = 1`` if ``amax = 0``;
2. block scale ``s_b = RNE_e4m3(amax_b / (6 * g))``, saturating.  While ``g`` is a binary32
   normal (``amax >= 2688 * 2**-126``, about ``3.2e-35``) the quotient is at most
   ``448 (1 + 2**-23)`` and ``s_b`` at most 448 without saturating; for a smaller ``amax``
   the rounding of a subnormal ``g`` can push it well beyond, and such blocks saturate at
   448 and pay the saturation error (claim Q8; the bound covers it);
3. elements ``RNE_e2m1(x / (s_b * g))``, saturated to ``+-6``; dequantized value
   ``e2m1 * s_b * g``.

Sources: the NVIDIA technical blog "Introducing NVFP4 for efficient and accurate low-precision
inference" (June 2025) for the format (E2M1, 16-element blocks, E4M3 block scale, FP32 tensor
scale), and TensorRT-LLM ``cpp/tensorrt_llm/thop/fp4Quantize.cpp``, whose per-tensor scale
is ``globalScale = (448 * 6) / amax`` (the reciprocal of our ``g``), with the block scale
``amax_b / 6 * globalScale`` cast to E4M3 (the same recipe is used by Transformer Engine and
ModelOpt).  The kernels evaluate these quotients in float32 with a reciprocal; we divide
exactly (one rounding each), which can differ from a kernel in the last bit of a rare tie.

Variants (``tensor_scale``)
--------------------------
* ``"expert"``: per-expert scales for a stacked 3-D (or higher) weight ``(experts, ...)``:
  step 1 runs once per index of the leading axis, with that expert's ``amax``, and
  ``global_scale`` is the array of the ``g_e`` (torchao's ``NVFP4Tensor`` with a
  ``per_tensor_scale`` of shape ``(E, 1, 1)``; TensorRT-LLM's per-expert global scales of
  its MoE weights).
* ``None``: one level, no tensor scale: ``s_b = RNE_e4m3(amax_b / 6)`` saturating, elements
  ``RNE_e2m1(x / s_b)`` (torchao ``nvfp4_quantize`` with ``per_tensor_scale=None``).
  torchao clamps ``s_b`` below at ``2**-6`` (the smallest E4M3 normal); we keep the E4M3
  subnormal scales and, as in the two-level recipe, a block whose scale rounds to zero
  dequantizes to zeros.

torchao 0.18's ``nvfp4_quantize`` clamps ``s_b`` below at ``2**-6`` in the two-level recipe
too, so blocks whose ``amax_b / (6 g)`` lies below that (tiny blocks beside a large tensor
``amax``) differ.  It also evaluates the quotients in float32 through a reciprocal, so a
quotient within a float32 rounding of an E4M3 or E2M1 tie can round the other way: none
differed on normally distributed data; on integer-valued data, where exact ties are common
(1024 x 256 integers in ``[-100, 100]``), 42 of 16,384 block scales and 154 of 262,144
elements did (an exact quotient 336.0000032 is 352 here, and a float32 tie 336 rounds to
320 there).

Special cases: a block whose scale rounds to zero (``amax_b / (6 g) <= 2**-10``: at the
tie, half the smallest E4M3 subnormal, it rounds to the even code 0) dequantizes to zeros
(elements code 0) and its bound is ``|x|``.  Infinite elements saturate to
``+-6 s_b g``; a block that holds an infinity but whose scale rounds to zero (every finite
element zero or tiny) takes the largest block scale, 448, instead, so that its infinities
saturate to ``+-2688 g`` with their signs (its finite elements round to zero, as they would
with the zero scale).  NaN raises ValueError (E2M1 has no NaN).  The tensor scale
saturates at the largest binary32 (``amax`` beyond ``2688 * (2 - 2**-23) * 2**127``, about
``9.1e41``): the blocks beyond it then saturate too, within the bound (claim Q5), where
:func:`numerics.quant.quantize` with a single scale raises unless asked to saturate.
"""

from __future__ import annotations

import numpy as np

from numerics.formats import as_format
from numerics.quant._core import detached, divide_with_sticky, round_elements
from numerics.quant.quantized import (
    Quantized,
    as_real_array,
    blocks3,
    check_block,
    kernel_input,
    normalize_axis,
)

__all__ = ["TENSOR_SCALES", "nvfp4"]

NVFP4_BLOCK = 16
_E4M3_MAX = 448.0
_E2M1_MAX = 6.0

#: The values of ``nvfp4(..., tensor_scale=)``.
TENSOR_SCALES: tuple[str | None, ...] = ("tensor", "expert", None)


def nvfp4(x: object, axis: int = -1, *, tensor_scale: str | None = "tensor") -> Quantized:
    """Quantize ``x`` to NVFP4 (blocks of 16 along ``axis``; see the module docstring).

    Parameters
    ----------
    x : array_like
        Real input (numpy, ml_dtypes or torch), taken as float64 (integers beyond 2**53 and
        long doubles are rounded to float64 first); ``x.shape[axis]`` a multiple of 16.
    axis : int
        The blocked axis.
    tensor_scale : {"tensor", "expert", None}
        One FP32 scale for the tensor (two-level NVFP4), one per index of the leading
        (expert) axis, or none (one level: E4M3 block scales only).

    Returns
    -------
    Quantized
        ``scales`` are the effective block scales ``s_b * g``, ``scale_codes`` the E4M3 codes
        of ``s_b``, ``global_scale`` the tensor scale ``g`` (an array of ``g_e`` for
        ``"expert"``, ``None`` for one level).

    Examples
    --------
    >>> x = np.linspace(-3.0, 3.0, 32)
    >>> q = nvfp4(x)
    >>> q.global_scale == float(np.float32(3.0 / 2688))
    True
    >>> bool(np.all(np.abs(q.dequantize() - x) <= q.bound))
    True
    >>> nvfp4(x, tensor_scale=None).scales.tolist()  # RNE_e4m3(amax_b / 6)
    [0.5, 0.5]
    >>> w = np.ones((2, 1, 16)); w[1] *= 100.0
    >>> nvfp4(w, tensor_scale="expert").global_scale.tolist() == [
    ...     float(np.float32(1 / 2688)), float(np.float32(100 / 2688))]
    True
    """
    if not (tensor_scale is None or isinstance(tensor_scale, str)
            and tensor_scale in TENSOR_SCALES):
        raise ValueError(f"Got {tensor_scale=}, but the only valid values are 'tensor', "
                         "'expert' and None")
    from numerics.kernels import quant as kq

    arr = as_real_array(x)
    if arr.ndim == 0:
        raise ValueError("Got a 0-d x, but NVFP4 blocks need an axis of length a multiple of 16")
    ax = normalize_axis(axis, arr.ndim)
    if tensor_scale == "expert" and (arr.ndim < 2 or ax == 0):
        raise ValueError(f"Got x of shape {arr.shape} with {axis=} and tensor_scale='expert', "
                         "but per-expert scales need a leading expert axis that is not the "
                         "blocked axis")
    block = tuple(NVFP4_BLOCK if i == ax else 1 for i in range(arr.ndim))
    check_block(arr.shape, block)
    e2m1, e4m3 = as_format("e2m1fn"), as_format("e4m3fn")
    xk = kernel_input(arr)
    x3 = blocks3(xk, ax)
    scale_shape = tuple(n // b for n, b in zip(arr.shape, block))
    amax_b = np.zeros(scale_shape)
    if xk.size and kq.block_amax(x3, NVFP4_BLOCK, blocks3(amax_b, ax)):
        raise ValueError("Got NaN in x, but NVFP4 (E2M1 elements) has no NaN")
    g: float | np.ndarray | None
    if tensor_scale is None:
        g = None
        g_blocks = np.ones(scale_shape)
    elif tensor_scale == "tensor":
        g = float(_tensor_scales(np.array([amax_b.max(initial=0.0)]))[0])
        g_blocks = np.full(scale_shape, g)
    else:
        g = _tensor_scales(amax_b.reshape(amax_b.shape[0], amax_b[0].size if amax_b.shape[0]
                                          else 0).max(axis=1, initial=0.0))
        g_blocks = np.ascontiguousarray(np.broadcast_to(
            g.reshape((-1,) + (1,) * (arr.ndim - 1)), scale_shape))
    codes = np.empty(arr.shape, dtype=np.uint8)
    scale_codes = np.empty(scale_shape, dtype=np.uint8)
    scales = np.empty(scale_shape)
    if xk.size:
        kq.nvfp4_quantize(x3, blocks3(amax_b, ax), blocks3(g_blocks, ax),
                          kq.params_tuple(e4m3), kq.params_tuple(e2m1), _E2M1_MAX,
                          blocks3(codes, ax),
                          blocks3(scale_codes, ax), blocks3(scales, ax))
    return Quantized(codes=codes, scales=scales, scale_codes=scale_codes, element_format=e2m1,
                     scale_format=e4m3, scheme="nvfp4", block=block,
                     source=detached(arr, x), global_scale=g, axis=ax)


def _tensor_scales(amax: np.ndarray) -> np.ndarray:
    """``g = RNE_fp32(amax / (6 * 448))`` (1 where ``amax = 0``; the smallest FP32 subnormal
    where it underflows)."""
    fp32 = as_format("binary32")
    q, st = divide_with_sticky(amax, np.full(amax.shape, _E2M1_MAX * _E4M3_MAX))
    g = round_elements(q, fp32, sticky=st, rounding="rne", overflow="saturate")
    g = np.where(g == 0.0, fp32.smallest_subnormal, g)
    return np.where(amax == 0.0, 1.0, g)
