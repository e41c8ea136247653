"""The pytest plugin, run in inner pytest sessions through the pytester fixture."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

pytest_plugins = ["pytester"]

# Block the entry point (present once the package is installed) and load the module
# explicitly, so the inner runs see the plugin exactly once either way.
PLUGIN = ["-p", "no:numerics", "-p", "numerics.testing.plugin", "-p", "no:cacheprovider"]
ROOT = Path(__file__).resolve().parents[1]

INNER = """
import numpy as np

def test_seed(numerics_seed):
    print("SEED", numerics_seed)

def test_rng(numerics_rng):
    print("DRAW", numerics_rng.integers(1 << 30))

def test_fails(numerics_seed):
    assert numerics_seed < 0
"""


def test_default_seed_header_and_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*PLUGIN, "-s")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["numerics: --numerics-seed=0", "*SEED 0*",
                                 "*replay with --numerics-seed=0*"])
    expected = np.random.default_rng([0, zlib.crc32(b"test_inner.py::test_rng")])
    result.stdout.fnmatch_lines([f"*DRAW {expected.integers(1 << 30)}*"])


def test_explicit_and_random_seeds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*PLUGIN, "-s", "--numerics-seed=1234")
    result.stdout.fnmatch_lines(["numerics: --numerics-seed=1234", "*SEED 1234*"])
    result = pytester.runpytest(*PLUGIN, "-s", "--numerics-seed=random")
    header = [ln for ln in result.stdout.lines if ln.startswith("numerics: --numerics-seed=")]
    seed = int(header[0].split("=")[1])
    result.stdout.fnmatch_lines([f"*SEED {seed}*"])


def test_xdist_workers_share_the_random_seed(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # each worker writes the seed it used; all must equal the controller's header
    pytester.makepyfile(test_inner="""
import os

def _write(name, seed):
    with open(os.path.join(os.environ["SEED_DIR"], name), "w") as f:
        f.write(str(seed))

def test_a(numerics_seed):
    _write("a", numerics_seed)

def test_b(numerics_seed):
    _write("b", numerics_seed)
""")
    out = pytester.mkdir("seeds")
    monkeypatch.setenv("SEED_DIR", str(out))
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", "--numerics-seed=random")
    result.assert_outcomes(passed=2)
    header = [ln for ln in result.stdout.lines if ln.startswith("numerics: --numerics-seed=")]
    seed = header[0].split("=")[1]
    assert (out / "a").read_text() == (out / "b").read_text() == seed


def test_bad_seed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*PLUGIN, "--numerics-seed=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--numerics-seed='abc'*non-negative int or 'random'*"])


def test_leading_zeros_are_a_decimal_seed(pytester: pytest.Pytester) -> None:
    """--numerics-seed=007 is 7 (int(text, 0) rejected it as a usage error)."""
    from numerics.testing.plugin import _parse_seed

    assert [_parse_seed(t) for t in ("007", "0", "00", "12", "0x10", "0b11")] == \
        [7, 0, 0, 12, 16, 3]
    for bad in ("-007", "7.0", "0x", " "):
        with pytest.raises(pytest.UsageError, match="non-negative int or 'random'"):
            _parse_seed(bad)
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*PLUGIN, "-s", "--numerics-seed=007")
    result.stdout.fnmatch_lines(["numerics: --numerics-seed=7", "*SEED 7*"])


def test_profiles_are_registered_and_loadable(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A subprocess: loading a profile changes hypothesis' global settings.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_inner="""
from hypothesis import settings

def test_profile():
    assert settings.get_current_profile_name() == "ci"
    assert settings.default.max_examples == 200 and settings.default.derandomize
    assert settings.get_profile("dev").max_examples == 20
    assert settings.get_profile("thorough").max_examples == 2000
""")
    result = pytester.runpytest_subprocess(*PLUGIN, "--hypothesis-profile=ci")
    result.assert_outcomes(passed=1)


def test_importing_the_plugin_registers_no_profile() -> None:
    import subprocess
    import sys

    code = ("import numerics.testing, numerics.testing.plugin\n"
            "from hypothesis import settings\n"
            "try:\n    settings.get_profile('thorough')\nexcept Exception:\n    print('none')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "none"


def test_the_plugin_loads_without_hypothesis(tmp_path: Path) -> None:
    """Installing numerics registers its pytest plugin for every project in the
    environment: without hypothesis (a test extra) an unrelated test run must still work,
    with the seed fixtures (importing numerics.testing must not import hypothesis)."""
    import subprocess
    import sys

    (tmp_path / "test_other.py").write_text(
        "def test_one(numerics_seed):\n    assert numerics_seed == 0\n")
    code = f"""
import sys


class NoHypothesis:  # as if it were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, NoHypothesis())
import pytest

sys.exit(pytest.main(["-q", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                      {str(tmp_path)!r}]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
