"""``inspect_code``'s neighbours (``fpinspect bits``: previous, next), found exactly by
directed rounding with no kernel, against the sorted line of every value of the format
(``ulp_reference.line_next``), on every code.

The formats: every registered one (16-bit ones in the exhaustive tier), small P3109
formats of both domains, and user formats without zero, whose ``-2**emin`` and
``2**emin`` are neighbours across the missing zero.
"""

from __future__ import annotations

import math

import pytest
from ulp_reference import line_next

from numerics import Format
from numerics.codec import decode_exact, encode_exact
from numerics.formats import FORMATS, Infinity, NaNEncoding, get_format, p3109
from numerics.inspection import inspect_code

_USER = (
    Format(name="e4m3_nozero", exponent_bits=4, trailing_bits=3, bias=7, subnormals=False,
           infinity=Infinity.NONE, nan=NaNEncoding.TOP),
    Format(name="e3m2_nozero", exponent_bits=3, trailing_bits=2, bias=3, subnormals=False),
    Format(name="e2m1_nozero_finite", exponent_bits=2, trailing_bits=1, bias=1,
           subnormals=False, infinity=Infinity.NONE, nan=NaNEncoding.NONE),
    p3109(8, 3, domain="finite"), p3109(6, 2), p3109(4, 1), p3109(3, 2, domain="finite"),
)
_REGISTERED = tuple(get_format(name) for name in FORMATS if get_format(name).bits <= 16)
CASES = [pytest.param(f, id=f.name, marks=[pytest.mark.exhaustive] if f.bits > 12 else [])
         for f in _REGISTERED + _USER]


def _code_of(value: float, fmt: Format) -> int | None:
    """The neighbour ``line_next`` names, as ``inspect_code`` reports it: None for none."""
    return None if math.isnan(value) else encode_exact(value, fmt)


@pytest.mark.parametrize("fmt", CASES)
def test_neighbours_are_the_line_s(fmt: Format) -> None:
    for code in range(fmt.num_codes):
        v = decode_exact(code, fmt)
        report = inspect_code(code, fmt)
        if isinstance(v, float) and math.isnan(v):
            assert report.below is None and report.above is None
            continue
        for got, direction in ((report.below, -1), (report.above, 1)):
            n = line_next(float(v), fmt, direction)
            want = None if math.isnan(n) or n == float(v) else _code_of(n, fmt)
            assert (None if got is None else got.code) == want, (fmt.name, hex(code), direction)


def test_bits_of_a_code_compiles_nothing() -> None:
    """``fpinspect bits`` loaded a compiled kernel for the neighbours (0.9 s a warm call,
    6 s on a fresh cache, against 0.4 s for a value)."""
    import subprocess
    import sys

    code = """
import sys
from numba.core.dispatcher import Dispatcher
from numerics.inspection import inspect_code
r = inspect_code(0x7E, "e4m3fn")
ready = [f"{m.__name__}.{k}" for m in list(sys.modules.values()) if m is not None
         and m.__name__.startswith("numerics") for k, f in vars(m).items()
         if isinstance(f, Dispatcher) and f.overloads]
print(r.below.code, r.above, ready)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["125", "None", "[]"], done.stderr
