"""numerics.tensors, numerics.compare, numerics.stats, numerics.fingerprint on files written here.

References, independent of the code under test:
* tensor bytes: the ``safetensors`` package and numpy write the files; ml_dtypes decodes;
* ULP distances: the position of each value in the sorted list of all values of
  the format (enumerated with ml_dtypes), so no ordinal formula is shared;
* stats: a ten-line exact round-to-nearest-even with an unbounded exponent,
  written below with Fractions;
* fingerprints: hashlib over the documented preimage.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from numerics.compare import compare_codes
from numerics.fingerprint import fingerprint
from numerics.formats import Format, get_format
from numerics.stats import CANDIDATE_FORMATS, tensor_stats
from numerics.tensors import TensorFileError, list_tensors, load_tensor

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)


# ---------------------------------------------------------------- loading
def test_bf16_and_fp8_safetensors_are_memory_mapped_codes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 5)).astype(BF16)
    f8 = (rng.standard_normal(40) * 50).astype(E4M3)
    e5 = rng.standard_normal((2, 2)).astype(ml_dtypes.float8_e5m2)
    save_file({"w": w, "f8": f8, "e5": e5, "i": np.arange(4, dtype=np.int32)},
              str(tmp_path / "m.safetensors"))
    path = tmp_path / "m.safetensors"
    assert list_tensors(path) == ["e5", "f8", "i", "w"]
    t = load_tensor(path, key="w")
    assert t.format is not None and t.format.name == "bfloat16" and t.stored_dtype == "BF16"
    assert isinstance(t.array, np.memmap)
    assert t.shape == (6, 5)
    np.testing.assert_array_equal(t.codes(), w.view(np.uint16).reshape(-1))
    np.testing.assert_array_equal(t.values(), w.astype(np.float64).reshape(-1))
    t8 = load_tensor(path, key="f8")
    assert t8.format is not None and t8.format.name == "e4m3fn"
    np.testing.assert_array_equal(t8.codes(), f8.view(np.uint8))
    np.testing.assert_array_equal(t8.values(), f8.astype(np.float64))
    assert load_tensor(path, key="e5").format == get_format("e5m2")
    ti = load_tensor(path, key="i")
    assert ti.format is None and ti.values().tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TensorFileError, match="pick one with --key"):
        load_tensor(path)
    with pytest.raises(TensorFileError, match="key='nope'"):
        load_tensor(path, key="nope")


def test_npy_raw_void_is_reinterpreted_with_a_format(tmp_path: Path) -> None:
    x = np.array([[1.0, -0.5], [3.0, np.inf]], dtype=BF16)
    np.save(tmp_path / "x.npy", x)
    raw = load_tensor(tmp_path / "x.npy")
    assert raw.format is None and raw.stored_dtype == "|V2"
    t = load_tensor(tmp_path / "x.npy", fmt="bf16")
    assert t.format == get_format("bfloat16") and t.shape == (2, 2)
    np.testing.assert_array_equal(t.values(), x.astype(np.float64).reshape(-1))
    with pytest.raises(TensorFileError, match="take 1 byte"):
        load_tensor(tmp_path / "x.npy", fmt="e4m3fn")
    np.save(tmp_path / "b.npy", np.array([0x10, 0x0F], np.uint8).view("V1"))
    with pytest.raises(TensorFileError, match="beyond the 4-bit codes"):
        load_tensor(tmp_path / "b.npy", fmt="e2m1fn")


def test_npz_keys_and_bad_files(tmp_path: Path) -> None:
    np.savez(tmp_path / "two.npz", a=np.zeros(3, np.float32), b=np.ones(3, np.float16))
    np.savez(tmp_path / "one.npz", only=np.ones(2))
    assert load_tensor(tmp_path / "one.npz").key == "only"
    assert load_tensor(tmp_path / "two.npz", key="b").format == get_format("binary16")
    with pytest.raises(TensorFileError, match="2 tensors"):
        load_tensor(tmp_path / "two.npz")
    with pytest.raises(FileNotFoundError):
        load_tensor(tmp_path / "missing.npy")
    (tmp_path / "x.txt").write_text("1 2 3")
    with pytest.raises(TensorFileError, match="reads only .npy, .npz and .safetensors"):
        load_tensor(tmp_path / "x.txt")
    for name in ("x.pt", "x.PTH", "pytorch_model.bin"):  # torch files: name the reader
        with pytest.raises(TensorFileError, match="checkpoint.open_source"):
            load_tensor(tmp_path / name)
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(TensorFileError, match="header"):
        load_tensor(tmp_path / "bad.safetensors")
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(TensorFileError, match="not a .npy file"):
        load_tensor(tmp_path / "bad.npy")


@pytest.mark.parametrize("shape", [[4294967296, 4294967296], [2**62, 4], [1.5], [True], [-1]])
def test_safetensors_shapes_are_exact_integers(tmp_path: Path, shape: list[object]) -> None:
    """A header whose shape is not a list of exact non-negative integers, or whose element
    count (computed exactly: the first two products wrap to 0 in int64) does not fill
    its byte range, is a TensorFileError, never a tensor of 0 elements."""
    header = json.dumps({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}})
    raw = header.encode()
    (tmp_path / "w.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(TensorFileError, match="'w'"):
        load_tensor(tmp_path / "w.safetensors")


def test_codes_in_rounds_numeric_tensors_once(tmp_path: Path) -> None:
    x = np.array([1 + 2**-8 + 2**-40, 34.0000018], np.float64)
    np.save(tmp_path / "x.npy", x)
    t = load_tensor(tmp_path / "x.npy")
    # Exact single rounding: 1.0078125 in bf16 (not 1.0), 36 in e4m3fn (not 32).
    bf = t.codes_in(get_format("bf16"))
    assert bf.view(BF16).astype(np.float64)[0] == 1.0078125
    assert t.codes_in(get_format("e4m3fn")).view(E4M3).astype(np.float64)[1] == 36.0


# ---------------------------------------------------------------- compare
def _ordinals(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct non-NaN values of a small format (+0 and -0 merged), via ml_dtypes."""
    n = 1 << (8 * dtype.itemsize)
    codes = np.arange(n, dtype=np.uint8 if dtype.itemsize == 1 else np.uint16)
    with np.errstate(invalid="ignore"):
        vals = codes.view(dtype).astype(np.float64)
    vals = vals[~np.isnan(vals)]
    return np.unique(np.where(vals == 0, 0.0, vals)), codes


