"""The fused multi-term adder of NVIDIA tensor cores (the MMA-Sim model) and presets.

:func:`fused_dot_add` computes ``D = c + sum_i a_i * b_i`` for one group of products
the way MMA-Sim (Xie, Wang, Yang, Yang 2025, arXiv 2511.10909) models the hardware,
in agreement with Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA
tensor cores", PeerJ CS 7:e330 (2021):

1. every operand is written ``s * 2**e`` with ``e`` clamped below at its own format's
   ``emin`` (a subnormal has ``s < 1``); a product's exponent is ``e_a + e_b`` and its
   significand ``s_a * s_b`` lies in ``[0, 4)``; ``c`` (in ``output_format``) takes
   its exponent the same way; a zero operand, and a zero ``c``, has exponent -126;
2. ``E`` is the largest exponent over all terms, ``c`` included; every term is
   truncated toward zero to a multiple of ``2**(E - fractional_bits)``; the truncated
   terms are summed exactly;
3. the sum is rounded once to ``output_format`` with ``rounding`` (toward zero for
   fp32 output: subnormals kept, an exponent beyond the format's range still gives
   inf, an exact zero is +0; hardware uses nearest-even for fp16 output);
4. with ``e8m13=True`` (the Ada and Hopper FP8 paths) the fp32 result is further
   truncated to 13 fraction bits (the low 10 bits of its encoding cleared).

NaN or inf in any operand gives the IEEE result of the exact sum instead.

Implementation: exact in float64.  A product of two inputs of precision <= 26 is
exact in float64; scaling by ``2**(fractional_bits - E)`` is exact (``E >= -126``
because of ``c``); each truncated term is an integer below ``2**(fractional_bits +
2)`` and a group sums at most 33 of them, below ``2**33``, so every step is exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from numerics.encoding import decode_codes, encode_pair
from numerics.formats import Format, as_format

__all__ = ["PRESETS", "TensorCorePreset", "decompose", "fused_dot_add", "get_preset"]

_ZERO_EXP = -126


@dataclass(frozen=True, kw_only=True)
class TensorCorePreset:
    """One tensor-core generation's fused-adder parameters."""

    #: Preset name, e.g. ``"hopper-fp8"``.
    name: str
    #: Fraction bits kept after alignment to the largest exponent.
    fractional_bits: int
    #: Products per fused group for 16-bit (and tf32) inputs; None if unsupported.
    group_16: int | None
    #: Products per fused group for 8-bit inputs; None if unsupported.
    group_8: int | None
    #: Truncate the fp32 group result to 13 fraction bits ("e8m13").
    e8m13: bool
    #: Where the numbers come from.
    source: str

    def group_size(self, input_format: Format) -> int:
        """The group size for ``input_format``; ValueError if the path is not modelled."""
        g = self.group_8 if input_format.bits <= 8 else self.group_16
        if g is None:
            kind = "FP8 (8-bit)" if self.group_8 is not None else "16-bit"
            raise ValueError(
                f"Got input_format={input_format.name!r}, but preset {self.name!r} models "
                f"only {kind} inputs"
            )
        return g


_MMASIM = "MMA-Sim, Xie et al. 2025 (arXiv 2511.10909)"
PRESETS: Mapping[str, TensorCorePreset] = MappingProxyType({
    p.name: p for p in (
        TensorCorePreset(name="volta", fractional_bits=23, group_16=4, group_8=None,
                         e8m13=False, source=f"{_MMASIM}; Fasi et al. 2021 (V100)"),
        TensorCorePreset(name="turing", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False, source=_MMASIM),
        TensorCorePreset(name="ampere", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False,
                         source=f"{_MMASIM}; Fasi et al. 2021 (A100); a k16 instruction is "
                                "two chained halves of 8"),
        TensorCorePreset(name="ada", fractional_bits=24, group_16=8, group_8=None,
                         e8m13=False, source=_MMASIM),
        TensorCorePreset(name="ada-fp8", fractional_bits=13, group_16=None, group_8=16,
                         e8m13=True, source=_MMASIM),
        TensorCorePreset(name="hopper", fractional_bits=25, group_16=16, group_8=None,
                         e8m13=False, source=_MMASIM),
        TensorCorePreset(name="hopper-fp8", fractional_bits=13, group_16=None, group_8=32,
                         e8m13=True,
                         source=f"{_MMASIM}; DeepSeek-V3 report (arXiv 2412.19437) sections "
                                "3.3.2 (about 14 bits kept; promotion every 128) and 3.5.2 "
                                "(32 products aligned, highest 14 bits kept)"),
        TensorCorePreset(name="blackwell", fractional_bits=25, group_16=16, group_8=32,
                         e8m13=False, source=f"{_MMASIM} (full fp32 output)"),
    )
})


