"""Decoding narrow codes by arithmetic (``numerics.kernels.codec.planned``), bit for bit.

Formats of at most 16 bits other than binary16 and bfloat16 decode by a few lane
operations on each code (``numerics.kernels.unpack.decode32``) where the library checked
the recipe against its decode table, else by the table.  These tests pin the result
of the public ``decode`` to the bits the exact codec implies, written here apart from
the library: every code of every registered format and of random user formats, to
float32 and to float64, NaN signs and payloads included, through the ordinary loop
and the streaming one.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_user_formats import user_formats

import numerics
from numerics import Format
from numerics.codec import decode_exact
from numerics.formats import NaNEncoding
from numerics.threads import get_num_threads, set_num_threads

NARROW = [name for name in numerics.FORMATS
          if numerics.get_format(name).bits <= 16 and name not in ("binary16", "bfloat16")]


def expected_bits(code: int, fmt: Format, dtype: type) -> int:
    """The bits ``decode`` promises for ``code`` as ``dtype`` (float32 or float64): the
    exact value; for a NaN code of an IEEE-encoded format its sign and trailing field at
    the top of the significand with the quiet bit set; any other NaN the default one."""
    wide = dtype is np.float64
    frac, width = (52, 11) if wide else (23, 8)
    value = decode_exact(code, fmt)
    if isinstance(value, float) and math.isnan(value):
        top = ((1 << width) - 1) << frac | 1 << (frac - 1)
        if fmt.nan is not NaNEncoding.IEEE:
            return top
        t = fmt.trailing_bits
        sign = (code >> (fmt.bits - 1)) & 1 if fmt.signed else 0
        payload = (code & ((1 << t) - 1)) << (frac - t)
        return sign << (frac + width) | top | payload
    x = float(Fraction(value)) if not isinstance(value, float) else value
    as_dtype: np.ndarray = np.array(x, dtype)
    assert math.isinf(x) or Fraction(float(as_dtype)) == Fraction(value)
    return int(as_dtype.view(np.uint64 if wide else np.uint32))


def check_every_code(fmt: Format, dtype: type) -> None:
    codes = np.arange(fmt.num_codes, dtype=np.uint64).astype(fmt.code_dtype)
    got = numerics.decode(codes, fmt, dtype=dtype)
    bits = got.view(np.uint64 if dtype is np.float64 else np.uint32).tolist()
    want = [expected_bits(c, fmt, dtype) for c in range(fmt.num_codes)]
    wrong = [(hex(c), hex(g), hex(w)) for c, g, w in zip(range(fmt.num_codes), bits, want)
             if g != w]
    assert not wrong, (fmt.name, dtype.__name__, wrong[:4])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NARROW)
def test_every_code_of_every_registered_format(name: str, dtype: type) -> None:
    check_every_code(numerics.get_format(name), dtype)


def test_the_registered_8_bit_formats_take_the_arithmetic() -> None:
    """The tests above test the arithmetic, not the table it replaces: every registered
    format of 4 to 8 bits has a checked recipe (one with signalling NaN codes, e5m2,
    also sets their quiet bit)."""
    from numerics.encoding import _arithmetic_plan

    plans = {name: _arithmetic_plan(numerics.get_format(name)) for name in NARROW}
    assert all(plan is not None for plan in plans.values()), plans
    assert plans["e5m2"][1] and not plans["e4m3fn"][1]  # type: ignore[index]


@pytest.mark.parametrize("name", ["e5m2", "e4m3fn"])
def test_streaming_stores_give_the_same_bits(name: str) -> None:
    """An output of 16 MiB on one thread takes the streaming loop
    (``numerics.kernels.stream``); a start that is not 32-byte aligned exercises its
    ordinary head and tail."""
    fmt = numerics.get_format(name)
    codes = np.tile(np.arange(256, dtype=np.uint8), (1 << 22) // 256 + 1)[3:]
    want = np.array([expected_bits(c, fmt, np.float32) for c in range(256)], np.uint32)
    before = get_num_threads()
    set_num_threads(1)
    try:
        out = np.empty(codes.size + 1, np.float32)[1:]
        numerics.decode(codes, fmt, dtype=np.float32, out=out)
    finally:
        set_num_threads(before)
    assert np.array_equal(out.view(np.uint32), want[codes])


@pytest.mark.parametrize("kw", [dict(exponent_bits=9, trailing_bits=6, bias=255),
                                dict(exponent_bits=8, trailing_bits=7, bias=100),
                                dict(exponent_bits=8, trailing_bits=7, bias=140)],
                         ids=["w9", "w8-beyond-float32", "w8-inside-float32"])
def test_16_bit_formats_with_wide_exponents(kw: dict) -> None:
    """16-bit formats whose values may leave float32's range keep the table (the
    arithmetic runs in float32 lanes); one inside it takes the arithmetic."""
    from numerics.encoding import _arithmetic_plan

    fmt = Format(name="wide", **kw)
    check_every_code(fmt, np.float64)
    assert (_arithmetic_plan(fmt) is not None) == fmt.float32_exact
    if fmt.float32_exact:
        check_every_code(fmt, np.float32)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(fmt=user_formats(max_exponent_bits=6, max_trailing_bits=9))
def test_every_code_of_user_formats(fmt: Format) -> None:
    """Formats of up to 16 bits that no registered format is (no zero, odd biases, NaN
    at the top without infinities, ...)."""
    check_every_code(fmt, np.float64)
    if fmt.float32_exact:
        check_every_code(fmt, np.float32)
