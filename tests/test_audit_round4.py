"""Findings of the fourth round of outside audits (bad input, checkpoints, accum, the
codec's intake), one test each; each failed before its fix.  The ops findings are in
tests/test_ops_sr_exact.py and tests/test_ops.py."""

from __future__ import annotations

import itertools
import json
import struct
import zipfile
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import numerics
from numerics import accum, quant
from numerics.accum.blockscaled import dequantized_gemm
from numerics.checkpoint import coarser, diff_sources, open_source, stats_source
from numerics.codec import encode_exact
from numerics.compare import compare_codes, compare_read, ulp_bucket_label
from numerics.stats import tensor_stats
from numerics.tensors import TensorFileError, load_tensor, read_npy, safetensors_entries
from numerics.threads import ordered_map
from numerics.ulp import ordinal


# ------------------------------------------------------------------- bounded chunk maps
@pytest.mark.parametrize("which", ["tensor_stats", "compare_read"])
def test_a_short_reader_stops_a_huge_count_at_once(which: str) -> None:
    """Before: every chunk's task was created before the first error came back, so a
    count of 2**50 ran without end (2**40 took 16 s)."""
    calls = []

    def read(start: int, stop: int) -> np.ndarray:
        calls.append(start)
        return np.zeros(4, np.float32 if which == "tensor_stats" else np.uint8)

    with pytest.raises(ValueError, match="Got 4 elements from"):
        if which == "tensor_stats":
            tensor_stats(read, 2**50)
        else:
            compare_read(read, read, (2**50,), "e4m3fn")
    assert len(calls) <= 2 * 2 * numerics.get_num_threads() + 2


def test_ordered_map_takes_an_endless_iterable() -> None:
    """What tensor_stats and compare_read run their chunks on: at most 2 * threads in
    flight, in order, the first error raised at its turn."""
    squares = ordered_map(lambda i: i * i, itertools.count(), 2)
    assert [next(squares) for _ in range(5)] == [0, 1, 4, 9, 16]
    squares.close()  # type: ignore[attr-defined]

    def fail_at_3(i: int) -> int:
        if i == 3:
            raise KeyError(i)
        return i

    seen = []
    with pytest.raises(KeyError):
        for i in ordered_map(fail_at_3, itertools.count(), 2):
            seen.append(i)
    assert seen == [0, 1, 2]


def test_tensor_stats_refuses_a_size_for_an_array() -> None:
    # before: ignored
    with pytest.raises(ValueError, match="Got size='bogus'"):
        tensor_stats(np.ones(4), "bogus")  # type: ignore[arg-type]


