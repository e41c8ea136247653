"""The stochastic-rounding stream, as documented in numerics.kernels.random, against the
Python ints of tests/sr_stream.py: the draw of one element, the bulk fills the loops use
(a word hashed once and cut into slots, or viewed as bytes), and the public encode at
every place where those fills change hands (block and thread-chunk boundaries, an
unaligned start)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from sr_stream import draw as documented
from sr_stream import mix64, per_word
from thread_pool import pool

import numerics
from numerics.codec import encode_exact
from numerics.kernels import narrow
from numerics.kernels.random import draw, fill
from numerics.kernels.rounding import format_params

BITS = [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 23, 31, 32, 33, 53, 63, 64]


def test_words_hold_the_documented_number_of_draws() -> None:
    assert [per_word(k) for k in (1, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64)] == \
        [64, 16, 16, 8, 8, 4, 4, 2, 2, 1, 1]
    # with one draw per word, a draw is the word's top bits (the stream of sr_bits=None)
    assert documented(5, 7, 53) == documented(5, 7, 64) >> 11


@pytest.mark.parametrize("bits", BITS)
def test_draw_and_fill_follow_the_documented_stream(bits: int) -> None:
    dtype = np.uint32 if bits <= 32 else np.uint64
    for seed in (0, 99, 2**64 - 1):
        for base in (0, 1, 6, 64, 4093, 2**40 + 5):
            want = [documented(seed, base + i, bits) for i in range(70)]
            got = [int(draw(np.uint64(seed), np.uint64(base + i), np.int64(bits)))
                   for i in range(70)]
            assert got == want
            for n in (0, 1, 9, 70):
                out = np.empty(n, dtype)
                fill(out, np.uint64(mix64(seed)), base, bits)
                assert out.tolist() == want[:n], (seed, base, n)


def test_slots_of_a_word_are_distinct_and_uniform() -> None:
    """The 8 draws of a word are its 8 bytes: none repeated, and over many words each
    value and each slot's value are close to uniform (catches a slot read twice or a
    shift that drops bits)."""
    out = np.empty(1 << 16, np.uint32)
    fill(out, np.uint64(mix64(3)), 0, 8)
    counts = np.bincount(out, minlength=256)
    assert counts.min() > 150 and counts.max() < 370  # mean 256
    pairs = out.reshape(-1, 8)
    assert np.mean(pairs[:, 0] == pairs[:, 1]) < 0.01  # 1/256 expected
    for j in range(8):
        assert abs(pairs[:, j].mean() - 127.5) < 6


@pytest.mark.parametrize("sr_bits", [1, 3, 8, 16, 23, 31, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_encode_draws_the_documented_stream(sr_bits: int | None, dtype: type,
                                            threads: int) -> None:
    """Every sampled element of a 70k array (across the loops' 4096-element blocks and
    the threads' 65536-element pieces) rounds as encode_exact with its documented
    draw."""
    x: np.ndarray = (np.random.default_rng(1).standard_normal(70_000) * 0.05 + 0.3).astype(dtype)
    k = 64 if sr_bits is None else sr_bits
    if threads > pool():
        pytest.skip(f"numba has fewer than {threads} threads here")
    previous = numerics.get_num_threads()
    numerics.set_num_threads(threads)
    try:
        got = numerics.encode(x, "e4m3fn", rounding="sr", rng=12345, sr_bits=sr_bits)
    finally:
        numerics.set_num_threads(previous)
    for i in [*range(0, 20), *range(4090, 4100), *range(65530, 65542), 69_999]:
        want = encode_exact(float(x[i]), "e4m3fn", rounding="sr", sr_bits=sr_bits,
                            uniform=Fraction(documented(12345, i, k), 2**k))
        assert int(got[i]) == want, (i, x[i])


@pytest.mark.parametrize("sr_bits", [8, 16, 5])
def test_a_span_that_starts_inside_a_word(sr_bits: int) -> None:
    """The lane kernel's span from an index that is not a multiple of the draws per word
    gives the codes of the whole array there."""
    x = (np.random.default_rng(2).standard_normal(9000) * 3).astype(np.float32)
    P = format_params("e4m3fn")
    whole = np.empty(x.size, np.uint8)
    narrow.sr_span(x, whole, 0, x.size, P, False, np.uint64(7), sr_bits, False)
    part = np.zeros(x.size, np.uint8)
    narrow.sr_span(x, part, 3, x.size, P, False, np.uint64(7), sr_bits, False)
    assert np.array_equal(part[3:], whole[3:])
