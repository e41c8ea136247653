"""Defects found by the session-56 audits (array contract, testing toolkit, stochastic
rounding, formats, README), each pinned by a test that failed on the code before its fix.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

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