@dataclass
class _Ref:
    dists: list[int]
    nan: int
    max: int
    hist: list[tuple[int, int, int]]
    mismatch: int


def _reference_diff(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> _Ref:
    line, _ = _ordinals(dtype)
    with np.errstate(invalid="ignore"):
        va = a.view(dtype).astype(np.float64)
        vb = b.view(dtype).astype(np.float64)
    dists, nan_mm = [], 0
    for x, y in zip(va.tolist(), vb.tolist()):
        if np.isnan(x) != np.isnan(y):
            nan_mm += 1
            continue
        if np.isnan(x):
            dists.append(0)
            continue
        dists.append(abs(int(np.searchsorted(line, x)) - int(np.searchsorted(line, y))))
    buckets: dict[tuple[int, int], int] = {}
    for d in dists:
        lo, hi = (d, d) if d <= 2 else (2 ** ((d - 1).bit_length() - 1) + 1,
                                         2 ** (d - 1).bit_length())
        buckets[(lo, hi)] = buckets.get((lo, hi), 0) + 1
    return _Ref(dists, nan_mm, max(dists, default=0),
                sorted((lo, hi, c) for (lo, hi), c in buckets.items()),
                int(np.count_nonzero(a != b)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=60))
def test_compare_e4m3fn_against_sorted_value_line(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], np.uint8)
    b = np.array([p[1] for p in pairs], np.uint8)
    ref = _reference_diff(a, b, E4M3)
    r = compare_codes(a, b, "e4m3fn", worst=5, max_ulp=3)
    assert r.bitwise_mismatches == ref.mismatch
    assert r.nan_mismatches == ref.nan
    assert r.max_ulp == ref.max
    assert list(r.ulp_histogram) == ref.hist
    assert r.beyond == ref.nan + sum(d > 3 for d in ref.dists)
    assert len(r.worst) == min(5, ref.mismatch)


