"""numerics.checkpoint on small sharded checkpoints written here with safetensors, numpy and torch.

Every per-tensor figure is checked against an independent computation:
* ULP distances: perturbations made with ``np.nextafter`` a known number of
  times (so the distance is known without any ordinal formula), and the
  library's exact scalar ``ulp_distance`` on the elements that differ;
* errors, NaN and inf mismatches: numpy in float64 over the pairs;
* mixed dtypes: ml_dtypes' float32 -> bfloat16 cast (correct RNE from float32);
* stats: :func:`numerics.stats.tensor_stats` on the whole array in memory (itself
  pinned to exact rounding in test_tensors_compare_stats.py) and, for the scaled
  fractions, Fractions;
* hashes: hashlib over the documented preimage.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import struct
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from numerics.checkpoint import (
    diff_sources,
    hash_source,
    open_source,
    stats_source,
)
from numerics.checkpoint import sources as sources_mod
from numerics.fingerprint import fingerprint
from numerics.formats import get_format
from numerics.stats import tensor_stats
from numerics.tensors import TensorFileError, load_tensor
from numerics.ulp import ulp_distance

BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)


def _weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "embed": rng.standard_normal((300, 64)).astype(np.float32),
        "layers.0.w": rng.standard_normal((128, 96)).astype(np.float32),
        "layers.0.b": rng.standard_normal(96).astype(np.float32),
        "layers.1.w": (rng.standard_normal((64, 64)) * 1e-3).astype(np.float32),
        "layers.1.scale": rng.standard_normal(64).astype(BF16),
        "q.f8": (rng.standard_normal(512) * 20).astype(F8),
        "pos": np.arange(77, dtype=np.int64),
        "mask": rng.integers(0, 2, 33).astype(bool),
    }


def _shard(d: Path, w: dict[str, np.ndarray], n: int, *, index: bool = True) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    names = sorted(w)
    weight_map = {}
    for i in range(n):
        part = {k: w[k] for k in names[i::n]}
        fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        save_file(part, str(d / fname))
        weight_map.update({k: fname for k in part})
    if index:
        (d / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return d


def _nextafter_n(x: np.ndarray, flat: int, k: int) -> None:
    """Move element ``flat`` of float32 ``x`` k representable values up (in place)."""
    v = x.reshape(-1)
    for _ in range(k):
        v[flat] = np.nextafter(v[flat], np.float32(np.inf))


# ---------------------------------------------------------------- sources and ls
def test_sharded_directory_index_and_file_list_the_same_tensors(tmp_path: Path) -> None:
    w = _weights()
    d = _shard(tmp_path / "m", w, 3)
    for path in (d, d / "model.safetensors.index.json"):
        src = open_source(path)
        assert src.names == tuple(sorted(w))
        assert len(src.files) == 3 and src.kind == "sharded"
        for t in src.tensors:
            x = w[t.name]
            assert t.shape == x.shape and t.nbytes == x.nbytes
            assert t.file.endswith(".safetensors")
            np.testing.assert_array_equal(t.read().view(np.uint8),
                                          np.ascontiguousarray(x).reshape(-1).view(np.uint8))
    fmts = {t.name: t.dtype_name for t in open_source(d).tensors}
    assert fmts["embed"] == "binary32" and fmts["layers.1.scale"] == "bfloat16"
    assert fmts["q.f8"] == "e4m3fn" and fmts["pos"] == "int64" and fmts["mask"] == "bool"
    no_index = _shard(tmp_path / "n", w, 2, index=False)
    assert open_source(no_index).names == tuple(sorted(w))


def test_a_directory_names_the_tensor_files_it_does_not_read(tmp_path: Path) -> None:
    """A directory is read through its index, else through the files of its first kind
    (.safetensors, torch, .npz/.npy); the tensor files left out are named in ``unread``."""
    w = _weights()
    d = _shard(tmp_path / "m", w, 2)
    np.save(d / "extra.npy", np.ones(3))
    save_file({"x": np.ones(2, np.float32)}, str(d / "stray.safetensors"))  # not in the index
    (d / "notes.txt").write_text("not a tensor file")
    src = open_source(d)
    assert src.names == tuple(sorted(w)) and src.unread == ("extra.npy", "stray.safetensors")
    e = tmp_path / "e"
    e.mkdir()
    save_file({"x": np.ones(2, np.float32)}, str(e / "model.safetensors"))
    np.savez(e / "more.npz", y=np.ones(2))
    src = open_source(e)
    assert src.names == ("x",) and src.unread == ("more.npz",)
    assert open_source(e / "more.npz").unread == ()  # a file: nothing beside it counts


def test_every_safetensors_dtype_maps_to_a_format_or_integer_type(tmp_path: Path) -> None:
    arrays: dict[str, np.ndarray] = {
        "F64": np.ones(2, np.float64), "F32": np.ones(2, np.float32),
        "F16": np.ones(2, np.float16), "BF16": np.ones(2, BF16), "F8_E4M3": np.ones(2, F8),
        "F8_E5M2": np.ones(2, ml_dtypes.float8_e5m2),
        **{f"I{b}": np.ones(2, f"int{b}") for b in (8, 16, 32, 64)},
        **{f"U{b}": np.ones(2, f"uint{b}") for b in (8, 16, 32, 64)},
        "BOOL": np.ones(2, bool),
    }
    save_file(arrays, str(tmp_path / "all.safetensors"))
    src = open_source(tmp_path / "all.safetensors")
    expect = {"F64": "binary64", "F32": "binary32", "F16": "binary16", "BF16": "bfloat16",
              "F8_E4M3": "e4m3fn", "F8_E5M2": "e5m2", "BOOL": "bool",
              **{f"I{b}": f"int{b}" for b in (8, 16, 32, 64)},
              **{f"U{b}": f"uint{b}" for b in (8, 16, 32, 64)}}
    assert {t.name: t.dtype_name for t in src.tensors} == expect
    assert {t.name: t.stored_dtype for t in src.tensors} == {k: k for k in expect}


def test_npz_npy_and_path_key(tmp_path: Path) -> None:
    w = _weights()
    np.savez(tmp_path / "s.npz", **{k: v for k, v in w.items()  # type: ignore[arg-type]
                                    if v.dtype.kind != "V"})
    np.savez_compressed(tmp_path / "c.npz", a=w["embed"], f=np.asfortranarray(w["layers.0.w"]))
    np.save(tmp_path / "act.npy", w["layers.0.w"])
    np.save(tmp_path / "fortran.npy", np.asfortranarray(w["layers.0.w"]))
    stored = open_source(tmp_path / "s.npz")
    assert all(t.loader == "file" for t in stored.tensors)  # uncompressed: memory-mapped
    for t in stored.tensors:
        np.testing.assert_array_equal(t.read(), w[t.name].reshape(-1))
    comp = open_source(tmp_path / "c.npz")
    assert {t.loader for t in comp.tensors} == {"npz"}
    np.testing.assert_array_equal(comp["f"].read(5, 400), w["layers.0.w"].reshape(-1)[5:400])
    npy = open_source(tmp_path / "act.npy")
    assert npy.names == ("act",) and npy.tensors[0].loader == "file"
    fort = open_source(tmp_path / "fortran.npy").tensors[0]
    np.testing.assert_array_equal(fort.read(), w["layers.0.w"].reshape(-1))  # C order
    one = open_source(f"{tmp_path / 's.npz'}:layers.0.w")
    assert one.kind == "tensor" and one.names == ("layers.0.w",)
    # a .npy against one tensor inside another file
    r = diff_sources(tmp_path / "act.npy", f"{_shard(tmp_path / 'm', w, 2)}:layers.0.w")
    assert [(t.mismatches, t.status) for t in r.tensors] == [(0, "equal")]


def test_torch_state_dicts(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    w = _weights()
    sd: dict[str, Any] = {k: torch.from_numpy(v.copy()) for k, v in w.items()
                          if v.dtype.kind in "fib" and v.dtype not in (BF16, F8)}
    sd["layers.1.scale"] = torch.from_numpy(w["layers.1.scale"].astype(np.float32)).to(
        torch.bfloat16)
    sd["q.f8"] = torch.from_numpy(w["q.f8"].astype(np.float32)).to(torch.float8_e4m3fn)
    torch.save(sd, tmp_path / "m.pt")
    torch.save({"model": sd, "step": 3}, tmp_path / "nested.bin")
    src = open_source(tmp_path / "m.pt")
    assert src.names == tuple(sorted(w))
    assert src["layers.1.scale"].dtype_name == "bfloat16"
    assert src["q.f8"].dtype_name == "e4m3fn"
    r = diff_sources(tmp_path / "m.pt", _shard(tmp_path / "s", w, 2))
    assert r.ok and all(t.status == "equal" for t in r.tensors)
    nested = open_source(tmp_path / "nested.bin")
    assert nested.names == tuple(sorted(f"model.{k}" for k in w)) and nested.skipped == ("step",)
    assert hash_source(tmp_path / "m.pt").digest == hash_source(tmp_path / "s").digest


class _Hyper(dict):
    """A class of the user's in a checkpoint (as Lightning's AttributeDict of hparams)."""


def test_lightning_style_ckpt(tmp_path: Path) -> None:
    """A ``.ckpt`` (PyTorch Lightning, Stable Diffusion) is a torch file: its state dict
    is read, the rest named as left out; one holding a user's class is refused, since
    weights_only never runs a pickle's code."""
    torch = pytest.importorskip("torch")
    sd = {"layer.w": torch.arange(6, dtype=torch.float32).reshape(2, 3),
          "layer.b": torch.ones(3, dtype=torch.bfloat16)}
    torch.save({"state_dict": sd, "epoch": 3, "global_step": 120,
                "hyper_parameters": {"lr": 0.1}}, tmp_path / "epoch=3.ckpt")
    src = open_source(tmp_path / "epoch=3.ckpt")
    assert src.names == ("state_dict.layer.b", "state_dict.layer.w")
    assert set(src.skipped) == {"epoch", "global_step", "hyper_parameters.lr"}
    np.testing.assert_array_equal(src["state_dict.layer.w"].read(), np.arange(6.0))
    assert open_source(tmp_path).names == src.names  # a folder of one .ckpt
    torch.save({"state_dict": sd, "hyper_parameters": _Hyper(lr=0.1)}, tmp_path / "h.ckpt")
    with pytest.raises(TensorFileError, match="holds more than tensors"):
        open_source(tmp_path / "h.ckpt")


