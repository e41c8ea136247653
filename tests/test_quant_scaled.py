"""Scaled quantization (tensor/channel/block, int, NVFP4, DeepSeek fp8), packing, report,
checked against exact Fraction references."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from int_reference import round_to_int, sr_quotient

from numerics.codec import decode_exact, encode_exact
from numerics.formats import get_format
from numerics.quant import (
    deepseek_fp8,
    error_report,
    nvfp4,
    pack,
    quantize,
    unpack,
)

FLOAT_ELEMENTS = ["e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn", "e4m3fnuz", "e3m4",
                  "binary16", "bfloat16", "binary8p3"]
INT_ELEMENTS = {"int8": 127, "int4": 7}


def _tensor(seed: int, shape: tuple[int, ...], spread: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.ldexp(rng.uniform(-2, 2, shape), rng.integers(-spread, spread + 1, shape))
    x[rng.random(shape) < 0.05] = 0.0
    return x


def _ref_scale(amax: Fraction, emax: Fraction, sfmt: str, rounding: str) -> Fraction:
    if amax == 0:
        return Fraction(1)
    code = encode_exact(amax / emax, sfmt, rounding=rounding, overflow="saturate")
    s = Fraction(decode_exact(code, sfmt))
    return s if s != 0 else Fraction(get_format(sfmt).smallest_subnormal)


def _ref_int(y: Fraction, qmax: int, rounding: str) -> int:
    return max(-qmax, min(qmax, round_to_int(y, rounding)))


@settings(max_examples=40, deadline=None)
@given(elem=st.sampled_from(FLOAT_ELEMENTS + list(INT_ELEMENTS)),
       scaling=st.sampled_from(["tensor", "channel", "block"]),
       sfmt=st.sampled_from(["binary32", "bfloat16", "e8m0fnu", "e4m3fn"]),
       srnd=st.sampled_from(["ru", "rne", "rd"]),
       rounding=st.sampled_from(["rne", "rna", "rtz", "ru", "rd", "rto"]),
       seed=st.integers(0, 2**32 - 1))
def test_quantize_matches_exact_reference(elem: str, scaling: str, sfmt: str, srnd: str,
                                          rounding: str, seed: int) -> None:
    """Q11: scales and element codes equal one exact rounding of amax/max and of x/S
    (Fraction arithmetic), also when S is not a power of two."""
    x = _tensor(seed, (4, 6))
    kw: dict[str, Any] = {"block_size": 3} if scaling == "block" else {}
    q = quantize(x, elem, scaling=scaling, axis=1, scale_format=sfmt, scale_rounding=srnd,
                 rounding=rounding, **kw)
    s_full = q.scale_per_element()
    emax = (Fraction(INT_ELEMENTS[elem]) if elem in INT_ELEMENTS
            else get_format(elem).max_exact)
    for idx in np.ndindex(x.shape):
        # the scale of this element, recomputed from its group
        if scaling == "tensor":
            group = x
        elif scaling == "channel":
            group = x[:, idx[1]]
        else:
            b = idx[1] // 3
            group = x[idx[0], 3 * b:3 * b + 3]
        amax = max(abs(Fraction(float(v))) for v in group.ravel())
        s = _ref_scale(amax, emax, sfmt, srnd)
        assert Fraction(float(s_full[idx])) == s
        y = Fraction(float(x[idx])) / s
        if elem in INT_ELEMENTS:
            assert int(q.codes[idx].astype(np.int8 if elem == "int8" else np.uint8)) & 0xF \
                == _ref_int(y, INT_ELEMENTS[elem], rounding) & 0xF
            if elem == "int8":
                assert int(q.codes[idx].view(np.int8)) == _ref_int(y, 127, rounding)
        else:
            ref = encode_exact(y if y != 0 else float(x[idx]), elem, rounding=rounding,
                               overflow="saturate")
            assert int(q.codes[idx]) == ref, (x[idx], float(s), rounding)


@pytest.mark.parametrize("elem", list(INT_ELEMENTS))
@pytest.mark.parametrize("scaling", ["tensor", "channel"])
@pytest.mark.parametrize("sr_bits", [None, 3])
def test_quantize_int_stochastic_matches_the_documented_rule(elem: str, scaling: str,
                                                             sr_bits: int | None) -> None:
    """Stochastic rounding of int elements: element i (flat C order) goes away from zero
    iff its draw from (seed, i) is below the dropped fraction of x / S (Fractions, the
    documented stream), with binary32 scales that are not powers of two."""
    x = _tensor(5, (8, 40))
    x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    q = quantize(x, elem, scaling=scaling, axis=0, rounding="sr", rng=2**63 + 9,
                 sr_bits=sr_bits)
    s_full = q.scale_per_element()
    qmax = INT_ELEMENTS[elem]
    for i, (xi, si) in enumerate(zip(x.ravel().tolist(), s_full.ravel().tolist())):
        k = sr_quotient(xi, si, -qmax, qmax, 1.0, 2**63 + 9, i, sr_bits)
        assert int(q.codes.ravel()[i]) == k & (0xFF if elem == "int8" else 0xF), (i, xi, si)


def test_quantize_dtypes_and_shapes() -> None:
    x = _tensor(1, (2, 3, 8))
    for dt in (np.float16, np.float32, ml_dtypes.bfloat16):
        xd = x.astype(dt)
        q = quantize(xd, "e4m3fn", scaling="block", block_size=4)
        assert q.codes.shape == x.shape and q.scales.shape == (2, 3, 2)
        assert q.dequantize().dtype == np.float64
    q = quantize(x, "int8", scaling="block", block_size=(1, 3, 4))
    assert q.scales.shape == (2, 1, 2)
    q0 = quantize(3.0, "e4m3fn")
    assert abs(q0.dequantize() - 3.0) <= q0.bound and q0.codes == 0x7E  # 448 * RU32(3/448)
    qi = quantize(np.arange(-3, 4), "int4", scale_format="e8m0fnu")
    assert qi.dequantize().tolist() == [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]


def test_quantize_nan_inf_policy() -> None:
    x = np.array([1.0, np.inf, -np.inf, 2.0])
    q = quantize(x, "e4m3fn")
    assert q.scales.item() == float(np.float32(2 / 448)) or q.scales.item() >= 2 / 448
    d = q.dequantize()
    assert d[1] == 448 * q.scales.item() and d[2] == -448 * q.scales.item()
    qi = quantize(x, "e5m2", overflow="ieee")
    assert np.isinf(qi.dequantize()[1])
    qn = quantize(np.array([1.0, np.nan]), "e4m3fn")
    assert np.isnan(qn.dequantize()[1])
    with pytest.raises(ValueError, match="NaN"):
        quantize(np.array([1.0, np.nan]), "e2m1fn")
    with pytest.raises(ValueError, match="NaN"):
        quantize(np.array([1.0, np.nan]), "int8")


def test_quantize_bad_input() -> None:
    x = np.zeros((4, 100))
    with pytest.raises(ValueError, match=r"block_size=32.*divide the axis length 100"):
        quantize(x, "e4m3fn", scaling="block", block_size=32)
    with pytest.raises(ValueError, match="block_size=None"):
        quantize(x, "e4m3fn", scaling="block")
    with pytest.raises(ValueError, match="element_format='fp7'"):
        quantize(x, "fp7")
    with pytest.raises(ValueError, match="scaling='row'"):
        quantize(x, "e4m3fn", scaling="row")
    with pytest.raises(ValueError, match="rounding='nearest'"):
        quantize(x, "e4m3fn", rounding="nearest")
    with pytest.raises(ValueError, match="axis=5"):
        quantize(x, "e4m3fn", scaling="channel", axis=5)
    with pytest.raises(TypeError, match="dtype"):
        quantize(np.array([1 + 2j]), "e4m3fn")
    with pytest.raises(ValueError, match="scale_format='nope'"):
        quantize(x, "e4m3fn", scale_format="nope")


def test_nvfp4_recipe_exact() -> None:
    """g = RNE32(amax/2688), s_b = RNE_e4m3(amax_b/(6g)), e = RNE_e2m1(x/(s_b g)) saturated,
    recomputed with exact rationals."""
    rng = np.random.default_rng(5)
    x = np.ldexp(rng.standard_normal((3, 64)), rng.integers(-9, 9, (3, 1)))
    x[0, :16] *= 1e-6  # a block whose scale underflows
    q = nvfp4(x)
    amax = Fraction(float(np.max(np.abs(x))))
    g = Fraction(decode_exact(encode_exact(amax / 2688, "binary32"), "binary32"))
    assert q.global_scale is not None and Fraction(float(q.global_scale)) == g
    for r in range(3):
        for b in range(4):
            blk = x[r, 16 * b:16 * b + 16]
            ab = max(abs(Fraction(float(v))) for v in blk)
            sb = Fraction(decode_exact(encode_exact(ab / (6 * g), "e4m3fn", overflow="saturate"),
                                       "e4m3fn"))
            assert int(q.scale_codes[r, b]) == encode_exact(ab / (6 * g), "e4m3fn",
                                                            overflow="saturate")
            for i, v in enumerate(blk):
                c = int(q.codes[r, 16 * b + i])
                if sb == 0:
                    assert c == 0
                    continue
                ref = encode_exact(Fraction(float(v)) / (sb * g), "e2m1fn", overflow="saturate")
                assert c == ref
    assert np.all(np.abs(q.dequantize() - x) <= q.bound)
    with pytest.raises(ValueError, match="divide the axis length 20"):
        nvfp4(np.zeros(20))
    with pytest.raises(ValueError, match="NaN"):
        nvfp4(np.full(16, np.nan))
    assert np.all(nvfp4(np.zeros(16)).dequantize() == 0)
    assert quantize(x, "nvfp4").codes.tolist() == q.codes.tolist()


@pytest.mark.parametrize("tensor_scale", ["tensor", None])
@pytest.mark.parametrize("finite", [0.0, 1e-300, 2.0 ** -20])
def test_nvfp4_infinities_keep_sign_and_saturate(tensor_scale: str | None,
                                                 finite: float) -> None:
    """An infinity saturates to +-6 s_b g with its sign, also in a block whose finite
    elements are zero or so small that their scale rounds to zero: that block takes the
    largest E4M3 scale (448).  A block whose scale does not round to zero keeps it."""
    x = np.zeros(48)
    x[0], x[1], x[2] = np.inf, -np.inf, finite  # block 0: the scale of 'finite' is 0
    x[16:32] = 1.0
    x[32], x[33] = -np.inf, 0.5  # block 2: s_b from 0.5
    q = nvfp4(x, tensor_scale=tensor_scale)
    g = 1.0 if q.global_scale is None else float(q.global_scale)
    assert q.scale_codes.tolist()[0] == 0x7E  # 448
    y = q.dequantize()
    assert y[0] == 6 * 448 * g and y[1] == -6 * 448 * g
    assert y[2] == 0.0 and np.all(y[3:16] == 0.0)
    sb = Fraction(decode_exact(encode_exact(Fraction(0.5) / (6 * Fraction(g)), "e4m3fn"),
                               "e4m3fn"))
    assert Fraction(float(q.scales[2])) == sb * Fraction(g)
    assert y[32] == -6 * float(q.scales[2]) and y[33] == 6 * float(q.scales[2])
    assert np.all(np.abs(y - x)[np.isfinite(x)] <= q.bound[np.isfinite(x)])


def test_deepseek_fp8_blocks() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((256, 384))
    qw = deepseek_fp8(w, kind="weight")
    assert qw.scales.shape == (2, 3)
    blk = w[128:256, 256:384]
    s = Fraction(decode_exact(encode_exact(Fraction(float(np.max(np.abs(blk)))) / 448,
                                           "binary32"), "binary32"))
    assert Fraction(float(qw.scales[1, 2])) == s
    qa = deepseek_fp8(w, kind="activation")
    assert qa.scales.shape == (256, 3)
    assert np.all(np.abs(qa.dequantize() - w) <= qa.bound)
    assert np.all(np.abs(qw.dequantize() - w) <= qw.bound)
    with pytest.raises(ValueError, match="divide the axis length 100"):
        deepseek_fp8(np.zeros((128, 100)), kind="weight")
    with pytest.raises(ValueError, match="kind='bias'"):
        deepseek_fp8(w, kind="bias")


@settings(max_examples=30, deadline=None)
@given(bits=st.sampled_from([4, 6, 8]), n=st.integers(0, 70), seed=st.integers(0, 2**32 - 1))
def test_pack_unpack_roundtrip_and_bit_order(bits: int, n: int, seed: int) -> None:
    codes = np.random.default_rng(seed).integers(0, 1 << bits, n).astype(np.uint8)
    data = pack(codes, bits)
    assert data.dtype == np.uint8 and data.size == -(-n * bits // 24) * 3 if bits == 6 else True
    np.testing.assert_array_equal(unpack(data, bits, n), codes)
    # independent reference: an LSB-first bit stream built with Python ints
    stream = sum(int(c) << (bits * i) for i, c in enumerate(codes))
    ref = [(stream >> (8 * k)) & 0xFF for k in range(data.size)]
    assert data.tolist() == ref


def test_pack_known_bytes_and_errors() -> None:
    assert pack(np.array([0xA, 0x5]), 4).tolist() == [0x5A]
    assert pack(np.array([63, 0, 0, 0]), 6).tolist() == [0x3F, 0, 0]
    assert pack(np.array([0, 0, 0, 63]), 6).tolist() == [0, 0, 0xFC]
    with pytest.raises(ValueError, match="bits=5"):
        pack(np.zeros(3, np.uint8), 5)
    with pytest.raises(ValueError, match="a code 16"):
        pack(np.array([16]), 4)
    with pytest.raises(ValueError, match="need"):
        unpack(np.zeros(2, np.uint8), 6, 4)


def test_error_report_values() -> None:
    x = np.array([0.0, 1e-9, 0.5, 1.0, 300.0, -1000.0])
    q = quantize(x, "e4m3fn", scale_format="e8m0fnu", scale_rounding="rd")
    r = error_report(x, q)
    d = q.dequantize()
    err = d - x
    assert r.mse == pytest.approx(np.mean(err**2))
    assert r.max_abs_error == np.max(np.abs(err))
    assert r.sqnr_db == pytest.approx(10 * np.log10(np.sum(x**2) / np.sum(err**2)))
    s = q.scales.item()
    assert r.fraction_saturated == np.mean(np.abs(x) > 448 * s) > 0
    assert r.fraction_flushed == pytest.approx(1 / 6)
    exact = error_report(np.array([1.0, 2.0]), quantize(np.array([1.0, 2.0]), "e4m3fn",
                                                               scale_format="e8m0fnu"))
    assert exact.sqnr_db == float("inf") and exact.mse == 0
    with pytest.raises(TypeError, match="Quantized"):
        error_report(x, d)  # type: ignore[arg-type]


@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz", "ru", "rd", "rto"])
def test_Q11_quotient_underflow(rounding: str) -> None:
    """Q11 where ``x/S`` underflows binary64 (to zero or to a subnormal): the element is
    still the rounding of the exact quotient, sign and direction included."""
    x = np.array([1e10, 3e-320, -3e-320, 5e-300, -5e-300])
    q = quantize(x, "e4m3fn", rounding=rounding)
    s = Fraction(float(q.scales.item()))
    for i in range(1, x.size):
        y = Fraction(float(x[i])) / s
        ref = encode_exact(y, "e4m3fn", rounding=rounding, overflow="saturate")
        assert int(q.codes[i]) == ref, (x[i], rounding)
        assert np.signbit(q.dequantize()[i]) == (x[i] < 0)


@pytest.mark.parametrize("sfmt", ["binary32", "bfloat16", "e4m3fn", "e8m0fnu"])
@pytest.mark.parametrize("srnd", ["ru", "rne", "rd", "rto"])
def test_Q11_scale_quotient_underflow(sfmt: str, srnd: str) -> None:
    """Q11 for the scale ``amax / max`` when that quotient underflows binary64: the scale
    is the exact rounding (or the smallest positive scale where that is zero), never a
    negative or NaN scale, and the bound holds."""
    for amax in (1e-310, 1e-300, 5e-324):
        x = np.array([amax, -amax / 2])
        q = quantize(x, "bfloat16", scale_format=sfmt, scale_rounding=srnd)
        ref = _ref_scale(Fraction(amax), get_format("bfloat16").max_exact, sfmt, srnd)
        assert Fraction(float(q.scales.item())) == ref, (amax, sfmt, srnd)
        assert np.all(np.abs(q.dequantize() - x) <= q.bound)


@pytest.mark.parametrize("kw", [{}, {"scaling": "channel", "axis": 1},
                                {"scaling": "channel", "axis": 0}])
def test_quantize_empty_tensor(kw: dict) -> None:
    """An empty tensor quantizes to empty codes (tensor and channel scaling crashed)."""
    q = quantize(np.zeros((0, 4)), "int8", **kw)
    assert q.codes.shape == (0, 4) and q.dequantize().shape == (0, 4)


@pytest.mark.parametrize("k", [-600, 660])
def test_error_report_sqnr_at_extreme_magnitudes(k: int) -> None:
    """SQNR is scale-free: x and its quantization both multiplied by 2**k (k = -600, 660:
    about 1e-181 and 1e199, beyond every scale format of quantize, so the scales are
    multiplied directly) give the same SQNR as at 1 (the unscaled sums of squares under-
    and overflowed to inf and NaN), and equal the exact value."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64)
    q = quantize(x, "e4m3fn")
    m = 2.0**k
    y = x * m
    qy = replace(q, scales=q.scales * m, source=y)
    want = error_report(x, q).sqnr_db
    got = error_report(y, qy).sqnr_db
    d = [Fraction(float(v)) for v in qy.dequantize()]
    sig = sum(Fraction(float(v)) ** 2 for v in y)
    noise = sum((a - Fraction(float(b))) ** 2 for a, b in zip(d, y))
    exact = 10 * (math.log10(sig.numerator * noise.denominator)
                  - math.log10(sig.denominator * noise.numerator))
    assert np.isfinite(got) and abs(got - exact) < 1e-9 and abs(want - exact) < 1e-9