def test_compare_bf16_errors_worst_and_specials() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(BF16)
    b = a.copy()
    bu = b.view(np.uint16)
    bu[0, 1] += 5          # 5 ULP
    bu[2, 3] ^= 0x8000     # sign flip
    b[4, 5] = np.nan
    b[6, 7] = np.inf
    a[7, 0] = 0.0
    b[7, 0] = -0.0         # bitwise mismatch at 0 ULP
    r = compare_codes(a.view(np.uint16), b.view(np.uint16), "bfloat16", worst=10)
    ref = _reference_diff(a.view(np.uint16).reshape(-1), b.view(np.uint16).reshape(-1), BF16)
    assert r.max_ulp == ref.max and r.bitwise_mismatches == 5
    assert (r.nan_mismatches, r.inf_mismatches) == (1, 1)
    assert r.worst[0].index == (4, 5) and r.worst[0].ulp_distance is None
    assert {w.index for w in r.worst} == {(0, 1), (2, 3), (4, 5), (6, 7), (7, 0)}
    dists = [w.ulp_distance for w in r.worst[1:]]
    assert dists == sorted(dists, reverse=True)  # type: ignore[type-var]
    assert r.worst[-1].index == (7, 0) and r.worst[-1].ulp_distance == 0
    assert {w.index: w.ulp_distance for w in r.worst}[(0, 1)] == 5
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    fin = np.isfinite(fa) & np.isfinite(fb)
    assert r.max_abs_error == np.max(np.abs(fa - fb)[fin])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(fa[fin] == fb[fin], 0.0, np.abs(fa - fb)[fin] / np.abs(fa[fin]))
    assert r.max_rel_error == rel.max()
    with pytest.raises(ValueError, match="shapes"):
        compare_codes(a.view(np.uint16), b.view(np.uint16)[:2], "bfloat16")


def test_compare_binary32_against_nextafter() -> None:
    x = np.array([1.0, -2.5, 1e-45, 3e38], np.float32)
    y = x.copy()
    for _ in range(3):
        y = np.nextafter(y, np.float32(np.inf))
    r = compare_codes(x.view(np.uint32), y.view(np.uint32), "binary32")
    assert r.max_ulp == 3 and r.ulp_histogram == ((3, 4, 4),)
    # Across zero: -smallest to +smallest is 2 steps (+0 and -0 are one point).
    r = compare_codes(np.array([0x80000001], np.uint32), np.array([0x00000001], np.uint32),
                      "binary32")
    assert r.max_ulp == 2


# ---------------------------------------------------------------- stats
def _rne_unbounded(x: Fraction, fmt: Format) -> Fraction:
    """Round |x| to nearest-even with fmt's precision and emin but no upper exponent bound."""
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


def _interesting(fmt: Format) -> list[float]:
    top, sub = Fraction(fmt.max_exact), Fraction(fmt.smallest_subnormal)
    e_max = top.numerator.bit_length() - top.denominator.bit_length()
    half_ulp_max = Fraction(2) ** (e_max - fmt.trailing_bits) / 2
    out = []
    for v in (top, top + half_ulp_max, sub / 2, sub, Fraction(fmt.smallest_normal) - sub / 2,
              Fraction(fmt.smallest_normal)):
        f = float(v)
        out += [f, float(np.nextafter(f, 0)), float(np.nextafter(f, np.inf))]
    return out


def test_stats_fractions_against_exact_rounding() -> None:
    rng = np.random.default_rng(7)
    fmts = [get_format(n) for n in CANDIDATE_FORMATS]
    special = [v for f in fmts for v in _interesting(f)]
    x = np.concatenate([np.array(special), -np.array(special),
                        rng.lognormal(0, 6, 300) * rng.choice([-1, 1], 300),
                        [0.0, -0.0, np.nan, np.inf]])
    s = tensor_stats(x, formats=tuple(fmts))
    n = x.size
    finite = [Fraction(v) for v in x.tolist() if np.isfinite(v)]
    assert (s.count, s.nan, s.inf, s.zero) == (n, 1, 1, 2)
    assert s.amax == np.max(np.abs(x[np.isfinite(x)]))
    for fit in s.fits:
        fmt = fit.format
        r = [(_rne_unbounded(v, fmt), v) for v in finite]
        sat = sum(1 for q, _ in r if q > fmt.max_exact)
        ftz = sum(1 for q, v in r if q == 0 and v != 0)
        sub = sum(1 for q, _ in r if 0 < q < Fraction(fmt.smallest_normal))
        assert fit.saturate == sat / n, fmt.name
        assert fit.overflow == (sat / n if fmt.has_infinity or fmt.has_nan else 0.0)
        assert fit.flush_to_zero == ftz / n, fmt.name
        assert fit.subnormal == sub / n, fmt.name
        assert 0 <= fit.flush_to_zero_scaled <= 1  # type: ignore[operator]
        k, amax = fit.scale_pow2, s.amax
        assert k is not None and amax is not None and k * amax <= fmt.max < 2 * k * amax


