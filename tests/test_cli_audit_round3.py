"""Regressions from the third CLI audit: files that are not torch files, probe options that
do not apply or are empty, a probed callable that exits, TurboQuant's messages, and a
README tour that runs as written."""

from __future__ import annotations

import argparse
import ast
import builtins
import pickle
import re
import shlex
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_render import call, usage_error
from fpinspect.main import build_parser

from numerics import probe
from numerics.checkpoint import TensorFileError, open_source
from numerics.probe.matmul import MAX_BATCH
from numerics.quant import TurboQuant

README = Path(__file__).resolve().parent.parent / "README.md"

NOT_TORCH = {
    "text": b"hello world\n",
    "one_byte": b"\x80",
    "random": bytes(np.random.default_rng(3).integers(0, 256, 200, dtype=np.uint8)),
    "npy": b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
           + b" " * 44 + b"\n" + bytes(8),
    "zeros": bytes(64),
    "plain_pickle": pickle.dumps({"w": [1, 2]}, protocol=2),
    "plain_pickle4": pickle.dumps({"w": [1, 2]}, protocol=4),
}


# ---------------------------------------------------------------- 1. not a torch file
@pytest.mark.parametrize("kind", sorted(NOT_TORCH))
def test_bytes_that_are_no_torch_file_are_reported_as_such(kind: str, tmp_path: Path) -> None:
    path = tmp_path / f"{kind}.pt"
    path.write_bytes(NOT_TORCH[kind])
    with pytest.raises(TensorFileError, match="is not a readable torch file") as err:
        open_source(path)
    assert str(path) in str(err.value) and "more than tensors" not in str(err.value)


@pytest.mark.parametrize("argv", [["ls", "{p}"], ["stats", "{p}"], ["hash", "{p}"],
                                  ["diff", "{p}", "{p}"], ["stats", "{p}:w"],
                                  ["ls", "{d}"], ["hash", "{d}"]])
@pytest.mark.parametrize("kind", ["text", "one_byte", "random"])
def test_cli_on_a_non_torch_pt_file_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path, kind: str,
                                                       argv: list[str]) -> None:
    path = tmp_path / f"{kind}.pt"
    path.write_bytes(NOT_TORCH[kind])
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "pytorch_model.bin").write_bytes(NOT_TORCH[kind])
    err = usage_error(capsys, *(a.format(p=path, d=tmp_path / "d") for a in argv))
    assert "not a readable torch file" in err and "internal error" not in err
    assert ("pytorch_model.bin" if "{d}" in argv[1] else f"{kind}.pt") in err


def test_a_cut_short_legacy_torch_file_is_corrupt_not_more_than_tensors(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    whole = tmp_path / "legacy.pt"
    torch.save({"w": torch.arange(4.0)}, whole, _use_new_zipfile_serialization=False)
    data = whole.read_bytes()
    cut = data.index(b"_rebuild_tensor") + 12  # in the middle of a global's name
    (tmp_path / "cut.pt").write_bytes(data[:cut])
    err = usage_error(capsys, "ls", str(tmp_path / "cut.pt"))
    assert "not a readable torch file" in err and "corrupt or cut short" in err
    assert "more than tensors" not in err and "can still be loaded" not in err
    code, out, _ = call(capsys, "ls", str(whole))
    assert code == 0 and "binary32" in out


@pytest.mark.parametrize("legacy", [False, True])
def test_a_well_formed_torch_file_holding_objects_still_says_more_than_tensors(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, legacy: bool) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "obj.pt"
    torch.save({"w": torch.zeros(2), "opt": Fraction(1, 3)}, path,
               _use_new_zipfile_serialization=not legacy)
    err = usage_error(capsys, "ls", str(path))
    assert "holds more than tensors" in err and "fractions.Fraction" in err


# ---------------------------------------------------------------- 2. --batch bound
def test_matmul_batch_has_an_upper_bound_named_in_the_error() -> None:
    assert MAX_BATCH == 4096
    for batch in (MAX_BATCH + 1, 10**12, 99999999999999999999999):
        with pytest.raises(ValueError, match=rf"Got batch={batch}, .*\[4, {MAX_BATCH}\]"):
            probe.matmul(np.matmul, input_format="binary32", k=8, batch=batch)


@pytest.mark.parametrize("batch", ["1000000000000", "99999999999999999999999", "4097"])
def test_cli_batch_beyond_the_bound_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                       batch: str) -> None:
    err = usage_error(capsys, "probe", "numpy:matmul", "--input", "fp32", "--batch", batch)
    assert f"batch={batch}" in err and str(MAX_BATCH) in err


