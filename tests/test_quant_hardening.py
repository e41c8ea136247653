"""Issue 13 (hardening) and issue 16 item 2 (NaN sign) items of numerics.quant, one test per
item; each failed before its fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numerics import encode
from numerics.formats import get_format
from numerics.quant import (
    TurboQuant,
    deepseek_fp8,
    element_bound,
    mx,
    nvfp4,
    pack,
    quantize,
    unpack,
)


# ---------------------------------------------------------------------------------------------
# issue 13, item 4: rounding names are validated
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rounding", ["RNE", "nearest", ""])
def test_element_bound_rejects_unknown_rounding_names(rounding: str) -> None:
    """"RNE" used to be read as a directed mode (0.125 where "rne" gives 0.0625)."""
    with pytest.raises(ValueError, match=f"rounding={rounding!r}"):
        element_bound(np.ones(2), np.ones(2), get_format("e4m3fn"), rounding=rounding)


@pytest.mark.parametrize("rounding", [None, {}, np.array(["rne"])])
def test_element_bound_rejects_non_string_rounding(rounding: Any) -> None:
    with pytest.raises(TypeError, match="rounding"):
        element_bound(np.ones(2), np.ones(2), get_format("e4m3fn"), rounding=rounding)


def test_element_bound_rejects_unknown_overflow() -> None:
    with pytest.raises(ValueError, match="overflow='clip'"):
        element_bound(np.ones(2), np.ones(2), get_format("e4m3fn"), overflow="clip")


# ---------------------------------------------------------------------------------------------
# issue 13: a format given as a name; huge Python ints
# ---------------------------------------------------------------------------------------------
def test_element_bound_takes_a_format_name() -> None:
    """AttributeError before: the name was used as a Format."""
    by_name = element_bound(np.array([1.1, 300.0]), np.ones(2), "e4m3fn")
    by_format = element_bound(np.array([1.1, 300.0]), np.ones(2), get_format("e4m3fn"))
    np.testing.assert_array_equal(by_name, by_format)
    assert element_bound(np.array([3.0]), 1.0, "int8").tolist() == [0.5]
    with pytest.raises(ValueError, match="fmt='e9m9'"):
        element_bound(np.ones(2), 1.0, "e9m9")


def test_element_bound_of_a_huge_int_is_inf_not_overflow_error() -> None:
    """OverflowError before: 10**400 has no float64; no finite bound is promised there."""
    assert element_bound(10**400, 1.0, "e4m3fn").tolist() == float("inf")
    assert element_bound([10**400, -(10**400), 2], 1.0, "int8").tolist()[:2] == [np.inf] * 2
    assert np.isinf(element_bound(1.0, 10**400, "e4m3fn"))
    with pytest.raises(TypeError, match="x"):
        element_bound(["a"], 1.0, "e4m3fn")
    with pytest.raises(ValueError, match="negative scale"):
        element_bound(1.0, -1.0, "e4m3fn")


# ---------------------------------------------------------------------------------------------
# issue 13, item 5: TurboQuant norms with scaling
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [1e155, 1e-200, 1e-310, -3e300])
def test_T6_turboquant_norms_are_scaled_not_inf_or_zero(value: float) -> None:
    """1e155 gave norm inf and an infinite dequantization; 1e-200 gave norm 0 and zeros."""
    tq = TurboQuant(8, 2)
    q = tq.quantize(np.full(8, value))
    ref = tq.quantize(np.full(8, np.sign(value)))
    assert abs(q.norms[0] / (abs(value) * np.sqrt(8)) - 1) < 1e-15
    np.testing.assert_array_equal(q.indices, ref.indices)
    d = tq.dequantize(q)
    assert np.all(np.isfinite(d)) and np.all(d != 0)
    np.testing.assert_allclose(d / abs(value), tq.dequantize(ref), rtol=1e-12)


def test_turboquant_norm_beyond_float64_raises() -> None:
    with pytest.raises(ValueError, match="norm beyond the float64 range"):
        TurboQuant(8, 2).quantize(np.full(8, 1e308))


def test_turboquant_prod_variant_with_tiny_vectors() -> None:
    tq = TurboQuant(8, 3, variant="prod")
    q = tq.quantize(np.full((2, 8), 1e-200))
    assert np.all(q.norms > 0) and np.all(np.isfinite(tq.dequantize(q)))


# ---------------------------------------------------------------------------------------------
# issue 13: torch bfloat16 tensors into quant.mx
# ---------------------------------------------------------------------------------------------
def test_mx_and_nvfp4_accept_torch_bfloat16() -> None:
    """torch's "unsupported ScalarType BFloat16" before."""
    torch = pytest.importorskip("torch")
    t = torch.linspace(-3, 3, 64, dtype=torch.bfloat16).reshape(2, 32)
    ref = t.float().numpy()
    q = mx(t, "mxfp8_e4m3")
    np.testing.assert_array_equal(q.codes, mx(ref, "mxfp8_e4m3").codes)
    np.testing.assert_array_equal(nvfp4(t).codes, nvfp4(ref).codes)
    np.testing.assert_array_equal(quantize(t, "int8").codes, quantize(ref, "int8").codes)
    f8 = t.to(torch.float8_e4m3fn)
    np.testing.assert_array_equal(mx(f8, "mxfp4_e2m1").codes,
                                  mx(f8.float().numpy(), "mxfp4_e2m1").codes)
    with pytest.raises(TypeError, match="complex"):
        mx(torch.zeros(32, dtype=torch.complex64), "mxfp8_e4m3")


