"""MX v1.0: exact shared exponent, bit-for-bit agreement with gfloat, special blocks."""

from __future__ import annotations

from fractions import Fraction

import gfloat
import numpy as np
import pytest
from gfloat import formats as gf
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.codec import encode_exact, floor_log2
from numerics.quant import mx, quantize
from numerics.quant.mx import MX_FORMATS

GFLOAT_BLOCK = {
    "mxfp8_e4m3": gf.format_info_mxfp8_e4m3,
    "mxfp8_e5m2": gf.format_info_mxfp8_e5m2,
    "mxfp6_e3m2": gf.format_info_mxfp6_e3m2,
    "mxfp6_e2m3": gf.format_info_mxfp6_e2m3,
    "mxfp4_e2m1": gf.format_info_mxfp4_e2m1,
    "mxint8": gf.format_info_mxint8,
}


def _gfloat_codes(name: str, block: np.ndarray) -> list[int]:
    fi = GFLOAT_BLOCK[name]
    scale = gfloat.compute_scale_amax(fi.etype.emax, block)
    return list(gfloat.encode_block(fi, scale, block / scale))


def _random_blocks(seed: int, nblocks: int, spread: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mant = rng.uniform(-2, 2, (nblocks, 32))
    expo = rng.integers(-spread, spread + 1, (nblocks, 1)) + rng.integers(-6, 1, (nblocks, 32))
    x = np.ldexp(mant, expo)
    # sprinkle signed zeros, exact grid points and ties
    x[rng.random(x.shape) < 0.05] = 0.0
    x[rng.random(x.shape) < 0.05] = -0.0
    return x


def _safe_for_gfloat64(block: np.ndarray) -> bool:
    """gfloat takes floor(log2(amax)) with a float64 log2: correct unless amax is within a
    few ulps below a power of two (our exponent is exact there; tested separately)."""
    amax = float(np.max(np.abs(block)))
    return amax == 0 or np.floor(np.log2(amax)) == floor_log2(Fraction(amax))


@pytest.mark.parametrize("name", list(MX_FORMATS))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0, 4, 40]))
def test_mx_matches_gfloat_bit_for_bit(name: str, seed: int, spread: int) -> None:
    """Scale and element codes equal gfloat's encode_block on float64 blocks, signed zeros
    included."""
    x = _random_blocks(seed, 6, spread)
    q = mx(x, name, axis=-1)
    for i, block in enumerate(x):
        if not _safe_for_gfloat64(block):
            continue
        ref = _gfloat_codes(name, block)
        assert int(q.scale_codes[i, 0]) == ref[0]
        assert [int(c) for c in q.codes[i]] == ref[1:], (name, block)


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_mx_dequantize_matches_gfloat_quantize_block(name: str) -> None:
    x = _random_blocks(7, 20, 10)
    q = mx(x, name)
    d = q.dequantize()
    for i, block in enumerate(x):
        ref = gfloat.quantize_block(GFLOAT_BLOCK[name], block, gfloat.compute_scale_amax)
        np.testing.assert_array_equal(np.signbit(d[i]), np.signbit(ref))
        np.testing.assert_array_equal(d[i], ref)


def test_mx_floor_log2_is_exact_where_float32_log2_is_not() -> None:
    """amax = 16*(1 - 2**-24): floor(log2) = 3, so X = 2**-5 and 448*X = 14; gfloat fed
    float32 rounds log2 up to 4 and gets 16."""
    amax = 16 * (1 - 2.0**-24)
    x = np.full(32, amax)
    q = mx(x, "mxfp8_e4m3")
    assert q.scales[0] == 2.0**-5
    assert q.dequantize()[0] == 14.0
    g32 = gfloat.quantize_block(gf.format_info_mxfp8_e4m3, x.astype(np.float32),
                                gfloat.compute_scale_amax)
    assert g32[0] == 16.0  # the documented gfloat float32 behaviour
    g64 = gfloat.quantize_block(gf.format_info_mxfp8_e4m3, x, gfloat.compute_scale_amax)
    assert g64[0] == 14.0
    # one float64 ulp below a power of two: even a float64 log2 rounds up; we do not
    for k in (-100, -3, 0, 7, 100):
        a = np.nextafter(2.0**k, 0)
        qk = mx(np.full(32, a), "mxfp8_e5m2")
        assert qk.scales[0] == 2.0 ** (k - 1 - 15)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(list(MX_FORMATS)), seed=st.integers(0, 2**32 - 1),
       spread=st.sampled_from([0, 30, 140]))
