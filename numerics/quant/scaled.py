"""Scaled quantization: per-tensor, per-channel and per-block scales, and the Quantized result.

A quantizer picks a scale ``S`` for each group of elements (the whole tensor, a channel, a
block), rounds every ``y = x / S`` onto the element format once, and dequantizes to
``S * q(y)``.  This module holds the :class:`Quantized` container shared by every scheme
(MX, NVFP4, DeepSeek fp8 included; defined in :mod:`numerics.quant.quantized`) and
:func:`quantize`, the one entry point.

Blocks
------
A scheme is described by ``block``: one block extent per axis of ``x``.  Scales have shape
``x.shape[i] // block[i]``; element ``x[i0, i1, ...]`` uses scale
``scales[i0 // block[0], i1 // block[1], ...]``.  Tensor scaling is ``block = x.shape``,
per-channel scaling along ``axis`` is ``x.shape`` with 1 at ``axis``, 1-D blocks are
``block_size`` at ``axis`` and 1 elsewhere, and a tuple ``block_size`` gives N-D blocks (the
128x128 weight blocks of DeepSeek-V3).  A block extent that does not divide its axis is an
error: pad the tensor yourself (with zeros, which change no scale) if you need ragged blocks.

Scale rule of ``scaling="tensor" | "channel" | "block"``
--------------------------------------------------------
``S = round(amax / max_elem)`` in ``scale_format`` with ``scale_rounding``, where ``amax`` is the
largest finite ``|x|`` of the group.  The default ``scale_rounding="ru"`` makes ``S >= amax /
max_elem`` whenever ``amax / max_elem`` lies within the scale format's range (at most its
largest finite value), so no finite element saturates; ``"rne"`` (what a float32 division
does) can leave ``amax / S`` a hair above ``max_elem``, and that element saturates (bounded
by claim Q5).  Where ``amax / max_elem`` exceeds the largest scale (``quantize([1e42],
"e4m3fn")``: ``1e42 / 448`` is beyond binary32), no scale of the format avoids clipping the
group by an unbounded factor: :func:`quantize` raises ValueError naming the value, unless
``scale_overflow="saturate"`` asks for the largest scale (the elements beyond ``S * max_elem``
then saturate, with the error of claim Q5).  An all-zero (or all non-finite) group gets
``S = 1``; a scale that rounds to zero is replaced by the smallest positive value of
``scale_format`` (the group's elements then lose resolution, within the bound).

Formats
-------
Element and scale formats have at most 24 significant bits within binary32's exponent range
(every registered format but binary64; :func:`numerics.quant._core.check_quantize_format`):
that is what makes ``dequantize`` exact (claim Q10) and every rounding one rounding of the
exact quotient (claim Q11).  binary64 raises ValueError.

NaN and infinities
------------------
They do not enter ``amax``.  An infinite element becomes ``+-max`` (``overflow="saturate"``)
or the element format's inf/NaN (``overflow="ieee"``); a NaN element becomes the element
format's NaN, and raises ValueError for formats without NaN (fp6, fp4, int).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.quant._core import (
    SR_BITS_MAX,
    ElementFormat,
    as_element_format,
    check_quantize_format,
    check_signed_elements,
    decode_codes,
    divide_codes,
    encode_values,
    scale_stream,
)
from numerics.quant.mx import MX_FORMATS, check_scale_mode, mx
from numerics.quant.nvfp4 import nvfp4
from numerics.quant.quantized import (
    Quantized,
    as_float_array,
    block_reduce_amax,
    broadcast_blocks,
    check_block,
    normalize_axis,
)
from numerics.rounding import check_overflow, check_rng, check_rounding, check_sr_options, sr_seed

__all__ = ["deepseek_fp8", "quantize"]

_SCALINGS = ("tensor", "channel", "block")
_SCALE_OVERFLOWS = ("raise", "saturate")


# ---------------------------------------------------------------------------------------------
# quantize
# ---------------------------------------------------------------------------------------------
def quantize(x: object, element_format: Any, *, scaling: str | None = None,
             axis: int = -1, block_size: int | tuple[int, ...] | None = None,
             scale_format: str | Format | None = None, scale_rounding: str | None = None,
             rounding: str = "rne", overflow: str = "saturate", rng: object = None,
             sr_bits: int | None = None, scale_mode: str | None = None,
             tensor_scale: str | None = "tensor",
             scale_overflow: str | None = None) -> Quantized:
    """Quantize ``x`` to ``element_format`` with per-tensor, per-channel or per-block scales.

    Parameters
    ----------
    x : array_like
        Real input (any float or int dtype, ml_dtypes and torch included); computed in
        float64 (integers beyond 2**53 and long doubles are rounded to float64 first).
    element_format : str, Format, IntFormat or dtype
        Any registered signed float format of at most 24 significant bits (binary64, which
        raises ValueError by claims Q10, Q11, and e8m0fnu, unsigned, are the exceptions),
        ``"int8"`` or ``"int4"`` (symmetric,
        ``+-127``/``+-7``),
        an MX name (``"mxfp8_e4m3"``, ``"mxfp8_e5m2"``, ``"mxfp6_e3m2"``, ``"mxfp6_e2m3"``,
        ``"mxfp4_e2m1"``, ``"mxint8"``: :func:`numerics.quant.mx`, blocks of 32 along
        ``axis`` with an E8M0 scale) or ``"nvfp4"`` (:func:`numerics.quant.nvfp4`).  A block
        format fixes its own scales: an option below that it cannot honour raises ValueError.
    scaling : {"tensor", "channel", "block"}, optional
        One scale for the tensor, one per index of ``axis``, or one per block.  The
        default (None) is ``"tensor"``, and a block format's own blocks for MX and NVFP4
        (which refuse ``"tensor"`` and ``"channel"``).
    axis : int
        The channel axis (``"channel"``) or the blocked axis (``"block"`` with an int
        ``block_size``, MX, NVFP4).
    block_size : int or tuple of int, optional
        Required for ``"block"``: an int blocks ``axis``; a tuple gives one extent per axis.
        It must divide the axis length (no implicit padding).  MX takes only 32, NVFP4 16.
    scale_format : str or Format, optional
        Format of the scales: ``"binary32"`` by default (``"e8m0fnu"`` for powers of two,
        ...); binary64 raises ValueError (see ``element_format``).  MX takes only
        ``"e8m0fnu"``, NVFP4 only ``"e4m3fn"``.
    scale_rounding : str, optional
        Rounding of ``amax / max_elem`` to ``scale_format``: ``"ru"`` by default, which
        guarantees no finite element saturates (``amax / max_elem`` within the scale
        format's range: see ``scale_overflow``).  ``"sr"`` draws from the scales' own stream
        (see ``rng``).  For MX, ``"ru"`` is the round-up of
        ``amax / max_elem`` to a power of two, i.e. ``scale_mode="rceil"``, and other values
        raise (use ``scale_mode``); NVFP4 takes only ``"rne"``.
    rounding : str
        Element rounding mode (see :mod:`numerics.rounding`); ``"sr"`` uses ``rng``/``sr_bits``.
        MX and NVFP4 take only ``"rne"``.
    overflow : {"saturate", "ieee"}
        What elements beyond the element maximum become (MX and NVFP4: ``"saturate"``).
    rng : None, int or numpy Generator
        Randomness of ``rounding="sr"`` and ``scale_rounding="sr"``: one 64-bit ``seed`` (a
        non-negative int is the seed modulo ``2**64``, a Generator gives one draw, None fresh
        entropy; a negative int raises ValueError).  Element ``i`` (flat C-order index)
        draws its bits from ``(seed, i)``, scale ``j`` from ``(seed + 0x9E3779B97F4A7C15 mod
        2**64, j)`` (:mod:`numerics.kernels.random`; :func:`numerics.quant._core.scale_stream`),
        a stream of its own, so scales and elements are not rounded by the same draws.  The
        result depends only on the seed, never on the thread count.  The scales use
        full-precision draws (``sr_bits`` applies to the elements).
    sr_bits : int, optional
        Random bits of stochastic rounding, an int in ``[1, 52]`` (``None``: full
        precision; only with ``"sr"``).
    scale_mode : {"floor", "rceil", "ceil", "even"}, optional
        MX only: the shared-exponent rule of :func:`numerics.quant.mx` (``"floor"``).
    tensor_scale : {"tensor", "expert", None}
        NVFP4 only: two-level, per-expert or one-level scaling (:func:`numerics.quant.nvfp4`).
    scale_overflow : {"raise", "saturate"}, optional
        What happens when a group's ``amax / max_elem`` exceeds the largest finite value of
        ``scale_format`` (no scale then keeps the group's elements from clipping, by an
        unbounded factor): ``"raise"`` (the default, ``None``) raises ValueError naming the
        value; ``"saturate"`` uses the largest scale, and the elements beyond ``S *
        max_elem`` saturate to ``+-S * max_elem`` (error ``|x| - S * max_elem``, claim Q5,
        counted by ``error_report(...).fraction_saturated``).  Block formats keep their own
        rule (MX: a NaN scale; NVFP4: a saturating tensor scale) and take only None.

    Returns
    -------
    Quantized

    Raises
    ------
    ValueError
        Unknown format or option, an option the scheme cannot honour, a block size that does
        not divide its axis, NaN into an element format without NaN, a binary64 element or
        scale format, a negative ``rng`` seed, a group whose ``amax / max_elem`` exceeds the
        scale format's range (unless ``scale_overflow="saturate"``).
    TypeError
        Non-numeric input or options of the wrong type.

    Examples
    --------
    >>> q = quantize([0.5, -1.0, 3.0, 100.0], "int8")
    >>> q.codes.view(np.int8).tolist(), q.scales.item() == float(np.float32(100 / 127))
    ([1, -1, 4, 127], False)
    >>> q = quantize(np.arange(8.0).reshape(2, 4), "e4m3fn", scaling="channel", axis=0)
    >>> q.scales.shape
    (2, 1)
    >>> bool(np.all(np.abs(q.dequantize() - np.arange(8.0).reshape(2, 4)) <= q.bound))
    True
    >>> b = np.zeros(32); b[0] = 7.0
    >>> float(quantize(b, "mxfp4_e2m1", scale_rounding="ru").dequantize()[0])  # RCEIL
    8.0
    >>> quantize([1e42, -3e41], "e4m3fn")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Got x whose largest finite |x| in a scale group is 1e+42, ...
    >>> quantize([1e42, -3e41], "e4m3fn", scale_overflow="saturate").scales.item() == float(
    ...     np.finfo(np.float32).max)
    True
    """
    for opt, value in (("scaling", scaling), ("rounding", rounding), ("overflow", overflow),
                       ("scale_rounding", scale_rounding), ("scale_mode", scale_mode),
                       ("scale_overflow", scale_overflow), ("tensor_scale", tensor_scale)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"Got {opt}={value!r}, but it must be a str")
    check_rng(rng)
    block_format = isinstance(element_format, str) and (
        element_format.lower() in MX_FORMATS or element_format.lower() == "nvfp4")
    if block_format and scale_overflow is not None:
        raise ValueError(f"Got {scale_overflow=}, but a block format (MX, NVFP4) has its own "
                         "rule for scales beyond its range; scale_overflow applies to "
                         "scaling='tensor', 'channel', 'block'")
    if scale_overflow is not None and scale_overflow not in _SCALE_OVERFLOWS:
        raise ValueError(f"Got {scale_overflow=}, but the only valid values are 'raise', "
                         "'saturate' and None")
    if isinstance(element_format, str) and element_format.lower() in MX_FORMATS:
        mode = _mx_scale_mode(scale_mode, scale_rounding)
        _check_block_options(scaling=scaling, block_size=block_size, scale_format=scale_format,
                             rounding=rounding, overflow=overflow, rng=rng, sr_bits=sr_bits,
                             block=32, scale_name="e8m0fnu")
        if tensor_scale != "tensor":
            raise ValueError(f"Got {tensor_scale=}, but tensor_scale applies to NVFP4 only")
        return mx(x, element_format, axis=axis, scale_mode=mode)
    if isinstance(element_format, str) and element_format.lower() == "nvfp4":
        if scale_mode is not None:
            raise ValueError(f"Got {scale_mode=}, but scale_mode applies to MX formats only")
        if scale_rounding not in (None, "rne"):
            raise ValueError(f"Got {scale_rounding=}, but NVFP4 rounds its E4M3 block scales "
                             "to nearest even only (scale_rounding=None or 'rne')")
        _check_block_options(scaling=scaling, block_size=block_size, scale_format=scale_format,
                             rounding=rounding, overflow=overflow, rng=rng, sr_bits=sr_bits,
                             block=16, scale_name="e4m3fn")
        return nvfp4(x, axis=axis, tensor_scale=tensor_scale)

    fmt = as_element_format(element_format)
    check_quantize_format(fmt, "element_format")
    check_signed_elements(fmt, "element_format")
    scaling = "tensor" if scaling is None else scaling
    if scaling not in _SCALINGS:
        raise ValueError(f"Got {scaling=}, but the only valid values are 'tensor', 'channel', "
                         "'block'")
    if scale_mode is not None:
        raise ValueError(f"Got {scale_mode=}, but scale_mode applies to MX formats only "
                         "(use scale_format and scale_rounding)")
    if tensor_scale != "tensor":
        raise ValueError(f"Got {tensor_scale=}, but tensor_scale applies to NVFP4 only")
    check_rounding(rounding)
    scale_rounding = "ru" if scale_rounding is None else scale_rounding
    check_rounding(scale_rounding, name="scale_rounding")
    check_overflow(overflow)
    check_sr_options(rounding, sr_bits, top=SR_BITS_MAX)
    sfmt = as_format("binary32" if scale_format is None else scale_format, arg="scale_format")
    check_quantize_format(sfmt, "scale_format")
    seed = sr_seed(rng) if "sr" in (rounding, scale_rounding) else None  # one draw of rng
    xf = as_float_array(x)
    shape = xf.shape
    ax: int | None = None
    if scaling == "tensor" or isinstance(block_size, tuple):  # axis unused, still checked
        normalize_axis(axis, max(xf.ndim, 1))
    if scaling == "tensor":
        if block_size is not None:
            raise ValueError(f"Got {block_size=}, but scaling='tensor' takes no block_size")
        block = tuple(shape)
    elif scaling == "channel":
        if block_size is not None:
            raise ValueError(f"Got {block_size=}, but scaling='channel' takes no block_size")
        if xf.ndim == 0:
            raise ValueError("Got a 0-d x, but scaling='channel' needs an axis")
        chan = normalize_axis(axis, xf.ndim)
        block = tuple(1 if i == chan else n for i, n in enumerate(shape))
    else:
        block = _block_tuple(block_size, axis, xf.ndim)
        check_block(shape, block)
        if not isinstance(block_size, tuple):
            ax = normalize_axis(axis, xf.ndim)
    return _quantize_blocks(xf, fmt, block, scheme=scaling, scale_format=sfmt,
                            scale_rounding=scale_rounding, rounding=rounding,
                            overflow=overflow, seed=seed, sr_bits=sr_bits, axis=ax,
                            scale_overflow=scale_overflow or "raise")


def _mx_scale_mode(scale_mode: object, scale_rounding: object) -> str:
    """The MX rule from ``scale_mode`` and ``scale_rounding`` (``"ru"`` is ``"rceil"``)."""
    if scale_rounding is None:
        return "floor" if scale_mode is None else check_scale_mode(scale_mode)
    if scale_rounding != "ru":
        raise ValueError(
            f"Got {scale_rounding=}, but an MX scale is a power of two chosen by scale_mode "
            "('floor', 'rceil', 'ceil', 'even'); scale_rounding='ru' means 'rceil', and no "
            "other scale_rounding applies")
    if scale_mode not in (None, "rceil"):
        raise ValueError(f"Got {scale_rounding=} (the 'rceil' rule) with {scale_mode=}; "
                         "give one of them")
    return "rceil"


def _check_block_options(*, scaling: object, block_size: object, scale_format: object,
                         rounding: object, overflow: object, rng: object, sr_bits: object,
                         block: int, scale_name: str) -> None:
    """Reject every option a block format (MX, NVFP4) cannot honour."""
    if scaling not in (None, "block"):
        raise ValueError(f"Got {scaling=}, but a block format scales per block "
                         "(scaling='block' or None, the default)")
    if block_size is not None and (isinstance(block_size, (bool, np.bool_)) or not isinstance(
            block_size, (int, np.integer)) or block_size != block):
        raise ValueError(f"Got {block_size=}, but this block format uses blocks of {block}")
    if scale_format is not None and \
            as_format(scale_format, arg="scale_format").name != scale_name:
        # (any spelling of the format: a name, a Format, its numpy or torch dtype)
        raise ValueError(f"Got {scale_format=}, but this block format stores its scales "
                         f"in {scale_name}")
    if rounding != "rne":
        raise ValueError(f"Got {rounding=}, but a block format (MX, NVFP4) rounds its "
                         "elements to nearest even only")
    if overflow != "saturate":
        raise ValueError(f"Got {overflow=}, but a block format (MX, NVFP4) saturates its "
                         "elements")
    if rng is not None or sr_bits is not None:
        raise ValueError(f"Got {rng=}, {sr_bits=}, but a block format (MX, NVFP4) has no "
                         "stochastic rounding")




def _block_tuple(block_size: object, axis: object, ndim: int) -> tuple[int, ...]:
    if block_size is None:
        raise ValueError("Got block_size=None, but scaling='block' needs a block size")
    if isinstance(block_size, tuple):
        if len(block_size) != ndim or not all(
                isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in block_size):
            raise ValueError(f"Got {block_size=}, but a tuple block_size needs one int per axis "
                             f"({ndim})")
        return tuple(int(b) for b in block_size)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"Got {block_size=}, but it must be an int or a tuple of ints")
    if ndim == 0:
        raise ValueError("Got a 0-d x, but scaling='block' needs an axis")
    ax = normalize_axis(axis, ndim)
    if block_size < 1:
        raise ValueError(f"Got {block_size=}, but it must be positive")
    return tuple(int(block_size) if i == ax else 1 for i in range(ndim))


def _element_max(fmt: ElementFormat) -> float:
    return fmt.max


def _quantize_blocks(xf: np.ndarray, fmt: ElementFormat, block: tuple[int, ...], *,
                     scheme: str, scale_format: Format, scale_rounding: str, rounding: str,
                     overflow: str, seed: int | None, sr_bits: int | None,
                     axis: int | None = None, scale_overflow: str = "raise") -> Quantized:
    """Scales ``round(amax / max_elem)`` and elements ``round(x / S)`` of every group.

    ``seed`` is the stochastic-rounding seed (None unless a rounding is ``"sr"``): the
    elements draw from ``(seed, i)``, the scales from ``(scale_stream(seed), j)``.
    """
    finite = np.isfinite(xf)
    amax = block_reduce_amax(np.where(finite, xf, 0.0), block)
    emax = _element_max(fmt)
    if scale_overflow == "raise" and amax.size:
        # exact: scale_format.max * emax has at most 48 significant bits (claims Q10, Q11)
        limit = scale_format.max * emax
        if np.any(amax > limit):
            worst = float(np.max(amax))
            raise ValueError(
                f"Got x whose largest finite |x| in a scale group is {worst!r}, but "
                f"{worst!r} / {emax!r} exceeds the largest {scale_format.name} scale "
                f"{scale_format.max!r}: every element above {limit!r} would be clipped to "
                f"it; use a wider scale_format, or pass scale_overflow='saturate' to accept "
                "the clipping")
    scale_rng = None if scale_rounding != "sr" or seed is None else scale_stream(seed)
    # amax / emax rounded once (stochastic rounding from the exact fraction, claim Q4)
    scales = decode_codes(divide_codes(amax, np.array(emax), scale_format,
                                       rounding=scale_rounding, overflow="saturate",
                                       rng=scale_rng), scale_format)
    tiny = scale_format.smallest_subnormal if scale_format.subnormals else \
        scale_format.smallest_normal
    scales = np.where(scales == 0, tiny, scales)
    scales = np.where(amax == 0, 1.0, scales)
    scales = np.asarray(scales, dtype=np.float64)
    s_full = broadcast_blocks(scales, block, xf.shape)
    if not (isinstance(fmt, Format) and fmt.has_nan) and np.isnan(xf).any():
        raise ValueError(f"Got NaN in the input, but element format {fmt.name} has no NaN")
    codes = divide_codes(xf, scales if scales.size == 1 else s_full, fmt, rounding=rounding,
                         overflow=overflow, rng=seed, sr_bits=sr_bits)
    return Quantized(
        codes=codes, scales=scales,
        scale_codes=encode_values(scales, scale_format), element_format=fmt,
        scale_format=scale_format, scheme=scheme, block=block,
        source=xf, rounding=rounding, overflow=overflow, axis=axis)


def deepseek_fp8(x: object, *, kind: str = "activation") -> Quantized:
    """DeepSeek-V3 fine-grained fp8: E4M3 elements with FP32 scales per tile or block.

    ``kind="activation"``: one scale per 1x128 tile along the last axis (per token, per 128
    channels); ``kind="weight"``: one scale per 128x128 block of the last two axes.  The scale
    is ``amax / 448`` rounded to binary32 (RNE, as a float32 division computes it), elements
    are E4M3 (``e4m3fn``) rounded to nearest even and saturated (DeepSeek-V3 technical report,
    arXiv 2412.19437, section 3.3).  A tile whose ``amax / 448`` exceeds binary32's range
    (``amax > 448 * 3.4e38``) raises ValueError, as :func:`quantize` does.

    Parameters
    ----------
    x : array_like
        Real values (read as float64); at least 1-D for activations, 2-D for weights.
    kind : {"activation", "weight"}
        1x128 tiles along the last axis, or 128x128 blocks of the last two axes.

    Returns
    -------
    Quantized
        Scheme ``"deepseek_fp8"``: e4m3fn element codes and binary32 scales.

    Raises
    ------
    ValueError
        For an unknown ``kind``, too few dimensions, a shape the tiles do not fit, or a
        scale beyond binary32's range.
    TypeError
        If ``x`` is not a real numeric array.

    Examples
    --------
    >>> x = np.linspace(-1, 1, 256).reshape(1, 256)
    >>> q = deepseek_fp8(x)
    >>> q.scales.shape, q.element_format.name
    ((1, 2), 'e4m3fn')
    """
    xf = as_float_array(x)
    if kind == "activation":
        if xf.ndim < 1:
            raise ValueError("Got a 0-d x, but DeepSeek activation tiles need an axis")
        block = (1,) * (xf.ndim - 1) + (128,)
    elif kind == "weight":
        if xf.ndim < 2:
            raise ValueError(f"Got x with {xf.ndim} dimension(s), but 128x128 weight blocks "
                             "need at least 2")
        block = (1,) * (xf.ndim - 2) + (128, 128)
    else:
        raise ValueError(f"Got {kind=}, but the only valid values are 'activation', 'weight'")
    check_block(xf.shape, block)
    return _quantize_blocks(xf, as_format("e4m3fn"), block, scheme="deepseek_fp8",
                            scale_format=as_format("binary32"), scale_rounding="rne",
                            rounding="rne", overflow="saturate", seed=None, sr_bits=None,
                            axis=xf.ndim - 1 if kind == "activation" else None)

