"""Regressions from the second audit of ``fpinspect`` (corrupt headers, exact integer
checks, --key shape mismatches, --scheduler and progress on one tensor, argument
handling, permissions, duplicate .npz members).

Each test states its expectation independently of the code under test: the exit
status and the one-line error the conventions require, Python integers, or the
output of an equivalent command.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import struct
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_render import call, usage_error
from fpinspect import main as cli_main
from fpinspect import views
from safetensors.numpy import save_file

from numerics.checkpoint import open_source
from numerics.tensors import TensorFileError, list_tensors, load_tensor


def _safetensors(path: Path, header: bytes, data: bytes = bytes(16)) -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


# ---------------------------------------------------------------- 1: header fields of wrong types
@pytest.mark.parametrize("entry", [
    {"dtype": ["F32"], "shape": [4], "data_offsets": [0, 16]},
    {"dtype": {"F32": 1}, "shape": [4], "data_offsets": [0, 16]},
    {"dtype": 32, "shape": [4], "data_offsets": [0, 16]},
    {"dtype": None, "shape": [4], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": {"0": 4}, "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [[4]], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [4], "data_offsets": "ab"},
    {"dtype": "F32", "shape": [4], "data_offsets": {"0": 0, "1": 16}},
    {"dtype": "F32", "shape": [4], "data_offsets": [0, 16, 32]},
    {"dtype": "F32", "shape": [4], "data_offsets": 16},
    {"shape": [4], "data_offsets": [0, 16]},
    ["F32", [4], [0, 16]],
    "F32",
    None,
])
def test_safetensors_header_fields_of_wrong_types(entry: object, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.safetensors"
    _safetensors(path, json.dumps({"x": entry}).encode())
    for command in ("ls", "stats", "hash"):
        err = usage_error(capsys, command, str(path))
        assert "bad.safetensors" in err and "'x'" in err and "malformed" in err
    for opener in (open_source, load_tensor, list_tensors):
        if opener is list_tensors:
            continue  # names only: the entries are not read
        with pytest.raises(TensorFileError, match="malformed header entry"):
            opener(str(path))


# ---------------------------------------------------------------- 2: deeply nested JSON
def test_deeply_nested_json_header_and_index(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    _safetensors(tmp_path / "deep.safetensors", deep)
    (tmp_path / "deep.index.json").write_bytes(deep)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "model.safetensors.index.json").write_bytes(deep)
    for name in ("deep.safetensors", "deep.index.json", "dir"):
        err = usage_error(capsys, "ls", str(tmp_path / name))
        assert "nests too deeply" in err, err
        with pytest.raises(TensorFileError, match="nests too deeply"):
            open_source(tmp_path / name)
    with pytest.raises(TensorFileError, match="deep.safetensors"):
        load_tensor(tmp_path / "deep.safetensors")


def test_safetensors_header_number_of_too_many_digits(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    header = b'{"x": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 16]}}'
    _safetensors(tmp_path / "digits.safetensors", header)
    err = usage_error(capsys, "ls", str(tmp_path / "digits.safetensors"))
    assert "digits.safetensors" in err and "not JSON" in err


# ---------------------------------------------------------------- 3: exact integer tolerances
def test_integer_atol_is_checked_exactly(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "ia.npy", np.array([2**53 + 1], np.int64))
    np.save(tmp_path / "ib.npy", np.array([0], np.int64))
    a, b = str(tmp_path / "ia.npy"), str(tmp_path / "ib.npy")
    code, out, err = call(capsys, "diff", a, b, "--atol", str(2**53))
    assert code == 1 and "FAIL" in out and err == ""  # 2**53 + 1 > 2**53
    code, out, _ = call(capsys, "diff", a, b, "--atol", str(2**53 + 2))
    assert code == 0 and "OK" in out
    code, out, _ = call(capsys, "diff", b, a, "--rtol", "0.5", "--atol", str(2**53), "--json")
    assert code == 1 and json.loads(out)["failures"] == 1  # |a| = 0: rtol adds nothing
    # the bound is float tensors' (|a| as a float64, 2**60 for both, so 0.5 * |a| = 2**59)
    # and |a - b| = 2**59 + 1 is not rounded: both fail (with d in float64, 2**59, both
    # would pass)
    np.save(tmp_path / "ra.npy", np.array([2**60 + 2, 2**60 + 1], np.int64))
    np.save(tmp_path / "rb.npy", np.array([2**59 + 1, 2**59], np.int64))
    code, out, _ = call(capsys, "diff", str(tmp_path / "ra.npy"), str(tmp_path / "rb.npy"),
                        "--rtol", "0.5", "--json")
    assert code == 1 and json.loads(out)["failures"] == 2


# ---------------------------------------------------------------- 4: --key and shapes
def test_key_picking_tensors_of_different_shapes_is_a_shape_mismatch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "c1.npz", a=np.ones(3, np.float32), b=np.ones((2, 2), np.float32))
    np.savez(tmp_path / "c2.npz", a=np.ones(3, np.float32), b=np.ones(4, np.float32))
    c1, c2 = str(tmp_path / "c1.npz"), str(tmp_path / "c2.npz")
    code, out, err = call(capsys, "diff", c1, c2, "--key", "b")
    assert code == 1 and err == "" and "shape mismatches (1): b 2x2 vs 4" in out
    code, out, _ = call(capsys, "diff", c1, c2, "--key", "b", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert doc["shape_mismatches"] == [{"name": "b", "shape_a": [2, 2], "shape_b": [4]}]
    # the same exit status and report as without --key
    code, out, _ = call(capsys, "diff", c1, c2)
    assert code == 1 and "shape mismatches (1): b 2x2 vs 4" in out


# ---------------------------------------------------------------- 5: --scheduler and progress
@pytest.fixture()
def tensors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(3000).astype(np.float32)
    y = x.copy()
    y[7] = 1
    np.save("x.npy", x)
    np.save("y.npy", y)
    np.save("i.npy", np.arange(100, dtype=np.int32))
    np.save("j.npy", np.arange(100, dtype=np.int32) * 2)
    save_file({"w": x, "v": x[:5]}, "m1.safetensors")
    save_file({"w": y, "v": x[:5]}, "m2.safetensors")
    return tmp_path


@pytest.mark.parametrize("argv", [
    ("diff", "x.npy", "y.npy"),
    ("diff", "i.npy", "j.npy"),
    ("diff", "m1.safetensors", "m2.safetensors", "--key", "w"),
    ("hash", "x.npy"),
    ("hash", "m1.safetensors:w"),
    ("stats", "x.npy"),
])
def test_one_tensor_commands_use_the_scheduler(argv: tuple[str, ...], tensors: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, *argv, "--scheduler", "garbage")
    assert "cannot connect to the Dask scheduler 'garbage'" in err


@pytest.mark.parametrize(("address", "port"), [("tcp://localhost:99999", "99999"),
                                             ("localhost:0", "0"),
                                             ("tcp://[::1]:65536", "65536")])
def test_a_scheduler_port_out_of_range_is_refused_at_once(address: str, port: str,
                                                          tensors: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """No connection can be made to such a port: the CLI says so instead of waiting out
    dask's 10 s connect timeout."""
    err = usage_error(capsys, "hash", "x.npy", "--scheduler", address)
    assert f"its port {port!r} is not a port number" in err