def test_stats_exponent_histogram_and_chunked_reader() -> None:
    x = np.array([1.0, 1.5, 2.0, -0.25, 3e-300, 0.0])
    s = tensor_stats(x, formats=("e4m3fn",))
    assert Fraction(2) ** -995 <= Fraction(3e-300) < Fraction(2) ** -994
    assert dict(s.exponent_histogram) == {0: 2, 1: 1, -2: 1, -995: 1}
    s2 = tensor_stats(lambda i, j: x[i:j], x.size, formats=("e4m3fn",))
    assert s2 == s


# ---------------------------------------------------------------- fingerprint
def test_fingerprint_is_the_documented_sha256_and_ignores_the_container(tmp_path: Path) -> None:
    x = np.array([[1.0, -0.0], [np.nan, 2.5]], dtype=BF16)
    np.save(tmp_path / "x.npy", x)
    save_file({"t": x}, str(tmp_path / "x.safetensors"))
    a = load_tensor(tmp_path / "x.npy", fmt="bf16")
    b = load_tensor(tmp_path / "x.safetensors")
    fa = fingerprint(a.codes, a.shape, fmt=a.format)
    fb = fingerprint(b.codes, b.shape, fmt=b.format)
    pre = (b"numerics.fingerprint/2\n" + json.dumps({"dtype": "bfloat16", "shape": [2, 2]},
                                                    separators=(",", ":")).encode()
           + b"\n" + xxhash.xxh64(x.view(np.uint16).astype("<u2").tobytes()).intdigest()
           .to_bytes(8, "little"))
    assert fa.digest == fb.digest == hashlib.sha256(pre).hexdigest()
    assert fa.algorithm == "xxh64-sha256"
    assert fingerprint(x.view(np.uint16).reshape(4), fmt=a.format).digest != fa.digest  # shape
    y = x.copy()
    y.view(np.uint16)[0, 1] = 0            # +0 for -0
    y.view(np.uint16)[1, 0] = 0xFFC1       # another NaN payload
    fy = fingerprint(y.view(np.uint16), fmt=a.format)
    assert fy.digest != fa.digest
    assert fingerprint(y.view(np.uint16), fmt=a.format, canonicalize=True).digest == \
        fingerprint(x.view(np.uint16), fmt=a.format, canonicalize=True).digest
    ints = fingerprint(np.arange(3, dtype=">i4"))
    assert ints.digest == fingerprint(np.arange(3, dtype="<i4")).digest
    with pytest.raises(TypeError, match="integer"):
        fingerprint(np.ones(2))


def _preimage(dtype: str, shape: list[int], stream: bytes) -> bytes:
    """The documented preimage: XXH64 (the xxhash package) of each 1 MiB block of the stream."""
    blocks = [stream[i:i + 2**20] for i in range(0, len(stream), 2**20)]
    return (b"numerics.fingerprint/2\n"
            + json.dumps({"dtype": dtype, "shape": shape}, separators=(",", ":")).encode()
            + b"\n" + b"".join(xxhash.xxh64(b).intdigest().to_bytes(8, "little") for b in blocks))


