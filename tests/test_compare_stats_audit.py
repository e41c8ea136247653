"""Regressions from an audit of compare, stats, parts, eft and fingerprint.

Each test pins one confirmed bug; references are independent of the code under test
where there is one (a hand-built sorted value list for ULP distances, Fractions for
the error-free transformations, :meth:`float.hex` and ``printf("%a")`` for the text).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import numerics as N
from numerics.compare import compare_chunk, compare_read
from numerics.eft import two_prod, two_sum
from numerics.formats import Format, Infinity, NaNEncoding, get_format
from numerics.parts import exact_decimal, hexfloat, parts, parts_of_code

E4M3NZ = Format(name="e4m3nz", exponent_bits=4, trailing_bits=3, bias=7, subnormals=False,
                infinity=Infinity.NONE, nan=NaNEncoding.TOP)
MAX64 = float(np.finfo(np.float64).max)


# ---------------------------------------------------------------- 1: no zero
def _e4m3nz_value(code: int) -> float | None:
    """The value of an e4m3nz code, by hand: no zero, no subnormals, 0x7F/0xFF NaN."""
    mag = code & 0x7F
    if mag == 0x7F:
        return None
    value = (1 + (mag & 7) / 8) * 2.0 ** ((mag >> 3) - 7)
    return -value if code & 0x80 else value


def test_compare_codes_counts_the_step_between_plus_and_minus_min_in_a_format_without_zero(
        ) -> None:
    r = N.compare_codes(np.array([0x00, 0x01], np.uint8), np.array([0x80, 0x81], np.uint8),
                        E4M3NZ, max_ulp=0, worst=2)
    assert r.max_ulp == 3 and r.beyond == 2
    assert r.ulp_histogram == ((1, 1, 1), (3, 4, 1))
    assert [w.ulp_distance for w in r.worst] == [3, 1]
    # every pair of non-NaN codes against the position in the sorted list of all values
    value = {c: v for c in range(256) if (v := _e4m3nz_value(c)) is not None}
    codes = list(value)
    line = sorted(value.values())
    assert len(set(line)) == len(line)  # no zero, so no +-0 pair
    position = {c: line.index(v) for c, v in value.items()}
    b = np.array(codes, np.uint8)
    for ca in codes:
        a = np.full(b.size, ca, np.uint8)
        got = N.compare_codes(a, b, E4M3NZ, worst=b.size)
        want = {(int(i),): abs(position[ca] - position[c]) for i, c in enumerate(codes)
                if c != ca}
        assert {w.index: w.ulp_distance for w in got.worst} == want
        assert got.max_ulp == max(want.values())
    assert N.ulp_distance([2.0**-7], [-(2.0**-7)], E4M3NZ).tolist() == [1]


# ---------------------------------------------------------------- 2: reader checks
def _reader(x: np.ndarray) -> Callable[[int, int], np.ndarray]:
    return lambda s, e: x[s:e]


@pytest.mark.parametrize(("read_b", "error", "match"), [
    (lambda s, e: np.zeros(1, np.uint8), ValueError,
     r"Got 1 elements from read_b\(0, 2\), but it must return stop - start = 2"),
    (lambda s, e: np.zeros(5, np.uint8), ValueError, r"5 elements from read_b\(0, 2\)"),
    (lambda s, e: np.array([0xF0, 1], np.uint8), ValueError,
     r"read_b\(0, 2\) holding code 0xf0, beyond the 4-bit codes of e2m1fn"),
    (lambda s, e: np.array([1.0, 2.0]), TypeError, r"read_b\(0, 2\) of dtype float64"),
    (lambda s, e: np.array([-1, 2], np.int64), TypeError, r"read_b\(0, 2\) of dtype int64"),
    (lambda s, e: np.array([2**40, 1], np.uint64), ValueError,
     r"read_b\(0, 2\) holding code 0x10000000000"),
])
def test_compare_read_checks_every_chunk(read_b: Callable[[int, int], Any],
                                         error: type[Exception], match: str) -> None:
    a = np.array([1, 2], np.uint8)
    with pytest.raises(error, match=match):
        compare_read(_reader(a), read_b, (2,), "e2m1fn", worst=0)


def test_compare_read_names_the_chunk_of_a_short_reader_past_the_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import numerics.compare as compare_mod

    monkeypatch.setattr(compare_mod, "CHUNK", 4)
    a = np.zeros(10, np.uint16)
    with pytest.raises(ValueError, match=r"from read_a\(8, 10\)"):
        compare_read(lambda s, e: a[s:min(e, 9)], _reader(a), (10,), "bf16")
    ok = compare_read(_reader(a), _reader(a + np.uint16(1)), (2, 5), "bf16", worst=3)
    assert ok.max_ulp == 1 and len(ok.worst) == 3


def test_compare_chunk_checks_its_codes() -> None:
    fmt = get_format("e2m1fn")
    with pytest.raises(ValueError, match="ca of 3 codes and cb of 2"):
        compare_chunk(np.zeros(3, np.uint8), np.zeros(2, np.uint8), fmt)
    with pytest.raises(ValueError, match="cb holding code 0x10"):
        compare_chunk(np.zeros(2, np.uint8), np.array([0, 16], np.uint8), fmt)
    with pytest.raises(TypeError, match="ca of dtype float64"):
        compare_chunk(np.zeros(2), np.zeros(2, np.uint8), fmt)


# ---------------------------------------------------------------- 3: relative error
def test_max_rel_error_is_finite_where_the_difference_overflows() -> None:
    a = np.array([MAX64]).view(np.uint64)
    b = np.array([-1e308]).view(np.uint64)
    r = N.compare_codes(a, b, "binary64")
    # |a - b| rounded as without an exponent limit (halved, it is in range), then divided
    err = 2 * Fraction(float((Fraction(MAX64) + Fraction(1e308)) / 2))
    assert r.max_rel_error == float(err / Fraction(MAX64)) == 1.5562684646268006
    assert r.max_abs_error == math.inf  # |a - b| is beyond float64: rounds to inf
    # rtol compared on the halved values: 1.5 * |a| < |a - b| < 1.6 * |a|
    assert N.compare_codes(a, b, "binary64", rtol=1.5).beyond == 1
    assert N.compare_codes(a, b, "binary64", rtol=1.6).beyond == 0


# ---------------------------------------------------------------- 4-6: stats
def test_dynamic_range_is_finite_where_amax_over_amin_overflows() -> None:
    s = N.tensor_stats(np.array([1e300, 1e-20]), formats=("e4m3fn",))
    assert s.dynamic_range == pytest.approx(1063.016990363956, rel=1e-15)
    tiny = N.tensor_stats(np.array([2.0**1000, 2.0**-1074]), formats=("e4m3fn",))
    assert tiny.dynamic_range == 2074.0
    close = N.tensor_stats(np.array([1.0, 1.0 + 2.0**-52]), formats=("e4m3fn",))
    assert close.dynamic_range == math.log2(1.0 + 2.0**-52)


@pytest.mark.skipif(np.finfo(np.longdouble).maxexp <= 1024,
                    reason="longdouble is float64 here")
@pytest.mark.parametrize("value", ["1e400", "-1e400", "1e-4000"])
def test_longdouble_beyond_float64_is_a_value_error(value: str) -> None:
    x = np.array([np.longdouble(1), np.longdouble(value)])
    with pytest.raises(ValueError, match=r"beyond float64's range.*values.flat\[1\]"):
        N.tensor_stats(x, formats=("e4m3fn",))
    with pytest.raises(ValueError, match="beyond float64's range"):
        N.tensor_stats(lambda s, e: x[s:e], 2, formats=("e4m3fn",))


def test_longdouble_within_float64_and_non_finite_longdouble_are_read() -> None:
    x = np.array([np.longdouble("inf"), np.longdouble("nan"), np.longdouble(0), 2.0**-1074],
                 np.longdouble)
    s = N.tensor_stats(x, formats=("e4m3fn",))
    assert (s.inf, s.nan, s.zero, s.amin) == (1, 1, 1, 2.0**-1074)


def test_an_object_value_that_float64_makes_zero_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="beyond float64's range"):
        N.tensor_stats(np.array([Fraction(1, 10**4000), 1], dtype=object),
                       formats=("e4m3fn",))
    s = N.tensor_stats(np.array([Fraction(0), 2, float("inf")], dtype=object),
                       formats=("e4m3fn",))
    assert (s.zero, s.inf, s.amax) == (1, 1, 2.0)


def test_float32_stats_against_binary32_emit_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = N.tensor_stats(np.array([1.0, np.finfo(np.float32).max], np.float32),
                           formats=("binary32",))
    assert s.fits[0].saturate == 0.0


# ---------------------------------------------------------------- 7: parts sr_bits
@pytest.mark.parametrize("bits", [0, -1, 65, 2.0, True])
def test_parts_rejects_sr_bits_as_encode_does(bits: Any) -> None:
    with pytest.raises(ValueError, match=r"sr_bits=.*must be None or an int in \[1, 64\]"):
        parts(1 + 2**-9, "bf16", rounding="sr", rng=1, sr_bits=bits)
    with pytest.raises(ValueError, match="sr_bits"):
        N.encode(1 + 2**-9, "bf16", rounding="sr", rng=1, sr_bits=bits)


def test_parts_rejects_sr_bits_without_sr_and_a_bad_rng() -> None:
    with pytest.raises(ValueError, match="sr_bits only applies to rounding='sr'"):
        parts(1.0, "bf16", sr_bits=3)
    with pytest.raises(TypeError, match="rng='x'"):
        parts(1.0, "bf16", rng="x")


def test_parts_draws_as_encode_does() -> None:
    for seed in range(30):
        for bits in (None, 1, 5, 53, 64):
            x = 1 + seed / 97
            got = parts(x, "e4m3fn", rounding="sr", rng=seed, sr_bits=bits).code
            assert got == int(N.encode(x, "e4m3fn", rounding="sr", rng=seed, sr_bits=bits))
    assert parts(1 + 2**-9, "bf16", rounding="sr", rng=1, sr_bits=64).format == "bfloat16"


def test_parts_compares_the_whole_64_bit_draw_exactly() -> None:
    from numerics.kernels.codec import draws

    seed = next(s for s in range(100)
                if int(float(int(draws(np.uint64(s), 1, 64)[0]))) != int(
                    draws(np.uint64(s), 1, 64)[0]))
    u = int(draws(np.uint64(seed), 1, 64)[0])  # more than 53 significant bits
    quantum = Fraction(1, 2**7)  # bf16's ulp at 1
    # up iff u < frac * 2**64: frac one 2**-64 above u goes up, frac == u stays
    up = parts(1 + quantum * Fraction(u + 1, 2**64), "bf16", rounding="sr", rng=seed)
    down = parts(1 + quantum * Fraction(u, 2**64), "bf16", rounding="sr", rng=seed)
    assert (up.code, down.code) == (0x3F81, 0x3F80)


# ---------------------------------------------------------------- 8-9: eft bounds
def _near(e_lo: int, e_hi: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Signed binary64 values in binades e_lo..e_hi, many with all-ones or all-zeros tails."""
    e = rng.integers(e_lo, e_hi + 1, n)
    m = rng.integers(2**52, 2**53, n)
    kind = rng.integers(0, 3, n)
    m = np.where(kind == 0, 2**53 - 1 - rng.integers(0, 16, n),
                 np.where(kind == 1, 2**52 + rng.integers(0, 16, n), m))
    return np.ldexp(m.astype(np.float64), e - 52) * rng.choice([-1.0, 1.0], n)