# ------------------------------------------------------------------- codec intake
def test_encode_exact_bounds_sr_bits() -> None:
    # before: 2**63 MemoryError, 10**30 OverflowError, 65 accepted, "bogus" with rne ignored
    for bad in (0, 65, 2**63, 10**30, 1.5, True):
        with pytest.raises(ValueError, match=rf"Got sr_bits={bad!r}"):
            encode_exact(1.3, "e4m3fn", rounding="sr", uniform=0.5,
                         sr_bits=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got sr_bits='bogus'"):
        encode_exact(1.3, "e4m3fn", sr_bits="bogus")  # type: ignore[arg-type]
    assert encode_exact(1.3, "e4m3fn", rounding="sr", uniform=0.5, sr_bits=np.int64(8)) \
        == encode_exact(1.3, "e4m3fn", rounding="sr", uniform=0.5, sr_bits=8)


def test_ml_dtypes_scalars_are_numpy_scalars_everywhere() -> None:
    # before: parts and encode_exact refused them ("expected ... numpy scalar")
    p = numerics.parts(ml_dtypes.bfloat16(1.5), "bfloat16")
    assert p.code == 0x3FC0
    assert encode_exact(ml_dtypes.bfloat16(-0.0), "bfloat16") == 0x8000
    assert encode_exact(ml_dtypes.float8_e4m3fn(-2), "e4m3fn") == 0xC0


def test_compare_and_ulp_name_ragged_and_bad_arguments() -> None:
    # before: numpy's "inhomogeneous shape" without the argument; AttributeError
    with pytest.raises(ValueError, match="Got b that is not a rectangular array"):
        compare_codes(np.zeros((2, 2), np.uint8), [[1, 2], [3]],  # type: ignore[arg-type]
                      "e4m3fn")
    with pytest.raises(ValueError, match="Got codes that is not a rectangular array"):
        ordinal([[1, 2], [3]], "e4m3fn")
    for low, high in ((1, float("inf")), (3, 2), (-1, 0), ("1", 2)):
        with pytest.raises(ValueError, match="Got low="):
            ulp_bucket_label(low, high)  # type: ignore[arg-type]


# ------------------------------------------------------------------- accum
def test_accum_refuses_booleans() -> None:
    # before: sum([True, True, False]) was 2, dot(True, [1, 2]) was 3
    with pytest.raises(TypeError, match="Got x of booleans"):
        accum.sum([True, True, False], "bfloat16")
    with pytest.raises(TypeError, match="Got x of booleans"):
        accum.dot(True, [1.0, 2.0], "bfloat16")


def test_accum_refuses_options_its_algorithm_does_not_take() -> None:
    # before: ignored
    with pytest.raises(ValueError, match="only algorithm='tree'"):
        accum.sum(np.ones(4), "bfloat16", tree=((0, 1), (2, 3)))
    with pytest.raises(ValueError, match="only algorithm='ring'"):
        accum.sum(np.ones(4), "bfloat16", algorithm="pairwise", ring_order=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="block_size=8 with algorithm='kahan'"):
        accum.sum(np.ones(4), "bfloat16", algorithm="kahan", block_size=8)
    with pytest.raises(ValueError, match="promote_fmt='binary16' with algorithm='pairwise'"):
        accum.dot(np.ones(4), np.ones(4), "bfloat16", algorithm="pairwise",
                  promote_fmt="binary16")
    with pytest.raises(ValueError, match="confidence=0.5 with bound_kind='worst'"):
        accum.sum(np.ones(4), "bfloat16", confidence=0.5)
    assert accum.sum(np.ones(4), "bfloat16", algorithm="pairwise", block_size=2).value == 4
    assert accum.sum(np.ones(4), "bfloat16", bound_kind="probabilistic",
                     confidence=0.5).value == 4


@pytest.mark.parametrize("rounding", ["rtz", "sr", "ru"])
def test_probabilistic_bound_with_one_significant_bit_is_infinite(rounding: str) -> None:
    # before: ZeroDivisionError (u = 1 in Higham and Mary's 1 / (1 - u))
    r = accum.sum(np.array([1.0, 2.0, 4.0]), "binary8p1", rounding=rounding, rng=1,
                  bound_kind="probabilistic")
    assert np.isinf(r.bound)


def test_dequantized_gemm_checks_c() -> None:
    # before: complex C lost its imaginary part, text and dates were numbers, True was 1
    a = quant.mx(np.full((1, 32), 1.5), "mxfp8_e4m3", axis=1)
    b = quant.mx(np.full((32, 1), 2.0), "mxfp8_e4m3", axis=0)
    assert dequantized_gemm(a, b, 1.0).tolist() == [[97.0]]
    for bad in (np.array([[1 + 5j]]), ["1.0"], np.array(["2020-01-01"], "datetime64[D]"), True):
        with pytest.raises(TypeError, match="Got C"):
            dequantized_gemm(a, b, bad)
    with pytest.raises(ValueError, match="must broadcast to"):
        dequantized_gemm(a, b, np.ones(3))


def test_torch_tensors_that_require_grad_are_read() -> None:
    torch = pytest.importorskip("torch")
    t = torch.ones(3, requires_grad=True)
    assert numerics.dtypes.as_exact_array(t).tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------- tensor files
def test_readers_refuse_an_int_path(tmp_path: Path) -> None:
    # before: an int was a file descriptor: read, then closed
    with pytest.raises(TypeError, match="Got path=3"):
        read_npy(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Got path=3"):
        safetensors_entries(3)  # type: ignore[arg-type]


def _safetensors(path: Path, header: bytes, data: bytes) -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_safetensors_headers_that_the_reference_reader_refuses(tmp_path: Path) -> None:
    data = np.arange(6, dtype=np.float32).tobytes()
    entry = {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}
    overlap = json.dumps({"a": entry, "b": {**entry, "data_offsets": [8, 20]}}).encode()
    with pytest.raises(TensorFileError, match="'a' and 'b' .* overlap"):
        safetensors_entries(str(_safetensors(tmp_path / "o.safetensors", overlap, data)))
    dup = (b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, '
           b'"a": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]}}')
    with pytest.raises(TensorFileError, match="holds the key 'a' twice"):
        open_source(str(_safetensors(tmp_path / "d.safetensors", dup, data)))


def test_corrupt_npy_headers_are_file_errors(tmp_path: Path) -> None:
    # before: tokenize's TokenError and a TypeError escaped (fpinspect: exit 70)
    np.save(tmp_path / "k.npy", np.arange(3.0))
    head = (tmp_path / "k.npy").read_bytes()
    for name, bad in (("unbalanced", head.replace(b"(3,)", b"(3, ")),
                      ("bytes_key", head.replace(b", 'shape'", b",b'shape'", 1))):
        (tmp_path / f"{name}.npy").write_bytes(bad)
        with pytest.raises(TensorFileError, match="not a readable .npy file"):
            open_source(str(tmp_path / f"{name}.npy"))
        with zipfile.ZipFile(tmp_path / f"{name}.npz", "w") as z:
            z.writestr("x.npy", bad)
        with pytest.raises(TensorFileError, match="Got member 'x'"):
            open_source(str(tmp_path / f"{name}.npz"))


def _patched_zip(src: bytes, *, method: int | None = None, flag: int = 0) -> bytes:
    """The zip with every local and central header's compression method or flag bits
    changed (Deflate64 is method 9; flag bit 0 is encryption)."""
    out = bytearray(src)
    for sig, method_at, flag_at in ((b"PK\x03\x04", 8, 6), (b"PK\x01\x02", 10, 8)):
        i = out.find(sig)
        while i >= 0:
            if method is not None:
                out[i + method_at:i + method_at + 2] = struct.pack("<H", method)
            old = struct.unpack("<H", out[i + flag_at:i + flag_at + 2])[0]
            out[i + flag_at:i + flag_at + 2] = struct.pack("<H", old | flag)
            i = out.find(sig, i + 4)
    return bytes(out)


def test_npz_members_zipfile_cannot_read_are_file_errors(tmp_path: Path) -> None:
    # before: NotImplementedError / RuntimeError escaped (exit 70)
    np.savez_compressed(tmp_path / "r.npz", a=np.arange(10.0))
    raw = (tmp_path / "r.npz").read_bytes()
    (tmp_path / "deflate64.npz").write_bytes(_patched_zip(raw, method=9))
    (tmp_path / "encrypted.npz").write_bytes(_patched_zip(raw, flag=1))
    for name in ("deflate64", "encrypted"):
        with pytest.raises(TensorFileError, match="Got member 'a'"):
            src = open_source(str(tmp_path / f"{name}.npz"))
            src.tensors[0].read()


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_float8_e5m2_in_an_npz_is_raw_bytes(tmp_path: Path, save: object) -> None:
    """np.save writes '<f1' for float8_e5m2, which numpy cannot read back; a .npy was read
    as raw bytes already, an .npz made every tensor of the file unreachable."""
    x = np.array([1, 2, -3], ml_dtypes.float8_e5m2)
    save(tmp_path / "m.npz", x=x, w=np.ones(2, np.float32))  # type: ignore[operator]
    src = open_source(str(tmp_path / "m.npz"))
    assert [(t.name, t.dtype_name) for t in src.tensors] == [("w", "binary32"), ("x", "|V1")]
    ref = src.with_raw_format(numerics.get_format("e5m2"))["x"]
    assert ref.read().tolist() == x.view(np.uint8).tolist()
    t = load_tensor(tmp_path / "m.npz", key="x", fmt="e5m2")
    assert np.asarray(t.array).tolist() == x.view(np.uint8).tolist()


def test_load_tensor_checks_every_option(tmp_path: Path) -> None:
    # before: fmt="bogus" was ignored for a float32 file; an array key leaked numpy's message
    np.save(tmp_path / "w.npy", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="bogus"):
        load_tensor(tmp_path / "w.npy", fmt="bogus")
    with pytest.raises(TypeError, match="Got key=array"):
        load_tensor(tmp_path / "w.npy", key=np.array(["a", "b"]))  # type: ignore[arg-type]


def test_a_bare_torch_tensor_is_named_after_its_file(tmp_path: Path) -> None:
    # before: named '', so a folder of activation dumps could not be opened at all
    torch = pytest.importorskip("torch")
    (tmp_path / "bare").mkdir()
    torch.save(torch.ones(3), tmp_path / "bare" / "a.pt")
    torch.save(torch.zeros(3), tmp_path / "bare" / "b.pt")
    assert open_source(str(tmp_path / "bare")).names == ("a", "b")


def test_checkpoint_options(tmp_path: Path) -> None:
    # before: chunk=None and formats=None failed deep inside; np.int64 chunk was refused;
    # coarser of a name raised AttributeError
    np.save(tmp_path / "w.npy", np.ones(8, np.float32))
    path = str(tmp_path / "w.npy")
    with pytest.raises(ValueError, match="Got chunk=None"):
        stats_source(path, chunk=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got chunk=None"):
        diff_sources(path, path, chunk=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Got formats=None"):
        stats_source(path, formats=None)  # type: ignore[arg-type]
    assert stats_source(path, chunk=np.int64(3)) == stats_source(path)
    assert coarser("binary32", "bf16").name == "bfloat16"


def test_tensor_files_are_read_from_absolute_paths(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # before: a relative path was resolved by whoever read it, so a worker (or a later
    # chdir) read another file
    np.save(tmp_path / "w.npy", np.ones(8, np.float32))
    monkeypatch.chdir(tmp_path)
    ref = open_source("w.npy").tensors[0]
    assert ref.file == "w.npy" and ref.root == str(tmp_path)  # messages name it as given
    monkeypatch.chdir("/")
    assert ref.read().tolist() == [1.0] * 8


def test_masked_arrays_are_refused_not_unmasked() -> None:
    """np.asarray drops a mask: before, ops, encode, accum and tensor_stats computed on the
    hidden values without a word."""
    x = np.ma.masked_array([1.0, 1e30], [False, True])
    for call in (lambda: numerics.encode(x, "bfloat16"),
                 lambda: numerics.ops.add(x, 1.0, "binary32"),
                 lambda: accum.sum(x, "bfloat16"),
                 lambda: tensor_stats(x)):
        with pytest.raises(TypeError, match="as a masked array"):
            call()


# ------------------------------------------------------------------- second audits: quant,
# hashing, the testing toolkit
def test_nvfp4_with_zero_experts_is_empty() -> None:
    # before: numpy's "cannot reshape array of size 0 into shape (0,newaxis)"
    assert quant.nvfp4(np.ones((0, 2, 16)), tensor_scale="expert").codes.shape == (0, 2, 16)


def test_mx_and_nvfp4_name_void_and_structured_input() -> None:
    # before: numpy's own "setting an array element with a sequence" / cast errors
    structured = np.zeros(32, [("a", "<f4"), ("b", "<f4")])
    for call in (lambda: quant.mx(np.zeros(32, "V2"), "mxfp8_e4m3"),
                 lambda: quant.mx(structured, "mxfp4_e2m1"),
                 lambda: quant.nvfp4(structured[:16])):
        with pytest.raises(TypeError, match="Got x of dtype"):
            call()


def test_byte_hashes_refuse_masked_arrays() -> None:
    # before: the hidden bytes were hashed, so equal masked keys hashed differently
    from numerics.hashing import fnv1a32, murmur3_32, xxh32

    a = np.ma.masked_array(np.array([[7, 1, 2, 3]], np.uint8), mask=[[True, False, False, False]])
    for h in (fnv1a32, murmur3_32, xxh32):
        with pytest.raises(TypeError, match="Got data as a masked array"):
            h(a)


def test_emulated_hashes_name_huge_integers_and_take_empty_lists() -> None:
    # before: "dtype=object, but it must hold integers" for an integer out of range, and
    # "dtype=float64" for an empty list (the int64 array gave 0)
    from numerics.hashing import collision_report, poly_hash, spatial_hash

    with pytest.raises(ValueError, match=f"Got coords containing {2**70}"):
        spatial_hash([[2**70, 1]], 16)
    with pytest.raises(ValueError, match=f"Got tokens containing {2**64}"):
        poly_hash([2**64], 3)
    with pytest.raises(ValueError, match=f"Got hashes containing {2**70}"):
        collision_report([2**70], 16)
    assert int(poly_hash([], 3)) == int(poly_hash(np.array([], np.int64), 3)) == 0


def test_torch_tensors_with_the_negative_bit_are_read() -> None:
    # before: torch's "Can't call numpy() on Tensor that has negative bit set"
    torch = pytest.importorskip("torch")
    from numerics.testing import assert_ulp_close

    im = torch.tensor([1 + 2j, 3 - 4j]).conj().imag  # float32 with the negative bit
    assert_ulp_close(im, torch.tensor([-2.0, 4.0]))
    neg = torch._neg_view(torch.tensor([1.5], dtype=torch.bfloat16))
    assert int(numerics.encode(neg, "bfloat16")[0]) == 0xBFC0


def test_ulp_report_shows_why_half_an_ulp_fails() -> None:
    """Before: '0.5 ulp' for a distance of 0.5 + 2**-23, and a desired column holding the
    float64 rounding of a Fraction reference, a tie that looks like a pass."""
    from numerics.testing import assert_ulp_close

    one = np.array([1.0], ml_dtypes.bfloat16)
    with pytest.raises(AssertionError, match=r"worst: 0\.5000001192092896 ulp"):
        assert_ulp_close(one, np.array([1 + 2**-8 + 2**-30]), max_ulp=0.5)
    with pytest.raises(AssertionError, match=r"1\.00390625 \+ 8\.67e-19"):
        assert_ulp_close(one, [Fraction(1) + Fraction(1, 256) + Fraction(1, 2**60)],
                         fmt="bf16", max_ulp=0.5)


def test_an_overflow_to_inf_is_within_half_an_ulp_with_inf_ulp() -> None:
    """inf='ulp': an infinity stands for every value from one step beyond max on, so a
    correctly rounded overflow passes max_ulp=0.5 (before: 2.92e4 ulp for 1e6)."""
    from numerics.testing import assert_ulp_close

    for ref in (np.array([1e6]), np.array([65520.0]), [Fraction(65520) + Fraction(1, 2**70)]):
        assert_ulp_close(np.array([np.inf], np.float16), ref, fmt="binary16", max_ulp=0.5,
                         inf="ulp")
    # a whole step beyond max and on: inf is exact
    assert_ulp_close(np.array([np.inf], np.float16), np.array([1e6]), fmt="binary16", max_ulp=0,
                     inf="ulp")
    with pytest.raises(AssertionError, match=r"0\.53125"):  # 65519 rounds to max
        assert_ulp_close(np.array([np.inf], np.float16), np.array([65519.0]), fmt="binary16",
                         max_ulp=0.5, inf="ulp")
    with pytest.raises(AssertionError):  # the other sign is far
        assert_ulp_close(np.array([np.inf], np.float16), np.array([-1e6]), fmt="binary16",
                         max_ulp=0.5, inf="ulp")
    with pytest.raises(AssertionError, match="inf vs finite"):  # strict stays strict
        assert_ulp_close(np.array([np.inf], np.float16), np.array([1e6]), fmt="binary16",
                         max_ulp=0.5)


def test_accum_rounds_sums_near_binary64s_top_in_wide_user_formats() -> None:
    """Before: the rounding constant 1.5 * 2**(k + 52) overflowed for k > 970, so a sum
    near 2**1000 in a binary64-range format with few trailing bits came back unrounded
    (1.821559114116587e+301, not a value of the format)."""
    from numerics import Format, ops, round_to

    f = Format(name="e11m20", exponent_bits=11, trailing_bits=20, bias=1023)
    a, b = -5.313726019730359e+295, 1.8215644278426067e+301
    s = float(np.asarray(accum.sum(np.array([a, b]), f).value))
    assert s == float(ops.add(a, b, f)) == 1.8215593184914143e+301
    assert float(round_to(s, f)) == s
    rng = np.random.default_rng(0)
    x = np.asarray(round_to(rng.standard_normal(64) * 2.0**1000, f), np.float64)
    for algorithm in ("recursive", "pairwise", "kahan"):
        got = np.asarray(accum.sum(x, f, algorithm=algorithm).value, np.float64)
        assert float(round_to(got, f)) == float(got), algorithm


def test_finfo_epsneg_where_the_value_below_one_is_zero() -> None:
    # before: 2.0 (the subnormal spacing) for a format whose values near 1 are 0, 2, 4, ...
    from numerics import Format, finfo

    assert finfo(Format(name="x", exponent_bits=4, trailing_bits=3, bias=-3)).epsneg == 1.0
    assert finfo(Format(name="y", exponent_bits=4, trailing_bits=3, bias=-1)).epsneg \
        == 2.0**-1  # emin 2, spacing 2**-1: 1 is a value, 0.5 below it
