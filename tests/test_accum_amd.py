"""AMD matrix-core presets against exact scalar references of the documented rules
(tests/accum_reference.py), and spot checks of each rule with the arithmetic shown."""

from __future__ import annotations

from fractions import Fraction

import accum_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import accum, get_format

AMD = [name for name, p in accum.PRESETS.items() if name.startswith("cdna")]


def _values(rng: np.random.Generator, shape: tuple[int, ...], fin: str, lo: int,
            hi: int) -> np.ndarray:
    """Values of ``fin`` over binades lo..hi (subnormals included), 10% zeros."""
    f = get_format(fin)
    e = rng.integers(max(lo, f.emin - f.precision), min(hi, f.emax - 1) + 1, shape)
    x = rng.choice([-1.0, 1.0], shape) * (1 + rng.random(shape)) * np.exp2(e)
    x[rng.random(shape) < 0.1] = 0.0
    return np.asarray(accum.sum(x[..., None], f).value)


def _case(seed: int, fin: str, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    span = {"bfloat16": (-135, 40), "tf32": (-135, 40)}.get(fin, (-30, 15))
    A = _values(rng, (2, k), fin, *span)
    B = _values(rng, (k, 3), fin, *span)
    # column 0 cancels against row 0 in pairs: a, a and b, -b
    A[0, 1::2] = A[0, 0:k - 1:2][: A[0, 1::2].size]
    B[1::2, 0] = -B[0:k - 1:2, 0][: B[1::2, 0].size]
    C = np.asarray(accum.sum(rng.standard_normal((2, 3, 1)) * np.exp2(
        rng.integers(-140, 20, (2, 3, 1))), "binary32").value)
    C[1, 1] = 0.0
    return A, B, C


def _reference(name: str, A: np.ndarray, B: np.ndarray, C: np.ndarray, fin: str) -> np.ndarray:
    p = accum.PRESETS[name]
    f = get_format(fin)
    G = p.group_size(f)
    out = np.empty(C.shape)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            a = [Fraction(float(v)) for v in A[i]]
            b = [Fraction(float(v)) for v in B[:, j]]
            c = Fraction(float(C[i, j]))
            if p.input_rounding == "rtz":
                a = [Fraction(ref.rnd(x, f.precision, f.emin, f.emax, "rtz")) for x in a]
                b = [Fraction(ref.rnd(x, f.precision, f.emin, f.emax, "rtz")) for x in b]
            if p.structure == "pairwise":
                d = ref.ref_amd_pairwise(a, b, c, G, f.emin, p.flush_inputs)
            elif p.structure == "fma":
                d = c
                for x, y in zip(a, b):
                    d = ref.rn32(d + x * y)
            else:
                d = ref.ref_amd_fused_chain(a, b, c, G, f.emin, p.structure == "even-odd")
            out[i, j] = float(d)
    return out


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(AMD), st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_amd_presets_match_the_documented_rules(name: str, seed: int, k: int) -> None:
    p = accum.PRESETS[name]
    for fin in p.inputs:
        A, B, C = _case(seed, fin, k)
        if p.input_rounding == "rtz":  # xf32: binary32 operands, truncated by the unit
            A, B = (np.asarray(accum.sum(x[..., None], "binary32").value) for x in (A, B))
        got = accum.gemm(A, B, C, input_format=fin, accumulator=p)
        np.testing.assert_array_equal(got, _reference(name, A, B, C, fin), err_msg=name)


@pytest.mark.parametrize("name", AMD)
def test_each_amd_preset_on_fixed_cases(name: str) -> None:
    p = accum.PRESETS[name]
    for fin in p.inputs:
        for seed in range(3):
            A, B, C = _case(seed, fin, 37)
            got = accum.gemm(A, B, C, input_format=fin, accumulator=name)
            np.testing.assert_array_equal(got, _reference(name, A, B, C, fin), err_msg=name)


@pytest.mark.parametrize(("name", "fin", "a"), [
    ("cdna1-fp16", "binary16", [1.0, 2.0**-12, 2.0**-12]),
    ("cdna2-fp16", "binary16", [1.0, 2.0**-12, 2.0**-12]),
    ("cdna2-bf16-1k", "bfloat16", [1.0, 2.0**-12, 2.0**-12])])
def test_pairwise_last_group_is_summed_at_its_length(name: str, fin: str,
                                                     a: list[float]) -> None:
    """K = 3 in groups of 4: MMA-Sim sums the three products [1, 2**-24, 2**-24] as
    1 + (2**-24 + 2**-24) = 1 + 2**-23 (split at n // 2 = 1).  Padded with a zero
    product the tree would be (1 + 2**-24) + 2**-24, which rounds to 1 twice."""
    A = np.array([a])
    got = accum.gemm(A, A.T.copy(), input_format=fin, accumulator=name)
    assert np.float32(got[0, 0]).view(np.uint32) == 0x3F800001


def test_pairwise_last_group_keeps_the_sign_of_zero() -> None:
    """cdna1-bf16 (groups of 2), K = 1: the product -2**-266 rounds to -0 in binary32,
    and -0 + (C = -0) is -0; a padded zero product would make the pair +0."""
    d = accum.gemm(np.array([[-(2.0**-133)]]), np.array([[2.0**-133]]), np.array([[-0.0]]),
                   input_format="bfloat16", accumulator="cdna1-bf16")
    assert np.float32(d[0, 0]).view(np.uint32) == 0x80000000


def test_cdna3_rounds_down_a_small_negative_c() -> None:
    # fp16: products sum to S = 1 + 2**-10 + 2**-23 (exact, M = 0); c = -2**-60 rounds
    # down to -2**-24 (24 bits at M = 0), so D = RNE32(S - 2**-24), a tie that goes to
    # the even 1 + 2**-10 (a truncating or nearest c would leave S)
    a = [[1.0, 2.0**-10, 2.0**-12]]
    b = [[1.0], [1.0], [2.0**-11]]
    d = accum.gemm(a, b, [[-2.0**-60]], input_format="fp16", accumulator="cdna3")
    assert float(d[0, 0]) == 1 + 2.0**-10
    d = accum.gemm(a, b, [[2.0**-60]], input_format="fp16", accumulator="cdna3")
    assert float(d[0, 0]) == 1 + 2.0**-10 + 2.0**-23
    # fp8 (two stages): S = 4*2 + 2**-10 * 2**-10 = 8 + 2**-20 (M = 3); the same c is
    # dropped (e_c = -60 < M - 25), D = S; rounded down it would give the tie -> 8
    a = [[4.0, 2.0**-10]]
    b = [[2.0], [2.0**-10]]
    d = accum.gemm(a, b, [[-2.0**-60]], input_format="e4m3fnuz", accumulator="cdna3")
    assert float(d[0, 0]) == 8 + 2.0**-20


def test_cdna3_truncates_products_to_24_bits() -> None:
    # 1 + 2**-25 in one group: 2**-25 is below 2**(0 - 24) and is truncated away
    a = [[1.0, 2.0**-13]]
    b = [[1.0], [2.0**-12]]
    assert float(accum.gemm(a, b, input_format="fp16", accumulator="cdna3")[0, 0]) == 1.0
    # with one fma per product (cdna3-fp32) 1 + 2**-25 rounds to nearest: 1.0 too
    assert float(accum.gemm(a, b, input_format="fp32", accumulator="cdna3")[0, 0]) == 1.0
    # 2**-24 survives the truncation; 1 + 2**-24 is a binary32 tie that goes to even 1.0
    b2 = [[1.0], [2.0**-11]]
    assert float(accum.gemm(a, b2, input_format="fp16", accumulator="cdna3")[0, 0]) == 1.0


def test_cdna2_flushes_what_cdna1_keeps() -> None:
    tiny = 2.0**-20  # an fp16 subnormal: CDNA2 flushes it to +0
    a = [[tiny, 0.0, 0.0, 0.0]]
    b = [[1.0], [0.0], [0.0], [0.0]]
    assert float(accum.gemm(a, b, input_format="fp16", accumulator="cdna1")[0, 0]) == tiny
    assert float(accum.gemm(a, b, input_format="fp16", accumulator="cdna2")[0, 0]) == 0.0


def test_cdna1_sums_pairs_before_the_accumulator() -> None:
    # bf16 pairs: the pair 2**24 + 1 rounds to 2**24 in binary32 (a tie, to even), and
    # adding c = 1 rounds again to 2**24 ...
    a = [[2.0**12, 1.0]]
    b = [[2.0**12], [1.0]]
    c = [[1.0]]
    assert float(accum.gemm(a, b, c, input_format="bf16", accumulator="cdna1")[0, 0]) == 2**24
    # ... while a fused adder keeps the 2 ones: 2**24 + 2
    assert float(accum.gemm(a, b, c, input_format="bf16",
                            accumulator="cdna3")[0, 0]) == 2**24 + 2


def test_xf32_truncates_inputs_to_tf32() -> None:
    x = 1 + 2.0**-10 + 2.0**-11  # tf32 keeps 10 fraction bits: truncated to 1 + 2**-10
    d = accum.gemm([[x]], [[1.0]], input_format="tf32", accumulator="cdna3")
    assert float(d[0, 0]) == 1 + 2.0**-10


def test_amd_product_beyond_binary32_is_infinite() -> None:
    big = 2.0**100  # bf16 product 2**200 >= 2**128: an infinity for CDNA3
    d = accum.gemm([[big, 1.0]], [[big], [1.0]], input_format="bf16", accumulator="cdna3")
    assert float(d[0, 0]) == np.inf


def test_amd_presets_document_their_sources() -> None:
    for name in AMD:
        p = accum.PRESETS[name]
        assert "MMA-Sim" in p.source and p.inputs and p.outputs == ("binary32",), name
    assert "intermediate rewrite" in accum.PRESETS["cdna3-fp8"].uncertain
    # each names the revisions it was compared with, and where they differ from it
    assert "-0" in accum.PRESETS["cdna2-bf16"].uncertain
    assert "0x00000001" in accum.PRESETS["cdna3-bf16"].uncertain


def test_cdna3_zero_c_sets_no_exponent() -> None:
    """A zero c has no exponent here (MMA-Sim's functions.py): the products 2**-150 and
    2**-170 sum to 2**-150 + 2**-170, which rounds to the smallest subnormal.  (The latest
    revision's -126 for a zero c would align them at 2**-126 and give +0: the preset's
    ``uncertain`` text says so.)"""
    A = np.array([[2.0**-75, 2.0**-85]])
    d = accum.gemm(A, A.T.copy(), input_format="bfloat16", accumulator="cdna3-bf16")
    assert np.float32(d[0, 0]).view(np.uint32) == 0x00000001
