"""Exact scalar reference of the block-scaled MMA model, written independently.

Every value is a ``fractions.Fraction``; elements are decoded by the reference codec
(:func:`numerics.codec.decode_exact`), scales from their codes by hand, and the rules
of ``proofs/blockscaled_gemm.md`` are applied one output element and one instruction
at a time, as MMA-Sim's ``nv_fused_dot_add`` / ``nv_fused_dot_add_with_block_scale``
state them (significand-exponent pairs, alignment to the largest exponent,
truncation, an exact sum, round toward zero to binary32).  Nothing here is shared
with ``numerics/accum/blockscaled.py`` or its kernels.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import numpy as np

from numerics.codec import decode_exact

INF = float("inf")
NAN_BITS = 0x7FFFFFFF

#: preset -> (instruction K, run length summed exactly (0: none), fractional bits)
RULES = {
    "blackwell-mxf8f6f4": (32, 0, 25),
    "blackwell-mxf4": (64, 16, 35),
    "blackwell-nvf4": (64, 16, 35),
}


def floor_log2(x: Fraction) -> int:
    """Exact floor(log2(x)) of a positive rational."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def sig_exp(v: Fraction, emin: int) -> tuple[Fraction, int] | None:
    """``(s, e)`` with ``v = s * 2**e``, ``e = max(floor(log2|v|), emin)``; None for 0."""
    if v == 0:
        return None
    e = max(floor_log2(abs(v)), emin)
    return v / Fraction(2) ** e, e


def f32_value(bits: int) -> Fraction | float:
    """Exact value of binary32 bits (a float for NaN and inf)."""
    x = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    return x if not math.isfinite(x) else Fraction(x)


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def rz_binary32_bits(v: Fraction) -> int:
    """Round toward zero to binary32, subnormals kept, +0 for zero, inf at 2**128."""
    if v == 0:
        return 0
    sign = 0x80000000 if v < 0 else 0
    a = abs(v)
    e = max(floor_log2(a), -126)
    q = Fraction(2) ** (e - 23)
    n = math.floor(a / q)
    if n == 0:
        return 0
    if e >= 128:
        return sign | 0x7F800000
    return sign | f32_bits(float(n * q))


def rne_binary32(v: Fraction) -> Fraction | float:
    """Round to nearest even binary32 (inf beyond the overflow threshold)."""
    if v == 0:
        return Fraction(0)
    a = abs(v)
    e = max(floor_log2(a), -126)
    q = Fraction(2) ** (e - 23)
    n, r = divmod(a, q)
    n = int(n)
    if r > q / 2 or (r == q / 2 and n % 2 == 1):
        n += 1
    out = n * q
    if out >= Fraction(2) ** 128:
        return INF if v > 0 else -INF
    return out if v > 0 else -out


def fused(terms: list[tuple[Fraction, int] | None], F: int) -> int:
    """Align to the largest exponent, truncate to F fraction bits, sum, RZ to binary32."""
    present = [t for t in terms if t is not None]
    if not present:
        return 0
    E = max(e for _, e in present)
    total = Fraction(0)
    for s, e in present:
        total += Fraction(math.trunc(s * Fraction(2) ** (F + e - E)), 2**F)
    return rz_binary32_bits(total * Fraction(2) ** E)


def scale_value(code: int, scale_format: str) -> tuple[Fraction | float, int]:
    """Value of a block scale code and the emin used to split it."""
    if scale_format == "e8m0fnu":
        return (float("nan") if code == 0xFF else Fraction(2) ** (code - 127)), -127
    mag = code & 0x7F  # UE4M3: the sign bit is ignored
    if mag == 0x7F:
        return float("nan"), -6
    return Fraction(decode_exact(mag, "e4m3fn")), -6


def element_format_of(q: Any) -> tuple[str, int]:
    fmt = q.element_format
    return fmt.name, fmt.emin


