"""Block-scaled MMA loops: Blackwell ``kind::mxf8f6f4`` and ``kind::mxf4`` / ``mxf4nvf4``.

The rules, their sources and the exact arithmetic are described in
:mod:`numerics.accum.blockscaled` and ``proofs/blockscaled_gemm.md``; this module
holds only the loops.  Every quantity is an integer:

* an element is ``sig * 2**(exp - fb)`` with ``sig`` its signed integer
  significand (implicit bit included, subnormals ``< 2**fb``), ``exp`` its
  exponent clamped below at the format's ``emin`` and ``fb`` the format's
  trailing bits;
* a block scale is ``ssig * 2**(sexp - 3)`` (E8M0: ``ssig = 8``; UE4M3: its
  significand with 3 fraction bits; 0 for a zero scale);
* ``C`` and the result are binary32 bit patterns.

A term ``sig * 2**(e - fb)`` aligned to the largest exponent ``E`` and truncated
to ``F`` fractional bits is ``trunc(sig * 2**(F + e - E - fb))``, an integer
(:func:`align`); the integers are summed exactly in int64 (bounds in the proof,
claim B6) and the sum ``T * 2**(E - F)`` is rounded toward zero to binary32
(:func:`rz_binary32`).

For the FP4 kinds the exact sums of each run of 16 products come from the caller
(one batched float32 matmul, exact because every partial sum is an integer below
``2**24``); :func:`mxf4_chain` only scales, aligns and chains them.

Each output element depends only on its row of ``A``, its column of ``B`` and its
``C``, so the rows run on the threads (serial kernels over a range of tiles of
:data:`ROW_TILE` rows, ``xxx_span``, driven by :func:`numerics.kernels.spread.spread`)
with the same bits for every thread count.
"""

from __future__ import annotations

from typing import Union

import numba
import numpy as np

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.spread import spread

#: Scalars the kernels take: Python numbers or numpy scalars (numba types them alike).
Int = Union[int, np.integer]
Float = Union[float, np.floating]

__all__ = ["ROW_TILE", "align", "mxf4_chain", "mxf4_chain_span", "mxf8f6f4_gemm",
           "mxf8f6f4_gemm_span", "rz_binary32"]

#: Binary32 quiet NaN written by the model (MMA-Sim writes 0x7FFFFFFF).
NAN_BITS = np.uint32(0x7FFFFFFF)
_PINF = np.uint32(0x7F800000)
_NINF = np.uint32(0xFF800000)


@numba.njit(cache=True, nogil=True)
def align(sig: Int, shift: Int) -> np.int64:
    """``trunc(sig * 2**shift)`` toward zero (``shift <= 40`` keeps it within int64)."""
    if sig == 0:
        return np.int64(0)
    if shift >= 0:
        return np.int64(sig << shift)
    if shift <= -63:
        return np.int64(0)
    if sig > 0:
        return np.int64(sig >> (-shift))
    return np.int64(-((-sig) >> (-shift)))


@numba.njit(cache=True, nogil=True)
def rz_binary32(total: Int, exp: Int) -> np.uint32:
    """Bits of ``total * 2**exp`` rounded toward zero to binary32.

    Subnormals are kept (quantum ``2**-149``); an exact or truncated zero is +0; a
    value whose truncated leading exponent is 128 or more is +-inf (MMA-Sim casts
    the truncated float64 to float32, which overflows to inf).
    """
    if total == 0:
        return np.uint32(0)
    sign = np.uint32(0)
    mag = total
    if total < 0:
        sign = np.uint32(0x80000000)
        mag = -total
    n = np.int64(1)  # bit length of mag (mag < 2**63), by halving steps
    t = mag
    for step in (32, 16, 8, 4, 2, 1):
        if t >> step:
            t >>= step
            n += step
    lead = n - 1 + exp  # exponent of the leading bit
    if lead >= -126:
        if lead >= 128:
            return sign | _PINF
        if n > 24:
            m = mag >> (n - 24)
        else:
            m = mag << (24 - n)
        return sign | np.uint32((lead + 127) << 23) | np.uint32(m & 0x7FFFFF)
    q = exp + 149  # shift to the subnormal quantum 2**-149
    m = align(mag, q)
    if m == 0:
        return np.uint32(0)
    return sign | np.uint32(m)


@numba.njit(cache=True, nogil=True)
def _split_c(cb: Int) -> tuple[np.int64, np.int64, np.int64]:
    """``(kind, sig, exp)`` of binary32 bits: kind 0 finite, 1 +inf, 2 -inf, 3 NaN;
    ``sig`` signed with 23 fraction bits, ``exp`` clamped at -126."""
    ce = np.int64((cb >> np.uint32(23)) & np.uint32(0xFF))
    cm = np.int64(cb & np.uint32(0x7FFFFF))
    neg = (cb >> np.uint32(31)) != 0
    if ce == 255:
        if cm != 0:
            return np.int64(3), np.int64(0), np.int64(0)
        return (np.int64(2) if neg else np.int64(1)), np.int64(0), np.int64(0)
    if ce == 0:
        sig, e = cm, np.int64(-126)
    else:
        sig, e = cm | np.int64(0x800000), ce - 127
    return np.int64(0), (-sig if neg else sig), e