def test_probe_help_states_the_batch_bound_of_the_library() -> None:
    helps = {a.dest: a.help for a in _probe_parser()._actions}
    assert f"4 to {MAX_BATCH}" in str(helps["batch"])
    # --output's default under --torch is the --dtype, not binary32
    assert "--torch" in str(helps["output"]) and "--dtype" in str(helps["output"])


def _probe_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices["probe"]
    return found


# ---------------------------------------------------------------- 3. sys.exit in the target
@pytest.mark.parametrize("source, code", [
    ("import sys\ndef f(A, B):\n    sys.exit(0)\n", "SystemExit(0)"),
    ("import sys\ndef f(A, B):\n    sys.exit(3)\n", "SystemExit(3)"),
    ("import sys\ndef f(A, B):\n    sys.exit('bye')\n", "SystemExit('bye')"),
    ("import sys\nsys.exit(0)\ndef f(A, B):\n    return A @ B\n", "SystemExit(0)"),
    ("import argparse\nargparse.ArgumentParser().parse_args()\ndef f(A, B):\n    return A @ B\n",
     "SystemExit(2)"),
])
def test_a_target_that_exits_does_not_choose_the_exit_status(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        source: str, code: str) -> None:
    name = f"r3_exits_{abs(hash(source))}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["probe", f"{name}:f", "--input", "fp32", "--k", "8", "--batch", "8"]
    monkeypatch.setattr(sys, "argv", ["fpinspect", *argv])  # what a module's argparse reads
    try:
        err = usage_error(capsys, *argv)
    finally:
        sys.modules.pop(name, None)
    assert code in err


def test_a_sum_target_that_exits_is_one_line(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "r3_sum_exits.py").write_text("import sys\ndef s(x):\n    sys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        err = usage_error(capsys, "probe", "r3_sum_exits:s", "--kind", "sum", "--input",
                          "fp32", "--k", "8")
    finally:
        sys.modules.pop("r3_sum_exits", None)
    assert "r3_sum_exits:s raised SystemExit(0)" in err


def test_help_and_version_still_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, "--version")
    assert code == 0 and out.startswith("fpinspect ") and err == ""
    code, out, err = call(capsys, "probe", "--help")
    assert code == 0 and "--batch" in out and err == ""


# ---------------------------------------------------------------- 4. options that do not apply
@pytest.mark.parametrize("argv, option", [
    (["probe", "--torch", "mm", "--input", "bf16"], "--input 'bf16'"),
    (["probe", "numpy:matmul", "--input", "fp32", "--dtype", "bf16"], "--dtype 'bf16'"),
    (["probe", "numpy:matmul", "--input", "fp32", "--device", "cuda"], "--device 'cuda'"),
    (["probe", "numpy:matmul", "--input", "fp32", "--dtype", "bf16", "--device", "cuda"],
     "--dtype 'bf16'"),
    (["probe", "numpy:sum", "--kind", "sum", "--input", "fp32", "--output", "bf16"],
     "--output 'bf16'"),
    (["probe", "numpy:sum", "--kind", "sum", "--input", "fp32", "--batch", "8"], "--batch 8"),
])
def test_probe_options_that_do_not_apply_are_refused(capsys: pytest.CaptureFixture[str],
                                                     argv: list[str], option: str) -> None:
    assert option in usage_error(capsys, *argv)


# ---------------------------------------------------------------- 5. empty option values
@pytest.mark.parametrize("argv, shown", [
    (["diff", "{a}", "{a}", "-f", ""], "-f ''"),
    (["stats", "{a}", "-f", ""], "-f ''"),
    (["hash", "{a}", "-f", ""], "-f ''"),
    (["stats", "{a}", "-f", " "], "-f ' '"),
    (["bits", "0", "-f", ""], "-f ''"),
    (["diff", "{a}", "{a}", "--scheduler", ""], "--scheduler ''"),
    (["stats", "{a}", "--all", "--candidates", ""], "--all and --candidates"),
    (["probe", "numpy:matmul", "--input", "fp32", "--output", ""], "--output ''"),
    (["probe", "numpy:matmul", "--input", ""], "--input ''"),
    (["probe", "", "--input", "fp32"], "MODULE:FUNCTION"),
])
def test_an_empty_option_value_is_not_taken_as_absent(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path, argv: list[str],
                                                      shown: str) -> None:
    a = tmp_path / "a.npy"
    np.save(a, np.arange(4, dtype=np.float32))
    assert shown in usage_error(capsys, *(x.format(a=a) for x in argv))


