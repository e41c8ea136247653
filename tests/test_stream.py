"""Streaming stores (numerics.kernels.stream) in the encode and decode loops.

A loop with ``stream`` set computes its blocks into a scratch array and writes them
with aligned streaming stores; the elements before the output reaches a 32-byte
boundary and after the last full block take ordinary stores.  These tests check that
block logic at every alignment and at sizes around the block edges, against the peers
(ml_dtypes and numpy casts, independent of our loops), that nothing is written outside
the output, and that large public calls, which stream, give the peers' bits.

The encode tests are in the ``exhaustive`` tier, which ``.ci/run`` runs: no other test
of the default tier reaches the streaming encode loops, and compiling them (every
rounding shape of the nearest-even loop, once for 8-bit and once for 16-bit codes)
took about 40 of the tier's 410 CPU-seconds of compiling in a fresh clone.  The
decode tests, whose loops compile in about a second each, stay in the default tier.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numba
import numpy as np
import pytest
from thread_pool import pool

import numerics
from numerics.kernels import codec as kcodec
from numerics.kernels import narrow, stream
from numerics.kernels.lanes import HAS_F16C
from numerics.kernels.rounding import format_params
from numerics.threads import get_num_threads, set_num_threads

SIZES = (0, 1, 7, 31, 64, 65, 127, 128, 129, 200, 1000, 4099)
SENTINEL = 0xA5


def _patterns(n: int, seed: int) -> np.ndarray:
    """float32 values across the formats' ranges, with zeros, infinities, ties and
    subnormals (no NaN: the peers' NaN codes differ from ours by design)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0625, 448.0, 464.0, 2.0**-9,
                        3.4e38, -3.4e38, 2.0**-126, 2.0**-149], np.float32)
    x[: min(n, special.size)] = special[: min(n, special.size)]
    return x


def _guarded(n: int, offset: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """A view of ``n`` elements starting ``offset`` elements into a buffer whose other
    bytes hold :data:`SENTINEL` (so a stray store shows)."""
    buf = np.full((n + offset + 64) * np.dtype(dtype).itemsize, SENTINEL, np.uint8)
    whole = buf.view(dtype)
    return whole, whole[offset:offset + n]


def _untouched(whole: np.ndarray, offset: int, n: int) -> bool:
    raw = whole.view(np.uint8)
    k = whole.itemsize
    before, after = raw[: offset * k], raw[(offset + n) * k:]
    return bool((before == SENTINEL).all() and (after == SENTINEL).all())


@pytest.mark.exhaustive
@pytest.mark.parametrize("name, peer", [("bfloat16", ml_dtypes.bfloat16),
                                        ("e4m3fn", ml_dtypes.float8_e4m3fn),
                                        ("e5m2", ml_dtypes.float8_e5m2),
                                        ("e2m1fn", ml_dtypes.float4_e2m1fn),
                                        ("binary16", np.float16)])
def test_streamed_encode_blocks_match_the_peers_at_every_alignment(name: str,
                                                                   peer: type) -> None:
    P = format_params(name)
    fmt = numerics.get_format(name)
    for n in SIZES:
        x = _patterns(n, n)
        with np.errstate(over="ignore"):
            want: np.ndarray = x.astype(peer).view(np.uint8 if fmt.bits <= 8 else np.uint16)
        if fmt.bits == 4:
            want = want & 0xF
        for offset in range(0, 34, 3):
            whole, out = _guarded(n, offset, fmt.code_dtype)
            narrow.rne_stream_span(x, out, 0, n, P, False, False)
            np.testing.assert_array_equal(out, want, err_msg=f"{name} n={n} offset={offset}")
            assert _untouched(whole, offset, n), (name, n, offset)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["bfloat16", "binary16", "e4m3fn", "e4m3fnuz"])
def test_streamed_encode_blocks_equal_the_plain_loop_with_nans(name: str) -> None:
    # NaNs of both signs and every payload class, which the peers encode differently
    P = format_params(name)
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    bits[::7] |= np.uint32(0x7F800000)
    x = bits.view(np.float32)
    plain = np.empty(bits.size, numerics.get_format(name).code_dtype)
    narrow.rne_span(x, plain, 0, x.size, P, False, False)
    for offset in (0, 1, 5, 17):
        streamed = np.empty(bits.size + offset, plain.dtype)[offset:]
        narrow.rne_stream_span(x, streamed, 0, x.size, P, False, False)
        np.testing.assert_array_equal(streamed, plain)


@pytest.mark.parametrize("kind", ["bfloat16", "binary16"])
def test_streamed_decode_blocks_match_the_peers_at_every_alignment(kind: str) -> None:
    if kind == "binary16" and not HAS_F16C:
        pytest.skip("the host converts binary16 in software")
    peer = ml_dtypes.bfloat16 if kind == "bfloat16" else np.float16
    for n in SIZES:
        codes = np.random.default_rng(n).integers(0, 2**16, n, dtype=np.uint16)
        values = codes.view(peer).astype(np.float32)
        finite = np.isfinite(values) | np.isinf(values)
        for offset in range(0, 10):
            whole, out = _guarded(n, offset, np.float32)
            if kind == "bfloat16":
                kcodec.widen_stream_span(codes, out.view(np.uint32), 0, n, 16)
            else:
                kcodec.half_stream_span(codes, out, 0, n)
            np.testing.assert_array_equal(out.view(np.uint32)[finite],
                                          values.view(np.uint32)[finite])
            assert np.isnan(out[~finite]).all()
            assert _untouched(whole, offset, n), (kind, n, offset)


