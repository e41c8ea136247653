"""The kernel driver of :mod:`numerics.ops`: format parameters, the seed, one kernel call.

:func:`run` hands flat operands to :func:`numerics.kernels.ops.apply` (imported
here, lazily, so that ``import numerics`` compiles nothing), then raises for an
invalid operation in a format without NaN (the kernel leaves NaN there, naming
the element needs the operands), reshapes the result and unpacks the flag bits
into boolean arrays.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from numerics.formats import Format, NaNEncoding
from numerics.ops._operands import index_text
from numerics.rounding import sr_seed

__all__ = ["FLAG_NAMES", "check_values", "decode_table", "run"]

#: The IEEE 754-2019 exception flags, in the order of :class:`numerics.ops.Flags`.
FLAG_NAMES = ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")


@lru_cache(maxsize=64)
def decode_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of at most 16 bits; signalling NaN codes
    give signalling float64 NaNs (so that the kernel can tell them)."""
    from numerics.kernels.ops import decode_all
    from numerics.kernels.rounding import format_params

    out = decode_all(format_params(fmt))
    out.setflags(write=False)
    return out


def check_values(fmt: Format) -> Any:
    """``f(flat) -> int``: the first index of ``flat`` that is not a value of ``fmt``."""
    from numerics.kernels.ops import first_unrepresentable
    from numerics.kernels.rounding import format_params

    p = format_params(fmt)
    return lambda flat: int(first_unrepresentable(np.ascontiguousarray(flat), p))


def _code_shift(fmt: Format) -> int:
    """``23 - t`` when a code of ``fmt`` shifted left by it is the float32 pattern of its
    value (8 exponent bits, bias 127, IEEE specials: bfloat16), else -1."""
    float32_top = (fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.signed
                   and fmt.subnormals and fmt.nan is NaNEncoding.IEEE)
    return 23 - fmt.trailing_bits if float32_top else -1


def _lean(op: str, src: Format, fmt: Format, dtype: np.dtype, flags: bool) -> bool:
    """Whether ``+ - *`` may take the float32 loop: operands that are float32 numbers or
    codes of ``src`` (the result's format), a format :func:`lean_fits` accepts.  With
    flags, the loop must see signalling NaNs (float32 operands, or codes decoded by a
    shift, or a format without IEEE NaNs) and binary32 products take the general path
    (their exact value below binary32's normal range is unknown to the loop)."""
    from numerics.kernels.ops import lean_fits

    if op not in ("add", "sub", "mul"):
        return False
    if flags and op == "mul" and fmt.trailing_bits == 23:
        return False
    if flags and dtype.kind == "u" and _code_shift(src) < 0 and fmt.nan is NaNEncoding.IEEE:
        return False
    operands_ok = dtype == np.float32 or (dtype.kind == "u" and (src is fmt or src == fmt))
    return operands_ok and lean_fits(fmt.trailing_bits, fmt.emin, fmt.emax,
                                     0 if op != "mul" else 1)


def run(op: str, xs: list[np.ndarray], names: list[str], shape: tuple[int, ...],
        scalar: bool, fmt: Format, src: Format, rounding: str, overflow: str, tininess: str,
        flags: bool, rng: Any, sr_bits: int | None,
        dtype: np.dtype = np.dtype(np.float64)) -> tuple[Any, dict[str, Any] | None]:
    """``op`` on the flat operands ``xs`` (values of ``src``) rounded once into ``fmt``.

    Returns the result (the broadcast ``shape`` in ``dtype``, float32 only for a format
    whose values are float32 values; a numpy scalar when ``scalar``) and, with
    ``flags``, a dict of boolean arrays (or scalars) named by :data:`FLAG_NAMES`.
    """
    from numerics.kernels.ops import OPS, apply, apply_lean
    from numerics.kernels.rounding import format_params, mode_code, overflow_code

    n = math.prod(shape)
    code = OPS["add" if op == "sub" else op]
    dummy = np.zeros(1, xs[0].dtype)
    a, b, c = (xs + [dummy, dummy])[:3]
    table = decode_table(src) if xs[0].dtype.kind == "u" else np.zeros(1)
    p = format_params(fmt)
    seed = np.uint64(sr_seed(rng) if rounding == "sr" else 0)
    lean = rounding == "rne" and _lean(op, src, fmt, xs[0].dtype, bool(flags))
    out = np.empty(n, dtype if lean else np.float64)
    fl = np.empty(n if flags or not lean else 0, np.uint8)
    if n and lean:
        shift = _code_shift(src)
        decode = 0 if a.dtype == np.float32 else (1 if shift >= 0 else 2)
        with np.errstate(invalid="ignore"):  # signalling NaN codes: NaN either way
            table32 = table.astype(np.float32) if decode == 2 else np.zeros(1, np.float32)
        apply_lean({"add": 0, "mul": 1, "sub": 2}[op], a, b, table32, p,
                   overflow_code(overflow), shift, decode, bool(flags), tininess == "after",
                   out, fl)
    elif n:
        apply(code, op == "sub", a, b, c, table, p, mode_code(rounding),
              overflow_code(overflow), tininess == "after", seed,
              53 if sr_bits is None else int(sr_bits), bool(flags), _code_shift(src),
              out, fl)
    if out.dtype != dtype:
        out = out.astype(dtype)
    if not fmt.has_nan and n and np.isnan(out).any():
        i = int(np.flatnonzero(np.isnan(out))[0])
        vals = [float(x[i if x.size == n else 0]) if x.dtype.kind == "f"
                else float(table[x[i if x.size == n else 0]]) for x in xs]
        args = ", ".join(f"{nm}={v!r}" for nm, v in zip(names, vals))
        raise ValueError(f"Got an invalid operation at {index_text('index', shape, i)}: "
                         f"{op}({args}) has no value in "
                         f"{fmt.name}, which has no NaN")
    result = out.reshape(shape)[()] if scalar else out.reshape(shape)
    if not flags:
        return result, None
    from numerics.kernels.ops import unpack_flags

    bits = np.empty((len(FLAG_NAMES), n), bool)
    unpack_flags(fl, bits)
    return result, {name: (bits[k].reshape(shape)[()] if scalar else bits[k].reshape(shape))
                    for k, name in enumerate(FLAG_NAMES)}