def test_two_sum_is_exact_within_its_documented_bound_and_not_beyond() -> None:
    assert "``|a| < 2**1023`` and ``|b| < 2**1023``" in (two_sum.__doc__ or "")
    rng = np.random.default_rng(3)
    top = float.fromhex("0x1.fffffffffffffp+1022")  # the largest magnitude below 2**1023
    edge = np.array([top, -top, top, 2.0**1022, -(2.0**1022 + 3 * 2.0**970)])
    a = np.concatenate([_near(1000, 1022, 20000, rng), edge])
    b = np.concatenate([_near(1000, 1022, 20000, rng), edge[::-1]])
    s, e = two_sum(a, b)  # filterwarnings=error: no overflow either
    assert all(Fraction(x) + Fraction(y) == Fraction(p) + Fraction(q)
               for x, y, p, q in zip(a.tolist(), b.tolist(), s.tolist(), e.tolist()))
    # beyond the bound a finite sum is not enough: the audit's counterexample
    with np.errstate(over="ignore", invalid="ignore"):
        s, e = two_sum(np.array([-(2.0**1022 + 3 * 2.0**970)]), np.array([MAX64]))
    assert math.isfinite(s[0]) and math.isnan(e[0])


def test_two_prod_is_exact_within_its_documented_bound_and_not_beyond() -> None:
    assert "``|a * b| <= 2**1023``" in (two_prod.__doc__ or "")
    rng = np.random.default_rng(4)
    ea = rng.integers(30, 990, 20000)
    a = _near(0, 0, ea.size, rng) * np.ldexp(1.0, ea)
    b = _near(0, 0, ea.size, rng) * np.ldexp(1.0, 1021 - ea)  # |a * b| < 2**1023
    ones = float.fromhex("0x1.fffffffffffffp+0")
    a = np.concatenate([a, [ones * 2.0**511, ones * 2.0**995, 2.0**512]])
    b = np.concatenate([b, [ones * 2.0**510, 2.0**27, 2.0**511]])  # the last: 2**1023
    assert (np.abs(a * b) <= 2.0**1023).all()
    p, e = two_prod(a, b)  # filterwarnings=error: no overflow either
    assert all(Fraction(x) * Fraction(y) == Fraction(q) + Fraction(r)
               for x, y, q, r in zip(a.tolist(), b.tolist(), p.tolist(), e.tolist()))
    # a finite product above the bound: the 26-bit heads round up to 2**531 * 2**493
    x, y = float.fromhex("0x1.fffffffffffffp+530"), float.fromhex("0x1.fffffffffffffp+492")
    with np.errstate(over="ignore", invalid="ignore"):
        p, e = two_prod(np.array([x]), np.array([y]))
    assert math.isfinite(p[0]) and not math.isfinite(e[0])


