"""fpinspect as a process, fifth-round findings; each failed before its fix.

- ``table`` never cuts a value or drops its row labels, at any width (``COLUMNS=0``
  printed nothing, 80 columns cut e5m2's row 8).
- A symlink loop or a name too long is the user's mistake (exit 2), not "internal error".
- A FIFO or device is named as not a regular file (it was "which is empty").
- A stdout encoding without UTF-8 escapes what it lacks instead of exiting 2 halfway.
- With stderr closed, errors go nowhere rather than onto stdout.
- SIGTERM unwinds (a progress bar's ``finally`` runs) and exits 128 + 15.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_render import call, usage_error
from fpinspect.main import _terminable
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
ENV["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "cli"), ENV.get("PYTHONPATH", "")])


@pytest.mark.parametrize("fmt", ["e5m2", "e4m3fn", "binary8p1", "e8m0fnu", "e2m1fn"])
@pytest.mark.parametrize("columns", ["0", "30", "60", "80"])
def test_table_never_cuts_a_value(fmt: str, columns: str, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = call(capsys, "table", fmt)
    assert code == 0 and "…" not in out
    rows = [line.split()[0] for line in out.splitlines()[3:] if line.strip()]
    assert "0" in rows and ("f" in rows or fmt == "e2m1fn")  # the row labels are there


def test_symlink_loops_and_long_names_are_the_users_mistake(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    for command in ("ls", "stats", "hash"):
        err = usage_error(capsys, command, str(tmp_path / "loop1"))
        assert "symbolic links" in err
    assert "too long" in usage_error(capsys, "ls", str(tmp_path / ("a" * 300 + ".npy")))


def test_a_fifo_is_not_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "f.npy")
    assert "not a regular file" in usage_error(capsys, "ls", str(tmp_path / "f.npy"))


def test_an_ascii_stdout_gets_escapes_not_an_error(tmp_path: Path) -> None:
    x = np.ones(1000, np.float32)
    x[0] = 1e-30
    save_file({"poids.μ": x}, str(tmp_path / "u.safetensors"))
    env = dict(ENV, PYTHONIOENCODING="ascii", COLUMNS="100")
    path = str(tmp_path / "u.safetensors")
    for args in (["stats", path], ["ls", path], ["value", "0.1"]):
        r = subprocess.run([sys.executable, "-m", "fpinspect", *args], capture_output=True,
                           text=True, env=env, timeout=120, check=False)
        assert r.returncode == 0 and r.stderr == "", (args, r.stderr)
        assert "█" not in r.stdout
        if args[0] == "ls":
            assert "poids.\\u03bc" in r.stdout
        if args[0] == "stats":
            assert "#" in r.stdout  # the histogram's bars


def test_with_stderr_closed_an_error_goes_nowhere(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "fpinspect", "ls", str(tmp_path / "no.npy")],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, timeout=120,
                       check=False, pass_fds=(), close_fds=True,
                       preexec_fn=lambda: os.close(2))
    assert r.returncode == 2 and r.stdout == b""


def test_sigterm_unwinds_and_exits_143() -> None:
    unwound = []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exc:
        with _terminable():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # (the handler runs between bytecodes)
                    pass
            finally:
                unwound.append(True)
    assert exc.value.code == 128 + signal.SIGTERM and unwound
    assert signal.getsignal(signal.SIGTERM) is before
