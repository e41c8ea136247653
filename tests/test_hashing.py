"""Tests of numerics.hashing: byte hashes against peers, float kernels against exact arithmetic.

Independent references used here:
* ``mmh3`` and ``xxhash`` (C implementations) and the published FNV-1a test vectors;
* a Fraction/int reimplementation of the emulated float kernels, with explicit
  round-to-nearest-even to p bits written below (not the library's rounding);
* a brute-force bucket count for ``collision_report``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import mmh3
import numpy as np
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics.hashing import (
    ARITHMETICS,
    Arithmetic,
    CollisionReport,
    collision_report,
    fnv1a32,
    murmur3_32,
    poly_hash,
    spatial_hash,
    xxh32,
)

# ----------------------------------------------------------------------------- byte hashes
#: FNV-1a 32-bit test vectors from the FNV reference test suite (fnv_test_str,
#: draft-eastlake-fnv; http://www.isthe.com/chongo/src/fnv/test_fnv.c).
FNV1A32_VECTORS: list[tuple[bytes, int]] = [
    (b"", 0x811C9DC5),
    (b"a", 0xE40C292C),
    (b"b", 0xE70C2DE5),
    (b"c", 0xE60C2C52),
    (b"d", 0xE10C2473),
    (b"e", 0xE00C22E0),
    (b"f", 0xE30C2799),
    (b"fo", 0x6222E842),
    (b"foo", 0xA9F37ED7),
    (b"foob", 0x3F5076EF),
    (b"fooba", 0x39AAA18A),
    (b"foobar", 0xBF9CF968),
]


@pytest.mark.parametrize("key, expected", FNV1A32_VECTORS)
def test_fnv1a32_published_vectors(key: bytes, expected: int) -> None:
    h = fnv1a32(key)
    assert isinstance(h, np.uint32)
    assert int(h) == expected


def test_fnv1a32_batch_equals_vectors_same_length() -> None:
    keys = [k for k, _ in FNV1A32_VECTORS if len(k) == 1]
    arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 1)
    expected = [v for k, v in FNV1A32_VECTORS if len(k) == 1]
    assert fnv1a32(arr).tolist() == expected


LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 19, 20, 31, 32, 33, 47, 48, 63, 64, 100]


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("seed", [0, 1, 0x9747B28C, 0xFFFFFFFF])
def test_murmur3_and_xxh32_match_peers(length: int, seed: int) -> None:
    rng = np.random.default_rng(length * 7919 + seed % 1000)
    keys = rng.integers(0, 256, size=(40, length), dtype=np.uint8)
    keys[0] = 0
    keys[1] = 255
    m = murmur3_32(keys, seed=seed)
    x = xxh32(keys, seed=seed)
    assert m.dtype == np.uint32 and m.shape == (40,)
    assert x.dtype == np.uint32 and x.shape == (40,)
    for i in range(keys.shape[0]):
        key = keys[i].tobytes()
        assert int(m[i]) == mmh3.hash(key, seed, signed=False)
        assert int(x[i]) == xxhash.xxh32_intdigest(key, seed)


@settings(max_examples=150, deadline=None)
@given(key=st.binary(max_size=80), seed=st.integers(0, 2**32 - 1))
def test_byte_hashes_single_key_match_peers(key: bytes, seed: int) -> None:
    m, x = murmur3_32(key, seed=seed), xxh32(key, seed=seed)
    assert isinstance(m, np.uint32) and isinstance(x, np.uint32)
    assert int(m) == mmh3.hash(key, seed, signed=False)
    assert int(x) == xxhash.xxh32_intdigest(key, seed)
    expected = 0x811C9DC5
    for b in key:  # FNV-1a straight from its definition
        expected = ((expected ^ b) * 0x01000193) % 2**32
    assert int(fnv1a32(key)) == expected


def test_byte_hashes_non_contiguous_and_chunked() -> None:
    """Strided input, and more rows than one internal chunk."""
    rng = np.random.default_rng(5)
    big = rng.integers(0, 256, size=(70_000, 24), dtype=np.uint8)
    view = big[:, ::2]  # non-contiguous, 12-byte keys
    before = big.copy()
    m, x, f = murmur3_32(view, seed=3), xxh32(view, seed=3), fnv1a32(view)
    one = big[:1, :16]  # a single contiguous row: the kernels must not hash it in place
    assert int(murmur3_32(one)[0]) == mmh3.hash(one.tobytes(), 0, signed=False)
    assert int(xxh32(one)[0]) == xxhash.xxh32_intdigest(one.tobytes(), 0)
    assert np.array_equal(big, before)
    for i in (0, 1, 32767, 32768, 65535, 65536, 69_999):
        key = view[i].tobytes()
        assert int(m[i]) == mmh3.hash(key, 3, signed=False)
        assert int(x[i]) == xxhash.xxh32_intdigest(key, 3)
        assert int(f[i]) == int(fnv1a32(key))


def test_byte_hashes_empty_batch() -> None:
    for fn in (fnv1a32, murmur3_32, xxh32):
        out = fn(np.zeros((0, 16), dtype=np.uint8))
        assert out.shape == (0,) and out.dtype == np.uint32


@pytest.mark.parametrize("fn", [fnv1a32, murmur3_32, xxh32])
def test_byte_hashes_bad_input(fn: object) -> None:
    with pytest.raises(TypeError, match="data"):
        fn("abc")  # type: ignore[operator]
    with pytest.raises(TypeError, match="uint8"):
        fn(np.zeros((2, 4), dtype=np.int32))  # type: ignore[operator]
    with pytest.raises(ValueError, match="2-D"):
        fn(np.zeros(4, dtype=np.uint8))  # type: ignore[operator]
    if fn is not fnv1a32:
        with pytest.raises(ValueError, match="seed"):
            fn(b"x", seed=2**32)  # type: ignore[operator]
        with pytest.raises(ValueError, match="seed"):
            fn(b"x", seed=-1)  # type: ignore[operator]
        with pytest.raises(TypeError, match="seed"):
            fn(b"x", seed=1.0)  # type: ignore[operator]


# ----------------------------------------------------------------------------- exact reference
#: (precision p, largest finite value) of each emulated arithmetic, from IEEE 754 / bfloat16.
FLOAT_PARAMS: dict[str, tuple[int, Fraction]] = {
    "float32": (24, Fraction((2**24 - 1) * 2**104)),
    "bfloat16": (8, Fraction((2**8 - 1) * 2**120)),
    "float16": (11, Fraction(65504)),
}


def rne(x: Fraction, p: int) -> Fraction:
    """Round x >= 0 to p significant bits, ties to even, unbounded exponent (exact)."""
    if x == 0:
        return Fraction(0)
    e = math.floor(math.log2(x))
    while Fraction(2) ** e > x:  # make e exact: 2**e <= x < 2**(e+1)
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    quantum = Fraction(2) ** (e - p + 1)
    q = x / quantum
    lo = q.numerator // q.denominator
    rest = q - lo
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and lo % 2 == 1):
        lo += 1
    return lo * quantum


def fl(x: Fraction, arithmetic: str) -> Fraction | None:
    """One RNE rounding to the arithmetic's format; None where it overflows to inf."""
    p, fmax = FLOAT_PARAMS[arithmetic]
    r = rne(x, p)
    return None if r > fmax else r