# ---------------------------------------------------------------- 10: signed zero
def test_negative_zero_keeps_its_sign_in_text() -> None:
    assert hexfloat(-0.0) == "-0x0p+0"  # printf("%a", -0.0); float.hex: '-0x0.0p+0'
    assert (-0.0).hex().startswith("-")
    assert exact_decimal(-0.0) == "-0"
    assert hexfloat(np.float32(-0.0)) == "-0x0p+0" and exact_decimal(np.float64(-0.0)) == "-0"
    assert (hexfloat(0.0), exact_decimal(0.0), hexfloat(Fraction(0)), exact_decimal(0)) == (
        "0x0p+0", "0", "0x0p+0", "0")
    p = parts_of_code(0x80, "e4m3fn")
    assert (p.hex, p.decimal) == (hexfloat(-0.0), exact_decimal(-0.0))


# ---------------------------------------------------------------- 11: validation
def test_fingerprint_checks_its_chunks_and_shape() -> None:
    x = np.arange(7, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"Got 2 elements from chunks\(0, 7\)"):
        N.fingerprint(lambda s, e: x[:2], (7,), fmt="e4m3fn")
    with pytest.raises(ValueError, match=r"shape=\(-3,\)"):
        N.fingerprint(lambda s, e: x[s:e], (-3,), fmt="e4m3fn")
    with pytest.raises(TypeError, match=r"shape=\(2.9,\)"):
        N.fingerprint(lambda s, e: x[s:e], (2.9,), fmt="e4m3fn")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"chunks\(0, 7\) of dtype int64"):
        N.fingerprint(lambda s, e: x[s:e] if s == e else x[s:e].astype(np.int64), (7,))
    whole = N.fingerprint(x, fmt="e4m3fn")
    assert N.fingerprint(lambda s, e: x[s:e], (np.int64(7),), fmt="e4m3fn",
                         chunk=np.int64(3)) == whole


