"""The CLI audit: each test pins one reported problem of ``fpinspect`` on files and output.

Commands run in-process through ``fpinspect.main.main`` (exit status, stdout, one
line on stderr) or ``run`` (rendered at width 100 without colour); the files are
small and written to ``tmp_path``.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cli_render import call, render, usage_error
from fpinspect.main import main

from numerics.compare import compare_codes
from numerics.formats import get_format


@pytest.fixture()
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """a.npy and b.npy: 8 float32 elements, 2 of them different."""
    monkeypatch.chdir(tmp_path)
    a = np.arange(8, dtype=np.float32).reshape(2, 4) / 4
    b = a.copy()
    b[0, 1] = np.nextafter(b[0, 1], np.float32(10))
    b[1, 3] = 100
    np.save("a.npy", a)
    np.save("b.npy", b)
    return "a.npy", "b.npy"


# ---------------------------------------------------------------- 1. diff --top is capped
@pytest.mark.parametrize("top", ["100000000000", "99999999999999999999"])
def test_diff_top_is_capped_at_the_element_count(capsys: pytest.CaptureFixture[str],
                                                 pair: tuple[str, str], top: str) -> None:
    code, out, err = call(capsys, "diff", *pair, "--top", top, "--json")
    assert code == 0 and err == ""
    assert [w["index"] for w in json.loads(out)["worst"]] == [[1, 3], [0, 1]]


def test_compare_codes_keeps_no_more_worst_elements_than_elements() -> None:
    a = np.array([0x3F80, 0x3F81], np.uint16)
    r = compare_codes(a, a + 1, "bfloat16", worst=10**15)
    assert len(r.worst) == 2


# ---------------------------------------------------------------- 2. stats of tiny float64s
@pytest.mark.parametrize("values", [[1e-300, 2e-300], [5e-324, 1e-310]])
def test_stats_scale_beyond_float64_is_exact(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             values: list[float]) -> None:
    path = str(tmp_path / "tiny.npy")
    np.save(path, np.array(values))
    code, text = render("stats", path)
    assert code == 0 and "bfloat16" in text
    code, out, err = call(capsys, "stats", path, "--json")
    assert code == 0 and err == ""
    fit = next(f for f in json.loads(out)["formats"] if f["format"] == "bfloat16")
    ratio = get_format("bfloat16").max_exact / Fraction(max(values))
    k = fit["scale_log2"]
    assert Fraction(2) ** k <= ratio < Fraction(2) ** (k + 1)
    assert isinstance(fit["scale"], str)  # beyond float64: its exact value as text
    assert abs(Fraction(fit["scale"]) / ratio - 1) < Fraction(1, 10**15)
    assert Fraction(fit["scale_pow2"]) / Fraction(2) ** k - 1 < Fraction(1, 10**15)
    assert f"2^{k}" in text


# ---------------------------------------------------------------- 3. long double
@pytest.mark.skipif(np.dtype(np.longdouble).itemsize == 8, reason="long double is float64 here")
@pytest.mark.parametrize("command", [["ls"], ["stats"], ["hash"], ["diff", "x.npy"]])
def test_long_double_is_refused_by_every_command(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.array([1.0, 2.0], np.longdouble))
    err = usage_error(capsys, *command, "x.npy")
    assert np.dtype(np.longdouble).name in err and "'x'" in err and "integer" not in err


# ---------------------------------------------------------------- 4. sparse and meta tensors
@pytest.mark.parametrize("kind", ["sparse", "meta"])
@pytest.mark.parametrize("command", ["stats", "hash", "ls"])
def test_sparse_and_meta_torch_tensors_are_refused(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, kind: str,
                                                   command: str) -> None:
    torch = pytest.importorskip("torch")
    t = torch.eye(3).to_sparse() if kind == "sparse" else torch.empty(3, device="meta")
    path = str(tmp_path / f"{kind}.pt")
    torch.save({"w": t}, path)
    err = usage_error(capsys, command, path)
    assert "'w'" in err and (kind in err or "sparse" in err)


# ---------------------------------------------------------------- 5. --key keeps the check
def test_key_on_checkpoints_keeps_the_bit_equality_check(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.chdir(tmp_path)
    x = np.arange(6, dtype=np.float32)
    np.savez("a.npz", x=x, y=x)
    np.savez("b.npz", x=x + 1, y=x)
    assert call(capsys, "diff", "a.npz", "b.npz")[0] == 1
    code, out, _ = call(capsys, "diff", "a.npz", "b.npz", "--key", "x", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["check"] == "bit-equality"
    code, text = render("diff", "a.npz", "b.npz", "--key", "x")
    assert code == 1 and "FAIL: 6 element(s) not bit-equal" in text
    code, text = render("diff", "a.npz", "b.npz", "--key", "y")
    assert code == 0 and "OK: every element bit-equal" in text
    # genuinely single tensors: reported on, no check unless one is given (as documented)
    np.save("xa.npy", x)
    np.save("xb.npy", x + 1)
    assert call(capsys, "diff", "xa.npy", "xb.npy")[0] == 0
    assert call(capsys, "diff", "a.npz:x", "b.npz:x")[0] == 0


# ---------------------------------------------------------------- 6. output errors
class _FailingStdout(io.StringIO):
    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, s: str) -> int:
        raise self.error

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file descriptor")


@pytest.mark.parametrize("argv", [["formats"], ["formats", "--json"], ["--help"]])
def test_a_broken_pipe_exits_quietly_with_141(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch,
                                              argv: list[str]) -> None:
    monkeypatch.setattr(sys, "stdout", _FailingStdout(BrokenPipeError(errno.EPIPE, "pipe")))
    assert main(argv) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv", [["formats"], ["formats", "--json"], ["--help"]])
def test_a_full_disk_is_one_line_and_74(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(sys, "stdout", _FailingStdout(full))
    assert main(argv) == 74
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fpinspect: error: cannot write") \
        and os.strerror(errno.ENOSPC) in err


def test_a_closed_stdout_is_one_line_and_74(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["formats"]) == 74
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "standard output is closed" in err


def test_the_exit_statuses_are_documented() -> None:
    from fpinspect.main import MAIN_EPILOG

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for text in (MAIN_EPILOG, readme):
        assert "74" in text and "141" in text and "130" in text


# ---------------------------------------------------------------- 7. colliding torch keys
def test_torch_keys_that_collide_once_flattened_are_an_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "dotkeys.pt")
    torch.save({"a.b": torch.ones(2), "a": {"b": torch.zeros(3)}}, path)
    err = usage_error(capsys, "ls", path)
    assert "'a.b'" in err


# ---------------------------------------------------------------- 8. float8_e5m2 .npy ('<f1')
def test_e5m2_npy_saved_by_numpy_is_read_with_f(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    x = np.array([[0.5, -2.0, 57344.0], [0.0, 1.5, -0.25]]).astype(ml_dtypes.float8_e5m2)
    np.save("e5.npy", x)
    np.save("raw.npy", x.view(np.uint8).view("V1"))
    assert b"'<f1'" in Path("e5.npy").read_bytes()[:128]
    assert call(capsys, "ls", "e5.npy")[0] == 0
    code, out, _ = call(capsys, "stats", "e5.npy", "-f", "e5m2", "--json")
    assert code == 0 and json.loads(out)["amax"] == 57344.0
    code, out, _ = call(capsys, "diff", "e5.npy", "raw.npy", "-f", "e5m2", "--json")
    assert code == 0 and json.loads(out)["bitwise_mismatches"] == 0
    h1 = call(capsys, "hash", "e5.npy", "-f", "e5m2")[1].split()[0]
    h2 = call(capsys, "hash", "raw.npy", "-f", "e5m2")[1].split()[0]
    assert h1 == h2


# ---------------------------------------------------------------- 9. legacy torch files
def test_legacy_torch_files_are_read(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    torch.save({"w": w}, "old.bin", _use_new_zipfile_serialization=False)
    np.save("w.npy", w.numpy())
    assert call(capsys, "ls", "old.bin")[0] == 0
    code, out, _ = call(capsys, "diff", "old.bin", "w.npy", "--max-ulp", "0", "--json")
    assert code == 0 and json.loads(out)["bitwise_mismatches"] == 0


# ---------------------------------------------------------------- 10. one line, no warnings
@pytest.mark.parametrize("kind", ["qint8", "complex32"])
def test_torch_warnings_do_not_precede_the_error(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path, kind: str) -> None:
    torch = pytest.importorskip("torch")
    path = str(tmp_path / f"{kind}.pt")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = (torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8) if kind == "qint8"
             else torch.ones(4, dtype=torch.complex32))
        torch.save({"t": t}, path)
    err = usage_error(capsys, "stats", path)  # filterwarnings=error: a warning would be a 70
    assert kind in err


def test_a_whole_module_error_has_no_terminal_escapes(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "module.pt")
    torch.save(torch.nn.Linear(2, 2), path)
    err = usage_error(capsys, "ls", path)  # asserts no "\x1b"
    assert "more than tensors" in err


# ---------------------------------------------------------------- 11. Ctrl-C while importing
def _as_the_program(sigint: str, *then: str) -> subprocess.CompletedProcess[str]:
    """A child interpreter that starts with SIGINT set to ``signal.<sigint>``, imports
    fpinspect as the ``fpinspect`` program does, then runs the lines ``then``."""
    code = "\n".join(["import os, signal, sys, time",
                      f"signal.signal(signal.SIGINT, signal.{sigint})",
                      "sys.argv[0] = '/venv/bin/fpinspect'", "import fpinspect", *then])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)


def test_ctrl_c_while_importing_is_one_line_and_130() -> None:
    # (the child starts as from a terminal: a test run started as a background job
    # passes SIGINT on ignored, and then fpinspect leaves it so, as tested below)
    p = _as_the_program("default_int_handler", "os.kill(os.getpid(), signal.SIGINT)",
                        "time.sleep(5)")
    assert p.returncode == 130 and p.stderr == "fpinspect: interrupted\n", p.stderr


def test_the_early_handler_is_only_for_the_program() -> None:
    from fpinspect import _is_the_program

    assert _is_the_program("/venv/bin/fpinspect", ["python", "/venv/bin/fpinspect", "ls"])
    assert _is_the_program("-m", ["python3", "-m", "fpinspect", "diff"])
    assert not _is_the_program("/venv/bin/pytest", ["python", "-m", "pytest"])
    # not in the tests: SIGINT as the test process started (ignored in a background job)
    assert signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN)


def test_an_ignored_sigint_stays_ignored() -> None:
    """A program started with SIGINT ignored (a shell's background job, nohup) keeps it
    ignored, as Python itself does: fpinspect installs its early handler only over
    Python's default one."""
    p = _as_the_program("SIG_IGN", "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)")
    assert p.returncode == 0 and p.stdout == "True\n", p.stderr


# ---------------------------------------------------------------- 12. minor
def test_int_names_n_in_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert "N='0x'" in usage_error(capsys, "int", "0x")


def test_the_fail_line_negates_both_tolerances(pair: tuple[str, str]) -> None:
    code, text = render("diff", *pair, "--max-ulp", "1", "--atol", "0.5")
    assert code == 1
    assert "FAIL: 1 element(s) more than 1 ULP apart and with |a - b| > 0.5 + 0 * |a|" in text


def test_probe_refuses_a_negative_verify(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--verify -1" in usage_error(capsys, "probe", "numpy:matmul", "--input", "fp32",
                                        "--verify", "-1")


def test_compare_read_reads_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detailed diff of a side rounded into another format reads (and rounds) a
    chunk at a time, and reports exactly what compare_codes reports on whole arrays."""
    import numerics.compare as compare_mod
    from numerics.compare import compare_read

    monkeypatch.setattr(compare_mod, "CHUNK", 1000)
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**16, 5000).astype(np.uint16)
    b = a.copy()
    hit = rng.random(a.size) < 0.1
    b[hit] = (b[hit].astype(np.int64) + rng.integers(-3, 4, hit.sum())).astype(np.uint16)
    sizes: list[int] = []

    def reader(x: np.ndarray) -> Any:
        def read(start: int, stop: int) -> np.ndarray:
            sizes.append(stop - start)
            return x[start:stop]
        return read

    got = compare_read(reader(a), reader(b), (50, 100), "bfloat16", worst=7, max_ulp=1)
    want = compare_codes(a.reshape(50, 100), b.reshape(50, 100), "bfloat16", worst=7,
                         max_ulp=1)
    assert repr(got) == repr(want)
    assert max(sizes) <= 1000
