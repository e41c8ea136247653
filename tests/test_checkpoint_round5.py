"""Checkpoints as users store them: fifth-round findings.

- A transposed or column-sliced tensor in a torch file is flattened once per process,
  not once per chunk read (which made a read quadratic in the tensor's size).
- An ``.npz`` member of strings, objects or complex numbers, and a torch entry of
  complex numbers, are left out and listed, rather than making every tensor of the file
  unreadable; ``PATH:KEY`` of such a member names it; a whole-checkpoint diff notes it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from numerics.checkpoint import TensorFileError, diff_sources, hash_source, open_source, sources
from numerics.formats import get_format


def test_a_transposed_torch_tensor_is_flattened_once_and_read_exactly(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(4096 * 3, dtype=torch.float32).reshape(4096, 3)
    torch.save({"t": x.t(), "cols": x[:, 1:3], "plain": x}, tmp_path / "w.pt")
    src = open_source(tmp_path / "w.pt")
    sources._torch_flat_of.cache_clear()
    for name, want in (("t", x.t()), ("cols", x[:, 1:3])):
        ref = src[name]
        got = np.concatenate([ref.read(s, s + 100) for s in range(0, ref.size, 100)])
        np.testing.assert_array_equal(got, want.contiguous().reshape(-1).numpy())
    info = sources._torch_flat_of.cache_info()
    assert info.misses == 2 and info.hits >= 2 * (4096 * 2 // 100)  # one flattening each
    contiguous = hash_source(open_source(tmp_path / "w.pt"), threads=2)
    np.save(tmp_path / "t.npy", x.t().contiguous().numpy())
    assert {ref.name: fp.digest for ref, fp in contiguous.tensors}["t"] == \
        hash_source(open_source(tmp_path / "t.npy")).tensors[0][1].digest


def test_an_npz_member_of_strings_is_left_out(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", w=np.ones(3, np.float32), labels=np.array(["cat", "dog"]),
             z=np.ones(2, np.complex64))
    np.savez(tmp_path / "b.npz", w=np.ones(3, np.float32), labels=np.array(["cat", "cow"]))
    src = open_source(tmp_path / "a.npz")
    assert src.names == ("w",) and set(src.skipped) == {"labels", "z"}
    assert open_source(f"{tmp_path / 'a.npz'}:w").tensors[0].read().tolist() == [1.0] * 3
    with pytest.raises(TensorFileError, match="'labels'.*not a tensor of real numbers"):
        open_source(f"{tmp_path / 'a.npz'}:labels")
    report = diff_sources(src, open_source(tmp_path / "b.npz"))
    assert report.ok and any("A: labels, z; B: labels" in n for n in report.notes)
    np.savez(tmp_path / "only.npz", labels=np.array(["cat"]))
    with pytest.raises(TensorFileError, match="labels.*dtype <U3, which holds no real"):
        open_source(tmp_path / "only.npz")


def test_a_torch_entry_of_complex_numbers_is_left_out(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(3), "z": torch.ones(2, dtype=torch.complex64), "epoch": 3},
               tmp_path / "c.pt")
    src = open_source(tmp_path / "c.pt")
    assert src.names == ("w",) and src.skipped == ("z", "epoch")
    torch.save({"z": torch.ones(2, dtype=torch.complex64)}, tmp_path / "z.pt")
    with pytest.raises(TensorFileError, match="'z'.*complex"):
        open_source(tmp_path / "z.pt")


def test_a_torch_file_with_compressed_or_short_records_is_read_right_or_refused(
        tmp_path: Path) -> None:
    """A memory-mapped torch.load reads each storage record's bytes where they lie: the
    records of a file re-zipped with deflate (read whole instead, as torch.load decompresses
    them) and a record cut short (refused, as torch.load refuses it) once gave wrong
    values without an error."""
    import zipfile

    torch = pytest.importorskip("torch")
    tensors = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3, dtype=torch.bfloat16),
               "e": torch.empty(0)}
    torch.save(tensors, tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as z:
        members = [(i, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(tmp_path / "deflated.pt", "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in members:
            z.writestr(info.filename, data)
    src = open_source(tmp_path / "deflated.pt")
    for ref in src.tensors:
        want = tensors[ref.name].float().numpy().reshape(-1)
        np.testing.assert_array_equal(ref.read().astype(np.float32).reshape(-1), want)
    with zipfile.ZipFile(tmp_path / "short.pt", "w", zipfile.ZIP_STORED) as z:
        for info, data in members:
            cut = info.filename.endswith("/data/0") and len(data) > 0
            z.writestr(info.filename, data[:len(data) // 2] if cut else data)
    with pytest.raises(TensorFileError, match="corrupt"):
        open_source(tmp_path / "short.pt")
    # two records' bytes swapped: their sizes, as a set, are still the storages' sizes
    # (torch.load refuses the file; a check of the sizes as a set passed it, and "w"
    # read 24 bytes from a record of 6)
    payloads = {info.filename: payload for info, payload in members}
    names = [n for n in payloads if n.rsplit("/", 2)[-2:-1] == ["data"] and payloads[n]]
    assert len(names) == 2 and len({len(payloads[n]) for n in names}) == 2
    with zipfile.ZipFile(tmp_path / "swapped.pt", "w", zipfile.ZIP_STORED) as z:
        for info, payload in members:
            if info.filename in names:
                payload = payloads[names[1 - names.index(info.filename)]]
            z.writestr(info.filename, payload)
    with pytest.raises(RuntimeError, match="size"):
        torch.load(tmp_path / "swapped.pt", weights_only=True)
    with pytest.raises(TensorFileError, match="corrupt"):
        open_source(tmp_path / "swapped.pt")


def test_reads_refuse_negative_and_non_integer_indices(tmp_path: Path) -> None:
    # review: TensorRef.read(-2, mmap=False) read before the tensor (the neighbour's
    # bytes, or the header's as floats) and Tensor.codes(-2) counted from the end
    from safetensors.numpy import save_file

    from numerics.checkpoint import open_source
    from numerics.tensors import load_tensor

    path = str(tmp_path / "two.safetensors")
    save_file({"a": np.full(4, 7.0, np.float32), "b": np.arange(6, dtype=np.float32)}, path)
    b = next(t for t in open_source(path).tensors if t.name == "b")
    for mmap in (True, False):
        assert b.read(2, 4, mmap=mmap).tolist() == [2.0, 3.0]
        assert b.read(5, 99, mmap=mmap).tolist() == [5.0]
        assert b.read(4, 2, mmap=mmap).tolist() == []
        for start, stop, err in ((-2, None, ValueError), (0, -1, ValueError),
                                 (1.5, None, TypeError), (True, None, TypeError)):
            with pytest.raises(err, match="start=|stop="):
                b.read(start, stop, mmap=mmap)  # type: ignore[arg-type]
    t = load_tensor(path, key="b")
    assert t.codes(4).tolist() == [0x40800000, 0x40A00000]
    for call in (lambda: t.codes(-2), lambda: t.values(0, -1),
                 lambda: t.codes_in(get_format("bf16"), -3)):
        with pytest.raises(ValueError, match="count from 0"):
            call()
    with pytest.raises(TypeError, match="start=1.5"):
        t.codes(1.5)  # type: ignore[arg-type]
