"""What a normal install needs beyond the tests of the library itself: numba's cache
where the package folder and the user's home are not writable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_REFUSING_NUMBA = """
import sys

import numba

real = numba.njit


def njit(*args, **kw):  # numba where no cache folder is writable: the first cached
    if kw.get("cache") and not getattr(njit, "refused", False):  # definition fails
        njit.refused = True
        raise RuntimeError("cannot cache function '_probe': no locator available for file")
    return real(*args, **kw)


numba.njit = njit
import tempfile

tempfile.tempdir = sys.argv[1]
import numpy as np
from numba.core import config

import numerics

# (a kernel that compiles in about a second: the decoding of 8-bit codes by a table)
values = numerics.decode(np.array([0x38, 0x40], np.uint8), "e4m3fn")
print(config.CACHE_DIR)
print(values.tolist())
"""


def test_kernels_fall_back_to_a_private_cache_folder(tmp_path: Path) -> None:
    """A read-only install run without a writable home: numba refuses to define cached
    functions; numerics.kernels.cachedir then points numba at a private folder in the
    temporary directory, and the kernels compile and cache there."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    r = subprocess.run([sys.executable, "-c", _REFUSING_NUMBA, str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    folder, values = r.stdout.split("\n")[:2]
    assert Path(folder).parent == tmp_path and Path(folder).name.startswith(
        "numerics-numba-cache-")
    assert values == "[1.0, 2.0]"
    assert any(Path(folder).rglob("*.nbi"))  # the kernels were cached there
    if hasattr(os, "getuid"):
        assert (Path(folder).stat().st_mode & 0o077) == 0  # private to this user


ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_quickstart_as_written() -> None:
    """CI proves the README: each quickstart command is a line of .ci/run, verbatim, and
    .ci/run ends with the exhaustive tier."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert any(line.rstrip(" \\") == command for line in ci), command
    assert ci[-1] == "python -m pytest -m exhaustive tests"


def test_pyproject_declares_the_license_file() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'license = "Apache-2.0"' in text and (ROOT / "LICENSE").read_text().lstrip(
    ).startswith("Apache License")
