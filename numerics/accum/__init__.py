"""Accumulation: summation algorithms, dot products, GEMM emulation and tensor-core
adder models, each with its exact order of operations documented and a-priori error
bounds (``proofs/accumulation_bounds.md``).

Examples
--------
>>> import numpy as np
>>> from numerics import accum
>>> ones = np.ones(1024, np.float32)
>>> float(accum.sum(ones, "bf16").value), float(accum.sum(ones, "bf16", algorithm="kahan").value)
(256.0, 1024.0)
"""

from __future__ import annotations

from numerics.accum.blockscaled import (
    BLOCKSCALED_PRESETS,
    BlockScaledPreset,
    blockscaled_gemm,
    dequantized_gemm,
)
from numerics.accum.bounds import g, unit_roundoff
from numerics.accum.gemm import gemm
from numerics.accum.summation import ALGORITHMS, AccumResult, dot, sum
from numerics.accum.tensorcore import (
    FAMILIES,
    PRESETS,
    STRUCTURES,
    TensorCorePreset,
    fused_dot_add,
)

__all__ = [
    "ALGORITHMS",
    "BLOCKSCALED_PRESETS",
    "BlockScaledPreset",
    "FAMILIES",
    "PRESETS",
    "STRUCTURES",
    "AccumResult",
    "TensorCorePreset",
    "blockscaled_gemm",
    "dequantized_gemm",
    "dot",
    "fused_dot_add",
    "g",
    "gemm",
    "sum",
    "unit_roundoff",
]
