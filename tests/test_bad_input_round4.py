"""Bad-input findings of the fourth audit round in testing, inspection, digits, fingerprint,
quant.IntFormat, probe, hashing, eft and ``fpinspect probe``: one test per finding, each
failing before its fix, each checking that the error names the argument and its value."""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from cli_render import usage_error
from fpinspect.main import build_parser
from hypothesis.errors import InvalidArgument

import numerics.fingerprint  # noqa: F401  (the module; numerics.fingerprint is the function)
from numerics import digits, eft, hashing, inspection, probe
from numerics.probe.verify import MAX_TRIALS
from numerics.quant import IntFormat, TurboQuant, nvfp4, quantize
from numerics.testing import assertions, strategies
from numerics.testing.tolerances import elementwise_bound, gamma, softmax_bound

fp = sys.modules["numerics.fingerprint"]
exhaustive_module = sys.modules["numerics.testing.exhaustive"]


def _grad_tensor() -> Any:
    torch = pytest.importorskip("torch")
    return torch.ones(3, requires_grad=True)


def _sum(x: np.ndarray) -> Any:
    return x.sum()


# ------------------------------------------------- 1. softmax_bound / elementwise_bound intake
def test_1_tolerance_bounds_take_real_numbers_only() -> None:
    # before: complex lost its imaginary part, text/bool/None/datetime were read as numbers,
    # axis=10**30 gave OverflowError, 33 dims a numpy RuntimeError, requires_grad torch's
    for bad, match in [([1 + 5j, 2], "Got x .*complex"), (["1", "2"], "Got x of dtype <U1"),
                       ([True, False], "Got x of dtype bool")]:
        with pytest.raises(TypeError, match=match):
            softmax_bound(bad, "bf16")
    with pytest.raises(TypeError, match=r"Got axis=b'\\x00', but it must be an int"):
        softmax_bound([1.0, 2.0], "bf16", axis=b"\x00")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Got axis=10{30}, .*\[-1, 0\]"):
        softmax_bound([1.0, 2.0], "bf16", axis=10**30)
    with pytest.raises(ValueError, match="Got x with 33 dimensions"):
        softmax_bound(np.zeros((1,) * 33), "bf16")
    with pytest.raises(TypeError, match="Got exp_error='0.1'"):
        softmax_bound([1.0, 2.0], "bf16", exp_error="0.1")  # type: ignore[arg-type]
    day = np.array(["2020-01-01"], "datetime64[D]")
    for bad, match in [(None, "Got exact=None"), (["1.0"], "Got exact of dtype <U3"),
                       (day, "Got exact of dtype datetime64")]:
        with pytest.raises(TypeError, match=match):
            elementwise_bound(bad, "bf16")
    with pytest.raises(TypeError, match="Got scale='1.0'"):
        elementwise_bound([1.0], "bf16", scale="1.0")
    with pytest.raises(ValueError, match=r"Got scale of shape \(3,\), .*exact, \(2,\)"):
        elementwise_bound([1.0, 2.0], "bf16", scale=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="Got u='x', but it must be a finite real number"):
        gamma(2, "x")  # type: ignore[arg-type]
    t = _grad_tensor()
    assert softmax_bound(t, "bf16").tolist() == softmax_bound(np.ones(3), "bf16").tolist()
    assert elementwise_bound(t, "bf16").tolist() == elementwise_bound([1.0] * 3, "bf16").tolist()
    assert elementwise_bound([Fraction(1, 2)], "bf16")[0] == elementwise_bound([0.5], "bf16")[0]


# ------------------------------------------------- 2. inspect_value
def test_2_inspect_value_names_a_value_that_is_not_text_and_the_seed() -> None:
    # before: 1.3, None, ints, Fractions gave AttributeError ('float' has no 'exact');
    # seed=-1 said "Got rng=-1"
    for bad in (1.3, None, 3, Fraction(1, 3), np.ones(2)):
        with pytest.raises(TypeError, match=r"Got value=.* but it must be a str"):
            inspection.inspect_value(bad, "e4m3fn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Got seed=-1, but it must be None or an int >= 0"):
        inspection.inspect_value("1.3", "e4m3fn", rounding="sr", seed=-1)
    with pytest.raises(TypeError, match=r"Got seed=True"):
        inspection.inspect_value("1.3", "e4m3fn", rounding="sr", seed=True)