@pytest.mark.parametrize("chunk", [1, 300_001, 1 << 22])
def test_fingerprint_blocks_against_xxhash_for_any_chunk(chunk: int) -> None:
    """Several 1 MiB blocks and a short last one, in 1-, 2- and 8-byte elements, and a
    4-bit format (one byte per code); the chunks read never change the digest."""
    rng = np.random.default_rng(5)
    i8 = rng.integers(-128, 128, 3 * 2**20 + 5, dtype=np.int8)
    assert fingerprint(i8, chunk=chunk).digest == hashlib.sha256(
        _preimage("int8", [i8.size], i8.tobytes())).hexdigest()
    bf = rng.integers(0, 2**16, (3, 200_001), dtype=np.uint16)
    assert fingerprint(bf, fmt="bfloat16", chunk=chunk).digest == hashlib.sha256(
        _preimage("bfloat16", [3, 200_001], bf.astype("<u2").tobytes())).hexdigest()
    i64 = rng.integers(-2**63, 2**63, 262_147, dtype=np.int64).astype(">i8")
    assert fingerprint(i64, chunk=chunk).digest == hashlib.sha256(
        _preimage("int64", [i64.size], i64.astype("<i8").tobytes())).hexdigest()
    fp4 = rng.integers(0, 16, 2**20 + 3, dtype=np.uint8)
    assert fingerprint(fp4, fmt="e2m1fn", chunk=chunk).digest == hashlib.sha256(
        _preimage("e2m1fn", [fp4.size], fp4.tobytes())).hexdigest()
    assert fingerprint(np.zeros(0, np.int32)).digest == hashlib.sha256(
        _preimage("int32", [0], b"")).hexdigest()


