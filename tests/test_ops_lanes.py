"""numerics.ops's vector lanes (claims D5 to D13 of proofs/double_rounding.md): each
lane loop against the exact Fraction reference in tests/ops_reference.py and, flag for
flag, against the general loop.  (A file of its own so that pytest-xdist compiles the
lane loops on one worker while the general loop's tests run on another.)"""

from __future__ import annotations

import itertools
import math
import sys
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import FORMATS, get_format, ops
from numerics.encoding import decode_codes
from numerics.formats import Format

sys.path.insert(0, str(Path(__file__).parent))
from ops_reference import reference
from test_ops import FLAG_NAMES, hard_operands, same

# ----------------------------------------------------------------------------- lane loops
LANE_FORMATS = ["binary32", "bfloat16", "binary16", "e4m3fn", "e5m2", "e4m3fnuz", "e3m4",
                "e2m3fn", "binary8p3"]


def _midpoint_fma(fmt: Format, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """fma operands whose product ``a*b`` is exactly half-way between two values of
    ``fmt`` and whose ``c`` is far below its ulp: rounding ``a*b + c`` once in binary64
    lands on the midpoint (where the format's range allows a ``c`` that small) and
    rounds to even, the case that round to odd exists for.  ``a = 3 * 2**k`` and
    ``b = B * 2**-t`` with ``B`` odd and ``2**p <= 3B < 2**(p+1)``: ``a*b`` has exactly
    ``p + 1`` bits and ends in a 1."""
    from numerics import round_to

    p = fmt.trailing_bits + 1
    lo, hi = -(-(1 << p) // 3), min(((1 << (p + 1)) - 1) // 3, (1 << p) - 1)
    big = rng.integers(lo, hi + 1, n) | 1
    big = np.where(big > hi, big - 2, big)
    a = np.ldexp(3.0, rng.integers(-2, 3, n)) * rng.choice([1.0, -1.0], n)
    b = np.ldexp(big.astype(np.float64), -fmt.trailing_bits)
    keep = (np.asarray(round_to(a, fmt)) == a) & (np.abs(a * b) < fmt.max)
    a, b = a[keep], b[keep]
    c = np.ldexp(np.abs(a * b), -60 - rng.integers(0, 8, a.size))
    c = np.asarray(round_to(np.maximum(c, fmt.smallest_subnormal), fmt, rounding="rtz"))
    return [a, b, c * rng.choice([1.0, -1.0], a.size)]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary32_float64_results_over_many_pieces(op: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """binary32 itself stores float64 results straight from its loop (no float32
    staging): over three pieces of the lean loop and a ragged end, with a broadcast
    operand too, the values are numpy's float32 operation (IEEE's, one rounding) and
    the flags those of the general loop."""
    import numerics.ops._driver as driver

    rng = np.random.default_rng(zlib.crc32(op.encode()))
    n = 3 * (1 << 15) + 5
    a = (rng.standard_normal(n) * np.exp2(rng.integers(-140, 120, n))).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    b[::97] = 0.0
    a[::89] = np.inf
    peer = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    fn = getattr(ops, op)
    for bb in (b, b[7:8]):
        with np.errstate(all="ignore"):
            want = peer(a, bb).astype(np.float64)
        got = fn(a, bb, "binary32")
        assert got.dtype == np.float64
        assert np.array_equal(got, want, equal_nan=True)
        got_v, got_fl = fn(a, bb, "binary32", flags=True)
        assert np.array_equal(got_v, want, equal_nan=True)
        with monkeypatch.context() as m:
            m.setattr(driver, "_lanes", lambda *args: "")
            general_fl = fn(a, bb, "binary32", flags=True)[1]
        for flag in FLAG_NAMES:
            assert np.array_equal(getattr(got_fl, flag), getattr(general_fl, flag)), flag


def _bits32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("flags", [False, True])
def test_float32_results_of_the_float64_lanes_over_many_chunks(flags: bool) -> None:
    """The float64 lanes (binary16 ``/``) write float32 results through a float64 chunk
    that is narrowed after (``numerics.kernels.ops_wide``): over three chunks and a
    ragged end, with a broadcast operand too, they are the float64 results narrowed,
    bit for bit (the quiet NaN, infinities and -0 included), with the same flags, and
    every 61st element is the Fraction reference's."""
    import numerics.ops._driver as driver

    fmt = get_format("binary16")
    assert driver._lanes("div", fmt, fmt, np.dtype(np.float32), flags) == "wide"
    rng = np.random.default_rng(61)
    n = 3 * 4096 + 11
    a, b = (decode_codes(rng.integers(0, 1 << 16, n).astype(np.uint16), fmt)
            .astype(np.float32) for _ in range(2))
    for bb in (b, b[5:6]):
        got32 = ops.div(a, bb, fmt, dtype=np.float32, flags=flags)
        got64 = ops.div(a, bb, fmt, flags=flags)
        v32, v64 = (got32[0], got64[0]) if flags else (got32, got64)
        assert v32.dtype == np.float32
        assert np.array_equal(_bits32(v32), _bits32(v64))
        if flags:
            for flag in FLAG_NAMES:
                assert np.array_equal(getattr(got32[1], flag), getattr(got64[1], flag))
        bv = np.broadcast_to(bb, a.shape)
        for i in range(0, n, 61):
            want, _ = reference("div", (float(a[i]), float(bv[i])), fmt, "rne")
            assert same(want, float(v32[i])), (float(a[i]), float(bv[i]))


@pytest.mark.parametrize("op", ["add", "mul", "div", "fma"])
def test_binary64_of_float32_operands_over_many_chunks(op: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """binary64's loop widens float32 operands chunk by chunk, a NaN bit for bit: over
    three chunks and a ragged end, with a broadcast operand too, the values are numpy's
    float64 operation (for fma ``a * b + c``: the product of two float32 numbers is
    exact in float64), signalling NaNs raise invalid and quiet ones do not, and with
    flags (``+ * /``) the flags are the general loop's."""
    import numerics.ops._driver as driver

    fmt = get_format("binary64")
    assert driver._lanes(op, fmt, fmt, np.dtype(np.float32), False) == "native"
    rng = np.random.default_rng(zlib.crc32(op.encode()) + 64)
    n = 3 * 4096 + 11
    x = [(rng.standard_normal(n) * np.exp2(rng.integers(-140, 120, n))).astype(np.float32)
         for _ in range(3)]
    x[0][::173] = np.uint32(0xFFA00001).view(np.float32)  # signalling NaNs
    x[1][::181] = np.uint32(0x7FC00002).view(np.float32)  # quiet NaNs
    x[1][::97] = 0.0
    signalling = np.arange(n) % 173 == 0
    peer = {"add": np.add, "mul": np.multiply, "div": np.divide}.get(op)
    fn = getattr(ops, op)
    for last in (x[1], x[1][7:8]):
        args = (x[0], last, x[2]) if op == "fma" else (x[0], last)
        with np.errstate(all="ignore"):
            wide = [a.astype(np.float64) for a in args]
            want = wide[0] * wide[1] + wide[2] if op == "fma" else peer(*wide)  # type: ignore[misc]
        got = fn(*args, fmt)
        assert np.array_equal(got, want, equal_nan=True)
        if op == "fma":  # (with flags: the general loop)
            continue
        got_v, got_fl = fn(*args, fmt, flags=True)
        assert np.array_equal(got_v, want, equal_nan=True)
        assert np.array_equal(got_fl.invalid, signalling)
        with monkeypatch.context() as m:
            m.setattr(driver, "_lanes", lambda *args: "")
            general_fl = fn(*args, fmt, flags=True)[1]
        for flag in FLAG_NAMES:
            assert np.array_equal(getattr(got_fl, flag), getattr(general_fl, flag)), flag


def test_float32_operands_of_the_general_loop_over_many_chunks() -> None:
    """The general loop (here bfloat16 rounded toward zero) widens float32 operands to
    float64 chunk by chunk for its vectorized part: over three chunks and a ragged
    end, with a broadcast operand too, float32 operands give the bits and flags of the
    same values as float64 operands, signalling NaNs included (invalid, and the one
    quiet NaN), and every 61st element is the Fraction reference's."""
    fmt = get_format("bfloat16")
    rng = np.random.default_rng(62)
    n = 3 * 4096 + 11
    a, b = (decode_codes(rng.integers(0, 1 << 16, n).astype(np.uint16), fmt)
            .astype(np.float32) for _ in range(2))
    a[::173] = np.uint32(0x7F800001).view(np.float32)  # signalling NaNs
    with np.errstate(invalid="ignore"):
        a64 = a.astype(np.float64)  # (the conversion quiets them: signal again)
    a64[::173] = np.uint64(0x7FF0000000000001).view(np.float64)
    for op in ("add", "mul", "div"):
        fn = getattr(ops, op)
        for bb in (b, b[5:6]):
            v32, fl32 = fn(a, bb, fmt, rounding="rtz", flags=True)
            v64, fl64 = fn(a64, bb.astype(np.float64), fmt, rounding="rtz", flags=True)
            assert np.array_equal(v32.view(np.uint64), v64.view(np.uint64)), op
            for flag in FLAG_NAMES:
                assert np.array_equal(getattr(fl32, flag), getattr(fl64, flag)), (op, flag)
            assert fl32.invalid[::173].all()
            bv = np.broadcast_to(bb, a.shape)
            for i in range(1, n, 61):
                want, _ = reference(op, (float(a[i]), float(bv[i])), fmt, "rtz")
                assert same(want, float(v32[i])), (op, float(a[i]), float(bv[i]))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma"])
@pytest.mark.parametrize("name", LANE_FORMATS)
def test_D7_lane_paths(name: str, op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """D5 and D7: rounded to nearest, ``+ - * / fma`` in a format of float32 values take
    the float32 lanes (numerics.kernels.ops.apply_lean: ``+ - *`` on float32 operands or
    codes; without flags also ``/`` where p <= 8 (D8) and fma in binary32) or the float64
    lanes (numerics.kernels.ops_wide: the rest, float64 operands too).
    Every element against the Fraction reference, with float32 and float64 results and
    both overflow rules; with flags (D7.3), flag for flag against the general loop."""
    import numerics.ops._driver as driver
    from numerics.dtypes import dtype_of

    fmt = get_format(name)
    assert fmt.float32_exact
    rng = np.random.default_rng(zlib.crc32(repr((name, op, "lanes")).encode()))
    xs = hard_operands(fmt, op, rng, 60)
    specials = [0.0, fmt.max, -fmt.max, fmt.smallest_subnormal, -fmt.smallest_subnormal,
                1.0, fmt.smallest_normal, fmt.max / 2]
    if fmt.has_nan:
        specials.append(math.nan)
    if fmt.has_negative_zero:
        specials.append(-0.0)
    if fmt.has_infinity:
        specials += [math.inf, -math.inf]
    sp = np.array(specials)
    grid = np.meshgrid(*([sp] * len(xs)), indexing="ij")
    xs = [np.concatenate([x, g.reshape(-1)]) for x, g in zip(xs, grid)]
    if op == "fma":
        xs = [np.concatenate([x, m]) for x, m in zip(xs, _midpoint_fma(fmt, rng, 40))]
    if not fmt.has_nan:  # an invalid operation has no result: keep to valid ones
        with np.errstate(all="ignore"):
            ok = np.isfinite(xs[0]) & np.isfinite(xs[1])
            ok &= (xs[1] != 0) if op == "div" else (xs[0] * xs[1] == xs[0] * xs[1])
        xs = [x[ok] for x in xs]
    native = dtype_of(fmt)
    operand_sets = [("float64", xs), ("float32", [x.astype(np.float32) for x in xs])]
    if native is not None and native.itemsize <= 2:
        operand_sets.append(("codes", [x.astype(native) for x in xs]))
    fn = getattr(ops, op)
    for overflow in ("ieee", "saturate"):
        want = [reference(op, tuple(float(x[i]) for x in xs), fmt, "rne", overflow)[0]
                for i in range(xs[0].size)]
        with monkeypatch.context() as m:
            m.setattr(driver, "_lanes", lambda *args: "")
            general = {t: fn(*xs, fmt, overflow=overflow, flags=True, tininess=t)[1]
                       for t in ("after", "before")}
        for kind, operands in operand_sets:
            lane = driver._lanes(op, fmt, fmt, operands[0].dtype if kind != "codes"
                                 else np.dtype(np.uint16), False)
            # (without flags: D8 takes bfloat16 products, and quotients where p <= 8)
            # (fma: binary32's own, or rounded to odd in binary32, D11 and D13)
            lean = kind != "float64" and (
                op in ("add", "sub", "mul", "fma") or op == "div" and name != "binary16")
            assert lane == ("lean" if lean else "wide")
            for dtype in (np.float32, np.float64):
                got = fn(*operands, fmt, overflow=overflow, dtype=dtype)
                assert got.dtype == dtype
                for i, w in enumerate(want):
                    args = tuple(float(x[i]) for x in xs)
                    assert same(w, float(got[i])), (name, op, kind, overflow, args, w, got[i])
            for tininess in ("after", "before"):
                got_v, got_fl = fn(*operands, fmt, overflow=overflow, flags=True,
                                   tininess=tininess)
                for i, w in enumerate(want):
                    assert same(w, float(got_v[i]))
                for flag in ("inexact", "underflow", "overflow", "invalid",
                             "divide_by_zero"):
                    g, w = getattr(got_fl, flag), getattr(general[tininess], flag)
                    bad = np.flatnonzero(g != w)
                    assert bad.size == 0, (name, op, kind, overflow, tininess, flag, [
                        tuple(float(x[i]) for x in xs) + (bool(g[i]),) for i in bad[:4]])


@pytest.mark.parametrize("name", ["e5m2", "binary16", "binary8p3"])
def test_D11_fma_rounded_to_odd_in_binary32(name: str) -> None:
    """D11: fma in the float32 lanes, where every product is an exact binary32 normal
    number, rounds ``x*y + z`` to odd at 24 bits and then to the format.  Operands
    whose exact product is a midpoint of the format near its largest values, with
    ``z`` a few of the smallest subnormals (far below binary32's ulp there, so that
    binary32's own fma lands on the midpoint): each result against the Fraction
    reference (D11.3), with flags against the general loop (D11.4); and binary32's fma followed by
    one rounding to the format is wrong on some of them (the case D11 exists for).
    (Formats whose range spans fewer than 24 + p bits, e4m3fn's, have no such
    operands: there binary32's sum is exact below the overflow threshold.)"""
    import numerics.ops._driver as driver
    from numerics import round_to

    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    vals = decode_codes(np.arange(1 << fmt.bits), fmt)
    vals = np.unique(np.abs(vals[np.isfinite(vals) & (vals != 0)]))
    a, b = rng.choice(vals, 400000), rng.choice(vals, 400000)
    ab = a * b  # exact in binary64
    lo = np.asarray(round_to(ab, fmt, rounding="rtz", overflow="saturate"))
    up = np.asarray(round_to(ab, fmt, rounding="ru", overflow="saturate"))
    mid = (ab == (lo + up) / 2) & (lo != up) & (ab < fmt.max)
    mid &= ab > 2.0**24 * fmt.smallest_subnormal  # z below binary32's half-ulp of a*b
    a, b = a[mid][:300], b[mid][:300]
    assert a.size >= 50, a.size
    sign = rng.choice([1.0, -1.0], (3, a.size))
    a, b = a * sign[0], b * sign[1]
    c = sign[2] * fmt.smallest_subnormal * rng.integers(1, 4, a.size)
    dt = np.float32
    assert driver._lanes("fma", fmt, fmt, np.dtype(dt), True) == "lean"
    assert driver._lanes("fma", fmt, fmt, np.dtype(dt), False) == "lean"
    got = ops.fma(a.astype(dt), b.astype(dt), c.astype(dt), fmt)
    got_v, got_fl = ops.fma(a.astype(dt), b.astype(dt), c.astype(dt), fmt, flags=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(driver, "_lanes", lambda *args: "")
        _, general = ops.fma(a, b, c, fmt, flags=True)
    # binary32's fma: a*b + c is exact in binary64 here (at most 2**17 over 2**-24)
    naive = np.asarray(round_to((a * b + c).astype(dt), fmt))
    wrong = 0
    for i in range(a.size):
        w = reference("fma", (float(a[i]), float(b[i]), float(c[i])), fmt, "rne", "ieee")[0]
        assert same(w, float(got[i])) and same(w, float(got_v[i])), (a[i], b[i], c[i], w)
        wrong += not same(w, float(naive[i]))
    for flag in ("inexact", "underflow", "overflow", "invalid", "divide_by_zero"):
        assert np.array_equal(getattr(got_fl, flag), getattr(general, flag)), flag
    assert wrong > 0


def _d13_operands(fmt: Format, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """fma operands of ``fmt`` whose products leave binary32's normal range: products
    aimed at ``2**(2t - 148)`` (below it binary32 may round them), at binary32's
    ``2**-126``, ``2**-149`` and ``2**-150``, at ``2**128`` (binary32 overflows while
    ``x*y + z`` may not), with addends that are zero, a few of the format's smallest
    subnormals, the product's negation rounded to the format (cancellation), or
    ``-max``."""
    from numerics import round_to

    t = fmt.trailing_bits
    targets = [2.0**(2 * t - 148), 2.0**(2 * t - 149), 2.0**-126, 2.0**-140, 2.0**-149,
               2.0**-150, 2.0**-152, 2.0**128, 2.0**127 * 1.99]
    xs, ys, zs = [], [], []
    for target in targets:
        y = np.asarray(round_to(np.ldexp(rng.uniform(1, 2, n), rng.integers(-8, 9, n)),
                                fmt))
        x = np.asarray(round_to(target * rng.uniform(0.97, 1.03, n) / y, fmt,
                                overflow="saturate"))
        keep = (x != 0) & np.isfinite(x)
        x, y = x[keep] * rng.choice([1.0, -1.0], keep.sum()), y[keep]
        p = x * y  # exact in binary64
        choice = rng.integers(0, 5, x.size)
        z = np.select([choice == 0, choice == 1, choice == 2, choice == 3],
                      [np.zeros(x.size),
                       fmt.smallest_subnormal * rng.integers(-3, 4, x.size),
                       -np.asarray(round_to(p, fmt, rounding="rtz", overflow="saturate")),
                       -np.sign(p) * fmt.max],
                      np.asarray(round_to(p * rng.uniform(-2, 2, x.size), fmt,
                                          overflow="saturate")))
        xs.append(x)
        ys.append(y)
        zs.append(z)
    return [np.concatenate(v) for v in (xs, ys, zs)]


def test_D13_fma_products_outside_binary32(monkeypatch: pytest.MonkeyPatch) -> None:
    """D13: fma in the float32 lanes for a format whose products can leave binary32's
    normal range (bfloat16): products binary32 may have rounded (below ``2**(2t -
    148)``, or infinite) go to the general loop, counted without flags and marked with
    them.  Operands from :func:`_d13_operands`: each value and every flag against the
    Fraction reference, under both tininess and both overflow rules, float32 and code
    operands; without the marks, the lanes' own results are wrong on some of them
    (the case D13 exists for)."""
    import numerics.ops._driver as driver
    from numerics.dtypes import dtype_of
    from numerics.kernels.ops import apply_lean
    from numerics.kernels.rounding import format_params, overflow_code

    fmt = get_format("bfloat16")
    rng = np.random.default_rng(zlib.crc32(b"D13"))
    x, y, z = _d13_operands(fmt, rng, 12)
    native = dtype_of(fmt)
    assert native is not None
    for overflow in ("ieee", "saturate"):
        for tininess in ("after", "before"):
            want = [reference("fma", (float(u), float(v), float(w)), fmt, "rne", overflow,
                              tininess) for u, v, w in zip(x, y, z)]
            for dt in (np.float32, native):
                p, q, r = (arr.astype(dt) for arr in (x, y, z))
                assert driver._lanes("fma", fmt, fmt, p.dtype, True) == "lean"
                plain = ops.fma(p, q, r, fmt, overflow=overflow, dtype=np.float32)
                got, fl = ops.fma(p, q, r, fmt, overflow=overflow, tininess=tininess,
                                  flags=True)
                for i, (w, wf) in enumerate(want):
                    args = (x[i], y[i], z[i])
                    assert same(w, float(plain[i])), (overflow, args, w, plain[i])
                    assert same(w, float(got[i])), (overflow, args, w, got[i])
                    for flag in FLAG_NAMES:
                        assert bool(getattr(fl, flag)[i]) == wf[flag], (flag, args, tininess)
    # the lanes alone, without the general loop: wrong on some elements, and counted
    out = np.empty(x.size, np.float32)
    a, b, c = (v.astype(np.float32) for v in (x, y, z))
    count = apply_lean(4, a, b, c, driver._no_plan(), format_params(fmt),
                       overflow_code("ieee"), False, True, out, np.empty(0, np.uint8))
    wrong = sum(not same(reference("fma", (float(u), float(v), float(w)), fmt, "rne")[0],
                         float(o)) for u, v, w, o in zip(x, y, z, out))
    assert 0 < wrong <= count, (wrong, count)


def _quantum_reference(h: float, fmt: Format) -> float:
    """``h >= 0`` rounded to nearest-even to ``fmt``'s quantum at ``h`` (unbounded above),
    in exact rational arithmetic."""
    e = max(math.frexp(h)[1] - 1, fmt.emin) if h else fmt.emin
    q = Fraction(2) ** (e - fmt.trailing_bits)
    return float(round(Fraction(h) / q) * q)  # (round: half to even)


def test_D14_rounding_by_quantum() -> None:
    """D14: ``(|h| + C) - C`` with ``C = 2**(max(E, emin) + 23 - t)`` rounds a binary32
    magnitude to nearest-even on the format's grid, subnormals included, for every
    format ``quantum_fits`` takes; magnitudes from ``2**(emax + 1)`` up (and
    infinity) come out beyond ``max``, a NaN stays a NaN.  Values, midpoints, their
    binary32 neighbours, binary32 subnormals and large magnitudes against the
    Fraction reference."""
    import numba

    from numerics.kernels.ops import quantum_fits, round_by_quantum

    @numba.njit
    def run(m: np.ndarray, threshold_bits: np.uint32, shift: np.uint32) -> np.ndarray:
        out = np.empty_like(m)
        for i in range(m.size):
            out[i] = round_by_quantum(m[i], threshold_bits, shift)
        return out

    rng = np.random.default_rng(14)
    taken = []
    for name in FORMATS:
        fmt = get_format(name)
        t = fmt.trailing_bits
        if not (fmt.signed and fmt.subnormals and t <= 22 and fmt.emin - t >= -149
                and fmt.emax <= 127 and quantum_fits(t, fmt.max)):
            continue
        taken.append(name)
        vals = np.unique(np.abs(decode_codes(np.arange(1 << fmt.bits), fmt)))
        vals = vals[np.isfinite(vals)].astype(np.float32)
        mids = ((vals[1:].astype(np.float64) + vals[:-1]) / 2).astype(np.float32)
        top = np.float32(fmt.max + 2.0 ** (fmt.emax - t - 1))  # max's upper midpoint
        base = np.concatenate([vals, mids, [top, np.float32(2.0 ** (fmt.emax + 1))]])
        inf32 = np.float32(np.inf)
        near = np.concatenate([base, np.nextafter(base, inf32), np.nextafter(base, 0)])
        tiny = np.arange(0, 1 << 12, 5, dtype=np.uint32).view(np.float32)  # subnormals
        big = np.ldexp(np.float32(1), np.arange(fmt.emax + 1, 128)).astype(np.float32)
        wild = rng.integers(0, 0x7F800000, 1000, dtype=np.uint32).view(np.float32)
        h = np.concatenate([near, tiny, big, np.nextafter(big, inf32), wild,
                            [np.finfo(np.float32).max]]).astype(np.float32)
        got = run(h.view(np.uint32), np.float32(2.0 ** fmt.emin).view(np.uint32),
                  np.uint32((23 - t) << 23)).view(np.float32)
        for x, g in zip(h.tolist(), got.tolist()):
            want = _quantum_reference(x, fmt)
            if want <= fmt.max:
                assert g == want, (name, x, g, want)
            else:  # beyond max: compared as unsigned bits, as the lanes do
                assert np.float32(g).view(np.uint32) > np.float32(fmt.max).view(np.uint32), \
                    (name, x, g)
        special = run(np.array([0x7F800000, 0x7FC00000], np.uint32),
                      np.float32(2.0 ** fmt.emin).view(np.uint32), np.uint32((23 - t) << 23))
        assert special[0] == 0x7F800000 and math.isnan(special[1:].view(np.float32)[0])
    assert {"e4m3fn", "e5m2", "e2m1fn", "binary16", "binary8p1"} <= set(taken), taken
    assert "bfloat16" not in taken


def test_code_decoding() -> None:
    """The lanes decode codes by arithmetic (numerics.kernels.unpack): for every format
    of at most 16 bits that it takes, by either route of step 1 (through binary16, and
    in float32 alone), every code gives the decode table's value, the sign of each zero,
    and each NaN, signalling exactly when the table's is."""
    from numerics.kernels.ops import decode_all
    from numerics.kernels.rounding import format_params
    from numerics.kernels.unpack import decode_codes as unpack_codes
    from numerics.kernels.unpack import plan

    taken: dict[bool, list[str]] = {True: [], False: []}
    via16 = []
    exceptions: dict[tuple[str, bool], int] = {}
    for name, binary16 in itertools.product(FORMATS, (True, False)):
        fmt = get_format(name)
        if fmt.bits > 16:
            continue
        table = decode_all(format_params(fmt))
        d = plan(format_params(fmt), table, binary16)
        if d is None:
            continue
        taken[binary16].append(name)
        if d[6]:
            via16.append(name)
        got = unpack_codes(np.arange(table.size, dtype=np.uint16), d)
        nan = np.isnan(table)
        assert np.array_equal(np.isnan(got), nan), name
        quiet_want = (table[nan].view(np.uint64) >> np.uint64(51)) & np.uint64(1)
        quiet_got = (got[nan].view(np.uint32) >> np.uint32(22)) & np.uint32(1)
        assert np.array_equal(quiet_want, quiet_got.astype(np.uint64)), name
        assert np.array_equal(got[~nan].astype(np.float64), table[~nan]), name
        assert np.array_equal(np.signbit(got[~nan]), np.signbit(table[~nan])), name
        if table.size <= 256:  # 8-bit codes reach the lanes as uint8
            got8 = unpack_codes(np.arange(table.size, dtype=np.uint8), d)
            assert np.array_equal(got8.view(np.uint32), got.view(np.uint32)), name
        exceptions[name, binary16] = int((d[7:11] != 0xFFFFFFFF).sum())
    for binary16 in (True, False):
        assert {"bfloat16", "binary16", "e4m3fn", "e5m2", "e4m3fnuz", "binary8p3",
                "e2m1fn"} <= set(taken[binary16])
        # step 3 from e4m3fn's first NaN magnitude (no exception: the loop without
        # step 4); the fnuz NaN at the negative-zero code is one
        assert exceptions["e4m3fn", binary16] == exceptions["e5m2", binary16] == 0
        assert exceptions["e4m3fnuz", binary16] == 1
    # through binary16: exponent fields of at most 4 bits, or 5 with IEEE specials
    assert {"binary16", "e5m2", "e4m3fn", "e4m3fnuz", "e2m1fn", "binary8p4"} <= set(via16)
    assert not {"bfloat16", "e5m2fnuz", "binary8p3", "e8m0fnu"} & set(via16)
    # bfloat16 alone decodes by the shift (its codes reach the lanes as int16)
    from numerics.kernels.unpack import top_half

    tops = [n for n in FORMATS if get_format(n).bits <= 16
            and top_half(format_params(get_format(n)), decode_all(format_params(get_format(n))))]
    assert tops == ["bfloat16"]


def test_D1_division_double_rounding() -> None:
    """D1 for division: the binary64 quotient of two numbers of at most p <= 25 bits rounds to the
    same value of a p-bit format as the exact quotient: every fifth pair of finite
    non-zero e4m3fn codes, and binary16 and bfloat16 pairs, against the Fraction reference;
    binary32 (p = 24) in test_D1_division_binary32."""
    from numerics import round_to

    for name, count in (("e4m3fn", None), ("binary16", 4000), ("bfloat16", 4000)):
        fmt = get_format(name)
        vals = decode_codes(np.arange(1 << fmt.bits), fmt)
        vals = vals[np.isfinite(vals) & (vals != 0)]
        if count is None:
            a, b = np.repeat(vals, vals.size), np.tile(vals, vals.size)
        else:
            rng = np.random.default_rng(7)
            a, b = rng.choice(vals, count), rng.choice(vals, count)
        q = a / b  # binary64: the exact quotient rounded once to 53 bits
        got = np.asarray(round_to(q, fmt, overflow="saturate"))
        for i in range(0, a.size, 1 if count else 5):
            exact = Fraction(float(a[i])) / Fraction(float(b[i]))
            want, _ = reference("div", (float(a[i]), float(b[i])), fmt, "rne", "saturate")
            assert same(want, float(got[i])), (name, float(a[i]), float(b[i]), exact)


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
@settings(max_examples=500, deadline=None)
def test_D1_division_binary32(xa: int, xb: int) -> None:
    """D1 for division with p = 24: float32 operands, binary64 quotient rounded to binary32 (numpy's
    conversion) equals the correctly rounded binary32 quotient (the hardware's), for
    random bit patterns including subnormal operands and results."""
    a, b = np.array([xa, xb], np.uint32).view(np.float32).astype(np.float64)
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return
    want, _ = reference("div", (float(a), float(b)), get_format("binary32"), "rne")
    with np.errstate(all="ignore"):
        got = float(np.float32(a / b))
    assert same(want, got), (a, b)


def test_result_dtype_option() -> None:
    assert ops.add(np.array([1.5], np.float32), np.array([2.0], np.float32), "bfloat16",
                   dtype=np.float32).dtype == np.float32
    assert ops.div(1.0, 3.0, "binary32", dtype=np.float32).dtype == np.float32
    assert ops.add(1.0, 2.0, "e4m3fn").dtype == np.float64
    with pytest.raises(ValueError, match="binary64"):
        ops.add(1.0, 2.0, "binary64", dtype=np.float32)
    with pytest.raises(ValueError, match="float32 and float64"):
        ops.mul(1.0, 2.0, "bfloat16", dtype=np.int32)
    with pytest.raises(TypeError, match="dtype"):
        ops.mul(1.0, 2.0, "bfloat16", dtype="nonsense-type")


def test_D5_binary32_lanes() -> None:
    """D5: + - * of e4m3fn values through binary32, every pair of finite codes (the lane
    loop of ops).  Every such sum and product is exact in float64, so ``round_to`` of
    it (encode, pinned to the exact codec elsewhere) is the correct rounding of every
    pair; the Fraction reference checks every 7th pair as well."""
    from numerics import round_to

    fmt = get_format("e4m3fn")
    codes = np.arange(256, dtype=np.uint8)
    vals = decode_codes(codes, fmt)
    finite = codes[np.isfinite(vals)]
    a = np.repeat(finite, finite.size)
    b = np.tile(finite, finite.size)
    va, vb = decode_codes(a, fmt), decode_codes(b, fmt)
    for op, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
        got = getattr(ops, op)(va.astype(np.float32), vb.astype(np.float32), fmt,
                               dtype=np.float32)
        with np.errstate(all="ignore"):
            h = f(va.astype(np.float32), vb.astype(np.float32))  # RN_24
        if op == "mul":  # D5.2: the products are exact in binary32
            assert np.array_equal(h.astype(np.float64), f(va, vb))
        want_all = np.asarray(round_to(f(va, vb), fmt))  # exact in float64, rounded once
        both_nan = np.isnan(want_all) & np.isnan(got)
        same_value = (want_all == got) & (np.signbit(want_all) == np.signbit(got))
        bad = np.nonzero(~(same_value | both_nan))[0]
        assert bad.size == 0, (op, va[bad[:3]], vb[bad[:3]], got[bad[:3]])
        for i in range(0, a.size, 7):
            want, _ = reference(op, (float(va[i]), float(vb[i])), fmt, "rne")
            assert same(want, float(got[i])), (op, float(va[i]), float(vb[i]))


@pytest.mark.parametrize("name", ["binary16", "bfloat16"])
def test_D5_1_sums_near_midpoints(name: str) -> None:
    """D5.1 where binary32 itself rounds: ``x + y`` and ``x - y`` with ``y`` within a few
    of its own quanta of half a quantum of ``x`` (a sum just off, or on, a midpoint of
    the format), and with ``y`` far below that (binary32's rounding of the sum is then
    inexact), against the Fraction reference."""
    from numerics import round_to

    fmt = get_format(name)
    t = fmt.trailing_bits
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = 150
    x = np.asarray(round_to(np.ldexp(rng.uniform(1, 2, n), rng.integers(-12, 14, n)), fmt))
    e = np.floor(np.log2(x)).astype(np.int64)
    half = np.ldexp(1.0, e - t - 1)
    xs, ys = [], []
    for j in (-3, -1, 0, 1, 3):
        ys.append(half * (1 + j * 2.0**-t))
        xs.append(x)
    for gap in (14, 20, 26):  # far below half a quantum: binary32 rounds the sum
        ys.append(np.ldexp(rng.uniform(1, 2, n), e - t - gap))
        xs.append(x)
    a = np.concatenate(xs)
    b = np.asarray(round_to(np.concatenate(ys), fmt))
    inexact = 0
    for op, f in (("add", np.add), ("sub", np.subtract)):
        got = getattr(ops, op)(a.astype(np.float32), b.astype(np.float32), fmt,
                               dtype=np.float32)
        inexact += int(np.count_nonzero(
            f(a.astype(np.float32), b.astype(np.float32)).astype(np.float64) != f(a, b)))
        for i in range(a.size):
            want, _ = reference(op, (float(a[i]), float(b[i])), fmt, "rne")
            assert same(want, float(got[i])), (op, float(a[i]), float(b[i]))
    assert inexact > 0  # the cases reach binary32's own rounding


@given(st.integers(0, 2**16 - 1), st.integers(0, 2**16 - 1),
       st.sampled_from(["binary16", "bfloat16"]), st.sampled_from(["add", "sub", "mul"]))
@settings(max_examples=300, deadline=None)
def test_D5_binary32_lanes_16bit(ca: int, cb: int, name: str, op: str) -> None:
    """D5 for binary16 and bfloat16 codes (bfloat16 products take the float64 lanes)."""
    fmt = get_format(name)
    a, b = (float(v) for v in decode_codes(np.array([ca, cb], np.uint16), fmt))
    if not (math.isfinite(a) and math.isfinite(b)):
        return
    want, _ = reference(op, (a, b), fmt, "rne")
    got = getattr(ops, op)(np.array([a], np.float32), np.array([b], np.float32), fmt,
                           dtype=np.float32)
    assert same(want, float(got[0])), (name, op, a, b)


@pytest.mark.parametrize("name", ["bfloat16", "e4m3fn", "e5m2", "binary8p3"])
def test_D8_products_and_quotients_through_binary32(name: str) -> None:
    """D8: without flags, ``*`` and ``/`` of formats with ``p <= 8`` and ``emin >= 3t - 147``
    round through binary32 then to the format.  Operands aimed at the format's
    midpoints (subnormal ones first, where binary32 itself rounds the product or
    quotient), every element against the Fraction reference, float32 and code operands."""
    from numerics import round_to
    from numerics.dtypes import dtype_of
    from numerics.kernels.ops import lean_fits

    fmt = get_format(name)
    assert lean_fits(fmt.trailing_bits, fmt.emin, fmt.emax, 2)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = 400
    q = fmt.emin - fmt.trailing_bits  # the quantum's exponent
    k = np.concatenate([rng.integers(0, 8, n // 2), rng.integers(0, 2**fmt.trailing_bits, n // 2)])
    lift = rng.integers(0, 3, n)  # subnormal midpoints, and some a binade or two above
    mid = np.ldexp(2.0 * k + 1, q - 1 + lift) * rng.choice([1.0, -1.0], n)
    y = np.asarray(round_to(np.ldexp(rng.uniform(1, 2, n), rng.integers(-4, 5, n)), fmt))
    x_div = np.asarray(round_to(mid * y, fmt, overflow="saturate"))
    x_mul = np.asarray(round_to(mid / y, fmt, overflow="saturate"))
    smallest = np.full(8, fmt.smallest_subnormal)
    steps = -np.arange(8)
    cases = {"div": (np.concatenate([x_div, smallest]), np.concatenate([y, 2.0**steps])),
             "mul": (np.concatenate([x_mul, smallest]),
                     np.concatenate([y, np.ldexp(1.5, steps)]))}
    native = dtype_of(fmt)
    for op, (a, b) in cases.items():
        a, b = np.asarray(round_to(a, fmt)), np.asarray(round_to(b, fmt))
        keep = b != 0
        a, b = a[keep], b[keep]
        want = [reference(op, (float(u), float(v)), fmt, "rne")[0] for u, v in zip(a, b)]
        for operands in ((a.astype(np.float32), b.astype(np.float32)),
                         (a.astype(native), b.astype(native))):
            got = getattr(ops, op)(*operands, fmt, dtype=np.float32)
            for i, w in enumerate(want):
                assert same(w, float(got[i])), (name, op, float(a[i]), float(b[i]), w, got[i])


@pytest.mark.parametrize("name", ["bfloat16", "e4m3fn", "e5m2", "binary8p3"])
def test_D8_2_D8_3_overflow_through_binary32(name: str) -> None:
    """D8.3 (and D8.2's quotients at the top): without flags, products and quotients
    around the format's overflow threshold (its largest midpoint and beyond, up to
    binary32's own infinity) round through binary32 as they round exactly, under both
    overflow rules, against the Fraction reference."""
    from numerics import round_to

    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(("D8.3", name).__repr__().encode()))
    n = 300
    y = np.asarray(round_to(np.ldexp(rng.uniform(1, 2, n), rng.integers(-6, 7, n)), fmt))
    top = np.ldexp(rng.uniform(0.9, 1.1, n), fmt.emax + 1)  # near 2**(emax + 1)
    beyond = np.ldexp(rng.uniform(1, 2, n), rng.integers(fmt.emax + 1, 140, n))
    target = np.concatenate([top, beyond, np.full(n, fmt.max)])
    yy = np.concatenate([y, y, y])
    with np.errstate(over="ignore"):
        cases = {"mul": (target / yy, yy), "div": (target * yy, yy)}
    for op, (a, b) in cases.items():
        a = np.asarray(round_to(a, fmt, overflow="saturate"))
        for overflow in ("ieee", "saturate"):
            got = getattr(ops, op)(a.astype(np.float32), b.astype(np.float32), fmt,
                                   overflow=overflow, dtype=np.float32)
            for i in range(got.size):
                w, _ = reference(op, (float(a[i]), float(b[i])), fmt, "rne", overflow)
                assert same(w, float(got[i])), (name, op, overflow, a[i], b[i], w, got[i])


@pytest.mark.parametrize("name", ["bfloat16", "e4m3fn", "e5m2", "binary8p3"])
def test_D12_products_and_quotients_with_flags(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """D12: with flags, ``*`` and ``/`` of the D8 formats stay in the float32 lanes, their
    flags from exact checks, and elements with ``|h|`` below ``2**-125`` are marked for
    the general loop.  Results aimed at the format's tininess boundary and subnormals,
    at binary32's (``2**-125``, ``2**-126``, ``2**-149``, ``2**-150``, where bfloat16's
    products and quotients are rounded or lost by binary32) and at overflow: each value
    against the Fraction reference and every flag against the general loop, under both
    tininess and both overflow rules, float32 and code operands; bfloat16 marks some
    elements, so both paths run."""
    import numerics.ops._driver as driver
    from numerics import round_to
    from numerics.dtypes import dtype_of

    fmt = get_format(name)
    rng = np.random.default_rng(zlib.crc32(("D12", name).__repr__().encode()))
    targets = [2.0**fmt.emin, 2.0**fmt.emin * (1 - 2.0**-(fmt.precision + 1)),
               fmt.smallest_subnormal, fmt.smallest_subnormal * 0.75, 2.0**-125, 2.0**-126,
               2.0**-140, 2.0**-149, 2.0**-150, fmt.max, fmt.max * 1.01, 1.0]
    n = 40
    y = np.asarray(round_to(np.ldexp(rng.uniform(1, 2, n), rng.integers(-6, 7, n)), fmt,
                            overflow="saturate"))
    a: dict[str, list[np.ndarray]] = {"mul": [], "div": []}
    b: dict[str, list[np.ndarray]] = {"mul": [], "div": []}
    for target in targets:
        t = target * rng.uniform(0.9, 1.1, n) * rng.choice([1.0, -1.0], n)
        for op, x in (("div", t * y), ("mul", t / y)):
            x = np.asarray(round_to(x, fmt, overflow="saturate"))
            keep = (x != 0) & np.isfinite(x)
            a[op].append(x[keep])
            b[op].append(y[keep])
    seen: list[int] = []
    real = driver._redo

    def counting(*args: Any) -> None:  # how many elements the lanes left to the general loop
        seen.append(int((args[-1] >= driver_general()).sum()))
        real(*args)

    monkeypatch.setattr(driver, "_redo", counting)
    native = dtype_of(fmt)
    for op in ("mul", "div"):
        x, yy = np.concatenate(a[op]), np.concatenate(b[op])
        assert driver._lanes(op, fmt, fmt, np.dtype(np.float32), True) == "lean"
        for overflow in ("ieee", "saturate"):
            want = [reference(op, (float(u), float(v)), fmt, "rne", overflow)[0]
                    for u, v in zip(x, yy)]
            for tininess in ("after", "before"):
                with monkeypatch.context() as m:
                    m.setattr(driver, "_lanes", lambda *args: "")
                    _, general = getattr(ops, op)(x, yy, fmt, overflow=overflow,
                                                  tininess=tininess, flags=True)
                for operands in ((x.astype(np.float32), yy.astype(np.float32)),
                                 (x.astype(native), yy.astype(native))):
                    got, fl = getattr(ops, op)(*operands, fmt, overflow=overflow,
                                               tininess=tininess, flags=True)
                    for i, w in enumerate(want):
                        assert same(w, float(got[i])), (name, op, x[i], yy[i], w, got[i])
                    for flag in ("inexact", "underflow", "overflow", "invalid",
                                 "divide_by_zero"):
                        g, w = getattr(fl, flag), getattr(general, flag)
                        bad = np.flatnonzero(g != w)
                        assert bad.size == 0, (name, op, overflow, tininess, flag,
                                               [(x[i], yy[i]) for i in bad[:4]])
    assert seen and (sum(seen) > 0) == (name == "bfloat16"), seen


def driver_general() -> int:
    """The mark of an element left to the general loop (numerics.kernels.ops.GENERAL)."""
    from numerics.kernels.ops import GENERAL

    return GENERAL


@pytest.mark.parametrize("op", ["mul", "div", "fma"])
def test_D9_binary32_flags(op: str) -> None:
    """D9: binary32's own ``*``, ``/`` and fma with flags in the float32 lanes, results
    aimed at the tininess boundaries ``2**-126`` and ``(1 - 2**-25) 2**-126``, at the
    smallest subnormal, at overflow and at exact results, flag for flag against the
    Fraction reference under both tininess rules and both overflow rules; with every
    pair and triple of special operands for D9.4's invalid and divide_by_zero."""
    import numerics.ops._driver as driver

    fmt = get_format("binary32")
    assert driver._lanes(op, fmt, fmt, np.dtype(np.float32), True) == "lean"
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    n = 100
    y = (rng.uniform(1, 2, n) * np.ldexp(1.0, rng.integers(-20, 21, n))).astype(np.float32)
    x = (rng.uniform(1, 2, n) * np.ldexp(1.0, rng.integers(-150, -100, n))).astype(np.float32)
    targets = [2.0**-126, 2.0**-126 * (1 - 2.0**-25), 2.0**-126 * (1 - 2.0**-24),
               2.0**-149, 2.0**-150, 2.0**128, 1.5]
    cols: list[list[np.ndarray]] = [[], [], []]
    for target in targets:
        with np.errstate(over="ignore"):  # (2**128 * y: binary32's infinity)
            if op == "fma":  # x * y + z near the target
                c = (target - x.astype(np.float64) * y).astype(np.float32)
                base = [x, y, c]
            else:
                a = (target * y) if op == "div" else (target / y.astype(np.float64))
                base = [a.astype(np.float32), y, y]
        for step in (-1, 0, 1):  # binary32 neighbours of the first (fma: last) operand
            k = 2 if op == "fma" else 0
            moved = [np.nextafter(v, np.float32(np.inf * step)) if step and j == k else v
                     for j, v in enumerate(base)]
            for col, v in zip(cols, moved):
                col.append(v)
    sign = rng.choice(np.array([1, -1], np.float32), len(cols[0]) * n)
    xs = [np.concatenate(col) for col in cols]
    xs[0] = xs[0] * sign
    if op == "fma":
        xs[2] = xs[2] * sign
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-149, 3.0], np.float32)
    grid = np.meshgrid(*([special] * 3), indexing="ij")
    xs = [np.concatenate([v, g.reshape(-1)]) for v, g in zip(xs, grid)]
    if op == "fma":  # binary64's sum is the boundary itself; the exact one is not
        u = 2.0**-23
        rows = np.array([[2.0**-126 * (1 + u), -(2.0**-60) * (1 + u), 2.0**-126],  # 2**-126-
                         [2.0**-126 * (1 + u), 2.0**-60 * (1 + u), -(2.0**-126)],
                         [2.0**-75 * (1 + u), -(2.0**-76) * (1 - u), 2.0**-126],  # m+
                         [2.0**-75 * (1 + u), 2.0**-76 * (1 - u), -(2.0**-126)]])
        xs = [np.concatenate([v, rows[:, j].astype(np.float32)]) for j, v in enumerate(xs)]
    args_of = xs if op == "fma" else xs[:2]
    for overflow in ("ieee", "saturate"):
        for tininess in ("after", "before"):
            got, fl = getattr(ops, op)(*args_of, fmt, flags=True, tininess=tininess,
                                       overflow=overflow)
            for i in range(got.size):
                args = tuple(float(v[i]) for v in args_of)
                want, wfl = reference(op, args, fmt, "rne", overflow, tininess)
                assert same(want, float(got[i])), (op, args, want, got[i])
                for name, w in wfl.items():
                    assert bool(getattr(fl, name)[i]) == w, (op, tininess, args, name, w)


@pytest.mark.parametrize("op", ["mul", "div"])
def test_D16_binary32_residual_flags(op: str) -> None:
    """D16: binary32's own ``*`` and ``/`` with flags from the FMA residual in float32
    lanes.  Results and operands aimed at the marking thresholds (``|h| = 2**-100`` for
    ``*``; ``|h| = 2**-125`` and ``|x| = 2**-100`` for ``/``), near-exact products and
    quotients (residuals far below binary32's range just under the thresholds, D16.1's
    example among them), subnormal operands, overflow and exact results: every value
    and flag against the Fraction reference under both tininess and both overflow
    rules, and the marks of the lane loop exactly where D16 puts them."""
    from numerics.kernels.ops import GENERAL, apply_lean
    from numerics.kernels.rounding import format_params
    from numerics.ops._driver import _no_plan

    fmt = get_format("binary32")
    rng = np.random.default_rng(zlib.crc32(("D16", op).__repr__().encode()))
    u = 2.0**-23
    n = 64
    m = rng.uniform(1, 2, n)
    cols: list[list[float]] = [[], []]

    def add(x: float, y: float) -> None:
        for sx, sy in ((1, 1), (-1, 1), (1, -1)):
            cols[0].append(sx * x)
            cols[1].append(sy * y)

    for target in (2.0**-100, 2.0**-101, 2.0**-99, 2.0**-125, 2.0**-126, 2.0**-140,
                   2.0**127, 2.0**128, 1.0):
        for k in (-60, -20, 0, 20):
            y = np.float32(m * 2.0**k)
            with np.errstate(over="ignore"):  # (beyond binary32: its infinity)
                x = np.float32(target / y.astype(np.float64) if op == "mul"
                               else target * y.astype(np.float64))
            for step in (-1, 0, 1):  # binary32 neighbours of x
                xs = np.nextafter(x, np.float32(np.inf * step)) if step else x
                for a, b in zip(xs, y):
                    add(float(a), float(b))
        # residuals of 2**-46 relative (D16.1's example, for / too): 1 +- 2**-23 factors
        for j in range(-30, 31, 3):
            if op == "mul":
                add(1 + u, target * (1 - u))
                add(2.0**j * (1 + u), target * 2.0**-j * (1 - u))
            else:
                add(target * 2.0**j * (1 + u), 2.0**j * (1 - u))
    for sub in (2.0**-149, 3 * 2.0**-149, 2.0**-127 * (1 + 2 * u)):  # subnormal operands
        for k in (10, 26, 27, 40, 60):
            add(sub, 2.0**k * (1 + u))
            add(2.0**k * (1 + u), sub)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-149, 3.0]
    for a, b in itertools.product(special, special):
        add(a, b)
    with np.errstate(over="ignore"):  # (operands beyond binary32: its infinities)
        x, y = (np.array(col, np.float32) for col in cols)
    for overflow in ("ieee", "saturate"):
        for tininess in ("after", "before"):
            got, fl = getattr(ops, op)(x, y, fmt, flags=True, tininess=tininess,
                                       overflow=overflow)
            for i in range(got.size):
                args = (float(x[i]), float(y[i]))
                want, wfl = reference(op, args, fmt, "rne", overflow, tininess)
                assert same(want, float(got[i])), (op, args, want, got[i])
                for name, w in wfl.items():
                    assert bool(getattr(fl, name)[i]) == w, (op, tininess, args, name, w)
    # the marks: exactly D16's elements, left to the general loop
    out, bits = np.empty(x.size, np.float32), np.empty(x.size, np.uint8)
    apply_lean(1 if op == "mul" else 3, x, y, x[:1], _no_plan(), format_params(fmt), 0,
               True, True, out, bits)
    xx, hh = np.abs(x.astype(np.float64)), np.abs(out.astype(np.float64))
    with np.errstate(invalid="ignore"):
        live = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
        if op == "mul":
            want_marks = live & (hh < 2.0**-100)
        else:
            want_marks = live & ((hh < 2.0**-125) | (xx < 2.0**-100))
    marks = (bits & GENERAL) != 0
    assert np.array_equal(marks, want_marks)
    assert 0 < marks.sum() < marks.size


def test_float32_lanes_flag_signalling_nans() -> None:
    """A signalling NaN operand raises invalid in the lanes too (float32 bits and bfloat16
    codes keep the quiet bit); a quiet NaN raises nothing; inf - inf is invalid."""
    import ml_dtypes

    snan = np.array([0x7F800001, 0x7FC00000, 0x7F800000], np.uint32).view(np.float32)
    other = np.array([1.0, 1.0, np.inf], np.float32)
    r, fl = ops.sub(snan, other, "binary32", flags=True)
    assert np.isnan(r).all()
    assert fl.invalid.tolist() == [True, False, True]
    assert not fl.inexact.any()
    codes = np.array([0x7F81, 0x7FC0, 0x3F80], np.uint16).view(ml_dtypes.bfloat16)
    r, fl = ops.add(codes, codes, "bfloat16", flags=True)
    assert fl.invalid.tolist() == [True, False, False]
    assert float(r[2]) == 2.0


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma"])
def test_D10_binary64_hardware_lanes(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """D10: binary64 rounded to nearest is the hardware's operation
    (numerics.kernels.ops_wide.apply_native), with the flags of ``+ - * /`` from
    error-free transformations (results near underflow and sums near overflow left to
    the general loop): every element and flag against the Fraction reference (ties,
    cancellation, subnormal and overflowing results, specials), under both overflow
    and both tininess rules, on float64 and float32 operands and with a broadcast
    operand; NaNs are the one quiet NaN of the general loop, bit for bit."""
    import numerics.ops._driver as driver

    fmt = get_format("binary64")
    rng = np.random.default_rng(zlib.crc32(repr((op, "native")).encode()))
    xs = hard_operands(fmt, op, rng, 90)
    sp = np.array([0.0, -0.0, 1.0, -3.0, fmt.max, -fmt.max, fmt.smallest_normal,
                   fmt.smallest_subnormal, -fmt.smallest_subnormal, math.inf, -math.inf,
                   math.nan, 2.0**-1074 * 3, 2.0**1023, 0.5 + 2.0**-53])
    if op == "fma":  # (15**3 triples: fewer specials)
        sp = sp[[0, 1, 2, 4, 7, 9, 11, 13]]
    grid = np.meshgrid(*([sp] * len(xs)), indexing="ij")
    xs = [np.concatenate([x, g.reshape(-1)]) for x, g in zip(xs, grid)]
    calls: list[str] = []
    real = driver._lanes

    def lanes(*args: Any) -> str:
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(driver, "_lanes", lanes)
    fn = getattr(ops, op)
    # (float32 operands: binary32's hard cases, whose binary64 results are mostly exact)
    x32 = [x.astype(np.float32) for x in hard_operands(get_format("binary32"), op, rng, 60)]
    operand_sets = [xs, x32, [xs[0][:1]] + xs[1:]]  # (the last: a broadcast operand)
    for overflow in ("ieee", "saturate"):
        for operands in operand_sets:
            size = max(x.size for x in operands)
            vals = [np.broadcast_to(x, (size,)).astype(np.float64) for x in operands]
            got = fn(*operands, fmt, overflow=overflow)
            assert calls[-1] == "native"
            for i in range(got.size):
                args = tuple(float(v[i]) for v in vals)
                want = reference(op, args, fmt, "rne", overflow)[0]
                assert same(want, float(got[i])), (op, overflow, args, want, got[i])
            for tininess in ("after", "before"):
                got_v, got_fl = fn(*operands, fmt, overflow=overflow, flags=True,
                                   tininess=tininess)
                assert calls[-1] == ("" if op == "fma" else "native")
                assert np.array_equal(got.view(np.uint64), got_v.view(np.uint64))
                for i in range(got.size):
                    args = tuple(float(v[i]) for v in vals)
                    wf = reference(op, args, fmt, "rne", overflow, tininess)[1]
                    gf = {k: bool(getattr(got_fl, k)[i]) for k in FLAG_NAMES}
                    assert gf == wf, (op, overflow, tininess, args, wf, gf)
            with monkeypatch.context() as m:
                m.setattr(driver, "_lanes", lambda *args: "")
                general = fn(*operands, fmt, overflow=overflow, flags=True)[0]
            assert np.array_equal(got.view(np.uint64), general.view(np.uint64))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e4m3fnuz"])
def test_lanes_on_every_pair_of_8bit_codes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pair of codes of an 8-bit format through ``+ - * /`` (and fma on a million
    random triples), rounded to nearest with flags and without: the lane loops (codes
    decoded in the loop, D5, D8, D11, D12) against the general loop, bit for bit and
    flag for flag, under both tininess rules."""
    import numerics.ops._driver as driver
    from numerics.dtypes import dtype_of

    fmt = get_format(name)
    dt = dtype_of(fmt)
    assert dt is not None
    codes = np.arange(256, dtype=np.uint8)
    a, b = np.repeat(codes, 256).view(dt), np.tile(codes, 256).view(dt)
    rng = np.random.default_rng(8)
    triple = [rng.integers(0, 256, 1 << 20).astype(np.uint8).view(dt) for _ in range(3)]
    for op in ("add", "sub", "mul", "div", "fma"):
        args = triple if op == "fma" else [a, b]
        assert driver._lanes(op, fmt, fmt, np.dtype(np.uint8), True) == "lean"
        fn = getattr(ops, op)
        for tininess in ("after", "before"):
            with monkeypatch.context() as m:
                m.setattr(driver, "_lanes", lambda *args: "")
                want_v, want_f = fn(*args, fmt, flags=True, tininess=tininess)
            got_v, got_f = fn(*args, fmt, flags=True, tininess=tininess)
            plain = fn(*args, fmt)
            def bits(v: np.ndarray) -> np.ndarray:  # (NaNs as one NaN; zeros keep signs)
                return np.where(np.isnan(v), np.nan, v).view(np.uint64)

            for got in (got_v, plain):
                assert np.array_equal(bits(got), bits(want_v)), (op, tininess)
            for flag in ("inexact", "underflow", "overflow", "invalid", "divide_by_zero"):
                bad = np.flatnonzero(getattr(got_f, flag) != getattr(want_f, flag))
                assert bad.size == 0, (op, tininess, flag, [
                    tuple(float(x[i]) for x in args) for i in bad[:4]])
