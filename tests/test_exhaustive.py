"""Exhaustive sweep: all 2**32 float32 bit patterns, encoded under RNE into every
8-bit-or-smaller format that ml_dtypes has and into bfloat16, against ml_dtypes
``astype`` of the same float32 values (ml_dtypes is correct from float32 inputs).

NaN codes are compared as a class (any NaN code matches any NaN code: payloads and
the sign of NaN differ by convention).  Formats without NaN get ``nan="zero"`` and the
NaN inputs are skipped.  e8m0fnu: the inputs where ml_dtypes 0.6.0 is wrong are
excluded (exact ties 1.5 * 2**k, which it rounds up, and float32 subnormals above
2**-127, which it sends to 2**-126); test_encode.py checks by hand that it is wrong there.

Chunks of 2**22 patterns (16 MiB each) keep memory flat.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from peers import ML_DTYPES

import numerics
from numerics.formats import get_format

pytestmark = pytest.mark.exhaustive

CHUNK = 1 << 22
FORMATS: dict[str, Any] = ML_DTYPES


def nan_code_table(name: str) -> np.ndarray:
    """Boolean table: is this code a NaN of the format (from ml_dtypes' own decoding)."""
    fmt = get_format(name)
    view = np.uint8 if fmt.bits <= 8 else np.uint16
    codes = np.arange(fmt.num_codes, dtype=view)
    with np.errstate(invalid="ignore"):
        return np.isnan(codes.view(FORMATS[name]).astype(np.float32))


def e8m0_excluded(bits: np.ndarray) -> np.ndarray:
    mag = bits & np.uint32(0x7FFFFFFF)
    tie = (mag & np.uint32(0x7FFFFF)) == np.uint32(0x400000)
    subnormal_above = (mag > np.uint32(0x400000)) & (mag < np.uint32(0x800000))
    return tie | subnormal_above


def sweep(name: str, start: int = 0, stop: int = 1 << 32) -> int:
    """Compare every float32 pattern in [start, stop); return the number compared."""
    fmt = get_format(name)
    dt = FORMATS[name]
    view = np.uint8 if fmt.bits <= 8 else np.uint16
    is_nan = nan_code_table(name)
    options: dict[str, Any] = {"nan": "zero"} if not fmt.has_nan else {}
    compared = 0
    base = np.arange(CHUNK, dtype=np.uint32)
    buf = np.empty(CHUNK, dtype=np.uint32)
    for lo in range(start, stop, CHUNK):
        n = min(CHUNK, stop - lo)
        bits = buf[:n]
        np.add(base[:n], np.uint32(lo), out=bits)
        x = bits.view(np.float32)
        ours = numerics.encode(x, fmt, **options)
        with np.errstate(over="ignore", invalid="ignore"):
            peer = x.astype(dt).view(view)
        bad = ours != peer
        if bad.any():
            idx = np.flatnonzero(bad)
            o, p = ours[idx], peer[idx]
            real = ~(is_nan[o] & is_nan[p])
            if not fmt.has_nan:
                real &= ~np.isnan(x[idx])
            if name == "e8m0fnu":
                real &= ~e8m0_excluded(bits[idx])
            if real.any():
                j = idx[real][:8]
                raise AssertionError(
                    f"{name}: {int(real.sum())} mismatches in chunk at {lo:#x}, e.g. "
                    + ", ".join(f"{int(bits[i]):#010x} ({float(x[i])!r}): ours {int(ours[i]):#x}"
                                f" ml_dtypes {int(peer[i]):#x}" for i in j)
                )
        compared += bits.size
    return compared


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_float32_pattern_matches_ml_dtypes(name: str) -> None:
    assert sweep(name) == 1 << 32


def test_every_float32_pattern_binary16_matches_numpy() -> None:
    """numpy's float32 -> float16 cast is IEEE RNE: every pattern, NaNs as a class."""
    base = np.arange(CHUNK, dtype=np.uint32)
    for lo in range(0, 1 << 32, CHUNK):
        x = (base + np.uint32(lo)).view(np.float32)
        ours = numerics.encode(x, "binary16")
        with np.errstate(over="ignore", invalid="ignore"):
            peer = x.astype(np.float16)
        same = (ours == peer.view(np.uint16)) | (np.isnan(peer) & np.isnan(
            ours.view(np.float16)))
        assert same.all(), hex(int(x.view(np.uint32)[np.flatnonzero(~same)[0]]))


@pytest.mark.parametrize("name", ["e4m3fn", "e5m2", "e2m1fn", "bfloat16", "e8m0fnu",
                                  "binary8p3", "tf32"])
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz", "ru", "rd", "rto"])
def test_every_float32_pattern_bits_kernel_matches_round_pair(name: str, rounding: str) -> None:
    """The branch-free float kernel against the scalar rounding step (round_pair, pinned
    to the exact reference by tests/test_encode_rounding.py): every sign and exponent of
    float32, the trailing bits sampled (stride 32, two phases: an exact low part and a
    sticky one), in every deterministic mode (rne included: public encode rounds to
    nearest with the lane kernels of numerics.kernels.narrow, which the ml_dtypes sweeps
    above and test_every_float32_pattern_lane_kernel_matches_bits_kernel cover)."""
    from numerics.kernels import codec as kc
    from numerics.kernels import rounding as kr

    fmt = get_format(name)
    P = kr.format_params(fmt)
    wide = not kc.fits_bits_kernel(P, False)
    starts = range(0, 1 << 32, 32 * CHUNK)
    base = np.concatenate([np.arange(0, 32 * CHUNK, 32, dtype=np.uint32),
                           np.arange(21, 32 * CHUNK, 32, dtype=np.uint32)])
    a = np.empty(base.size, fmt.code_dtype)
    b = np.empty(base.size, fmt.code_dtype)
    for lo in starts:
        x = (base + np.uint32(lo)).view(np.float32)
        if wide:
            with np.errstate(invalid="ignore"):
                x = x.astype(np.float64)
        for overflow in (0, 1):
            kc.encode_bits(x, a, P, kr.mode_code(rounding), overflow, np.uint64(0), 1, False)
            kc.encode_float(x, b, P, kr.mode_code(rounding), overflow, np.uint64(0), 1)
            assert np.array_equal(a, b), (name, rounding, overflow, lo)


def _lanes_match_bits_kernel(x: np.ndarray, a: np.ndarray, b: np.ndarray, P: np.ndarray,
                             mode: int, saturate: bool, what: str) -> None:
    """The lanes' codes of ``x`` (numerics.kernels.narrow: rne_span to nearest-even,
    directed_span in the other modes) into ``a`` equal the branch-free bits kernel's
    into ``b``, and so do their NaN counts; ``what`` names the case in a failure, with
    the first differing input's bits."""
    from numerics.kernels import codec as kc
    from numerics.kernels import narrow
    from numerics.kernels import rounding as kr

    if mode == kr.MODE_RNE:
        nans = narrow.rne_span(x, a, 0, x.size, P, saturate, True)
    else:
        nans = narrow.directed_span(x, a, 0, x.size, P, mode, saturate, True)
    assert nans == kc.encode_bits_span(x, b, 0, x.size, P, mode, int(saturate),
                                       np.uint64(0), 1, True), what
    if not np.array_equal(a, b):
        i = int(np.flatnonzero(a != b)[0])
        bits = int(x.view(np.uint64 if x.itemsize == 8 else np.uint32)[i])
        raise AssertionError(f"{what}: {bits:#0{2 + 2 * x.itemsize}x} lane "
                             f"{int(a[i]):#x} bits {int(b[i]):#x}")


@pytest.mark.parametrize("name", ["tf32", "e4m3", "e3m4", "binary8p3", "binary8p5",
                                  "e4m3fnuz"])
@pytest.mark.parametrize("saturate", [False, True])
def test_every_float32_pattern_lane_kernel_matches_bits_kernel(name: str,
                                                               saturate: bool) -> None:
    """The round-to-nearest-even lane kernel (numerics.kernels.narrow) on every float32
    pattern, for the formats ml_dtypes lacks (and e4m3fnuz, whose saturating rule
    ml_dtypes does not have), against the branch-free bits kernel (pinned to round_pair
    above), under both overflow rules; NaN counts too."""
    from numerics.kernels import narrow
    from numerics.kernels import rounding as kr

    fmt = get_format(name)
    P = kr.format_params(fmt)
    assert narrow.fits(P, False)
    base = np.arange(CHUNK, dtype=np.uint32)
    a = np.empty(CHUNK, fmt.code_dtype)
    b = np.empty(CHUNK, fmt.code_dtype)
    for lo in range(0, 1 << 32, CHUNK):
        x = (base + np.uint32(lo)).view(np.float32)
        _lanes_match_bits_kernel(x, a, b, P, kr.MODE_RNE, saturate, name)


@pytest.mark.parametrize("name, rounding, saturate", [
    ("e4m3fn", "rne", False), ("bfloat16", "rne", False), ("binary16", "rne", True),
    ("e4m3fnuz", "rne", False), ("e4m3fn", "rto", True), ("bfloat16", "rd", False),
    ("binary8p3", "rna", False)])
def test_every_float64_high_word_lane_kernel_matches_bits_kernel(name: str, rounding: str,
                                                                 saturate: bool) -> None:
    """D15's and D15.1's float64 lanes (numerics.kernels.narrow._high_loop and
    _directed_high_loop, public encode's loops for float64) on every high word, each
    with a zero low word and with a nonzero one (the lanes read only whether it is
    zero), against the branch-free bits kernel in 64-bit arithmetic (pinned to
    round_pair above); NaN counts too.  To nearest-even, one format per shape of step 3
    and of D15's scaling (bfloat16 scales its subnormal range by ``2**9``); in the
    other modes, a format with -0 (e4m3fn), the scaled one, and one without -0
    (binary8p3)."""
    from numerics.kernels import narrow
    from numerics.kernels import rounding as kr

    fmt = get_format(name)
    P = kr.format_params(fmt)
    mode = kr.mode_code(rounding)
    assert narrow.fits_high(P)
    base = np.arange(CHUNK, dtype=np.uint64) << np.uint64(32)
    a = np.empty(CHUNK, fmt.code_dtype)
    b = np.empty(CHUNK, fmt.code_dtype)
    for low in (0, 0x80000000):
        for hi in range(0, 1 << 32, CHUNK):
            x = (base + np.uint64((hi << 32) | low)).view(np.float64)
            _lanes_match_bits_kernel(x, a, b, P, mode, saturate, f"{name} {rounding}")


@pytest.mark.parametrize("name, rounding", [
    ("e4m3fn", "rtz"), ("e4m3fn", "ru"), ("e4m3fn", "rna"), ("e4m3fn", "rto"),
    ("bfloat16", "rd"), ("bfloat16", "rna"), ("binary8p3", "ru"), ("binary8p3", "rto"),
    ("e2m1fn", "rd")])
def test_every_float32_pattern_directed_lanes_match_bits_kernel(name: str,
                                                                rounding: str) -> None:
    """The lanes' other modes (numerics.kernels.narrow.directed_span, public encode's
    loop for them) on every float32 pattern against the branch-free bits kernel (pinned
    to round_pair above), under both overflow rules, for each shape of the loop: a
    format with subnormals below float32's and -0 (e4m3fn, e2m1fn), float32's exponent
    field (bfloat16), no -0 (binary8p3); NaN counts too."""
    from numerics.kernels import rounding as kr

    fmt = get_format(name)
    P = kr.format_params(fmt)
    mode = kr.mode_code(rounding)
    base = np.arange(CHUNK, dtype=np.uint32)
    a = np.empty(CHUNK, fmt.code_dtype)
    b = np.empty(CHUNK, fmt.code_dtype)
    for lo in range(0, 1 << 32, CHUNK):
        x = (base + np.uint32(lo)).view(np.float32)
        for saturate in (False, True):
            _lanes_match_bits_kernel(x, a, b, P, mode, saturate,
                                     f"{name} {rounding} saturate={saturate}")


@pytest.mark.parametrize("name, overflow", [("bfloat16", "ieee"), ("e4m3fnuz", "saturate"),
                                            ("e2m1fn", "ieee"), ("binary8p3", "ieee")])
def test_every_float32_pattern_round_to_matches_decode_of_encode(name: str,
                                                                  overflow: str) -> None:
    """round_to of float32 input (numerics.kernels.narrow's value loop, which never forms
    a code) against decode(encode(x)), float32 bits, NaN bits and zero signs included."""
    fmt = get_format(name)
    base = np.arange(CHUNK, dtype=np.uint32)
    for lo in range(0, 1 << 32, CHUNK):
        x = (base + np.uint32(lo)).view(np.float32)
        got = numerics.round_to(x, fmt, overflow=overflow, nan="zero", dtype=np.float32)
        want = numerics.decode(numerics.encode(x, fmt, overflow=overflow, nan="zero"), fmt,
                               dtype=np.float32)
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            i = int(np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))[0])
            raise AssertionError(f"{name}: {int(base[i]) + lo:#010x} round_to {got[i]!r} "
                                 f"decode(encode) {want[i]!r}")
