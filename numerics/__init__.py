"""numerics: bit-exact floating-point formats, rounding, arithmetic and inspection.

Importing the package has no side effects.
"""

from __future__ import annotations

from numerics.dtypes import dtype_of, format_of_dtype
from numerics.encoding import decode, encode, round_to
from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, as_format, get_format
from numerics.rounding import OVERFLOWS, ROUNDINGS

__all__ = [
    "FORMATS",
    "OVERFLOWS",
    "ROUNDINGS",
    "Format",
    "Infinity",
    "NaNEncoding",
    "as_format",
    "decode",
    "dtype_of",
    "encode",
    "format_of_dtype",
    "get_format",
    "round_to",
]

__version__ = "0.1.0"
