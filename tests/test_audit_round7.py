"""Defects found by the session-56 audits (array contract, testing toolkit, stochastic
rounding, formats, README), each pinned by a test that failed on the code before its fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cli_render import render
from safetensors.numpy import save_file

from numerics import accum, quant
from numerics.formats import as_format


# ------------------------------------------------------------ quantized input kept
@pytest.mark.parametrize("make", [
    lambda y: quant.nvfp4(y),
    lambda y: quant.mx(y, "mxfp4_e2m1"),
    lambda y: quant.quantize(y, "mxfp8_e4m3"),
    lambda y: quant.quantize(y, "e4m3fn"),
])
def test_bound_does_not_follow_a_reused_input_buffer(make: object) -> None:
    """``Quantized.bound`` is computed on first access from the input it keeps: a caller
    that overwrites its own buffer after quantizing must not change it (MX and NVFP4 kept
    the caller's array itself)."""
    x = np.random.default_rng(0).standard_normal(64)
    y = x.copy()
    q = make(y)  # type: ignore[operator]
    y[:] = 0.0
    err = np.abs(q.dequantize() - x)
    assert np.all(err <= q.bound)
    assert np.any(q.bound > 0)  # the bound of x, not of the zeros y now holds


def test_bound_does_not_follow_a_reused_slice() -> None:
    """A view of a larger buffer is copied too."""
    buf = np.random.default_rng(1).standard_normal(96)
    x = buf[32:].copy()
    q = quant.mx(buf[32:], "mxfp8_e4m3")
    buf[:] = 1e30
    assert np.all(np.abs(q.dequantize() - x) <= q.bound)


# ------------------------------------------------------------ dtypes as formats
def test_quantize_takes_an_element_dtype() -> None:
    """The README lets any format argument be a numpy, ml_dtypes or torch dtype."""
    x = np.linspace(-3.0, 3.0, 64)
    by_dtype = quant.quantize(x, ml_dtypes.float8_e4m3fn)
    by_name = quant.quantize(x, "e4m3fn")
    assert by_dtype.element_format == as_format("e4m3fn")
    assert np.array_equal(by_dtype.codes, by_name.codes)


def test_gemm_takes_an_accumulator_dtype() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 8)), rng.standard_normal((8, 3))
    got = accum.gemm(a, b, input_format="bf16", accumulator=np.float32)
    want = accum.gemm(a, b, input_format="bf16", accumulator="binary32")
    assert np.array_equal(got, want)


@pytest.mark.parametrize(("call", "text"), [
    (lambda: quant.quantize(np.ones(4), np.int32),
     "Got element_format=<class 'numpy.int32'>, a dtype with no registered format"),
    (lambda: accum.gemm(np.ones((2, 2)), np.ones((2, 2)), input_format="bf16",
                        accumulator=np.int32),
     "Got accumulator=<class 'numpy.int32'>, a dtype with no registered format"),
    (lambda: as_format(np.dtype(np.int8), arg="scale_format"),
     "Got scale_format=dtype('int8')"),
])
def test_a_dtype_without_a_format_is_named_by_its_argument(call: object, text: str) -> None:
    """The message named ``fmt=`` whatever the argument was called."""
    with pytest.raises(ValueError) as info:
        call()  # type: ignore[operator]
    assert text in str(info.value)


# ------------------------------------------------------------ diff of one-tensor files
@pytest.fixture
def one_tensor_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    x = np.ones(4, np.float32)
    y = x.copy()
    y[1] = np.nextafter(y[1], np.float32(2))
    save_file({"w": x}, "a.safetensors")
    save_file({"w": y}, "b.safetensors")
    save_file({"c": x}, "c.safetensors")
    save_file({"d": x}, "d.safetensors")
    np.save("a.npy", x)
    np.save("b.npy", y)
    return tmp_path