# ------------------------------------------------- 3. scientific_text
def test_3_scientific_text_checks_digits_value_and_plus() -> None:
    # before: digits=0 or -1 gave '0e+00', 1.5 gave '5', True gave '2', inf ZeroDivisionError,
    # 10**30 hung; np.int8(-1) gave AttributeError; plus='no' wrote a plus sign
    st = inspection.scientific_text
    for bad in (0, -1, 10**30, inspection.MAX_DIGITS + 1):
        with pytest.raises(ValueError, match=rf"Got digits={bad}, but it must be an int in "
                                             r"\[1, 10000\]"):
            st(1.5, bad)
    for bad_digits in (1.5, True, math.inf):
        with pytest.raises(TypeError, match=rf"Got digits={bad_digits!r}"):
            st(1.5, bad_digits)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Got plus='no', expected True or False"):
        st(1.5, plus="no")  # type: ignore[arg-type]
    for bad_value in ("1.5", None, True):
        with pytest.raises(TypeError, match=r"Got value=.* must be a real number"):
            st(bad_value)  # type: ignore[arg-type]
    assert (st(np.int8(-1)), st(np.float32(0.5)), st(Fraction(2, 3), 3)) == ("-1", "0.5", "0.667")
    if np.finfo(np.longdouble).nmant > 52:  # a long double keeps its exact value
        assert st(np.longdouble(1) / 3, 25).startswith("0.33333333333333333")


