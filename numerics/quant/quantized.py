"""The :class:`Quantized` result shared by every scheme, and the block geometry under it.

Every quantizer in :mod:`numerics.quant` (tensor, channel and block scaling, MX, NVFP4,
DeepSeek fp8) returns a :class:`Quantized`.  This module sits below all of them (``scaled``,
``mx`` and ``nvfp4`` import it; it imports none of them), so the schemes form no import
circle.

Blocks
------
A scheme is described by ``block``: one block extent per axis of ``x``.  Scales have shape
``x.shape[i] // block[i]``; element ``x[i0, i1, ...]`` uses scale
``scales[i0 // block[0], i1 // block[1], ...]``.  A block extent that does not divide its
axis is an error (pad with zeros, which change no scale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from numerics.formats import Format
from numerics.quant._core import ElementFormat, as_float_array, as_real_array, decode_codes
from numerics.quant.bounds import element_bound

__all__ = [
    "Quantized",
    "as_float_array",
    "as_real_array",
    "blocks3",
    "code_table",
    "kernel_input",
    "block_reduce_amax",
    "broadcast_blocks",
    "check_block",
    "normalize_axis",
]


@dataclass(frozen=True, eq=False)
class Quantized:
    """A quantized tensor: element codes, scales, metadata and the proven error bound.

    The fields below are the stable public contract (the block-scaled GEMM of
    :mod:`numerics.accum` reads ``codes``, ``scale_codes``, ``scales``, ``element_format``,
    ``block_size``, ``axis`` and ``global_scale`` of MX and NVFP4 results).

    Attributes
    ----------
    codes : ndarray of uint8 (uint16/uint32/uint64 for wider float elements)
        Element codes, same shape as the input, in the input's C order (unpacked: one code
        per array entry; use :func:`numerics.quant.pack` for sub-byte storage).
    scales : ndarray of float64
        Effective scale of each block, shape ``x.shape[i] // block[i]``: for MX ``2**E``
        (NaN where the scale code is 0xFF); for NVFP4 the exact product of the block scale
        and the tensor (or expert) scale; for one-level NVFP4 the block scale.
    scale_codes : ndarray
        Codes of the stored block scales in ``scale_format`` (same shape as ``scales``):
        E8M0 codes (``E + 127``, 0xFF for NaN) for MX, E4M3 codes of the block scale alone
        (before the tensor scale) for NVFP4.
    element_format : Format or IntFormat
        Format of the elements (``e2m1fn`` for NVFP4, ``e4m3fn`` ... for MX, the
        ``mxint8_element`` IntFormat for MXINT8).
    scale_format : Format
        Format of the stored block scales (``e8m0fnu`` for MX, ``e4m3fn`` for NVFP4).
    scheme : str
        ``"tensor"``, ``"channel"``, ``"block"``, an MX name (``"mxfp8_e4m3"``, ...),
        ``"nvfp4"`` or ``"deepseek_fp8"``.
    block : tuple of int
        Block extent per axis (MX: 32 at ``axis`` and 1 elsewhere; NVFP4: 16).
    source : ndarray
        The input, from which ``bound`` is computed on demand: a private copy (or the
        array converted from it), so that a caller reusing its buffer leaves ``bound``
        as the quantization made it.
    global_scale : float, ndarray or None
        NVFP4's FP32 tensor scale ``g`` (a float); for per-expert NVFP4 an ndarray of shape
        ``(x.shape[0],)`` with expert ``e``'s scale at ``e``; ``None`` for one-level NVFP4
        and every other scheme.
    rounding, overflow : str
        Element rounding and overflow rules.
    extra : dict
        Scheme details (MX: ``emax_elem``).
    axis : int or None
        The blocked axis (non-negative) of 1-D block schemes (MX, NVFP4, ``scaling="block"``
        with an int ``block_size``); ``None`` otherwise.
    scale_mode : str or None
        MX's shared-exponent rule (``"floor"``, ``"rceil"``, ``"ceil"``, ``"even"``);
        ``None`` for other schemes.
    """

    codes: np.ndarray
    scales: np.ndarray
    scale_codes: np.ndarray
    element_format: ElementFormat
    scale_format: Format
    scheme: str
    block: tuple[int, ...]
    source: np.ndarray = field(repr=False)
    global_scale: float | np.ndarray | None = None
    rounding: str = "rne"
    overflow: str = "saturate"
    extra: dict[str, Any] = field(default_factory=dict)
    axis: int | None = None
    scale_mode: str | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the quantized tensor."""
        return tuple(self.codes.shape)

    @property
    def block_size(self) -> int | None:
        """Elements per block along ``axis`` (32 for MX, 16 for NVFP4); ``None`` without
        an axis."""
        return None if self.axis is None else self.block[self.axis]

    @property
    def values(self) -> np.ndarray:
        """Element values before scaling (float64)."""
        return decode_codes(self.codes, self.element_format)

    @property
    def bound(self) -> np.ndarray:
        """Per-element bound on ``|dequantize() - x|`` (float64, shape of the tensor), as
        proved in proofs/quantization_bounds.md; computed on first access."""
        # (kept in the instance's dict by hand: functools.cached_property holds one lock
        # for every instance up to Python 3.11, which serialized threads computing the
        # bounds of different tensors, and left a child forked meanwhile hung on it)
        cached = self.__dict__.get("_bound")
        if cached is None:
            cached = element_bound(self.source, self.scale_per_element(),
                                   self.element_format, rounding=self.rounding,
                                   overflow=self.overflow)
            self.__dict__["_bound"] = cached
        return cached

    def scale_per_element(self) -> np.ndarray:
        """The effective scale of every element (float64, shape of the tensor)."""
        return broadcast_blocks(self.scales, self.block, self.shape)

    def dequantize(self, dtype: object = np.float64) -> np.ndarray:
        """``scale * element`` for every element, computed in float64.

        The product is exact when the element and scale significands have at most 53 bits
        together (every scheme here, except binary64 elements; claim Q10).

        Parameters
        ----------
        dtype : {numpy.float64, numpy.float32}
            Output dtype; float32 rounds the exact float64 product once to nearest even
            (exact for every MX and NVFP4 value inside float32's normal range).
        """
        out_dtype = np.dtype(dtype) if dtype in (np.float64, np.float32, "float64",
                                                 "float32") else None
        if out_dtype is None:
            raise ValueError(f"Got {dtype=}, but the only valid values are numpy.float64 and "
                             "numpy.float32")
        if self.axis is not None and self.codes.dtype == np.uint8 and self.codes.size:
            from numerics.kernels.quant import block_dequantize

            out = np.empty(self.codes.shape, dtype=out_dtype)
            codes3 = blocks3(np.ascontiguousarray(self.codes), self.axis)
            bs = self.block[self.axis]
            scales3 = blocks3(np.ascontiguousarray(self.scales, dtype=np.float64), self.axis)
            block_dequantize(codes3, scales3, code_table(self.element_format), bs,
                             blocks3(out, self.axis))
            return out
        vals = self.values
        if vals.ndim == 0:
            return (vals * self.scales.reshape(())).astype(out_dtype)
        inter = interleaved(vals.shape, self.block)
        s = self.scales.reshape(tuple(v for n in self.scales.shape for v in (n, 1)))
        with np.errstate(invalid="ignore", over="ignore"):
            return (vals.reshape(inter) * s).reshape(vals.shape).astype(out_dtype, copy=False)

    def __repr__(self) -> str:
        return (f"Quantized(scheme={self.scheme!r}, element_format={str(self.element_format)!r}, "
                f"shape={self.shape}, block={self.block}, scale_format={self.scale_format.name!r})")