@pytest.mark.usefixtures("one_tensor_files")
@pytest.mark.parametrize(("a", "b", "code"), [
    ("a.safetensors", "b.safetensors", 1),  # checkpoints: bit-equal with no check
    ("a.safetensors", "a.safetensors", 0),
    ("c.safetensors", "d.safetensors", 1),  # matched by name: each on one side only
    ("a.npy", "b.npy", 0),                  # tensors the user chose: reported on only
    ("a.npy", "b.safetensors", 0),
    ("a.safetensors:w", "b.safetensors:w", 0),
])
def test_a_checkpoint_file_holding_one_tensor_is_a_checkpoint(a: str, b: str,
                                                              code: int) -> None:
    """Two one-tensor checkpoints that differ, or whose tensors have other names, exited 0
    (they were paired up as single tensors, with no check)."""
    got, text = render("diff", a, b)
    assert got == code, text
    if (a, b) == ("c.safetensors", "d.safetensors"):
        assert "only in A (1): c" in text and "only in B (1): d" in text
    assert render("diff", a, b, "--max-ulp", "1")[0] == (1 if a[0] == "c" else 0)


def test_the_one_tensor_report_names_entries_left_out(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The detailed report of a one-tensor comparison did not say that the files' other
    entries (strings, complex numbers) were left out, as the checkpoint report does."""
    monkeypatch.chdir(tmp_path)
    np.savez("s.npz", w=np.ones(3, np.float32), s=np.array(["a"]),
             c=np.ones(2, np.complex64))
    code, text = render("diff", "s.npz", "s.npz")
    assert code == 0
    assert "not compared, as not real-number tensors of a readable dtype: A: s, c; B: s, c" in \
        " ".join(text.split())
    doc = json.loads(render("diff", "s.npz", "s.npz", "--json")[1])
    assert any("not real-number tensors of a readable dtype" in n for n in doc["notes"])


@pytest.mark.parametrize("name", ["mxfp4_e2m1", "mxfp8_e4m3", "nvfp4"])
def test_a_block_format_refuses_an_explicit_tensor_scaling(name: str) -> None:
    """``scaling="tensor"`` was the signature's default, so a block format could not tell
    it from no choice and quantized per block silently."""
    x = np.ones(32)
    with pytest.raises(ValueError, match="Got scaling='tensor', but a block format scales"):
        quant.quantize(x, name, scaling="tensor")
    assert quant.quantize(x, name).scheme == name
    assert quant.quantize(x, name, scaling="block").scheme == name


def test_quantize_scaling_default_is_per_tensor() -> None:
    x = np.linspace(-2.0, 2.0, 16)
    a, b = quant.quantize(x, "e4m3fn"), quant.quantize(x, "e4m3fn", scaling="tensor")
    assert a.scheme == b.scheme == "tensor" and np.array_equal(a.codes, b.codes)


@pytest.mark.parametrize("bits", [np.uint8(8), np.uint64(8), np.int16(8)])
def test_quantize_sr_bits_as_a_numpy_integer(bits: int) -> None:
    """``2.0**-sr_bits`` wrapped for a numpy unsigned ``sr_bits`` (``-np.uint8(8)`` is
    248): the dropped fraction truncated to 0 and integer elements never rounded up."""
    x = np.array([127.0] + [0.5] * 4000)  # scale 1: every other element half a quantum
    got = quant.quantize(x, "int8", rounding="sr", rng=0, sr_bits=bits).values[1:]
    want = quant.quantize(x, "int8", rounding="sr", rng=0, sr_bits=8).values[1:]
    assert np.array_equal(got, want) and 0.45 < got.mean() < 0.55


@pytest.mark.parametrize("bits", [0, 53, 64])
def test_quantize_sr_bits_range_is_stated_as_checked(bits: int) -> None:
    with pytest.raises(ValueError, match=r"an int in \[1, 52\]"):
        quant.quantize(np.ones(4), "e4m3fn", rounding="sr", rng=0, sr_bits=bits)


def test_stats_notes_entries_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``stats`` said nothing of a checkpoint's entries that are not real-number tensors
    (``hash`` notes them on stderr, ``ls`` and ``diff`` list them)."""
    from fpinspect.main import main

    monkeypatch.chdir(tmp_path)
    np.savez("s.npz", w=np.ones(3, np.float32), s=np.array(["a"]))
    assert main(["stats", "s.npz"]) == 0
    err = capsys.readouterr().err
    assert err.strip() == ("fpinspect: note: the statistics leave out 1 entries that are "
                           "not real-number tensors of a readable dtype: 's'")
    assert main(["stats", "s.npz:w"]) == 0
    assert capsys.readouterr().err == ""


def test_a_running_sum_in_another_order_is_described_as_one() -> None:
    """The bf16 dot-product chain (each pair's second term first) was called "a binary
    tree of depth 63", hiding that it keeps one running sum."""
    from numerics.probe.order import describe_tree

    tree: Any = (0, 1)
    for i in range(2, 64, 2):
        tree = ((tree, i + 1), i)
    assert describe_tree(tree) == "sequential in the order 0, 1, 3, 2, 5, 4, 7, 6, ..."
    assert describe_tree((2, (1, 0))) == "sequential in the order 1, 0, 2"
    assert describe_tree(((0, (1, 2)), (3, 4))) == "a binary tree of depth 3"


# ------------------------------------------------------------ Q4: SR of x / s, exactly
def _near_draw_inputs(p: int, bits: int, seed: int, n: int, scale: int) -> np.ndarray:
    """Inputs ``x`` whose exact ``x / scale`` lies a hair from where element ``i``'s
    draw flips the rounding (``u / 2**bits`` quanta above a grid point ``t`` of a
    ``p``-bit binade ``[2**(p-1), 2**p)``), with the float64 quotient on the other
    side where a neighbour of ``x`` gives that: the cases a sticky residual gets wrong."""
    from fractions import Fraction

    import sr_stream

    rng = np.random.default_rng(1)
    xs = [0.0]  # (the caller's amax)
    for i in range(1, n):
        u = sr_stream.draw(seed, i, bits)
        t = int(rng.integers(2 ** (p - 1) + 1, 2 ** p - 2))
        x = float((t + Fraction(2 * u + 1, 2 ** (bits + 1))) * scale)
        best = x
        for cand in (x, *np.nextafter(x, [np.inf, -np.inf]).tolist()):
            exact = Fraction(cand) / scale - t
            rounded = Fraction(float(Fraction(cand) / scale)) - t
            if (u < exact * 2**bits) != (u < rounded * 2**bits):
                best = cand
                break
        xs.append(best)
    return np.array(xs)


@pytest.mark.parametrize(("fmt", "p", "sr_bits"), [
    ("binary16", 11, None), ("binary16", 11, 52), ("binary32", 24, None),
    ("binary32", 24, 40), ("bfloat16", 8, None), ("e4m3fn", 4, None),
])
def test_Q4_quantize_sr_uses_the_exact_fraction(fmt: str, p: int, sr_bits: int | None) -> None:
    """Claim Q4: element ``i`` rounds up iff its draw ``u < frac * 2**k`` (``sr_bits =
    k``: ``u < floor(frac * 2**k)``), ``frac`` the exact fraction of ``x / s``.  The
    float64 quotient and the sign of its remainder decided it before, which is exact
    only for ``k <= 53 - p``: about a fifth of these inputs came out wrong."""
    import math
    from fractions import Fraction

    import sr_stream

    seed, scale, bits = 99, 3, 64 if sr_bits is None else sr_bits
    e_max = float(quant.quantize(np.ones(1), fmt).element_format.max)
    xs = _near_draw_inputs(p, bits, seed, 400, scale)
    xs[0] = e_max * scale  # the scale: amax / max = 3 exactly
    q = quant.quantize(xs, fmt, rounding="sr", rng=seed, sr_bits=sr_bits)
    assert float(np.asarray(q.scales).ravel()[0]) == scale
    values = np.asarray(q.values, dtype=np.float64)
    for i in range(1, xs.size):  # (quotients in [2**(p-1), 2**p): the quantum is 1)
        y = Fraction(xs[i]) / scale
        t = math.floor(y)
        u = sr_stream.draw(seed, i, bits)
        frac = (y - t) * 2**bits
        up = u < frac if sr_bits is None else u < math.floor(frac)
        assert values[i] == t + up, (i, float(y), u)


@pytest.mark.parametrize("sr_bits", [None, 50, 47])
def test_Q4_int8_sr_uses_the_exact_fraction(sr_bits: int | None) -> None:
    """Claim Q4 for integer elements: ``u < frac * 2**53`` with 53-bit draws (``sr_bits =
    k``: ``u < floor(frac * 2**k)``), ``frac`` exact; the float64 quotient's fraction
    was off by up to ``2**-46`` quanta for int8."""
    import math
    from fractions import Fraction

    import sr_stream

    seed, scale, bits = 7, 3, 53 if sr_bits is None else sr_bits
    xs = _near_draw_inputs(7, bits, seed, 400, scale)  # quotients in [64, 128)
    xs[0] = 127.0 * scale
    q = quant.quantize(xs, "int8", rounding="sr", rng=seed, sr_bits=sr_bits)
    assert float(np.asarray(q.scales).ravel()[0]) == scale
    values = np.asarray(q.values, dtype=np.float64)
    for i in range(1, xs.size):
        y = Fraction(xs[i]) / scale
        t = math.floor(y)
        u = sr_stream.draw(seed, i, bits)
        frac = (y - t) * 2**bits
        up = u < frac if sr_bits is None else u < math.floor(frac)
        assert values[i] == min(t + up, 127), (i, float(y), u)


def test_Q4_scale_sr_uses_the_exact_fraction() -> None:
    """Claim Q4 for the scales: ``scale_rounding="sr"`` rounds ``amax / max_elem`` (here
    ``/ 448``, e4m3fn) with scale ``j``'s 64-bit draw from its own stream, on the exact
    fraction (it used the float64 quotient's, with the sign of its remainder)."""
    import math
    from fractions import Fraction

    import sr_stream

    from numerics.quant._core import scale_stream

    seed, emax = 11, 448
    xs = _near_draw_inputs(11, 64, scale_stream(seed), 300, emax)  # binary16 scales
    xs[0] = 1024.0 * emax
    q = quant.quantize(xs, "e4m3fn", scaling="block", block_size=1, scale_format="binary16",
                       scale_rounding="sr", rng=seed)
    scales = np.asarray(q.scales, dtype=np.float64)
    for j in range(xs.size):
        y = Fraction(xs[j]) / emax  # in [1024, 2048): binary16's quantum is 1
        t = math.floor(y)
        up = sr_stream.draw(scale_stream(seed), j, 64) < (y - t) * 2**64
        assert scales[j] == t + up, (j, float(y))


# ------------------------------------------------------------ user formats
_ONE_MAGNITUDE = [
    dict(name="x", exponent_bits=1, trailing_bits=0, bias=0, infinity="TOP", nan="NONE"),
    dict(name="u", exponent_bits=1, trailing_bits=0, bias=0, signed=False, infinity="NONE",
         nan="TOP"),
    dict(name="z", exponent_bits=1, trailing_bits=0, bias=-2, infinity="TOP", nan="NONE"),
]


@pytest.mark.parametrize("kw", _ONE_MAGNITUDE, ids=lambda kw: kw["name"])
def test_a_format_without_zero_of_one_magnitude_is_a_format(kw: dict) -> None:
    """Without subnormals code 0 is ``2**emin``, a finite value: such a format was refused
    as having "no finite non-zero value".  It is checked here against the exact
    references as every user format is (codes, every mode, next_up/down, ops)."""
    import test_user_formats

    from numerics import Format
    from numerics.formats import Infinity, NaNEncoding

    fmt = Format(**{**kw, "infinity": Infinity[kw["infinity"]], "nan": NaNEncoding[kw["nan"]],
                    "subnormals": False})
    assert fmt.max == fmt.smallest_normal == 2.0 ** -kw["bias"]  # exponent field 0
    for seed in range(2):
        inner = test_user_formats.test_user_format_against_the_references.hypothesis  # type: ignore[attr-defined]
        inner.inner_test(fmt=fmt, seed=seed)


def test_a_format_with_zero_alone_is_refused_and_a_bad_bias_named() -> None:
    from numerics import Format
    from numerics.formats import Infinity, NaNEncoding

    with pytest.raises(ValueError, match="has no finite non-zero value"):
        Format(name="w", exponent_bits=1, trailing_bits=0, bias=0, infinity=Infinity.TOP,
               nan=NaNEncoding.NONE)
    with pytest.raises(ValueError, match=r"Got bias=2000: format 'b' would have the "
                                         r"exponent range \[-1999, -1986\]"):
        Format(name="b", exponent_bits=4, trailing_bits=3, bias=2000)


# ------------------------------------------------------------ the testing toolkit
def test_TOL3_bound_is_infinite_where_the_work_value_may_overflow() -> None:
    """TOL3: the cast sees the work value, up to ``(1 + g)|y|``: 23 * 2848 = 65504 is
    binary16's max, but its bfloat16 rounding, 65536, overflows the cast to binary16 (a
    correct kernel broke the finite bound the check on ``|y|`` alone gave)."""
    from numerics.testing import elementwise_bound

    work = (np.float32(23.0) * np.float32(2848.0)).astype(ml_dtypes.bfloat16)
    with np.errstate(over="ignore"):
        got = float(work.astype(np.float16))
    assert got == np.inf
    b = elementwise_bound([65504.0], "binary16", work_roundings=1, work_fmt="bfloat16")
    assert b.tolist() == [np.inf]  # nothing finite promised where the cast may overflow
    # far from max the bound stays finite
    assert np.isfinite(elementwise_bound([60000.0], "binary16", work_roundings=1,
                                         work_fmt="bfloat16")).all()


def test_the_histogram_bins_a_distance_by_its_exact_value() -> None:
    """0.5 + 1.28e-38 ulp failed max_ulp=0.5 but was counted in the bin (0, 0.5]."""
    from fractions import Fraction

    from numerics.testing import assert_ulp_close

    ref = np.array([Fraction(1) + Fraction(1, 256) + Fraction(1, 10**40)], dtype=object)
    with pytest.raises(AssertionError) as info:
        assert_ulp_close(np.array([1.0]).astype(ml_dtypes.bfloat16), ref, fmt="bfloat16",
                         max_ulp=0.5)
    hist = str(info.value).split("ulp distances over all 1 elements:")[1]
    assert "(0.5, 1]  1" in hist and "(0, 0.5]" not in hist


@pytest.mark.parametrize("element", [
    "1.5", True, 2**64 - 1, "fraction", "tie",
])
def test_arrays_refuse_elements_float64_would_round(element: object) -> None:
    """Elements that are not floats were rounded through float64 before the format's
    check: a Fraction a hair above 1 came out as 1, an exact tie as a value."""
    from fractions import Fraction

    import hypothesis.strategies as st
    from hypothesis import find
    from hypothesis.errors import InvalidArgument

    from numerics.testing import strategies as ns

    elements = {"fraction": st.just(Fraction(1) + Fraction(1, 2**60)),
                "tie": ns.ties("binary64", exact=True)}.get(str(element), st.just(element))
    with pytest.raises(InvalidArgument, match="Got an element"):
        find(ns.arrays("bfloat16" if element != "tie" else "binary64", 2, elements=elements),
             lambda a: True)


def test_arrays_take_exact_non_floats_and_numpy_int_shapes() -> None:
    from fractions import Fraction

    import hypothesis.strategies as st
    from hypothesis import find

    from numerics.testing import strategies as ns

    elements: Any = st.just(Fraction(3, 2))
    a = find(ns.arrays("bfloat16", np.int64(3), elements=elements), lambda a: True)
    assert a.shape == (3,) and a.tolist() == [1.5] * 3
    assert find(ns.code_arrays("e4m3fn", (np.int32(2), 2)), lambda a: True).shape == (2, 2)


def test_a_torch_bool_tensor_is_refused_as_a_numpy_one() -> None:
    torch = pytest.importorskip("torch")
    from numerics.testing import assert_ulp_close, assert_within_bound

    for call in (lambda: assert_ulp_close(torch.tensor([True]), [1.0], fmt="binary32"),
                 lambda: assert_within_bound(torch.tensor([True]), [1.0], [0.0]),
                 lambda: assert_ulp_close(np.array([True]), [1.0], fmt="binary32")):
        with pytest.raises(TypeError, match="Got actual of dtype bool"):
            call()
