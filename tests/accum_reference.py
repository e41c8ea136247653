"""Slow exact scalar references for numerics.accum, written independently.

Every value is a ``fractions.Fraction``; :func:`rnd` rounds one exact rational to a
floating-point format described only by (precision p, emin, emax) with subnormals,
so that every operation below is exactly "one rounding per step".
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

INF = float("inf")


def _floor_log2(x: Fraction) -> int:
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def rnd(x: Fraction, p: int, emin: int, emax: int, mode: str = "rne",
        max_finite: Fraction | None = None) -> Fraction | float:
    """Round x to precision p (subnormals below 2**emin); float('inf') on overflow."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = max(_floor_log2(a), emin)
    q = Fraction(2) ** (e - p + 1)
    n, r = divmod(a, q)          # n integer, r in [0, q)
    n = int(n)
    frac = r / q
    up = False
    # the lower candidate's code is odd: its significand's last bit, or for p = 1 (no
    # trailing bits) its exponent field's, e - emin + 1 (the field of 2**emin is 1)
    odd = n % 2 == 1 if p > 1 or n == 0 else (e - emin + 1) % 2 == 1
    if mode == "rne":
        up = frac > Fraction(1, 2) or (frac == Fraction(1, 2) and odd)
    elif mode == "rna":
        up = frac >= Fraction(1, 2)
    elif mode == "rtz":
        up = False
    elif mode == "ru":
        up = frac > 0 and sign > 0
    elif mode == "rd":
        up = frac > 0 and sign < 0
    elif mode == "rto":
        up = frac > 0 and not odd
    else:
        raise ValueError(mode)
    m = (n + (1 if up else 0)) * q
    top = max_finite if max_finite is not None else \
        (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if m > top:
        return sign * INF if mode in ("rne", "rna") else sign * top
    return sign * m


FORMATS = {  # name: (p, emin, emax, max_finite)
    "binary64": (53, -1022, 1023, None),
    "binary32": (24, -126, 127, None),
    "binary16": (11, -14, 15, None),
    "bfloat16": (8, -126, 127, None),
    "e4m3fn": (4, -6, 8, Fraction(448)),
    "e5m2": (3, -14, 15, None),
    "e2m1fn": (2, 0, 2, Fraction(6)),
    "binary8p1": (1, -63, 62, None),  # p = 1: a tie goes to the even exponent field
}


def rounder(fmt: str, mode: str) -> Callable[[Fraction], Fraction]:
    p, emin, emax, top = FORMATS[fmt]

    def fl(x: Fraction) -> Fraction:
        v = rnd(x, p, emin, emax, mode, top)
        assert v not in (INF, -INF), "overflow: the references assume none"
        return v  # type: ignore[return-value]
    return fl


def ref_recursive(xs: list[Fraction], fl: Callable[[Fraction], Fraction]) -> Fraction:
    s = xs[0]
    for x in xs[1:]:
        s = fl(s + x)
    return s


def ref_pairwise(xs: list[Fraction], fl: Callable[[Fraction], Fraction],
                 block: int) -> Fraction:
    sums = [ref_recursive(xs[i:i + block], fl) for i in range(0, len(xs), block)]
    while len(sums) > 1:
        nxt = [fl(sums[i] + sums[i + 1]) for i in range(0, len(sums) - 1, 2)]
        if len(sums) % 2:
            nxt.append(sums[-1])
        sums = nxt
    return sums[0]


def ref_kahan(xs: list[Fraction], fl: Callable[[Fraction], Fraction]) -> Fraction:
    s, c = xs[0], Fraction(0)
    for x in xs[1:]:
        y = fl(x - c)
        t = fl(s + y)
        c = fl(fl(t - s) - y)
        s = t
    return s


def ref_neumaier(xs: list[Fraction], fl: Callable[[Fraction], Fraction]) -> Fraction:
    s, c = xs[0], Fraction(0)
    for x in xs[1:]:
        t = fl(s + x)
        if abs(s) >= abs(x):
            c = fl(c + fl(fl(s - t) + x))
        else:
            c = fl(c + fl(fl(x - t) + s))
        s = t
    return fl(s + c)


def ref_blocked(xs: list[Fraction], fl: Callable[[Fraction], Fraction],
                flp: Callable[[Fraction], Fraction], block: int) -> Fraction:
    total = Fraction(0)
    for k, i in enumerate(range(0, len(xs), block)):
        s = Fraction(0)
        for x in xs[i:i + block]:
            s = fl(s + x)
        total = flp(s) if k == 0 else flp(total + s)
    return total


def ref_tree(xs: list[Fraction], fl: Callable[[Fraction], Fraction], node: Any) -> Fraction:
    if isinstance(node, int):
        return xs[node]
    vals = [ref_tree(xs, fl, ch) for ch in node]
    s = vals[0]
    for v in vals[1:]:
        s = fl(s + v)
    return s


def ref_ring_element(xs: list[Fraction], fl: Callable[[Fraction], Fraction], chunk: int,
                     order: list[int]) -> Fraction:
    n = len(xs)
    s = xs[order[chunk % n]]
    for k in range(1, n):
        s = fl(s + xs[order[(chunk + k) % n]])
    return s


def exact_fraction(v: float) -> Fraction:
    return Fraction(v)


# ---- the tensor-core fused adder, straight from the rules ------------------------

def _exp_sig(v: Fraction, emin: int) -> tuple[int, Fraction]:
    if v == 0:
        return -126, Fraction(0)
    e = max(_floor_log2(abs(v)), emin)
    return e, v / Fraction(2) ** e


def _align_to(v: Fraction, q: Fraction, align: str) -> Fraction:
    n = v / q
    if align == "rd":
        k = n.numerator // n.denominator
    elif align == "rne":
        k = round(n)  # Fraction.__round__: ties to even
    else:
        k = int(n)  # toward zero
    return k * q


def ref_fused(a: list[Fraction], b: list[Fraction], c: Fraction, emin_in: int,
              emin_c: int, F: int, out: tuple[int, int, int], mode: str,
              e8m13: bool, align: str = "rtz") -> Fraction | float:
    terms = []
    for x, y in zip(a, b):
        ex, sx = _exp_sig(x, emin_in)
        ey, sy = _exp_sig(y, emin_in)
        # a product with a zero operand adds nothing and sets no alignment (MMA-Sim's
        # fdpa: a zero's exponent is far below every other); a zero c counts as 2**-126
        terms.append((ex + ey if x != 0 and y != 0 else -10**6, sx * sy))
    terms.append(_exp_sig(c, emin_c))
    E = max(e for e, _ in terms)
    q = Fraction(2) ** (E - F)
    total = Fraction(0)
    for e, s in terms:
        if s:  # (a zero adds nothing; its exponent, -10**6, would cost a huge power)
            total += _align_to(s * Fraction(2) ** e, q, align)
    p, emin, emax = out
    if mode == "rtz" and total != 0 and abs(total) >= Fraction(2) ** (emax + 1):
        return INF if total > 0 else -INF
    r: Any = rnd(total, p, emin, emax, mode)
    if e8m13 and r not in (INF, -INF) and r != 0:
        r = rnd(r, 14, -126, 127, "rtz")  # 13 fraction bits: precision 14, same grid
    return r


# ---- AMD matrix cores (MMA-Sim's documented rules), straight from the description ----

F32 = (24, -126, 127)


def rn32(x: Fraction) -> Fraction | float:
    return rnd(x, 24, -126, 127, "rne")


def _flush(x: Any, emin: int) -> Any:
    """A value below 2**emin in magnitude becomes 0 (the sign of zero is not modelled)."""
    return Fraction(0) if x not in (INF, -INF) and abs(x) < Fraction(2) ** emin else x


def _pair_tree(ps: list[Any], flush: bool) -> Any:
    if len(ps) == 1:
        return ps[0]
    h = len(ps) // 2
    s = rn32(_pair_tree(ps[:h], flush) + _pair_tree(ps[h:], flush))
    return _flush(s, -126) if flush else s


def ref_amd_pairwise(A: list[Fraction], B: list[Fraction], c: Fraction, G: int,
                     emin_in: int, flush: bool) -> Any:
    """CDNA1/CDNA2: products rounded to binary32, pairwise within each group of G (the
    last group shorter when G does not divide K, as MMA-Sim's MFMASim slices it), each
    group sum added to the accumulator; CDNA2 flushes inputs, products, sums and the
    accumulator."""
    if flush:
        A = [_flush(x, emin_in) for x in A]
        B = [_flush(x, emin_in) for x in B]
        c = _flush(c, -126)
    d: Any = c
    for k in range(0, len(A), G):
        ps = [rn32(x * y) for x, y in zip(A[k:k + G], B[k:k + G])]
        if flush:
            ps = [_flush(p, -126) for p in ps]
        d = rn32(d + _pair_tree(ps, flush))
        if flush:
            d = _flush(d, -126)
    return d


def _sig_exp(x: Fraction, emin: int) -> tuple[Fraction, int]:
    e = max(_floor_log2(abs(x)), emin)
    return x / Fraction(2) ** e, e


def _trunc(x: Fraction) -> int:
    return int(x)  # toward zero


def _floor(x: Fraction) -> int:
    return x.numerator // x.denominator


def _fixed_sum(terms: list[tuple[Fraction, int]], F: int) -> tuple[int, int | None]:
    """(T, E): E the largest exponent, T the sum of the terms truncated to F bits."""
    if not terms:
        return 0, None
    E = max(e for _, e in terms)
    return sum(_trunc(s * Fraction(2) ** (F + e - E)) for s, e in terms), E


def ref_amd_fused(a: list[Fraction], b: list[Fraction], c: Fraction, emin_in: int,
                  even_odd: bool, F: int = 24, F2: int = 31) -> Any:
    """One CDNA3 group step: products truncated to F bits at their own largest exponent
    (over even and odd products separately, then both rounded down to F bits at the
    larger, for fp8), then that sum rounded down to F2 bits and c to F bits at
    M = max(E, e_c) (c dropped below 2**(M - 25) for fp8), added, RNE to binary32."""
    terms: list[tuple[int, tuple[Fraction, int]]] = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != 0 and y != 0:
            (sx, ex), (sy, ey) = _sig_exp(x, emin_in), _sig_exp(y, emin_in)
            terms.append((i, (sx * sy, ex + ey)))
    if even_odd:
        ev = [t for i, t in terms if i % 2 == 0]
        od = [t for i, t in terms if i % 2 == 1]
        (T0, E0), (T1, E1) = _fixed_sum(ev, F), _fixed_sum(od, F)
        es = [e for e in (E0, E1) if e is not None]
        E = max(es) if es else None
        T = 0
        if E0 is not None:
            T += _floor(T0 * Fraction(2) ** (E0 - E))  # type: ignore[operator]
        if E1 is not None:
            T += _floor(T1 * Fraction(2) ** (E1 - E))  # type: ignore[operator]
    else:
        T, E = _fixed_sum([t for _, t in terms], F)
    ec = _sig_exp(c, -126)[1] if c != 0 else None
    es = [e for e in (E, ec) if e is not None]
    if not es:
        return Fraction(0)
    M = max(es)
    S2 = _floor(T * Fraction(2) ** (F2 - F + E - M)) if E is not None else 0
    C2 = _floor(c * Fraction(2) ** (F - M)) if ec is not None else 0
    if even_odd and ec is not None and ec < M - 25:
        C2 = 0
    return rn32(S2 * Fraction(2) ** (M - F2) + C2 * Fraction(2) ** (M - F))


def ref_amd_fused_chain(A: list[Fraction], B: list[Fraction], c: Fraction, G: int,
                        emin_in: int, even_odd: bool) -> Any:
    A = A + [Fraction(0)] * (-len(A) % G)
    B = B + [Fraction(0)] * (-len(B) % G)
    d: Any = c
    for k in range(0, len(A), G):
        d = ref_amd_fused(A[k:k + G], B[k:k + G], d, emin_in, even_odd)
    return d