def test_wanted_streams_large_outputs_only() -> None:
    big = np.empty(stream.STREAM_MIN // 2, np.uint16)
    assert stream.wanted(big, 0, big.size)
    assert not stream.wanted(big, 1, big.size)
    assert not stream.wanted(big, 0, 1000)
    # an output no element boundary aligns (a uint16 view at an odd address) is not
    odd = np.empty(stream.STREAM_MIN + 2, np.uint8)[1:-1].view(np.uint16)
    assert not stream.wanted(odd, 0, odd.size)


@pytest.mark.exhaustive
def test_stream_encode_span_matches_the_plain_span() -> None:
    # the *_stream_span kernels, which the drivers pick for large pieces, on small
    # unaligned outputs (each compiles its own loop: a literal flag picks it)
    x = _patterns(300, 3)
    plain = np.empty(300, np.uint8)
    streamed = np.empty(301, np.uint8)[1:]
    P = format_params("e5m2")
    narrow.rne_span(x, plain, 0, 300, P, False, False)
    narrow.rne_stream_span(x, streamed, 0, 300, P, False, False)
    np.testing.assert_array_equal(streamed, plain)


def test_stream_decode_spans_match_the_plain_spans() -> None:
    x = _patterns(300, 3)
    codes = numerics.encode(x, "bfloat16")
    values = np.empty(301, np.float32)[1:]
    kcodec.widen_stream_span(codes, values.view(np.uint32), 0, 300, 16)
    np.testing.assert_array_equal(values, numerics.decode(codes, "bfloat16", dtype=np.float32))
    if HAS_F16C:
        codes = numerics.encode(x, "binary16")
        kcodec.half_stream_span(codes, values, 0, 300)
        np.testing.assert_array_equal(values, codes.view(np.float16).astype(np.float32))
        # binary16 decodes to float64 through the same loop (8-byte elements)
        for offset in range(4):
            whole, wide = _guarded(300, offset, np.float64)
            kcodec.half_stream_span(codes, wide, 0, 300)
            np.testing.assert_array_equal(wide, codes.view(np.float16).astype(np.float64))
            assert _untouched(whole, offset, 300)


@pytest.mark.exhaustive
@pytest.mark.parametrize("threads", [1, 2])
def test_large_public_calls_stream_and_match_the_peers(threads: int) -> None:
    n = stream.STREAM_MIN  # bfloat16 output 2 * STREAM_MIN bytes: each piece streams
    x = _patterns(n, 11)
    if threads > pool():
        pytest.skip(f"numba has fewer than {threads} threads here")
    before = get_num_threads()
    set_num_threads(threads)
    try:
        codes = numerics.encode(x[1:], "bfloat16")  # an output that starts unaligned
        back = numerics.decode(codes, "binary16", dtype=np.float32)
    finally:
        set_num_threads(before)
    np.testing.assert_array_equal(codes, x[1:].astype(ml_dtypes.bfloat16).view(np.uint16))
    want = codes.view(np.float16).astype(np.float32)
    same = ~np.isnan(want)
    np.testing.assert_array_equal(back.view(np.uint32)[same], want.view(np.uint32)[same])
    assert np.isnan(back[~same]).all()


def _typed_dispatchers(kernel: Any) -> set[str]:
    """The names of the compiled functions the first variant of ``kernel`` typed."""
    typemap = kernel.overloads[kernel.signatures[0]].type_annotation.typemap
    return {str(t) for t in typemap.values()}


@pytest.mark.exhaustive  # (compiles three test kernels: 5 CPU-s of a cold run)
def test_a_literal_flag_compiles_one_of_the_two_loops() -> None:
    """map_into with a literal ``stream`` builds only the loop it names (numba offers an
    overload non-literal arguments first unless it asks for literals; then both loops
    were typed and lowered in every kernel)."""

    @numba.njit
    def one(b: Any, C: Any) -> Any:
        return b + C

    @numba.njit
    def plain(x: Any, out: Any) -> None:
        stream.map_into(one, x, out, np.uint32(1), False)

    @numba.njit
    def streamed(x: Any, out: Any) -> None:
        stream.map_into(one, x, out, np.uint32(1), True)

    @numba.njit
    def either(x: Any, out: Any, flag: bool) -> None:
        stream.map_into(one, x, out, np.uint32(1), flag)

    x = np.arange(300, dtype=np.uint32)
    for kernel, args in ((plain, ()), (streamed, ()), (either, (True,))):
        out = np.zeros(300, np.uint32)
        kernel(x, out, *args)
        np.testing.assert_array_equal(out, x + 1)
    names = {k: _typed_dispatchers(k) for k in (plain, streamed, either)}
    assert any("map_plain" in n for n in names[plain])
    assert not any("map_streamed" in n for n in names[plain])
    assert any("map_streamed" in n for n in names[streamed])
    assert not any("map_plain" in n for n in names[streamed])
    assert any("map_plain" in n for n in names[either])
    assert any("map_streamed" in n for n in names[either])
