"""``+ - * /``, ``sqrt`` and ``convert`` on many codes of a format of at most 8 bits, read
from the table of every pair's or code's result (numerics.kernels.pairs), against the
exact Fraction reference in tests/ops_reference.py.

The table path runs when the operands are codes (the format's ml_dtypes dtype), no lane
loop serves the call (for ``+ - * /``: a rounding other than to nearest, or a format
without lanes), and the call has at least as many elements as the table has entries.
"""

from __future__ import annotations

import math
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import numerics
from numerics import get_format, ops
from numerics.dtypes import dtype_of
from numerics.formats import Format, NaNEncoding

sys.path.insert(0, str(Path(__file__).parent))
from ops_reference import NoNaN, reference
from thread_pool import available

ml_dtypes = pytest.importorskip("ml_dtypes")

#: The formats of at most 8 bits with an ml_dtypes dtype (their arrays reach ops as codes).
NARROW = ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz", "e3m4", "e4m3",
          "e8m0fnu", "e2m3fn", "e3m2fn", "e2m1fn")
FLAG_NAMES = ("inexact", "underflow", "overflow", "invalid", "divide_by_zero")


def _dtype(fmt: Format) -> np.dtype:
    """The format's ml_dtypes dtype (every format of these tests has one)."""
    dt = dtype_of(fmt)
    assert dt is not None
    return dt


