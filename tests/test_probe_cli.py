"""``fpinspect probe``: table and JSON output, one-line errors with exit status 2."""

from __future__ import annotations

import importlib.util
import io
import json
from typing import Any

import numpy as np
import pytest
from fpinspect import views
from fpinspect.main import UsageError, main, run

from numerics import probe

HAS_TORCH = importlib.util.find_spec("torch") is not None


def render(renderable: object) -> str:
    buf = io.StringIO()
    views.make_console(width=100, color=False, file=buf).print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n") + "\n"


def collect(argv: list[str]) -> tuple[int, list[Any]]:
    got: list[Any] = []
    return run(argv, got.append), got


def boom(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A black box that always fails (imported by the tests below as a target)."""
    raise RuntimeError("kernel launch failed")


def cancelled(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A black box cancelled like an asyncio task (a BaseException)."""
    import asyncio

    raise asyncio.CancelledError()


def generator_exit(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A black box raising another BaseException."""
    raise GeneratorExit("closed")


def unidentified(x: np.ndarray) -> np.float32:
    """Fused nodes of 4 whose node rule the probe's family lacks (the emulation of
    tests/probe_emulations.py, bfloat16-style alignment)."""
    from probe_emulations import fused_sum

    return fused_sum(x, 20, 4)


def fused_cut(x: np.ndarray) -> np.float32:
    """A fused adder (imported below as a target): nodes of 4 new terms plus the running
    sum, each term cut toward zero to 24 fraction bits below the node's largest exponent,
    the node's exact sum rounded to binary32."""
    from fractions import Fraction

    acc: Fraction | None = None
    for g in range(0, len(x), 4):
        kids = [Fraction(float(v)) for v in x[g:g + 4]] + ([] if acc is None else [acc])
        nonzero = [abs(v) for v in kids if v]
        if nonzero:
            top = max(nonzero)
            e = top.numerator.bit_length() - top.denominator.bit_length()
            e -= Fraction(2) ** e > top
            q = Fraction(2) ** (e - 24)
            kids = [int(v / q) * q for v in kids]
        acc = Fraction(float(np.float32(float(sum(kids, Fraction(0))))))
    return np.float32(float(acc or 0))


def test_probe_of_a_fused_sum_skips_the_verification_it_cannot_do() -> None:
    # review: the probe identified the fused adder, then the default verification (through
    # accum.sum, which has no fused nodes) made the command fail with exit 2
    code, out = collect(["probe", "test_probe_cli:fused_cut", "--kind", "sum", "--input",
                         "fp32", "--k", "16", "--json"])
    assert code == 0
    assert out[0]["fused_groups"] and out[0]["verify"] is None
    assert (out[0]["node_rounding"], out[0]["node_fraction_bits"]) == ("rne", 24)
    # review: verify raised ValueError on every fused SumResult; it now runs the model
    code, out = collect(["probe", "test_probe_cli:fused_cut", "--kind", "sum", "--input",
                         "fp32", "--k", "16", "--verify", "10", "--json"])
    assert code == 0 and out[0]["verify"]["fraction"] == 1.0
    with pytest.raises(UsageError, match="whose rounding the probe did not identify"):
        collect(["probe", "test_probe_cli:unidentified", "--kind", "sum", "--input",
                 "fp32", "--k", "12", "--verify", "10"])


def test_probe_sum_table() -> None:
    code, out = collect(["probe", "numpy:sum", "--kind", "sum", "--input", "fp32",
                         "--k", "20", "--verify", "200"])
    assert code == 0
    text = render(out[0])
    assert "numpy's pairwise: blocks of <= 128 with 8 partial sums" in text
    assert "additions in   binary32" in text
    assert "200 of 200 random outputs bit for bit (100.00%)" in text


def test_probe_matmul_table_matches_the_library() -> None:
    r = probe.matmul(lambda A, B: A.astype(np.float64) @ B.astype(np.float64),
                     input_format="bf16", output_format="binary64", k=8, batch=8)
    text = render(views.probe_view(r, probe.verify(
        lambda A, B: A.astype(np.float64) @ B.astype(np.float64), r, trials=1, batch=8)))
    assert "two-operand adds in binary64, fused products" in text
    assert "accum.gemm" in text and "accumulator='binary64'" in text
    assert "64 of 64 random outputs bit for bit (100.00%)" in text


def test_probe_matmul_json() -> None:
    code, out = collect(["probe", "numpy:matmul", "--input", "fp32", "--k", "8",
                         "--batch", "8", "--json"])
    assert code == 0
    doc = json.loads(json.dumps(out[0], allow_nan=False))
    assert doc["kind"] == "matmul" and doc["input_format"] == "binary32"
    assert doc["adder"] == "standard" and doc["accumulator"] == "binary32"
    assert doc["verify"]["fraction"] == 1.0
    assert doc["evidence"] and {"parameter", "vector", "predicted", "observed"} <= set(
        doc["evidence"][0])


@pytest.mark.parametrize("argv, message", [
    (["probe", "numpy:nothing", "--input", "fp32"], "'numpy' has no attribute 'nothing'"),
    (["probe", "numpy", "--input", "fp32"], "the target is MODULE:FUNCTION"),
    (["probe", "no_such_module_xyz:f", "--input", "fp32"], "cannot import"),
    (["probe", "numpy:matmul"], "give the input format with --input"),
    (["probe", "numpy:matmul", "--input", "fp32", "--k", "1"], "Got k=1"),
    (["probe", "tests.test_probe_cli:boom", "--input", "bf16", "--k", "8"],
     "raised RuntimeError: kernel launch failed"),
    (["probe", "numpy:matmul", "--input", "fp32", "--output", "bf16", "--k", "8"],
     "not a value of output_format='bfloat16'"),
    # review: BaseExceptions other than SystemExit/KeyboardInterrupt gave a traceback
    (["probe", "tests.test_probe_cli:cancelled", "--input", "fp32", "--k", "8"],
     "cancelled raised CancelledError (call 1"),
    (["probe", "tests.test_probe_cli:generator_exit", "--input", "fp32", "--k", "8"],
     "raised GeneratorExit: closed (call 1"),
])
def test_probe_bad_input_is_one_line_with_status_2(argv: list[str], message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_probe_torch_convenience(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = collect(["probe", "--torch", "mm", "--dtype", "bf16", "--k", "16",
                         "--batch", "8", "--json"])
    assert code == 0
    assert out[0]["input_format"] == "bfloat16" and out[0]["accumulator"] == "binary32"
    assert out[0]["verify"]["fraction"] == 1.0
    import torch

    if not torch.cuda.is_available():
        assert main(["probe", "--torch", "mm", "--dtype", "bf16", "--device", "cuda",
                     "--k", "8"]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def cumulative(x: np.ndarray) -> np.floating:
    """A left-to-right sum (imported below as a target)."""
    return np.cumsum(x)[-1]


def test_probe_json_of_a_deep_tree_is_flat() -> None:
    # review: --json of a sequential sum of 500 terms died with RecursionError (exit 70):
    # the nested lists of the tree exceed the JSON encoder's recursion limit
    code, out = collect(["probe", "tests.test_probe_cli:cumulative", "--kind", "sum",
                         "--input", "fp32", "--k", "1500", "--json"])
    assert code == 0
    doc = json.loads(json.dumps(out[0], allow_nan=False))
    assert doc["tree"].startswith("(" * 1499 + "0, 1), 2)")
    assert probe.tree_text(probe.parse_tree(doc["tree"])) == doc["tree"]


def test_a_module_raising_a_base_exception_on_import_is_one_line(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cancels_on_import.py").write_text(
        "import asyncio\nraise asyncio.CancelledError('not now')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["probe", "cancels_on_import:f", "--input", "fp32"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "raised CancelledError: not now" in err, err
