"""The two routes of the lanes' code decode (``numerics.kernels.unpack``), side by side.

Step 1 of the decode reads a code's bits either as a float32 pattern scaled by one
multiplication (a subnormal code becomes a float32 subnormal factor, for which Intel
cores take a microcode assist) or as a binary16 pattern through the processor's
conversion (two lane operations more, no subnormal factor).  This prints, for e4m3fn
on one thread: numpy's float32 multiplication of normal and of subnormal numbers (does
this processor take the assist?), a loop decoding codes with no subnormal and random
codes (one in sixteen subnormal) by each route, and ``ops.add`` / ``ops.mul`` on 2**20
codes with ``dtype=float32`` by each route.  ``python benchmarks/bench_decode_routes.py``.
"""

from __future__ import annotations

import numba
import numpy as np
from _timing import best_of

from numerics import get_format, ops, round_to
from numerics.dtypes import dtype_of
from numerics.encoding import decode_table
from numerics.formats import Format
from numerics.kernels.ops import decode_all
from numerics.kernels.rounding import format_params
from numerics.kernels.unpack import constants, decode32, plan
from numerics.ops import _driver
from numerics.threads import set_num_threads


@numba.njit(nogil=True)
def _decode_loop(codes: np.ndarray, d: np.ndarray, out: np.ndarray) -> None:
    D = constants(d)
    for i in range(codes.size):
        out[i] = decode32(codes[i], D)


def main() -> None:
    set_num_threads(1)
    n = 1 << 20
    out32 = np.empty(n, np.float32)
    for name, x in (("normal", np.full(n, 1.5, np.float32)),
                    ("subnormal", np.full(n, 1e-40, np.float32))):
        s = best_of(lambda: np.multiply(x, np.float32(2.0**120), out=out32), 20)
        print(f"numpy float32 multiply, {name} factors: {s / n * 1e9:.3f} ns/element")
    P = format_params("e4m3fn")
    table = decode_all(P)
    rng = np.random.default_rng(0)
    m = 1 << 16
    codes = rng.integers(0, 256, m).astype(np.uint16)
    no_sub = np.where((codes & 0x78) == 0, codes | 0x08, codes).astype(np.uint16)
    out = np.empty(m, np.float32)
    for binary16 in (True, False):
        d = plan(P, table, binary16)
        assert d is not None
        route = "binary16" if binary16 else "float32"
        a_s = best_of(lambda: _decode_loop(no_sub, d, out), 200)
        r_s = best_of(lambda: _decode_loop(codes, d, out), 200)
        print(f"decode loop, {route} route: {a_s / m * 1e9:.3f} ns/code with no subnormal "
              f"code, {r_s / m * 1e9:.3f} with random codes")
    dt = dtype_of("e4m3fn")
    a, b = (np.asarray(round_to(rng.standard_normal(n), "e4m3fn", overflow="saturate"))
            .astype(dt) for _ in range(2))
    default = _driver.code_plan
    try:
        for binary16 in (True, False):
            def code_plan(fmt: Format, binary16: bool = binary16) -> np.ndarray | None:
                d = plan(format_params(fmt), decode_table(fmt), binary16)
                if d is not None:
                    d.setflags(write=False)
                return d

            _driver.code_plan = code_plan  # type: ignore[assignment]
            route = "binary16" if binary16 else "float32"
            for op in ("add", "mul"):
                fn = getattr(ops, op)
                s = best_of(lambda: fn(a, b, get_format("e4m3fn"), dtype=np.float32), 30)
                print(f"ops.{op} e4m3fn 2**20, dtype=float32, 1 thread, {route} route: "
                      f"{s / n * 1e9:.3f} ns/element")
    finally:
        _driver.code_plan = default
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    print(f"numpy float32 add, 2**20: {best_of(lambda: np.add(x, y, out=out32), 30) / n * 1e9:.3f}"
          " ns/element")


if __name__ == "__main__":
    main()