@pytest.fixture()
def progress_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[int]]]:
    """Every progress bar the CLI asks for: (total, the bytes reported)."""
    calls: list[tuple[int, list[int]]] = []

    @contextlib.contextmanager
    def fake(total: int, *, enabled: bool, delay: float = 1.0) \
            -> Iterator[Callable[[int], None]]:
        seen: list[int] = []
        calls.append((total, seen))
        yield seen.append

    monkeypatch.setattr(views, "progress_bar", fake)
    return calls


@pytest.mark.parametrize("argv, nbytes, status", [
    (("diff", "x.npy", "y.npy"), 2 * 3000 * 4, 0),  # two files: a report, no check
    (("diff", "i.npy", "j.npy"), 2 * 100 * 4, 0),
    (("diff", "m1.safetensors", "m2.safetensors", "--key", "w"), 2 * 3000 * 4, 1),
    (("diff", "m1.safetensors", "m2.safetensors"), 2 * 3005 * 4, 1),
])
def test_one_tensor_diff_reports_progress_like_a_checkpoint_diff(
        argv: tuple[str, ...], nbytes: int, status: int, tensors: Path,
        progress_calls: list[tuple[int, list[int]]],
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = call(capsys, *argv)
    assert code == status and err == ""
    assert [(total, sum(seen)) for total, seen in progress_calls] == [(nbytes, nbytes)]


def test_one_tensor_diff_report_is_unchanged(tensors: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from numerics.compare import compare_codes

    x, y = np.load("x.npy"), np.load("y.npy")
    want = compare_codes(x.view(np.uint32), y.view(np.uint32), "binary32", worst=3)
    code, out, _ = call(capsys, "diff", "x.npy", "y.npy", "--top", "3", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["bitwise_mismatches"] == want.bitwise_mismatches == 1
    assert doc["max_ulp_distance"] == want.max_ulp
    assert [w["index"] for w in doc["worst"]] == [list(w.index) for w in want.worst]


# ---------------------------------------------------------------- 6: wide integers in stats
def test_stats_bins_wide_integers_by_their_bit_length(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "big.npy", np.array([2**63 - 1, 2**54 - 1], np.int64))
    np.save(tmp_path / "ubig.npy", np.array([2**64 - 1, 1], np.uint64))
    code, out, _ = call(capsys, "stats", str(tmp_path / "big.npy"), "--json")
    assert code == 0
    assert [b["exponent"] for b in json.loads(out)["exponent_histogram"]] == [53, 62]
    code, out, _ = call(capsys, "stats", str(tmp_path / "ubig.npy"), "--json")
    assert [b["exponent"] for b in json.loads(out)["exponent_histogram"]] == [0, 63]


# ---------------------------------------------------------------- 7: unsigned candidates
def test_stats_counts_what_an_unsigned_format_cannot_hold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "signed.npy")
    np.save(path, np.array([-1.0, -2.0, 0.0, 1.0, -1e39, 1e39], np.float64))
    code, out, _ = call(capsys, "stats", path, "--candidates", "e8m0fnu,e4m3fn", "--json")
    fits = {f["format"]: f for f in json.loads(out)["formats"]}
    assert code == 0
    # -1, -2, 0 and -1e39 become NaN in e8m0fnu; only 1e39 overflows (it has a NaN, no inf)
    assert fits["e8m0fnu"]["unrepresentable"] == 4 / 6
    assert fits["e8m0fnu"]["overflow"] == fits["e8m0fnu"]["saturate"] == 1 / 6
    assert fits["e4m3fn"]["unrepresentable"] == 0.0 and fits["e4m3fn"]["saturate"] == 2 / 6
    code, out, _ = call(capsys, "stats", path, "--candidates", "e8m0fnu,e4m3fn")
    assert "unrepr." in out and "0.667" in out
    code, out, _ = call(capsys, "stats", path, "--candidates", "e4m3fn")
    assert "unrepr." not in out  # no unsigned candidate: no column of zeros


# ---------------------------------------------------------------- 8: int64 against uint64
@pytest.mark.parametrize("order", [("s64.npy", "u64.npy"), ("u64.npy", "s64.npy")])
def test_signed_against_big_unsigned_names_the_unsigned_tensor(
        order: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    np.save("s64.npy", np.array([-1, 5], np.int64))
    np.save("u64.npy", np.array([2**64 - 1, 5], np.uint64))
    err = usage_error(capsys, "diff", *order)
    assert "Got tensor 'u64' of 'u64.npy' as uint64" in err
    assert "'s64' of 's64.npy'" in err


# ---------------------------------------------------------------- 9: paths like negative numbers
def test_paths_and_keys_that_look_like_negative_numbers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    np.save("-1.npy", np.ones(3, np.float32))
    members: dict[str, Any] = {"-1.w": np.ones(2, np.float32), "b": np.zeros(2, np.float32)}
    np.savez("-2.npz", **members)
    code, out, err = call(capsys, "ls", "-1.npy")
    assert code == 0 and err == "" and "binary32" in out
    code, out, err = call(capsys, "diff", "-1.npy", "-1.npy", "--max-ulp", "0")
    assert code == 0 and err == ""
    code, out, err = call(capsys, "hash", "-2.npz", "--key", "-1.*", "--json")
    assert code == 0 and err == "" and json.loads(out)["shape"] == [2]
    code, out, _ = call(capsys, "diff", "-2.npz", "-2.npz", "--key", "-1.w", "--json")
    assert code == 0 and json.loads(out)["a"]["path"] == "-2.npz:-1.w"
    # values are still read as negative numbers, with or without a command
    code, out, _ = call(capsys, "-1e-40", "-f", "bf16", "--json")
    assert code == 0 and json.loads(out)["input"] == "-1e-40"
    code, out, _ = call(capsys, "int", "-5", "--json")
    assert code == 0
    err = usage_error(capsys, "diff", "-1.npy", "-1.npy", "--atol", "-1e-3")
    assert "--atol -0.001" in err


# ---------------------------------------------------------------- 12: options without a command
def test_json_alone_is_the_built_in_example_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, "--json")
    code2, out2, _ = call(capsys, "0.1", "--json")
    assert code == code2 == 0 and err == "" and out == out2
    assert json.loads(out)["input"] == "0.1"
    code, bare, _ = call(capsys)
    assert code == 0 and "0.1" in bare


@pytest.mark.parametrize("argv, message", [
    (("--bogus",), "unrecognized arguments: --bogus"),
    (("--bogus", "0.1"), "unrecognized arguments: --bogus"),
    (("value",), "the following arguments are required: VALUE"),
    (("value", "--json"), "the following arguments are required: VALUE"),
])
def test_unknown_options_and_a_missing_value(argv: tuple[str, ...], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert message in usage_error(capsys, *argv)


# ---------------------------------------------------------------- 13: permissions, .npz members
def _deny(monkeypatch: pytest.MonkeyPatch, denied: Callable[[str], bool]) -> None:
    """os.stat raises EACCES for the paths ``denied`` picks (what a directory that cannot
    be searched does for the names in it, to a user who is not root)."""
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, (str, os.PathLike)) and denied(os.fspath(path)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)


def test_a_file_in_a_directory_that_cannot_be_searched_is_permission_denied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    np.save(locked / "x.npy", np.ones(3, np.float32))
    _deny(monkeypatch, lambda p: p.startswith(str(locked) + os.sep))
    for argv in (("ls", str(locked / "x.npy")), ("stats", str(locked / "x.npy")),
                 ("ls", str(locked / "x.npy") + ":x"), ("ls", str(locked))):
        err = usage_error(capsys, *argv)
        assert "Permission denied" in err and "No such file" not in err, err
        assert "holds no tensor files" not in err
    with pytest.raises(PermissionError):
        open_source(locked / "x.npy")
    with pytest.raises(PermissionError):
        list_tensors(locked / "x.npy")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads and searches every directory")
def test_real_permissions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for mode in (0o000, 0o400):  # neither readable nor searchable; readable only
        d = tmp_path / f"d{mode:o}"
        d.mkdir()
        np.save(d / "x.npy", np.ones(3, np.float32))
        d.chmod(mode)
        try:
            err = usage_error(capsys, "ls", str(d / "x.npy"))
            assert "Permission denied" in err
            err = usage_error(capsys, "ls", str(d))
            assert "Permission denied" in err and "holds no tensor files" not in err
        finally:
            d.chmod(0o700)


def _npz_with_members(path: Path, members: list[tuple[str, np.ndarray]]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, x in members:
            buf = io.BytesIO()
            np.save(buf, x)
            with pytest.warns(UserWarning, match="Duplicate name") if name in z.namelist() \
                    else contextlib.nullcontext():
                z.writestr(name, buf.getvalue())


@pytest.mark.parametrize("second", ["a.npy", "a"])
def test_npz_holding_a_tensor_twice_is_refused(second: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dup.npz"
    _npz_with_members(path, [("a.npy", np.ones(3, np.float32)),
                             (second, np.zeros(3, np.float32)),
                             ("b.npy", np.ones(2, np.float32))])
    for argv in (("ls", str(path)), ("diff", str(path), str(path)), ("stats", str(path)),
                 ("hash", str(path))):
        err = usage_error(capsys, *argv)
        assert "dup.npz" in err and "tensor 'a' twice" in err and f"'{second}'" in err
    with pytest.raises(TensorFileError, match="tensor 'a' twice"):
        load_tensor(path, key="b")
    with pytest.raises(TensorFileError, match="tensor 'a' twice"):
        list_tensors(path)


def test_prepare_is_still_what_argparse_sees() -> None:
    assert cli_main._prepare(["--json"]) == ["value", "--json"]
    assert cli_main._prepare(["ls", "-1.npy"]) == ["ls", " -1.npy"]
