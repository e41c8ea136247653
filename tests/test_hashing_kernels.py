"""The compiled hash kernels: pinned to the results of the numpy implementation they
replaced, identical for every thread count and input layout.

``PINNED`` holds SHA-256 prefixes of the outputs that the previous (numpy) byte and
emulated-float implementations gave on the deterministic inputs of :func:`_cases`
(numpy 2.x ``default_rng(2024)``); each kernel reproduces them bit for bit.
The independent references (mmh3, xxhash, the exact rational spatial/poly
references) are in tests/test_hashing.py.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from typing import Any

import mmh3
import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.hashing import fnv1a32, murmur3_32, poly_hash, spatial_hash, xxh32
from numerics.kernels.hash import PARALLEL_MIN_WORK
from numerics.threads import get_num_threads, set_num_threads

PINNED = {
    "fnv 0": "fda7a9113557c29f",
    "murmur 0": "86f5fe5ae0e6b7b5",
    "xxh 0": "ab94b775ae6bd36c",
    "fnv 1": "0b1a3650b47a50ce",
    "murmur 1": "a0da607563c3a462",
    "xxh 1": "f4366e603e60f3b2",
    "fnv 3": "6e99994b45d44575",
    "murmur 3": "2630ca5447ccae48",
    "xxh 3": "e524d8c8863bda86",
    "fnv 4": "0fab6eb82320675d",
    "murmur 4": "30b556277ff4888c",
    "xxh 4": "df95f09dd714b055",
    "fnv 7": "9eb5fe94a1fae8cc",
    "murmur 7": "612d3d5df4928bac",
    "xxh 7": "e48dce94c7305aa1",
    "fnv 15": "6008a632d3bd1c34",
    "murmur 15": "3f50490c4985aa2b",
    "xxh 15": "2ca741eb10e66614",
    "fnv 16": "2ad581f5aa5c0f1e",
    "murmur 16": "de33ff7cfdf453c0",
    "xxh 16": "c9c06dbf16c5f2d2",
    "fnv 17": "824754a62c64fefe",
    "murmur 17": "12364a05d58eb649",
    "xxh 17": "7f116c125e1e946f",
    "fnv 31": "316f3845e2112144",
    "murmur 31": "a782e28ae8bd8b57",
    "xxh 31": "344a5512f7df2f25",
    "fnv 32": "dafaa301c7efe4b3",
    "murmur 32": "fbaf1f97522f6bd2",
    "xxh 32": "e2dc52ce66538195",
    "fnv 33": "3cf3016c5ac98483",
    "murmur 33": "dd1d854ff3b3f180",
    "xxh 33": "83c5513decc99688",
    "fnv 100": "c8c8f9842562b448",
    "murmur 100": "02f5934096b081fd",
    "xxh 100": "b7cb61009e6ff9a4",
    "spatial uint32 524288": "949b3101fd4b55a8",
    "spatial uint32 4294967296": "bfa7125d945c39ea",
    "spatial uint32 1000003": "fde0fe1fef43ccbd",
    "poly uint32 31 4294967296": "6d8056a550eae904",
    "poly uint32 1000003 1000000007": "d053402666e2eb85",
    "poly uint32 257 65521": "04e172426fd405cd",
    "spatial float32 524288": "72065fd3368557f0",
    "spatial float32 4294967296": "98ff29aabd8c5c22",
    "spatial float32 1000003": "9390ae237611bd54",
    "poly float32 31 4294967296": "e73312734609b13d",
    "poly float32 1000003 1000000007": "56781d7bb5a3f32a",
    "poly float32 257 65521": "d168c7c83cbedfe0",
    "spatial bfloat16 524288": "60d317e8286307e7",
    "spatial bfloat16 4294967296": "2995b43323b164f0",
    "spatial bfloat16 1000003": "3ff96597adebfe8b",
    "poly bfloat16 31 4294967296": "5d9932845d398e5c",
    "poly bfloat16 1000003 1000000007": "4e0329be21b691d9",
    "poly bfloat16 257 65521": "f50ecbbd8685565b",
    "spatial float16 524288": "75e19fce24c840b6",
    "spatial float16 4294967296": "75e19fce24c840b6",
    "spatial float16 1000003": "75e19fce24c840b6",
    "poly float16 13 4001": "233dc99c329c7018",
}


def _digest(a: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, np.uint32).tobytes()).hexdigest()[:16]


def _cases() -> Iterator[tuple[str, Any]]:
    """(name, thunk) in the order the pinned digests were drawn."""
    rng = np.random.default_rng(2024)
    for L in (0, 1, 3, 4, 7, 15, 16, 17, 31, 32, 33, 100):
        keys = rng.integers(0, 256, size=(257, L), dtype=np.uint8)
        yield f"fnv {L}", lambda k=keys: fnv1a32(k)
        yield f"murmur {L}", lambda k=keys: murmur3_32(k, seed=0x9747B28C)
        yield f"xxh {L}", lambda k=keys: xxh32(k, seed=0xDEADBEEF)
    for arith in ("uint32", "float32", "bfloat16", "float16"):
        hi = 2**24 if arith != "float16" else 2**6
        pr = (1, 2654435761, 805459861) if arith != "float16" else (1, 31, 997)
        coords = rng.integers(0, hi, size=(1000, 3))
        for table in (2**19, 2**32, 1000003):
            yield (f"spatial {arith} {table}",
                   lambda c=coords, t=table, p=pr, a=arith: spatial_hash(c, t, primes=p,
                                                                         arithmetic=a))
        toks = rng.integers(0, 2**12 if arith != "float16" else 50, size=(500, 9))
        for base, mod in ((31, 2**32), (1_000_003, 10**9 + 7), (257, 65521)):
            if arith == "float16":
                base, mod = 13, 4001
            yield (f"poly {arith} {base} {mod}",
                   lambda t=toks, b=base, m=mod, a=arith: poly_hash(t, b, modulus=m,
                                                                    arithmetic=a))


def test_kernels_reproduce_the_numpy_implementation() -> None:
    got = {name: _digest(thunk()) for name, thunk in _cases()}
    assert got == PINNED


def test_results_do_not_depend_on_the_thread_count() -> None:
    rng = np.random.default_rng(5)
    # above PARALLEL_MIN_WORK element steps, so that more than one thread runs
    keys = rng.integers(0, 256, size=(50_000, 23), dtype=np.uint8)
    coords = rng.integers(0, 2**24, size=(400_000, 3))
    toks = rng.integers(0, 2**12, size=(160_000, 7))
    assert min(keys.size, coords.size, toks.size) > PARALLEL_MIN_WORK
    calls: list[Callable[[], Any]] = [lambda: fnv1a32(keys), lambda: murmur3_32(keys, seed=7),
                                      lambda: xxh32(keys, seed=7)]
    for a in ("uint32", "float32", "bfloat16"):
        calls.append(partial(spatial_hash, coords, 2**20, arithmetic=a))
        calls.append(partial(poly_hash, toks, 1_000_003, modulus=10**9 + 7, arithmetic=a))
    before = get_num_threads()
    try:
        results = []
        for n in sorted({1, min(2, before), before}):
            set_num_threads(n)
            results.append([c() for c in calls])
    finally:
        set_num_threads(before)
    for r in results[1:]:
        for a, b in zip(r, results[0]):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("layout", ["fortran", "strided", "negative"])
def test_key_layouts(layout: str) -> None:
    rng = np.random.default_rng(11)
    base = rng.integers(0, 256, size=(40, 38), dtype=np.uint8)
    keys = {"fortran": np.asfortranarray(base), "strided": base[::2, ::2],
            "negative": base[::-1, ::-1]}[layout]
    rows = [bytes(r) for r in keys]
    assert murmur3_32(keys, seed=3).tolist() == [mmh3.hash(r, 3, signed=False) for r in rows]
    assert xxh32(keys, seed=3).tolist() == [xxhash.xxh32_intdigest(r, 3) for r in rows]
    assert fnv1a32(keys).tolist() == [int(fnv1a32(r)) for r in rows]


def test_empty_inputs() -> None:
    assert fnv1a32(np.zeros((0, 5), np.uint8)).shape == (0,)
    assert murmur3_32(np.zeros((3, 0), np.uint8)).tolist() == [mmh3.hash(b"", 0, signed=False)] * 3
    assert spatial_hash(np.zeros((0, 3), np.int64), 16).shape == (0,)
    assert poly_hash(np.zeros((2, 0), np.int64), 31, arithmetic="float32").tolist() == [0, 0]


def test_spatial_overflow_reported_before_a_later_prime() -> None:
    """float16: column 0's product overflows before prime 1 rounds to inf; the columns
    are hashed in order, so the product is reported (as the numpy version did)."""
    with pytest.raises(ValueError, match=r"coords\[:, 0\] \* primes\[0\].*key 1"):
        spatial_hash(np.array([[1, 1], [5000, 1]]), 16, primes=(100, 2654435761),
                     arithmetic="float16")
    with pytest.raises(ValueError, match=r"primes\[1\]=2654435761"):
        spatial_hash(np.array([[1, 1], [50, 1]]), 16, primes=(100, 2654435761),
                     arithmetic="float16")


def test_poly_overflow_names_the_first_step_and_key() -> None:
    toks = np.array([[1, 1, 1], [60000, 1, 1]])
    with pytest.raises(ValueError, match=r"h\*base overflows it \(key 1"):
        poly_hash(toks, 2, modulus=65504, arithmetic="float16")


@settings(max_examples=300, deadline=None)
@given(x=st.one_of(st.floats(min_value=2.0**23, max_value=float(np.float32(3.4e38)), width=32),
                   st.integers(0, 2**24).map(float)),
       m=st.one_of(st.integers(1, 2**32), st.sampled_from([1, 2, 3, 2**32, 2**32 - 1,
                                                           10**9, 65521])))
def test_int_mod_is_fmod_of_integers(x: float, m: int) -> None:
    """The poly_hash reduction: integer remainder of an integer-valued float32, exactly
    IEEE fmod's result (which never rounds)."""
    from numerics.kernels.hash import int_mod

    got = int(int_mod(np.float32(x), np.uint64(m)))
    assert got == int(Fraction(x)) % m
    if m < 2**24 or float(np.float32(m)) == m:
        assert got == math.fmod(x, float(m))