# ---------------------------------------------------------------- diff
def _perturbed(w: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    v = {k: x.copy() for k, x in w.items()}
    ulps = {}
    _nextafter_n(v["embed"], 17, 3)
    _nextafter_n(v["embed"], 1000, 1)
    ulps["embed"] = 3
    _nextafter_n(v["layers.0.w"], 5, 250)
    ulps["layers.0.w"] = 250
    v["layers.0.b"][7] = np.nan
    v["layers.0.b"][8] = np.inf
    v["layers.0.b"][9] = -v["layers.0.b"][9]
    v["pos"][3] += 5
    v["pos"][4] -= 2
    return v, ulps


def _ref_figures(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Independent figures for two float arrays of one dtype (numpy, float64)."""
    a = a.reshape(-1)
    b = b.reshape(-1)
    ua, ub = a.view(np.dtype(f"u{a.dtype.itemsize}")), b.view(np.dtype(f"u{b.dtype.itemsize}"))
    va, vb = a.astype(np.float64), b.astype(np.float64)
    na, nb = np.isnan(va), np.isnan(vb)
    fin = np.isfinite(va) & np.isfinite(vb)
    err = np.abs(va[fin] - vb[fin])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, err / np.abs(va[fin]))
    inf_mm = (np.isinf(va) | np.isinf(vb)) & ~na & ~nb & (va != vb)
    return {"mismatches": int(np.count_nonzero(ua != ub)),
            "nan_mismatches": int(np.count_nonzero(na != nb)),
            "inf_mismatches": int(np.count_nonzero(inf_mm)),
            "max_abs_error": float(err.max(initial=0.0)),
            "max_rel_error": float(rel.max(initial=0.0))}


def test_diff_figures_per_tensor_against_numpy(tmp_path: Path) -> None:
    w = _weights()
    v, ulps = _perturbed(w)
    a = _shard(tmp_path / "a", w, 3)
    b = _shard(tmp_path / "b", v, 2)
    r = diff_sources(a, b)
    rows = {t.name: t for t in r.tensors}
    assert set(rows) == set(w) and not r.only_a and not r.only_b and not r.shape_mismatches
    for name, x in w.items():
        t = rows[name]
        if x.dtype.kind == "f" or x.dtype in (BF16, F8):
            ref = _ref_figures(x, v[name])
            got = {k: getattr(t, k) for k in ref}
            assert got == ref, name
    assert rows["embed"].max_ulp == ulps["embed"] and rows["embed"].mismatches == 2
    assert rows["layers.0.w"].max_ulp == ulps["layers.0.w"]
    b9 = w["layers.0.b"][9]
    assert rows["layers.0.b"].max_ulp == int(ulp_distance(float(b9), -float(b9), "binary32"))
    assert (rows["layers.0.b"].nan_mismatches, rows["layers.0.b"].inf_mismatches) == (1, 1)
    # integers: one ULP is 1
    assert (rows["pos"].mismatches, rows["pos"].max_ulp, rows["pos"].max_abs_error) == (2, 5, 5.0)
    assert rows["pos"].max_rel_error == max(5 / 3, 2 / 4)
    assert {n: t.status for n, t in rows.items()} == {
        **{n: "equal" for n in w}, "embed": "fail", "layers.0.w": "fail", "layers.0.b": "fail",
        "pos": "fail"}
    assert not r.ok


def test_diff_checks_max_ulp_atol_rtol(tmp_path: Path) -> None:
    w = _weights()
    v, _ = _perturbed(w)
    a, b = _shard(tmp_path / "a", w, 1), _shard(tmp_path / "b", v, 1)
    keys = ["embed", "layers.0.w", "pos"]
    r = diff_sources(a, b, keys=keys, max_ulp=3)
    assert {t.name: (t.status, t.failures) for t in r.tensors} == {
        "embed": ("pass", 0), "layers.0.w": ("fail", 1), "pos": ("fail", 1)}
    r = diff_sources(a, b, keys=keys, max_ulp=250)
    assert r.ok
    # abs/rel: |a - b| <= atol + rtol * |a|, computed here in float64
    x, y = w["layers.0.w"].reshape(-1)[5], v["layers.0.w"].reshape(-1)[5]
    gap = abs(float(y) - float(x))
    rtol = gap / abs(float(x))
    r = diff_sources(a, b, keys=["layers.0.w"], rtol=rtol * 1.01)
    assert r.tensors[0].status == "pass"
    r = diff_sources(a, b, keys=["layers.0.w"], rtol=rtol * 0.99)
    assert r.tensors[0].status == "fail"
    r = diff_sources(a, b, keys=["layers.0.w"], atol=gap, rtol=0.0)
    assert r.tensors[0].status == "pass"
    # NaN against a number fails whatever the tolerance; huge max_ulp does not crash
    r = diff_sources(a, b, keys=["layers.0.b"], max_ulp=10**30, atol=1e30)
    assert r.tensors[0].failures == 1 and r.tensors[0].status == "fail"
    with pytest.raises(ValueError, match="atol"):
        diff_sources(a, b, atol=-1.0)


def test_inf_against_minus_inf_counts_the_pair_and_not_the_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([np.inf, 1.0], np.float32))
    np.save(tmp_path / "b.npy", np.array([-np.inf, 1.0], np.float32))
    t = diff_sources(tmp_path / "a.npy", tmp_path / "b.npy").tensors[0]
    assert t.inf_mismatches == 1 and t.max_ulp == 2 * 0x7F800000
    assert (t.max_abs_error, t.max_rel_error) == (0.0, 0.0)  # finite pairs only, documented


def test_mixed_dtypes_compare_in_the_coarser_format(tmp_path: Path) -> None:
    w = _weights()
    f32 = {k: x for k, x in w.items() if x.dtype == np.float32}
    bf = {k: x.astype(BF16) for k, x in f32.items()}
    bf["embed"].view(np.uint16).reshape(-1)[10] += 2  # two bf16 ULP
    a, b = _shard(tmp_path / "a", f32, 2), _shard(tmp_path / "b", bf, 1)
    r = diff_sources(a, b)
    assert r.notes == ("binary32 vs bfloat16: compared in bfloat16, A rounded once (rne) "
                       "into it",)
    rows = {t.name: t for t in r.tensors}
    for name, x in f32.items():
        ref = _ref_figures(x.astype(BF16), bf[name])  # ml_dtypes: RNE from float32
        assert {k: getattr(rows[name], k) for k in ref} == ref, name
        assert rows[name].format == "bfloat16" and rows[name].rounded == "A"
    assert rows["embed"].max_ulp == 2
    r = diff_sources(a, b, fmt="e5m2", keys=["layers.0.*"])
    assert {t.format for t in r.tensors} == {"e5m2"} and all(t.rounded == "A,B"
                                                            for t in r.tensors)
    ref = _ref_figures(f32["layers.0.w"].astype(ml_dtypes.float8_e5m2),
                       bf["layers.0.w"].astype(np.float32).astype(ml_dtypes.float8_e5m2))
    assert {k: getattr(r.tensors[1], k) for k in ref} == ref


def test_streaming_chunks_and_threads_do_not_change_the_answer(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(200_003).astype(np.float32)
    y = x.copy()
    idx = rng.choice(x.size, 500, replace=False)
    y[idx] = np.nextafter(y[idx], np.float32(np.inf))
    y[idx[:7]] = rng.standard_normal(7).astype(np.float32)
    y[idx[7]] = np.nan
    save_file({"x": x, "z": x[:10]}, str(tmp_path / "a.safetensors"))
    save_file({"x": y, "z": x[:10]}, str(tmp_path / "b.safetensors"))
    whole = diff_sources(tmp_path / "a.safetensors", tmp_path / "b.safetensors",
                         chunk=1 << 22, threads=1)
    for chunk, threads in ((1000, 1), (4096, 2), (77_777, 3)):
        assert diff_sources(tmp_path / "a.safetensors", tmp_path / "b.safetensors",
                            chunk=chunk, threads=threads) == whole
    ref = _ref_figures(x, y)
    assert {k: getattr(whole.tensors[0], k) for k in ref} == ref
    st = stats_source(tmp_path / "a.safetensors", chunk=1 << 22, threads=1)
    assert stats_source(tmp_path / "a.safetensors", chunk=999, threads=2) == st
    seen: list[int] = []
    diff_sources(tmp_path / "a.safetensors", tmp_path / "b.safetensors", chunk=10_000,
                 progress=seen.append)
    assert sum(seen) == 2 * (x.nbytes + 40) and len(seen) == 21 + 1
    # the hash reads whole 1 MiB blocks (262144 float32): 700_003 elements are 3 blocks
    big = rng.standard_normal(700_003).astype(np.float32)
    save_file({"big": big, "z": x[:10]}, str(tmp_path / "c.safetensors"))
    h = hash_source(tmp_path / "c.safetensors", chunk=1 << 22, threads=1)
    assert hash_source(tmp_path / "c.safetensors", chunk=1, threads=2) == h
    assert hash_source(tmp_path / "c.safetensors", chunk=600_000, threads=3) == h
    assert h.tensors[0][1].digest == fingerprint(big.view(np.uint32), fmt="binary32").digest
    seen.clear()
    hash_source(tmp_path / "c.safetensors", chunk=1, progress=seen.append, threads=2)
    assert sorted(seen) == [40, 4 * 175_715, 2**20, 2**20]  # block by block


def test_keys_only_in_one_side_and_shape_mismatches(tmp_path: Path) -> None:
    w = _weights()
    v = {k: x for k, x in w.items() if k != "mask"}
    v["extra"] = np.zeros(3, np.float32)
    v["layers.0.b"] = w["layers.0.b"][:10]
    r = diff_sources(_shard(tmp_path / "a", w, 2), _shard(tmp_path / "b", v, 1))
    assert (r.only_a, r.only_b) == (("mask",), ("extra",))
    assert r.shape_mismatches == (("layers.0.b", (96,), (10,)),)
    assert all(t.status == "equal" for t in r.tensors) and not r.ok
    r = diff_sources(tmp_path / "a", tmp_path / "b", keys=["layers.1.*", "embed"])
    assert [t.name for t in r.tensors] == ["embed", "layers.1.scale", "layers.1.w"] and r.ok


# ---------------------------------------------------------------- stats and hash
def test_stats_per_tensor_and_total_match_tensor_stats_in_memory(tmp_path: Path) -> None:
    w = _weights()
    d = _shard(tmp_path / "m", w, 3)
    s = stats_source(d, formats=("e4m3fn", "e2m1fn", "bfloat16"), chunk=1000)
    for ref, st in s.tensors:
        x = w[ref.name].astype(np.float64)
        assert st == tensor_stats(x, formats=("e4m3fn", "e2m1fn", "bfloat16")), ref.name
    every = np.concatenate([w[k].astype(np.float64).reshape(-1) for k in sorted(w)])
    assert s.total == tensor_stats(every, formats=("e4m3fn", "e2m1fn", "bfloat16"))


def _count_scaled(x: np.ndarray, scale: Fraction, fmt_name: str) -> tuple[int, int]:
    """Flush and subnormal counts of x * scale (Fractions, round-to-nearest-even, ties to 0)."""
    fmt = get_format(fmt_name)
    sub = Fraction(fmt.smallest_subnormal)
    normal = Fraction(fmt.smallest_normal)
    flush = subn = 0
    for v in x.tolist():
        if not np.isfinite(v) or v == 0:
            continue
        a = abs(Fraction(v)) * scale
        q = round(a / sub)  # Python rounds half to even: the subnormal grid, quantum sub
        if q == 0:
            flush += 1
        elif q * sub < normal and a < normal - sub / 2:
            subn += 1
    return flush, subn


def test_scaled_fractions_against_fractions() -> None:
    rng = np.random.default_rng(11)
    x = rng.lognormal(-3, 4, 4000) * rng.choice([-1, 1], 4000)
    x[:5] = [2.0**-20, 2.0**-30, 3 * 2.0**-12, 0.0, np.nan]
    s = tensor_stats(x, formats=("e4m3fn", "e2m1fn", "e5m2", "binary16"))
    for fit in s.fits:
        assert fit.scale_pow2 is not None
        f, sb = _count_scaled(x, Fraction(fit.scale_pow2), fit.format.name)
        assert (fit.flush_to_zero_scaled, fit.subnormal_scaled) == (f / x.size, sb / x.size), \
            fit.format.name
        f0, sb0 = _count_scaled(x, Fraction(1), fit.format.name)
        assert (fit.flush_to_zero, fit.subnormal) == (f0 / x.size, sb0 / x.size)


def test_hash_depends_on_names_dtypes_shapes_bits_not_sharding(tmp_path: Path) -> None:
    w = _weights()
    one = _shard(tmp_path / "one", w, 1)
    three = _shard(tmp_path / "three", w, 3)
    plain = _shard(tmp_path / "plain", dict(reversed(list(w.items()))), 2, index=False)
    h = hash_source(one)
    assert hash_source(three).digest == hash_source(plain).digest == h.digest
    native = {k: x for k, x in w.items() if x.dtype not in (BF16, F8)}  # npz saves those raw
    np.savez(tmp_path / "m.npz", **native)  # type: ignore[arg-type]
    assert hash_source(tmp_path / "m.npz").digest == hash_source(
        _shard(tmp_path / "native", native, 2)).digest
    # the documented preimage, from hashlib and the per-tensor fingerprints
    lines = b"".join((json.dumps([k, fingerprint(_codes(w[k]), fmt=_fmt(w[k])).digest])
                      + "\n").encode() for k in sorted(w))
    assert h.digest == hashlib.sha256(b"numerics.checkpoint/2\n" + lines).hexdigest()
    v = {k: x.copy() for k, x in w.items()}
    v["embed"].view(np.uint32)[0, 0] ^= 1
    assert hash_source(_shard(tmp_path / "flip", v, 3)).digest != h.digest
    renamed = dict(w)
    renamed["embed2"] = renamed.pop("embed")
    assert hash_source(_shard(tmp_path / "ren", renamed, 1)).digest != h.digest
    reshaped = dict(w)
    reshaped["embed"] = w["embed"].reshape(64, 300)
    assert hash_source(_shard(tmp_path / "shp", reshaped, 1)).digest != h.digest


def _fmt(x: np.ndarray) -> str | None:
    return {"float32": "binary32", "bfloat16": "bfloat16", "float8_e4m3fn": "e4m3fn"}.get(
        x.dtype.name)


def _codes(x: np.ndarray) -> np.ndarray:
    if _fmt(x) is None:
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


# ---------------------------------------------------------------- bad input
def _bad(path: Path | str, *needles: str) -> None:
    with pytest.raises(TensorFileError) as err:
        open_source(path)
    msg = str(err.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, msg


def test_an_empty_tensor_with_a_size_beyond_numpy_is_refused(tmp_path: Path) -> None:
    """Shape (0, 2**64) holds no bytes, so the byte-range checks passed it, and reading
    it overflowed an int64 (OverflowError, and exit 70 in the CLI)."""
    for dims in ([0, 2**64], [0, 2**62]):  # (2**62 float32 sizes: 2**64 bytes)
        h = json.dumps({"a": {"dtype": "F32", "shape": dims, "data_offsets": [0, 0]}})
        (tmp_path / "z.safetensors").write_bytes(struct.pack("<Q", len(h)) + h.encode())
        _bad(tmp_path / "z.safetensors", "z.safetensors", "beyond what an array can have")
        with pytest.raises(TensorFileError, match="beyond what an array can have"):
            load_tensor(tmp_path / "z.safetensors")
        header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }"
                  % tuple(dims)).encode()
        header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
        npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
        with zipfile.ZipFile(tmp_path / "z.npz", "w") as z:
            z.writestr("a.npy", npy)
        _bad(tmp_path / "z.npz", "z.npz")
        (tmp_path / "z.npy").write_bytes(npy)
        _bad(tmp_path / "z.npy", "z.npy")
        with pytest.raises(TensorFileError):
            load_tensor(tmp_path / "z.npz")


def test_bad_sources_name_the_file_and_the_problem(tmp_path: Path) -> None:
    w = _weights()
    good = _shard(tmp_path / "good", w, 2)
    data = (good / "model-00001-of-00002.safetensors").read_bytes()
    (tmp_path / "trunc.safetensors").write_bytes(data[:-100])
    _bad(tmp_path / "trunc.safetensors", "trunc.safetensors", "byte range")
    (tmp_path / "head.safetensors").write_bytes(data[:50])
    _bad(tmp_path / "head.safetensors", "head.safetensors", "header")
    (tmp_path / "json.safetensors").write_bytes((9).to_bytes(8, "little") + b"{not json")
    _bad(tmp_path / "json.safetensors", "json.safetensors", "not JSON")
    missing = _shard(tmp_path / "missing", w, 2)
    os.remove(missing / "model-00002-of-00002.safetensors")
    _bad(missing, "model-00002-of-00002.safetensors", "does not exist")
    # an index may not send the reader outside its folder
    outside = _shard(tmp_path / "outside", w, 1)
    for shard in ("../good/model-00001-of-00002.safetensors",
                  str(good / "model-00001-of-00002.safetensors"), ""):
        (outside / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"embed": shard}}))
        _bad(outside, repr(shard), "outside the index's folder")
    nested = _shard(tmp_path / "nested" / "shards", {"embed": w["embed"]}, 1, index=False)
    (nested.parent / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"embed": "shards/model-00001-of-00001.safetensors"}}))
    assert open_source(nested.parent).names == ("embed",)
    (tmp_path / "empty.npy").write_bytes(b"")
    _bad(tmp_path / "empty.npy", "empty.npy", "empty")
    (tmp_path / "text.npy").write_text("1 2 3\n")
    _bad(tmp_path / "text.npy", "text.npy", "not a .npy file")
    (tmp_path / "nothing").mkdir()
    _bad(tmp_path / "nothing", "directory", "nothing", "no tensor files")
    _bad(f"{good}:nope", "nope")
    with pytest.raises(FileNotFoundError):
        open_source(tmp_path / "absent.safetensors")
    # a directory where a file is expected is called a directory
    (tmp_path / "dir.npy").mkdir()
    with pytest.raises(TensorFileError, match="is a directory"):
        load_tensor(tmp_path / "dir.npy")
    # two sources with no name in common
    save_file({"other": np.zeros(2, np.float32), "x": np.zeros(1, np.float32)},
              str(tmp_path / "other.safetensors"))
    r = diff_sources(good, tmp_path / "other.safetensors")
    assert not r.ok and not r.tensors and r.only_b == ("other", "x") and r.only_a


def test_torch_files_that_hold_more_than_tensors_or_without_torch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.zeros(2), "opt": Fraction(1, 3)}, tmp_path / "obj.pt")
    _bad(tmp_path / "obj.pt", "obj.pt", "more than tensors", "weights_only")
    (tmp_path / "junk.bin").write_bytes(pickle.dumps([1, 2]) + b"junk")
    with pytest.raises(TensorFileError, match="junk.bin"):
        open_source(tmp_path / "junk.bin")
    torch.save({"w": torch.zeros(2)}, tmp_path / "ok.pt")
    monkeypatch.setattr(sources_mod, "_torch", lambda: None)
    sources_mod.release_maps()
    _bad(tmp_path / "ok.pt", "torch is not installed", "ok.pt")


def test_empty_npy_through_load_tensor_and_tensor_stats_of_huge_ints(tmp_path: Path) -> None:
    (tmp_path / "e.npy").write_bytes(b"")
    with pytest.raises(TensorFileError, match="empty"):
        load_tensor(tmp_path / "e.npy")
    with pytest.raises(ValueError, match="float64"):
        tensor_stats(10**400)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tensor_stats(np.array(["a"]))
    bf = fingerprint(np.array([1], np.uint16), fmt="bfloat16")
    assert bf.dtype == "bfloat16"
    with pytest.raises(ValueError):
        fingerprint(np.array([1], np.uint16), fmt="nope")


def _rne_unbounded(x: Fraction, fmt_name: str) -> Fraction:
    """|x| rounded to nearest-even with the format's precision and emin, no upper bound."""
    fmt = get_format(fmt_name)
    a = abs(x)
    if a == 0:
        return a
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = Fraction(2) ** (max(e, fmt.emin) - fmt.trailing_bits)
    n, r = divmod(a / q, 1)
    n = int(n)
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    return n * q


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stats_key_histogram_path_against_exact_rounding(dtype: type) -> None:
    """float32 and float64 inputs take the key histogram of ``stats_pass``; every fraction stays
    exact."""
    names = ("e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "bfloat16", "binary16", "binary32")
    edges: list[np.ndarray] = []
    for name in names:
        f = get_format(name)
        sub, normal = Fraction(f.smallest_subnormal), Fraction(f.smallest_normal)
        top = Fraction(f.max_exact)
        for edge in (sub / 2, sub, normal - sub / 2, normal, top, top * (1 + Fraction(1, 2**(
                f.trailing_bits + 2)))):
            with np.errstate(over="ignore"):  # binary32's edges beyond float32 become inf
                c: np.ndarray = np.array([float(edge)], dtype)
                edges += [c, np.nextafter(c, dtype(0)), np.nextafter(c, dtype(np.inf))]
    rng = np.random.default_rng(21)
    body = (rng.lognormal(-4, 5, 1500) * rng.choice([-1, 1], 1500)).astype(dtype)
    ones = (np.float32(1.9999) * np.float32(2.0) ** rng.integers(-30, 10, 200)).astype(dtype)
    x = np.concatenate(edges + [body, ones, np.array([0, -0.0, np.inf, np.nan, 2.0**-140,
                                                       2.0**-149, 1.0, 0.5], dtype)])
    s = tensor_stats(x, formats=names)
    finite = [Fraction(float(v)) for v in x.tolist() if np.isfinite(v)]
    n = x.size
    nz = [abs(v) for v in finite if v]
    assert (s.amax, s.amin) == (float(max(nz)), float(min(nz)))
    for fit in s.fits:
        r = [(_rne_unbounded(v, fit.format.name), v) for v in finite]
        sat = sum(1 for q, _ in r if q > fit.format.max_exact)
        ftz = sum(1 for q, v in r if q == 0 and v != 0)
        n_sub = sum(1 for q, _ in r if 0 < q < Fraction(fit.format.smallest_normal))
        assert (fit.saturate, fit.flush_to_zero, fit.subnormal) == (sat / n, ftz / n, n_sub / n), \
            fit.format.name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stats_one_pass_over_many_blocks_against_the_exact_path_and_numpy(dtype: type) -> None:
    """``stats_pass`` (keys, listed elements, blocks of 2**16) on 300_000 elements with
    zeros, subnormals, powers of two, long runs of leading ones, infinities, NaNs and
    overflows scattered over every block gives the exact path's figures (every element
    through ``kernels.compare.stats``) bit for bit, and numpy's exponent histogram."""
    from numerics.kernels import compare as kernels
    from numerics.stats import CANDIDATE_FORMATS, StatsPartial, stats_chunk

    rng = np.random.default_rng(17)
    n = 300_000
    x = (rng.lognormal(-2, 6, n) * rng.choice([-1, 1], n)).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.5, 2.0**-20, 448.0, 464.0, 57344.0,
              6.0, 7.0, 1.9999999, 3 * tiny, tiny, -tiny]
    specials: np.ndarray = np.array(values, dtype)
    at = rng.choice(n, 30_000, replace=False)
    x[at] = specials[rng.integers(0, specials.size, at.size)]
    x[:1000] = 0.0  # a run of zeros, and a whole block of one value
    x[70_000:140_000] = dtype(1.5)
    fmts = tuple(get_format(f) for f in CANDIDATE_FORMATS) + (get_format("binary32"),)
    fast = stats_chunk(x, fmts)
    wide = x.dtype == np.float64
    bits = x.view(np.uint64 if wide else np.uint32)
    mbits, ebits = (52, 11) if wide else (23, 8)
    exact = StatsPartial.empty(len(fmts))
    over = np.array([fast_over for fast_over in _over_thresholds(fmts)])
    tie = np.array([bool(f.max_finite_code & 1) for f in fmts])
    extremes = np.array([0, 2**64 - 1], np.uint64)
    kernels.stats(bits, x, np.arange(n, dtype=np.int64), np.empty(0, np.int64), mbits, ebits,
                  over, tie, 0, exact.counts, extremes, exact.hist, exact.over)
    assert fast.counts.tolist() == exact.counts.tolist()
    assert (fast.hist == exact.hist).all()
    assert fast.over.tolist() == exact.over.tolist()
    mags = np.abs(x[np.isfinite(x) & (x != 0)]).astype(np.float64)
    assert fast.extremes.tolist() == [mags.max(), mags.min()]
    assert fast.counts.tolist() == [np.isnan(x).sum(), np.isinf(x).sum(), (x == 0).sum()]
    e = np.frexp(mags)[1] - 1  # 2**e <= |x| < 2**(e + 1)
    binades, counts = np.unique(e, return_counts=True)
    per_binade = fast.hist[:, :53].sum(axis=1)
    assert {int(b): int(c) for b, c in zip(binades, counts)} == {
        k - 1074: int(c) for k, c in enumerate(per_binade) if c}
    pow2 = np.frexp(mags)[0] == 0.5
    assert int(fast.hist[:, 53].sum()) == int(pow2.sum())
    # the extremes' keys move block by block: magnitudes ascending, descending, and a
    # first block of NaNs only; the figures do not depend on the order
    order = np.argsort(np.abs(x), kind="stable")
    nan_first = np.concatenate([x[np.isnan(x)], np.full(70_000, np.nan, dtype), x[~np.isnan(x)]])
    for y, extra_nan in ((x[order], 0), (x[order[::-1]], 0), (nan_first, 70_000)):
        other = stats_chunk(y, fmts)
        assert other.counts.tolist() == [exact.counts[0] + extra_nan, *exact.counts[1:]]
        assert (other.hist == exact.hist).all() and other.over.tolist() == exact.over.tolist()
        assert other.extremes.tolist() == fast.extremes.tolist()
    # the largest and the smallest in later blocks than the first, in the keys of the
    # first block's largest and smallest
    step = np.finfo(dtype).eps
    same = np.full(200_000, dtype(1.5 + 2 * step))
    same[1::2] = dtype(4.5 + 8 * step)
    same[150_001], same[180_000] = dtype(4.5 + 12 * step), dtype(1.5 + step)
    assert stats_chunk(same, fmts).extremes.tolist() == [4.5 + 12 * step, 1.5 + step]


def _over_thresholds(fmts: tuple[Any, ...]) -> list[float]:
    """|x| above this rounds (to nearest, unbounded exponent) beyond the format's max."""
    out = []
    for f in fmts:
        top = Fraction(f.max_exact)
        e = top.numerator.bit_length() - top.denominator.bit_length()
        while Fraction(2) ** e > top:
            e -= 1
        try:
            out.append(float(top + Fraction(2) ** (e - f.trailing_bits) / 2))
        except OverflowError:
            out.append(float("inf"))
    return out


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0fnu", "e2m1fn",
                                  "e3m2fn", "e2m3fn", "e4m3"])
