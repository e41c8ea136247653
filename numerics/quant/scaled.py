"""Scaled quantization: per-tensor, per-channel and per-block scales, and the Quantized result.

A quantizer picks a scale ``S`` for each group of elements (the whole tensor, a channel, a
block), rounds every ``y = x / S`` onto the element format once, and dequantizes to
``S * q(y)``.  This module holds the :class:`Quantized` container shared by every scheme
(MX, NVFP4, DeepSeek fp8 included) and :func:`quantize`, the one entry point.

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
max_elem``, so no finite element saturates; ``"rne"`` (what a float32 division does) can leave
``amax / S`` a hair above ``max_elem``, and that element saturates (bounded by claim Q5).
An all-zero (or all non-finite) group gets ``S = 1``; a scale that rounds to zero is replaced
by the smallest positive value of ``scale_format``.

NaN and infinities
------------------
They do not enter ``amax``.  An infinite element becomes ``+-max`` (``overflow="saturate"``)
or the element format's inf/NaN (``overflow="ieee"``); a NaN element becomes the element
format's NaN, and raises ValueError for formats without NaN (fp6, fp4, int).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from numerics.formats import Format, as_format
from numerics.quant._core import (
    ElementFormat,
    as_element_format,
    decode_codes,
    divide_with_sticky,
    encode_values,
    round_elements,
)
from numerics.quant.bounds import element_bound
from numerics.rounding import check_overflow, check_rounding

__all__ = ["Quantized", "block_reduce_amax", "broadcast_blocks", "deepseek_fp8", "quantize"]

_SCALINGS = ("tensor", "channel", "block")


@dataclass(frozen=True, eq=False)
class Quantized:
    """A quantized tensor: element codes, scales, metadata and the proven error bound.

    Attributes
    ----------
    codes : ndarray
        Element codes, same shape as the input (unpacked: one code per array entry; use
        :func:`numerics.quant.pack` for sub-byte storage).
    scales : ndarray of float64
        Effective scale of each block (shape ``x.shape // block``); for NVFP4 the product of
        the block and tensor scales.  NaN marks an MX block whose scale is NaN.
    scale_codes : ndarray
        Codes of the stored block scales in ``scale_format``.
    element_format : Format or IntFormat
        Format of the elements.
    scale_format : Format
        Format of the stored block scales.
    scheme : str
        ``"tensor"``, ``"channel"``, ``"block"``, an MX name, ``"nvfp4"`` or
        ``"deepseek_fp8"``.
    block : tuple of int
        Block extent per axis.
    source : ndarray
        The input (kept by reference, not copied) from which ``bound`` is computed on demand.
    global_scale : float or None
        NVFP4's per-tensor FP32 scale (``None`` elsewhere).
    rounding, overflow : str
        Element rounding and overflow rules.
    """

    codes: np.ndarray
    scales: np.ndarray
    scale_codes: np.ndarray
    element_format: ElementFormat
    scale_format: Format
    scheme: str
    block: tuple[int, ...]
    source: np.ndarray = field(repr=False)
    global_scale: float | None = None
    rounding: str = "rne"
    overflow: str = "saturate"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the quantized tensor."""
        return tuple(self.codes.shape)

    @property
    def values(self) -> np.ndarray:
        """Element values before scaling (float64)."""
        return decode_codes(self.codes, self.element_format)

    @cached_property
    def bound(self) -> np.ndarray:
        """Per-element bound on ``|dequantize() - x|`` (float64, shape of the tensor), as
        proved in proofs/quantization_bounds.md; computed on first access."""
        return element_bound(self.source, self.scale_per_element(), self.element_format,
                             rounding=self.rounding, overflow=self.overflow)

    def scale_per_element(self) -> np.ndarray:
        """The effective scale of every element (float64, shape of the tensor)."""
        return broadcast_blocks(self.scales, self.block, self.shape)

    def dequantize(self) -> np.ndarray:
        """``scale * element`` for every element, in float64.

        The product is exact when the element and scale significands have at most 53 bits
        together (every scheme here, except binary64 elements)."""
        vals = self.values
        if vals.ndim == 0:
            return vals * self.scales.reshape(())
        inter = _interleaved(vals.shape, self.block)
        s = self.scales.reshape(tuple(v for n in self.scales.shape for v in (n, 1)))
        with np.errstate(invalid="ignore"):
            return (vals.reshape(inter) * s).reshape(vals.shape)

    def __repr__(self) -> str:
        return (f"Quantized(scheme={self.scheme!r}, element_format={str(self.element_format)!r}, "
                f"shape={self.shape}, block={self.block}, scale_format={self.scale_format.name!r})")


# ---------------------------------------------------------------------------------------------
# block helpers
# ---------------------------------------------------------------------------------------------
def _interleaved(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for n, b in zip(shape, block):
        out += [n // b, b]
    return tuple(out)


def block_reduce_amax(x: np.ndarray, block: tuple[int, ...]) -> np.ndarray:
    """Largest ``|x|`` of each block (NaN propagates)."""
    if x.ndim == 0:
        return np.abs(x)
    v = np.abs(x).reshape(_interleaved(x.shape, block))
    return v.max(axis=tuple(range(1, 2 * x.ndim, 2)))


def broadcast_blocks(scales: np.ndarray, block: tuple[int, ...],
                     shape: tuple[int, ...]) -> np.ndarray:
    """Expand per-block values to one per element."""
    if len(shape) == 0:
        return np.asarray(scales, dtype=np.float64).reshape(())
    s = np.asarray(scales).reshape(tuple(v for n in scales.shape for v in (n, 1)))
    return np.broadcast_to(s, _interleaved(shape, block)).reshape(shape)


def as_float_array(x: object, *, name: str = "x") -> np.ndarray:
    """float64 copy of a real numeric array; TypeError for anything else."""
    arr = np.asarray(x)
    bad = TypeError(f"Got {name} of dtype {arr.dtype}, but it must be a real float or int array")
    if arr.dtype == object or arr.dtype.kind in "cUSMmb":
        raise bad
    try:  # kind "V" covers the ml_dtypes floats (bfloat16, float8_*), which convert exactly
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise bad from None


def normalize_axis(axis: object, ndim: int) -> int:
    """Validate ``axis`` for an array with ``ndim`` dimensions."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"Got {axis=}, but it must be an int")
    if not -ndim <= axis < ndim:
        raise ValueError(f"Got {axis=}, but the input has {ndim} dimension(s)")
    return int(axis) % ndim


def check_block(shape: tuple[int, ...], block: tuple[int, ...]) -> None:
    """Every block extent must be positive and divide its axis."""
    for i, (n, b) in enumerate(zip(shape, block)):
        if b < 1 or n % b:
            raise ValueError(
                f"Got block_size={b} on axis {i}, but it must divide the axis length {n} "
                "(pad the input with zeros to a multiple of the block size)")


# ---------------------------------------------------------------------------------------------
# quantize
# ---------------------------------------------------------------------------------------------
def quantize(x: object, element_format: str | ElementFormat, *, scaling: str = "tensor",
             axis: int = -1, block_size: int | tuple[int, ...] | None = None,
             scale_format: str | Format = "binary32", scale_rounding: str = "ru",
             rounding: str = "rne", overflow: str = "saturate", rng: object = None,
             sr_bits: int | None = None) -> Quantized:
    """Quantize ``x`` to ``element_format`` with per-tensor, per-channel or per-block scales.

    Parameters
    ----------
    x : array_like
        Real input (any float or int dtype, ml_dtypes included); computed in float64.
    element_format : str, Format or IntFormat
        Any registered float format, ``"int8"`` or ``"int4"`` (symmetric, ``+-127``/``+-7``),
        an MX name (``"mxfp8_e4m3"``, ``"mxfp8_e5m2"``, ``"mxfp6_e3m2"``, ``"mxfp6_e2m3"``,
        ``"mxfp4_e2m1"``, ``"mxint8"``: same as :func:`numerics.quant.mx`, blocks of 32 along
        ``axis`` with an E8M0 scale; the scale options below must keep their defaults) or
        ``"nvfp4"`` (:func:`numerics.quant.nvfp4`).
    scaling : {"tensor", "channel", "block"}
        One scale for the tensor, one per index of ``axis``, or one per block.
    axis : int
        The channel axis (``"channel"``) or the blocked axis (``"block"`` with an int
        ``block_size``).
    block_size : int or tuple of int, optional
        Required for ``"block"``: an int blocks ``axis``; a tuple gives one extent per axis.
        It must divide the axis length (no implicit padding).
    scale_format : str or Format
        Format of the scales (``"binary32"``; ``"e8m0fnu"`` for powers of two, ...).
    scale_rounding : str
        Rounding of ``amax / max_elem`` to ``scale_format``; ``"ru"`` (default) guarantees no
        finite element saturates.
    rounding : str
        Element rounding mode (see :mod:`numerics.rounding`); ``"sr"`` uses ``rng``/``sr_bits``.
    overflow : {"saturate", "ieee"}
        What elements beyond the element maximum become.
    rng : None, int or numpy Generator
        Randomness of ``rounding="sr"``.
    sr_bits : int, optional
        Random bits of stochastic rounding (``None``: full precision).

    Returns
    -------
    Quantized

    Raises
    ------
    ValueError
        Unknown format or option, a block size that does not divide its axis, NaN into an
        element format without NaN.
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
    """
    from numerics.quant.mx import MX_FORMATS, mx
    from numerics.quant.nvfp4 import nvfp4

    if isinstance(element_format, str) and element_format.lower() in MX_FORMATS:
        _check_block_defaults(scaling, block_size, scale_format, scale_rounding, rounding,
                              overflow, allowed_block=32)
        return mx(x, element_format, axis=axis)
    if isinstance(element_format, str) and element_format.lower() == "nvfp4":
        _check_block_defaults(scaling, block_size, scale_format, scale_rounding, rounding,
                              overflow, allowed_block=16)
        return nvfp4(x, axis=axis)

    fmt = as_element_format(element_format)
    if scaling not in _SCALINGS:
        raise ValueError(f"Got {scaling=}, but the only valid values are 'tensor', 'channel', "
                         "'block'")
    check_rounding(rounding)
    check_rounding(scale_rounding, name="scale_rounding")
    check_overflow(overflow)
    sfmt = as_format(scale_format)
    xf = as_float_array(x)
    shape = xf.shape
    if scaling == "tensor":
        if block_size is not None:
            raise ValueError(f"Got {block_size=}, but scaling='tensor' takes no block_size")
        block = tuple(shape)
    elif scaling == "channel":
        if block_size is not None:
            raise ValueError(f"Got {block_size=}, but scaling='channel' takes no block_size")
        if xf.ndim == 0:
            raise ValueError("Got a 0-d x, but scaling='channel' needs an axis")
        ax = normalize_axis(axis, xf.ndim)
        block = tuple(1 if i == ax else n for i, n in enumerate(shape))
    else:
        block = _block_tuple(block_size, axis, xf.ndim)
        check_block(shape, block)
    return _quantize_blocks(xf, fmt, block, scheme=scaling, scale_format=sfmt,
                            scale_rounding=scale_rounding, rounding=rounding,
                            overflow=overflow, rng=rng, sr_bits=sr_bits)


def _check_block_defaults(scaling: str, block_size: object, scale_format: object,
                          scale_rounding: str, rounding: str, overflow: str,
                          allowed_block: int) -> None:
    if block_size not in (None, allowed_block):
        raise ValueError(f"Got {block_size=}, but this block format uses blocks of "
                         f"{allowed_block}")
    for name, value, default in (("scaling", scaling, "tensor"),
                                 ("scale_format", scale_format, "binary32"),
                                 ("scale_rounding", scale_rounding, "ru"),
                                 ("rounding", rounding, "rne"),
                                 ("overflow", overflow, "saturate")):
        if value != default and not (name == "scaling" and value == "block"):
            raise ValueError(f"Got {name}={value!r}, but a block format (MX, NVFP4) fixes its "
                             "own scaling and rounding; leave it at the default")


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
                     overflow: str, rng: object, sr_bits: int | None) -> Quantized:
    finite = np.isfinite(xf)
    amax = block_reduce_amax(np.where(finite, xf, 0.0), block)
    emax = _element_max(fmt)
    q, st = divide_with_sticky(amax, np.full(amax.shape, emax))
    scales = round_elements(q, scale_format, sticky=st, rounding=scale_rounding,
                            overflow="saturate")
    tiny = scale_format.smallest_subnormal if scale_format.subnormals else \
        scale_format.smallest_normal
    scales = np.where(scales == 0, tiny, scales)
    scales = np.where(amax == 0, 1.0, scales)
    scales = np.asarray(scales, dtype=np.float64)
    s_full = broadcast_blocks(scales, block, xf.shape)
    y, sticky = divide_with_sticky(xf, s_full)
    vals = round_elements(y, fmt, sticky=sticky, rounding=rounding, overflow=overflow, rng=rng,
                          sr_bits=sr_bits)
    return Quantized(
        codes=encode_values(vals, fmt), scales=scales,
        scale_codes=encode_values(scales, scale_format), element_format=fmt,
        scale_format=scale_format, scheme=scheme, block=block,
        source=xf, rounding=rounding, overflow=overflow)


def deepseek_fp8(x: object, *, kind: str = "activation") -> Quantized:
    """DeepSeek-V3 fine-grained fp8: E4M3 elements with FP32 scales per tile or block.

    ``kind="activation"``: one scale per 1x128 tile along the last axis (per token, per 128
    channels); ``kind="weight"``: one scale per 128x128 block of the last two axes.  The scale
    is ``amax / 448`` rounded to binary32 (RNE, as a float32 division computes it), elements
    are E4M3 (``e4m3fn``) rounded to nearest even and saturated (DeepSeek-V3 technical report,
    arXiv 2412.19437, section 3.3).

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
                            rounding="rne", overflow="saturate", rng=None, sr_bits=None)