@numba.njit(cache=True, nogil=True)
def _special(nan: bool, pinf: bool, ninf: bool) -> np.uint32:
    if nan or (pinf and ninf):
        return NAN_BITS
    return _PINF if pinf else _NINF


#: Rows of A per tile: a tile reuses one instruction's slice of B from cache.
ROW_TILE = 8


@numba.njit(cache=True, nogil=True)
def _mxf8_special(a_sig: np.ndarray, a_kind: np.ndarray, b_sig: np.ndarray,
                  b_kind: np.ndarray, i: Int, j: Int, k0: Int,
                  k1: Int, cb: Int, scale_nan: bool) -> np.uint32:
    """The IEEE value class of the exact sum when an operand is special, else 1 (a
    finite-code marker: binary32 bits 1 are never returned here)."""
    ckind, _, _ = _split_c(cb)
    nan = ckind == 3 or scale_nan
    pinf = ckind == 1
    ninf = ckind == 2
    for k in range(k0, k1):
        ka = a_kind[i, k]
        kb = b_kind[j, k]
        if ka == 0 and kb == 0:
            continue
        if ka == 3 or kb == 3:
            nan = True
        elif (ka == 0 and a_sig[i, k] == 0) or (kb == 0 and b_sig[j, k] == 0):
            nan = True  # inf * 0
        elif (ka == 2 or (ka == 0 and a_sig[i, k] < 0)) != (
                kb == 2 or (kb == 0 and b_sig[j, k] < 0)):
            ninf = True
        else:
            pinf = True
    if nan or pinf or ninf:
        return _special(nan, pinf, ninf)
    return np.uint32(1)


def _tiles(rows: int) -> int:
    return (rows + ROW_TILE - 1) // ROW_TILE


