"""Block-scaled GEMM (numerics.accum.blockscaled) against the exact reference.

Each test names the claim of proofs/blockscaled_gemm.md it checks.  The reference
(tests/blockscaled_reference.py) is an exact Fraction loop written separately.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from blockscaled_reference import _epilogue, floor_log2, reference_gemm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics import accum, quant
from numerics.accum.blockscaled import (
    BLOCKSCALED_PRESETS,
    _alpha_epilogue,
    _element_table,
    blockscaled_gemm,
    dequantized_gemm,
)
from numerics.codec import decode_exact
from numerics.formats import as_format
from numerics.quant import Quantized
from numerics.threads import get_num_threads, set_num_threads

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MX_ELEMS = {"mxfp8_e4m3": "e4m3fn", "mxfp8_e5m2": "e5m2", "mxfp6_e3m2": "e3m2fn",
            "mxfp6_e2m3": "e2m3fn", "mxfp4_e2m1": "e2m1fn"}


def make_q(codes: np.ndarray, scale_codes: np.ndarray, scheme: str, axis: int,
           global_scale: float | None = None) -> Quantized:
    """A Quantized built from raw codes (the public fields quant.mx/nvfp4 fill in)."""
    codes = np.asarray(codes, np.uint8)
    if scheme == "nvfp4":
        elem, sfmt, blk = as_format("e2m1fn"), as_format("e4m3fn"), 16
    else:
        elem, sfmt, blk = as_format(MX_ELEMS[scheme]), as_format("e8m0fnu"), 32
    block = (1, blk) if axis == 1 else (blk, 1)
    return Quantized(codes=codes, scales=np.zeros(np.shape(scale_codes)),
                     scale_codes=np.asarray(scale_codes, np.uint8), element_format=elem,
                     scale_format=sfmt, scheme=scheme, block=block,
                     source=np.zeros(codes.shape), global_scale=global_scale)


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, np.float32).view(np.uint32)


def f32(b: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", b))[0])


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    g, w = bits(got), bits(want)
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, (f"{bad.size} differ; first at {np.unravel_index(bad[0], g.shape)}: "
                           f"{g.flat[bad[0]]:#010x} vs {w.flat[bad[0]]:#010x}")


# ------------------------------------------------------------------ strategies
def element_codes(fmt: str) -> st.SearchStrategy[int]:
    """Codes with weight on zeros, subnormals, the largest values and specials."""
    f = as_format(fmt)
    n = 1 << f.bits
    sign = f.sign_mask
    t = f.trailing_bits
    special = [0, sign, 1, sign | 1, (1 << t) - 1, 1 << t, f.max_finite_code,
               sign | f.max_finite_code]
    return st.one_of(st.sampled_from(special), st.integers(0, n - 1))


E8M0_CODES = st.one_of(st.sampled_from([0, 1, 2, 120, 126, 127, 128, 134, 200, 253, 254]),
                       st.integers(0, 254))
UE4M3_CODES = st.one_of(st.sampled_from([0, 1, 7, 8, 0x38, 0x7E, 0x80 | 0x38]),
                        st.integers(0, 0x7E))
C_VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0**-149, -(2.0**-126), 3.4e38, 2.0**-30]),
    st.floats(width=32, allow_nan=False, allow_infinity=False))


@st.composite
def mx_operands(draw: Any, kind: str) -> tuple[Quantized, Quantized, np.ndarray]:
    M, N = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if kind == "mxf8f6f4":
        sa, sb = draw(st.sampled_from(sorted(MX_ELEMS))), draw(st.sampled_from(sorted(MX_ELEMS)))
        K = 32 * draw(st.integers(1, 3))
    else:
        sa = sb = "mxfp4_e2m1"
        K = 64 * draw(st.integers(1, 2))
    ca = np.array(draw(st.lists(element_codes(MX_ELEMS[sa]), min_size=M * K,
                                max_size=M * K))).reshape(M, K)
    cb = np.array(draw(st.lists(element_codes(MX_ELEMS[sb]), min_size=K * N,
                                max_size=K * N))).reshape(K, N)
    if draw(st.booleans()):  # cancellation across blocks: block 2 = -block 1
        sign = as_format(MX_ELEMS[sa]).sign_mask
        if K >= 64:
            ca[:, 32:64] = ca[:, 0:32] ^ sign
            cb[32:64] = cb[0:32]
    nb = K // 32
    scale_a = np.array(draw(st.lists(E8M0_CODES, min_size=M * nb, max_size=M * nb)))
    scale_b = np.array(draw(st.lists(E8M0_CODES, min_size=nb * N, max_size=nb * N)))
    if draw(st.integers(0, 9)) == 0:  # a NaN scale somewhere
        scale_a[draw(st.integers(0, scale_a.size - 1))] = 0xFF
    C = np.array(draw(st.lists(C_VALUES, min_size=M * N, max_size=M * N)),
                 np.float32).reshape(M, N)
    return (make_q(ca, scale_a.reshape(M, nb), sa, 1),
            make_q(cb, scale_b.reshape(nb, N), sb, 0), C)


@st.composite
def nvfp4_operands(draw: Any) -> tuple[Quantized, Quantized, np.ndarray]:
    M, N = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    K = 16 * draw(st.integers(1, 8))
    ca = np.array(draw(st.lists(element_codes("e2m1fn"), min_size=M * K,
                                max_size=M * K))).reshape(M, K)
    cb = np.array(draw(st.lists(element_codes("e2m1fn"), min_size=K * N,
                                max_size=K * N))).reshape(K, N)
    nb = K // 16
    scale_a = np.array(draw(st.lists(UE4M3_CODES, min_size=M * nb, max_size=M * nb)))
    scale_b = np.array(draw(st.lists(UE4M3_CODES, min_size=nb * N, max_size=nb * N)))
    if draw(st.integers(0, 9)) == 0:
        scale_b[draw(st.integers(0, scale_b.size - 1))] = draw(st.sampled_from([0x7F, 0xFF]))
    C = np.array(draw(st.lists(C_VALUES, min_size=M * N, max_size=M * N)),
                 np.float32).reshape(M, N)
    g = draw(st.one_of(st.none(), st.sampled_from([1.0, 2.0**-20, float(np.float32(1 / 2688))])))
    return make_q(ca, scale_a.reshape(M, nb), "nvfp4", 1, g), make_q(
        cb, scale_b.reshape(nb, N), "nvfp4", 0, g), C


# ------------------------------------------------------------------ B1, B2: the rules
def test_B0_element_tables_match_the_codec() -> None:
    """B0: every element code's (sig, exp) decomposition is its exact value."""
    for name in ("e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"):
        fmt = as_format(name)
        sig, exp, kind = _element_table(fmt)
        for code in range(1 << fmt.bits):
            v = decode_exact(code, fmt)
            if kind[code]:
                assert not math.isfinite(v)
                assert kind[code] == (3 if math.isnan(v) else 1 if v > 0 else 2)
                continue
            assert Fraction(int(sig[code])) * Fraction(2) ** (int(exp[code]) - fmt.trailing_bits) \
                == v
            assert int(exp[code]) >= fmt.emin


