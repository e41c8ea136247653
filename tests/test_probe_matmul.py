"""numerics.probe.matmul: designed vectors separate the hypotheses (P3-P8, P10), every
accum.gemm preset, numpy and torch matmul, independent fused-adder emulations."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numerics import accum, get_format, probe
from numerics.accum import PRESETS, TensorCorePreset
from numerics.probe.model import MatmulModel, Tree, _chain
from numerics.probe.order import sequential_tree
from numerics.probe.vectors import random_matrices

sys.path.insert(0, str(Path(__file__).parent))
from probe_emulations import FusedAdderEmulation  # noqa: E402

_pm = sys.modules["numerics.probe.matmul"]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _fused(G: int, F: int, k: int, fin: str = "bf16", **kw: Any) -> MatmulModel:
    return MatmulModel(input_format=fin, output_format=kw.pop("output_format", "binary32"),
                       order=_chain(k, G, kw.get("promote_every")), adder="fused",
                       accumulator="binary32", group_size=G, fractional_bits=F,
                       alignment_rounding=kw.pop("alignment_rounding", "rtz"),
                       output_rounding=kw.pop("output_rounding", "rtz"), **kw)


def _standard(acc: str, k: int, fin: str = "binary32", **kw: Any) -> MatmulModel:
    return MatmulModel(input_format=fin, output_format=kw.pop("output_format", "binary32"),
                       order=sequential_tree(k), adder="standard", accumulator=acc, **kw)


def _rows(tree: Tree, k: int, fin: str, fout: str, parameter: str,
          subnormal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    f_in, f_out = get_format(fin), get_format(fout)
    design = (_pm._subnormal_design(tree, k, f_in, f_out)[0] if subnormal
              else _pm._design(tree, k, f_in, f_out))
    rows = [r for r in design.rows if r[0] in parameter.split("|")]
    assert rows, parameter
    return np.stack([r[2] for r in rows]), np.stack([r[3] for r in rows])


def _differ(m1: MatmulModel, m2: MatmulModel, a: np.ndarray, b: np.ndarray) -> bool:
    return not np.array_equal(m1.evaluate(a, b).view(np.uint64),
                              m2.evaluate(a, b).view(np.uint64))


# ---------------------------------------------------------------------------- claims

@pytest.mark.parametrize("G", [1, 2, 8, 32])
def test_P3_fractional_bits_and_alignment_are_separated(G: int) -> None:
    """P3: F and F+1, and truncating, rounding-down and rounding alignment, predict
    differently on the fractional-bits and alignment vectors (P3b's factor rows and
    P3d's carried-addend rows among them), for every F in 1..39."""
    k = 3 * G
    a, b = _rows(_chain(k, G, None), k, "bf16", "binary32",
                 "fractional_bits|fractional_bits_c")
    a2, b2 = _rows(_chain(k, G, None), k, "bf16", "binary32",
                   "alignment_rounding|fractional_bits_c")
    for F in range(1, 40):
        assert _differ(_fused(G, F, k), _fused(G, F + 1, k), a, b), F
        for x, y in (("rtz", "rne"), ("rtz", "rd"), ("rd", "rne")):
            assert _differ(_fused(G, F, k, alignment_rounding=x),
                           _fused(G, F, k, alignment_rounding=y), a2, b2), (F, x, y)


def test_P4_output_rounding_is_separated_when_it_happens() -> None:
    """P4: toward-zero and nearest output rounding differ when the aligned sum can
    exceed the output precision (F >= 24 for binary32; P4b's carry rows), and on the
    final cast."""
    k = 16
    a, b = _rows(_chain(k, 8, None), k, "bf16", "binary32", "output_rounding")
    for F in range(24, 41):
        assert _differ(_fused(8, F, k), _fused(8, F, k, output_rounding="rne"), a, b)
    a, b = _rows(sequential_tree(k), k, "binary32", "bfloat16", "output_rounding")
    m = _standard("binary32", k, output_format="bfloat16")
    assert _differ(m, dataclasses.replace(m, output_rounding="rtz"), a, b)


def test_P5_accumulator_formats_are_separated() -> None:
    """P5: (1 + 2**-j) - 1 tells binary16, bfloat16, binary32 and binary64 apart."""
    k = 8
    a, b = _rows(sequential_tree(k), k, "binary32", "binary32", "accumulator")
    names = ("binary16", "bfloat16", "binary32", "binary64")
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            assert _differ(_standard(x, k), _standard(y, k), a, b), (x, y)


def test_P6_fused_and_rounded_products_are_separated() -> None:
    """P6: -1 + (1 + 2**-u)**2 keeps 2**-2u only when the product is not rounded."""
    k = 8
    a, b = _rows(sequential_tree(k), k, "binary32", "binary32", "products")
    m = _standard("binary32", k)
    assert _differ(m, dataclasses.replace(m, products="rounded"), a, b)


@pytest.mark.parametrize("fin, fout", [("bf16", "binary32"), ("binary16", "binary16"),
                                       ("e4m3fn", "binary32")])
def test_P7_subnormal_flushing_is_separated(fin: str, fout: str) -> None:
    """P7: a subnormal input times 2**emax, and a product below the output's normal
    range, are kept or become zero."""
    k = 8
    tree = sequential_tree(k)
    a, b = _rows(tree, k, fin, fout, "subnormals", subnormal=True)
    m = _standard("binary32", k, fin=fin, output_format=fout)
    assert _differ(m, dataclasses.replace(m, input_subnormals="flushed"), a, b)
    if fin == "bf16":  # binary16 and e4m3fn products cannot reach binary32 subnormals
        assert _differ(m, dataclasses.replace(m, output_subnormals="flushed"), a, b)


def test_P8_e8m13_is_separated() -> None:
    """P8: 1.5 + 1.5 + 2**-j has 14 significant bits after a carry: e8m13 drops one."""
    k = 64
    a, b = _rows(_chain(k, 32, None), k, "e4m3fn", "binary32", "e8m13")
    for F in range(13, 26):
        m = _fused(32, F, k, fin="e4m3fn")
        assert _differ(m, dataclasses.replace(m, e8m13=True), a, b), F


def test_P10_position_classes_are_probed_separately() -> None:
    """P10: a black box whose first rows add sequentially and the others pairwise is
    split into two classes, each recovered, verify 100%."""
    k = 16
    seq = _standard("binary32", k)
    pair = dataclasses.replace(seq, order=((((0, 1), (2, 3)), ((4, 5), (6, 7))),
                                           (((8, 9), (10, 11)), ((12, 13), (14, 15)))))

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        out = pair.matmul(A, B)
        out[:4] = seq.matmul(A[:4], B)
        return out

    r = probe.matmul(mm, input_format="binary32", k=k, batch=8)
    assert [m.order for m in r.classes] == [seq.order, pair.order]
    assert r.class_map is not None and (r.class_map[:4] == 0).all() and (
        r.class_map[4:] == 1).all()
    assert r.class_sizes == (32, 32)  # rows 0-3 and rows 4-7 of an 8x8 product
    assert probe.verify(mm, r, trials=4).fraction == 1.0
    with pytest.raises(ValueError, match="position classes"):
        r.as_accumulator()


# ---------------------------------------------------------------------------- presets

def _preset_cases() -> list[tuple[str, str, int, int | None]]:
    cases: list[tuple[str, str, int, int | None]] = []
    for name, p in PRESETS.items():
        if p.inputs:  # AMD presets name their input formats
            G = p.group_16 or p.group_8
            assert G is not None
            cases.append((name, p.inputs[0], max(4 * G, 16), None))
            continue
        if p.group_16 is not None:
            cases.append((name, "bf16", 4 * p.group_16, None))
        if p.group_8 is not None:
            fin = "e4m3fn" if (p.fractional_bits or 0) < 20 else "e5m2"
            cases.append((name, fin, 2 * p.group_8, None))
    cases.append(("hopper", "binary16", 64, None))
    cases.append(("hopper-fp8", "e4m3fn", 96, 32))
    cases.append(("ampere", "bf16", 48, 16))
    return cases


_QUICK = {"hopper", "hopper-fp8", "volta", "cdna3-fp16", "cdna2-fp16", "cdna1-fp32"}


@pytest.mark.parametrize("preset, fin, k, promote", [
    c if (c[0] in _QUICK and c[3] is None) or c[:2] == ("ampere", "bf16") and c[3]
    else pytest.param(*c, marks=pytest.mark.exhaustive)
    for c in _preset_cases()])
def test_every_gemm_preset_is_recovered(preset: str, fin: str, k: int,
                                        promote: int | None) -> None:
    """Every accum.gemm preset as a black box: its parameters come back (as a
    TensorCorePreset gemm accepts, or a format for an fma chain), verify 100%."""
    p = PRESETS[preset]
    f_in, f32 = get_format(fin), get_format("binary32")

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return accum.gemm(A, B, input_format=fin, accumulator=preset, promote_every=promote)

    r = probe.matmul(mm, input_format=fin, k=k, batch=16)
    acc = r.as_accumulator()
    q = acc["accumulator"]
    if p.structure == "fma":
        assert q == "binary32" and r.group_size == 1 and r.fractional_bits is None
    else:
        assert isinstance(q, TensorCorePreset)
        assert (q.structure, q.fractional_bits, q.group_size(f_in), q.e8m13,
                q.alignment_rounding, q.rounding_into(f32), q.flush_inputs) == (
            p.structure, p.fractional_bits, p.group_size(f_in), p.e8m13,
            p.alignment_rounding, p.rounding_into(f32), p.flush_inputs)
        if r.subnormals["outputs"] != "untested":
            assert q.flush_outputs == p.flush_outputs
    assert acc["promote_every"] == promote
    if p.structure != "pairwise":  # pairwise: fused and rounded products coincide here
        assert r.ambiguous == ()
    assert probe.verify(mm, r, trials=2, batch=16).fraction == 1.0
    A, B = random_matrices(np.random.default_rng(0), 8, k, 8, f_in, f32)
    assert np.array_equal(accum.gemm(A, B, input_format=fin, **acc), mm(A, B))


def test_gemm_preset_with_binary16_output_rounds_to_nearest() -> None:
    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return accum.gemm(A, B, input_format="binary16", accumulator="hopper",
                          output_format="binary16")

    r = probe.matmul(mm, input_format="binary16", output_format="binary16", k=32, batch=16)
    assert (r.group_size, r.fractional_bits, r.output_rounding) == (16, 25, "rne")
    assert probe.verify(mm, r, trials=2, batch=16).fraction == 1.0


# ---------------------------------------------------------------------------- emulations

def _emulation_cases(count: int, seed: int) -> list[tuple[int, int, str, int | None]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        G = int(rng.integers(1, 33))
        F = int(rng.integers(10, 31))
        align = str(rng.choice(["rtz", "rne"]))
        promote = None if rng.random() < 0.5 else G * int(rng.integers(1, 4))
        cases.append((F, G, align, promote))
    return cases


def _check_emulation(F: int, G: int, align: str, promote: int | None) -> None:
    emu = FusedAdderEmulation(F, G, align, promote)
    k = 2 * promote + G if promote else max(3 * G, 8)  # full last groups: see P4
    r = probe.matmul(emu, input_format="bf16", k=k, batch=16)
    assert (r.fractional_bits, r.group_size, r.alignment_rounding, r.promote_every) == (
        F, G, align, promote), r.ambiguous
    assert r.ambiguous == ()
    assert probe.verify(emu, r, trials=2, batch=16).fraction == 1.0


@pytest.mark.parametrize("F, G, align, promote", _emulation_cases(4, 2024))
def test_independent_fused_adder_emulations_are_recovered(F: int, G: int, align: str,
                                                          promote: int | None) -> None:
    _check_emulation(F, G, align, promote)


@pytest.mark.exhaustive
@pytest.mark.parametrize("F, G, align, promote", _emulation_cases(40, 7))
def test_independent_fused_adder_emulations_are_recovered_many(
        F: int, G: int, align: str, promote: int | None) -> None:
    _check_emulation(F, G, align, promote)


# ---------------------------------------------------------------------------- peers

def test_numpy_float32_matmul_is_reproduced_at_k256() -> None:
    """numpy's float32 matmul (OpenBLAS): a model per output class, 12288 outputs
    bit for bit."""
    r = probe.matmul(np.matmul, input_format="binary32", k=256)
    assert r.calls <= 200
    assert all(m.adder == "standard" and m.accumulator == "binary32" for m in r.classes)
    v = probe.verify(np.matmul, r, trials=3)
    assert v.outputs >= 10_000 and v.fraction == 1.0, v.first_counterexample


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("dtype, fin", [("float32", "binary32"), ("bfloat16", "bfloat16")])
def test_torch_cpu_mm_is_reproduced(dtype: str, fin: str) -> None:
    import torch

    tdt = getattr(torch, dtype)

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        out = torch.mm(torch.from_numpy(A).to(tdt), torch.from_numpy(B).to(tdt))
        return out.float().numpy()

    r = probe.matmul(mm, input_format=fin, output_format=fin, k=256)
    assert all(m.accumulator == "binary32" for m in r.classes)
    v = probe.verify(mm, r, trials=3)
    assert v.outputs >= 10_000 and v.fraction == 1.0, v.first_counterexample


def _sequential_box(acc: Any, out: Any) -> Any:
    """A matmul adding the exact products of bfloat16 inputs one at a time, each sum
    rounded to nearest into ``acc`` (binary32 holds every such product), the result cast
    to ``out``."""
    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        A32, B32 = np.asarray(A, np.float32), np.asarray(B, np.float32)
        total = np.zeros((A32.shape[0], B32.shape[1]), acc)
        for t in range(A32.shape[1]):
            total = (total.astype(np.float32) + A32[:, t:t + 1] * B32[t:t + 1, :]).astype(acc)
        return np.asarray(total.astype(out), np.float64)
    return mm


@pytest.mark.parametrize("acc, out", [("bfloat16", "float32"), ("float32", "bfloat16")])
def test_P1_counts_beyond_bfloat16_go_in_runs(acc: str, out: str) -> None:
    """At k = 300 a pair test with every other term small counts up to 298 small terms,
    beyond bfloat16's 8 bits: a bfloat16 accumulator stalls at 256 and a bfloat16 output
    rounds 298 to 296, and both boxes fitted no model (at k = 512 and 1024 too).  The
    runs of at most 256 small terms find them."""
    import ml_dtypes

    dt = {"bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
    fout = "bfloat16" if out == "bfloat16" else "binary32"
    r = probe.matmul(_sequential_box(dt[acc], dt[out]), input_format="bfloat16",
                     output_format=fout, k=300, batch=4, rounds=1)
    (m,) = r.classes
    assert m.adder == "standard" and m.order == sequential_tree(300)
    assert m.accumulator == ("bfloat16" if acc == "bfloat16" else "binary32")


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_P1_torch_bfloat16_mm_beyond_256_terms() -> None:
    """torch's CPU bfloat16 ``mm`` at k = 1024: its pair tests read 1022 small terms,
    which its bfloat16 output cannot count in one test."""
    import torch

    def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        out = torch.mm(torch.from_numpy(A).to(torch.bfloat16),
                       torch.from_numpy(B).to(torch.bfloat16))
        return out.float().numpy()

    r = probe.matmul(mm, input_format="bfloat16", output_format="bfloat16", k=1024,
                     batch=8, rounds=1)
    assert all(m.accumulator == "binary32" for m in r.classes)
