"""Regressions from the audit of ``fpinspect`` and ``numerics.checkpoint`` (B1 to B12).

Each test states its expectation independently of the code under test: a
fresh file holding the same data, numpy, Python integers, or the exit status
and the one-line error the conventions require.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_render import render, usage_error
from fpinspect.main import main
from safetensors.numpy import save_file

from numerics.checkpoint import hash_source, open_source, stats_source
from numerics.fingerprint import fingerprint


def fp32(x: np.ndarray) -> str:
    """The fingerprint of float32 elements, computed from the array itself."""
    return fingerprint(np.asarray(x, np.float32).view(np.uint32), fmt="binary32").digest




def _safetensors_with_header(path: Path, header: dict[str, object], data: bytes) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


# ---------------------------------------------------------------- B1: stale caches
def _write(kind: str, path: Path, x: np.ndarray) -> None:
    if kind == "safetensors":
        save_file({"w": x}, str(path))
    elif kind == "npy":
        np.save(path, x)
    elif kind == "npz":
        np.savez(path, w=x)
    elif kind == "npz-compressed":
        np.savez_compressed(path, w=x)
    else:
        import torch

        torch.save({"w": torch.from_numpy(x)}, path)


KINDS = ["safetensors", "npy", "npz", "npz-compressed", "pt"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_rewritten_file_is_read_again(kind: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "pt":
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    ext = "npz" if kind.startswith("npz") else kind
    name = f"m.{ext}"
    _write(kind, tmp_path / name, np.zeros(4, np.float32))
    stale = hash_source(name).digest
    assert stats_source(name).tensors[0][1].zero == 4
    _write(kind, tmp_path / name, np.ones(4, np.float32))   # same size, same name
    now = hash_source(name)
    assert stats_source(name).tensors[0][1].amax == 1.0
    assert now.digest != stale
    _write(kind, tmp_path / f"fresh.{ext}", np.ones(4, np.float32))
    fresh = hash_source(f"fresh.{ext}").tensors[0][1].digest
    assert now.tensors[0][1].digest == fresh == fp32(np.ones(4))


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_relative_name_in_two_directories(kind: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "pt":
        pytest.importorskip("torch")
    ext = "npz" if kind.startswith("npz") else kind
    digests = []
    for i in range(2):
        (tmp_path / f"d{i}").mkdir()
        _write(kind, tmp_path / f"d{i}" / f"x.{ext}", np.full(3, i, np.float32))
    for i in range(2):
        monkeypatch.chdir(tmp_path / f"d{i}")
        digests.append(hash_source(f"x.{ext}").tensors[0][1].digest)
    assert digests == [fp32(np.full(3, i)) for i in range(2)]


def test_a_source_reads_its_file_as_it_is_now(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    save_file({"w": np.zeros(4, np.float32)}, str(path))
    ref = open_source(path).tensors[0]
    assert ref.read().tolist() == [0.0] * 4
    os.remove(path)  # another file (inode) under the same name, same layout
    save_file({"w": np.full(4, 7, np.float32)}, str(path))
    assert ref.read().tolist() == [7.0] * 4


# ---------------------------------------------------------------- B2: hash of a one-tensor file
def test_hash_of_a_one_tensor_checkpoint_is_the_checkpoint_digest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    x = np.arange(5, dtype=np.float32)
    save_file({"w": x}, "a.safetensors")
    save_file({"v": x}, "b.safetensors")
    _, ta = render("hash", "a.safetensors")
    _, tb = render("hash", "b.safetensors")
    da, db = ta.split()[0].split(":")[1], tb.split()[0].split(":")[1]
    assert da != db  # a renamed tensor is a changed checkpoint
    assert da == hash_source("a.safetensors").digest and "checkpoint of 1 tensor" in ta
    doc = json.loads(render("hash", "a.safetensors", "--json")[1])
    assert (doc["kind"], doc["digest"]) == ("checkpoint", da)
    # one tensor picked out: its own fingerprint, which ignores the name, and says so
    for argv in (("a.safetensors", "--key", "w"), ("a.safetensors:w",)):
        _, text = render("hash", *argv)
        assert text.split()[0].split(":")[1] == fp32(x)
        assert " tensor binary32[5]" in text
    assert json.loads(render("hash", "b.safetensors:v", "--json")[1])["kind"] == "tensor"


# ---------------------------------------------------------------- B3: corrupt safetensors shapes
@pytest.mark.parametrize("shape, offsets", [
    ([4294967296, 4294967296], [0, 0]),         # 2**64 elements: wraps to 0 in int64
    ([2**62, 4], [0, 0]),
    ([1.5], [0, 4]),                            # int(1.5) == 1
    ([True], [0, 4]),                           # int(True) == 1
    ([1], [0.0, 4]),
])
@pytest.mark.parametrize("command", ["ls", "stats", "hash"])
def test_safetensors_shapes_are_exact_integers(shape: list[object], offsets: list[object],
                                               command: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.safetensors"
    _safetensors_with_header(path, {"w": {"dtype": "F32", "shape": shape,
                                          "data_offsets": offsets}}, bytes(4))
    err = usage_error(capsys, command, str(path))
    assert "bad.safetensors" in err and "'w'" in err


# ---------------------------------------------------------------- B4, B5: corrupt .npz
def _lying_npz(path: Path, *, compression: int) -> None:
    """Member ``a`` whose .npy header promises 20 floats but which holds 10, then ``b``."""
    def member(n_header: int, n_data: int) -> bytes:
        head = {"descr": "<f4", "fortran_order": False, "shape": (n_header,)}
        buf = bytearray()
        np.lib.format.write_array_header_1_0(_Sink(buf), head)
        return bytes(buf) + np.arange(n_data, dtype=np.float32).tobytes()
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        z.writestr("a.npy", member(20, 10))
        z.writestr("b.npy", member(3, 3))


class _Sink:
    def __init__(self, buf: bytearray) -> None:
        self.buf = buf

    def write(self, data: bytes) -> None:
        self.buf += data


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_an_npz_member_shorter_than_its_header(compression: int, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lie.npz"
    _lying_npz(path, compression=compression)
    with pytest.raises(ValueError):  # numpy agrees it is broken
        np.load(path)["a"]
    for argv in (("stats", f"{path}:a"), ("hash", str(path)), ("ls", str(path))):
        err = usage_error(capsys, *argv)
        assert "lie.npz" in err and "'a'" in err


def test_a_corrupt_compressed_npz_is_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.npz"
    np.savez_compressed(good, w=np.linspace(0, 1, 4000, dtype=np.float32))
    data = bytearray(good.read_bytes())
    flip = tmp_path / "flip.npz"
    z = zipfile.ZipFile(good)
    info = z.getinfo("w.npy")
    start = info.header_offset + 30 + len(info.filename) + 200
    data[start] ^= 0xFF  # inside the compressed stream: a bad CRC or a bad stream
    flip.write_bytes(bytes(data))
    cut = tmp_path / "cut.npz"
    raw = good.read_bytes()
    # the local header and most of the data lost, the central directory kept
    cut.write_bytes(raw[:20] + raw[-(22 + 46 + len(info.filename)):])
    for path in (flip, cut):
        for command in ("stats", "hash"):
            err = usage_error(capsys, command, str(path))
            assert path.name in err


# ---------------------------------------------------------------- B6: names are not markup
@pytest.mark.parametrize("name, shown", [("a[/]", "a[/]"), ("[b]x", "[b]x"),
                                         ("e\x1b[31mred", "e\\x1b[31mred"),
                                         ("tab\tnl\n", "tab\\tnl\\n")])
def test_tensor_names_are_shown_as_they_are(name: str, shown: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    x = np.arange(4, dtype=np.float32)
    save_file({name: x, "other": x}, "a.safetensors")
    save_file({name: x + 1, "other": x, "only_b" + name: x}, "b.safetensors")
    for argv in (("ls", "a.safetensors"), ("stats", "a.safetensors"),
                 ("diff", "a.safetensors", "b.safetensors"), ("hash", "a.safetensors")):
        code, text = render(*argv)
        assert code in (0, 1), argv
        assert shown in text and "\x1b" not in text, (argv, text)
    code, text = render("diff", "a.safetensors", "b.safetensors")
    assert f"only in B (1): only_b{shown}" in text


# ---------------------------------------------------------------- B7: no random rounding in diff
def test_diff_has_no_stochastic_rounding(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", np.linspace(0, 1, 1000, dtype=np.float32))
    for argv in (("diff", str(tmp_path / "a.npy"), str(tmp_path / "a.npy")),):
        err = usage_error(capsys, *argv, "-f", "bf16", "--rounding", "sr")
        assert "sr" in err
    assert main(["diff", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "{rne,rna,rtz,ru,rd,rto}" in help_text.replace("\n", "").replace(" ", "")


# ---------------------------------------------------------------- B8: integer tensors
def test_integer_tensors_compare_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = [1, 2, 3, 2**62, -(2**63)]
    b = [1, 5, 3, -(2**62), 2**63 - 1]
    np.savez("ca.npz", i=np.array(a, np.int64))
    np.savez("cb.npz", i=np.array(b, np.int64))
    want = max(abs(p - q) for p, q in zip(a, b))  # exact Python integers: 2**64 - 1
    code, text = render("diff", "ca.npz", "cb.npz")  # checkpoints: bit-equal with no check
    assert code == 1 and "compared exactly as integers" in text
    assert f"max |a - b|  {want}" in " ".join(text.split()).replace("|a - b| ", "|a - b|  ")
    doc = json.loads(render("diff", "ca.npz", "cb.npz", "--json")[1])
    assert (doc["equal"], doc["mismatches"], doc["max_abs_difference"]) == (2, 3, want)
    assert render("diff", "ca.npz", "cb.npz", "--max-ulp", str(2**63))[0] == 1
    assert render("diff", "ca.npz", "cb.npz", "--max-ulp", str(want))[0] == 0
    # a --key pick out of checkpoints: bit-equality by default
    np.savez("a.npz", i=np.array([1, 2], np.int64), f=np.ones(2, np.float32))
    np.savez("b.npz", i=np.array([1, 3], np.int64), f=np.ones(2, np.float32))
    code, text = render("diff", "a.npz", "b.npz", "--key", "i")
    assert code == 1 and "FAIL: 1 element(s)" in text


def test_uint64_torch_tensors_compare_exactly(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    torch.save({"u": torch.tensor([2**63 + 5, 1], dtype=torch.uint64)}, "u64.pt")
    code, text = render("diff", "u64.pt", "u64.pt", "--max-ulp", "0")
    assert code == 0 and "OK" in text


# ---------------------------------------------------------------- B9: huge .npy header
def test_a_huge_npy_header_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "huge.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (2**32, 2**32)})
    assert math.prod((2**32, 2**32)) * 4 > path.stat().st_size
    r = subprocess.run([sys.executable, "-m", "fpinspect", "hash", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "huge.npy" in r.stderr, r.stderr


# ---------------------------------------------------------------- B10: torch negative views
def test_a_torch_tensor_with_the_negative_bit(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0])._neg_view()
    assert t.is_neg()
    torch.save({"n": t}, tmp_path / "neg.pt")
    src = open_source(tmp_path / "neg.pt")
    assert src.tensors[0].read().tolist() == [-1.0, -2.0]
    code, text = render("stats", str(tmp_path / "neg.pt"), "--json")
    assert code == 0 and json.loads(text)["amax"] == 2.0


def test_torch_lazy_views_beside_other_tensors(tmp_path: Path) -> None:
    """A lazy negated or conjugated view saved beside other tensors (torch.load reads it):
    its resolved copy lies off the file's map, which the storage check once took for a
    damaged record ("corrupt")."""
    torch = pytest.importorskip("torch")
    w = torch.arange(4.0)
    c = torch.tensor([1 + 2j, 3 - 4j])
    torch.save({"n": w._neg_view(), "b": torch.ones(3), "w": w, "i": c.conj().imag},
               tmp_path / "views.pt")
    want = torch.load(tmp_path / "views.pt", weights_only=True)
    src = open_source(tmp_path / "views.pt")
    got = {t.name: t.read().tolist() for t in src.tensors}
    assert got == {k: v.resolve_neg().resolve_conj().tolist() for k, v in want.items()}
    assert got["i"] == [-2.0, 4.0] and got["n"] == [-0.0, -1.0, -2.0, -3.0]


def test_a_nested_torch_tensor_is_left_out_or_refused(tmp_path: Path) -> None:
    """A nested tensor (rows of several lengths) in a .pt file is listed as left out, and
    as an argument a TypeError naming it; it crashed with torch's internal error."""
    torch = pytest.importorskip("torch")
    import numerics

    with pytest.warns(UserWarning, match="nested tensors is in prototype"):
        n = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(TypeError, match="x as a nested torch tensor"):
        numerics.encode(n, "bfloat16")
    torch.save({"w": torch.ones(2), "n": n}, tmp_path / "nested.pt")
    src = open_source(tmp_path / "nested.pt")
    assert [t.name for t in src.tensors] == ["w"] and src.skipped == ("n",)
    code, text = render("ls", str(tmp_path / "nested.pt"))
    assert code == 0 and "left out" in text and "n" in text


