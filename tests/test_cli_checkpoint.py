"""fpinspect ls / diff / stats / hash on whole checkpoints, rendered at width 100 without colour.

The commands run in-process (``fpinspect.main.run``) with output going to a
rich console on a StringIO; bad input goes through ``main`` (one line on
stderr, exit status 2).  The figures themselves are checked against numpy in
test_checkpoint.py; here the text, the JSON and the exit statuses.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from cli_render import render
from fpinspect import views
from fpinspect.main import main
from safetensors.numpy import save_file

BF16 = np.dtype(ml_dtypes.bfloat16)


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith("fpinspect: error: "), err
    assert "Traceback" not in err
    return err


@pytest.fixture()
def ckpt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    a: dict[str, np.ndarray] = {"w": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
                                "b": np.ones(5, np.float32), "ids": np.arange(4, dtype=np.int64)}
    (tmp_path / "a").mkdir()
    save_file({"w": a["w"]}, str(tmp_path / "a" / "model-00001-of-00002.safetensors"))
    save_file({"b": a["b"], "ids": a["ids"]},
              str(tmp_path / "a" / "model-00002-of-00002.safetensors"))
    (tmp_path / "a" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "w": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
        "ids": "model-00002-of-00002.safetensors"}}))
    b = {k: v.copy() for k, v in a.items()}
    b["w"].view(np.uint32)[1, 2] += 3           # 3 ULP
    b["b"][0] = np.inf
    b["extra"] = np.zeros(2, np.float32)
    save_file(b, str(tmp_path / "b.safetensors"))
    save_file({k: (v.astype(BF16) if v.dtype == np.float32 else v) for k, v in a.items()},
              str(tmp_path / "a_bf16.safetensors"))
    return tmp_path


def test_ls_table_and_totals(ckpt: Path) -> None:
    code, text = render("ls", "a")
    assert code == 0
    lines = [ln.rstrip() for ln in text.splitlines()]
    assert lines[2] == "─" * len(lines[3])  # the header rule spans the table
    assert lines[:2] + lines[3:] == """\
