"""Regressions from the second audit of ``numerics.checkpoint``: argument checks of
diff_sources, stats_source, hash_source and tensor_fingerprint, the exact integer
tolerance check, and compare_refs (the streamed single-tensor diff) against
compare_codes.

Expectations come from Python's exact integers and Fractions, or from the in-memory
comparison.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from numerics.checkpoint import (
    diff_sources,
    hash_source,
    open_source,
    stats_source,
    tensor_fingerprint,
)
from numerics.checkpoint.diff import compare_refs, within_tolerance
from numerics.compare import compare_codes


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    w2 = w.copy()
    w2[0, 0] += 1
    save_file({"w": w, "w16": w.astype(np.float16)}, str(tmp_path / "m1.safetensors"))
    save_file({"w": w2, "w16": w.astype(np.float16)}, str(tmp_path / "m2.safetensors"))
    np.save(tmp_path / "ref.npy", w)
    return tmp_path / "m1.safetensors", tmp_path / "m2.safetensors"


# ---------------------------------------------------------------- 10: threads
@pytest.mark.parametrize("threads, error", [
    (0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError), ("2", TypeError),
    (np.bool_(True), TypeError),
])
def test_threads_must_be_a_positive_int(threads: object, error: type[Exception],
                                        pair: tuple[Path, Path]) -> None:
    a, b = pair
    ref = open_source(a).tensors[0]
    calls = [lambda: diff_sources(a, b, threads=threads),  # type: ignore[arg-type]
             lambda: stats_source(a, threads=threads),  # type: ignore[arg-type]
             lambda: hash_source(a, threads=threads),  # type: ignore[arg-type]
             lambda: tensor_fingerprint(ref, threads=threads)]  # type: ignore[arg-type]
    for f in calls:
        with pytest.raises(error, match=f"threads={threads!r}"):
            f()


def test_threads_as_numpy_int_is_an_int(pair: tuple[Path, Path]) -> None:
    a, b = pair
    assert diff_sources(a, b, threads=np.int64(2)) == diff_sources(a, b, threads=1)


# ---------------------------------------------------------------- 11: the other arguments
def test_keys_as_one_string_is_one_pattern(pair: tuple[Path, Path]) -> None:
    a, b = pair
    r = diff_sources(a, b, keys="w16")
    assert [t.name for t in r.tensors] == ["w16"] and r.ok
    assert diff_sources(a, b, keys="w*") == diff_sources(a, b, keys=["w*"])


def _junk(x: object) -> Any:
    """``x``, typed as anything: the wrong types below are the point of the test."""
    return x


@pytest.mark.parametrize("call, message", [
    (lambda a, b: diff_sources(a, b, keys=_junk([1])), "keys=[1]"),
    (lambda a, b: diff_sources(a, b, keys=_junk(3)), "keys=3"),
    (lambda a, b: diff_sources(a, b, progress=_junk(5)), "progress=5"),
    (lambda a, b: stats_source(a, progress=_junk("x")), "progress='x'"),
    (lambda a, b: hash_source(a, progress=_junk(5)), "progress=5"),
    (lambda a, b: diff_sources(a, _junk(3)), "b=3"),
    (lambda a, b: open_source(_junk(5)), "path=5"),
    (lambda a, b: stats_source(_junk(1.5)), "src=1.5"),
    (lambda a, b: hash_source(a, canonicalize=_junk("yes")), "canonicalize='yes'"),
    (lambda a, b: hash_source(a, canonicalize=_junk(1)), "canonicalize=1"),
    (lambda a, b: tensor_fingerprint(open_source(a).tensors[0], canonicalize=_junk(None)),
     "canonicalize=None"),
    (lambda a, b: tensor_fingerprint(_junk(str(a))), "ref="),
    (lambda a, b: diff_sources(a, b, client=object()), "client="),
])
def test_bad_arguments_are_type_errors_naming_them(call: Any, message: str,
                                                   pair: tuple[Path, Path]) -> None:
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace("[", r"\[")):
        call(*pair)


def test_raw_format_on_a_source_without_raw_bytes_is_an_error(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    for f in (stats_source, hash_source):
        with pytest.raises(ValueError, match="raw_format='bf16'.*no tensor"):
            f(a, raw_format="bf16")


def test_bytes_paths_are_paths(pair: tuple[Path, Path]) -> None:
    a, b = pair
    src = open_source(bytes(a))
    assert src.names == ("w", "w16") and src.path == str(a)
    assert diff_sources(bytes(a), bytes(b)) == diff_sources(str(a), str(b))
    assert hash_source(bytes(a)).digest == hash_source(a).digest


# ---------------------------------------------------------------- 3: exact tolerances
def _reference(d: int, a: int, atol: float, rtol: float) -> bool:
    """The float tensors' rule on exact integers: the bound in float64 (Python floats are
    binary64: |a| rounded, then the product and the sum), the integer d not rounded."""
    bound = atol + rtol * float(abs(a))
    return bound == math.inf or Fraction(d) <= Fraction(bound)


def test_within_tolerance_compares_the_integer_with_the_float_bound() -> None:
    rng = np.random.default_rng(11)
    big = [2**53, 2**53 + 1, 2**60 + 1, 2**62 + 3, 2**63 - 1]
    a_vals = np.concatenate([rng.integers(-2**63, 2**63 - 1, 300, dtype=np.int64),
                             rng.integers(-1000, 1000, 300), np.array(big), -np.array(big),
                             np.array([-2**63, 0, 1, -1])]).astype(np.int64)
    d_vals = np.concatenate([rng.integers(0, 2**64 - 1, a_vals.size // 2, dtype=np.uint64,
                                          endpoint=True),
                             np.abs(a_vals[a_vals.size // 2:] // 2).astype(np.uint64)])
    d_vals[:20] = np.array([2**53 + 1, 2**53, 2**64 - 1, 0, 1] * 4, np.uint64)
    for atol, rtol in [(float(2**53), 0.0), (0.0, 0.5), (1.0, 0.5), (0.0, 1.0), (2.5, 1e-3),
                       (1e300, 0.0), (0.0, 1e300), (5e-324, 5e-324), (0.0, 0.1),
                       (float(2**63), 1.0), (0.0, 0.3), (0.0, 0.7)]:
        got = within_tolerance(d_vals, a_vals, atol, rtol)
        want = [_reference(d, a, atol, rtol) for d, a in zip(d_vals.tolist(), a_vals.tolist())]
        assert got.tolist() == want, (atol, rtol)
    a_u = np.array([2**64 - 1, 5], np.uint64)  # uint64 a: |a| = 2**64 as a float64
    got = within_tolerance(np.array([2**63, 3], np.uint64), a_u, 0.0, 0.5)
    assert got.tolist() == [_reference(2**63, 2**64 - 1, 0.0, 0.5), False]


def test_integer_tolerances_give_the_float_verdicts() -> None:
    # review: read exactly, rtol=0.3 (0.2999...) failed 3 <= 0.3 * 10, where float tensors
    # of the same values pass; and 2**53 + 1 against atol 2**53 must still fail
    a = np.array([10, 10, 10, 0], np.int64)
    b = np.array([13, 17, 10, 2**53 + 1], np.int64)
    d = np.abs(b - a).astype(np.uint64)
    for rtol in (0.3, 0.7, 0.1, 1.0):
        with np.errstate(invalid="ignore"):
            floats = np.abs(b[:3] - a[:3]).astype(float) <= rtol * np.abs(a[:3]).astype(float)
        assert within_tolerance(d[:3], a[:3], 0.0, rtol).tolist() == floats.tolist(), rtol
    assert within_tolerance(d[3:], a[3:], float(2**53), 0.0).tolist() == [False]


@pytest.mark.parametrize(("atol", "rtol"), [(-1.0, 0.0), (math.nan, 0.0), (0.0, -0.5),
                                            (0.0, math.nan), ("1", 0.0), (True, 0.0)])
def test_within_tolerance_names_a_bad_tolerance(atol: object, rtol: object) -> None:
    with pytest.raises(ValueError, match="atol=" if atol != 0.0 else "rtol="):
        within_tolerance(np.zeros(1, np.uint64), np.zeros(1, np.int64), atol, rtol)  # type: ignore[arg-type]


def test_int_diff_through_the_checkpoint_path_is_exact(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", x=np.array([2**53 + 1, 7], np.int64))
    np.savez(tmp_path / "b.npz", x=np.array([0, 7], np.int64))
    r = diff_sources(tmp_path / "a.npz", tmp_path / "b.npz", atol=float(2**53))
    assert r.tensors[0].failures == 1 and not r.ok
    assert diff_sources(tmp_path / "a.npz", tmp_path / "b.npz", atol=2.0**53 + 2).ok


# ---------------------------------------------------------------- 5: one tensor, streamed
@pytest.mark.parametrize("chunk", [7, 1000, 1 << 20])
@pytest.mark.parametrize("threads", [1, 3])
def test_compare_refs_is_compare_codes(tmp_path: Path, chunk: int, threads: int) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 50)).astype(np.float32)
    y = x.copy()
    y.view(np.uint32)[rng.integers(0, 30, 40), rng.integers(0, 50, 40)] += rng.integers(
        1, 1000, 40).astype(np.uint32)
    y[3, 3] = np.nan
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    ra, rb = open_source(tmp_path / "x.npy").tensors[0], open_source(tmp_path / "y.npy").tensors[0]
    seen: list[int] = []
    got = compare_refs(ra, rb, "binary32", worst=12, max_ulp=500, chunk=chunk, threads=threads,
                       progress=seen.append)
    want = compare_codes(x.view(np.uint32), y.view(np.uint32), "binary32", worst=12,
                         max_ulp=500)
    assert repr(got) == repr(want) and sum(seen) == x.nbytes + y.nbytes  # NaN != NaN
    # a side rounded into the compared format, a chunk at a time
    got16 = compare_refs(ra, rb, "bfloat16", worst=5, chunk=chunk, threads=threads)
    from numerics.encoding import encode

    want16 = compare_codes(encode(x, "bfloat16"), encode(y, "bfloat16"), "bfloat16", worst=5)
    assert repr(got16) == repr(want16)
    with pytest.raises(ValueError, match="shapes"):
        compare_refs(ra, open_source(tmp_path / "x.npy").tensors[0].__class__(
            **{**ra.__dict__, "shape": (1500,)}), "binary32")