@pytest.mark.parametrize("argv, shown", [
    (["probe", "--torch", "mm", "--dtype", ""], "--dtype ''"),
    (["probe", "--torch", "mm", "--device", ""], "--device ''"),
])
def test_an_empty_torch_option_is_not_taken_as_absent(capsys: pytest.CaptureFixture[str],
                                                      argv: list[str], shown: str) -> None:
    pytest.importorskip("torch")
    assert shown in usage_error(capsys, *argv)


# ---------------------------------------------------------------- 6. TurboQuant messages
def test_turboquant_states_the_dim_range_it_takes() -> None:
    for dim in (70000, 65536):
        with pytest.raises(ValueError, match=r"dim in \[2, 8192\]") as err:
            TurboQuant(dim, 2)
        assert "65536]" not in str(err.value)


def test_turboquant_states_the_true_size_of_the_rotation() -> None:
    with pytest.raises(ValueError, match="512 MiB") as err:  # 8193**2 * 8 bytes
        TurboQuant(8193, 2)
    assert "1 GiB" not in str(err.value)
    with pytest.raises(ValueError, match=r"36\.5 GiB"):  # 70000**2 * 8 bytes
        TurboQuant(70000, 2)


def test_turboquant_names_the_first_non_finite_entry() -> None:
    tq = TurboQuant(4, 2)
    with pytest.raises(ValueError, match=r"x\[1\] = nan"):
        tq.quantize([1, np.nan, 0, 0])
    with pytest.raises(ValueError, match=r"x\[1, 2\] = -inf"):
        tq.quantize([[1, 2, 3, 4], [0, 0, -np.inf, np.nan]])
    with pytest.raises(ValueError, match=r"y\[3\] = inf"):
        tq.inner_product(tq.quantize([1, 2, 3, 4]), [1, 2, 3, np.inf])


# ---------------------------------------------------------------- 7. the README runs as written
def _section(title: str, text: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_readme_tour_creates_its_files_and_shows_what_the_tool_prints(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("safetensors")
    tour = _section("fpinspect tour", README.read_text())
    setup = _blocks(tour, "python")
    assert len(setup) == 1  # one setup snippet, before the first command that needs files
    assert tour.index("```python") < tour.index("$ fpinspect diff ref.npy")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    exec(compile(setup[0], "README setup", "exec"), {})  # noqa: S102
    shown = 0
    for block in _blocks(tour, "text"):
        for command in re.split(r"^\$ ", block, flags=re.M)[1:]:
            line, _, expected = command.partition("\n")
            argv = shlex.split(line)
            assert argv[0] == "fpinspect"
            _, out, err = call(capsys, *argv[1:])
            assert err == "", (line, err)
            got = [ln.rstrip() for ln in out.rstrip("\n").splitlines()]
            want = [ln.rstrip() for ln in expected.rstrip("\n").splitlines()]
            assert _matches(want, got), (line, "\n".join(got))
            shown += 1
    assert shown >= 5


def _matches(want: list[str], got: list[str]) -> bool:
    """Line by line; a README line ``...`` stands for any number of lines."""
    if "..." not in want:
        return want == got
    i = want.index("...")
    head, tail = want[:i], want[i + 1:]
    return got[:len(head)] == head and (not tail or got[-len(tail):] == tail)


def _undefined_names(source: str) -> set[str]:
    """Names a block reads but neither defines, imports nor gets from builtins."""
    tree = ast.parse(source)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    return used - defined


def test_readme_python_blocks_are_self_contained() -> None:
    blocks = [b for b in _blocks(README.read_text(), "python") if ">>>" not in b]
    assert len(blocks) >= 5
    for block in blocks:
        assert _undefined_names(block) == set(), block.splitlines()[:3]