@SETTINGS
@given(mx_operands("mxf8f6f4"))
def test_B1_mxf8f6f4_matches_exact_reference(ops: tuple[Quantized, Quantized, np.ndarray]) -> None:
    """B1: kind::mxf8f6f4, bit for bit against the exact reference."""
    A, B, C = ops
    assert_same_bits(blockscaled_gemm(A, B, C, preset="blackwell-mxf8f6f4"),
                     reference_gemm(A, B, C, "blackwell-mxf8f6f4"))


@SETTINGS
@given(mx_operands("mxf4"))
def test_B2_mxf4_matches_exact_reference(ops: tuple[Quantized, Quantized, np.ndarray]) -> None:
    """B2: kind::mxf4 (E8M0 per 32), bit for bit against the exact reference."""
    A, B, C = ops
    assert_same_bits(blockscaled_gemm(A, B, C, preset="blackwell-mxf4"),
                     reference_gemm(A, B, C, "blackwell-mxf4"))


@SETTINGS
@given(nvfp4_operands())
def test_B2_nvf4_matches_exact_reference(ops: tuple[Quantized, Quantized, np.ndarray]) -> None:
    """B2, B5, B8: kind::mxf4nvf4 (UE4M3 per 16, K padded to 64, tensor-scale
    epilogue), bit for bit against the exact reference (which does not pad)."""
    A, B, C = ops
    assert_same_bits(blockscaled_gemm(A, B, C, preset="blackwell-nvf4"),
                     reference_gemm(A, B, C, "blackwell-nvf4"))


@pytest.mark.parametrize("scheme,preset", [("mxfp8_e4m3", "blackwell-mxf8f6f4"),
                                           ("mxfp8_e5m2", "blackwell-mxf8f6f4"),
                                           ("mxfp6_e2m3", "blackwell-mxf8f6f4"),
                                           ("mxfp4_e2m1", "blackwell-mxf4"),
                                           ("nvfp4", "blackwell-nvf4")])
