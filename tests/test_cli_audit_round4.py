"""fpinspect findings of the second audit of its tensor views; each failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_render import call
from safetensors.numpy import save_file

from numerics.checkpoint import diff_sources


def test_whole_checkpoint_diff_with_no_check_fails_on_nan_payloads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'With no check, only bit-equal tensors pass': a NaN payload passed on a whole
    checkpoint (exit 0) while the same pair with --key failed (exit 1)."""
    a = np.array([np.nan, 1, 0], np.float32)
    b = a.copy()
    b.view(np.uint32)[0] = 0xFFC00001
    save_file({"x": a, "y": np.ones(2, np.float32)}, str(tmp_path / "a.safetensors"))
    save_file({"x": b, "y": np.ones(2, np.float32)}, str(tmp_path / "b.safetensors"))
    pa, pb = str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")
    assert call(capsys, "diff", pa, pb)[0] == 1
    assert call(capsys, "diff", pa, pb, "--key", "x")[0] == 1
    r = diff_sources(pa, pb)
    assert not r.ok and [t.status for t in r.tensors] == ["fail", "equal"]
    # a check lets NaN meet NaN, payloads aside, as documented
    assert diff_sources(pa, pb, max_ulp=0).ok


def test_narrow_terminals_never_cut_a_number(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, at 60 columns the bfloat16 row read 'scale 3.39…  pow2 2^1…' (3.39e35 and
    2^118), and ls dropped columns.  Tables are now printed at their own width."""
    x = np.ones(100_000, np.float32)
    x[0], x[1] = 1000, 1e-30
    np.save(tmp_path / "big.npy", x)
    monkeypatch.setenv("COLUMNS", "40")
    code, out, _ = call(capsys, "stats", str(tmp_path / "big.npy"), "--candidates",
                        "e2m1fn,bfloat16")
    assert code == 0 and "…" not in out
    assert "3.39e35" in out and "2^118" in out
    np.save(tmp_path / ("a_rather_long_tensor_name_" * 3 + ".npy"), np.ones(3, np.float32))
    code, out, _ = call(capsys, "ls", str(tmp_path))
    assert code == 0 and "…" not in out and "binary32" in out


def test_histogram_shares_never_read_0_or_100_percent_unless_they_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = np.ones(100_000, np.float32)
    x[0] = 1000
    np.save(tmp_path / "h.npy", x)
    code, out, _ = call(capsys, "stats", str(tmp_path / "h.npy"))
    assert ">99.9%" in out and "<0.1%" in out and "100.0%" not in out and " 0.0%" not in out
    assert json.loads(call(capsys, "stats", str(tmp_path / "h.npy"), "--json")[1])
