"""numerics.testing.exhaustive: peers pass, mutants fall into the right classes.

Kernels under test are peers (ml_dtypes, numpy, torch casts) and mutants of
them written here; the reference inside exhaustive is numerics.encode.
"""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from numerics.testing.exhaustive import exhaustive

try:
    import torch
except ImportError:  # torch is an optional extra: its tests skip without it
    torch = None  # type: ignore[assignment]
requires_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def to_e4m3(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn)


def to_bf16(x: np.ndarray) -> np.ndarray:
    return x.astype(ml_dtypes.bfloat16)


def truncating_bf16(x: np.ndarray) -> np.ndarray:
    b = x.astype(np.float32).view(np.uint32)
    nan = np.isnan(x)
    out = ((b >> 16) << 16).view(np.float32).astype(ml_dtypes.bfloat16)
    return np.where(nan, x.astype(ml_dtypes.bfloat16), out)


def lost_negzero_e4m3(x: np.ndarray) -> np.ndarray:
    out = to_e4m3(x).view(np.uint8).copy()
    out[out == 0x80] = 0
    return out.view(ml_dtypes.float8_e4m3fn)


def positive_nan_e5m2(x: np.ndarray) -> np.ndarray:
    out = x.astype(np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8).copy()
    out[np.isnan(x)] = 0x7E
    return out.view(ml_dtypes.float8_e5m2)


def torch_e5m2(x: np.ndarray) -> Any:
    return torch.from_numpy(x.astype(np.float32)).to(torch.float8_e5m2)


@pytest.mark.parametrize(("kernel", "src", "dst"), [
    (to_e4m3, "bfloat16", "e4m3fn"), (to_bf16, "binary16", "bfloat16"),
    pytest.param(torch_e5m2, "binary16", "e5m2", marks=requires_torch),
    (to_e4m3, "e5m2", "e4m3fn"),
])
def test_peers_agree_on_every_input(kernel: Any, src: str, dst: str) -> None:
    r = exhaustive(kernel, src, dst, chunk_size=1 << 13)
    assert r.mismatches == 0 and r.checked + r.skipped == (1 << 16 if "bin" in src
                                                           or "bf" in src else 256)


def test_mutants_are_classified() -> None:
    r = exhaustive(truncating_bf16, "binary16", "bfloat16", check=False)
    kinds = {kind for _, kind in r.classes}
    assert kinds == {"1 ulp toward zero"}
    assert r.classes[("normal", "1 ulp toward zero")].count > 1000
    r = exhaustive(lost_negzero_e4m3, "bfloat16", "e4m3fn", check=False)
    assert set(r.classes) == {("zero", "-0 vs +0"), ("subnormal", "-0 vs +0"),
                              ("normal", "-0 vs +0")}
    r = exhaustive(positive_nan_e5m2, "binary16", "e5m2", check=False)
    assert set(r.classes) == {("nan", "NaN sign")}
    assert r.classes[("nan", "NaN sign")].count == 1023       # negative NaNs of binary16
    with pytest.raises(AssertionError, match="nan input, NaN sign: 1023"):
        exhaustive(positive_nan_e5m2, "binary16", "e5m2")


def test_threads_chunks_and_progress_give_one_report() -> None:
    seen: list[tuple[int, int]] = []
    a = exhaustive(truncating_bf16, "binary16", "bfloat16", check=False, threads=1)
    b = exhaustive(truncating_bf16, "binary16", "bfloat16", check=False, threads=3,
                   chunk_size=999, progress=lambda d, t: seen.append((d, t)))
    assert a.mismatches == b.mismatches and a.classes.keys() == b.classes.keys()
    assert seen[-1] == (65536, 65536) and len(seen) == -(-65536 // 999)


def test_formats_without_nan_skip_nan_inputs() -> None:
    def to_e2m1(x: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(x), 0, x.astype(np.float32)).astype(ml_dtypes.float4_e2m1fn)
    r = exhaustive(to_e2m1, "e5m2", "e2m1fn", overflow="saturate")
    assert r.skipped == 6 and r.checked == 250


def test_on_a_dask_cluster() -> None:
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            r = exhaustive(truncating_bf16, "binary16", "bfloat16", check=False,
                           client=client, chunk_size=1 << 14)
    local = exhaustive(truncating_bf16, "binary16", "bfloat16", check=False)
    assert r.mismatches == local.mismatches and r.checked == 65536


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at most 32 bits"):
        exhaustive(to_bf16, "binary64", "bfloat16")
    with pytest.raises(ValueError, match="chunk_size=0"):
        exhaustive(to_bf16, "binary16", "bfloat16", chunk_size=0)
    with pytest.raises(ValueError, match="rounding='sr'"):
        exhaustive(to_bf16, "binary16", "bfloat16", rounding="sr")
    with pytest.raises(ValueError, match="RNE"):
        exhaustive(to_bf16, "binary16", "bfloat16", rounding="RNE")
    with pytest.raises(TypeError, match="kernel="):
        exhaustive(3, "binary16", "bfloat16")  # type: ignore[arg-type]


@pytest.mark.exhaustive
def test_every_float32_pattern_to_bfloat16() -> None:
    """All 2**32 float32 patterns through ml_dtypes' cast, against numerics.encode."""
    r = exhaustive(to_bf16, "binary32", "bfloat16", progress=False)
    assert r.checked == 2**32 and r.mismatches == 0