# ------------------------------------------------- 4. IntFormat
def test_4_int_format_checks_its_fields() -> None:
    # before: IntFormat(bits=3, qmin=-1000, qmax=1000) quantized [1, 2000] to codes [0, 0];
    # bits=None failed deep inside quantize; qmin > qmax gave a misleading message
    with pytest.raises(ValueError, match=r"Got qmin=-1000, but 3-bit .* \[-4, 3\]"):
        IntFormat(name="x", bits=3, qmin=-1000, qmax=1000)
    with pytest.raises(TypeError, match="Got bits=None, but it must be an int"):
        IntFormat(name="x", bits=None, qmin=-1, qmax=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got qmin=5 > qmax=1"):
        IntFormat(name="x", bits=8, qmin=5, qmax=1)
    with pytest.raises(ValueError, match=r"Got bits=9, but it must be an int in \[2, 8\]"):
        IntFormat(name="x", bits=9, qmin=-1, qmax=1)
    with pytest.raises(ValueError, match="Got name=3"):
        IntFormat(name=3, bits=8, qmin=-1, qmax=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Got quantum=0.3, but it must be a power of two"):
        IntFormat(name="x", bits=8, qmin=-1, qmax=1, quantum=0.3)
    with pytest.raises(ValueError, match="qmin <= 0 <= qmax"):
        IntFormat(name="x", bits=8, qmin=1, qmax=5)
    int3 = IntFormat(name="int3", bits=3, qmin=-3, qmax=3)
    assert quantize([1.0, 2.0, -3.0], int3, scaling="tensor").dequantize().tolist() == [
        1.0, 2.0, -3.0]


# ------------------------------------------------- 5. fingerprint
def test_5_fingerprint_checks_shape_canonicalize_and_its_array() -> None:
    # before: shape="bogus", (5,), (2, 2) all gave the 4-element digest; canonicalize="False"
    # canonicalized; requires_grad gave torch's RuntimeError; ragged lists numpy's message
    a = np.array([1, 2, 3, 4], np.int32)
    with pytest.raises(TypeError, match="Got shape='bogus'"):
        fp.fingerprint(a, "bogus")
    with pytest.raises(ValueError, match=r"Got shape=\(5,\) of 5 elements, but chunks holds 4"):
        fp.fingerprint(a, (5,))
    assert fp.fingerprint(a, (2, 2)).digest == fp.fingerprint(a.reshape(2, 2)).digest
    assert fp.fingerprint(a, (2, 2)).digest != fp.fingerprint(a).digest
    with pytest.raises(TypeError, match="Got canonicalize='False', but it must be a bool"):
        fp.fingerprint(np.array([0x8000], np.uint16), fmt="bf16",
                       canonicalize="False")
    with pytest.raises(ValueError, match="Got chunks that is not a rectangular array"):
        fp.fingerprint([[1, 2], [3]])
    torch = pytest.importorskip("torch")
    t = torch.tensor([1, 2, 3], dtype=torch.int32)
    assert fp.fingerprint(t).digest == fp.fingerprint(np.array([1, 2, 3], np.int32)).digest
    with pytest.raises(TypeError, match="Got elements of dtype float32"):
        fp.fingerprint(_grad_tensor())


# ------------------------------------------------- 6. eft intake
def test_6_eft_takes_float64_values_only() -> None:
    # before: requires_grad gave torch's RuntimeError, text numpy's UFuncTypeError; complex,
    # Fraction and bool were computed with
    cases: list[tuple[Any, str]] = [
        (np.array(["a"]), "Got a of dtype <U1"), (1 + 1j, "Got a of dtype complex"),
        (Fraction(1, 3), "Got a of dtype object"), (True, "Got a of dtype bool"),
        (None, "Got a of dtype object")]
    for bad, match in cases:
        with pytest.raises(TypeError, match=match):
            eft.two_sum(bad, np.array([1.0]))
    with pytest.raises(TypeError, match="Got b of dtype bool"):
        eft.two_prod(np.array([1.0]), np.array([True]))
    with pytest.raises(ValueError, match="Got x2 holding integers beyond 2\\*\\*53"):
        eft.three_sum_rne(np.ones(1), np.array([2**60]), np.ones(1))
    s, e = eft.two_sum(_grad_tensor(), [2.0**-60] * 3)
    assert s.tolist() == [1.0] * 3 and e.tolist() == [2.0**-60] * 3


# ------------------------------------------------- 7. unbounded sizes
def test_7_sizes_are_bounded_or_exact() -> None:
    # before: count_representable_integers(bf16, 2**64) MemoryError, 10**30 OverflowError;
    # verify(trials=2**63) ran without end; probe_sum(trials=10**30) numpy's dimension
    # error; describe_tree(inf) OverflowError
    w = hashing.count_representable_integers("bf16", 200)
    assert hashing.count_representable_integers("bf16", 2**64) == w
    assert hashing.count_representable_integers("bf16", 10**30) == w
    with pytest.raises(ValueError, match=rf"Got trials={2**63}, .*\[1, {MAX_TRIALS}\]"):
        probe.verify(_sum, probe.probe_sum(_sum, 2, trials=2), trials=2**63)
    with pytest.raises(ValueError, match=r"Got trials=10{30}, .*\[1, 4096\]"):
        probe.probe_sum(_sum, 4, trials=10**30)
    with pytest.raises(ValueError, match=r"Got n=70000, .*\[2, 65536\]"):
        probe.probe_sum(_sum, 70000, fmt="binary64")
    with pytest.raises(ValueError, match=r"Got batch=5000, .*\[1, 4096\]"):
        probe.verify(_sum, probe.probe_sum(_sum, 2, trials=2), batch=5000)
    with pytest.raises(TypeError, match="Got tree=inf with the node inf"):
        probe.describe_tree(math.inf)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Got tree=\(\(0, 1\), \(0, 1\)\) with the leaf 1 twice"):
        probe.describe_tree(((0, 1), (0, 1)))
    with pytest.raises(ValueError, match=r"its leaves must be 0 \.\. 1"):
        probe.fused_groups((1, 2))


# ------------------------------------------------- 8. fpinspect probe --verify
def test_8_cli_verify_is_bounded_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    # before: --verify 99999999999999999999999 ran without end (only >= 0 was checked)
    for n in ("99999999999999999999999", str(MAX_TRIALS + 1), "-1"):
        err = usage_error(capsys, "probe", "numpy:matmul", "--input", "fp32", "--k", "8",
                          "--verify", n)
        assert f"--verify {n}" in err and f"[0, {MAX_TRIALS}]" in err
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub.choices["probe"]._actions}
    assert f"0 to {MAX_TRIALS}" in str(helps["verify"])


# ------------------------------------------------- 9. probe seeds and rounds
def test_9_probe_seeds_and_rounds_are_checked() -> None:
    # before: seed=-1 gave numpy's unnamed "expected non-negative integer"; seed=True and an
    # empty array were accepted; matmul(rounds=-1 or True) accepted, rounds=None failed deep
    with pytest.raises(ValueError, match="Got seed=-1, but it must be an int >= 0"):
        probe.probe_sum(_sum, 4, seed=-1)
    for bad in (True, np.array([], int), 1.5):
        with pytest.raises(TypeError, match="Got seed="):
            probe.probe_sum(_sum, 4, seed=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got seed=-1"):
        probe.matmul(np.matmul, input_format="binary32", k=4, batch=4, seed=-1)
    for rounds in (-1, True, None, 1025):
        with pytest.raises(ValueError, match=rf"Got rounds={rounds}, .*\[0, 1024\]"):
            probe.matmul(np.matmul, input_format="binary32", k=4, batch=4,
                         rounds=rounds)  # type: ignore[arg-type]


# ------------------------------------------------- 10. option checks with numpy arrays
def test_10_options_given_as_arrays_are_named() -> None:
    # before: "x not in (...)" raised numpy's "truth value of an array is ambiguous" (or
    # accepted a one-element array)
    two, one = np.array(["uint32", "float32"]), np.array(["tensor"])
    with pytest.raises(ValueError, match="Got arithmetic=array"):
        hashing.poly_hash([1], 3, arithmetic=two)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got tensor_scale=array"):
        nvfp4(np.ones(16), tensor_scale=one)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Got tensor_scale=array"):
        quantize(np.ones(16), "nvfp4", tensor_scale=one)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got block_size=array"):
        quantize(np.ones(32), "mxfp8_e4m3", block_size=np.array([32, 32]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got variant=array"):
        TurboQuant(8, 2, variant=np.array(["mse", "prod"]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got nan=array"):
        assertions.assert_ulp_close([1.0], [1.0], fmt="bf16",
                                    nan=np.array(["any", "code"]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got inf=array"):
        assertions.assert_ulp_close([1.0], [1.0], fmt="bf16",
                                    inf=np.array(["ulp", "strict"]))  # type: ignore[arg-type]
    for kwargs in ({"operation": two}, {"algorithm": two}, {"rounding": two}):
        args: dict[str, Any] = {"operation": "sum", "n": 4, "fmt": "bf16", **kwargs}
        with pytest.raises(ValueError, match=f"Got {next(iter(kwargs))}=array"):
            assertions.tolerance_for(**args)
    with pytest.raises(InvalidArgument, match="Got kinds="):
        strategies.formats(kinds=[np.array(["fp8", "fp4"])]).validate()  # type: ignore[list-item]


# ------------------------------------------------- 11. ragged lists in hashing
def test_11_hashing_names_a_ragged_argument() -> None:
    # before: numpy's "inhomogeneous shape" message, naming no argument
    with pytest.raises(ValueError, match="Got tokens that is not a rectangular array"):
        hashing.poly_hash([[1, 2], [3]], 31)
    with pytest.raises(ValueError, match="Got coords that is not a rectangular array"):
        hashing.spatial_hash([[1, 2], [3]], 64)
    with pytest.raises(ValueError, match="Got hashes that is not a rectangular array"):
        hashing.collision_report([[1, 2], [3]], 64)
    assert int(hashing.poly_hash([1, 2, 3], 31)) == 1026


# ------------------------------------------------- 12. digits
def test_12_digit_conversions_check_their_argument_types() -> None:
    # before: text_to_int(None) gave 0 and int_to_text(1.5) gave '1.5'
    with pytest.raises(TypeError, match="Got digits=None"):
        digits.text_to_int(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Got digits='1 2'"):
        digits.text_to_int("1 2")
    for bad in (1.5, True, "12", None):
        with pytest.raises(TypeError, match=rf"Got n={bad!r}"):
            digits.int_to_text(bad)  # type: ignore[arg-type]
    assert digits.int_to_text(np.int64(-120)) == "-120"


# ------------------------------------------------- 13. bool flags
def test_13_bool_flags_are_checked() -> None:
    # before: exhaustive(check="no") checked and exhaustive(progress="yes") failed inside
    # its loop with TypeError "'str' object is not callable"
    def kernel(x: Any) -> Any:
        return x

    with pytest.raises(TypeError, match="Got check='no', expected True or False"):
        exhaustive_module.exhaustive(kernel, "e4m3fn", "e4m3fn", check="no")
    with pytest.raises(TypeError, match="Got progress='yes', expected True, False or a callable"):
        exhaustive_module.exhaustive(kernel, "e4m3fn", "e4m3fn", progress="yes")
    seen: list[tuple[int, int]] = []
    r = exhaustive_module.exhaustive(kernel, "e2m1fn", "e2m1fn", threads=1, check=np.True_,
                                     progress=lambda done, of: seen.append((done, of)))
    assert r.mismatches == 0 and seen[-1] == (16, 16)
