"""fp4 packed two codes to a byte in checkpoint files, and safetensors entries of dtypes
that are not read.

safetensors' ``F4`` (and torch's ``float4_e2m1fn_x2``) store element ``2k`` in the low
four bits of byte ``k`` and element ``2k + 1`` in the high four; the shape in a
safetensors header counts elements.  Every file here is written byte by byte (the
reference unpacking below is plain integer arithmetic on those bytes), so the default
tier needs no torch; the torch cases run where torch is installed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from fpinspect.main import main

from numerics import load_tensor
from numerics.checkpoint import diff_sources, hash_source, open_source
from numerics.tensors import TensorFileError, safetensors_entries, unpack_nibbles

_CODES = [0x1, 0x7, 0xA, 0xF, 0x0, 0x8, 0x3, 0x4, 0x6, 0xE, 0x2, 0x9]
# the values of e2m1fn's 16 codes (OCP MX v1.0: 0, 0.5, 1, 1.5, 2, 3, 4, 6, and their negatives)
_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0,
         -6.0]


def _pack(codes: list[int]) -> bytes:
    """Two codes to a byte, the first in the low four bits."""
    return bytes(codes[i] | (codes[i + 1] << 4) for i in range(0, len(codes), 2))


def _safetensors(path: Path, entries: dict[str, tuple[str, list[int], bytes]]) -> str:
    header: dict[str, object] = {}
    data = b""
    for name, (dtype, shape, blob) in entries.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


def test_unpack_nibbles_takes_the_low_four_bits_first() -> None:
    packed = np.frombuffer(_pack(_CODES), np.uint8)
    for first in range(len(_CODES)):
        for stop in range(first, len(_CODES) + 1):
            got = unpack_nibbles(packed[first // 2:], first % 2, stop - first)
            assert got.tolist() == _CODES[first:stop]


def test_f4_safetensors_tensor_reads_as_e2m1fn_codes(tmp_path: Path) -> None:
    path = _safetensors(tmp_path / "w.safetensors",
                        {"w": ("F4", [3, 4], _pack(_CODES)),
                         "s": ("F8_E4M3", [3], bytes([0x38, 0x40, 0x30]))})
    code, dtype, shape, _ = safetensors_entries(path)["w"]
    assert (code, dtype, shape) == ("F4", np.dtype(ml_dtypes.float4_e2m1fn), (3, 4))
    t = load_tensor(path, key="w")
    assert t.format is not None and t.format.name == "e2m1fn" and t.shape == (3, 4)
    assert t.codes().ravel().tolist() == _CODES
    assert t.values().ravel().tolist() == [_E2M1[c] for c in _CODES]
    ref = open_source(path)["w"]
    assert ref.packed and ref.nbytes == 6 and ref.dtype_name == "e2m1fn"
    for start in range(13):
        for stop in range(start, 13):
            for mmap in (True, False):
                got = ref.read(start, stop, mmap=mmap)
                assert got.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
                assert got.view(np.uint8).tolist() == _CODES[start:stop]
    # the bytes of a split add up to the tensor's, whatever the split's parity
    for cut in range(13):
        assert ref.stored_bytes(0, cut) + ref.stored_bytes(cut, 12) == ref.nbytes


def test_f4_headers_are_checked_in_bytes(tmp_path: Path) -> None:
    odd = _safetensors(tmp_path / "odd.safetensors", {"w": ("F4", [3], _pack(_CODES[:4]))})
    with pytest.raises(TensorFileError, match="odd count leaves half a byte"):
        open_source(odd)
    short = _safetensors(tmp_path / "short.safetensors", {"w": ("F4", [8], _pack(_CODES[:4]))})
    with pytest.raises(TensorFileError, match=r"byte range \[0, 2\) does not match"):
        load_tensor(short)


def test_f4_in_the_cli_equals_its_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    path = _safetensors(tmp_path / "w.safetensors", {"w": ("F4", [12], _pack(_CODES))})
    np.save(tmp_path / "w.npy", np.array([_E2M1[c] for c in _CODES], np.float32))
    assert main(["ls", path]) == 0
    out = capsys.readouterr().out
    assert "e2m1fn" in out and "6 B" in out
    assert main(["diff", path + ":w", str(tmp_path / "w.npy")]) == 0
    assert "equal" in capsys.readouterr().out
    other = list(_CODES)
    other[5] = 0x9  # -0 -> -0.5: one element differs
    changed = _safetensors(tmp_path / "v.safetensors", {"w": ("F4", [12], _pack(other))})
    assert main(["diff", path, changed]) == 1
    assert "FAIL: 1 element(s) not bit-equal" in capsys.readouterr().out
    assert main(["stats", path + ":w", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tensor"]["stored_dtype"] == "F4" and doc["tensor"]["dtype"] == "e2m1fn"
    assert (doc["count"], doc["zero"], doc["amax"], doc["amin"]) == (12, 2, 6.0, 0.5)


def test_unread_safetensors_dtypes_are_left_out_and_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with an ``F6_E2M3`` or ``C64`` entry was refused whole; now its other tensors
    are read and the entry is named as left out, as a torch file's non-tensors are."""
    entries = {"x": ("F32", [2], np.array([1.0, 2.0], "<f4").tobytes()),
               "c": ("C64", [1], np.array([1 + 2j], "<c8").tobytes()),
               "f6": ("F6_E2M3", [4], bytes(3))}
    path = _safetensors(tmp_path / "m.safetensors", entries)
    src = open_source(path)
    assert src.names == ("x",) and src.skipped == ("c", "f6")
    assert main(["ls", path]) == 0
    assert "c, f6" in capsys.readouterr().out
    assert main(["stats", path]) == 0
    assert "leave out 2 entries" in capsys.readouterr().err
    assert hash_source(path).skipped == ("c", "f6")
    report = diff_sources(path, path)
    assert any("A: c, f6" in n for n in report.notes)
    with pytest.raises(TensorFileError, match="'f6' .* dtype 'F6_E2M3', which is not supported"):
        load_tensor(path, key="f6")
    assert main(["stats", path + ":c"]) == 2
    assert capsys.readouterr().err.startswith("fpinspect: error:")
    only = _safetensors(tmp_path / "only.safetensors", {"c": entries["c"]})
    assert main(["ls", only]) == 2
    assert "dtype 'C64', which is not supported" in capsys.readouterr().err
    beyond = _safetensors(tmp_path / "beyond.safetensors", {"x": entries["x"]})
    raw = Path(beyond).read_bytes()
    text = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "z": {"dtype": "F6_E3M2", "shape": [4], "data_offsets": [8, 11]}})
    Path(beyond).write_bytes(struct.pack("<Q", len(text)) + text.encode() + raw[-8:])
    with pytest.raises(TensorFileError, match="'z' .* beyond the end of the file"):
        open_source(beyond)


def test_torch_float4_x2_matches_the_safetensors_bytes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    packed = torch.tensor(list(_pack(_CODES)), dtype=torch.uint8)
    x2 = packed.view(torch.float4_e2m1fn_x2).reshape(3, 2)
    torch.save({"w": x2, "b": torch.ones(2)}, tmp_path / "m.pt")
    ref = open_source(str(tmp_path / "m.pt"))["w"]
    assert ref.shape == (3, 4) and ref.nbytes == 6
    for start in range(13):
        for stop in range(start, 13):
            assert ref.read(start, stop).view(np.uint8).tolist() == _CODES[start:stop]
    st = _safetensors(tmp_path / "w.safetensors", {"w": ("F4", [3, 4], _pack(_CODES))})
    assert hash_source(str(tmp_path / "m.pt") + ":w").tensors[0][1] == \
        hash_source(st + ":w").tensors[0][1]
