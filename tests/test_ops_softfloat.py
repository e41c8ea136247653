"""numerics.ops against Berkeley SoftFloat (softfloatpy), after checking the binding itself.

softfloatpy keeps a global rounding mode (``set_rounding_mode``), tininess mode
(``set_tininess_mode``) and sticky exception flags (``set_exception_flags(0)``
then ``get_exception_flags()``, an int of ``ExceptionFlag`` bits; INFINITE is
IEEE's divideByZero).  Values cross as big-endian bytes.
"""

from __future__ import annotations

import math
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numerics import get_format, ops

sf = pytest.importorskip("softfloatpy")

sys.path.insert(0, str(Path(__file__).parent))
from ops_reference import reference  # noqa: E402  (after the importorskip above)
from test_ops import hard_operands, same  # noqa: E402

MODES = {"rne": "NEAR_EVEN", "rna": "NEAR_MAX_MAG", "rtz": "MIN_MAG", "ru": "MAX", "rd": "MIN"}
KINDS: dict[str, tuple[Any, str, str]] = {
    "binary16": (sf.Float16 if hasattr(sf, "Float16") else None, ">e", "f16"),
    "binary32": (sf.Float32 if hasattr(sf, "Float32") else None, ">f", "f32"),
    "binary64": (sf.Float64 if hasattr(sf, "Float64") else None, ">d", "f64"),
}
OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1}
SF_NAME = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "fma": "mul_add",
           "sqrt": "sqrt"}
FLAG_BITS = {"inexact": "INEXACT", "underflow": "UNDERFLOW", "overflow": "OVERFLOW",
             "invalid": "INVALID", "divide_by_zero": "INFINITE"}


def softfloat(name: str, op: str, args: tuple[float, ...], mode: str, tininess: str
              ) -> tuple[float, dict[str, bool]]:
    cls, pack, prefix = KINDS[name]
    fn: Callable[..., Any] = getattr(sf, f"{prefix}_{SF_NAME[op]}")
    sf.set_rounding_mode(getattr(sf.RoundingMode, MODES[mode]))
    sf.set_tininess_mode(sf.TininessMode.BEFORE_ROUNDING if tininess == "before"
                         else sf.TininessMode.AFTER_ROUNDING)
    sf.set_exception_flags(0)
    r = fn(*(cls.from_bytes(struct.pack(pack, x)) for x in args))
    bits = sf.get_exception_flags()
    val = struct.unpack(pack, r.to_bytes())[0]
    return val, {k: bool(bits & getattr(sf.ExceptionFlag, v)) for k, v in FLAG_BITS.items()}


@pytest.fixture(autouse=True)
def _restore_softfloat() -> Any:
    yield
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    sf.set_exception_flags(0)


@pytest.mark.parametrize("name", list(KINDS))
def test_binding_agrees_with_fraction_reference(name: str) -> None:
    """Check softfloatpy itself (some bindings return wrong square roots)."""
    fmt = get_format(name)
    rng = np.random.default_rng(17)
    count = 0
    for op in OPS:
        xs = hard_operands(fmt, op, rng, 40)
        for mode in MODES:
            for tin in ("after", "before"):
                for i in range(xs[0].size):
                    args = tuple(float(x[i]) for x in xs)
                    want, wf = reference(op, args, fmt, mode, "ieee", tin)
                    got, gf = softfloat(name, op, args, mode, tin)
                    assert same(want, got), (name, op, mode, args, want, got)
                    assert gf == wf, (name, op, mode, tin, args, wf, gf)
                    count += 1
    assert count >= 2000


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", list(KINDS))
def test_ops_agree_with_softfloat(name: str, op: str) -> None:
    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(repr((name, op, 1)).encode()))
    xs = hard_operands(fmt, op, rng, 80)
    # a few specials too
    if op != "sqrt":
        xs[0][:4] = [np.inf, -np.inf, np.nan, 0.0]
        xs[1][:4] = [-np.inf, 0.0, 1.0, np.inf]
    # float64 operands take the general loop or the float64 lanes (binary64 without
    # flags: the hardware's); float32 operands rounded to nearest take the float32 lanes
    # (numerics.kernels.ops.apply_lean)
    runs = [(mode, xs) for mode in MODES]
    if fmt.float32_exact:
        runs.append(("rne", [x.astype(np.float32) for x in xs]))
    for mode, operands in runs:
        if mode == "rne":  # without flags: the hardware's binary64 operations, the lanes
            plain = getattr(ops, op)(*operands, fmt, rounding=mode)
            for i in range(xs[0].size):
                want, _ = softfloat(name, op, tuple(float(x[i]) for x in xs), mode, "after")
                assert same(want, float(plain[i])), (name, op, "flags=False", want, plain[i])
        for tin in ("after", "before"):
            res, fl = getattr(ops, op)(*operands, fmt, rounding=mode, tininess=tin,
                                       flags=True)
            for i in range(xs[0].size):
                args = tuple(float(x[i]) for x in xs)
                want, wf = softfloat(name, op, args, mode, tin)
                assert same(want, float(res[i])), (name, op, mode, args, want, res[i])
                gf = {k: bool(getattr(fl, k)[i]) for k in FLAG_BITS}
                assert gf == wf, (name, op, mode, tin, args, wf, gf)


def test_sqrt_binding_spot_check() -> None:
    got, _ = softfloat("binary64", "sqrt", (2.0,), "rne", "after")
    assert got == math.sqrt(2.0)
