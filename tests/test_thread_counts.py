"""The same bits on 1 and 2 threads for ops and accum, on inputs large enough that
:func:`numerics.kernels.spread.spread` splits them (encode: test_encode_layouts.py;
hashing: test_hashing_kernels.py; GEMM: test_accum_gemm.py; quantization:
test_quant_kernels.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import numerics
from numerics import accum, ops
from numerics.kernels.spread import PARALLEL_MIN
from numerics.threads import get_num_threads, set_num_threads

N_OPS = PARALLEL_MIN + 1234  # ops split from PARALLEL_MIN elements; a ragged end


@contextmanager
def threads(n: int) -> Iterator[None]:
    before = get_num_threads()
    try:
        set_num_threads(n)
    except ValueError:
        pytest.skip(f"a pool of fewer than {n} threads")
    try:
        yield
    finally:
        set_num_threads(before)


def on_one_and_two(call: Callable[[], Any]) -> tuple[Any, Any]:
    with threads(1):
        one = call()
    with threads(2):
        two = call()
    return one, two


def representable(fmt: str, n: int, seed: int) -> np.ndarray:
    """float32 values of ``fmt`` over its whole range (zeros, subnormals, the largest)."""
    info = numerics.get_format(fmt)
    codes = np.random.default_rng(seed).integers(0, info.num_codes, n).astype(info.code_dtype)
    values = np.asarray(numerics.decode(codes, info), np.float64)
    return np.where(np.isfinite(values), values, 1.0).astype(np.float32)


@pytest.mark.parametrize("fmt", ["binary32", "bfloat16", "e4m3fn"])
@pytest.mark.parametrize("op", ["add", "mul", "div", "fma"])
@pytest.mark.parametrize("rounding", ["rne", "rtz", "sr"])
def test_ops_give_the_same_bits_and_flags_on_every_thread_count(fmt: str, op: str,
                                                                  rounding: str) -> None:
    a, b, c = (representable(fmt, N_OPS, seed) for seed in (1, 2, 3))
    fn = getattr(ops, op)
    args = (a, b, c) if op == "fma" else (a, b)
    options: dict[str, Any] = {"rounding": rounding, "flags": True}
    if rounding == "sr":
        options["rng"] = 7
    (v1, f1), (v2, f2) = on_one_and_two(lambda: fn(*args, fmt, **options))
    np.testing.assert_array_equal(v1.view(np.uint8), v2.view(np.uint8))
    for name in ("inexact", "underflow", "overflow", "invalid", "divide_by_zero"):
        np.testing.assert_array_equal(getattr(f1, name), getattr(f2, name))


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e4m3fn"])
@pytest.mark.parametrize("algorithm", ["recursive", "pairwise", "kahan", "neumaier"])
def test_sums_give_the_same_bits_on_every_thread_count(fmt: str, algorithm: str) -> None:
    rng = np.random.default_rng(4)
    X = (rng.standard_normal((512, 512)) * 4).astype(np.float32)  # 64 row tiles
    for rounding in ("rne", "sr"):
        one, two = on_one_and_two(lambda: accum.sum(X, fmt, axis=1, algorithm=algorithm,
                                                    rounding=rounding, rng=5))
        np.testing.assert_array_equal(one.value.view(np.uint64), two.value.view(np.uint64))
        np.testing.assert_array_equal(one.bound, two.bound)
    one, two = on_one_and_two(lambda: accum.dot(X, X[::-1], fmt, axis=1,
                                                algorithm=algorithm))
    np.testing.assert_array_equal(one.value.view(np.uint64), two.value.view(np.uint64))


@pytest.mark.parametrize("fmt", ["bfloat16", "binary16", "e4m3fn"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma"])
def test_lane_loops_on_codes_give_the_same_bits_on_every_thread_count(fmt: str,
                                                                      op: str) -> None:
    """Codes in the format's own dtype (decoded inside the lane loops; 8-bit codes
    widened a chunk at a time), full-length, broadcast from one element and strided:
    the same bits and flags on 1 and 2 threads, and as the same values given as
    float32 operands (another compiled loop)."""
    from numerics.dtypes import dtype_of

    dt = dtype_of(fmt)
    assert dt is not None
    a, b, c = (representable(fmt, 2 * N_OPS, seed) for seed in (4, 5, 6))
    layouts = {"full": (a[:N_OPS], b[:N_OPS], c[:N_OPS]),
               "broadcast": (a[:N_OPS], b[:1], c[:N_OPS]),
               "strided": (a[::2], b[1::2], c[::-2])}
    fn = getattr(ops, op)
    for layout, xs in layouts.items():
        args = xs if op == "fma" else xs[:2]
        codes = [x.astype(dt) for x in args]
        for flags in (False, True):
            (r1, r2) = on_one_and_two(lambda: fn(*codes, fmt, flags=flags))
            ref = fn(*[x.astype(np.float32) for x in args], fmt, flags=flags)
            v1, v2, vr = (r[0] if flags else r for r in (r1, r2, ref))
            for v in (v2, vr):
                np.testing.assert_array_equal(v1.view(np.uint8), v.view(np.uint8),
                                              err_msg=f"{layout} flags={flags}")
            if flags:
                for name in ("inexact", "underflow", "overflow", "invalid",
                             "divide_by_zero"):
                    for f in (r2[1], ref[1]):
                        np.testing.assert_array_equal(getattr(r1[1], name),
                                                      getattr(f, name), err_msg=name)


def test_flag_bits_unpack_alike_on_every_thread_count() -> None:
    """The unpacking of flag bytes into the five boolean rows, split from FAST_LOOP_MIN
    elements (a ragged end), against numpy's bit extraction."""
    from numerics.kernels.ops import unpack_flags
    from numerics.kernels.spread import FAST_LOOP_MIN

    n = FAST_LOOP_MIN + 77
    fl = np.random.default_rng(4).integers(0, 256, n).astype(np.uint8)
    want = ((fl[None, :] >> np.arange(5, dtype=np.uint8)[:, None]) & 1).astype(bool)

    def unpack() -> np.ndarray:
        out = np.empty((5, n), bool)
        unpack_flags(fl, out)
        return out

    one, two = on_one_and_two(unpack)
    assert np.array_equal(one, want) and np.array_equal(two, want)