ls a
tensor   dtype      shape   bytes   shard
b        binary32       5    20 B   model-00002-of-00002.safetensors
ids      int64          4    32 B   model-00002-of-00002.safetensors
w        binary32     3x4    48 B   model-00001-of-00002.safetensors
3 tensors, 21 elements, 100 B (100 bytes) in 2 file(s)""".splitlines()
    code, text = render("ls", "a", "--json")
    doc = json.loads(text)
    assert [(t["name"], t["dtype"], t["shape"], t["bytes"]) for t in doc["tensors"]] == [
        ("b", "binary32", [5], 20), ("ids", "int64", [4], 32), ("w", "binary32", [3, 4], 48)]
    assert doc["total"] == {"tensors": 3, "elements": 21, "bytes": 100,
                            "files": [str(Path("a") / "model-00001-of-00002.safetensors"),
                                      str(Path("a") / "model-00002-of-00002.safetensors")]}


def test_files_a_directory_does_not_read_are_named(ckpt: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """An .npy beside a directory's indexed .safetensors is not read: ls, diff and hash
    say so (diff compares the checkpoint alone, as before)."""
    np.save(ckpt / "a" / "extra.npy", np.ones(3))
    code, text = render("ls", "a")
    assert code == 0 and "not read, files of another kind than those listed: extra.npy" in text
    code, text = render("ls", "a", "--json")
    assert json.loads(text)["unread_files"] == ["extra.npy"]
    code, text = render("diff", "a", "a")
    assert code == 0
    assert "not compared, files of another kind than the directory's checkpoint: " \
        "A: extra.npy; B: extra.npy" in text
    assert main(["hash", "a"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("fpinspect: note: the digest leaves out extra.npy")
    assert "extra.npy" not in out  # stdout: the digests alone


def test_diff_whole_checkpoints_table_exit_status_and_json(ckpt: Path) -> None:
    code, text = render("diff", "a", "b.safetensors")
    assert code == 1
    lines = text.splitlines()
    assert lines[0] == ("diff a  vs  b.safetensors  3 tensors compared: 1 equal, 0 pass, "
                        "2 fail; check: bit-equality")
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.split() and ln.split()[0] in
            ("w", "b", "ids")}
    # w[1, 2] = 0.75 moved 3 ULP of 2**-24: abs 3 * 2**-24 = 1.788e-07, rel 2**-22 = 2.384e-07
    assert rows["w"] == ["w", "binary32", "3x4", "1", "3", "1.788e-07", "2.384e-07", "0", "0",
                         "fail"]
    # 1.0 (0x3f800000) against inf (0x7f800000): 0x40000000 ULP, not a finite pair
    assert rows["b"][3:] == ["1", str(0x40000000), "0", "0", "0", "1", "fail"]
    assert rows["ids"][3:] == ["0", "0", "0", "0", "0", "0", "equal"]
    assert "only in B (1): extra" in text and "over pairs finite on both sides" in text
    assert lines[-1] == "FAIL: 2 tensor(s) fail; the sources hold different tensors"
    code, text = render("diff", "a", "b.safetensors", "--key", "w", "--key", "ids", "--max-ulp",
                        "3")
    assert code == 0, text  # two tensors each: the table; both pass
    assert text.splitlines()[-1] == "OK: every tensor passes"
    code, text = render("diff", "a", "b.safetensors", "--json", "--max-ulp", "2")
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert code == 1 and doc["ok"] is False and doc["only_b"] == ["extra"]
    w = next(t for t in doc["tensors"] if t["name"] == "w")
    assert (w["status"], w["mismatches"], w["max_ulp"], w["failures"]) == ("fail", 1, 3, 1)


def test_diff_mixed_dtypes_says_how_it_compares(ckpt: Path) -> None:
    code, text = render("diff", "a", "a_bf16.safetensors")
    assert code == 0
    assert ("binary32 vs bfloat16: compared in bfloat16, A rounded once (rne) into it"
            in text.splitlines()[1])
    code, text = render("diff", "a", "a_bf16.safetensors", "--as", "e5m2", "--max-ulp", "0")
    assert code == 0 and "compared in e5m2, A and B rounded once" in text


def test_diff_one_tensor_keeps_the_detailed_report(ckpt: Path) -> None:
    code, text = render("diff", "a:w", "b.safetensors:w")
    assert code == 0
    assert text.splitlines()[0] == "diff a:w  vs  b.safetensors:w  binary32, 3x4, 12 elements"
    assert "worst elements" in text
    assert [ln.split() for ln in text.splitlines() if ln.startswith("max ULP")] == [
        ["max", "ULP", "distance", "3"]]
    code, text = render("diff", "a:b", "b.safetensors:b", "--max-ulp", "1")
    assert code == 1
    assert "max abs error (finite pairs)" in text
    assert [ln.split() for ln in text.splitlines() if ln.startswith("inf mismatches")] == [
        ["inf", "mismatches", "1"]]


def test_stats_and_hash_on_checkpoints(ckpt: Path) -> None:
    code, text = render("stats", "a", "--candidates", "e4m3fn,e2m1fn")
    assert code == 0
    assert text.splitlines()[0] == "stats a  3 tensors"
    assert "stats all 3 tensors together  binary32/int64, 21 elements" in text
    doc = json.loads(render("stats", "a", "--json", "--candidates", "e2m1fn")[1])
    assert [t["tensor"]["name"] for t in doc["tensors"]] == ["b", "ids", "w"]
    assert doc["total"]["count"] == 21 and doc["total"]["zero"] == 2
    code, text = render("hash", "a")
    first = text.splitlines()[0]
    assert first.startswith("xxh64-sha256:") and first.endswith("checkpoint of 3 tensors  a")
    one = render("hash", "a", "--json")[1]
    same: dict[str, np.ndarray] = {"w": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
                                   "b": np.ones(5, np.float32),
                                   "ids": np.arange(4, dtype=np.int64)}
    save_file(same, str(ckpt / "resharded.safetensors"))
    assert json.loads(one)["digest"] == json.loads(
        render("hash", "resharded.safetensors", "--json")[1])["digest"]


def test_stats_fit_fraction_never_rounds_to_one() -> None:
    from numerics.stats import tensor_stats

    x = np.full(100_000, 0.01)
    x[:7] = 1.0
    st = tensor_stats(x, formats=("e2m1fn",))
    assert st.fits[0].flush_to_zero == 0.99993
    buf = io.StringIO()
    views.make_console(width=100, color=False, file=buf).print(
        views.stats_view("x", "binary64", (100_000,), st))
    row = next(ln for ln in buf.getvalue().splitlines() if ln.startswith("e2m1fn"))
    assert row.split()[3] == "0.9999"  # the first rounding that is not 1


def test_checkpoint_bad_input_is_one_line(ckpt: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ckpt / "empty.npy").write_bytes(b"")
    assert "empty.npy" in usage_error(capsys, "stats", "empty.npy")
    (ckpt / "nothing").mkdir()
    assert "directory" in usage_error(capsys, "ls", "nothing")
    save_file({"zz": np.zeros(2, np.float32), "yy": np.zeros(2, np.float32)},
              str(ckpt / "other.safetensors"))
    # no name in common: the sources differ (exit 1, both sides listed), not bad input
    code, text = render("diff", "a", "other.safetensors")
    assert code == 1 and "only in A (3): b, ids, w" in text and "only in B (2): yy, zz" in text
    err = usage_error(capsys, "stats", "a", "-f", "bf16")
    assert "binary32 already" in err and "--candidates" in err
    assert "raw bytes" in usage_error(capsys, "hash", "b.safetensors", "-f", "bf16")
    # raw bytes beyond a 4-bit format's codes: stats counted them in the total and then
    # in no class (exit 0); every command now refuses them, naming the tensor
    np.save(ckpt / "raw.npy", np.array([2, 7, 0x20, 0xFF], np.uint8).view("V1"))
    for argv in (("stats", "raw.npy", "-f", "e2m1fn", "--candidates", "bf16"),
                 ("diff", "raw.npy", "raw.npy", "-f", "e2m1fn"),
                 ("hash", "raw.npy", "-f", "e2m1fn")):
        err = usage_error(capsys, *argv)
        assert "raw tensor 'raw'" in err and "up to 0xff, beyond the 4-bit codes" in err
    np.save(ckpt / "n.npy", np.array([np.nan, 1.0], np.float32))
    np.save(ckpt / "m.npy", np.array([1.0, 1.0], np.float32))
    err = usage_error(capsys, "diff", "n.npy", "m.npy", "-f", "e2m1fn")
    assert "has no NaN" in err and "nan='zero'" not in err
    code = main(["diff", "n.npy", "m.npy", "--max-ulp", "99999999999999999999999"])
    capsys.readouterr()
    assert code == 1  # the NaN mismatch fails; the huge bound itself is fine
    (ckpt / "a" / "model-00002-of-00002.safetensors").unlink()
    assert "does not exist" in usage_error(capsys, "ls", "a")


def test_progress_only_when_asked_and_piped_output_does_not_wrap(
        ckpt: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with views.progress_bar(100, enabled=False) as advance:
        assert advance is None
    with views.progress_bar(100, enabled=True, delay=0.0) as advance:
        assert advance is not None
        advance(60)
        advance(40)
    capsys.readouterr()
    assert main(["diff", "a", "b.safetensors"]) == 1  # stderr is not a terminal here
    out, err = capsys.readouterr()
    assert err == ""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert views.make_console().width >= 1000 or views.make_console().is_terminal
