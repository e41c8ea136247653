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
                   accumulator=3)  # type: ignore[arg-type]


def test_preset_promote_every_is_used() -> None:
    A, B = _operands(4, "e4m3fn", 4, 512, 4)
    p = dataclasses.replace(accum.PRESETS["hopper-fp8"], name="cublas-default",
                            promote_every=128)
    np.testing.assert_array_equal(
        accum.gemm(A, B, input_format="e4m3fn", accumulator=p),
        accum.gemm(A, B, input_format="e4m3fn", accumulator="hopper-fp8", promote_every=128))
