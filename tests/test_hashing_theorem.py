"""Checks of proofs/uint32_vs_fp32.md, claims C1 to C5 (each test names its claim).

References: numpy's float32 conversions and ``numpy.spacing`` (peers), an exact
round-to-nearest-even written here with Python integers, and the formats'
own code-to-value definition (``Format.magnitude_value``) searched by bisection.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numerics.formats import FORMATS, Format, Infinity, NaNEncoding, get_format
from numerics.hashing import collision_report, count_representable_integers, spatial_hash

F32 = get_format("binary32")
ALL_FORMATS: list[Format] = [get_format(name) for name in FORMATS]


def rne_int(n: int, p: int) -> int:
    """Round the integer n >= 0 to p significant bits, ties to even (exact, no overflow)."""
    shift = n.bit_length() - p
    if shift <= 0:
        return n
    q, r = divmod(n, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q % 2 == 1):
        q += 1
    return q << shift


def representable_by_search(n: int, fmt: Format) -> bool:
    """Whether the integer n >= 0 is a finite value of fmt: bisection over magnitude codes.

    Magnitude codes 0..max_finite_code are finite and increase with their value,
    so the search uses nothing but the format's own code-to-value map.
    """
    if n == 0:
        return fmt.has_zero
    lo, hi = 0, fmt.max_finite_code
    target = Fraction(n)
    while lo <= hi:
        mid = (lo + hi) // 2
        v = fmt.magnitude_value(mid)
        if not fmt.has_zero and mid == 0 and v == target:
            return True
        if v == target:
            return True
        if v < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return False


def claimed_representable(n: int, fmt: Format) -> bool:
    """The divisibility condition of claim C5.2 (C2 for binary32)."""
    if n == 0:
        return fmt.has_zero
    t, emin = fmt.trailing_bits, fmt.emin
    e = n.bit_length() - 1
    if e < emin:  # below the normal range: subnormal grid
        return fmt.subnormals and n % (1 << max(0, emin - t)) == 0
    return n <= fmt.max_exact and n % (1 << max(0, e - t)) == 0


def ints_near_powers(lo: int, hi: int) -> st.SearchStrategy[int]:
    special = sorted({v for k in range(hi.bit_length() + 1)
                      for d in (-3, -2, -1, 0, 1, 2, 3) for v in (2**k + d,) if lo <= v <= hi})
    return st.one_of(st.sampled_from(special), st.integers(lo, hi))


# ============================================================================ C1
def test_C1_every_small_integer_is_exact() -> None:
    """C1: all integers 0..2**24 survive int64 -> float32 -> int64 (and their negatives)."""
    step = 1 << 22
    for start in range(0, 2**24 + 1, step):
        n = np.arange(start, min(start + step, 2**24 + 1), dtype=np.int64)
        f = n.astype(np.float32)
        assert np.array_equal(f.astype(np.int64), n)
        assert np.array_equal((-n).astype(np.float32).astype(np.int64), -n)


@settings(max_examples=300, deadline=None)
@given(n=ints_near_powers(-(2**24), 2**24))
def test_C1_hypothesis_round_trip(n: int) -> None:
    """C1: |n| <= 2**24 is a binary32 number (numpy and the exact rounding agree)."""
    assert rne_int(abs(n), 24) == abs(n)
    assert int(np.float32(n)) == n
    assert representable_by_search(abs(n), F32)


def test_C1_first_non_representable() -> None:
    """C1: 2**24 + 1 is not representable; RNE sends it to 2**24 (even significand)."""
    assert not representable_by_search(2**24 + 1, F32)
    assert rne_int(2**24 + 1, 24) == 2**24
    assert int(np.float32(2**24 + 1)) == 2**24
    assert int(np.float32(2**24 + 3)) == 2**24 + 4  # the other tie goes up, to even


# ============================================================================ C2
@settings(max_examples=300, deadline=None)
@given(n=ints_near_powers(2**24, 2**32 - 1))
def test_C2_divisibility_condition(n: int) -> None:
    """C2: n in [2**24, 2**32) is binary32 iff 2**(floor(log2 n) - 23) divides n."""
    claimed = n % 2 ** (n.bit_length() - 1 - 23) == 0
    assert (int(np.float32(n)) == n) == claimed
    assert representable_by_search(n, F32) == claimed


def _count_float32_integers(bits_lo: int, bits_hi: int) -> int:
    """Number of float32 bit patterns in [bits_lo, bits_hi) that are integers of [0, 2**32).

    Negative zero is skipped so that each integer is counted once.
    """
    total = 0
    step = 1 << 24
    for start in range(bits_lo, bits_hi, step):
        bits = np.arange(start, min(start + step, bits_hi), dtype=np.uint64).astype(np.uint32)
        f = bits.view(np.float32)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(f) & (f >= 0) & (f < np.float32(2**32)) & ~np.signbit(f)
            ok &= np.floor(f) == f
        total += int(np.count_nonzero(ok))
    return total


def test_C2_count_structured_subset() -> None:
    """C2 (default tier): exact counts over every binade's edges and a few whole binades.

    Windows of 2**18 consecutive integers at the start, the middle and the end of each
    binade [2**e, 2**(e+1)), e = 24..31, hold exactly window / 2**(e-23) binary32
    numbers; the 3 * 2**23 float32 bit patterns of the binades 22, 23, 24 hold
    2**22 + 2**23 + 2**23 integers (C1's half-integers below 2**23, then all).
    """
    w = 2**18
    for e in range(24, 32):
        for start in (2**e, 2**e + 2**(e - 1), 2 ** (e + 1) - w):
            n = np.arange(start, start + w, dtype=np.int64)
            observed = int(np.count_nonzero(n.astype(np.float32).astype(np.int64) == n))
            assert observed == w // 2 ** (e - 23), (e, start)
    # Bit patterns from 2**22 (0x4A800000) up to 2**25 (0x4C000000).
    assert _count_float32_integers(0x4A800000, 0x4C000000) == 2**22 + 2**24
    assert count_representable_integers("binary32", 32) == 2**24 + 2**26 == 83_886_080


@pytest.mark.exhaustive
def test_C2_exhaustive_count_all_float32_patterns() -> None:
    """C2 (exhaustive): all 2**32 float32 bit patterns hold exactly 83,886,080 integers of
    [0, 2**32), i.e. 5/256 of them."""
    count = _count_float32_integers(0, 2**32)
    assert count == 83_886_080 == 2**24 + 2**26
    assert Fraction(count, 2**32) == Fraction(5, 256)


# ============================================================================ C3
@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=2.0**-126, max_value=float(np.nextafter(np.float32(np.inf),
                                                                      np.float32(0))),
                   width=32, exclude_max=True))
def test_C3_spacing_matches_numpy(x: float) -> None:
    """C3: in [2**e, 2**(e+1)) the binary32 spacing is 2**(e-23), finer/equal/coarser than 1."""
    e = math.frexp(x)[1] - 1  # exact: 2**e <= x < 2**(e+1)
    spacing = float(np.spacing(np.float32(x)))
    assert spacing == 2.0 ** (e - 23)
    if x < 2**23:
        assert spacing < 1
    elif x < 2**24:
        assert spacing == 1
    else:
        assert spacing >= 2


@settings(max_examples=400, deadline=None)
@given(n=ints_near_powers(2**24, 2**32 - 1))
def test_C3_rounding_error_bound(n: int) -> None:
    """C3: storing n in [2**24, 2**32) in binary32 errs by at most 2**(floor(log2 n) - 24)."""
    e = n.bit_length() - 1
    r = rne_int(n, 24)
    assert int(np.float32(n)) == r  # numpy's int -> float32 conversion agrees
    assert abs(r - n) <= 2 ** (e - 24)


def test_C3_bound_attained() -> None:
    """C3: the midpoint 2**e + 2**(e-24) attains the bound in every binade e = 24..31."""
    for e in range(24, 32):
        n = 2**e + 2 ** (e - 24)
        assert abs(int(np.float32(n)) - n) == 2 ** (e - 24)


# ============================================================================ C4
@settings(max_examples=400, deadline=None)
@given(x=st.floats(min_value=2.0**23, max_value=float(np.float32(3.0e38)), width=32),
       neg=st.booleans())
def test_C4_large_values_are_multiples(x: float, neg: bool) -> None:
    """C4: a binary32 h with |h| >= 2**(23+k) is a multiple of 2**k (k = exponent - 23)."""
    h = Fraction(-x if neg else x)
    k = math.frexp(x)[1] - 1 - 23
    assert h.denominator == 1
    assert int(h) % 2**k == 0
    for T in (0, k // 2, k, k + 5, 32):  # h mod 2**T is one of 2**max(0, T-k) values
        assert (int(h) % 2**T) % 2 ** min(k, T) == 0


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 32), frac=st.floats(0.5, 1.0, exclude_min=True, exclude_max=True),
       dt=st.integers(-4, 8), data=st.data())
def test_C4_bucket_collapse_single_term(k: int, frac: float, dt: int, data: st.DataObject) -> None:
    """C4 and C4c: predicted bucket count 2**max(0, T-k) equals the observed one.

    h = fl(c * P) with 2**(k-1) < fl(P) < 2**k and every c*fl(P) in [2**(23+k), 2**(24+k)).
    """
    T = min(max(1, k + dt), 32)
    prime = min(int(frac * 2**k), 2**32 - 1)
    pf = rne_int(prime, 24)
    assume(2 ** (k - 1) < pf < 2**k)
    c_lo = -(-(2 ** (23 + k)) // pf)  # ceil: smallest c with c*pf >= 2**(23+k)
    count = 2 ** (max(0, T - k) + 1) + 2
    assume(c_lo + count <= 2**24)
    start = data.draw(st.integers(c_lo, 2**24 - count))
    coords = np.arange(start, start + count, dtype=np.int64)[:, None]
    h = spatial_hash(coords, 2**T, primes=(prime,), arithmetic="float32")
    predicted = 2 ** max(0, T - k)
    assert collision_report(h, 2**T).buckets_used == predicted
    assert np.all(h.astype(np.int64) % 2 ** min(k, T) == 0)


P1F = rne_int(2654435761, 24)
P2F = rne_int(805459861, 24)


@pytest.mark.parametrize("lo, size, T", [(1024, 32, 19), (1024, 16, 19), (2**20, 64, 24),
                                         (3000, 24, 18)])
def test_C4_instant_ngp_fine_level(lo: int, size: int, T: int) -> None:
    """C4, C4a, C4b: instant-NGP primes in float32 on a block of a fine grid level.

    Prediction from the claims: y and z products are multiples of 2**k with
    k = min(exponent of the smallest product) - 23; x < 2**k is exact; buckets =
    (distinct x mod 2**T) * 2**max(0, T-k).  Observation: spatial_hash + collision_report.
    """
    assert (P1F, P2F) == (2654435840, 805459840)
    r = np.arange(lo, lo + size)
    grid = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    k = min((lo * P1F).bit_length() - 1, (lo * P2F).bit_length() - 1) - 23
    assert lo + size <= 2**k  # x term below 2**k (C4b applies)
    distinct_x = len({x % 2**T for x in range(lo, lo + size)})
    predicted = distinct_x * 2 ** max(0, T - k)
    observed = collision_report(spatial_hash(grid, 2**T, arithmetic="float32"), 2**T)
    assert observed.buckets_used == predicted
    exact = collision_report(spatial_hash(grid, 2**T), 2**T)
    assert exact.buckets_used > 10 * predicted  # uint32 spreads the same keys


# ============================================================================ C5
def _integer_values_by_enumeration(fmt: Format) -> list[int]:
    """Every finite non-negative integer value of fmt, decoding each magnitude code."""
    t, bias = fmt.trailing_bits, fmt.bias
    out = []
    for mag in range(fmt.max_finite_code + 1):
        field_e, frac = mag >> t, mag & ((1 << t) - 1)
        if fmt.subnormals and field_e == 0:
            sig, exp = frac, 1 - bias - t
        else:
            sig, exp = (1 << t) | frac, field_e - bias - t
        if exp >= 0:
            out.append(sig << exp)
        elif sig % (1 << -exp) == 0:
            out.append(sig >> -exp)
    return out


WIDTHS = (0, 1, 3, 8, 12, 16, 24, 32, 53, 64)


@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
def test_C5_count_every_registry_format(fmt: Format) -> None:
    """C5.4: count_representable_integers against enumeration / the closed form."""
    if fmt.bits <= 19:
        values = sorted(set(_integer_values_by_enumeration(fmt)))
        for w in WIDTHS:
            expected = sum(1 for v in values if v < 2**w)
            assert count_representable_integers(fmt, w) == expected, w
    else:  # binary32, binary64: closed form of C5.4 (emin <= 0, max far above 2**64)
        p = fmt.precision
        assert fmt.emin <= 0 and fmt.max_exact > 2**64
        for w in WIDTHS:
            expected = 2**w if w <= p else 2**p + (w - p) * 2 ** (p - 1)
            assert count_representable_integers(fmt, w) == expected, w


USER_FORMATS = [
    Format(name="emin6_sub", exponent_bits=3, trailing_bits=1, bias=-5),  # emin 6, subnormals
    Format(name="emin3_sub", exponent_bits=4, trailing_bits=3, bias=-2),
    Format(name="emin4_nosub", exponent_bits=3, trailing_bits=2, bias=-3, subnormals=False),
    Format(name="wide_e", exponent_bits=8, trailing_bits=2, bias=100),   # max near 2**158
    Format(name="no_inf", exponent_bits=5, trailing_bits=2, bias=-10, infinity=Infinity.NONE,
           nan=NaNEncoding.TOP),
]


@pytest.mark.parametrize("fmt", USER_FORMATS, ids=lambda f: f.name)
def test_C5_count_user_formats_and_wide_widths(fmt: Format) -> None:
    """C5.4 for user formats with emin > 0 (the integers below 2**emin sit on the
    subnormal grid, or are missing without subnormals) and for widths beyond 64 and
    beyond emax + 1, against enumeration of every code."""
    values = sorted(set(_integer_values_by_enumeration(fmt)))
    widths = sorted({*WIDTHS, 65, 100, fmt.emax, fmt.emax + 1, fmt.emax + 2, 1000})
    for w in widths:
        expected = sum(1 for v in values if v < 2**w)
        assert count_representable_integers(fmt, w) == expected, w


def test_C5_count_named_values() -> None:
    """C5.4: the numbers quoted in the proof."""
    assert count_representable_integers("bfloat16", 32) == 2**8 + 24 * 2**7 == 3328
    assert count_representable_integers("float16", 32) == 7168
    assert count_representable_integers("e4m3fn", 8) == 48
    assert count_representable_integers("e4m3fn", 64) == 55
    assert count_representable_integers("binary64", 64) == 2**53 + 11 * 2**52


def test_C5_count_bad_input() -> None:
    with pytest.raises(ValueError, match="width"):
        count_representable_integers("binary32", -1)
    with pytest.raises(TypeError, match="width"):
        count_representable_integers("binary32", 3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format"):
        count_representable_integers("binary33", 8)


@settings(max_examples=500, deadline=None)
@given(fmt=st.sampled_from(ALL_FORMATS), n=ints_near_powers(0, 2**64 - 1))
def test_C5_divisibility_every_format(fmt: Format, n: int) -> None:
    """C5.2: for every format, n is representable iff the divisibility condition holds."""
    assert representable_by_search(n, fmt) == claimed_representable(n, fmt)


#: User formats whose smallest normal exponent is positive (emin = 6 and 3): C5.3
#: needs e >= emin there (5 and 48 lie below 2**emin = 64 and round to 0 and 64).
HIGH_EMIN = [Format(name="emin6", exponent_bits=3, trailing_bits=1, bias=-5),
             Format(name="emin3", exponent_bits=4, trailing_bits=3, bias=-2)]


@settings(max_examples=500, deadline=None)
@given(fmt=st.sampled_from(ALL_FORMATS + HIGH_EMIN), data=st.data())
def test_C5_rounding_error_bound(fmt: Format, data: st.DataObject) -> None:
    """C5.3: for max(p, emin) <= e = floor(log2 n) and n <= max, the library's rounding
    is RNE to p bits and |fl(n) - n| <= 2**(e - p)."""
    from numerics import round_to

    p = fmt.precision
    top = min(int(fmt.max_exact), 2**80)
    low = 2 ** max(p, fmt.emin)
    assume(top >= low)
    n = data.draw(ints_near_powers(low, top))
    e = n.bit_length() - 1
    r = rne_int(n, p)
    assert Fraction(float(round_to(n, fmt))) == r, (fmt.name, n)
    assert abs(r - n) <= 2 ** (e - p)
    assert r <= fmt.max_exact or n == r  # n <= max rounds inside the finite range
    assert representable_by_search(r, fmt)


def test_C5_rounding_below_emin_is_outside_the_claim() -> None:
    """C5.3's hypothesis e >= emin is needed: below 2**emin the quantum is larger."""
    from numerics import round_to

    fmt = HIGH_EMIN[0]  # p = 2, emin = 6: 5 and 48 have e >= p but e < emin
    assert float(round_to(5, fmt)) == 0.0 and float(round_to(48, fmt)) == 64.0
    assert abs(64 - 48) > 2 ** (5 - fmt.precision)


@pytest.mark.parametrize("fmt", ALL_FORMATS, ids=lambda f: f.name)
def test_C5_small_integers(fmt: Format) -> None:
    """C5.1: with emin <= 0, every 1 <= n <= min(2**p, max) is representable (C1 for p=24)."""
    assert fmt.emin <= 0
    p = fmt.precision
    top = min(2**p, int(fmt.max_exact))
    sample = range(1, top + 1) if top <= 4096 else [1, 2, 3, top - 1, top, *range(4096, 4196)]
    assert all(representable_by_search(n, fmt) for n in sample)
    if 2**p + 1 <= fmt.max_exact:
        assert not representable_by_search(2**p + 1, fmt)


# ------------------------------------------------------------- F1 and lemmas L1-L3

@pytest.mark.parametrize("name", ["binary16", "bfloat16", "e4m3fn", "e5m2"])
def test_F1_the_binade_fixes_the_exponent(name: str) -> None:
    """F1: a normal value x in [2**e, 2**(e+1)) is M * 2**(e - t) with an integer
    2**t <= M < 2**p, and a number half a quantum off is not a value (exhaustive over
    the magnitude codes, values from the format's own code-to-value map)."""
    fmt = get_format(name)
    t = fmt.trailing_bits
    normal_codes = range(1 << t, fmt.max_finite_code + 1)  # exponent field >= 1
    for code in normal_codes:
        x = fmt.magnitude_value(code)
        e = math.floor(math.log2(x))
        while Fraction(2) ** e > x:
            e -= 1
        while Fraction(2) ** (e + 1) <= x:
            e += 1
        M = x / Fraction(2) ** (e - t)
        assert M.denominator == 1 and 2**t <= M < 2 ** (t + 1), (name, code)
    # the "iff", on a grid four times finer than the quantum over every normal binade:
    # y is a value exactly when y / 2**(e - t) is an integer and y <= max (review: the
    # check before compared x + half a quantum with x and its successor only, which
    # cannot be equal)
    values = {fmt.magnitude_value(c) for c in range(fmt.max_finite_code + 1)}
    for e in range(fmt.emin, fmt.emax + 1):
        step = Fraction(2) ** (e - t - 2)
        for k in range(1 << (t + 2)):
            y = Fraction(2) ** e + k * step
            assert (y in values) == (k % 4 == 0 and y <= fmt.max), (name, e, k)


@pytest.mark.parametrize("name", ["binary16", "bfloat16", "e4m3fn", "e5m2", "e2m1fn"])
def test_F2_consecutive_values_are_a_quantum_apart(name: str) -> None:
    """F2: consecutive positive finite values v < w with v normal (binade e) differ by
    2**(e - t), the step from a binade's last value to the next binade's 2**(e+1)
    included; the top binade's grid stops at max, below 2**(emax + 1)."""
    fmt = get_format(name)
    t = fmt.trailing_bits
    values = [fmt.magnitude_value(c) for c in range(fmt.max_finite_code + 1)]
    for v, w in zip(values[1 << t:], values[(1 << t) + 1:]):
        e = v.numerator.bit_length() - v.denominator.bit_length()
        e -= Fraction(2) ** e > v
        assert Fraction(2) ** e <= v < Fraction(2) ** (e + 1)
        assert fmt.emin <= e <= fmt.emax
        assert w - v == Fraction(2) ** (e - t), (name, v, w)
    assert values[-1] == fmt.max_exact < Fraction(2) ** (fmt.emax + 1)


@settings(max_examples=200, deadline=None)
@given(y=st.integers(0, 2**80), fmt_name=st.sampled_from(["binary32", "bfloat16", "binary16"]))
def test_L1_rounding_an_integer_gives_an_integer(y: int, fmt_name: str) -> None:
    """L1: RNE of a non-negative integer is an integer (or overflows), and products and
    sums of integer-valued floats stay integer-valued (numpy / ml_dtypes casts as peers)."""
    import ml_dtypes

    dtype = {"binary32": np.float32, "bfloat16": ml_dtypes.bfloat16,
             "binary16": np.float16}[fmt_name]
    with np.errstate(over="ignore"):
        r = float(np.array(float(Fraction(y)) if y < 2**60 else float(y)).astype(dtype))
    if math.isfinite(r):
        assert r == math.floor(r)
        fmt = get_format(fmt_name)
        if y < 2**53:  # the float64 on the way is exact: r is RNE of y itself
            assert r == rne_int(y, fmt.precision)
        with np.errstate(over="ignore"):
            prod = float(np.array(r, dtype) * np.array(r, dtype))
            total = float(np.array(r, dtype) + np.array(r, dtype))
        for v in (prod, total):
            assert not math.isfinite(v) or v == math.floor(v)


@settings(max_examples=300, deadline=None)
@given(a=st.integers(0, 2**40), b=st.integers(0, 2**40), op=st.sampled_from(["+", "*"]),
       fmt_name=st.sampled_from(["bfloat16", "binary16"]))
def test_L2_one_rounding_for_bfloat16_and_float16(a: int, b: int, op: str,
                                                 fmt_name: str) -> None:
    """L2: the binary32 operation rounded to bfloat16/float16 equals one correct rounding
    of the exact result (integers: the exact rounding is rne_int)."""
    import ml_dtypes

    dtype = {"bfloat16": ml_dtypes.bfloat16, "binary16": np.float16}[fmt_name]
    p = get_format(fmt_name).precision
    with np.errstate(over="ignore"):
        x, y = (np.array(float(v)).astype(dtype) for v in (a, b))
    if not (np.isfinite(x) and np.isfinite(y)):
        return
    xi, yi = int(float(x)), int(float(y))
    exact = xi + yi if op == "+" else xi * yi
    with np.errstate(over="ignore"):
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
        got = float((x32 + y32 if op == "+" else x32 * y32).astype(dtype))
    want = rne_int(exact, p)
    if math.isfinite(got):
        assert got == want, (xi, op, yi)
    else:  # the single rounding overflows too
        assert want > float(ml_dtypes.finfo(dtype).max)


@settings(max_examples=300, deadline=None)
@given(x=st.floats(0, float(np.float32(3e38)), width=32),
       y=st.floats(float(np.float32(1e-38)), float(np.float32(3e38)), width=32))
def test_L3_fmod_is_exact(x: float, y: float) -> None:
    """L3: fmod of representable x >= 0 and y > 0 is the exact remainder x - floor(x/y) y,
    a binary32 number (numpy's float32 fmod as the peer, Fractions as the reference)."""
    got = np.fmod(np.float32(x), np.float32(y))
    fx, fy = Fraction(x), Fraction(y)
    exact = fx - (fx // fy) * fy
    assert Fraction(float(got)) == exact