def get_preset(name: object) -> TensorCorePreset:
    """The preset called ``name``; ValueError listing the known ones otherwise."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(
            f"Got preset {name!r}, but the known presets are " + ", ".join(PRESETS)
        )
    return PRESETS[name]


def decompose(v: np.ndarray, fmt: Format) -> np.ndarray:
    """Exponents ``e`` of values of ``fmt`` as in step 1 (zero and non-finite: -126).

    Examples
    --------
    >>> from numerics import get_format
    >>> decompose(np.array([0.0, 1.5, 2.0**-9, 448.0]), get_format("e4m3fn")).tolist()
    [-126, 0, -6, 8]
    """
    with np.errstate(invalid="ignore"):
        _, ex = np.frexp(v)
    e = np.maximum(ex.astype(np.int32) - 1, fmt.emin)
    return np.where((v == 0) | ~np.isfinite(v), _ZERO_EXP, e).astype(np.int32)


def _cast(x: np.ndarray, fmt: Format) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.asarray(x, np.float64)
        return decode_codes(encode_pair(x, None, fmt, rounding="rne", nan="zero"),
                            fmt).reshape(x.shape)


def _finish(total: np.ndarray, E: np.ndarray, fractional_bits: int, out: Format,
            rounding: str, e8m13: bool) -> np.ndarray:
    """Round ``total * 2**(E - F)`` (exact) once to ``out``; +0 for an exact zero."""
    v = np.ldexp(total, E - fractional_bits)
    with np.errstate(invalid="ignore", over="ignore"):
        codes = encode_pair(v, None, out, rounding=rounding, nan="zero")
    d = decode_codes(codes, out).reshape(v.shape)
    if rounding == "rtz" and out.has_infinity:
        # An exponent beyond the format's range still gives inf (Fasi et al. 2021).
        d = np.where(np.abs(v) >= 2.0 ** (out.emax + 1), np.copysign(np.inf, v), d)
    d = np.where(total == 0, 0.0, d)
    if e8m13:
        bits = d.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFFC00)
        d = bits.view(np.float32).astype(np.float64).reshape(v.shape)
    return d


def _fused(a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray, c: np.ndarray,
           ec: np.ndarray, fractional_bits: int, out: Format, rounding: str,
           e8m13: bool) -> np.ndarray:
    """Core on exact values: a, b (..., k) with exponents ea, eb; c (...) with ec."""
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b
        E = np.maximum((ea + eb).max(axis=-1), ec)
        scale = np.ldexp(1.0, fractional_bits - E)
        total = np.trunc(prods * scale[..., None]).sum(axis=-1) + np.trunc(c * scale)
        d = _finish(total, E, fractional_bits, out, rounding, e8m13)
        if not (np.isfinite(prods).all() and np.isfinite(c).all()):
            naive = c + prods.sum(axis=-1)
            d = np.where(np.isfinite(naive), d, naive)
    return d


def _check_formats(input_format: Any, output_format: Any) -> tuple[Format, Format]:
    fin = as_format(input_format)
    fout = as_format(output_format)
    if fin.precision > 26 or not fin.signed:
        raise ValueError(
            f"Got input_format={fin.name!r}, but the tensor-core model needs a signed "
            "input format of precision <= 26"
        )
    if fout.name not in ("binary32", "binary16", "bfloat16"):
        raise ValueError(
            f"Got output_format={fout.name!r}, but the tensor-core model outputs "
            "'binary32', 'binary16' or 'bfloat16'"
        )
    return fin, fout


def fused_dot_add(
    a: Any,
    b: Any,
    c: Any,
    *,
    input_format: Format | str,
    fractional_bits: int,
    output_format: Format | str = "binary32",
    rounding: str = "rtz",
    e8m13: bool = False,
) -> np.ndarray:
    """``D = c + sum_i a_i b_i`` with the tensor-core fused adder (module docstring).

    Parameters
    ----------
    a, b : array_like, shape (..., k)
        Products' factors; rounded to nearest-even into ``input_format`` first.
    c : array_like, broadcastable to (...)
        Addend; rounded to nearest-even into ``output_format`` first.
    input_format : Format or str
    fractional_bits : int
        Fraction bits kept after alignment to the largest exponent.
    output_format : Format or str
        ``"binary32"`` (default), ``"binary16"`` or ``"bfloat16"``.
    rounding : str
        The one rounding of the exact sum (``"rtz"`` for fp32, ``"rne"`` for fp16).
    e8m13 : bool
        Truncate the result to 13 fraction bits (Ada/Hopper FP8 paths).

    Returns
    -------
    ndarray of float64, shape (...)

    Examples
    --------
    >>> # 1 + 2**-24 + 2**-24: with 23 fraction bits each 2**-24 is truncated away
    >>> a = [1.0, 2.0**-12, 2.0**-12]
    >>> float(fused_dot_add(a, a, 0.0, input_format="binary16", fractional_bits=23))
    1.0
    >>> float(fused_dot_add(a, a, 0.0, input_format="binary16", fractional_bits=24))
    1.0000001192092896
    """
    fin, fout = _check_formats(input_format, output_format)
    if not isinstance(fractional_bits, (int, np.integer)) or not 0 <= fractional_bits <= 48:
        raise ValueError(f"Got {fractional_bits=}, but it must be an int in [0, 48]")
    try:
        A, B = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    except ValueError:
        raise ValueError(
            f"Got a with shape {np.shape(a)} and b with shape {np.shape(b)}, "
            "but they must broadcast together"
        ) from None
    if A.ndim == 0:
        raise ValueError("Got scalar a and b, but they need a last axis of products")
    try:
        C = np.broadcast_to(np.asarray(c, np.float64), A.shape[:-1])
    except ValueError:
        raise ValueError(
            f"Got c with shape {np.shape(c)}, but it must broadcast to {A.shape[:-1]}"
        ) from None
    A, B, C = _cast(A, fin), _cast(B, fin), _cast(C, fout)
    d = _fused(A, decompose(A, fin), B, decompose(B, fin), C, decompose(C, fout),
               int(fractional_bits), fout, rounding, e8m13)
    return d[()] if d.ndim == 0 else d
