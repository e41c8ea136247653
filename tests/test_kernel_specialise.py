"""numerics.kernels.specialise: a literal flag compiles as a constant, so numba types only
the branches it leaves; ordinary calls and results are unchanged."""

from __future__ import annotations

import math
from typing import Any, cast

import numba
import numpy as np
import pytest
from numba.core import types

from numerics.kernels import narrow
from numerics.kernels.specialise import Specialising, specialised


def _branches(double, x):
    if double:
        return x * 2.0
    return math.sin(x)


def _typed_calls(dispatcher, signature) -> set[str]:
    """The names of the functions a compiled variant typed a call to."""
    typemap = dispatcher.overloads[signature].type_annotation.typemap
    return {str(t) for t in typemap.values() if isinstance(t, types.Function)}


def _variant_for_true(jitted):
    """``jitted`` compiled for a literal ``True`` (a constant argument in a caller)."""
    @numba.njit
    def caller(x):
        return jitted(True, x)

    assert caller(1.5) == 3.0
    (signature,) = jitted.signatures
    assert isinstance(signature[0], types.Literal)
    return signature


def test_a_literal_flag_prunes_the_branch_it_rules_out() -> None:
    pruned = numba.njit(pipeline_class=Specialising)(_branches)
    plain = numba.njit(_branches)
    assert not any("sin" in name for name in _typed_calls(pruned, _variant_for_true(pruned)))
    # the check can fail: numba's own pipeline types the other branch
    assert any("sin" in name for name in _typed_calls(plain, _variant_for_true(plain)))


def test_an_ordinary_flag_compiles_both_branches_and_gives_the_same_results() -> None:
    pruned = numba.njit(pipeline_class=Specialising)(_branches)
    assert pruned(True, 1.5) == 3.0
    assert pruned(False, 1.5) == math.sin(1.5)
    (signature,) = pruned.signatures
    assert signature[0] == types.boolean
    assert any("sin" in name for name in _typed_calls(pruned, signature))


def test_the_decorator_takes_options() -> None:
    kernel = specialised(error_model="numpy")(_branches)
    assert kernel.targetoptions["nogil"] and kernel.targetoptions["error_model"] == "numpy"
    assert specialised(_branches).targetoptions["nogil"]


# (the slow tier: each compiles a loop nothing else in the default tier compiles, 4 to 5
# CPU-s of a cold run, to check how the kernels are built, not what they compute)
@pytest.mark.exhaustive
def test_a_kernel_variant_gives_the_same_bits_as_an_ordinary_call() -> None:
    """narrow._directed32_block calls its loop with literal flags (pruned); a direct call
    from Python with ordinary flags compiles every branch: same codes."""
    from numerics.formats import get_format
    from numerics.kernels.rounding import MODE_RTZ, format_params
    P = format_params(get_format("e5m2"))
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    bits[:4] = [0x7F800000, 0xFF800000, 0x7FC00000, 0]
    via_literals = np.empty(bits.size, np.uint8)
    narrow._directed32_block(bits, via_literals, P, False, MODE_RTZ)
    direct = np.empty(bits.size, np.uint8)
    narrow._directed32_loop(bits, direct, P, False, MODE_RTZ, 0, True)
    np.testing.assert_array_equal(via_literals, direct)


@pytest.mark.exhaustive
def test_the_dtype_shims_compile_only_the_loops_of_their_input() -> None:
    """narrow._rne_block picks the float32 or float64 block when the caller compiles (a
    branch on ``x.itemsize`` typed the float64 loops for float32 input too, and the
    other way round; _directed_block is the same shim), and gives the codes of the
    float32 route."""
    from numerics.kernels.rounding import format_params

    @numba.njit
    def nearest(x, out, P, saturate):
        # (a run-time ``saturate``, as narrow._rne_pieces passes it: the blocks then
        # compile for the types the encode of e4m3fn compiles them for, or load from
        # the disk cache, not once more for a literal False)
        narrow._rne_block(x, out, P, saturate, False)

    P = format_params("e4m3fn")
    x64 = np.array([0.0, -1.0625, 3.0, 448.0, 1e-3, -500.0, np.inf, np.nan])
    codes = {}
    for x in (x64.astype(np.float32), x64):
        codes[x.dtype.itemsize] = out = np.zeros(x.size, np.uint8)
        nearest(x, out, P, False)
    np.testing.assert_array_equal(codes[4], codes[8])  # (the values are float32's)
    for signature in nearest.signatures:
        compiled: Any = nearest.overloads[signature]
        typed = {str(t) for t in compiled.type_annotation.typemap.values()}
        wide = cast(Any, signature[0]).dtype == types.float64
        for name in ("_high_block", "_rne64_block"):
            assert any(name in t for t in typed) == wide, (signature, name)
        assert any("_rne32_block" in t for t in typed) != wide, signature
