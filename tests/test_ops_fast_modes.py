"""The vectorized loops of numerics.ops beyond round to nearest: stochastic rounding in
the narrow formats and binary64 in the directed modes, element by element against the
exact Fraction reference (tests/ops_reference.py) and the documented draw stream
(tests/sr_stream.py), with operands aimed at the places those loops decide on bits:
results just under a power of two, ties of the draw's grid, the edges of the normal
range, and (binary64) the magnitudes where the error-free transformations stop being
exact."""

from __future__ import annotations

import math
import random
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from numerics import get_format, ops, round_to
from numerics.formats import Format

sys.path.insert(0, str(Path(__file__).parent))
from ops_reference import sr_candidates, sr_expected
from sr_stream import draw
from test_ops import FLAG_NAMES, OPS, check_batch, hard_operands, same


def _below_powers(fmt: Format, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """``a + b`` with ``a`` a power of two and ``b`` a small value of either sign: exact
    results a hair under or over a binade's bottom (the lower binade's gap)."""
    e = rng.integers(fmt.emin + 1, fmt.emax - 1, n)
    a = np.ldexp(1.0, e.astype(np.int32)) * rng.choice([1.0, -1.0], n)
    d = rng.integers(1, fmt.trailing_bits + 6, n)
    b = np.ldexp(rng.choice([1.0, 3.0, 5.0], n), (e - d).astype(np.int32))
    b = np.asarray(round_to(np.maximum(b, fmt.smallest_subnormal), fmt, rounding="rtz"),
                   np.float64)
    return [a, -np.sign(a) * b * rng.choice([1.0, 1.0, -1.0], n)]


def _operands(fmt: Format, op: str, seed: str, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    xs = hard_operands(fmt, op, rng, n)
    if op in ("add", "sub"):
        extra = _below_powers(fmt, rng, n // 2)
        if op == "sub":
            extra[1] = -extra[1]
        xs = [np.concatenate([x, y]) for x, y in zip(xs, extra)]
    return xs


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", ["binary32", "bfloat16", "binary16", "e4m3fn", "e5m2"])
def test_sr_narrow_every_element(name: str, op: str) -> None:
    """Every element of stochastic rounding, with and without flags and for several
    draw widths (fewer bits than the format drops, and more), is the rounding the
    draw of its index picks; the flags are those of the neighbour it picked."""
    fmt = get_format(name)
    xs = _operands(fmt, op, repr((name, op, "sr fast")), 120)
    for bits in (53, 30, 9, 2):
        seed = 1000 + bits
        plain = getattr(ops, op)(*xs, fmt, rounding="sr", rng=seed, sr_bits=bits)
        res, fl = getattr(ops, op)(*xs, fmt, rounding="sr", rng=seed, sr_bits=bits,
                                   flags=True)
        assert np.array_equal(np.asarray(plain).view(np.uint64),
                              np.asarray(res).view(np.uint64))
        for i in range(xs[0].size):
            args = tuple(float(x[i]) for x in xs)
            down, away, frac = sr_candidates(op, args, fmt)
            if not (math.isfinite(down) and math.isfinite(away)) or (
                    frac is None and op != "sqrt" and down != away):
                continue  # specials and overflow: the general steps, tested elsewhere
            want = sr_expected(op, args, fmt, draw(seed, i, bits), bits)
            got = float(res[i])
            assert same(want, got), (name, op, bits, args, want, got)
            if got != 0 and abs(got) > fmt.smallest_normal and abs(got) <= fmt.max:
                assert bool(fl.inexact[i]) == (down != away), (name, op, args)
                assert not any(bool(getattr(fl, k)[i]) for k in FLAG_NAMES[1:]), args


def test_sr_narrow_just_under_a_power_of_two() -> None:
    """``2**k - 2**(k - j)`` for small ``j``-offsets below the bfloat16 grid: the lower
    neighbour lies in the lower binade (half the gap), so the probability of rounding up
    follows the lower binade's gap; every element against the reference."""
    fmt = get_format("bfloat16")
    a, b = [], []
    for k in range(-100, 120, 7):
        for j in range(9, 30, 3):
            a.append(2.0**k)
            b.append(-(2.0 ** (k - j)))
    xa, xb = np.array(a * 20), np.array(b * 20)
    for bits in (53, 8, 7, 3):
        got = ops.add(xa, xb, fmt, rounding="sr", rng=3, sr_bits=bits)
        for i in range(xa.size):
            want = sr_expected("add", (xa[i], xb[i]), fmt, draw(3, i, bits), bits)
            assert same(want, float(got[i])), (xa[i], xb[i], bits)


def _sig(rnd: random.Random, e: int) -> float:
    return (1 + rnd.getrandbits(52) * 2.0**-52) * 2.0**e


def _binary64_operands(op: str, n: int) -> list[np.ndarray]:
    """Operands whose results and errors straddle the loop's limits: results around
    ``2**-960`` (where the errors of ``*``, ``/``, sqrt and fma stop being binary64
    numbers), subnormal results, results near max, fma addends far below or cancelling
    the product (and a tie of the product broken by a tiny addend), and exact results."""
    rnd = random.Random(f"binary64 {op}")
    ea = [rnd.choice([-1074, -1040, -980, -965, -960, -950, -500, -30, 0, 3, 500, 990,
                      1022]) for _ in range(n)]
    cols: list[list[float]] = [[], [], []]
    for e in ea:
        x = _sig(rnd, e) * rnd.choice((1, -1)) if e > -1074 else 5e-324 * rnd.randrange(1, 9)
        if op in ("add", "sub"):
            y = _sig(rnd, e - rnd.choice([0, 1, 30, 52, 53, 54, 60, 200])) * rnd.choice((1, -1))
        elif op == "mul":
            y = _sig(rnd, rnd.choice([-60, -10, 0, 0, 2, 20]))
        elif op == "div":
            y = _sig(rnd, rnd.choice([-20, 0, 0, 1, 40])) * rnd.choice((1, -1))
        else:
            y = _sig(rnd, rnd.choice([-60, -10, 0, 0, 2, 20]))
        with np.errstate(all="ignore"):
            p = float(np.float64(x) * np.float64(y))
        kind = rnd.randrange(4)
        if not math.isfinite(p) or p == 0:
            z = _sig(rnd, 0)
        elif kind == 0:
            z = -p  # cancellation down to the product's error
        elif kind == 1:
            z = math.copysign(_sig(rnd, math.frexp(p)[1] - rnd.choice([55, 120, 400])), p)
            z *= rnd.choice((1, -1))
        elif kind == 2:
            z = rnd.choice([5e-324, -5e-324, 1e-308, -1e-308])
        else:
            z = _sig(rnd, rnd.randrange(-1000, 1000))
        if op == "sqrt":
            x = abs(x)
        cols[0].append(x)
        cols[1].append(y)
        cols[2].append(z)
    # the tie found in review: the product exactly half-way, broken by a tiny addend
    if op == "fma":
        cols[0].append(-3.337610787760802e-308)
        cols[1].append(1.669052463483855e+67)
        cols[2].append(1.0611682344442625e-308)
    return [np.array(c) for c in cols[:{"sqrt": 1, "fma": 3}.get(op, 2)]]


@pytest.mark.parametrize("op", list(OPS))
def test_binary64_directed_and_nearest_every_element(op: str) -> None:
    """binary64 in the directed modes and to nearest, with flags (results and flags) and
    without (results), against the Fraction reference."""
    fmt = get_format("binary64")
    xs = _binary64_operands(op, 400)
    for mode in ("rtz", "ru", "rd", "rne"):
        check_batch(fmt, op, xs, mode, "ieee", "after")
        check_batch(fmt, op, xs, mode, "saturate", "before")
        plain = getattr(ops, op)(*xs, fmt, rounding=mode)
        flagged, _ = getattr(ops, op)(*xs, fmt, rounding=mode, flags=True)
        assert np.array_equal(np.asarray(plain).view(np.uint64),
                              np.asarray(flagged).view(np.uint64))


@pytest.mark.parametrize("t", [23, 10, 7, 3])
def test_round_sr_at_the_edges_of_the_draw(t: int) -> None:
    """:func:`numerics.kernels.ops.round_sr` with the draws ``F - 1`` and ``F`` (``F =
    floor(frac * 2**ubits)`` from Fractions): the first rounds away, the second toward
    zero.  A random draw lands on such an edge with probability ``2**-40`` and less
    where the residual is below binary64's last bit (a power of two with a negative
    residual: the lower binade's gap), so only chosen draws reach these decisions."""
    from fractions import Fraction

    from numerics.kernels.ops import round_sr

    cut = 52 - t
    rnd = random.Random(t)
    checked = 0
    for _ in range(3000):
        e = rnd.randrange(-100, 100)
        sig = rnd.choice([0, 0, rnd.getrandbits(52), (1 << 52) - 1, 1 << cut,
                          rnd.getrandbits(t) << cut])
        h = math.ldexp(1.0 + sig * 2.0**-52, e) * rnd.choice((1, -1))
        half_ulp = math.ldexp(1.0, e - (54 if sig == 0 else 53))
        lo = rnd.choice([0.0, 5e-324, half_ulp * rnd.random(), half_ulp * 0.75,
                         half_ulp * 2.0**-40, math.ldexp(1.0, e - 100)])
        lo *= rnd.choice((1, -1))
        ubits = rnd.choice([53, 52, 47, 40, cut + 1, cut, cut - 1, 12, 1])
        x = abs(Fraction(h) + Fraction(lo))
        ex = x.numerator.bit_length() - x.denominator.bit_length()
        if Fraction(2) ** ex > x:
            ex -= 1
        q = Fraction(2) ** (ex - t)
        lower = (x // q) * q
        if lower == x:
            want = float(x)
            got = round_sr(h, lo, cut, np.uint64(0), ubits)
            assert got == math.copysign(want, h), (h, lo, ubits)
            continue
        f = math.floor((x - lower) / q * 2**ubits)
        for u, away in ((f - 1, True), (f, False)):
            if not 0 <= u < 2**ubits:
                continue
            want = math.copysign(float(lower + q if away else lower), h)
            got = round_sr(h, lo, cut, np.uint64(u), ubits)
            assert got == want, (h.hex(), lo, t, ubits, u, f, got, want)
            checked += 1
    assert checked > 3000