def test_compare_kernel_distance_of_every_pair_of_codes(name: str) -> None:
    """Every pair of codes of the 8-bit and smaller formats: the kernel's ULP distance (read off
    its worst-element list) against the exact scalar ``ulp_distance`` of the decoded values."""
    from numerics.compare import compare_chunk
    from numerics.encoding import decode

    fmt = get_format(name)
    codes = np.arange(fmt.num_codes, dtype=fmt.code_dtype)
    values = np.asarray(decode(codes, fmt), np.float64)
    nan = np.isnan(values)
    ok_vals = values[~nan]
    for c in range(0, fmt.num_codes, 3 if fmt.bits == 8 else 1):
        part = compare_chunk(np.full(codes.size, c, fmt.code_dtype), codes, fmt,
                             worst=codes.size)
        got = dict(zip(part.top_index.tolist(), part.top_key.tolist()))
        if nan[c]:
            assert all(got[i] == 2**64 - 1 for i in np.flatnonzero(~nan))  # NaN mismatches
            continue
        expect = np.asarray(ulp_distance(np.full(ok_vals.size, values[c]), ok_vals, fmt))
        for i, d in zip(np.flatnonzero(~nan).tolist(), expect.tolist()):
            assert got.get(i, 0) == d, (hex(c), hex(i))
        assert part.max_ulp == int(expect.max())


def test_one_tensor_checkpoints_still_match_by_name(tmp_path: Path) -> None:
    """Directories and files holding one tensor each match tensors by name (a renamed
    tensor is on one side only); a .npy pairs up with one tensor whatever the names."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    save_file({"model.w": np.ones(3, np.float32)}, str(tmp_path / "a" / "m.safetensors"))
    save_file({"model.v": np.ones(3, np.float32)}, str(tmp_path / "b" / "m.safetensors"))
    r = diff_sources(tmp_path / "a", tmp_path / "b")
    assert not r.ok and (r.only_a, r.only_b, r.tensors) == (("model.w",), ("model.v",), ())
    r = diff_sources(tmp_path / "a" / "m.safetensors", tmp_path / "b" / "m.safetensors")
    assert not r.ok and (r.only_a, r.only_b, r.tensors) == (("model.w",), ("model.v",), ())
    np.save(tmp_path / "v.npy", np.ones(3, np.float32))
    r = diff_sources(tmp_path / "a" / "m.safetensors", tmp_path / "v.npy")
    assert r.ok and not r.only_a and not r.only_b and r.tensors[0].name == "model.w / v"
