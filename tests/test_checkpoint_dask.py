"""diff/stats/hash on a dask.distributed LocalCluster give the local results bit for bit.

Two worker processes, one thread each; every chunk is one task reading its own
byte range from the shared files.  One cluster serves all three checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from numerics.checkpoint import diff_sources, hash_source, stats_source

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # No dashboard (no port to collide on) and quiet logs: nothing to warn about, and
    # pytest's filterwarnings=error would say so if distributed did.
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=50)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def test_dask_results_equal_local_results(tmp_path: Path, client: Any) -> None:
    rng = np.random.default_rng(5)
    a = {"w": rng.standard_normal((300, 70)).astype(np.float32),
         "b": rng.standard_normal(999).astype(ml_dtypes.bfloat16),
         "i": np.arange(50, dtype=np.int32)}
    b = {k: v.copy() for k, v in a.items()}
    b["w"].view(np.uint32)[3, :20] += 7
    b["w"][4, 4] = np.nan
    b["i"][5] = 9
    save_file({k: a[k] for k in ("w",)}, str(tmp_path / "a1.safetensors"))
    (tmp_path / "A").mkdir()
    save_file({"w": a["w"]}, str(tmp_path / "A" / "x.safetensors"))
    save_file({"b": a["b"], "i": a["i"]}, str(tmp_path / "A" / "y.safetensors"))
    save_file(b, str(tmp_path / "B.safetensors"))
    local = diff_sources(tmp_path / "A", tmp_path / "B.safetensors", chunk=4000, max_ulp=3)
    remote = diff_sources(tmp_path / "A", tmp_path / "B.safetensors", chunk=4000, max_ulp=3,
                          client=client)
    assert remote == local and not local.ok
    assert stats_source(tmp_path / "A", chunk=3000, client=client) == \
        stats_source(tmp_path / "A", chunk=3000)
    assert hash_source(tmp_path / "A", client=client) == hash_source(tmp_path / "A")


def test_cli_scheduler_option(tmp_path: Path, client: Any,
                              capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from fpinspect.main import main

    x = np.arange(5000, dtype=np.float32)
    save_file({"x": x, "y": x[:7]}, str(tmp_path / "a.safetensors"))
    y = x.copy()
    y[10] = np.nextafter(y[10], np.float32(1e9))
    save_file({"x": y, "y": x[:7]}, str(tmp_path / "b.safetensors"))
    address = client.scheduler.address
    code = main(["diff", str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors"),
                 "--scheduler", address, "--max-ulp", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"] is True
    assert [(t["name"], t["mismatches"], t["max_ulp"]) for t in doc["tensors"]] == [
        ("x", 1, 1), ("y", 0, 0)]


def test_one_tensor_diff_and_hash_run_on_the_scheduler(tmp_path: Path, client: Any,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A single-tensor diff (floats and integers) and hash on --scheduler give the local
    report, as compare_refs on a client gives the local one."""
    from fpinspect.main import main

    from numerics.checkpoint import open_source
    from numerics.checkpoint.diff import compare_refs

    rng = np.random.default_rng(9)
    x = rng.standard_normal(5000).astype(np.float32)
    y = x.copy()
    y.view(np.uint32)[::97] += 3
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "i.npy", np.arange(300, dtype=np.int64))
    np.save(tmp_path / "j.npy", np.arange(300, dtype=np.int64) ** 2)
    address = client.scheduler.address
    for argv in (["diff", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--max-ulp", "2"],
                 ["diff", str(tmp_path / "i.npy"), str(tmp_path / "j.npy"), "--atol", "5"],
                 ["hash", str(tmp_path / "x.npy")]):
        local_code = main([*argv, "--json"])
        local = capsys.readouterr().out
        code = main([*argv, "--json", "--scheduler", address])
        assert (code, capsys.readouterr().out) == (local_code, local)
    ra, rb = (open_source(tmp_path / n).tensors[0] for n in ("x.npy", "y.npy"))
    remote = compare_refs(ra, rb, "bfloat16", chunk=700, client=client)
    assert repr(remote) == repr(compare_refs(ra, rb, "bfloat16", chunk=700))


def test_relative_paths_mean_the_callers_directory(tmp_path: Path, client: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path is the caller's: the workers started elsewhere (before the fix
    they resolved it against their own directory, reading other bytes or none)."""
    for sub, value in (("here", 1.0), ("there", 2.0)):
        (tmp_path / sub / "ckpt").mkdir(parents=True)
        np.save(tmp_path / sub / "ckpt" / "w.npy", np.full(64, value, np.float32))
    monkeypatch.chdir(tmp_path / "here")
    local = stats_source("ckpt")
    assert local.tensors[0][1].amax == 1.0
    assert stats_source("ckpt", client=client) == local
    assert hash_source("ckpt", client=client).digest == hash_source("ckpt").digest


def test_a_closed_client_is_named(tmp_path: Path, client: Any) -> None:
    np.save(tmp_path / "w.npy", np.ones(8, np.float32))
    closed = distributed.Client(client.scheduler.address)
    closed.close()
    with pytest.raises(ValueError, match=r"Got client=.*closed.*running client"):
        hash_source(str(tmp_path / "w.npy"), client=closed)
