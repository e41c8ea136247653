"""The TensorCorePreset model: construction, validation and gemm's accumulator forms."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from numerics import accum, get_format


def _operands(seed: int, fin: str, m: int = 3, k: int = 40, n: int = 2) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    rng = np.random.default_rng(seed)
    A = np.asarray(accum.sum(rng.standard_normal((m, k, 1)), fin).value)
    B = np.asarray(accum.sum(rng.standard_normal((k, n, 1)), fin).value)
    return A, B


def test_old_constructor_still_works() -> None:
    p = accum.TensorCorePreset(name="x", fractional_bits=13, group_16=None, group_8=32,
                               e8m13=True, source="s")
    assert (p.structure, p.alignment_rounding, p.output_rounding, p.flush_inputs) == \
        ("fused", "rtz", "rtz", False)


@pytest.mark.parametrize("name", ["hopper", "cdna3-fp16", "cdna2-fp16", "cdna1-bf16"])
def test_instance_name_and_copy_agree(name: str) -> None:
    p = accum.PRESETS[name]
    fin = p.inputs[0] if p.inputs else "bfloat16"
    A, B = _operands(1, fin)
    by_name = accum.gemm(A, B, input_format=fin, accumulator=name)
    copy = dataclasses.replace(p, name="my-copy")
    by_instance = accum.gemm(A, B, input_format=fin, accumulator=copy)
    np.testing.assert_array_equal(by_name, by_instance)


def test_families_pick_the_input_variant() -> None:
    assert accum.tensorcore.get_preset("cdna3", get_format("e5m2fnuz")).name == "cdna3-fp8"
    assert accum.tensorcore.get_preset("cdna2", get_format("bf16")).name == "cdna2-bf16-1k"
    with pytest.raises(ValueError, match="cdna1 models only 'binary16'"):
        accum.gemm(np.ones((1, 2)), np.ones((2, 1)), input_format="e4m3fn",
                   accumulator="cdna1")


def test_changing_a_field_changes_the_result() -> None:
    """A fused preset with nearest-even alignment differs from truncation somewhere."""
    A, B = _operands(3, "bfloat16", 8, 64, 8)
    p = accum.PRESETS["hopper"]
    rtz = accum.gemm(A, B, input_format="bf16", accumulator=p)
    rne = accum.gemm(A, B, input_format="bf16",
                     accumulator=dataclasses.replace(p, alignment_rounding="rne"))
    assert not np.array_equal(rtz, rne)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("structure", "tree", "structure='tree'"),
    ("alignment_rounding", "RNE", "alignment_rounding='RNE'"),
    ("output_rounding", None, "output_rounding=None"),
    ("fractional_bits", 49, "fractional_bits=49"),
    ("group_16", 0, "group_16=0"),
    ("promote_every", 0, "promote_every=0"),
])
def test_bad_fields_are_named(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(accum.PRESETS["hopper"], **{field: value})  # type: ignore[arg-type]


def test_pairwise_needs_no_fractional_bits() -> None:
    with pytest.raises(ValueError, match="pass None"):
        dataclasses.replace(accum.PRESETS["cdna1-fp16"], fractional_bits=24)


def test_bad_accumulator_is_named() -> None:
    with pytest.raises(ValueError, match="accumulator='h100'"):
        accum.gemm(np.ones((1, 2)), np.ones((2, 1)), input_format="bf16", accumulator="h100")
    with pytest.raises(ValueError, match="accumulator=3"):
        accum.gemm(np.ones((1, 2)), np.ones((2, 1)), input_format="bf16",
                   accumulator=3)


def test_preset_promote_every_is_used() -> None:
    A, B = _operands(4, "e4m3fn", 4, 512, 4)
    p = dataclasses.replace(accum.PRESETS["hopper-fp8"], name="cublas-default",
                            promote_every=128)
    np.testing.assert_array_equal(
        accum.gemm(A, B, input_format="e4m3fn", accumulator=p),
        accum.gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8", promote_every=128))


_T = 2.0


@pytest.mark.parametrize("case, A, B, C, fin, preset, want", [
    # a product with a zero operand never sets the alignment (MMA-Sim: functions.py
    # extract_significand_exponent gives a zero exponent -999; fdpa.py gives the zero
    # *product* -126): before, 0 * 2**127 aligned to exponent 1 and truncated the rest
    ("zero operand, ampere", [0, 1, _T**-12, _T**-12], [_T**127, 1, _T**-12, _T**-12], 0.0,
     "bfloat16", "ampere", 0x3F800001),
    ("zero operand, hopper", [0.0, _T**-30], [_T**127, 1.5 * _T**-30], 0.0, "bfloat16",
     "hopper", 0x21C00000),
    ("zero operand, hopper fp16", [0.0], [32768.0], _T**-140, "binary16", "hopper",
     0x00000200),
    ("zero operand, hopper-fp8", [0.0], [57344.0], _T**-130, "e5m2", "hopper-fp8",
     0x00080000),
    # tf32 groups: 4 on Ampere (mma.m16n8k8 in halves), 8 on Hopper (wgmma k8) and
    # Blackwell (tcgen05.mma kind::tf32 k8) (MMA-Sim simulator/nv.py, isa/nv_wgmma.py,
    # isa/nv_tcgen05mma.py)
    ("tf32 groups of 4, ampere", [_T**-12] * 4 + [1], [_T**-13] * 4 + [1], 0.0, "tf32",
     "ampere", 0x3F800001),
    ("tf32 groups of 8, hopper", [_T**-13] * 8 + [1], [_T**-13] * 8 + [1], 0.0, "tf32",
     "hopper", 0x3F800001),
    ("tf32 groups of 8, blackwell", [_T**-13] * 8 + [1], [_T**-13] * 8 + [1], 0.0, "tf32",
     "blackwell", 0x3F800001),
    # binary32 inputs are truncated to tf32 (MMA-Sim truncate_to_tf32: x >> 13 << 13)
    ("tf32 input truncated, ampere", [1 + 3 * _T**-12], [1.0], 0.0, "tf32", "ampere",
     0x3F800000),
])
def test_fused_presets_match_mma_sim(case: str, A: list, B: list, C: float, fin: str,
                                     preset: str, want: int) -> None:
    """Single dot products whose binary32 result MMA-Sim's NVIDIA models give (the bits
    computed from its source by a separate Fraction re-implementation)."""
    d = accum.gemm(np.array([A], float), np.array(B, float)[:, None], np.array([[C]]),
                   input_format=fin, accumulator=preset, output_format="binary32")
    got = int(np.array(d[0, 0], np.float32).view(np.uint32))
    assert got == want, (case, hex(got), hex(want))


@pytest.mark.parametrize("name", ["volta", "ampere", "hopper", "blackwell"])
@pytest.mark.parametrize(("out", "bits"), [("binary32", 0x7FFFFFFF), ("binary16", 0x7FFF)])
def test_nvidia_presets_write_the_canonical_nan(name: str, out: str, bits: int) -> None:
    """MMA-Sim's NVIDIA models write NaN results as 0x7FFFFFFF (binary32) and 0x7FFF
    (binary16): inf * 0 here, also through promote_every."""
    A, B = np.array([[np.inf, 1.0]]), np.array([[0.0], [1.0]])
    for kw in ({}, {"promote_every": 32}):
        d = accum.gemm(A, B, input_format="binary16", accumulator=name, output_format=out,
                       **kw)
        narrow = d.astype(np.float32).view(np.uint32) if out == "binary32" else \
            d.astype(np.float16).view(np.uint16)
        assert int(narrow[0, 0]) == bits, (name, out, kw)
    from numerics.accum.tensorcore import NVIDIA_NAN, fused_dot_add

    got = fused_dot_add([np.inf], [0.0], 0.0, input_format="binary16", fractional_bits=24)
    assert np.array(got).view(np.uint64) == np.array(NVIDIA_NAN).view(np.uint64)
