"""Stochastic rounding in numerics.ops, element by element: each result against the
exact Fraction reference (tests/ops_reference.py) and the documented stream
(tests/sr_stream.py), where the residual's last bits decide (binary64 results near its
limits, and residuals that are themselves rounded: ``/``, sqrt, fma)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from ops_reference import sr_expected
from sr_stream import draw

from numerics import ops, round_to
from numerics.formats import get_format

B64 = get_format("binary64")


def _sig(rnd: random.Random, e: int) -> float:
    """A random binary64 number in [2**e, 2**(e + 1))."""
    return (1 + rnd.getrandbits(52) * 2.0**-52) * 2.0**e


def _check(op: str, cols: list[np.ndarray], seed: int, bits: int) -> None:
    got = getattr(ops, op)(*cols, B64, rounding="sr", rng=seed, sr_bits=bits)
    for i in range(got.size):
        args = tuple(float(c[i]) for c in cols)
        want = sr_expected(op, args, B64, draw(seed, i, bits), bits)
        assert float(got[i]) == want, (op, args, seed, bits, float(got[i]).hex(),
                                       want.hex())


@pytest.mark.parametrize("region,ea,eb", [
    ("near max", 1000, 22),          # products and quotients in [2**1022, max]
    ("below 2**-960", -500, -480),   # normal, but the scaled pair would underflow
    ("subnormal", -540, -520),
    ("around 1", 0, 0),
])
@pytest.mark.parametrize("bits", [53, 30, 12])
def test_binary64_sr_near_its_limits_reads_every_bit(region: str, ea: int, eb: int,
                                                      bits: int) -> None:
    """Before the fix these regions rounded a 62-bit significand with the rest as a
    sticky bit: 9 bits of the probability, biased (about 1 element in 1000 wrong)."""
    rnd = random.Random(f"{region} {bits}")
    n = 1000
    a = np.array([_sig(rnd, ea) * rnd.choice((1, -1)) for _ in range(n)])
    b = np.array([_sig(rnd, eb) for _ in range(n)])
    c = np.array([_sig(rnd, ea + eb - 60) * rnd.choice((1, -1)) for _ in range(n)])
    inv = np.array([_sig(rnd, -eb) for _ in range(n)])
    seed = rnd.getrandbits(64)
    _check("mul", [a, b], seed, bits)
    _check("fma", [a, b, c], seed, bits)
    _check("div", [a, inv], seed, bits)
    _check("sqrt", [np.abs(a)], seed, bits)


def test_binary64_sr_probability_near_max_is_unbiased() -> None:
    """P(round up) is the exact fraction (2**-8 - 2**-52 here) at 1.0 and near max."""
    b = 1 + (2**44 - 1) * 2.0**-52
    n = 1 << 16
    for a in (1 + 2**-52, 2.0**1023 * (1 + 2**-52), 2.0**-1000 * (1 + 2**-52)):
        r = ops.mul(np.full(n, a), b, B64, rounding="sr", rng=1)
        down = ops.mul(a, b, B64, rounding="rtz")
        ups = int(np.count_nonzero(r != down))
        want = sum(draw(1, i, 53) < 2**45 - 1 for i in range(n))  # floor(frac * 2**53)
        assert ups == want, a


def _quotients_below_grid(bits: int, count: int) -> list[tuple[float, float]]:
    """``a / b`` a hair (``1 / B`` of a grid step) below a point ``j / 2**bits`` of the
    probability grid between two binary64 numbers in [1, 2): ``N * B = A * 2**(52 + bits)
    + 1`` in integers, with ``A``, ``B`` 53-bit and ``N = (q << bits) + 3``."""
    rnd = random.Random(5)
    mod = 1 << (52 + bits)
    out: list[tuple[float, float]] = []
    while len(out) < count:
        n_grid = (rnd.randrange(2**52, 2**53) << bits) + 3
        big_b = pow(n_grid, -1, mod)
        big_a = (n_grid * big_b - 1) >> (52 + bits)
        if 2**52 <= big_b < 2**53 and 2**52 <= big_a < 2**53:
            out.append((big_a / 2**52, big_b / 2**52))
    return out


def test_sr_div_residual_rounded_onto_the_grid() -> None:
    """``lo = fl(r / b)`` lands on the grid point the exact quotient lies just below: the
    floor is one less than the pair's (before the fix: 110 of 800 elements wrong)."""
    cases = _quotients_below_grid(3, 20)
    a = np.array([x for x, _ in cases])
    b = np.array([y for _, y in cases])
    for x, y in cases:
        q = Fraction(x) / Fraction(y)
        frac8 = (q - Fraction(float(ops.div(x, y, B64, rounding="rtz")))) * 2**55
        assert 0 < 3 - frac8 < Fraction(1, 2**51)  # the case is what it claims
    for seed in range(6):
        _check("div", [a, b], seed, 3)


def test_sr_fma_residual_rounded_onto_the_grid() -> None:
    """``1 + a*b`` with ``a*b = 3 * 2**-56 - r * 2**-160``: the three-sum's residual rounds
    to ``3 * 2**-56``, a point of the 4-bit grid, while the exact value is just below it."""
    rnd = random.Random(3)
    pairs: list[tuple[float, float]] = []
    while len(pairs) < 16:
        x = rnd.randrange(2**52 + 2**51, 2**53) | 1
        y, r = divmod(3 * 2**104, x)
        if 0 < r < 2**52 and y < 2**53:
            pairs.append((x * 2.0**-80, y * 2.0**-80))
    a = np.array([x for x, _ in pairs])
    b = np.array([y for _, y in pairs])
    for seed in range(6):
        _check("fma", [a, b, np.ones_like(a)], seed, 4)


@pytest.mark.parametrize("name", ["binary32", "bfloat16", "e4m3fn"])
def test_narrow_sr_with_every_bit_of_the_draw(name: str) -> None:
    """Narrow formats: quotients, roots and fmas with 53-bit draws, where the rounded
    residual is read below binary64's last bit."""
    fmt = get_format(name)
    rnd = random.Random(7)
    n = 200
    vals = np.array([rnd.uniform(0.5, 4.0) for _ in range(3 * n)])
    xs = np.asarray(round_to(vals, fmt, rounding="rtz"), np.float64)
    a, b, c = xs[:n], xs[n:2 * n], xs[2 * n:3 * n]
    seed = 12345
    for op, cols in (("div", [a, b]), ("sqrt", [a]), ("fma", [a, b, -c])):
        got = getattr(ops, op)(*cols, fmt, rounding="sr", rng=seed, sr_bits=53)
        for i in range(n):
            args = tuple(float(col[i]) for col in cols)
            want = sr_expected(op, args, fmt, draw(seed, i, 53), 53)
            assert float(got[i]) == want, (op, args)
