"""Scaled and block quantization (MX, NVFP4, DeepSeek fp8), error bounds, and TurboQuant.

See :func:`quantize` for the scaled schemes, :func:`mx` and :func:`nvfp4` for the block
formats, :func:`pack`/:func:`unpack` for sub-byte storage, :func:`to_blocked`/
:func:`from_blocked` for the swizzled block-scale layout of cuBLAS, :func:`error_report` for error
statistics and :class:`TurboQuant` for vector quantization.  The per-element bounds are proved
in ``proofs/quantization_bounds.md``.
"""

from __future__ import annotations

from numerics.quant._core import INT_FORMATS, IntFormat
from numerics.quant.bounds import element_bound
from numerics.quant.layout import blocked_shape, from_blocked, to_blocked
from numerics.quant.mx import MX_FORMATS, SCALE_MODES, mx
from numerics.quant.nvfp4 import nvfp4
from numerics.quant.packing import pack, unpack
from numerics.quant.quantized import Quantized
from numerics.quant.report import ErrorReport, error_report
from numerics.quant.scaled import deepseek_fp8, quantize
from numerics.quant.turboquant import TurboQuant, TurboQuantized, lloyd_max_codebook

__all__ = [
    "INT_FORMATS",
    "MX_FORMATS",
    "SCALE_MODES",
    "ErrorReport",
    "IntFormat",
    "Quantized",
    "TurboQuant",
    "TurboQuantized",
    "blocked_shape",
    "deepseek_fp8",
    "element_bound",
    "error_report",
    "from_blocked",
    "lloyd_max_codebook",
    "mx",
    "nvfp4",
    "pack",
    "quantize",
    "to_blocked",
    "unpack",
]
