"""torch CPU tensors are encoded exactly like the numpy arrays they hold (skipped without torch)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import numerics

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_torch_tensor_matches_numpy(dtype: str) -> None:
    rng = np.random.default_rng(7)
    values: np.ndarray = rng.standard_normal(5000) * 300
    if dtype == "int64":
        values = rng.integers(-(2**62), 2**62, 5000)
        tensor = torch.tensor(values, dtype=torch.int64)
    else:
        tensor = torch.tensor(values, dtype=getattr(torch, dtype))
    # the exact values: float64 holds every float tensor exactly; int64 goes as Python ints
    exact = tensor.to(torch.float64).numpy() if dtype != "int64" else values.astype(object)
    for fmt in ("e4m3fn", "bfloat16", "binary32"):
        expected = numerics.encode(exact, fmt, rounding="rtz")
        got = numerics.encode(tensor, fmt, rounding="rtz")
        np.testing.assert_array_equal(got, expected)


def test_torch_fp8_tensor_round_trips() -> None:
    values = torch.tensor([0.5, -448.0, 3.0]).to(torch.float8_e4m3fn)
    codes = numerics.encode(values, "e4m3fn")
    np.testing.assert_array_equal(codes, values.view(torch.uint8).numpy())


def _odd_tensors() -> list[tuple[Any, str]]:
    with warnings.catch_warnings():  # quantized tensors are deprecated in torch 2.14
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8)
    tensors = [(torch.ones(3).to_sparse(), "torch layout torch.sparse_coo"),
               (quantized, "quantized torch dtype qint8"),
               (torch.ones(2, dtype=torch.complex64), "complex torch dtype complex64")]
    if hasattr(torch, "float4_e2m1fn_x2"):
        tensors.append((torch.zeros(2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
                        "torch dtype float4_e2m1fn_x2, which has no numpy"))
    return tensors


@pytest.mark.parametrize("case", range(4))
def test_tensors_numpy_cannot_hold_are_named_everywhere(case: int) -> None:
    # before: torch's own TypeErrors (no argument named), "complex" for a sparse tensor in
    # accum, and a NotImplementedError from accum for float4_e2m1fn_x2
    import numerics.testing

    cases = _odd_tensors()
    if case >= len(cases):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    t, what = cases[case]
    calls = {"x": [lambda: numerics.encode(t, "e4m3fn"), lambda: numerics.round_to(t, "bf16"),
                   lambda: numerics.accum.sum(t, "bf16"),
                   lambda: numerics.quant.quantize(t, "e4m3fn"),
                   lambda: numerics.ulp(t, "bf16")],
             "codes": [lambda: numerics.decode(t, "e4m3fn")],
             "a": [lambda: numerics.ops.add(t, 1.0, "bf16")],
             "actual": [lambda: numerics.testing.assert_ulp_close(t, t, max_ulp=1)]}
    for name, fns in calls.items():
        for fn in fns:
            with pytest.raises(TypeError, match=f"Got {name} with {what}"):
                fn()


def test_a_tensor_subclass_is_a_torch_tensor() -> None:
    """A user's torch.Tensor subclass (as nn.Parameter is) goes the torch way: round_to
    returns a torch tensor, bfloat16 and float8 subclasses are read (they once fell to
    numpy's array conversion: a numpy array back, or 'unsupported ScalarType')."""
    from numerics import ops, quant
    from numerics.testing import assert_bitwise_equal

    class Mine(torch.Tensor):  # type: ignore[name-defined]
        pass

    x = torch.tensor([1.1, -2.5, 3e-3] * 32)
    mine = x.as_subclass(Mine)
    assert isinstance(numerics.round_to(mine, "bfloat16"), torch.Tensor)
    assert torch.equal(numerics.round_to(mine, "bfloat16"), x.to(torch.bfloat16))
    for dt in (torch.bfloat16, torch.float8_e4m3fn):
        sub = x.to(dt).as_subclass(Mine)
        plain = x.to(dt)
        np.testing.assert_array_equal(numerics.encode(sub, "e5m2"),
                                      numerics.encode(plain, "e5m2"))
        np.testing.assert_array_equal(ops.add(sub, sub, "bfloat16"),
                                      ops.add(plain, plain, "bfloat16"))
        np.testing.assert_array_equal(quant.mx(sub, "mxfp8_e4m3").codes,
                                      quant.mx(plain, "mxfp8_e4m3").codes)
        assert_bitwise_equal(sub, plain)


def test_a_meta_tensor_is_named_as_holding_no_values() -> None:
    """encode, decode and round_to of a meta tensor say it holds no values (they said to
    move it to the CPU, which a meta tensor cannot be)."""
    meta = torch.empty(3, device="meta")
    for call in (lambda: numerics.encode(meta, "bfloat16"),
                 lambda: numerics.round_to(meta, "bfloat16"),
                 lambda: numerics.decode(torch.empty(3, dtype=torch.int16, device="meta"),
                                         "bfloat16")):
        with pytest.raises(TypeError, match="on meta, which holds no values"):
            call()


def test_round_to_torch_keeps_the_nan_codes_bits() -> None:
    """round_to of a tensor holds the bits of the stored code's value: torch's own float32
    -> bfloat16 conversion made every NaN 0xFFFF (a sign where the code had none), so
    the result is built from codes instead."""
    t = torch.tensor([float("nan"), -float("nan"), 1.0, -0.0, 0.1])
    r = numerics.round_to(t, "bfloat16")
    assert r.dtype == torch.bfloat16
    want = np.asarray(numerics.encode(t, "bfloat16")).astype(np.int64)
    assert (r.view(torch.int16).numpy().astype(np.int64) & 0xFFFF).tolist() == want.tolist()
    # e8m0fnu (default dtype bfloat16): its one NaN is unsigned
    e = numerics.round_to(torch.tensor([float("nan"), 1.0, 3.0]), "e8m0fnu")
    assert e.dtype == torch.bfloat16 and not torch.signbit(e).any()
    # every code of an 8-bit format, as the numpy path gives it, NaN signs included
    for name in ("e4m3fn", "e5m2", "e4m3fnuz"):
        codes = np.arange(256, dtype=np.uint8)
        values = np.asarray(numerics.decode(codes, name), np.float32)
        for dtype in (None, torch.bfloat16, torch.float32):
            got = numerics.round_to(torch.from_numpy(values.copy()), name, dtype=dtype)
            ref = np.asarray(numerics.round_to(values, name), np.float32)
            g = got.to(torch.float32).numpy()
            assert np.array_equal(np.isnan(g), np.isnan(ref))
            ok = ~np.isnan(ref)
            assert np.array_equal(g[ok], ref[ok])
            assert np.array_equal(np.signbit(g), np.signbit(ref)), (name, dtype)


def test_round_to_torch_dtype_must_hold_negative_zero() -> None:
    """A dtype without -0 (the fnuz formats) cannot hold e2m1fn's -0: refused, as any
    dtype that does not hold every value of the format is."""
    with pytest.raises(ValueError, match="float8_e4m3fnuz for format e2m1fn"):
        numerics.round_to(torch.tensor([-0.0, 1.0]), "e2m1fn", dtype=torch.float8_e4m3fnuz)
    r = numerics.round_to(torch.tensor([-0.0, 1.0]), "e2m1fn", dtype=torch.float8_e4m3fn)
    assert torch.signbit(r.to(torch.float32)).tolist() == [True, False]