def test_tensor_stats_checks_each_chunk_length_and_formats() -> None:
    with pytest.raises(ValueError, match=r"Got 3 elements from values\(0, 10\)"):
        N.tensor_stats(lambda s, e: np.ones(3), 10)
    with pytest.raises(ValueError, match=r"Got 30 elements from values\(0, 10\)"):
        N.tensor_stats(lambda s, e: np.ones(30), 10)
    with pytest.raises(TypeError, match="formats=None"):
        N.tensor_stats(np.ones(3), formats=None)  # type: ignore[arg-type]
    assert N.tensor_stats(lambda s, e: np.ones(e - s), np.int64(10)).count == 10


def test_compare_read_rejects_a_negative_shape() -> None:
    a = np.zeros(4, np.uint16)
    with pytest.raises(ValueError, match=r"shape=\(-4,\)"):
        compare_read(_reader(a), _reader(a), (-4,), "bf16")


def test_tensor_stats_reads_torch_bfloat16() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 3e38, -(2.0**-130), 0.0], dtype=torch.bfloat16)
    got = N.tensor_stats(t, formats=("e4m3fn",))
    want = N.tensor_stats(t.float().numpy(), formats=("e4m3fn",))
    assert got == want and got.amax == float(t[1])


def test_compare_codes_takes_numpy_integers() -> None:
    a, b = np.array([1, 2, 3], np.uint8), np.array([1, 3, 6], np.uint8)
    got = N.compare_codes(a, b, "e4m3fn", worst=np.int64(2), max_ulp=np.int64(1))
    assert got == N.compare_codes(a, b, "e4m3fn", worst=2, max_ulp=1)
    assert got.beyond == 1 and len(got.worst) == 2
    assert N.compare_codes(a, b, "e4m3fn", atol=np.float32(0.25)) == N.compare_codes(
        a, b, "e4m3fn", atol=0.25)