@numba.njit(cache=True, nogil=True)
def mxf8f6f4_gemm_span(a_sig: np.ndarray, a_exp: np.ndarray, a_kind: np.ndarray,
                       b_sig: np.ndarray, b_exp: np.ndarray, b_kind: np.ndarray,
                       a_sexp: np.ndarray, a_snan: np.ndarray, a_any: np.ndarray,
                       b_sexp: np.ndarray, b_snan: np.ndarray, b_any: np.ndarray,
                       out: np.ndarray, fb: Int, F: Int, inst_k: Int, start: Int,
                       stop: Int) -> None:
    """Tiles ``start <= tile < stop`` (rows ``ROW_TILE * tile`` on) of
    :func:`mxf8f6f4_gemm`, chained into ``out`` (the rows' ``C`` on entry) in place."""
    M, K = a_sig.shape
    N = b_sig.shape[0]
    e_buf = np.empty(inst_k, np.int64)
    p_buf = np.empty(inst_k, np.int64)
    for tile in range(start, stop):
        for t in range(K // inst_k):
            k0 = t * inst_k
            for i in range(tile * ROW_TILE, min(M, (tile + 1) * ROW_TILE)):
                for j in range(N):
                    cb = out[i, j]
                    if a_any[i, t] or b_any[j, t] or (cb & np.uint32(0x7F800000)) == _PINF:
                        sp = _mxf8_special(a_sig, a_kind, b_sig, b_kind, i, j, k0,
                                           k0 + inst_k, cb, a_snan[i, t] or b_snan[j, t])
                        if sp != 1:
                            out[i, j] = sp
                            continue
                    ckind, csig, cexp = _split_c(cb)
                    s = np.int64(a_sexp[i, t]) + np.int64(b_sexp[j, t])
                    big = np.int64(-(1 << 30))
                    if csig != 0:
                        big = cexp
                    for k in range(inst_k):
                        p = np.int64(a_sig[i, k0 + k]) * np.int64(b_sig[j, k0 + k])
                        e = np.int64(a_exp[i, k0 + k]) + np.int64(b_exp[j, k0 + k]) + s
                        p_buf[k] = p
                        e_buf[k] = e
                        if p != 0 and e > big:
                            big = e
                    if big == -(1 << 30):  # every term is zero
                        out[i, j] = np.uint32(0)
                        continue
                    total = align(csig, F + cexp - big - 23)
                    for k in range(inst_k):
                        if p_buf[k] != 0:
                            total += align(p_buf[k], F + e_buf[k] - big - fb)
                    out[i, j] = rz_binary32(total, big - F)


def mxf8f6f4_gemm(a_sig: np.ndarray, a_exp: np.ndarray, a_kind: np.ndarray,
                  b_sig: np.ndarray, b_exp: np.ndarray, b_kind: np.ndarray,
                  a_sexp: np.ndarray, a_snan: np.ndarray, a_any: np.ndarray,
                  b_sexp: np.ndarray, b_snan: np.ndarray, b_any: np.ndarray,
                  c_bits: np.ndarray, fb: Int, F: Int,
                  inst_k: Int) -> np.ndarray:
    """``kind::mxf8f6f4``: one fused sum of ``inst_k`` scaled products and ``C`` per
    instruction, chained over K, the tiles of rows on the threads.

    ``a_*`` are (M, K), ``b_*`` (N, K) (B transposed), int8; ``*_kind`` 0 finite,
    1 +inf, 2 -inf, 3 NaN; per (row, instruction): ``*_sexp`` / ``*_snan`` the E8M0
    scale exponent and NaN flag, ``*_any`` whether a special element or scale
    occurs; ``fb`` the two formats' trailing bits added.  Returns new binary32 bits
    (``c_bits`` is left as it is).
    """
    M, K = a_sig.shape
    N = b_sig.shape[0]
    out = c_bits.copy()
    spread(lambda lo, hi: mxf8f6f4_gemm_span(
        a_sig, a_exp, a_kind, b_sig, b_exp, b_kind, a_sexp, a_snan, a_any, b_sexp, b_snan,
        b_any, out, fb, F, inst_k, lo, hi), _tiles(M), unit=ROW_TILE * N * K)
    return out


@numba.njit(cache=True, nogil=True)
def mxf4_chain_span(run_sums: np.ndarray, g0: Int,
                    a_ssig: np.ndarray, a_sexp: np.ndarray, a_snan: np.ndarray,
                    b_ssig: np.ndarray, b_sexp: np.ndarray, b_snan: np.ndarray,
                    acc: np.ndarray, runs_per_block: Int, runs_per_inst: Int, F: Int,
                    start: Int, stop: Int) -> None:
    """Tiles ``start <= tile < stop`` (rows ``ROW_TILE * tile`` on) of
    :func:`mxf4_chain`."""
    R, M, N = run_sums.shape
    gsig = np.empty(runs_per_inst, np.int64)
    gexp = np.empty(runs_per_inst, np.int64)
    for tile in range(start, stop):
        for r0 in range(0, R, runs_per_inst):
            for i in range(tile * ROW_TILE, min(M, (tile + 1) * ROW_TILE)):
                for j in range(N):
                    cb = acc[i, j]
                    ckind, csig, cexp = _split_c(cb)
                    nan = ckind == 3
                    for g in range(runs_per_inst):
                        q = (g0 + r0 + g) // runs_per_block
                        if a_snan[i, q] or b_snan[j, q]:
                            nan = True
                    if nan:
                        acc[i, j] = NAN_BITS
                        continue
                    if ckind != 0:
                        continue  # an infinite C passes through
                    big = np.int64(-(1 << 30))
                    if csig != 0:
                        big = cexp
                    for g in range(runs_per_inst):
                        q = (g0 + r0 + g) // runs_per_block
                        sc = np.int64(a_ssig[i, q]) * np.int64(b_ssig[j, q])
                        gsig[g] = np.int64(run_sums[r0 + g, i, j]) * sc
                        if sc != 0:
                            gexp[g] = np.int64(a_sexp[i, q]) + np.int64(b_sexp[j, q])
                            if gexp[g] > big:
                                big = gexp[g]
                    if big == -(1 << 30):
                        acc[i, j] = np.uint32(0)
                        continue
                    total = align(csig, F + cexp - big - 23)
                    for g in range(runs_per_inst):
                        if gsig[g] != 0:
                            total += align(gsig[g], F + gexp[g] - big - 8)
                    acc[i, j] = rz_binary32(total, big - F)


def mxf4_chain(run_sums: np.ndarray, g0: Int,
               a_ssig: np.ndarray, a_sexp: np.ndarray, a_snan: np.ndarray,
               b_ssig: np.ndarray, b_sexp: np.ndarray, b_snan: np.ndarray,
               acc: np.ndarray, runs_per_block: Int, runs_per_inst: Int, F: Int) -> None:
    """``kind::mxf4`` / ``kind::mxf4nvf4``: the instructions whose runs of 16 products
    are ``run_sums`` (R, M, N), chained into ``acc`` (M, N binary32 bits) in place, the
    tiles of rows on the threads.

    ``run_sums[r]`` is run ``g0 + r``'s sum ``S`` of products of doubled E2M1 values
    (an integer held exactly in float32); ``*_ssig``, ``*_sexp``, ``*_snan`` (rows,
    blocks) the scales as ``ssig * 2**(sexp - 3)`` and their NaN flags.  A run's
    significand ``S * ssig_a * ssig_b`` has ``2 + 3 + 3`` fraction bits.  A run enters
    the largest exponent unless a scale is zero; a NaN scale in the instruction or
    a NaN ``C`` gives NaN; an infinite ``C`` passes through.
    """
    R, M, N = run_sums.shape
    spread(lambda lo, hi: mxf4_chain_span(
        run_sums, g0, a_ssig, a_sexp, a_snan, b_ssig, b_sexp, b_snan, acc, runs_per_block,
        runs_per_inst, F, lo, hi), _tiles(M), unit=ROW_TILE * R * N)
