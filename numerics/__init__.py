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
from numerics.codec import decode_exact, encode_exact
from numerics.compare import DiffReport, compare_codes
from numerics.dtypes import dtype_of, format_of_dtype
from numerics.encoding import decode, encode, round_to
from numerics.finfo import FInfo, finfo
from numerics.fingerprint import Fingerprint, fingerprint
from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, as_format, get_format
from numerics.ops import Flags
from numerics.parse import ParsedValue, parse_code, parse_value
from numerics.parts import Parts, exact_decimal, hexfloat, parts, parts_of_code
from numerics.rounding import OVERFLOWS, ROUNDINGS
from numerics.stats import TensorStats, tensor_stats
from numerics.tensors import Tensor, load_tensor
from numerics.threads import get_num_threads, set_num_threads
from numerics.ulp import next_down, next_up, ordinal, ulp, ulp_distance

__all__ = [
    "FORMATS",
    "OVERFLOWS",
    "ROUNDINGS",
    "DiffReport",
    "FInfo",
    "Fingerprint",
    "Flags",
    "Format",
    "Infinity",
    "NaNEncoding",
    "ParsedValue",
    "Parts",
    "Tensor",
    "TensorStats",
    "accum",
    "as_format",
    "compare_codes",
    "decode",
    "decode_exact",
    "dtype_of",
    "encode",
    "encode_exact",
    "exact_decimal",
    "finfo",
    "fingerprint",
    "format_of_dtype",
    "get_format",
    "get_num_threads",
    "hashing",
    "hexfloat",
    "load_tensor",
    "next_down",
    "next_up",
    "ops",
    "ordinal",
    "parse_code",
    "parse_value",
    "parts",
    "parts_of_code",
    "quant",
    "round_to",
    "set_num_threads",
    "tensor_stats",
    "ulp",
    "ulp_distance",
]

__version__ = "0.1.0"
