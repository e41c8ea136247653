"""The compiled block kernels (numerics.kernels.quant): NVFP4 variants against an exact
Fraction reference, identical bits for every thread count and input layout, dequantize."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from int_reference import DETERMINISTIC, int_code, round_quotient, sr_quotient
from sr_stream import GOLDEN, draw
from thread_pool import available

import numerics
from numerics.codec import decode_exact, encode_exact
from numerics.quant import SCALE_MODES, mx, nvfp4, quantize
from numerics.quant._core import (
    INT_FORMATS,
    IntFormat,
    divide_codes,
    divide_with_sticky,
    encode_values,
    grid_format,
    round_elements,
)
from numerics.quant.mx import MX_FORMATS
from numerics.threads import get_num_threads, set_num_threads


# ---------------------------------------------------------------------------------------------
# NVFP4 exact reference (two-level, per-expert, one-level)
# ---------------------------------------------------------------------------------------------
def _rne(value: Fraction, fmt: str) -> Fraction:
    return Fraction(decode_exact(encode_exact(value, fmt, rounding="rne",
                                              overflow="saturate"), fmt))


def _tensor_scale(amax: Fraction) -> Fraction:
    if amax == 0:
        return Fraction(1)
    g = _rne(amax / 2688, "binary32")
    return g if g != 0 else Fraction(2) ** -149


def ref_nvfp4(x: np.ndarray, tensor_scale: str | None) -> tuple[list[int], list[int], list]:
    """(element codes, E4M3 scale codes, g per row-block) of x of shape (E, n*16), blocks
    along the last axis, in exact rationals."""
    xs = [[Fraction(float(v)) if np.isfinite(v) else None for v in row] for row in x]
    finite = [abs(v) for row in xs for v in row if v is not None]
    codes: list[int] = []
    scodes: list[int] = []
    gs: list[Fraction] = []
    for e, row in enumerate(xs):
        if tensor_scale == "tensor":
            g = _tensor_scale(max(finite, default=Fraction(0)))
        elif tensor_scale == "expert":
            g = _tensor_scale(max((abs(v) for v in row if v is not None), default=Fraction(0)))
        else:
            g = Fraction(1)
        for b in range(len(row) // 16):
            blk = row[16 * b:16 * b + 16]
            amax = max((abs(v) for v in blk if v is not None), default=Fraction(0))
            sc = encode_exact(amax / (6 * g), "e4m3fn", rounding="rne", overflow="saturate")
            if decode_exact(sc, "e4m3fn") == 0 and None in blk:  # an infinity saturates
                sc = encode_exact(448, "e4m3fn")
            scodes.append(sc)
            s = Fraction(decode_exact(sc, "e4m3fn")) * g
            gs.append(g)
            for j, v in enumerate(blk):
                raw = float(x[e, 16 * b + j])
                if s == 0:
                    codes.append(0)
                elif v is None:
                    codes.append(encode_exact(raw, "e2m1fn", overflow="saturate"))
                elif v == 0:
                    codes.append(encode_exact(float(np.copysign(0.0, raw)), "e2m1fn"))
                else:
                    codes.append(encode_exact(v / s, "e2m1fn", rounding="rne",
                                              overflow="saturate"))
    return codes, scodes, gs


def _nvfp4_input(seed: int, experts: int, spread: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    expo = rng.integers(-spread, spread + 1, (experts, 1)) + rng.integers(-8, 1, (experts, 48))
    x = np.ldexp(rng.uniform(-2, 2, (experts, 48)), expo)
    x[rng.random(x.shape) < 0.05] = 0.0
    x[rng.random(x.shape) < 0.03] = -0.0
    x[0, 16:32] *= 2.0**-40  # a block whose scale underflows under the tensor scale
    return x


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), experts=st.integers(2, 3),
       spread=st.sampled_from([0, 10, 100, 900]),
       tensor_scale=st.sampled_from(["tensor", "expert", None]))
def test_nvfp4_variants_match_exact_reference(seed: int, experts: int, spread: int,
                                              tensor_scale: str | None) -> None:
    """Two-level, per-expert and one-level NVFP4: every scale and element code is one exact
    rounding (claim Q8), also for float64 inputs far outside float32's range."""
    x = _nvfp4_input(seed, experts, spread)
    if seed % 3 == 0:
        x[-1, 5] = np.inf * (1 if seed % 2 else -1)
    q = nvfp4(x, tensor_scale=tensor_scale)
    codes, scodes, gs = ref_nvfp4(x, tensor_scale)
    assert q.codes.reshape(-1).tolist() == codes
    assert q.scale_codes.reshape(-1).tolist() == scodes
    scales = [Fraction(decode_exact(c, "e4m3fn")) * g for c, g in zip(scodes, gs)]
    assert [Fraction(float(s)) for s in q.scales.reshape(-1)] == scales
    if tensor_scale is None:
        assert q.global_scale is None
    elif tensor_scale == "tensor":
        assert isinstance(q.global_scale, float) and Fraction(q.global_scale) == gs[0]
    else:
        g = q.global_scale
        assert isinstance(g, np.ndarray) and g.shape == (experts,)
        assert [Fraction(float(v)) for v in g] == gs[::3]


