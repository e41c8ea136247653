"""The array and 0-d fast paths of encode / round_to / decode (binary32, binary64, tf32,
e8m0fnu and the lane formats; every deterministic mode, both overflow rules) against
the exact scalar reference :mod:`numerics.codec`, value by value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import numerics
from numerics import codec

FORMATS = ["binary32", "binary64", "tf32", "e8m0fnu", "bfloat16", "e4m3fn", "e2m1fn"]
MODES = ["rne", "rtz", "ru", "rd", "rna", "rto"]


def _specials(dt: type) -> np.ndarray:
    f32 = np.array([0x7FC00001, 0xFF800123, 0x7F800001, 0x00000001, 0x807FFFFF,
                    0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800001, 0x80000000],
                   np.uint32).view(np.float32)
    vals = [0.0, -0.0, 1.0, -1.5, 3.0, 0.1, 1e-40, -1e-45, 2.0**-149, 2.0**-127,
            1.5 * 2.0**-127, 2.0**127, 1.5 * 2.0**127, 3.4e38, -3.5e38, 1e300, -1e-310,
            5e-324, math.inf, -math.inf, 1 + 2.0**-24, 1 + 2.0**-24 + 2.0**-60,
            1 + 3 * 2.0**-24, 1 + 2.0**-11, 1 + 2.0**-11 + 2.0**-40, 65504.0, 448.0, 6.5]
    with np.errstate(invalid="ignore"):  # (a signalling NaN quietens)
        out = np.concatenate([np.array(vals, np.float64), f32.astype(np.float64)])
    if dt is np.float64:
        nan_bits = np.array([0x7FF0000000000001, 0xFFF8000000000ABC], np.uint64)
        out = np.concatenate([out, nan_bits.view(np.float64)])
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        return np.concatenate([out.astype(np.float32), f32])


def _random(dt: type, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(5)
    if dt is np.float32:
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)


def _expected_code(v: float, fmt: str, rounding: str, overflow: str) -> int:
    with np.errstate(invalid="ignore"):
        exact = float(v)
    return codec.encode_exact(exact, fmt, rounding=rounding, overflow=overflow,
                              nan="zero")


def _value_bits(code: int, fmt: str) -> int:
    """The float64 bits decode promises: the exact value; a NaN code of an IEEE format
    with its sign and trailing field at the top of binary64's, quiet bit set; the
    default NaN otherwise."""
    f = numerics.as_format(fmt)
    v = codec.decode_exact(code, f)
    if isinstance(v, float) and math.isnan(v):
        if f.nan.value != "ieee":
            return 0x7FF8000000000000
        t = f.trailing_bits
        sign = (code >> (f.bits - 1)) & 1
        return (sign << 63) | 0x7FF0000000000000 | (1 << 51) | ((code & ((1 << t) - 1))
                                                                 << (52 - t))
    return int(np.array(float(Fraction(v)) if not isinstance(v, float) else v)
               .view(np.uint64))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("overflow", ["ieee", "saturate"])
def test_encode_and_round_to_arrays(dt: type, fmt: str, overflow: str) -> None:
    x = np.concatenate([_specials(dt), _random(dt)])
    for rounding in MODES:
        want = [_expected_code(v, fmt, rounding, overflow) for v in x]
        codes = numerics.encode(x, fmt, rounding=rounding, overflow=overflow, nan="zero")
        assert codes.tolist() == want, (fmt, rounding)
        values = numerics.round_to(x, fmt, rounding=rounding, overflow=overflow, nan="zero")
        assert values.view(np.uint64).tolist() == [_value_bits(c, fmt) for c in want]
        for i in (0, 3, 18, 30):  # 0-d arrays: the scalar path
            got = numerics.encode(x[i:i + 1].reshape(()), fmt, rounding=rounding,
                                  overflow=overflow, nan="zero")
            assert isinstance(got, np.ndarray) and got.shape == () and int(got) == want[i]
            got_v = numerics.round_to(x[i:i + 1].reshape(()), fmt, rounding=rounding,
                                      overflow=overflow, nan="zero")
            assert isinstance(got_v, np.ndarray) and got_v.dtype == np.float64
            assert int(got_v.view(np.uint64)) == _value_bits(want[i], fmt)


@pytest.mark.parametrize("fmt", ["binary32", "binary64"])
def test_sr_of_exact_values_is_exact(fmt: str) -> None:
    x = _specials(np.float32)
    want = [_expected_code(v, fmt, "rne", "ieee") for v in x]
    assert numerics.encode(x, fmt, rounding="sr", rng=3, nan="zero").tolist() == want
    gen = np.random.default_rng(1)
    numerics.encode(x, fmt, rounding="sr", rng=gen)
    assert gen.integers(0, 10**9) == _after_one_seed(1)  # the generator gave its seed


def _after_one_seed(seed: int) -> int:
    gen = np.random.default_rng(seed)
    gen.integers(0, 2**64, dtype=np.uint64)
    return int(gen.integers(0, 10**9))


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_arrays_and_0d(fmt: str) -> None:
    f = numerics.as_format(fmt)
    rng = np.random.default_rng(2)
    top = f.num_codes
    codes = rng.integers(0, top, 500, dtype=np.uint64)
    specials = [0, 1, top - 1, top // 2, (top // 2) - 1, top // 2 + 1]
    if f.nan.value == "ieee":  # signalling and quiet NaNs, the infinities
        t, w = f.trailing_bits, f.exponent_bits
        inf = ((1 << w) - 1) << t
        sign = 1 << (f.bits - 1)
        specials += [inf, inf | 1, inf | (1 << (t - 1)), sign | inf | 5, sign | inf]
    codes = np.concatenate([np.array(specials, np.uint64), codes]).astype(f.code_dtype)
    want = [_value_bits(int(c), fmt) for c in codes]
    assert numerics.decode(codes, fmt).view(np.uint64).tolist() == want
    for i in range(len(specials)):
        got = numerics.decode(codes[i:i + 1].reshape(()), fmt)
        assert got.shape == () and int(got.view(np.uint64)) == want[i]
    if f.float32_exact:
        got32 = numerics.decode(codes, fmt, dtype=np.float32).astype(np.float64)
        assert got32.view(np.uint64).tolist() == want
    if f.bits < f.code_dtype.itemsize * 8:  # out of range: still a ValueError
        bad = codes.copy()
        bad[7] = top
        with pytest.raises(ValueError, match="flat index 7"):
            numerics.decode(bad, fmt)