def test_B1_B2_real_quantizers(scheme: str, preset: str) -> None:
    """B1/B2 on operands from quant.mx / quant.nvfp4 of wide-range data."""
    rng = np.random.default_rng(sum(map(ord, scheme)))
    x = rng.standard_normal((4, 128)) * np.exp2(rng.integers(-40, 40, (4, 1)))
    y = rng.standard_normal((128, 3)) * np.exp2(rng.integers(-40, 40, (1, 3)))
    if scheme == "nvfp4":
        A, B = quant.nvfp4(x, axis=1), quant.nvfp4(y, axis=0)
    else:
        A, B = quant.mx(x, scheme, axis=1), quant.mx(y, scheme, axis=0)
    C = rng.standard_normal((4, 3)).astype(np.float32)
    assert_same_bits(blockscaled_gemm(A, B, C, preset=preset), reference_gemm(A, B, C, preset))


# ------------------------------------------------------------------ B3: specials
def _ones(scheme: str, axis: int, K: int, scale: int) -> Quantized:
    one = {"mxfp8_e4m3": 0x38, "mxfp8_e5m2": 0x3C, "mxfp4_e2m1": 0x2, "nvfp4": 0x2}[scheme]
    blk = 16 if scheme == "nvfp4" else 32
    shape = (1, K) if axis == 1 else (K, 1)
    sshape = (1, K // blk) if axis == 1 else (K // blk, 1)
    return make_q(np.full(shape, one), np.full(sshape, scale), scheme, axis)


@pytest.mark.parametrize("scheme,preset,nan_scale", [
    ("mxfp8_e4m3", "blackwell-mxf8f6f4", 0xFF), ("mxfp4_e2m1", "blackwell-mxf4", 0xFF),
    ("nvfp4", "blackwell-nvf4", 0x7F), ("nvfp4", "blackwell-nvf4", 0xFF)])
def test_B3_nan_scale_gives_nan(scheme: str, preset: str, nan_scale: int) -> None:
    """B3: a NaN block scale anywhere along K makes the output 0x7FFFFFFF."""
    K = 128
    one = 127 if scheme != "nvfp4" else 0x38
    A = _ones(scheme, 1, K, one)
    A.scale_codes[0, -1] = nan_scale
    B = _ones(scheme, 0, K, one)
    assert bits(blockscaled_gemm(A, B, 5.0, preset=preset))[0, 0] == 0x7FFFFFFF


def test_B3_mxf8_infinities_follow_ieee() -> None:
    """B3: e5m2 infinities: inf * x = inf, inf * 0 = NaN, inf - inf = NaN; C = inf passes."""
    K = 32
    A = _ones("mxfp8_e5m2", 1, K, 127)
    B = _ones("mxfp8_e5m2", 0, K, 127)
    A.codes[0, 3] = 0x7C  # +inf
    assert f32(int(bits(blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4"))[0, 0])) == math.inf
    B.codes[3, 0] = 0x00
    assert bits(blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4"))[0, 0] == 0x7FFFFFFF
    B.codes[3, 0] = 0x3C
    assert bits(blockscaled_gemm(A, B, -math.inf, preset="blackwell-mxf8f6f4"))[0, 0] \
        == 0x7FFFFFFF
    A.codes[0, 3] = 0x3C
    assert f32(int(bits(blockscaled_gemm(A, B, -math.inf,
                                         preset="blackwell-mxf8f6f4"))[0, 0])) == -math.inf


def test_B3_mxf4_infinite_c_passes_through() -> None:
    """B3 (our decision where MMA-Sim raises): an infinite C in kind::mxf4 stays."""
    A, B = _ones("mxfp4_e2m1", 1, 64, 127), _ones("mxfp4_e2m1", 0, 64, 127)
    for c in (math.inf, -math.inf):
        assert float(blockscaled_gemm(A, B, c, preset="blackwell-mxf4")[0, 0]) == c
    assert bits(blockscaled_gemm(A, B, math.nan, preset="blackwell-mxf4"))[0, 0] == 0x7FFFFFFF


# ------------------------------------------------------------------ B4: alignment, truncation
def test_B4_truncation_within_one_instruction() -> None:
    """B4: products below 2**(E - 25) vanish; a negative sum truncates toward zero."""
    K = 32
    A = _ones("mxfp8_e4m3", 1, K, 127)
    B = _ones("mxfp8_e4m3", 0, K, 127)
    A.codes[0, :] = 0
    A.codes[0, 0] = 0x38  # 1.0
    A.codes[0, 1] = 0x01  # 2**-9
    B.codes[:, 0] = 0x01  # 2**-9 everywhere: products 2**-9 and 2**-18
    B.codes[0, 0] = 0x38
    B.scale_codes[0, 0] = 127
    # 1 + 2**-18 (E = 0): kept, 18 < 25 bits
    assert float(blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")[0, 0]) == 1 + 2.0**-18
    # scale B's block by 2**-10: products 2**-10 and 2**-28; 2**-28 < 2**(-10-25)? no:
    # E = -10, kept down to 2**-35, so 2**-28 stays; C = 1 moves E to 0 and drops it
    B.scale_codes[0, 0] = 117
    d = blockscaled_gemm(A, B, 1.0, preset="blackwell-mxf8f6f4")
    assert float(d[0, 0]) == float(np.float32(1 + 2.0**-10))
    # negative: -(1 - tiny) truncates toward zero
    d = blockscaled_gemm(A, B, -1.0, preset="blackwell-mxf8f6f4")
    assert float(d[0, 0]) == -1 + 2.0**-10


def test_B4_scales_at_both_ends_of_e8m0() -> None:
    """B4, B7: scales 2**-127 * 2**-127 give subnormal-or-zero outputs; 2**127 * 2**127
    overflow to inf (MMA-Sim's float32 cast), never to FLT_MAX."""
    for preset, scheme in (("blackwell-mxf8f6f4", "mxfp8_e4m3"), ("blackwell-mxf4", "mxfp4_e2m1")):
        K = 64
        lo = blockscaled_gemm(_ones(scheme, 1, K, 0), _ones(scheme, 0, K, 0), preset=preset)
        ref = reference_gemm(_ones(scheme, 1, K, 0), _ones(scheme, 0, K, 0), None, preset)
        assert_same_bits(lo, ref)
        assert bits(lo)[0, 0] == 0  # 64 * 2**-254 is far below 2**-149: +0
        hi = blockscaled_gemm(_ones(scheme, 1, K, 254), _ones(scheme, 0, K, 254), preset=preset)
        assert float(hi[0, 0]) == math.inf
        mid = blockscaled_gemm(_ones(scheme, 1, K, 0), _ones(scheme, 0, K, 254 - 127 + 127 - 100),
                               preset=preset)
        assert_same_bits(mid, reference_gemm(_ones(scheme, 1, K, 0),
                                             _ones(scheme, 0, K, 154), None, preset))


def test_B4_zero_run_still_sets_the_alignment() -> None:
    """B4 (mxf4): a run of 16 products summing to zero keeps its scales' exponent in
    the alignment, as MMA-Sim's nv_fused_dot_add_with_block_scale does."""
    K = 64
    A = _ones("mxfp4_e2m1", 1, K, 127)
    B = _ones("mxfp4_e2m1", 0, K, 127)
    A.codes[0, 0:16] = np.tile([0x2, 0xA], 8)  # +1, -1, ...: the first run sums to 0
    A.codes[0, 16:32] = 0
    A.scale_codes[0, 0] = 127 + 60  # block 0 at 2**60
    A.codes[0, 32:64] = 0
    A.codes[0, 32] = 0x2  # block 1: a single 1 * 1 at 2**0
    d = blockscaled_gemm(A, B, preset="blackwell-mxf4")
    # E = 60: 1.0 is 2**-60 relative, below 2**-35: truncated to 0
    assert bits(d)[0, 0] == 0
    assert_same_bits(d, reference_gemm(A, B, None, "blackwell-mxf4"))
    A.scale_codes[0, 0] = 127 + 30  # E = 30: 1.0 is kept (30 < 35)
    assert float(blockscaled_gemm(A, B, preset="blackwell-mxf4")[0, 0]) == 1.0


# ------------------------------------------------------------------ B5: padding
@pytest.mark.parametrize("K", [16, 32, 48, 80])
def test_B5_padding_changes_nothing(K: int) -> None:
    """B5: K not a multiple of 64 (FP4 kinds) padded with zero blocks equals the
    reference run with a shorter last instruction."""
    rng = np.random.default_rng(K)
    x = rng.standard_normal((3, K)) * 2.0**-100
    y = rng.standard_normal((K, 2))
    C = rng.standard_normal((3, 2)).astype(np.float32) * np.float32(2.0**-98)
    A, B = quant.nvfp4(x, axis=1), quant.nvfp4(y, axis=0)
    assert_same_bits(blockscaled_gemm(A, B, C, preset="blackwell-nvf4"),
                     reference_gemm(A, B, C, "blackwell-nvf4"))
    if K % 32 == 0:
        A, B = quant.mx(x, "mxfp4_e2m1", axis=1), quant.mx(y, "mxfp4_e2m1", axis=0)
        assert_same_bits(blockscaled_gemm(A, B, C, preset="blackwell-mxf4"),
                         reference_gemm(A, B, C, "blackwell-mxf4"))


# ------------------------------------------------------------------ B6: chaining
@pytest.mark.parametrize("scheme,preset,inst", [("mxfp8_e4m3", "blackwell-mxf8f6f4", 32),
                                                ("mxfp4_e2m1", "blackwell-mxf4", 64)])
def test_B6_instructions_chain_through_binary32(scheme: str, preset: str, inst: int) -> None:
    """B6: a K = 3 * inst product equals three calls, each taking the last result as C."""
    rng = np.random.default_rng(inst)
    x = rng.standard_normal((5, 3 * inst)) * np.exp2(rng.integers(-8, 8, (5, 3 * inst)))
    y = rng.standard_normal((3 * inst, 4))
    C = rng.standard_normal((5, 4)).astype(np.float32)
    A, B = quant.mx(x, scheme, axis=1), quant.mx(y, scheme, axis=0)
    whole = blockscaled_gemm(A, B, C, preset=preset)
    d = C
    for t in range(3):
        ks = slice(t * inst, (t + 1) * inst)
        At, Bt = quant.mx(x[:, ks], scheme, axis=1), quant.mx(y[ks], scheme, axis=0)
        d = blockscaled_gemm(At, Bt, d, preset=preset)
    assert_same_bits(whole, d)


# ------------------------------------------------------------------ B7: output rounding
def test_B7_zero_is_positive_and_subnormals_are_kept() -> None:
    """B7: an exact zero, and a negative value truncating to zero, give +0; results
    below 2**-126 keep their subnormal bits."""
    A = _ones("mxfp8_e4m3", 1, 32, 127)
    B = _ones("mxfp8_e4m3", 0, 32, 127)
    A.codes[0, :] = 0
    assert bits(blockscaled_gemm(A, B, -0.0, preset="blackwell-mxf8f6f4"))[0, 0] == 0
    A.codes[0, 0] = 0x38
    A.scale_codes[0, 0] = 0  # 2**-127: the product 1 * 2**-127 is subnormal
    d = blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")
    assert float(d[0, 0]) == 2.0**-127
    A.codes[0, 0] = 0xB8  # -1: -2**-127 - C(2**-149... ) stays negative subnormal
    d = blockscaled_gemm(A, B, 2.0**-149, preset="blackwell-mxf8f6f4")
    assert float(d[0, 0]) == -(2.0**-127) + 2.0**-149


# ------------------------------------------------------------------ B8: NVFP4 epilogue
F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(st.lists(st.tuples(F32, F32), min_size=1, max_size=20),
       st.sampled_from([1.0, 0.5, 1.5, 2.0**-20, float(np.float32(1 / 2688)), 3.0]),
       st.sampled_from([1.0, 0.75, 2.0**-30, float(np.float32(1 / 3000))]))
def test_B8_epilogue_rounds_once(pairs: list[tuple[float, float]], ga: float,
                                 gb: float) -> None:
    """B8: D = RNE32(RNE32(gA gB) acc + C) with one rounding (ties included)."""
    acc = np.array([p[0] for p in pairs], np.float32)
    c = np.array([p[1] for p in pairs], np.float32)
    assert_same_bits(_alpha_epilogue(acc, ga, gb, c), _epilogue(acc, ga, gb, c))


def test_B8_epilogue_ties() -> None:
    """B8: 1 + 2**-24 (a tie) goes to even; a sticky bit below it breaks the tie."""
    acc = np.array([1.0, 1.0 + 2.0**-23, 1.0], np.float32)
    c = np.array([2.0**-24, 2.0**-24, 2.0**-24 + 2.0**-40], np.float32)
    d = _alpha_epilogue(acc, 1.0, 1.0, c)
    assert d.tolist() == [1.0, 1.0 + 2.0**-22, 1.0 + 2.0**-23]


# ------------------------------------------------------------------ B9: error bound
@SETTINGS
@given(mx_operands("mxf8f6f4"))
def test_B9_one_instruction_error_bound(ops: tuple[Quantized, Quantized, np.ndarray]) -> None:
    """B9: per instruction, |D - X| < 33 * 2**(E - 25) + ulp32(D) for the exact X."""
    A, B, C = ops
    K = 32
    A = make_q(A.codes[:, :K], A.scale_codes[:, :1], A.scheme, 1)
    B = make_q(B.codes[:K], B.scale_codes[:1], B.scheme, 0)
    d = blockscaled_gemm(A, B, C, preset="blackwell-mxf8f6f4")
    a_vals, b_vals = A.values, B.values
    for i in range(d.shape[0]):
        for j in range(d.shape[1]):
            sa = int(A.scale_codes[i, 0])
            sb = int(B.scale_codes[0, j])
            if sa == 0xFF or sb == 0xFF or not np.isfinite(a_vals[i]).all() or not \
                    np.isfinite(b_vals[:, j]).all() or not math.isfinite(float(d[i, j])):
                continue
            fa, fb = as_format(MX_ELEMS[A.scheme]), as_format(MX_ELEMS[B.scheme])
            assert _b9_within_bound(d[i, j], C[i, j], a_vals[i], b_vals[:, j],
                                    sa + sb - 254, fa.emin, fb.emin), (i, j)


def _b9_within_bound(d: Any, c: Any, a_row: np.ndarray, b_col: np.ndarray, scale_exp: int,
                     emin_a: int, emin_b: int) -> bool:
    """Whether one instruction's result ``d`` lies within B9's bound
    ``33 * 2**(E - 25) + ulp32(d)`` of the exact value, with ``E`` as B1 defines it (each
    operand's exponent clamped below at its format's emin; the significand product in
    [0, 4) does not move it).  True for an all-zero instruction only when ``d`` is +0."""
    terms = [Fraction(float(c))]
    exps = [max(floor_log2(abs(terms[0])), -126)] if terms[0] else []
    for x, y in zip(a_row, b_col):
        fx, fy = Fraction(float(x)), Fraction(float(y))
        terms.append(fx * fy * Fraction(2) ** scale_exp)
        if fx and fy:
            exps.append(max(floor_log2(abs(fx)), emin_a) + max(floor_log2(abs(fy)), emin_b)
                        + scale_exp)
    if not exps:
        return bool(bits(np.float32(d)) == 0)
    E = max(exps)
    X = sum(terms, Fraction(0))
    D = Fraction(float(d))
    ulp = Fraction(2) ** (max(floor_log2(abs(D)) if D else -126, -126) - 23)
    return abs(D - X) < 33 * Fraction(2) ** (E - 25) + ulp


def test_B9_bound_is_nearly_attained() -> None:
    """B9 on a block built to come close to the bound: 448 * 448 - 448 * 448 cancels
    (E = 16), and each of the 30 products 63/16384 = 1.97 * 2**(E - 25) loses almost
    2**(E - 25) to truncation.  The error is 0.0568 against the bound's 0.0645; a model
    keeping one fractional bit fewer (24) would truncate every product to 0, err by
    0.115 and fail."""
    a = np.array([[448.0, -448.0] + [7 / 128] * 30])
    b = np.array([[448.0], [448.0]] + [[9 / 128]] * 30)
    A = quant.mx(a, "mxfp8_e4m3", axis=1)
    B = quant.mx(b, "mxfp8_e4m3", axis=0)
    assert np.array_equal(A.dequantize(), a) and np.array_equal(B.dequantize(), b)
    d = blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")
    scale_exp = int(A.scale_codes[0, 0]) + int(B.scale_codes[0, 0]) - 254
    fa = as_format("e4m3fn")
    av, bv = A.values, B.values
    assert _b9_within_bound(d[0, 0], 0.0, av[0], bv[:, 0], scale_exp, fa.emin, fa.emin)
    exact = 30 * Fraction(63, 16384)
    assert 0.05 < float(exact - Fraction(float(d[0, 0]))) < 0.0645


# ------------------------------------------------------------------ B10: naive recipe
def test_B10_naive_recipe_differs() -> None:
    """B10: dequantize-then-float64 keeps 1 + 2**-30; the hardware model truncates it."""
    x = np.zeros((1, 64))
    x[0, 0], x[0, 32] = 1.0, 2.0**-30
    A = quant.mx(x, "mxfp8_e4m3", axis=1)
    B = quant.mx(np.ones((64, 1)), "mxfp8_e4m3", axis=0)
    hw = blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")
    naive = dequantized_gemm(A, B)
    assert float(hw[0, 0]) == 1.0 and float(naive[0, 0]) == 1.0 + 2.0**-30
    exact = sum(Fraction(float(u)) * Fraction(float(v))
                for u, v in zip(A.dequantize()[0], B.dequantize()[:, 0]))
    assert Fraction(float(naive[0, 0])) == exact


# ------------------------------------------------------------------ threads, layout, errors
def test_thread_count_does_not_change_bits() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((33, 256)), rng.standard_normal((256, 17))
    A, B = quant.mx(x, "mxfp8_e5m2", axis=1), quant.mx(y, "mxfp8_e4m3", axis=0)
    An, Bn = quant.nvfp4(x, axis=1), quant.nvfp4(y, axis=0)
    before = get_num_threads()
    try:
        outs = []
        for n in sorted({1, min(2, before), before}):
            set_num_threads(n)
            outs.append((blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4"),
                         blockscaled_gemm(An, Bn, preset="blackwell-nvf4")))
    finally:
        set_num_threads(before)
    for o in outs[1:]:
        assert_same_bits(o[0], outs[0][0])
        assert_same_bits(o[1], outs[0][1])


def test_strided_and_fortran_operands() -> None:
    rng = np.random.default_rng(3)
    x = np.asfortranarray(rng.standard_normal((6, 128)))
    y = rng.standard_normal((4, 128)).T  # a transposed view
    A, B = quant.mx(x, "mxfp4_e2m1", axis=1), quant.mx(y, "mxfp4_e2m1", axis=0)
    assert_same_bits(blockscaled_gemm(A, B, preset="blackwell-mxf4"),
                     reference_gemm(A, B, None, "blackwell-mxf4"))


def test_empty_shapes() -> None:
    """M = 0 gives an empty result; K = 0 runs no instruction, so D = C."""
    A = quant.mx(np.zeros((0, 64)), "mxfp8_e4m3", axis=1)
    B = quant.mx(np.zeros((64, 3)), "mxfp8_e4m3", axis=0)
    assert blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4").shape == (0, 3)
    for scheme, preset in (("mxfp8_e4m3", "blackwell-mxf8f6f4"), ("mxfp4_e2m1", "blackwell-mxf4"),
                           ("nvfp4", "blackwell-nvf4")):
        if scheme == "nvfp4":
            A, B = quant.nvfp4(np.zeros((2, 0)), axis=1), quant.nvfp4(np.zeros((0, 3)), axis=0)
        else:
            A = quant.mx(np.zeros((2, 0)), scheme, axis=1)
            B = quant.mx(np.zeros((0, 3)), scheme, axis=0)
        assert blockscaled_gemm(A, B, 5.0, preset=preset).tolist() == [[5.0] * 3] * 2


def test_bad_input_names_the_argument() -> None:
    x = np.ones((2, 64))
    A = quant.mx(x, "mxfp4_e2m1", axis=1)
    B = quant.mx(x.T, "mxfp4_e2m1", axis=0)
    with pytest.raises(ValueError, match="preset='volta'"):
        blockscaled_gemm(A, B, preset="volta")
    with pytest.raises(TypeError, match="A_q"):
        blockscaled_gemm(x, B, preset="blackwell-mxf4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="B_q quantized as 'nvfp4'"):
        blockscaled_gemm(A, quant.nvfp4(x.T, axis=0), preset="blackwell-mxf4")
    with pytest.raises(ValueError, match="quantized along K"):
        blockscaled_gemm(A, quant.mx(np.ones((64, 64)), "mxfp4_e2m1", axis=1),
                         preset="blackwell-mxf4")
    with pytest.raises(ValueError, match="must broadcast"):
        blockscaled_gemm(A, B, np.ones(3), preset="blackwell-mxf4")
    with pytest.raises(ValueError, match="preset 'blackwell-mxf4' takes"):
        blockscaled_gemm(quant.mx(x, "mxfp8_e4m3", axis=1), B, preset="blackwell-mxf4")
    bad = make_q(np.full((2, 64), 0x1F), np.zeros((2, 2)), "mxfp4_e2m1", 1)
    with pytest.raises(ValueError, match="A_q.codes .* 4-bit codes"):
        blockscaled_gemm(bad, B, preset="blackwell-mxf4")
    with pytest.raises(ValueError, match="must match"):
        blockscaled_gemm(A, quant.mx(np.ones((32, 2)), "mxfp4_e2m1", axis=0),
                         preset="blackwell-mxf4")


def test_presets_document_their_source() -> None:
    for p in BLOCKSCALED_PRESETS.values():
        assert "MMA-Sim" in p.source and p.instruction_k % p.block == 0


def test_gemm_dispatches_quantized_operands_to_the_block_scaled_presets() -> None:
    """``accum.gemm`` takes ``quant.mx`` results and a block-scaled preset, and gives the
    values ``blockscaled_gemm`` does (as float64, like every gemm result)."""
    from numerics import quant

    rng = np.random.default_rng(14)
    A = quant.mx(rng.standard_normal((3, 64)), "mxfp8_e4m3", axis=1)
    B = quant.mx(rng.standard_normal((64, 2)), "mxfp8_e4m3", axis=0)
    got = accum.gemm(A, B, accumulator="blackwell-mxf8f6f4")
    want = accum.blockscaled_gemm(A, B, preset="blackwell-mxf8f6f4")
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want.astype(np.float64))
    with pytest.raises(ValueError, match="block-scaled preset"):
        accum.gemm(A, B, accumulator="hopper")
    with pytest.raises(ValueError, match="input_format"):
        accum.gemm(A, B, input_format="e4m3fn", accumulator="blackwell-mxf8f6f4")
    with pytest.raises(TypeError, match="input_format"):
        accum.gemm(np.ones((1, 2)), np.ones((2, 1)), accumulator="hopper")


# --------------------------------------------------------------- operands and C (third audit)
def _mx_pair() -> tuple[Any, Any]:
    from numerics import quant

    return (quant.mx(np.ones((2, 64)), "mxfp8_e4m3", axis=1),
            quant.mx(np.ones((64, 3)), "mxfp8_e4m3", axis=0))


@pytest.mark.parametrize("scales", [(2, 1), (2, 3), (1, 2)])
def test_scale_codes_of_the_wrong_shape_are_refused(scales: tuple[int, int]) -> None:
    """A hand-built operand whose scale codes do not cover its blocks was read past its
    end (results changed from run to run)."""
    import dataclasses

    a, b = _mx_pair()
    bad = dataclasses.replace(a, scale_codes=np.full(scales, 127, np.uint8))
    with pytest.raises(ValueError, match=r"A_q.scale_codes of shape \(\d, \d\)"):
        accum.blockscaled_gemm(bad, b, preset="blackwell-mxf8f6f4")


def test_formats_other_than_the_schemes_are_refused() -> None:
    import dataclasses

    from numerics import get_format

    a, b = _mx_pair()
    for field, fmt in (("element_format", "e5m2"), ("scale_format", "e4m3fn")):
        bad = dataclasses.replace(b, **{field: get_format(fmt)})
        with pytest.raises(ValueError, match=f"B_q.{field}='{fmt}'"):
            accum.blockscaled_gemm(a, bad, preset="blackwell-mxf8f6f4")


def test_c_is_read_as_the_other_gemms_read_it() -> None:
    """C in bfloat16 or float8 (ml_dtypes), as a masked array, and beyond binary64's
    precision: read exactly, refused, and rounded once to binary32."""
    import ml_dtypes

    from numerics import quant

    a, b = _mx_pair()
    want = accum.blockscaled_gemm(a, b, np.ones((2, 3), np.float32), preset="blackwell-mxf8f6f4")
    for dt in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        got = accum.blockscaled_gemm(a, b, np.ones((2, 3), dt), preset="blackwell-mxf8f6f4")
        assert np.array_equal(got, want)
    mask = np.zeros((2, 3), bool)
    mask[0, 0] = True
    masked = np.ma.masked_array(np.full((2, 3), 1e6), mask=mask)
    with pytest.raises(TypeError, match="masked array"):
        accum.blockscaled_gemm(a, b, masked, preset="blackwell-mxf8f6f4")
    # 2**60 + 2**36 + 1: binary64's nearest, 2**60 + 2**36, is a binary32 tie (to the
    # even 2**60); the exact value lies above it, so binary32's nearest is 2**60 + 2**37
    zero = quant.mx(np.zeros((2, 64)), "mxfp8_e4m3", axis=1)
    for big, near in ((2**60 + 2**36 + 1, 2.0**60 + 2.0**37), (2**60 + 2**36 - 1, 2.0**60),
                      (-(2**60 + 2**36 + 1), -(2.0**60 + 2.0**37))):
        got = accum.blockscaled_gemm(zero, b, np.full((2, 3), big, dtype=object),
                                     preset="blackwell-mxf8f6f4")
        assert np.all(got == np.float32(near)), (big, got)


def test_c_as_a_torch_bfloat16_tensor() -> None:
    torch = pytest.importorskip("torch")
    a, b = _mx_pair()
    got = accum.blockscaled_gemm(a, b, torch.ones(2, 3, dtype=torch.bfloat16),
                                 preset="blackwell-mxf8f6f4")
    assert np.array_equal(got, accum.blockscaled_gemm(a, b, 1.0, preset="blackwell-mxf8f6f4"))