# ---------------------------------------------------------------------------------------------
# block helpers
# ---------------------------------------------------------------------------------------------
def interleaved(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    """``(n0 // b0, b0, n1 // b1, b1, ...)``: the shape that exposes the blocks."""
    out: list[int] = []
    for n, b in zip(shape, block):
        out += [n // b, b] if b else [1, 0]  # (an empty axis is one empty block)
    return tuple(out)


def blocks3(arr: np.ndarray, axis: int) -> np.ndarray:
    """The ``(A, L, B)`` view of a C-contiguous array blocked along ``axis`` (``L`` its
    length, ``A``/``B`` the products of the axes before/after it): the kernels' layout."""
    shape = arr.shape
    before = int(np.prod(shape[:axis], dtype=np.int64))
    after = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return arr.reshape(before, shape[axis], after)


def kernel_input(arr: np.ndarray) -> np.ndarray:
    """``arr`` as a C-contiguous native-order float32 array when its values are exact in
    float32 (float32, float16, the ml_dtypes floats up to 16 bits), else float64."""
    if arr.dtype == np.float32 or arr.dtype == np.float16 or \
            (arr.dtype.kind == "V" and arr.dtype.itemsize <= 2):
        return np.ascontiguousarray(arr, dtype=np.float32)
    return np.ascontiguousarray(arr, dtype=np.float64)


@cache
def code_table(fmt: ElementFormat) -> np.ndarray:
    """float64 values of the 256 byte codes of an element format of at most 8 bits (NaN
    beyond its codes)."""
    n = 1 << fmt.bits
    table = np.full(256, np.nan)
    table[:n] = decode_codes(np.arange(n, dtype=np.uint64).astype(np.uint8), fmt)
    table.setflags(write=False)
    return table


def block_reduce_amax(x: np.ndarray, block: tuple[int, ...]) -> np.ndarray:
    """Largest ``|x|`` of each block (NaN propagates)."""
    if x.ndim == 0:
        return np.abs(x)
    v = np.abs(x).reshape(interleaved(x.shape, block))
    return v.max(axis=tuple(range(1, 2 * x.ndim, 2)), initial=0.0)  # (empty blocks: 0)


def broadcast_blocks(scales: np.ndarray, block: tuple[int, ...],
                     shape: tuple[int, ...]) -> np.ndarray:
    """Expand per-block values to one per element."""
    if len(shape) == 0:
        return np.asarray(scales, dtype=np.float64).reshape(())
    s = np.asarray(scales).reshape(tuple(v for n in scales.shape for v in (n, 1)))
    return np.broadcast_to(s, interleaved(shape, block)).reshape(shape)


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