# ---------------------------------------------------------------------------------------------
# issue 13: ragged lists name the argument
# ---------------------------------------------------------------------------------------------
def test_ragged_lists_give_value_error_naming_the_argument() -> None:
    """numpy's "setting an array element with a sequence" leaked before."""
    with pytest.raises(ValueError, match="ragged.*for x"):
        deepseek_fp8([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="ragged.*for data"):
        unpack([[1, 2], [3]], 4, 2)
    with pytest.raises(ValueError, match="ragged.*for codes"):
        pack([[1, 2], [3]], 4)
    with pytest.raises(ValueError, match="ragged.*for x"):
        mx([[1.0] * 32, [1.0]], "mxfp8_e4m3")
    with pytest.raises(ValueError, match="ragged.*for x"):
        quantize([[1.0, 2.0], [3.0]], "int8")
    with pytest.raises(ValueError, match="ragged.*for x"):
        element_bound([[1.0, 2.0], [3.0]], 1.0, "e4m3fn")


# ---------------------------------------------------------------------------------------------
# issue 16, item 2: the NaN sign survives quantize
# ---------------------------------------------------------------------------------------------
def test_quantize_keeps_the_nan_sign() -> None:
    """quantize(float32([-nan, 1]), "e4m3fn").codes gave [127, 126]: the NaN code must be
    0xFF, as encode, torch and ml_dtypes give.  (The second code is 1/S rounded, 448 = 0x7E
    under the default tensor scale S = RU(1/448); encode's 56 is the unscaled 1.0.)"""
    x = np.array([-np.nan, 1.0], dtype=np.float32)
    q = quantize(x, "e4m3fn")
    assert q.codes.tolist() == [0xFF, 0x7E]
    assert int(q.codes[0]) == int(encode(x, "e4m3fn")[0])
    positive = np.array([np.nan, 1.0], dtype=np.float32)
    assert quantize(positive, "e4m3fn").codes.tolist() == [0x7F, 0x7E]
    assert int(quantize(x, "binary16").codes[0]) >> 15 == 1
    assert int(quantize(x, "e5m2", scale_format="e8m0fnu").codes[0]) >> 7 == 1
    inf = np.array([-np.inf, 1.0], dtype=np.float32)
    assert int(quantize(inf, "e4m3fn", overflow="ieee").codes[0]) == 0xFF


def test_quantize_rejects_non_string_options() -> None:
    """rounding=np.array(["rne"]) leaked numpy's "truth value is ambiguous" / "unhashable"."""
    for opt in ("rounding", "scale_rounding", "overflow", "scaling", "scale_mode"):
        kwargs: dict[str, Any] = {opt: np.array(["rne"])}
        with pytest.raises(TypeError, match=opt):
            quantize(np.ones(4), "int8", **kwargs)


def test_unsigned_element_formats_are_named_errors() -> None:
    # before: e8m0fnu elements were accepted; -3 and 0 dequantized to NaN while .bound
    # stayed finite (1.5 and 1.7e-76), so |x_hat - x| <= bound failed
    with pytest.raises(ValueError, match="Got element_format='e8m0fnu', but elements need a "
                                         "signed format"):
        quantize(np.array([-3.0, 0.0, 1.0, 5.0]), "e8m0fnu")
    with pytest.raises(ValueError, match="Got fmt='e8m0fnu', but elements need a signed"):
        element_bound(np.array([-3.0]), np.array([1.0]), "e8m0fnu")
    # as a scale format it stays valid
    x = np.array([-3.0, 0.0, 1.0, 5.0])
    q = quantize(x, "e4m3fn", scale_format="e8m0fnu")
    assert (np.abs(q.dequantize() - x) <= q.bound).all()


def test_quantize_checks_an_axis_it_does_not_use() -> None:
    """scaling='tensor' (and a tuple block_size) use no axis; a bad one is still named."""
    x = np.ones((2, 2))
    with pytest.raises(ValueError, match="axis=7"):
        quantize(x, "e4m3fn", axis=7)
    with pytest.raises(TypeError, match="axis='x'"):
        quantize(x, "e4m3fn", axis="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="axis=2"):
        quantize(x, "e4m3fn", scaling="block", block_size=(1, 2), axis=2)
    assert quantize(x, "e4m3fn", axis=0).codes.shape == (2, 2)
    assert quantize(np.float64(3.0), "e4m3fn").codes.shape == ()  # 0-d: axis -1 is fine

