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

__all__ = ["FLAG_NAMES", "check_values", "decode_table", "params", "run", "seed_of"]

#: The IEEE 754-2019 exception flags, in the order of :class:`numerics.ops.Flags`.
FLAG_NAMES = ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")
_MODES = ("rne", "rna", "rtz", "ru", "rd", "rto", "sr")


@lru_cache(maxsize=128)
def params(fmt: Format) -> tuple[np.ndarray, float]:
    """The kernel's int64 parameter array of ``fmt`` and its largest finite value."""
    narrow = (fmt.precision <= 26 and fmt.emax <= 250
              and fmt.emin - fmt.trailing_bits >= -250)
    p = np.array([fmt.trailing_bits, fmt.emin, fmt.emax, fmt.bias, fmt.has_infinity,
                  fmt.has_nan, fmt.has_zero, fmt.has_negative_zero, fmt.signed,
                  fmt.subnormals, fmt.nan is NaNEncoding.IEEE, narrow], np.int64)
    p.setflags(write=False)
    return p, float(fmt.max)


@lru_cache(maxsize=64)
def decode_table(fmt: Format) -> np.ndarray:
    """float64 value of every code of a format of at most 16 bits; signalling NaN codes
    (IEEE-style NaNs with the top trailing bit clear) become signalling float64 NaNs."""
    from numerics.fast import decode_table as table

    out = np.array(table(fmt), np.float64)
    if fmt.nan is NaNEncoding.IEEE:
        codes = np.arange(out.size)
        quiet = (codes >> (fmt.trailing_bits - 1)) & 1
        snan = np.isnan(out) & (quiet == 0)
        sign = np.where((codes >> (fmt.bits - 1)) & 1 == 1, 1 << 63, 0).astype(np.uint64)
        out[snan] = (sign[snan] | np.uint64(0x7FF4000000000000)).view(np.float64)
    out.setflags(write=False)
    return out


def check_values(fmt: Format) -> Any:
    """``f(flat) -> int``: the first index of ``flat`` that is not a value of ``fmt``."""
    from numerics.kernels.ops import first_unrepresentable

    p, maxval = params(fmt)
    return lambda flat: int(first_unrepresentable(np.ascontiguousarray(flat), p, maxval))


def seed_of(rng: Any) -> np.uint64:
    """The 64-bit seed of the stream (:mod:`numerics.kernels.random`): an int modulo
    2**64, one draw from a Generator, fresh entropy for None."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        return np.uint64(int(rng) % 2**64)
    if rng is None:
        rng = np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng.integers(0, 2**64, dtype=np.uint64)
    raise TypeError(f"Got rng={rng!r}, expected None, an int seed or a numpy.random.Generator")


def run(op: str, xs: list[np.ndarray], names: list[str], shape: tuple[int, ...],
        scalar: bool, fmt: Format, src: Format, rounding: str, overflow: str, tininess: str,
        flags: bool, rng: Any, sr_bits: int | None) -> tuple[Any, dict[str, Any] | None]:
    """``op`` on the flat operands ``xs`` (values of ``src``) rounded once into ``fmt``.

    Returns the result (the broadcast ``shape``, a numpy scalar when ``scalar``) and,
    with ``flags``, a dict of boolean arrays (or scalars) named by :data:`FLAG_NAMES`.
    """
    from numerics.kernels.ops import OPS, apply

    n = math.prod(shape)
    code = OPS["add" if op == "sub" else op]
    dummy = np.zeros(1, xs[0].dtype)
    a, b, c = (xs + [dummy, dummy])[:3]
    table = decode_table(src) if xs[0].dtype.kind == "u" else np.zeros(1)
    p, maxval = params(fmt)
    seed = seed_of(rng) if rounding == "sr" else np.uint64(0)
    out = np.empty(n, np.float64)
    fl = np.zeros(n if flags else 0, np.uint8)
    if n:
        apply(code, op == "sub", a, b, c, table, p, maxval, _MODES.index(rounding),
              overflow == "saturate", tininess == "after", seed,
              53 if sr_bits is None else int(sr_bits), out, fl)
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
    fl = fl.reshape(shape)
    bits = {name: (fl & (1 << k)) != 0 for k, name in enumerate(FLAG_NAMES)}
    return result, {k: (v[()] if scalar else v) for k, v in bits.items()}