# ----------------------------------------------------------------------------- XXH64 blocks
def _xxh64_blocks(data: np.ndarray, block: int) -> list[int]:
    from numerics.kernels.hash import xxh64_blocks

    out = np.empty(-(-data.size // block), np.uint64)
    xxh64_blocks(data[:data.size // 8 * 8].view("<u8"), data, block, out)
    return [int(v) for v in out]


def test_xxh64_blocks_against_xxhash_at_every_short_length() -> None:
    """Every length 0..200 (each tail path: 8-, 4- and 1-byte pieces, with and without
    32-byte stripes), one block each, against the xxhash package (C XXH64, seed 0)."""
    data = np.random.default_rng(9).integers(0, 256, 200, dtype=np.uint8)
    for n in range(201):
        got = _xxh64_blocks(data[:n].copy(), 1 << 20)
        assert got == ([xxhash.xxh64_intdigest(data[:n].tobytes())] if n else []), n


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 5000), block=st.sampled_from([32, 64, 96, 1024, 4096]),
       seed=st.integers(0, 2**32 - 1))
def test_xxh64_blocks_against_xxhash(n: int, block: int, seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    raw = data.tobytes()
    assert _xxh64_blocks(data, block) == [xxhash.xxh64_intdigest(raw[i:i + block])
                                          for i in range(0, n, block)]