def test_nvfp4_per_expert_3d() -> None:
    """A stacked (experts, rows, K) weight: one tensor scale per expert, blocks along K."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((3, 4, 32)) * np.array([1e-3, 1.0, 1e3])[:, None, None]
    q = nvfp4(w, tensor_scale="expert")
    g = q.global_scale
    assert isinstance(g, np.ndarray) and q.scales.shape == (3, 4, 2) and g.shape == (3,)
    for e in range(3):
        alone = nvfp4(w[e])
        assert g[e] == alone.global_scale
        np.testing.assert_array_equal(q.codes[e], alone.codes)
    assert bool(np.all(np.abs(q.dequantize() - w) <= q.bound))
    with pytest.raises(ValueError, match="leading expert axis"):
        nvfp4(w, axis=0, tensor_scale="expert")
    with pytest.raises(ValueError, match="tensor_scale='global'"):
        nvfp4(w, tensor_scale="global")


# ---------------------------------------------------------------------------------------------
# the same bits for every thread count and layout
# ---------------------------------------------------------------------------------------------
def _special_matrix(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.ldexp(rng.standard_normal((96, 64)), rng.integers(-30, 30, (96, 64)) // 8)
    x[3, 0:32] = 0.0
    x[4, 1] = np.nan
    x[5, 7] = -np.inf
    x[6, 32:] = 2.0**140
    return x


def _results(x: np.ndarray, axis: int = -1) -> list[np.ndarray]:
    out = []
    for name in MX_FORMATS:
        for mode in SCALE_MODES:
            q = mx(x, name, axis=axis, scale_mode=mode)
            out += [q.codes, q.scale_codes, q.dequantize()]
    finite = np.where(np.isnan(x), 0.0, x)
    for ts in ("tensor", None):
        q = nvfp4(finite, axis=axis, tensor_scale=ts)
        out += [q.codes, q.scale_codes, q.scales, q.dequantize(np.float32)]
    return out


def test_same_bits_for_every_thread_count() -> None:
    x = _special_matrix(1)
    before = get_num_threads()
    try:
        results = []
        for n in available(1, 2, 4):
            set_num_threads(n)
            results.append(_results(x))
    finally:
        set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_same_bits_for_every_layout_and_dtype() -> None:
    """Big-endian, strided, negative strides, Fortran order and float32 input give the codes
    of the plain float64 array; a blocked axis in the middle equals moving it last."""
    x = _special_matrix(2)
    ref = _results(x)
    x32 = np.where(np.abs(x) > 1e38, 1e38, x).astype(np.float32)
    backwards = np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    assert all(st < 0 for st in backwards.strides)  # (x[::-1][::-1] was x itself)
    for variant in (x.astype(">f8"), np.asfortranarray(x), backwards,
                    np.repeat(x, 2, axis=1)[:, ::2]):
        for a, b in zip(ref, _results(variant)):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(_results(x32.astype(np.float64)), _results(x32)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_results(x32), _results(x32.astype(">f4"))):
        np.testing.assert_array_equal(a, b)
    cube = np.stack([x, 2 * x, -x])  # (3, 96, 64): blocks of 32 along the middle axis
    last = np.ascontiguousarray(np.moveaxis(cube, 1, -1))  # (3, 64, 96)
    for name in MX_FORMATS:
        qa, qb = mx(cube, name, axis=1), mx(last, name, axis=-1)
        np.testing.assert_array_equal(np.moveaxis(qa.codes, 1, -1), qb.codes)
        np.testing.assert_array_equal(np.moveaxis(qa.scale_codes, 1, -1), qb.scale_codes)
        np.testing.assert_array_equal(np.moveaxis(qa.dequantize(), 1, -1), qb.dequantize())
    finite = np.where(np.isnan(cube), 0.0, cube)
    na, nb = nvfp4(finite, axis=1), nvfp4(np.moveaxis(finite, 1, -1))
    np.testing.assert_array_equal(np.moveaxis(na.codes, 1, -1), nb.codes)
    np.testing.assert_array_equal(np.moveaxis(na.dequantize(), 1, -1), nb.dequantize())


def test_ml_dtypes_and_float16_inputs() -> None:
    x = _special_matrix(3)[:, :32]
    finite = np.where(np.isfinite(x), x, 0.0)
    for dt in (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        with np.errstate(over="ignore"):
            v = finite.astype(dt)
        for name in ("mxfp8_e4m3", "mxint8"):
            np.testing.assert_array_equal(mx(v, name).codes,
                                          mx(v.astype(np.float64), name).codes)
        np.testing.assert_array_equal(nvfp4(v).codes, nvfp4(v.astype(np.float64)).codes)


def test_empty_and_zero_dimensional_inputs() -> None:
    for shape in ((0, 32), (4, 0), (0,)):
        q = mx(np.zeros(shape), "mxfp8_e4m3")
        assert q.codes.shape == shape and q.dequantize().shape == shape
        n = nvfp4(np.zeros(shape))
        assert n.codes.shape == shape and n.dequantize().shape == shape
    with pytest.raises(ValueError, match="0-d"):
        mx(np.float32(1.0), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="0-d"):
        nvfp4(1.0)


# ---------------------------------------------------------------------------------------------
# dequantize
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_dequantize_is_value_times_scale(name: str) -> None:
    """Q10: the kernel's dequantization equals element value * scale, exactly; float32 output
    is that product rounded once."""
    x = _special_matrix(4)
    q = mx(x, name, axis=0)
    vals = q.values
    scale = np.repeat(q.scales, 32, axis=0)
    with np.errstate(invalid="ignore"):
        ref = vals * scale
    np.testing.assert_array_equal(q.dequantize(), ref)
    # Q10's exactness itself: each finite float64 product is the exact one
    for v, s, d in zip(vals.ravel(), scale.ravel(), ref.ravel()):
        if np.isfinite(d):
            assert Fraction(float(d)) == Fraction(float(v)) * Fraction(float(s))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(q.dequantize(np.float32), ref.astype(np.float32))
    with pytest.raises(ValueError, match="dtype"):
        q.dequantize(np.int32)


def test_scaled_stochastic_rounding_same_for_every_thread_count() -> None:
    """Stochastic rounding of the scaled schemes draws from (seed, index): the same codes for
    1 and 2 threads and for the same int seed; another seed gives other codes."""
    x = np.random.default_rng(8).standard_normal((64, 64))
    before = get_num_threads()
    try:
        set_num_threads(1)
        one = quantize(x, "e4m3fn", rounding="sr", rng=7, sr_bits=8).codes
        ints = quantize(x, "int4", scaling="block", block_size=16, rounding="sr", rng=7).codes
        set_num_threads(min(2, before))
        np.testing.assert_array_equal(
            one, quantize(x, "e4m3fn", rounding="sr", rng=7, sr_bits=8).codes)
        np.testing.assert_array_equal(
            ints, quantize(x, "int4", scaling="block", block_size=16, rounding="sr",
                           rng=7).codes)
    finally:
        set_num_threads(before)
    assert not np.array_equal(one, quantize(x, "e4m3fn", rounding="sr", rng=8, sr_bits=8).codes)


def test_split_calls_give_the_bits_of_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs big enough that every driver of numerics.kernels.quant and .blockscaled
    cuts its range in two pieces on 2 threads (checked by watching spread): MX (flat runs,
    strided blocks, MXINT8), NVFP4, dequantize, the scaled schemes (nearest and stochastic)
    and the block-scaled GEMMs give the same bits as on 1 thread."""
    import sys

    from numerics import quant
    from numerics.accum.blockscaled import blockscaled_gemm
    from numerics.kernels import blockscaled as kb
    from numerics.kernels import quant as kq
    from numerics.kernels.spread import spread

    split: dict[str, int] = {}

    def watched(span: Callable[[int, int], object], n: int, **kw: int) -> list[object]:
        out = spread(span, n, **kw)
        caller = sys._getframe(1).f_code.co_name
        split[caller] = max(split.get(caller, 0), len(out))
        return out

    monkeypatch.setattr(kq, "spread", watched)
    monkeypatch.setattr(kb, "spread", watched)
    rng = np.random.default_rng(12)
    x = np.ldexp(rng.standard_normal((512, 256)), rng.integers(-40, 40, (512, 1)))
    x[3, 5], x[300, 40], x[9, :32], x[400, 64:96] = np.nan, -np.inf, 0.0, 2.0**-140
    x = x.astype(np.float32)
    finite = np.where(np.isfinite(x), x, np.float32(1.5))
    a, b = rng.standard_normal((128, 256)), rng.standard_normal((256, 64))

    def results() -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for name, axis in (("mxfp8_e4m3", -1), ("mxfp4_e2m1", 0), ("mxint8", -1)):
            q = mx(x, name, axis=axis, scale_mode="rceil")
            out += [q.codes, q.scale_codes, q.dequantize(), q.dequantize(np.float32)]
        for axis in (-1, 0):
            q = nvfp4(finite, axis=axis)
            out += [q.codes, q.scale_codes, q.scales, q.dequantize(np.float32)]
        q8 = quantize(finite, "e4m3fn")
        out += [q8.dequantize(), encode_values(q8.dequantize(), q8.element_format),
                quantize(finite, "e4m3fn", rounding="sr", rng=3, sr_bits=8).codes,
                quantize(finite, "int4", scaling="block", block_size=16, rounding="sr",
                         rng=3).codes]
        out.append(blockscaled_gemm(quant.mx(a, "mxfp8_e5m2", axis=1),
                                    quant.mx(b, "mxfp8_e4m3", axis=0), 0.5,
                                    preset="blackwell-mxf8f6f4"))
        out.append(blockscaled_gemm(quant.nvfp4(a, axis=1), quant.nvfp4(b, axis=0),
                                    preset="blackwell-nvf4"))
        return out

    before = get_num_threads()
    try:
        set_num_threads(1)
        one = results()
        assert max(split.values()) == 1
        try:
            set_num_threads(2)
        except ValueError:
            pytest.skip("a single-thread pool")
        two = results()
    finally:
        set_num_threads(before)
    drivers = {"mx_quantize", "block_amax", "nvfp4_quantize", "block_dequantize",
               "divide_round", "round_nudged", "decode_codes", "divide_round_int",
               "mxf8f6f4_gemm", "mxf4_chain"}
    assert {k for k, v in split.items() if v == 2} >= drivers, split
    for p, q in zip(one, two):
        assert p.dtype == q.dtype and p.shape == q.shape and p.tobytes() == q.tobytes()


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3",
                                  "mxfp4_e2m1"])
