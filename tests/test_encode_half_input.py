"""encode of binary16 and bfloat16 arrays (numerics.kernels.narrow.rne16).

Nearest-even encode of a 16-bit float array widens it to float32 piece by piece inside
the kernel instead of making a float32 copy.  Pinned here, on every 16-bit pattern:

* against the float32 route: the same array widened by numpy / ml_dtypes, then encoded
  (the float32 loop is pinned on all 2**32 patterns in the exhaustive tier);
* against the exact reference (numerics.codec.encode_exact) on a sample of patterns;
* across layouts (strided, negative strides, Fortran order, big-endian binary16, 0-d),
  thread counts, ``out=`` (overlapping the input too) and the NaN rule.

The other ml_dtypes inputs take ml_dtypes' float32 value of each byte from a table
rather than a cast of the whole array: every value of each type, in several modes,
against the codes of ml_dtypes' float32 values.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from strategies_core import ALL_FORMATS

import numerics
from numerics.codec import encode_exact
from numerics.formats import Format
from numerics.kernels import narrow
from numerics.kernels.rounding import format_params
from numerics.kernels.spread import FAST_LOOP_MIN
from numerics.threads import get_num_threads, set_num_threads

NARROW32 = [f for f in ALL_FORMATS if narrow.fits(format_params(f), False)]
HALVES = {"binary16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def every_pattern(dtype: np.dtype) -> np.ndarray:
    """All 65,536 values of a 16-bit float type, in code order."""
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)


def widened(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return x.astype(np.float32)


#: One format per shape of the nearest-even loop (numerics.kernels.narrow._rne32_dispatch):
#: the clamp with the NaN, float32's exponent field, the processor's binary16, no -0 with
#: the NaN at -0, no -0 with infinities, the clamp without NaN; the rest of NARROW32 in
#: the exhaustive tier (each shape compiles once per input type, which the default tier
#: pays on a fresh clone).
SHAPES = {"e4m3fn", "bfloat16", "binary16", "e4m3fnuz", "binary8p3", "e2m1fn"}


@pytest.mark.parametrize("half", sorted(HALVES))
@pytest.mark.parametrize("fmt", [f if f.name in SHAPES else pytest.param(
    f, marks=pytest.mark.exhaustive) for f in NARROW32], ids=lambda f: f.name)
def test_every_pattern_matches_the_float32_route(half: str, fmt: Format) -> None:
    x = every_pattern(HALVES[half])
    for overflow in ("ieee", "saturate"):
        got = numerics.encode(x, fmt, overflow=overflow, nan="zero")
        want = numerics.encode(widened(x), fmt, overflow=overflow, nan="zero")
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, [(hex(int(x.view(np.uint16)[i])), hex(int(got[i])),
                                hex(int(want[i]))) for i in bad[:5]]


@pytest.mark.parametrize("half", sorted(HALVES))
@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e2m1fn", "e4m3fnuz", "binary16",
                                  "bfloat16", "binary8p3"])
def test_a_sample_matches_the_exact_reference(half: str, name: str) -> None:
    x = every_pattern(HALVES[half])[::97]
    got = numerics.encode(x, name, nan="zero")
    with np.errstate(invalid="ignore"):  # signalling NaNs quieten
        values = widened(x).astype(np.float64).tolist()
    for v, code in zip(values, got.tolist()):
        assert code == encode_exact(v, name, nan="zero"), (half, name, v, hex(code))


@pytest.mark.parametrize("half", sorted(HALVES))
def test_layouts_out_and_threads(half: str) -> None:
    dt = HALVES[half]
    rng = np.random.default_rng(4)
    n = 3 * FAST_LOOP_MIN + 17  # (binary16 and bfloat16 to e4m3fn: a fast loop)
    x = every_pattern(dt)[rng.integers(0, 1 << 16, n)]
    want = numerics.encode(widened(x), "e4m3fn", nan="zero")
    before = get_num_threads()
    try:
        set_num_threads(1)
        one = numerics.encode(x, "e4m3fn", nan="zero")
        try:
            set_num_threads(2)
        except ValueError:
            pass
        two = numerics.encode(x, "e4m3fn", nan="zero")
    finally:
        set_num_threads(before)
    assert np.array_equal(one, want) and np.array_equal(two, want)
    grid = x[:6000].reshape(60, 100)
    codes = want[:6000].reshape(60, 100)
    assert np.array_equal(numerics.encode(grid[::-1, ::2], "e4m3fn", nan="zero"),
                          codes[::-1, ::2])
    assert np.array_equal(numerics.encode(np.asfortranarray(grid), "e4m3fn", nan="zero"),
                          codes)
    if half == "binary16":
        big = grid.astype(">f2")
        assert np.array_equal(numerics.encode(big, "e4m3fn", nan="zero"), codes)
    zero_d = numerics.encode(grid[3, 7].reshape(()), "e4m3fn", nan="zero")
    assert np.ndim(zero_d) == 0 and zero_d == codes[3, 7]
    out = np.empty((60, 100), np.uint8)
    assert numerics.encode(grid, "e4m3fn", nan="zero", out=out) is out
    assert np.array_equal(out, codes)
    strided = np.empty((60, 200), np.uint8)[:, ::2]
    numerics.encode(grid, "e4m3fn", nan="zero", out=strided)
    assert np.array_equal(strided, codes)
    # binary16 codes written over their own binary16 input
    buf = grid.copy()
    if half == "binary16":
        numerics.encode(buf, "binary16", out=buf.view(np.uint16))
        assert np.array_equal(buf.view(np.uint16), numerics.encode(widened(grid), "binary16"))


@pytest.mark.parametrize("half", sorted(HALVES))
def test_nan_raises_with_its_index_unless_mapped_to_zero(half: str) -> None:
    x = np.array([1.0, 2.0, math.nan, 3.0], np.float32).astype(HALVES[half])
    with pytest.raises(ValueError, match="NaN at flat index 2, but e2m1fn has no NaN"):
        numerics.encode(x, "e2m1fn")
    assert numerics.encode(x, "e2m1fn", nan="zero").tolist() == [2, 4, 0, 5]
    # a format with a NaN takes NaN inputs under the default rule
    got = numerics.encode(x, "e4m3fn")
    assert got.tolist() == numerics.encode(widened(x), "e4m3fn").tolist()


def test_formats_the_lanes_do_not_take_keep_the_general_route() -> None:
    x = np.array([0.75, 1.5, 3.0, 1e4], np.float16)
    assert numerics.encode(x, "e8m0fnu").tolist() == \
        numerics.encode(x.astype(np.float32), "e8m0fnu").tolist()
    xb = x.astype(ml_dtypes.bfloat16)
    assert numerics.encode(xb, "binary32").tolist() == \
        numerics.encode(widened(xb), "binary32").tolist()


ML_INPUTS = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
             "float8_e4m3b11fnuz", "float8_e8m0fnu", "float4_e2m1fn", "float6_e3m2fn",
             "bfloat16"]


@pytest.mark.parametrize("type_name", ML_INPUTS)
@pytest.mark.parametrize("name, rounding", [("e4m3fn", "rne"), ("e5m2", "rtz"),
                                            ("e2m1fn", "sr"), ("binary16", "ru")])
def test_every_ml_dtypes_value_as_input(type_name: str, name: str, rounding: str) -> None:
    """Other ml_dtypes inputs take the float32 values ml_dtypes gives their bytes from a
    table (1-byte types) or by widening (bfloat16) rather than a cast of the array: the
    same codes as from ml_dtypes' float32 values in every mode, NaN signs included."""
    dt = np.dtype(getattr(ml_dtypes, type_name))
    bits = 8 * dt.itemsize
    codes = np.arange(1 << bits, dtype=np.uint32).astype(np.uint8 if bits == 8 else np.uint16)
    if type_name.startswith(("float4", "float6")):
        codes = codes[codes < (1 << int(type_name[5]))]
    x = codes.view(dt)  # (4- and 6-bit values are stored one per byte)
    got = numerics.encode(x, name, rounding=rounding, rng=3, nan="zero")
    want = numerics.encode(widened(x), name, rounding=rounding, rng=3, nan="zero")
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(i, hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]]


def test_byte_swapped_bfloat16_is_read_by_value() -> None:
    """ml_dtypes lets bfloat16 be byte-swapped (the dtype keeps its name): its values, not
    its raw bytes, in every mode."""
    dt = np.dtype(ml_dtypes.bfloat16)
    a = np.array([1.5, -2.0, 0.1], np.float32).astype(dt)
    swapped = a.astype(dt.newbyteorder(">" if np.little_endian else "<"))
    for rounding in ("rne", "rtz"):
        assert numerics.encode(swapped, "e4m3fn", rounding=rounding).tolist() == \
            numerics.encode(widened(a), "e4m3fn", rounding=rounding).tolist()


def test_nan_index_with_out_over_a_strided_input() -> None:
    """nan='raise' names the NaN's index even when ``out`` overwrites the strided input
    the kernel read a copy of."""
    buf = np.ones(16, np.float16)
    arr = buf[::2]
    arr[1] = np.nan
    with pytest.raises(ValueError, match="NaN at flat index 1"):
        numerics.encode(arr, "e2m1fn", out=buf.view(np.uint8)[:8])