def reference_gemm(A_q: Any, B_q: Any, C: Any, preset: str) -> np.ndarray:
    """The model, one output and one instruction at a time (slow: small inputs only)."""
    inst_k, run, F = RULES[preset]
    codes_a = np.asarray(A_q.codes)
    codes_b = np.asarray(B_q.codes)
    M, K = codes_a.shape
    N = codes_b.shape[1]
    blk = A_q.block[1]
    fa, emin_a = element_format_of(A_q)
    fb, emin_b = element_format_of(B_q)
    sfa, sfb = A_q.scale_format.name, B_q.scale_format.name
    c32 = np.broadcast_to(np.zeros((M, N)) if C is None else np.asarray(C), (M, N))
    c32 = c32.astype(np.float32)
    tensor = preset == "blackwell-nvf4" and (A_q.global_scale is not None
                                             or B_q.global_scale is not None)
    out = np.zeros((M, N), np.uint32)
    for i in range(M):
        for j in range(N):
            acc = 0 if tensor else f32_bits(float(c32[i, j]))
            for k0 in range(0, K, inst_k):
                ks = range(k0, min(k0 + inst_k, K))
                cval = f32_value(acc)
                sa = [scale_value(int(A_q.scale_codes[i, k // blk]), sfa) for k in ks]
                sb = [scale_value(int(B_q.scale_codes[k // blk, j]), sfb) for k in ks]
                a = [decode_exact(int(codes_a[i, k]), fa) for k in ks]
                b = [decode_exact(int(codes_b[k, j]), fb) for k in ks]
                if run == 0:
                    acc = _scaled_instruction(a, b, sa, sb, cval, emin_a, emin_b, F)
                else:
                    acc = _grouped_instruction(a, b, sa, sb, cval, run, F)
            out[i, j] = acc
    d = out.view(np.float32)
    if tensor:
        d = _epilogue(d, A_q.global_scale, B_q.global_scale, c32)
    return d


def _scaled_instruction(a: list, b: list, sa: list, sb: list, c: Fraction | float,
                        emin_a: int, emin_b: int, F: int) -> int:
    # specials: the IEEE value of the sum, in floats (no finite term can overflow)
    floats = [float(x) * float(y) * float(s[0]) * float(t[0])
              for x, y, s, t in zip(a, b, sa, sb)]
    check = sum(floats) + float(c)
    if math.isnan(check):
        return NAN_BITS
    if math.isinf(check):
        return f32_bits(check)
    terms: list[tuple[Fraction, int] | None] = [sig_exp(Fraction(c), -126)]
    for x, y, s, t in zip(a, b, sa, sb):
        px, py = sig_exp(Fraction(x), emin_a), sig_exp(Fraction(y), emin_b)
        if px is None or py is None:
            terms.append(None)
            continue
        es = floor_log2(Fraction(s[0])) + floor_log2(Fraction(t[0]))  # E8M0: exact powers
        terms.append((px[0] * py[0], px[1] + py[1] + es))
    return fused(terms, F)


def _grouped_instruction(a: list, b: list, sa: list, sb: list, c: Fraction | float,
                         run: int, F: int) -> int:
    if isinstance(c, float) and math.isnan(c):
        return NAN_BITS
    if any(isinstance(s[0], float) for s in sa + sb):
        return NAN_BITS
    if isinstance(c, float):
        return f32_bits(c)  # an infinite C passes through
    terms: list[tuple[Fraction, int] | None] = [sig_exp(c, -126)]
    for g in range(0, len(a), run):
        S = sum((Fraction(x) * Fraction(y) for x, y in zip(a[g:g + run], b[g:g + run])),
                Fraction(0))
        (va, emin_sa), (vb, emin_sb) = sa[g], sb[g]
        pa, pb = sig_exp(Fraction(va), emin_sa), sig_exp(Fraction(vb), emin_sb)
        if pa is None or pb is None:
            terms.append(None)  # a zero scale: exponent -999, never the largest
            continue
        terms.append((S * pa[0] * pb[0], pa[1] + pb[1]))
    return fused(terms, F)


def _epilogue(acc: np.ndarray, ga: float | None, gb: float | None,
              c32: np.ndarray) -> np.ndarray:
    alpha = rne_binary32(Fraction(1 if ga is None else ga) * Fraction(1 if gb is None else gb))
    out = np.zeros(acc.shape, np.uint32)
    for idx in np.ndindex(acc.shape):
        x = float(acc[idx])
        c = float(c32[idx])
        if not (math.isfinite(x) and math.isfinite(c) and math.isfinite(float(alpha))):
            with np.errstate(invalid="ignore", over="ignore"):
                v = np.float32(np.float64(alpha) * x + c)
            out[idx] = NAN_BITS if math.isnan(v) else f32_bits(float(v))
            continue
        exact = Fraction(alpha) * Fraction(x) + Fraction(c)
        r = rne_binary32(exact)
        if r == 0 and exact < 0:  # a negative value that rounds to zero is -0
            out[idx] = 0x80000000
            continue
        if r == 0 and x == 0 and c == 0:  # IEEE: -0 only for (-0) + (-0)
            both_negative = math.copysign(1, x) < 0 and math.copysign(1, c) < 0
            out[idx] = 0x80000000 if both_negative else 0
            continue
        out[idx] = f32_bits(float(r))
    return out.view(np.float32)
