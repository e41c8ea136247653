"""fpinspect through its real entry point (``python -m fpinspect`` in a subprocess).

Exit status 0/1/2, one-line errors without usage dumps or tracebacks, strict
JSON.  About 25 subprocess calls (~0.3 s each); the in-process tests at the end
cover the internal-error path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")]),
    "COLUMNS": "100",
}
ENV.pop("FORCE_COLOR", None)
ENV.pop("NO_COLOR", None)


def fp(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) \
        -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fpinspect", *args], capture_output=True,
                          text=True, env=env or ENV, cwd=cwd, timeout=60, check=False)


def _no_bare_constants(name: str) -> Any:
    raise AssertionError(f"bare {name} in JSON output")


def strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_bare_constants)


def assert_usage_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fpinspect: error: ")
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fx")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = a.copy()
    b.view(np.uint32)[1, 2] += 3
    b[3, 4] = np.nan
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    np.save(d / "short.npy", a[:4])
    np.save(d / "a_bf16.npy", a.astype(ml_dtypes.bfloat16))  # saved as raw '<V2'
    save_file({"w": a.astype(ml_dtypes.bfloat16)}, str(d / "a.safetensors"))
    save_file({"w": (a * 100).astype(ml_dtypes.float8_e4m3fn)}, str(d / "f8.safetensors"))
    return d


def test_no_arguments_shows_the_demo() -> None:
    proc = fp()
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    assert "0x3dcd = 0.10009765625" in out  # 0.1 in bfloat16
    for name in ("binary64", "binary32", "tf32", "bfloat16", "binary16", "e5m2", "e4m3fn"):
        assert name in out
    for cmd in ("bits", "formats", "table", "int", "diff", "stats", "hash"):
        assert f"fpinspect {cmd}" in out
    assert "\x1b[" not in out  # not a terminal: no colour


def test_value_json_default_formats_and_exact_input() -> None:
    proc = fp("1.00390625000000000000009", "--json")
    assert proc.returncode == 0
    doc = strict_json(proc.stdout)
    rows = {r["format"]: r for r in doc["formats"]}
    assert list(rows) == ["binary64", "binary32", "tf32", "bfloat16", "binary16", "e5m2",
                          "e4m3fn"]
    assert rows["bfloat16"]["exact"] == "1.0078125"  # one rounding, not via float64 (1.0)
    assert rows["bfloat16"]["hex"] == "0x3f81"


def test_negative_values_are_not_options() -> None:
    doc = strict_json(fp("value", "-1e-40", "-f", "bf16,e4m3fn", "--json").stdout)
    assert [r["hex"] for r in doc["formats"]] == ["0x8001", "0x80"]
    assert doc["formats"][1]["flushed_to_zero"] is True
    doc = strict_json(fp("-0", "-f", "e4m3fn", "--json").stdout)
    assert doc["formats"][0]["exact"] == "-0" and doc["formats"][0]["code"] == 0x80


def test_nan_and_inf_are_strings_in_json() -> None:
    proc = fp("nan", "--all", "--json")
    assert proc.returncode == 0
    doc = strict_json(proc.stdout)
    assert all(r["value"] == "NaN" for r in doc["formats"])
    assert "e2m1fn" not in {r["format"] for r in doc["formats"]}  # no NaN there: listed apart
    assert {"e2m1fn", "e3m2fn", "e2m3fn"} <= set(doc["formats_without_nan"])
    assert "formats_without_nan" not in strict_json(fp("nan", "-f", "bf16", "--json").stdout)
    doc = strict_json(fp("1e400", "-f", "fp32,e5m2", "--json").stdout)
    assert doc["formats"][0]["value"] == "Infinity" and doc["formats"][0]["overflow"] is True


def test_bits_json_and_errors() -> None:
    doc = strict_json(fp("bits", "0x3f800000", "-f", "fp32", "--json").stdout)
    assert doc["exact"] == "1" and doc["next"]["hex"] == "0x3f800001"
    assert doc["previous"]["exact"] == "0.999999940395355224609375"
    assert_usage_error(fp("bits", "0x100", "-f", "e4m3fn"), "0x100", "8 bits")


def test_bad_input_is_one_line_and_status_2() -> None:
    assert_usage_error(fp("1", "-f", "e4m3fm"), "e4m3fm", "did you mean")
    assert_usage_error(fp("abc"), "'abc'", "not a number")


def test_formats_table_and_int_json() -> None:
    doc = strict_json(fp("formats", "--json").stdout)
    e4 = next(f for f in doc["formats"] if f["name"] == "e4m3fn")
    assert (e4["max"], e4["smallest_subnormal"], e4["infinity"]) == (448.0, 2.0**-9, "none")
    assert len(doc["formats"]) == 23
    doc = strict_json(fp("table", "e4m3fn", "--json").stdout)
    assert len(doc["codes"]) == 256 and doc["codes"][0x7E]["exact"] == "448"
    assert doc["codes"][0x7F]["value"] == "NaN"
    doc = strict_json(fp("int", "16777217", "--json").stdout)
    rows = {r["type"]: r for r in doc["types"]}
    assert rows["binary32"]["stored"] == "16777216" and rows["binary32"]["spacing"] == "2"
    assert rows["uint32"]["exact"] is True and rows["binary16"]["note"] == "overflow"


def test_help_has_examples() -> None:
    proc = fp("--help")
    assert proc.returncode == 0 and "examples:" in proc.stdout and "fpinspect diff" in proc.stdout


def test_diff_json_and_max_ulp_check(files: Path) -> None:
    proc = fp("diff", "a.npy", "b.npy", "--json", cwd=files)
    assert proc.returncode == 0
    doc = strict_json(proc.stdout)
    assert (doc["bitwise_mismatches"], doc["nan_mismatches"], doc["max_ulp_distance"]) == (2, 1, 3)
    assert doc["worst"][0]["index"] == [3, 4] and doc["worst"][0]["b_value"] == "NaN"
    assert doc["ok"] is None
    proc = fp("diff", "a.npy", "b.npy", "--max-ulp", "3", cwd=files)
    assert proc.returncode == 1 and "FAIL: 1 element" in proc.stdout  # the NaN mismatch
    proc = fp("diff", "a.npy", "a.npy", "--max-ulp", "0", "--json", cwd=files)
    assert proc.returncode == 0 and strict_json(proc.stdout)["ok"] is True


def test_diff_bf16_raw_npy_against_safetensors(files: Path) -> None:
    proc = fp("diff", "a_bf16.npy", "a.safetensors", "-f", "bf16", "--max-ulp", "0", cwd=files)
    assert proc.returncode == 0, proc.stderr
    assert "OK: every element within 0 ULP" in proc.stdout
    # float32 vs bf16 tensors: -f rounds the numbers into bf16 first
    doc = strict_json(fp("diff", "a.npy", "a.safetensors", "-f", "bf16", "--json",
                         cwd=files).stdout)
    assert doc["bitwise_mismatches"] == 0


def test_diff_user_errors(files: Path) -> None:
    assert_usage_error(fp("diff", "a.npy", "short.npy", cwd=files), "shapes", "[16, 8]", "[4, 8]")
    assert_usage_error(fp("diff", "missing.npy", "a.npy", cwd=files), "cannot read", "missing.npy")


def test_stats_json_fractions(files: Path) -> None:
    proc = fp("stats", "f8.safetensors", "--json", cwd=files)
    assert proc.returncode == 0, proc.stderr
    doc = strict_json(proc.stdout)
    assert doc["tensor"]["dtype"] == "e4m3fn" and doc["count"] == 128
    for f in doc["formats"]:
        for k in ("overflow", "saturate", "flush_to_zero", "subnormal"):
            assert 0.0 <= f[k] <= 1.0
    e2m1 = next(f for f in doc["formats"] if f["format"] == "e2m1fn")
    assert e2m1["saturate"] > 0.5 and e2m1["overflow"] == 0.0  # no inf/NaN: saturates


def test_hash_ignores_the_container(files: Path) -> None:
    a = strict_json(fp("hash", "a_bf16.npy", "-f", "bf16", "--json", cwd=files).stdout)
    b = strict_json(fp("hash", "a.safetensors:w", "--json", cwd=files).stdout)
    assert a["digest"] == b["digest"] and len(a["digest"]) == 64
    assert a["kind"] == b["kind"] == "tensor"
    assert (a["dtype"], a["shape"]) == ("bfloat16", [16, 8])


def test_colour_follows_rich_conventions() -> None:
    forced = fp("1", "-f", "e4m3fn", env={**ENV, "FORCE_COLOR": "1"})
    assert "\x1b[31m" in forced.stdout or "\x1b[1;31m" in forced.stdout  # red sign bit
    off = fp("1", "-f", "e4m3fn", env={**ENV, "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert off.returncode == 0
    assert "31m" not in off.stdout and "32m" not in off.stdout  # no colour codes


# ---------------------------------------------------------------- in-process
# The same main() the entry point calls, without a process per case.
def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from fpinspect.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("args", "needles"), [
    (("1", "--rounding", "bogus"), ("bogus",)),
    (("nan", "-f", "e2m1fn"), ("NaN",)),
    (("table", "bf16"), ("at most 8 bits",)),
    (("bits", "0x7e"), ("-f/--format",)),
    (("bits", "0x1ff", "-f", "e2m1fn"), ("4 bits",)),
    (("int", "1.5"), ("integer",)),
    (("value",), ("VALUE",)),
    (("diff", "a_bf16.npy", "a.safetensors"), ("-f",)),
    (("diff", "a.safetensors", "a.safetensors", "--key", "x"), ("key='x'",)),
    (("diff", "a.npy", "a_bf16.npy", "-f", "e4m3fn"), ("byte",)),
    (("diff", "a.npy", "b.npy", "--max-ulp", "-1"), ("--max-ulp",)),
    (("stats", "a_bf16.npy"), ("-f",)),
    (("hash", "nope.safetensors"), ("nope.safetensors",)),
    (("stats", "a.npy", "--candidates", "fp9"), ("fp9",)),
])
def test_more_bad_input_in_process(files: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                   needles: tuple[str, ...]) -> None:
    monkeypatch.chdir(files)
    code, out, err = run_main(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fpinspect: error: "), err
    for needle in needles:
        assert needle in err, err


def test_internal_errors_say_so(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    import fpinspect.main as cli

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setitem(cli._COMMANDS, "formats", boom)
    assert cli.main(["formats"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "report" in err
    assert "kaput" in err and "Traceback" not in err


def test_negative_number_protection_in_process() -> None:
    from fpinspect.main import _prepare

    assert _prepare(["-1e-40", "-f", "bf16"]) == ["value", " -1e-40", "-f", "bf16"]
    assert _prepare(["--", "-inf"]) == ["value", " -inf"]
    # review: after `--` the options were taken as values ("unrecognized arguments")
    assert _prepare(["value", "--", "-1e400", "-f", "e8m0fnu"]) == [
        "value", " -1e400", "-f", "e8m0fnu"]
    assert _prepare(["ls", "--", "-f.npy"]) == ["ls", "--", "-f.npy"]
    assert _prepare(["int", "-5"]) == ["int", " -5"]
    assert _prepare(["-f", "bf16", "0.1"]) == ["value", "-f", "bf16", "0.1"]