def _codes(fmt: Format, op: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two code arrays as long as the table (every pair of codes, shuffled: the table
    path runs), in the format's dtype; a divisor is never a zero of a format without
    NaN (0/0 has no value there: tested apart)."""
    k = 1 << fmt.bits
    a = np.repeat(np.arange(k, dtype=np.uint8), k)
    b = np.tile(np.arange(k, dtype=np.uint8), k)
    order = rng.permutation(a.size)
    a, b = a[order], b[order]
    if op == "div" and not fmt.has_nan:
        values = numerics.decode(b, fmt)  # (uint8 codes here)
        one = np.asarray(numerics.encode(1.0, fmt)).astype(np.uint8)
        b = np.where(values == 0, one, b)
    dt = dtype_of(fmt)
    assert dt is not None
    return a.view(dt), b.view(dt)


def _same(want: float, got: float) -> bool:
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return want == got and math.copysign(1.0, want) == math.copysign(1.0, got)


def _signalling(fmt: Format, code: int, value: float) -> bool:
    """Whether a code is a signalling NaN: a NaN of IEEE encoding whose first trailing
    bit (the quiet bit) is clear."""
    return (fmt.nan is NaNEncoding.IEEE and math.isnan(value)
            and not (code >> (fmt.trailing_bits - 1)) & 1)


def _check(fmt: Format, op: str, a: np.ndarray, b: np.ndarray, mode: str, overflow: str,
           tininess: str, sample: np.ndarray) -> None:
    res, fl = getattr(ops, op)(a, b, fmt, rounding=mode, overflow=overflow,
                               tininess=tininess, flags=True)
    plain = getattr(ops, op)(a, b, fmt, rounding=mode, overflow=overflow,
                             tininess=tininess)
    va, vb = numerics.decode(a.view(np.uint8), fmt), numerics.decode(b.view(np.uint8), fmt)
    for i in sample:
        args = (float(va[i]), float(vb[i]))
        want, wf = reference(op, args, fmt, mode, overflow, tininess)
        assert _same(want, float(res[i])), (fmt.name, op, mode, overflow, args, want, res[i])
        assert _same(want, float(plain[i])), (fmt.name, op, mode, overflow, args, plain[i])
        # (the reference takes Python floats, which do not tell signalling NaNs; a
        # signalling NaN operand raises invalid, IEEE 754-2019 7.2)
        wf["invalid"] |= any(_signalling(fmt, int(x.view(np.uint8)[i]), v)
                             for x, v in ((a, args[0]), (b, args[1])))
        got = {k: bool(getattr(fl, k)[i]) for k in FLAG_NAMES}
        assert got == wf, (fmt.name, op, mode, tininess, args, wf, got)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("name", NARROW)
def test_pairs_match_the_reference(name: str, op: str) -> None:
    """A sample of the elements of every call, for three roundings and both overflow
    rules in turn (one process: a table kept for the wrong options would show)."""
    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(f"{name} {op}".encode()))
    a, b = _codes(fmt, op, rng)
    for mode, overflow, tininess in (("rtz", "ieee", "after"), ("ru", "saturate", "before"),
                                     ("rne", "saturate", "after"), ("ru", "ieee", "after"),
                                     ("rd", "ieee", "before")):
        _check(fmt, op, a, b, mode, overflow, tininess, rng.integers(0, a.size, 48))


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", ["rd"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("name", NARROW)
def test_every_pair_matches_the_reference(name: str, op: str, mode: str) -> None:
    fmt = get_format(name)
    rng = np.random.default_rng(0)
    a, b = _codes(fmt, op, rng)
    _check(fmt, op, a, b, mode, "ieee", "after", np.arange(a.size))


def test_broadcast_operands_read_their_row_and_column() -> None:
    fmt = get_format("e5m2")
    rng = np.random.default_rng(7)
    dt = dtype_of(fmt)
    assert dt is not None
    b = rng.integers(0, 256, 1 << 17).astype(np.uint8).view(dt)
    va, vb = 1.75, numerics.decode(b.view(np.uint8), fmt)
    left = ops.sub(np.asarray(va).astype(dt), b, fmt, rounding="rtz")
    right = ops.sub(b, np.asarray(va).astype(dt), fmt, rounding="rtz")
    for i in rng.integers(0, b.size, 64):
        assert _same(reference("sub", (va, float(vb[i])), fmt, "rtz")[0], float(left[i]))
        assert _same(reference("sub", (float(vb[i]), va), fmt, "rtz")[0], float(right[i]))


def test_same_bits_for_every_thread_count() -> None:
    fmt = get_format("e4m3fn")
    rng = np.random.default_rng(3)
    a, b = _codes(fmt, "mul", rng)
    a, b = np.concatenate([a] * 4), np.concatenate([b[::-1]] * 4)
    before = numerics.get_num_threads()
    outs = []
    try:
        for k in available(1, 2, 4):
            numerics.set_num_threads(k)
            res, fl = ops.mul(a, b, fmt, rounding="rd", flags=True)
            outs.append((res.view(np.uint64), [getattr(fl, f) for f in FLAG_NAMES]))
    finally:
        numerics.set_num_threads(before)
    for res, fls in outs[1:]:
        assert np.array_equal(res, outs[0][0])
        assert all(np.array_equal(f, g) for f, g in zip(fls, outs[0][1]))


def test_invalid_operation_without_nan_names_the_element() -> None:
    fmt = get_format("e2m1fn")
    dt = dtype_of(fmt)
    assert dt is not None
    a = np.full(4096, np.asarray(numerics.encode(2.0, fmt)).astype(np.uint8)).view(dt)
    b = a.copy()
    b.view(np.uint8)[1234] = 0  # +0
    a.view(np.uint8)[1234] = 0
    with pytest.raises(ValueError, match=r"index\[1234\]: div\(a=0.0, b=0.0\)"):
        ops.div(a, b, fmt, rounding="rtz")
    with pytest.raises(NoNaN):
        reference("div", (0.0, 0.0), fmt, "rtz")


def _finite_codes(fmt: Format, nonnegative: bool) -> np.ndarray:
    """Every code of ``fmt`` with a finite value (non-negative ones only, if asked),
    repeated to at least 256 elements and shuffled (the table path runs)."""
    codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    values = numerics.decode(codes, fmt)
    keep = np.isfinite(values) & ((values >= 0) if nonnegative else True)
    codes = codes[keep]
    codes = np.tile(codes, -(-256 // codes.size))
    return np.random.default_rng(fmt.bits).permutation(codes)


@pytest.mark.parametrize("name", NARROW)
def test_sqrt_of_every_code_matches_the_reference(name: str) -> None:
    """Every code, NaNs and infinities too where the format has NaN (a negative one
    gives NaN and invalid there; a format without NaN gets its non-negative codes)."""
    fmt = get_format(name)
    codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    codes = np.tile(codes, -(-256 // codes.size)) if fmt.has_nan else \
        _finite_codes(fmt, nonnegative=True)
    x = codes.view(_dtype(fmt))
    v = numerics.decode(codes, fmt)
    for mode, tininess in (("rtz", "after"), ("rne", "before"), ("ru", "after")):
        res, fl = ops.sqrt(x, fmt, rounding=mode, tininess=tininess, flags=True)
        for i in range(codes.size):
            want, wf = reference("sqrt", (float(v[i]),), fmt, mode, "ieee", tininess)
            wf["invalid"] |= _signalling(fmt, int(codes[i]), float(v[i]))
            assert _same(want, float(res[i])), (name, mode, v[i], want, res[i])
            got = {k: bool(getattr(fl, k)[i]) for k in FLAG_NAMES}
            assert got == wf, (name, mode, v[i], wf, got)


@pytest.mark.parametrize("dst", ["e5m2", "e2m1fn", "e4m3fnuz", "binary16", "e8m0fnu"])
@pytest.mark.parametrize("name", NARROW)
def test_conversions_of_every_code_match_the_reference(name: str, dst: str) -> None:
    """Every finite code into another format, as ``x + 0`` rounded once (a zero keeps
    its sign where the format has -0, which ``x + 0`` would not)."""
    fmt, to = get_format(name), get_format(dst)
    codes = _finite_codes(fmt, nonnegative=not to.signed)
    x = codes.view(_dtype(fmt))
    v = numerics.decode(codes, fmt)
    for mode, overflow in (("rtz", "ieee"), ("rne", "saturate"), ("rd", "ieee")):
        res, fl = ops.convert(x, fmt, to, rounding=mode, overflow=overflow, flags=True)
        for i in range(codes.size):
            if v[i] == 0:  # (a format without zero: tested in test_ops)
                if to.has_zero:
                    keep = to.has_negative_zero and np.signbit(v[i])
                    assert _same(-0.0 if keep else 0.0, float(res[i])), (name, dst, v[i])
                continue
            want, wf = reference("add", (float(v[i]), 0.0), to, mode, overflow, "after")
            assert _same(want, float(res[i])), (name, dst, mode, v[i], want, res[i])
            got = {k: bool(getattr(fl, k)[i]) for k in FLAG_NAMES}
            assert got == wf, (name, dst, mode, v[i], wf, got)


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e2m3fn", "e3m2fn"])
def test_each_tininess_rule_reads_its_own_table(name: str) -> None:
    """Products that round up to ``2**emin`` are tiny before rounding and not after:
    the two calls differ there, and each matches the reference."""
    fmt = get_format(name)
    a, b = _codes(fmt, "mul", np.random.default_rng(11))
    _, before = ops.mul(a, b, fmt, rounding="ru", tininess="before", flags=True)
    _, after = ops.mul(a, b, fmt, rounding="ru", tininess="after", flags=True)
    differ = np.flatnonzero(before.underflow != after.underflow)
    assert differ.size
    va, vb = numerics.decode(a.view(np.uint8), fmt), numerics.decode(b.view(np.uint8), fmt)
    for i in differ[:32]:
        args = (float(va[i]), float(vb[i]))
        for tininess, fl in (("before", before), ("after", after)):
            wf = reference("mul", args, fmt, "ru", "ieee", tininess)[1]
            assert bool(fl.underflow[i]) == wf["underflow"], (name, args, tininess)