def ref_spatial(coords: list[list[int]], table_size: int, primes: tuple[int, ...],
                arithmetic: str) -> list[int] | None:
    """Reference spatial hash; None when the float kernel overflows somewhere."""
    out = []
    for point in coords:
        h = 0
        for c, p in zip(point, primes):
            if arithmetic == "uint32":
                h ^= (c * p) % 2**32
                continue
            cf, pf = fl(Fraction(c), arithmetic), fl(Fraction(p), arithmetic)
            if cf is None or pf is None:
                return None
            v = fl(cf * pf, arithmetic)
            if v is None:
                return None
            assert v.denominator == 1
            h ^= int(v) % 2**32
        out.append(h % table_size)
    return out


def ref_poly(tokens: list[list[int]], base: int, modulus: int, arithmetic: str) -> list[int] | None:
    out = []
    for seq in tokens:
        if arithmetic == "uint32":
            h = 0
            for t in seq:
                h = (h * base + t) % modulus
            out.append(h)
            continue
        bf, mf = fl(Fraction(base), arithmetic), fl(Fraction(modulus), arithmetic)
        if bf is None or mf is None:
            return None
        hf = Fraction(0)
        for t in seq:
            prod = fl(hf * bf, arithmetic)
            tf = fl(Fraction(t), arithmetic)
            if prod is None or tf is None:
                return None
            s = fl(prod + tf, arithmetic)
            if s is None:
                return None
            hf = s - mf * math.floor(s / mf)  # fmod, exactly
        assert hf.denominator == 1
        out.append(int(hf) % modulus)
    return out