# ---------------------------------------------------------------- stats of wide integers
def _bit_length_histogram(values: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values:
        if v:
            out[abs(v).bit_length() - 1] = out.get(abs(v).bit_length() - 1, 0) + 1
    return out


def _saturates(x: Fraction, fmt: Format) -> bool:
    """Whether |x| rounds (to nearest-even, unbounded exponent) above fmt's max.

    With no trailing bits (binary8p1, e8m0fnu) a tie between max and the next power of two
    goes to the even *code*: max when its code is even."""
    if fmt.trailing_bits:
        return _rne_unbounded(x, fmt) > fmt.max_exact
    over = Fraction(3, 2) * fmt.max_exact  # halfway from max = 2**e to 2**(e + 1)
    return abs(x) > over or (abs(x) == over and fmt.max_finite_code % 2 == 1)


def test_stats_of_integers_beyond_2_53_are_exact(tmp_path: Path) -> None:
    """Binades, overflow, flush and subnormal counts of int64/uint64 elements are exact:
    float64 would put 2**54 - 1 in binade 54, 2**59 + 1 (scaled) on the flush threshold and
    1.5 * 2**62 + 1 on binary8p1's overflow tie."""
    from numerics.checkpoint import stats_source

    wide = Format(name="e7m52", exponent_bits=7, trailing_bits=52, bias=66)  # max ~ 2**61
    over = int(wide.max_exact) + 2**7  # its overflow threshold, 2**61 - 2**7
    values = [2**63 - 1, -(2**63), 2**54 - 1, -(2**54 - 1), 2**53 + 1, 2**59 + 1, 2**59,
              3 * 2**61 - 1, 3 * 2**61, 3 * 2**61 + 1, over - 1, over, over + 1, 0, 3, -5]
    fmts = tuple(get_format(n) for n in CANDIDATE_FORMATS) + (
        get_format("binary8p1"), get_format("e8m0fnu"), wide)
    x = np.array(values, np.int64)
    np.save(tmp_path / "x.npy", x)
    s = tensor_stats(x, formats=fmts)
    assert dict(s.exponent_histogram) == _bit_length_histogram(values)
    assert (s.count, s.zero, s.amax) == (len(values), 1, 2.0**63)
    n = len(values)
    for fit in s.fits:
        fmt = fit.format
        kept = [v for v in values if fmt.signed or v > 0]
        assert fit.saturate == sum(_saturates(Fraction(v), fmt) for v in kept) / n, fmt.name
        j = fit.scale_log2
        assert j is not None
        scaled = [_rne_unbounded(Fraction(v) * Fraction(2) ** j, fmt) for v in values if v]
        flush = sum(q == 0 for q in scaled) if fmt.subnormals else 0
        sub = sum(0 < q < Fraction(fmt.smallest_normal) for q in scaled) \
            if fmt.subnormals else 0
        assert (fit.flush_to_zero_scaled, fit.subnormal_scaled) == (flush / n, sub / n), \
            fmt.name
        unrep = 0 if fmt.signed else sum(v <= 0 for v in values)
        assert fit.unrepresentable == unrep / n, fmt.name
    # the same figures a chunk at a time from the file
    (t, from_file), = stats_source(tmp_path / "x.npy", formats=fmts, chunk=5).tensors
    assert from_file == s
    u = tensor_stats(np.array([2**64 - 1, 2**63, 2**63 - 1, 1], np.uint64), formats=fmts)
    assert dict(u.exponent_histogram) == {63: 2, 62: 1, 0: 1}


def test_stats_unrepresentable_in_an_unsigned_format() -> None:
    """Zero and negative elements become NaN in e8m0fnu whatever the scale; a negative one
    beyond max counts there only (not in overflow and saturate)."""
    fmts = (get_format("e8m0fnu"), get_format("e4m3fn"))
    x = np.array([-1.0, -2.0, 0.0, -0.0, 1.0, -3e38, 3e38, -500, 500, np.nan, -np.inf])
    with np.errstate(over="ignore"):  # +-3e38 overflow float16 to +-inf
        for values in (x, x.astype(np.float32), x.astype(np.float16),
                       x.astype(ml_dtypes.bfloat16)):
            s = tensor_stats(values, formats=fmts)
            finite = [Fraction(float(v)) for v in np.asarray(values, np.float64)
                      if np.isfinite(v)]
            n = x.size
            for fit in s.fits:
                fmt = fit.format
                kept = [v for v in finite if fmt.signed or v > 0]
                assert fit.saturate == sum(_saturates(v, fmt) for v in kept) / n, values.dtype
                assert fit.overflow == fit.saturate
                unrep = 0 if fmt.signed else sum(v <= 0 for v in finite)
                assert fit.unrepresentable == unrep / n, values.dtype
            assert s.fits[0].saturate in (0.0, 1 / n) and s.fits[0].unrepresentable >= 5 / n
    ints = tensor_stats(np.array([-3, 0, 5, -(2**62)], np.int64), formats=fmts)
    assert ints.fits[0].unrepresentable == 3 / 4 and ints.fits[1].unrepresentable == 0.0


def test_a_bad_candidate_format_names_the_formats_argument(tmp_path: Path) -> None:
    # review: the message said "Got fmt='bogus'" where the argument is formats
    from numerics.checkpoint import stats_source

    with pytest.raises(ValueError, match="Got formats='bogus'"):
        tensor_stats(np.ones(2), formats=("bogus",))
    np.save(tmp_path / "one.npy", np.ones(2))
    with pytest.raises(ValueError, match="Got formats='bogus'"):
        stats_source(str(tmp_path / "one.npy"), formats=("bogus",))


def test_load_tensor_refuses_what_open_source_refuses(tmp_path: Path) -> None:
    # review: a long-double .npy loaded, and values() rounded it to float64 silently; a
    # structured array was read as raw bytes (with fmt=, reinterpreted)
    np.save(tmp_path / "ld.npy", np.array([1, 1 / 3], np.longdouble))
    np.save(tmp_path / "rec.npy", np.zeros(2, [("a", "<f2")]))
    np.savez(tmp_path / "c.npz", c=np.array([1 + 2j]))
    cases = [("rec.npy", "no real numbers"), ("c.npz", "no real numbers")]
    if np.dtype(np.longdouble).itemsize > 8:  # (where it is wider than float64)
        cases.append(("ld.npy", "long double"))
    for name, needle in cases:
        with pytest.raises(TensorFileError, match=needle):
            load_tensor(tmp_path / name)
    with pytest.raises(TensorFileError, match="no real numbers"):
        load_tensor(tmp_path / "rec.npy", fmt="bf16")


def test_a_member_too_big_for_memory_is_a_named_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # review: a compressed member inflating beyond memory (a zip bomb) ended in
    # MemoryError, "internal error" and exit 70 in the CLI
    import zipfile

    np.savez_compressed(tmp_path / "z.npz", w=np.zeros(1000, np.float32))

    read = zipfile.ZipExtFile.read

    def no_memory(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        if n >= 4000:  # (the header's small reads go through)
            raise MemoryError
        return read(self, n)

    monkeypatch.setattr(zipfile.ZipExtFile, "read", no_memory)
    with pytest.raises(TensorFileError, match="4000 bytes of elements do not fit in memory"):
        load_tensor(tmp_path / "z.npz")
