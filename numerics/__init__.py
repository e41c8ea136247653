"""numerics: bit-exact floating-point formats, rounding, arithmetic and inspection.

Importing the package has no side effects.  Submodules:

``numerics.ops``      correctly rounded arithmetic with IEEE flags
``numerics.accum``    summation, dot products, GEMM and tensor-core models with bounds
``numerics.hashing``  hash kernels in uint32 and emulated float arithmetic
``numerics.quant``    scaled, MX, NVFP4 and TurboQuant quantization with bounds
``numerics.testing``  hypothesis strategies, ULP assertions, pytest plugin
"""

from __future__ import annotations

from numerics import accum, hashing, ops, quant
from numerics.compare import DiffReport, compare_codes
from numerics.dtypes import dtype_of, format_of_dtype
from numerics.encoding import decode, encode, round_to
from numerics.fingerprint import Fingerprint, fingerprint
from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, as_format, get_format
from numerics.parse import ParsedValue, parse_code, parse_value
from numerics.ops import Flags
from numerics.rounding import OVERFLOWS, ROUNDINGS
from numerics.stats import TensorStats, tensor_stats
from numerics.tensors import Tensor, load_tensor

__all__ = [
    "FORMATS",
    "OVERFLOWS",
    "ROUNDINGS",
    "DiffReport",
    "Fingerprint",
    "Flags",
    "Format",
    "Infinity",
    "NaNEncoding",
    "ParsedValue",
    "TensorStats",
    "Tensor",
    "accum",
    "as_format",
    "compare_codes",
    "decode",
    "dtype_of",
    "encode",
    "fingerprint",
    "format_of_dtype",
    "get_format",
    "hashing",
    "load_tensor",
    "ops",
    "parse_code",
    "parse_value",
    "quant",
    "round_to",
    "tensor_stats",
]

__version__ = "0.1.0"