def boundary_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in [lo, hi] with extra weight on powers of two, their neighbours and ends."""
    special = sorted({v for k in range(hi.bit_length() + 1) for v in (2**k - 1, 2**k, 2**k + 1)
                      if lo <= v <= hi} | {lo, hi})
    return st.one_of(st.sampled_from(special), st.integers(lo, hi))


PRIMES = st.one_of(
    st.sampled_from([1, 2654435761, 805459861, 2**24 + 1, 2**25 + 3, 3 * 2**24 + 1,
                     2**32 - 1, 0, 31, 65503, 65521]),
    boundary_ints(0, 2**32 - 1),
)


# ----------------------------------------------------------------------------- exact residues
@settings(max_examples=300, deadline=None)
@given(x=st.one_of(
    st.floats(min_value=2.0**23, max_value=float(np.float32(3.4e38)), width=32),
    st.integers(0, 2**24).map(float),
))
def test_int_mod_2_32_is_exact_at_every_magnitude(x: float) -> None:
    """The XOR operand is the exact integer mod 2**32, also far above 2**63 (no int64 cast)."""
    from numerics.kernels.hash import int_mod_2_32_array

    got = int_mod_2_32_array(np.array([x], dtype=np.float32))
    assert got.dtype == np.uint32
    assert int(got[0]) == int(Fraction(x)) % 2**32


# ----------------------------------------------------------------------------- spatial_hash
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    coords=st.lists(st.lists(boundary_ints(0, 2**24 - 1), min_size=3, max_size=3),
                    min_size=1, max_size=6),
    primes=st.tuples(PRIMES, PRIMES, PRIMES),
    log_table=st.integers(0, 32),
    odd_table=st.booleans(),
    arithmetic=st.sampled_from(ARITHMETICS),
)
def test_spatial_hash_matches_exact_reference(coords: list[list[int]], primes: tuple[int, ...],
                                              log_table: int, odd_table: bool,
                                              arithmetic: Arithmetic) -> None:
    table = 2**log_table - 1 if odd_table and log_table > 0 else 2**log_table
    expected = ref_spatial(coords, table, primes, arithmetic)
    if expected is None:
        with pytest.raises(ValueError, match="overflow|inf"):
            spatial_hash(np.array(coords), table, primes=primes, arithmetic=arithmetic)
        return
    got = spatial_hash(np.array(coords), table, primes=primes, arithmetic=arithmetic)
    assert got.dtype == np.uint32 and got.shape == (len(coords),)
    assert got.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(
    coords=st.lists(st.lists(st.integers(0, 255), min_size=2, max_size=2), min_size=1, max_size=6),
    primes=st.tuples(st.integers(0, 255), st.integers(0, 255)),
    arithmetic=st.sampled_from(["float16", "bfloat16"]),
    table=st.sampled_from([2**16, 4096, 1021, 7]),
)
def test_spatial_hash_small_formats_without_overflow(coords: list[list[int]],
                                                     primes: tuple[int, int],
                                                     arithmetic: Arithmetic, table: int) -> None:
    """Small primes and coordinates: float16 never overflows, rounding still happens; tables
    below the hashes' range, so that the reduction modulo the table is exercised too (the
    pinned float16 digests of test_hashing_kernels have tables above it: all equal)."""
    expected = ref_spatial(coords, table, primes, arithmetic)
    assert expected is not None
    got = spatial_hash(np.array(coords), table, primes=primes, arithmetic=arithmetic)
    assert got.tolist() == expected


def test_spatial_hash_instant_ngp_prime_rounds() -> None:
    """2654435761 becomes 2654435840 in float32 (quantum 2**8 in [2**31, 2**32))."""
    one = spatial_hash(np.array([[0, 1, 0]]), 2**32, arithmetic="float32")
    assert one.tolist() == [2654435840]
    assert spatial_hash(np.array([[0, 1, 0]]), 2**32).tolist() == [2654435761]
    # A single point gives a scalar.
    s = spatial_hash(np.array([5, 6, 7]), 2**20)
    assert isinstance(s, np.uint32)
    assert [int(s)] == ref_spatial([[5, 6, 7]], 2**20, (1, 2654435761, 805459861), "uint32")


def test_spatial_hash_float16_default_primes_overflow() -> None:
    with pytest.raises(ValueError, match=r"primes\[1\]=2654435761.*float16"):
        spatial_hash(np.array([[1, 2, 3]]), 2**10, arithmetic="float16")


def test_spatial_hash_fewer_dims_uses_leading_primes() -> None:
    got = spatial_hash(np.array([[3, 4]]), 2**32)
    assert got.tolist() == [3 ^ (4 * 2654435761 % 2**32)]


def test_spatial_hash_bad_input() -> None:
    pts = np.array([[1, 2, 3]])
    with pytest.raises(TypeError, match="coords"):
        spatial_hash(np.array([[1.0, 2.0, 3.0]]), 16)
    with pytest.raises(TypeError, match="coords"):
        spatial_hash(np.array([[True, False, True]]), 16)
    with pytest.raises(ValueError, match="coords"):
        spatial_hash(np.array([[1, 2, 2**24]]), 16)
    with pytest.raises(ValueError, match="coords"):
        spatial_hash(np.array([[1, -2, 3]]), 16)
    with pytest.raises(ValueError, match="table_size"):
        spatial_hash(pts, -8)
    with pytest.raises(ValueError, match="table_size"):
        spatial_hash(pts, 0)
    with pytest.raises(ValueError, match="table_size"):
        spatial_hash(pts, 2**32 + 1)
    with pytest.raises(TypeError, match="table_size"):
        spatial_hash(pts, 16.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="arithmetic"):
        spatial_hash(pts, 16, arithmetic="float64")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="primes"):
        spatial_hash(pts, 16, primes=(1, 2**32, 3))
    with pytest.raises(ValueError, match="len\\(primes\\)"):
        spatial_hash(np.array([[1, 2, 3, 4]]), 16)
    with pytest.raises(ValueError, match="shape"):
        spatial_hash(np.zeros((2, 2, 3), dtype=np.int64), 16)


# ----------------------------------------------------------------------------- poly_hash
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tokens=st.lists(st.lists(boundary_ints(0, 2**24 - 1), min_size=0, max_size=6),
                    min_size=1, max_size=4).filter(lambda rows: len({len(r) for r in rows}) == 1),
    base=PRIMES,
    modulus=st.one_of(st.just(2**32), boundary_ints(1, 2**32), st.sampled_from([10**9 + 7, 65521])),
    arithmetic=st.sampled_from(ARITHMETICS),
)
def test_poly_hash_matches_exact_reference(tokens: list[list[int]], base: int, modulus: int,
                                           arithmetic: Arithmetic) -> None:
    arr = np.array(tokens, dtype=np.int64).reshape(len(tokens), len(tokens[0]))
    expected = ref_poly(tokens, base, modulus, arithmetic)
    if expected is None:
        with pytest.raises(ValueError, match="overflow|inf"):
            poly_hash(arr, base, modulus=modulus, arithmetic=arithmetic)
        return
    got = poly_hash(arr, base, modulus=modulus, arithmetic=arithmetic)
    assert got.dtype == np.uint32 and got.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(
    seq=st.lists(st.integers(0, 2000), min_size=1, max_size=8),
    base=st.integers(0, 200),
    modulus=st.integers(1, 300),  # h < 300, so h*base + token < 62000 < 65504
    arithmetic=st.sampled_from(["float16", "bfloat16"]),
)
def test_poly_hash_small_formats(seq: list[int], base: int, modulus: int,
                                 arithmetic: Arithmetic) -> None:
    expected = ref_poly([seq], base, modulus, arithmetic)
    assert expected is not None
    got = poly_hash(np.array(seq), base, modulus=modulus, arithmetic=arithmetic)
    assert isinstance(got, np.uint32) and int(got) == expected[0]


def test_poly_hash_float32_rounded_modulus() -> None:
    """10**9 + 7 is not a float32 number: the kernel reduces by 10**9 (its rounding)."""
    toks = np.array([[123456, 654321, 111111]])
    got = poly_hash(toks, 31, modulus=10**9 + 7, arithmetic="float32")
    assert got.tolist() == ref_poly(toks.tolist(), 31, 10**9 + 7, "float32")
    assert poly_hash(toks, 31, modulus=10**9 + 7).tolist() == [
        ((123456 * 31 + 654321) * 31 + 111111) % (10**9 + 7)
    ]


def test_poly_hash_bad_input() -> None:
    toks = np.array([[1, 2, 3]])
    with pytest.raises(TypeError, match="tokens"):
        poly_hash(np.array([[1.5, 2.0]]), 31)
    with pytest.raises(ValueError, match="tokens"):
        poly_hash(np.array([[1, 2**24]]), 31)
    with pytest.raises(ValueError, match="tokens"):
        poly_hash(np.array([[-1, 2]]), 31)
    with pytest.raises(ValueError, match="base"):
        poly_hash(toks, 2**32)
    with pytest.raises(TypeError, match="base"):
        poly_hash(toks, 31.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="modulus"):
        poly_hash(toks, 31, modulus=0)
    with pytest.raises(ValueError, match="modulus"):
        poly_hash(toks, 31, modulus=2**32 + 1)
    with pytest.raises(ValueError, match="modulus=4294967296.*float16"):
        poly_hash(toks, 31, arithmetic="float16")
    with pytest.raises(ValueError, match="arithmetic"):
        poly_hash(toks, 31, arithmetic="int32")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- collision_report
def ref_report(hashes: list[int], m: int) -> tuple[int, int, int, Fraction, Fraction]:
    loads = Counter(hashes)
    n = len(hashes)
    used = len(loads)
    max_load = max(loads.values(), default=0)
    expected = n - m * (1 - (1 - Fraction(1, m)) ** n)
    if n == 0:
        chi = Fraction(0)
    else:
        e = Fraction(n, m)
        chi = sum(((loads.get(j, 0) - e) ** 2 / e for j in range(m)), Fraction(0))
    return used, max_load, n - used, expected, chi


@settings(max_examples=150, deadline=None)
@given(data=st.data(), m=st.integers(1, 64))
def test_collision_report_matches_brute_force(data: st.DataObject, m: int) -> None:
    hashes = data.draw(st.lists(st.integers(0, m - 1), max_size=200))
    r = collision_report(np.array(hashes, dtype=np.int64), m)
    used, max_load, coll, expected, chi = ref_report(hashes, m)
    assert isinstance(r, CollisionReport)
    assert (r.n, r.table_size, r.buckets_used, r.max_load, r.collisions) == (
        len(hashes), m, used, max_load, coll)
    assert r.expected_collisions == pytest.approx(float(expected), rel=1e-12, abs=1e-9)
    assert r.chi_square == pytest.approx(float(chi), rel=1e-12, abs=1e-9)


def test_collision_report_huge_table_and_uniform_hash() -> None:
    rng = np.random.default_rng(0)
    n, m = 100_000, 2**32
    r = collision_report(rng.integers(0, m, n, dtype=np.uint64).astype(np.uint32), m)
    # E[collisions] = n - m(1 - (1 - 1/m)^n) ~ n^2 / (2m) ~ 1.16
    assert r.expected_collisions == pytest.approx(n * (n - 1) / (2 * m), rel=1e-3)
    murmur = murmur3_32(np.arange(n, dtype=np.uint32).view(np.uint8).reshape(n, 4)) % 4096
    rep = collision_report(murmur, 4096)
    # A good hash: chi-square near m - 1 (sd sqrt(2(m-1)) ~ 90).
    assert abs(rep.chi_square - 4095) < 6 * 91


def test_collision_report_bad_input() -> None:
    with pytest.raises(ValueError, match="table_size"):
        collision_report(np.array([0, 1]), -4)
    with pytest.raises(ValueError, match="table_size=4"):
        collision_report(np.array([0, 4]), 4)
    with pytest.raises(TypeError, match="hashes"):
        collision_report(np.array([0.5]), 4)
    with pytest.raises(ValueError, match="hashes"):
        collision_report(np.zeros((2, 2), dtype=np.int64), 4)


@pytest.mark.parametrize("call", [
    lambda: spatial_hash(np.array([[1, 2, 3]], dtype="m8"), 16),
    lambda: spatial_hash(np.array([[1, 2, 3]], dtype="m8[s]"), 16),
    lambda: poly_hash(np.array([[1, 2, 3]], dtype="m8[ns]"), 16),
    lambda: collision_report(np.array([1], dtype="m8[s]"), 4),
])
def test_time_spans_are_not_integers(call: Callable[[], object]) -> None:
    # review: numpy makes timedelta64 an np.integer, so these were hashed as integers (or
    # failed inside int() with a message naming neither argument nor value)
    with pytest.raises(TypeError, match=r"with dtype=timedelta64"):
        call()


def test_an_object_array_of_numpy_integers_is_taken_as_a_list_of_them() -> None:
    coords = [[1, 2, 3], [4, 5, 6]]
    want = spatial_hash(np.array(coords), 1021).tolist()
    boxed = np.array([[np.int64(v) for v in row] for row in coords], dtype=object)
    assert spatial_hash(boxed, 1021).tolist() == want