@pytest.mark.parametrize("mode", range(4))
def test_mx_lane_rounding_matches_round_pair(name: str, mode: int) -> None:
    """MX quantization rounds elements with narrow.rne_code (flat runs when the blocked
    axis is last, strided blocks otherwise); both equal the general round_pair path."""
    from numerics.formats import get_format
    from numerics.kernels import quant as kq

    elem, emax_elem = MX_FORMATS[name]
    fmt = get_format(elem)
    rng = np.random.default_rng(mode)
    x = (rng.standard_normal((64, 128)) * np.exp2(rng.integers(-140, 125, (64, 1))))
    x[3, 5], x[7, 40], x[9, :32] = np.nan, np.inf, 0.0
    x[11, 64:96] = 2.0**-149
    x = x.astype(np.float32)
    params = kq.params_tuple(fmt)
    outs = []
    for lean, arr in ((True, x), (True, np.asfortranarray(x)), (False, x)):
        x3 = arr.reshape(64, 128, 1) if arr.flags.c_contiguous else arr.T.reshape(1, 128, 64)
        codes = np.empty(x3.shape, np.uint8)
        ecodes = np.empty((x3.shape[0], 4, x3.shape[2]), np.uint8)
        with np.errstate(all="ignore"):
            kq.mx_quantize(x3, params, False, 0, 0, 1.0, emax_elem, fmt.trailing_bits,
                           float(fmt.max), mode, lean, codes, ecodes)
        if not arr.flags.c_contiguous:
            codes, ecodes = codes.reshape(128, 64).T, ecodes.reshape(4, 64).T
        outs.append((codes.reshape(64, 128), ecodes.reshape(64, 4)))
    for codes, ecodes in outs[:2]:
        assert np.array_equal(codes, outs[2][0]) and np.array_equal(ecodes, outs[2][1])


