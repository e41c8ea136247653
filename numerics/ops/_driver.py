"""The kernel driver of :mod:`numerics.ops`: format parameters, the seed, one kernel call.

:func:`run` hands flat operands to one of the loops of :mod:`numerics.kernels.ops`
and :mod:`numerics.kernels.ops_wide` (imported here, lazily, so that ``import
numerics`` compiles nothing), then raises for an invalid operation in a format
without NaN (the kernel leaves NaN there, naming the element needs the operands),
reshapes the result and unpacks the flag bits into boolean arrays.  ``+ - * /`` on
many codes of a format of at most 8 bits that no lane loop serves, and ``sqrt`` and
conversions of such codes, read each result from a table of every pair's or code's
(:mod:`numerics.kernels.pairs`), which the same loops fill once.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from numerics.formats import Format, NaNEncoding
from numerics.ops._operands import decode_table, index_text
from numerics.rounding import sr_seed

__all__ = ["FLAG_NAMES", "check_values", "code_plan", "run"]

#: The IEEE 754-2019 exception flags, in the order of :class:`numerics.ops.Flags`.
FLAG_NAMES = ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")


@lru_cache(maxsize=64)
def check_values(fmt: Format) -> Any:
    """``f(flat) -> int``: the first index of ``flat`` that is not a value of ``fmt``."""
    from numerics.kernels.ulp import first_unrepresentable, format_ulp_params

    Q = format_ulp_params(fmt)
    return lambda flat: first_unrepresentable(np.ascontiguousarray(flat), Q)


def _code_shift(fmt: Format) -> int:
    """``23 - t`` when a code of ``fmt`` shifted left by it is the float32 pattern of its
    value (8 exponent bits, bias 127, IEEE specials: bfloat16), else -1."""
    float32_top = (fmt.exponent_bits == 8 and fmt.bias == 127 and fmt.signed
                   and fmt.subnormals and fmt.nan is NaNEncoding.IEEE
                   and fmt.trailing_bits <= 23)
    return 23 - fmt.trailing_bits if float32_top else -1


@lru_cache(maxsize=64)
def code_plan(fmt: Format) -> np.ndarray | None:
    """The arithmetic decode of ``fmt``'s codes for the lane loops
    (:func:`numerics.kernels.unpack.plan`), or None."""
    from numerics.kernels.rounding import format_params
    from numerics.kernels.unpack import plan

    d = plan(format_params(fmt), decode_table(fmt))
    if d is not None:
        d.setflags(write=False)
    return d


@lru_cache(maxsize=64)
def top_half(fmt: Format) -> bool:
    """Whether the codes of ``fmt`` are the top halves of its values' float32 patterns
    (:func:`numerics.kernels.unpack.top_half`: bfloat16)."""
    from numerics.kernels.rounding import format_params
    from numerics.kernels.unpack import top_half as kernel_top_half

    return fmt.bits == 16 and kernel_top_half(format_params(fmt), decode_table(fmt))


@lru_cache(maxsize=1)
def _no_plan() -> np.ndarray:
    """The plan argument of the lane loops when the operands are numbers (unused);
    read-only like every plan (:func:`_kernel_array`)."""
    from numerics.kernels.unpack import PLAN_SIZE

    out = np.zeros(PLAN_SIZE, np.uint32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1)
def _no_table() -> np.ndarray:
    """The table argument of :func:`numerics.kernels.ops.apply` for number operands
    (unused); read-only like every :func:`decode_table`."""
    out = np.zeros(1)
    out.setflags(write=False)
    return out


def _kernel_array(x: np.ndarray) -> np.ndarray:
    """An operand as the kernels take it: writable (a read-only operand is copied).

    numba compiles a loop once per argument type, and whether an array is read-only is
    part of its type: a read-only operand (a memory map, a broadcast view) would compile
    every loop a second time.  Tables and plans, always read-only, are the converse."""
    return x if x.flags.writeable else np.array(x)


@lru_cache(maxsize=256)
def _lanes(op: str, src: Format, fmt: Format, dtype: np.dtype, flags: bool) -> str:
    """Which loop rounds ``op`` to nearest: ``"native"`` (binary64, the hardware's
    operations: :func:`numerics.kernels.ops_wide.apply_native`; fma only without
    flags), ``"lean"`` (``+ - *`` in float32 lanes,
    :func:`numerics.kernels.ops.lean_fits`; also ``/`` there, fma in binary32, the
    hardware's operation, and fma rounded to odd, D11, D13),
    ``"wide"`` (``+ - * / fma``
    in float64 lanes, :func:`numerics.kernels.ops_wide.fits`) or ``""`` (the general loop).
    Operands: float32 or float64 numbers, or codes of the result's format that decode
    by arithmetic (:func:`code_plan`); float64 operands take the wide loop.  With
    flags, the lean loop marks results near binary32's underflow for :func:`_redo`
    (D12), and fma products binary32 rounded (D13)."""
    from numerics.kernels.ops import lean_fits
    from numerics.kernels.ops_wide import fits, native

    if op not in ("add", "sub", "mul", "div", "fma"):
        return ""
    if (dtype.kind == "f" and (not flags or op != "fma")
            and native(fmt.trailing_bits, fmt.emin, fmt.emax, fmt.signed, fmt.subnormals,
                       fmt.has_nan, fmt.has_infinity)):
        return "native"
    if dtype.kind == "u" and not ((src is fmt or src == fmt) and code_plan(src) is not None):
        return ""
    if dtype.kind == "f" and dtype not in (np.float32, np.float64):
        return ""
    t, emin, emax = fmt.trailing_bits, fmt.emin, fmt.emax
    binary32 = t == 23 and emin == -126 and emax == 127
    if dtype == np.float64 or not (fmt.signed and fmt.subnormals):
        lean = False
    elif op in ("add", "sub"):
        lean = lean_fits(t, emin, emax, 0)
    elif op in ("mul", "div"):
        # binary32: the hardware's result, its flags by D9; else exact products (D5.2),
        # or rounding through binary32 (D8) with flags from exact checks (D12)
        lean = (binary32 or op == "mul" and lean_fits(t, emin, emax, 1)
                or lean_fits(t, emin, emax, 2))
    else:  # fma: binary32's own (its flags by D9), else rounded to odd in binary32
        lean = binary32 or lean_fits(t, emin, emax, 3)  # (D11, D13)
    if lean:
        return "lean"
    if fits(fmt.trailing_bits, fmt.emin, fmt.emax, fmt.signed, fmt.subnormals):
        return "wide"
    return ""


def _redo(op: str, code: int, abc: tuple[np.ndarray, ...], n: int, table: np.ndarray,
          p: np.ndarray, rounding: str, overflow: str, tininess: str, out: np.ndarray,
          fl: np.ndarray) -> None:
    """The elements :func:`numerics.kernels.ops_wide.apply_native` or
    :func:`numerics.kernels.ops.apply_lean` marks :data:`~numerics.kernels.ops.GENERAL`
    (results near underflow: rare), again with the general loop."""
    from numerics.kernels.ops import GENERAL, apply
    from numerics.kernels.rounding import mode_code, overflow_code

    if fl.max() < GENERAL:  # (one pass; the flag bits proper are all below it)
        return
    idx = np.flatnonzero(fl & np.uint8(GENERAL))
    # codes as the general loop takes them: uint16, decoded by the table
    sub = [x[idx] if x.size == n else x for x in abc]
    sub = [x.view(np.uint16) if x.dtype == np.int16 else
           x.astype(np.uint16) if x.dtype == np.uint8 else x for x in sub]
    o = np.empty(idx.size)
    f = np.empty(idx.size, np.uint8)
    sa, sb, sc = sub
    apply(code, op == "sub", sa, sb, sc, table, p, mode_code(rounding),
          overflow_code(overflow), tininess == "after", np.uint64(0), 53, True, -1, o, f)
    out[idx] = o
    fl[idx] = f


@lru_cache(maxsize=1)
def _kernels() -> tuple[Any, Any, Any]:
    """The kernel modules :func:`run` calls, imported on its first call (a ``from``
    import in every call would cost about a microsecond each)."""
    import numerics.kernels.ops as ops_kernels
    import numerics.kernels.ops_wide as wide_kernels
    import numerics.kernels.rounding as rounding_kernels

    return ops_kernels, wide_kernels, rounding_kernels


#: The operations :func:`run` reads from a table of every result
#: (:mod:`numerics.kernels.pairs`) on the codes of a format of at most 8 bits: of every
#: pair of codes, and of every code.
_PAIR_OPS = ("add", "sub", "mul", "div")
_CODE_OPS = ("sqrt", "convert")


def _by_table(op: str, xs: list[np.ndarray], fmt: Format, src: Format, rounding: str,
              flags: bool, n: int) -> bool:
    """Whether :func:`run` reads the results from :func:`_table`: an operation of
    :data:`_PAIR_OPS` on uint8 codes of the result's format that no lane loop serves
    (:func:`_lanes`: those run about as fast as the table is read), or of
    :data:`_CODE_OPS` on uint8 codes, in a deterministic rounding, on at least as many
    elements as the table has entries (building it costs about what the call
    would)."""
    if rounding == "sr" or xs[0].dtype != np.uint8:
        return False
    if op in _CODE_OPS:
        return n >= 1 << src.bits
    return (op in _PAIR_OPS and (src is fmt or src == fmt) and n >= 1 << (2 * fmt.bits)
            and (rounding != "rne" or not _lanes(op, src, fmt, xs[0].dtype, flags)))


@lru_cache(maxsize=32)
def _table(op: str, fmt: Format, src: Format, rounding: str, overflow: str, tininess: str,
           flags: bool, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The result of ``op`` in ``fmt`` for every code of ``src`` (at most 8 bits), or for
    every pair at ``(code_a << bits) | code_b``, and its flag bits (empty without
    ``flags``): the loop :func:`run` would run on the operands, run once on all of
    them.  Read-only; up to 576 KiB (an 8-bit format's pairs, float64 and flags)."""
    k = 1 << src.bits
    codes = np.arange(k, dtype=np.uint8)
    a, b = (np.repeat(codes, k), np.tile(codes, k)) if op in _PAIR_OPS else (codes, codes)
    values, fl = _compute(op, a, b, a[:1], a.size, fmt, src, rounding, overflow, tininess,
                          flags, None, None, dtype)
    if not flags:
        fl = np.zeros(0, np.uint8)
    values.setflags(write=False)
    fl.setflags(write=False)
    return values, fl


def _compute(op: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, n: int, fmt: Format,
             src: Format, rounding: str, overflow: str, tininess: str, flags: bool,
             rng: Any, sr_bits: int | None, dtype: np.dtype
             ) -> tuple[np.ndarray, np.ndarray]:
    """The kernel call of :func:`run` on flat operands (writable, of one dtype): the
    results in ``dtype`` (NaN where a format without NaN has none) and the flag bits
    (every element's with ``flags``)."""
    K, W, R = _kernels()
    OPS, apply, apply_lean, overflow_value = K.OPS, K.apply, K.apply_lean, K.overflow_value
    WIDE_OPS, apply_native, apply_wide = W.OPS, W.apply_native, W.apply_wide
    format_params, mode_code, overflow_code = R.format_params, R.mode_code, R.overflow_code

    code = OPS["add" if op == "sub" else op]
    table = decode_table(src) if a.dtype.kind == "u" else _no_table()
    p = format_params(fmt)
    seed = np.uint64(sr_seed(rng) if rounding == "sr" else 0)
    lanes = _lanes(op, src, fmt, a.dtype, bool(flags)) if rounding == "rne" else ""
    if a.dtype == np.uint8 and lanes != "lean":  # the other loops take codes as uint16
        a, b, c = (x.astype(np.uint16) for x in (a, b, c))
    out = np.empty(n, dtype if lanes else np.float64)
    fl = np.empty(n if flags or not lanes else 0, np.uint8)
    plan = code_plan(src) if lanes and a.dtype.kind == "u" else None
    d = _no_plan() if plan is None else plan
    if plan is not None and top_half(src):  # codes decode by a shift: int16 says so
        a, b, c = (x.view(np.int16) for x in (a, b, c))
    if n and lanes == "lean":
        lean_op = {"add": 0, "mul": 1, "sub": 2, "div": 3, "fma": 4}[op]
        wrong = apply_lean(lean_op, a, b, c, d, p, overflow_code(overflow), bool(flags),
                           tininess == "after", out, fl)
        if wrong:  # fma products binary32 rounded (D13, rare): again, with their marks
            fl = np.empty(n, np.uint8)
            apply_lean(lean_op, a, b, c, d, p, overflow_code(overflow), True,
                       tininess == "after", out, fl)
        if flags or wrong:
            _redo(op, code, (a, b, c), n, table, p, rounding, overflow, tininess, out, fl)
    elif n and lanes == "native":
        apply_native(WIDE_OPS[op], a, b, c, overflow_value(p, overflow_code(overflow),
                                                          fmt.max), bool(flags), out, fl)
        if flags:
            _redo(op, code, (a, b, c), n, table, p, rounding, overflow, tininess, out, fl)
    elif n and lanes == "wide":
        apply_wide(WIDE_OPS[op], a, b, c, d, p, overflow_code(overflow), bool(flags),
                   tininess == "after", out, fl)
    elif n:
        apply(code, op == "sub", a, b, c, table, p, mode_code(rounding),
              overflow_code(overflow), tininess == "after", seed,
              53 if sr_bits is None else int(sr_bits), bool(flags), _code_shift(src),
              out, fl)
    if out.dtype != dtype:
        out = out.astype(dtype)
    return out, fl


def run(op: str, xs: list[np.ndarray], names: list[str], shape: tuple[int, ...],
        scalar: bool, fmt: Format, src: Format, rounding: str, overflow: str, tininess: str,
        flags: bool, rng: Any, sr_bits: int | None,
        dtype: np.dtype = np.dtype(np.float64)) -> tuple[Any, dict[str, Any] | None]:
    """``op`` on the flat operands ``xs`` (values of ``src``) rounded once into ``fmt``.

    Returns the result (the broadcast ``shape`` in ``dtype``, float32 only for a format
    whose values are float32 values; a numpy scalar when ``scalar``) and, with
    ``flags``, a dict of boolean arrays (or scalars) named by :data:`FLAG_NAMES`.
    """
    n = math.prod(shape)
    dummy = np.zeros(1, xs[0].dtype)
    a, b, c = (_kernel_array(x) for x in (xs + [dummy, dummy])[:3])
    if _by_table(op, xs, fmt, src, rounding, bool(flags), n):
        from numerics.kernels.pairs import lookup

        values, flag_bits = _table(op, fmt, src, rounding, overflow, tininess, bool(flags),
                                   dtype)
        out = np.empty(n, dtype)
        fl = np.empty(n if flags else 0, np.uint8)
        if op in _PAIR_OPS:
            lookup(a, b, src.bits, values, flag_bits, out, fl)
        else:  # one operand: the index is its code
            lookup(a, np.zeros(1, np.uint8), 0, values, flag_bits, out, fl)
    else:
        out, fl = _compute(op, a, b, c, n, fmt, src, rounding, overflow, tininess,
                           bool(flags), rng, sr_bits, dtype)
    if not fmt.has_nan and n and np.isnan(out).any():
        i = int(np.flatnonzero(np.isnan(out))[0])
        table = decode_table(src) if xs[0].dtype.kind == "u" else _no_table()
        vals = [float(x[i if x.size == n else 0]) if x.dtype.kind == "f"
                else float(table[x[i if x.size == n else 0]]) for x in xs]
        args = ", ".join(f"{nm}={v!r}" for nm, v in zip(names, vals))
        where = f" at {index_text('index', shape, i)}" if shape else ""
        raise ValueError(f"Got an invalid operation{where}: {op}({args}) has no value in "
                         f"{fmt.name}, which has no NaN")
    result = out.reshape(shape)[()] if scalar else out.reshape(shape)
    if not flags:
        return result, None
    from numerics.kernels.ops import unpack_flags

    bits = np.empty((len(FLAG_NAMES), n), bool)
    unpack_flags(fl, bits)
    return result, {name: (bits[k].reshape(shape)[()] if scalar else bits[k].reshape(shape))
                    for k, name in enumerate(FLAG_NAMES)}
