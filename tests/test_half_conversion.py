"""binary16 <-> float32 conversion in the lane kernels (numerics.kernels.lanes).

``f32_of_f16_bits`` and ``f16_bits_of_f32`` are the processor's conversion (F16C) where
the host has it, and integer steps elsewhere: on x86 without F16C, or when numba compiles
for a named CPU (``NUMBA_CPU_NAME=generic``, as portable caches are built), where LLVM
would call a runtime function that numba cannot link and the process would abort.  The
steps are checked here against numpy's float16 casts (an independent software
conversion) and against the processor itself where the host has it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numba
import numpy as np
import pytest

from numerics.kernels import lanes
from numerics.kernels.lanes import HAS_F16C, f16_bits_of_f32, f32_of_f16_bits

_by_steps_dec = numba.njit(lanes._f32_of_f16_bits_by_steps)
_by_steps_enc = numba.njit(lanes._f16_bits_of_f32_by_steps)


@numba.njit
def _decode_by_steps(codes: np.ndarray, out: np.ndarray) -> None:
    for i in range(codes.size):
        out[i] = _by_steps_dec(codes[i])


@numba.njit
def _encode_by_steps(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = _by_steps_enc(x[i])


@numba.njit
def _decode_by_processor(codes: np.ndarray, out: np.ndarray) -> None:
    for i in range(codes.size):
        out[i] = f32_of_f16_bits(codes[i])


@numba.njit
def _encode_by_processor(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = f16_bits_of_f32(x[i])


def _float32_inputs() -> np.ndarray:
    """float32 patterns: every sign and exponent with trailing bits on a stride of 4099,
    each binary16 value, each midpoint between neighbours (ties) and the float32s either
    side of each, and NaNs with each payload bit."""
    stride = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    vals = codes.view(np.float16).astype(np.float64)
    vals = np.sort(vals[np.isfinite(vals) & (vals >= 0)])
    mids = ((vals[:-1] + vals[1:]) / 2).astype(np.float32)  # exact: 12 bits at most
    edges = np.array([65504.0, 65520.0, 65536.0, 2.0**-24, 2.0**-25, 2.0**-14], np.float32)
    grid = np.concatenate([vals.astype(np.float32), mids, edges]).view(np.uint32)
    grid = np.concatenate([grid, grid + 1, grid - 1])
    payload = np.uint32(1) << np.arange(23, dtype=np.uint32)
    nans = 0x7F800000 | payload
    bits = np.concatenate([stride, grid, nans])
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def test_binary16_decode_by_steps_matches_numpy_and_the_processor() -> None:
    """Every 16-bit pattern: the value numpy's float16 cast gives (NaNs: the sign and
    payload kept, the quiet bit set, as F16C's ``vcvtph2ps`` does), and the
    processor's own result where the host has F16C."""
    codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = np.empty(codes.size, np.float32)
    _decode_by_steps(codes, got)
    want = codes.view(np.float16).astype(np.float32).view(np.uint32)
    nan = np.isnan(codes.view(np.float16))
    want[nan] |= np.uint32(0x400000)
    assert np.array_equal(got.view(np.uint32), want)
    if HAS_F16C:
        hw = np.empty(codes.size, np.float32)
        _decode_by_processor(codes, hw)
        assert np.array_equal(got.view(np.uint32), hw.view(np.uint32))


def test_binary16_encode_by_steps_matches_numpy_and_the_processor() -> None:
    """float32 inputs aimed at binary16's ties, its subnormals, its overflow threshold
    (65520 ties to the even infinity) and NaNs, plus a stride over all patterns: the
    bits of numpy's float16 cast (NaNs: the sign and the top 10 payload bits with the
    quiet bit set, as F16C's ``vcvtps2ph`` gives), and the processor's own result where
    the host has F16C."""
    bits = _float32_inputs()
    x = bits.view(np.float32)
    got = np.empty(x.size, np.uint16)
    _encode_by_steps(x, got)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    want[nan] = ((bits[nan] >> 16) & 0x8000 | 0x7E00 | (bits[nan] >> 13) & 0x3FF
                 ).astype(np.uint16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(bits[i])), hex(got[i]), hex(want[i])) for i in bad[:5]]
    if HAS_F16C:
        hw = np.empty(x.size, np.uint16)
        _encode_by_processor(x, hw)
        assert np.array_equal(got, hw)


_GENERIC_BUILD = """
import numpy as np
import numerics
from numerics.kernels import codec, lanes
assert not lanes.HAS_F16C
codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
ref = codes.view(np.float16).astype(np.float32)
out = np.empty(codes.size, np.float32)
codec.half(codes, out)                      # the conversion kernel itself, by steps
same = (out == ref) | (np.isnan(out) & np.isnan(ref))
assert same.all() and np.array_equal(np.signbit(out), np.signbit(ref))
got = numerics.decode(codes, "binary16", dtype=np.float32)
assert np.array_equal(got.view(np.uint32), out.view(np.uint32))
x = np.linspace(-70000, 70000, 100001, dtype=np.float32)
with np.errstate(over="ignore"):
    assert np.array_equal(numerics.encode(x, "binary16"), x.astype(np.float16).view(np.uint16))
print(numerics.accum.sum(np.ones(100, np.float32), "binary16").value.item())
"""


@pytest.mark.exhaustive
def test_a_build_for_a_generic_cpu_converts_binary16(tmp_path: Any) -> None:
    """With ``NUMBA_CPU_NAME=generic`` (no F16C in the target), binary16 decode, encode
    and a binary16 sum compile and give numpy's results, where LLVM's conversion would
    abort the process ("Symbol not found: __extendhfsf2").  A fresh numba cache: the
    kernels compile for the named CPU."""
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CPU_FEATURES", None)
    run = subprocess.run([sys.executable, "-c", _GENERIC_BUILD], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["100.0"]
