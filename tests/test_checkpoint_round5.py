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