def _division_cases(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Quotients at ties and grid points of every format (scales that are not powers of
    two times element values and midpoints), random ones over a wide range, quotients
    that overflow, underflow to zero or to float64 subnormals, zeros of both signs,
    infinities and NaN."""
    s = np.abs(rng.standard_normal(n)) * np.exp2(rng.integers(-60, 60, n)) + 1e-300
    grid = np.ldexp(rng.integers(-2**10, 2**10, n).astype(np.float64), rng.integers(-20, 6, n))
    half = np.ldexp(rng.integers(-2**10, 2**10, n) * 2.0 + 1, rng.integers(-20, 6, n))
    x = np.where(rng.random(n) < 0.5, grid, half) * s  # x / s exact or a tie, if exact
    wild = rng.standard_normal(n) * np.exp2(rng.integers(-1000, 1000, n))
    x = np.where(rng.random(n) < 0.3, wild, x)
    x[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-320, -1e308, 5e-324, -5e-324, -1e-300]
    s[:10] = [1.0, 3.0, 0.7, 1e-30, 2.0, 1e10, 1e-20, 3.0, 3.0, 1e300]  # (-0 quotients)
    return x, s


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "bfloat16",
                                  "binary16", "e4m3fnuz", "binary8p3", "e8m0fnu",
                                  "binary32"])
@pytest.mark.parametrize("rounding, overflow, sr_bits", [
    ("rne", "saturate", None), ("rne", "ieee", None), ("rtz", "saturate", None),
    ("ru", "ieee", None), ("rd", "saturate", None), ("rna", "ieee", None),
    ("rto", "saturate", None), ("sr", "saturate", None), ("sr", "ieee", 8)])
def test_divide_codes_match_the_quotient_and_sticky_path(name: str, rounding: str,
                                                          overflow: str,
                                                          sr_bits: int | None) -> None:
    """The one-pass kernel (numerics.kernels.quant.divide_round) gives the codes of the
    numpy path it replaced in the scaled schemes: the quotient and the sign of its
    remainder (TwoProduct on frexp significands), rounded, decoded, encoded."""
    fmt = numerics.get_format(name)
    x, s = _division_cases(np.random.default_rng(len(name) + len(rounding)), 4000)
    if not fmt.has_nan:
        x = np.where(np.isnan(x), 1.0, x)
    rng = 11 if rounding == "sr" else None
    got = divide_codes(x, s, fmt, rounding=rounding, overflow=overflow, rng=rng,
                       sr_bits=sr_bits)
    y, sticky = divide_with_sticky(x, s)
    want = encode_values(round_elements(y, fmt, sticky=sticky, rounding=rounding,
                                        overflow=overflow, rng=rng, sr_bits=sr_bits), fmt)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(x[i], s[i], hex(int(got[i])), hex(int(want[i]))) for i in bad[:4]]


@pytest.mark.parametrize("name", ["e4m3fn", "e2m1fn", "bfloat16", "e4m3fnuz"])
def test_Q11_divide_codes_round_the_exact_quotient(name: str) -> None:
    """Claim Q11 for the one-pass kernel: encode_exact of the Fraction x / s, nearest-even
    (the binary32 round-to-odd lanes) and toward zero (round_pair), on ties and near-ties
    of the format's grid."""
    fmt = numerics.get_format(name)
    x, s = _division_cases(np.random.default_rng(3), 600)
    keep = np.isfinite(x) & (np.abs(x) > 0)
    x, s = x[keep], s[keep]
    for rounding in ("rne", "rtz"):
        got = divide_codes(x, s, fmt, rounding=rounding, overflow="saturate")
        for xi, si, c in zip(x.tolist(), s.tolist(), got.tolist()):
            want = encode_exact(Fraction(xi) / Fraction(si), fmt, rounding=rounding,
                                overflow="saturate")
            assert c == want, (name, rounding, xi, si, hex(c), hex(want))


def test_Q11_divide_codes_with_scales_beyond_the_split_range() -> None:
    """Scales above 2**900 (whose Veltkamp split overflows) take the scaled-significand
    path: directed roundings of x / s still follow the exact quotient."""
    rng = np.random.default_rng(8)
    s = 1.5e301 * (1 + 2.0**-40) * (1 + rng.random(300))
    k = np.ldexp(rng.standard_normal(300).astype(np.float32).astype(np.float64), -110)
    x = k * s  # x / s within half a float64 ulp of a binary32 value: the residual decides
    f = numerics.get_format("binary32")
    for rounding in ("rtz", "ru", "rd"):
        got = divide_codes(x, s, f, rounding=rounding, overflow="saturate")
        for xi, si, c in zip(x.tolist(), s.tolist(), got.tolist()):
            assert c == encode_exact(Fraction(xi) / Fraction(si), f, rounding=rounding,
                                     overflow="saturate"), (rounding, xi, si)


# ---------------------------------------------------------------------------------------------
# integer elements: the exact quotient rounded onto k * quantum (int_reference, Fractions)
# ---------------------------------------------------------------------------------------------
INT_TARGETS = {
    "int8": INT_FORMATS["int8"],
    "int4": INT_FORMATS["int4"],
    "mxint8_element": INT_FORMATS["mxint8_element"],
    "int3": IntFormat(name="int3", bits=3, qmin=-3, qmax=3),
    # user formats at the ends of the quantum range, asymmetric and one-sided
    "quantum4": IntFormat(name="quantum4", bits=6, qmin=-20, qmax=31, quantum=4.0),
    "quantum2**120": IntFormat(name="quantum2**120", bits=5, qmin=-15, qmax=9,
                               quantum=2.0**120),
    "quantum2**-149": IntFormat(name="quantum2**-149", bits=3, qmin=-4, qmax=0,
                                quantum=2.0**-149),
}
INT_ROUNDINGS = [(r, None) for r in DETERMINISTIC] + [("sr", None), ("sr", 1), ("sr", 7),
                                                      ("sr", 52)]


def _int_cases(fmt: IntFormat, rng: np.random.Generator, n: int) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """``(x, s)`` whose quotient ``x / (s * quantum)`` is an integer or exactly half-way
    between two (up to three past the clamp limits), one float64 step off those, or
    anywhere; scales of few significant bits (so the grid products are exact) from
    ``2**-1074`` to ``2**1000``, and 1e300, 1e-300; zeros, infinities, extreme x."""
    e = rng.choice([-1074, -1000, -300, -100, -20, 0, 0, 0, 5, 40, 100, 900, 1000], n)
    odd = rng.integers(1, 2**20, n) | 1
    s = np.ldexp(odd.astype(np.float64), e - np.where(e <= -1054, 0, 19))
    s = np.where(rng.random(n) < 0.05, rng.choice([1e300, 1e-300, 0.7, 3.0]), s)
    lim = max(-fmt.qmin, fmt.qmax) + 3
    half = rng.integers(-2 * lim - 1, 2 * lim + 2, n)  # quotient half / 2: ties and points
    with np.errstate(over="ignore", under="ignore"):
        x = half * 0.5 * fmt.quantum * s
        near = np.nextafter(x, np.where(rng.random(n) < 0.5, np.inf, -np.inf))
        x = np.where(rng.random(n) < 0.3, near, x)
        wild = rng.standard_normal(n) * np.exp2(rng.integers(-1074, 1024, n).astype(float))
    x = np.where(rng.random(n) < 0.15, wild, x)
    x = np.where(np.isnan(x), 1.0, x)
    x[:10] = [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 1.7976931348623157e308,
              -1.7976931348623157e308, 2.0**-1022, -1.0]
    s[:10] = [3.0, 3.0, 0.7, 0.7, 3.0, 1e-300, 1e-300, 1e300, 2.0**70 * 3, 5e-324]
    return x, s


def _int_reference(x: np.ndarray, s: np.ndarray, fmt: IntFormat, rounding: str,
                   seed: int, sr_bits: int | None, indices: Iterable[int]) -> list[int]:
    out = []
    for i in indices:
        xi, si = float(x[i]), float(s[i])
        if rounding == "sr":
            k = sr_quotient(xi, si, fmt.qmin, fmt.qmax, fmt.quantum, seed, i, sr_bits)
        else:
            k = round_quotient(xi, si, fmt.qmin, fmt.qmax, fmt.quantum, rounding)
        out.append(int_code(k, fmt.bits))
    return out


@pytest.mark.parametrize("name", list(INT_TARGETS))
@pytest.mark.parametrize("rounding, sr_bits", INT_ROUNDINGS)
def test_int_divide_codes_round_the_exact_quotient(name: str, rounding: str,
                                                   sr_bits: int | None) -> None:
    """Integer elements (numerics.kernels.quant.divide_round_int): x / s rounded once onto
    k * quantum by the exact Fraction quotient in every deterministic mode, and by the
    documented stochastic rule (the exact fraction against the documented stream); ties,
    grid points and one float64 step off them, past the clamp limits, huge and tiny
    scales, zeros and infinities (which saturate)."""
    fmt = INT_TARGETS[name]
    x, s = _int_cases(fmt, np.random.default_rng(len(name) * 7 + len(rounding)), 1500)
    seed = 2**64 - 12345
    got = divide_codes(x, s, fmt, rounding=rounding, rng=seed, sr_bits=sr_bits)
    assert got.dtype == np.uint8
    want = _int_reference(x, s, fmt, rounding, seed, sr_bits, range(x.size))
    bad = np.flatnonzero(got != np.array(want, dtype=np.uint8))
    assert bad.size == 0, [(x[i], s[i], int(got[i]), want[i]) for i in bad[:4]]


def test_int_divide_codes_spot_checks() -> None:
    """Hand-worked int8 and int4 cases: 2.5 / 1 is a tie (2 to even, 3 away), 127.5
    saturates to 127 (0x7F), -127.5 to -127 (0x81); 1 / 3 = 0.333.. is 0 toward zero and
    1 upward; 5e-324 / 3 underflows to 0.0 with a positive remainder: 1 upward; int4 -7.5
    is -7 (0x9), NaN gives code 0 (quantize refuses it first)."""
    int8, int4 = INT_FORMATS["int8"], INT_FORMATS["int4"]
    x = np.array([2.5, 127.5, -127.5, 1.0, 5e-324])
    s = np.array([1.0, 1.0, 1.0, 3.0, 3.0])
    assert divide_codes(x, s, int8, rounding="rne").tolist() == [2, 0x7F, 0x81, 0, 0]
    assert divide_codes(x, s, int8, rounding="rna").tolist() == [3, 0x7F, 0x81, 0, 0]
    assert divide_codes(x, s, int8, rounding="ru").tolist() == [3, 0x7F, 0x81, 1, 1]
    assert divide_codes(x, s, int8, rounding="rd").tolist() == [2, 0x7F, 0x80 + 1, 0, 0]
    assert divide_codes(np.array([-7.5, np.nan]), np.ones(2), int4).tolist() == [0x9, 0]


def test_int_codes_same_for_every_thread_count_and_piece() -> None:
    """The integer kernel on 1, 2 and 4 threads (counts the pool holds) and on the pieces
    4 threads would take gives the same codes, which match the exact reference at the
    piece boundaries (where each piece's first draw is taken)."""
    from numerics.kernels import quant as kq
    from numerics.kernels.spread import PARALLEL_MIN, pieces

    n = 3 * PARALLEL_MIN + 1234
    x0, s0 = _int_cases(INT_FORMATS["int8"], np.random.default_rng(21), 4096)
    reps = -(-n // x0.size)
    x, s = np.tile(x0, reps)[:n], np.tile(s0, reps)[:n]
    edges = sorted({lo for p in (2, 3, 4) for lo, _ in pieces(n, p, 1024)})
    check = sorted({min(n - 1, max(0, e + d)) for e in edges for d in (-2, -1, 0, 1)}
                   | {n - 1})
    before = get_num_threads()
    for name in ("int8", "int4"):
        fmt = INT_FORMATS[name]
        for rounding, sr_bits in (("rne", None), ("rtz", None), ("sr", None), ("sr", 7)):
            runs = []
            try:
                for threads in (1, 2, 4):
                    try:
                        set_num_threads(threads)
                    except ValueError:
                        continue  # a pool of fewer threads: the pieces below stand in
                    runs.append(divide_codes(x, s, fmt, rounding=rounding, rng=99,
                                             sr_bits=sr_bits))
            finally:
                set_num_threads(before)
            mode = 6 if sr_bits is not None else (7 if rounding == "sr" else
                                                  DETERMINISTIC.index(rounding))
            pieced = np.empty(n, np.uint8)
            grid = kq.params_tuple(grid_format(fmt.quantum))
            for lo, hi in pieces(n, 4, 1024):
                kq.divide_round_int_span(x, s, grid, np.int64(fmt.qmin), np.int64(fmt.qmax),
                                         np.int64(15 if name == "int4" else 255),
                                         np.int64(mode), np.uint64(99),
                                         np.int64(sr_bits or 53), rounding == "sr", pieced,
                                         lo, hi)
            runs.append(pieced)
            for other in runs[1:]:
                np.testing.assert_array_equal(runs[0], other)
            want = _int_reference(x, s, fmt, rounding, 99, sr_bits, check)
            assert runs[0][check].tolist() == want, (name, rounding, sr_bits)


def _seed_drawing(word: int, index: int) -> int:
    """The seed whose 64-bit draw at ``index`` is ``word`` (the documented stream inverted:
    SplitMix64's finalizer is a bijection)."""
    def unmix(z: int) -> int:
        for shift, mul in ((31, 0x94D049BB133111EB), (27, 0xBF58476D1CE4E5B9)):
            x = z
            for _ in range(64 // shift + 1):
                x = z ^ (x >> shift)
            z = (x * pow(mul, -1, 2**64)) % 2**64
        x = z
        for _ in range(3):
            x = z ^ (x >> 30)
        return x

    return unmix(unmix(word) ^ ((index * GOLDEN) % 2**64))


def test_int_stochastic_rounding_at_the_extreme_draws() -> None:
    """The vanishing parts of the stochastic rule, seen through the two draws that reach
    them: 0.9 / 0.3 (float64 quotient 3.0, exact quotient just above) goes up to 4 on the
    draw 0 only; 30.499999999999996 / 6.1 (float64 quotient 5.0, exact just below: the
    dropped fraction is 1 - 2**-53 above 4) stays at 4 on the largest 53-bit draw only."""
    int8 = INT_FORMATS["int8"]
    cases = ((0.9, 0.3, 3, 0, (3, 4)), (30.499999999999996, 6.1, 5, 2**64 - 1, (5, 4)))
    for xv, sv, point, word, (usual, rare) in cases:
        assert xv / sv == point and (Fraction(xv) / Fraction(sv) > point) == (rare > usual)
        x, s = np.full(8, xv), np.full(8, sv)
        seed = _seed_drawing(word, 5)
        assert draw(seed, 5, 53) == word >> 11
        got = divide_codes(x, s, int8, rounding="sr", rng=seed)
        assert got[5] == rare and set(got.tolist()) <= {usual, rare}
        assert got.tolist() == _int_reference(x, s, int8, "sr", seed, None, range(8))