def test_mx_matches_exact_fraction_reference(name: str, seed: int, spread: int) -> None:
    """Every code equals the spec computed in exact rationals (codec.encode_exact)."""
    x = _random_blocks(seed, 2, spread)
    q = mx(x, name)
    elem, emax = MX_FORMATS[name]
    for i, block in enumerate(x):
        amax = max(abs(Fraction(float(v))) for v in block)
        e = -127 if amax == 0 else max(floor_log2(amax) - emax, -127)
        if e > 127:
            assert np.isnan(q.scales[i, 0]) and int(q.scale_codes[i, 0]) == 0xFF
            continue
        assert q.scales[i, 0] == 2.0**e
        scale = Fraction(2) ** e
        for v, c in zip(block, q.codes[i]):
            y = Fraction(float(v)) / scale
            if name == "mxint8":
                k = max(-128, min(127, round(y * 64)))  # round() is ties-to-even
                assert int(c) == k & 0xFF
            else:
                ref = encode_exact(y, elem, rounding="rne", overflow="saturate")
                if y == 0 and np.signbit(v):
                    ref = encode_exact(-0.0, elem)
                assert int(c) == ref, (v, y)


def test_mx_special_blocks() -> None:
    """All-zero -> scale 2**-127 with signed zeros; NaN/inf -> NaN scale, whole block NaN;
    shared exponent above 127 -> NaN; below -127 clamped."""
    x = np.zeros((4, 32))
    x[0, 3] = -0.0
    x[1, 5] = np.nan
    x[2, 7] = np.inf
    x[3] = 2.0**-140
    x[3, 0] = 2.0**-130
    q = mx(x, "mxfp8_e4m3")
    assert int(q.scale_codes[0, 0]) == 0 and q.scales[0, 0] == 2.0**-127
    assert np.signbit(q.dequantize()[0, 3]) and int(q.codes[0, 3]) == 0x80
    assert [int(c) for c in q.scale_codes[1:3, 0]] == [0xFF, 0xFF]
    assert np.all(np.isnan(q.dequantize()[1:3]))
    assert q.scales[3, 0] == 2.0**-127  # floor(log2) - 8 = -138 clamps to -127
    big = np.full((1, 32), 2.0**140)
    qb = mx(big, "mxfp8_e4m3")  # 140 - 8 = 132 > 127
    assert np.isnan(qb.scales[0, 0]) and int(qb.scale_codes[0, 0]) == 0xFF


def test_mx_axis_and_alias() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 3))
    a = mx(x, "mxfp6_e2m3", axis=0)
    b = quantize(x, "mxfp6_e2m3", axis=0)
    c = mx(np.ascontiguousarray(x.T), "mxfp6_e2m3", axis=-1)
    assert a.scales.shape == (2, 3)
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_array_equal(a.codes, c.codes.T)
    np.testing.assert_array_equal(a.dequantize(), c.dequantize().T)
    f32 = mx(x.astype(np.float32), "mxfp6_e2m3", axis=0)
    np.testing.assert_array_equal(f32.codes, mx(x.astype(np.float32).astype(np.float64),
                                                "mxfp6_e2m3", axis=0).codes)


def test_mx_bad_input() -> None:
    with pytest.raises(ValueError, match="block_size=32.*divide the axis length 40"):
        mx(np.zeros(40), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="mxfp9"):
        mx(np.zeros(32), "mxfp9")
    with pytest.raises(ValueError, match="scale_format"):
        quantize(np.zeros(32), "mxfp8_e4m3", scale_format="binary16")
    with pytest.raises(ValueError, match="block_size=16"):
        quantize(np.zeros(32), "mxfp8_e4m3", block_size=16)
    with pytest.raises(TypeError, match="dtype"):
        mx(np.array(["a"] * 32), "mxfp8_e4m3")


@pytest.mark.parametrize("name", [n for n in MX_FORMATS if n != "mxint8"])
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0, 6, 60]))
def test_mx_float32_fast_path_matches_exact_and_gfloat(name: str, seed: int,
                                                       spread: int) -> None:
    """float32 inputs take the ml_dtypes path: codes equal the exact float64 path (itself
    pinned to Fraction arithmetic) and gfloat, on random values plus element-grid ties."""
    x = _random_blocks(seed, 8, spread).astype(np.float32)
    # exact ties of the element grid, scaled into a block with a known exponent
    fmt_vals = mx(np.ones(32), name).element_format
    grid = np.unique(np.abs(gfloat_values(fmt_vals.name)))
    mids = (grid[1:] + grid[:-1]) / 2
    tie = np.resize(np.concatenate([mids, -mids]), 32).astype(np.float32)
    tie[0] = np.float32(fmt_vals.max)
    x[0] = np.ldexp(tie, int(np.random.default_rng(seed).integers(-20, 20)))
    fast = mx(x, name)
    slow = mx(x.astype(np.float64), name)
    np.testing.assert_array_equal(fast.codes, slow.codes)
    np.testing.assert_array_equal(fast.scale_codes, slow.scale_codes)
    np.testing.assert_array_equal(fast.dequantize(), slow.dequantize())
    for i in range(2):
        block = x[i].astype(np.float64)
        if _safe_for_gfloat64(block):
            assert [int(c) for c in fast.codes[i]] == _gfloat_codes(name, block)[1:]


def gfloat_values(elem: str) -> np.ndarray:
    from numerics.formats import get_format
    from numerics.quant._core import _magnitudes
    return _magnitudes(get_format(elem))