# ---------------------------------------------------------------- B12: no name in common
def test_checkpoints_with_no_name_in_common_differ(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    save_file({"w": np.ones(2, np.float32), "b": np.ones(2, np.float32)}, "a.safetensors")
    save_file({"v": np.ones(2, np.float32)}, "b.safetensors")
    code, text = render("diff", "a.safetensors", "b.safetensors")
    assert code == 1
    assert "only in A (2): b, w" in text and "only in B (1): v" in text
    doc = json.loads(render("diff", "a.safetensors", "b.safetensors", "--json")[1])
    assert (doc["ok"], doc["only_a"], doc["only_b"]) == (False, ["b", "w"], ["v"])


# ---------------------------------------------------------------- B11: broken pipe on big output
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_broken_pipe_on_large_output_is_141(json_flag: list[str], tmp_path: Path) -> None:
    # 5000 rows: over 200 KB of table and 1 MB of JSON (the pipe holds 64 KiB)
    save_file({f"layer.{i}.weight": np.zeros(1, np.float32) for i in range(5000)},
              str(tmp_path / "many.safetensors"))
    proc = subprocess.Popen([sys.executable, "-m", "fpinspect", "ls",
                             str(tmp_path / "many.safetensors"), *json_flag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # the reader takes a little and goes away (`| head -c 10`)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141 and err == b""


def test_hash_says_which_entries_its_digest_leaves_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # review: two files differing only in an entry that is not a real-number tensor (a
    # complex array; torch's packed float4_e2m1fn_x2) hashed alike, and nothing said so
    q = np.ones(2, np.float32)
    np.savez(tmp_path / "a.npz", p=np.array([1 + 1j]), q=q)
    np.savez(tmp_path / "b.npz", p=np.array([5 + 1j]), q=q)
    ha, hb = hash_source(str(tmp_path / "a.npz")), hash_source(str(tmp_path / "b.npz"))
    assert ha.digest == hb.digest and ha.skipped == ("p",)
    assert main(["hash", str(tmp_path / "a.npz")]) == 0
    err = capsys.readouterr().err
    assert err == ("fpinspect: note: the digest leaves out 1 entries that are not "
                   "real-number tensors of a readable dtype: 'p'\n")
    assert main(["hash", str(tmp_path / "a.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == ["p"]
    np.savez(tmp_path / "c.npz", q=q)
    assert main(["hash", str(tmp_path / "c.npz")]) == 0
    assert capsys.readouterr().err == "" and hash_source(str(tmp_path / "c.npz")).skipped == ()


def test_tensors_a_stale_index_does_not_list_are_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # review: a shard's tensor missing from model.safetensors.index.json was dropped
    # silently: ls never showed it, and diff called two checkpoints differing there equal
    for side, value in (("A", 0.0), ("B", 1.0)):
        d = tmp_path / side
        d.mkdir()
        save_file({"a": np.ones(4, np.float32), "b": np.full(4, value, np.float32)},
                  str(d / "model-00001-of-00001.safetensors"))
        (d / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"a": "model-00001-of-00001.safetensors"}}))
    src = open_source(str(tmp_path / "A"))
    assert src.names == ("a",) and src.unindexed == ("b (in model-00001-of-00001.safetensors)",)
    assert main(["ls", str(tmp_path / "A")]) == 0
    assert "in the shards but not in the index (left out): b (in model-00001" in " ".join(
        capsys.readouterr().out.split())  # (a narrow terminal wraps the note)
    assert main(["ls", str(tmp_path / "A"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unindexed"] == list(src.unindexed)
    assert main(["diff", str(tmp_path / "A"), str(tmp_path / "B")]) == 0
    assert "not compared, in the shards but not in the index: A: b" in " ".join(
        capsys.readouterr().out.split())
    assert main(["hash", str(tmp_path / "A")]) == 0
    assert "index does not list: b (in" in capsys.readouterr().err
    from numerics.checkpoint import diff_sources

    report = diff_sources(src, open_source(str(tmp_path / "B")))
    assert any("not in the index" in n for n in report.notes)
