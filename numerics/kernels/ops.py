"""Correctly rounded arithmetic with IEEE flags: one compiled loop for every operation.

Each element follows the steps of the exact reference (``tests/ops_reference.py``
is the independent check):

1. **Operands.**  Loaded as float64 (floats directly, codes of a format through
   its decode table, :func:`_load`); a signalling NaN operand is noted
   (:func:`_signalling`).
2. **Special operands** (a NaN or infinity, ``x / 0``, ``sqrt(x < 0)``): the IEEE
   754-2019 result is a NaN (always the one quiet NaN), an infinity or a signed
   zero, which binary64 arithmetic computes exactly, with ``invalid`` and
   ``divide_by_zero`` (:func:`_special`); it is delivered in the format by the
   shared rounding step, which applies ``encode``'s overflow rule.
3. **The exact result as a float64 pair** ``(h + lo) * 2**k`` with error-free
   transformations (:func:`_exact_pair`): TwoSum for ``+``; the product itself
   for ``*`` of two numbers of at most 26 bits; ``q = a / b`` with the exact
   remainder ``a - q*b`` (TwoProd) for ``/``; ``s = sqrt(a)`` with ``a - s*s``
   for sqrt; for fma the exact product plus ``c`` by
   :func:`_three_sum_rne`.  Formats whose values and products stay far inside
   binary64 (``narrow``) need no scaling (``k = 0``); the others (binary64) work
   on ``frexp`` significands and carry the exponent in ``k``.  ``h`` is the
   binary64 nearest of the exact value and ``lo`` the residual (or a value with
   its sign that rounds identically, kept off the half-way points).
4. **One rounding** by :mod:`numerics.kernels.rounding` (:func:`_round`):
   ``round_pair(h, lo)`` against the format's exponent range moved down by ``k``
   (:func:`numerics.kernels.rounding.lowered_params`), so ``lo`` is never scaled
   and nothing under- or overflows.  Stochastic rounding draws ``u`` from
   :func:`numerics.kernels.random.draw` with the element's flat index; it reads
   the residual down to its last bit, so where ``lo`` is itself rounded (``/``,
   sqrt, fma) the pair is first settled on the exact value's side of it
   (:func:`_settle`).
5. **Flags** from the same integer decisions (:func:`_flags`): ``inexact``,
   ``overflow`` (the rounding with unbounded exponent, which is this rounding for
   results that are not tiny, exceeds ``max``), ``underflow`` (tiny and inexact;
   tininess before rounding is ``e < emin``, after rounding is judged by a second
   rounding with unbounded exponent, done only for tiny results), ``invalid``,
   ``divide_by_zero``.

The common case takes a vectorized loop (:func:`_fast_chunk`): in a narrow
format under a deterministic mode or stochastic rounding, a result in the normal
range is step 4 done on the bits of ``h`` (:func:`_round_normal`,
:func:`round_sr`, the draw from the element's index as in step 4); in binary64
under round to nearest even or a directed mode, the pair is computed unscaled
where its error-free transformations are exact (:func:`_wide_loop`); only
inexact can be raised there.  Every other element (specials, zeros, subnormal or
overflowing results, binary64 results or operands below ``2**-960``, binary64
under rna and stochastic rounding) takes the steps above (:func:`_element`).

Format parameters arrive as :func:`numerics.kernels.rounding.format_params`'s
int64 array, so one compiled loop serves every format; operands are float64,
float32 or uint16 (codes; the lane loops also take uint8) arrays, all of one dtype,
flat, each either of the result's length or of length 1 (broadcast).  Each loop is
a serial function of a range of chunks of :data:`_CHUNK` elements (``*_span``); its
driver spreads the chunks over the threads (:mod:`numerics.kernels.spread`), and nothing depends on
which thread runs them.

Rounded to nearest, a format whose values are float32 values skips these steps
for two straight lane loops: :func:`apply_lean` (``+ - *`` in float32 lanes, claim
D5 of ``proofs/double_rounding.md``) and :mod:`numerics.kernels.ops_wide` (``+ - *
/ fma`` in float64 lanes, claim D7).  Both decode codes by arithmetic
(:mod:`numerics.kernels.unpack`); ``numerics.ops`` picks the loop.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, cast

import numba
import numpy as np
from numba import types
from numba.extending import overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
import numerics.kernels.rounding as rnd
from numerics.kernels.lanes import bits_of_f32, f32_of_bits, fma, shr32
from numerics.kernels.random import draw
from numerics.kernels.specialise import specialised
from numerics.kernels.spread import FAST_LOOP_MIN, PARALLEL_MIN, spread
from numerics.kernels.unpack import codes16, constants, load32, scratch16, scratch32, values32

__all__ = ["FLAG_BITS", "GENERAL", "MARK", "OPS", "apply", "apply_lean", "apply_lean_span",
           "apply_span", "decode_all", "lean_fits", "overflow_value", "piece",
           "quantum_fits", "round_by_quantum", "round_sr", "to_odd", "unpack_flags",
           "unstage", "widen"]

#: Operation codes of :func:`apply` (``sub`` is ``add`` with ``b`` negated).
OPS = {"add": 0, "mul": 1, "div": 2, "fma": 3, "sqrt": 4, "convert": 5}
#: Bits of the flags array: inexact, underflow, overflow, invalid, divide_by_zero.
FLAG_BITS = (1, 2, 4, 8, 16)
#: A flag byte with this bit: the element is left to the general loop (:func:`apply`),
#: which the caller runs on it (results near underflow: rare).
GENERAL = 0x80

# Magnitude-level modes of the flag computation (ru/rd become rtz/raz by the sign).
_RTZ, _RAZ, _RNE, _RNA, _RTO, _SR = range(6)

#: Guard bits below binary64's 53 in the integer significand (sig < 2**62).
_GUARD = 9
_NAN = np.float64(np.nan)
#: Marks an element the fast loop left to the general steps (a NaN no result has).
_SENTINEL = np.int64(0x7FF4DEADBEEF0000)
_SENTINEL_F = np.int64(0x7FF4DEADBEEF0000).view(np.float64)
#: Elements per chunk of the parallel loop (whole chunks run on one thread).
#: The float32 pattern the lean loop writes for a result it leaves wrong without flags
#: (a quiet NaN whose payload no result has; D13).
MARK = np.uint32(0x7FC5A5A5)

_CHUNK = 1 << 12
#: Elements per piece of a lean loop (:func:`apply_lean_span`; its code scratch stays in L2).
_LEAN_STEP = 1 << 15
#: Elements from which a call runs on the threads: :data:`PARALLEL_MIN`, as the codec's.
#: A quarter of it made calls of 2**15 and 2**16 elements 1.2 to 4.7 times slower on
#: 2 threads than on one (every loop here: lean, float64 lanes, general; 2-core AMD Zen 4
#: VM, where handing a piece to the pool costs 60 to 130 us), and changed nothing from
#: 2**17 up.
_MIN_STEPS = PARALLEL_MIN
_JIT: Any = {"cache": True, "nogil": True, "error_model": "numpy"}
_U32 = np.uint32
# the intrinsics as plain callables for type checkers (numba's typing context is their
# first parameter in Python)
_f64_bits = cast(Callable[[Any], Any], rnd.f64_bits)
_bits_f64 = cast(Callable[[Any], Any], rnd.bits_f64)


# ----------------------------------------------------------------------------- operands
def _load(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
    """Element ``j`` of an operand as float64 (a code goes through the table)."""


@overload(_load, jit_options=_JIT, inline="always")
def _load_impl(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
    if isinstance(arr.dtype, types.Float):
        return lambda arr, j, table: np.float64(arr[j])
    return lambda arr, j, table: table[arr[j]]


def _values(arr, table, shift):  # type: ignore[no-untyped-def,unused-ignore]
    """An operand chunk as float64 values for :func:`_fast_chunk`: float64 as it is,
    float32 widened and codes decoded into a new chunk, so that the vectorized loops
    compile once, for float64 operands, whatever the operands' dtype (widening float32
    operands in place of a float32 copy of every loop cut a cold test run's compiling by
    about 13 CPU-s, for a pass over a chunk in cache).  The widening quiets a
    signalling NaN, which the fast loops never see: a NaN operand makes ``h`` a NaN,
    which they leave to the general steps, and those read the operands themselves.
    ``shift >= 0``: the codes are the top bits of float32 patterns (8 exponent bits,
    bias 127, IEEE specials: bfloat16), decoded by a shift instead of the table."""


@overload(_values, jit_options=_JIT)
def _values_impl(arr, table, shift):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype == types.float64:
        return lambda arr, table, shift: arr
    if arr.dtype == types.float32:
        def widen32(arr, table, shift):  # type: ignore[no-untyped-def,unused-ignore]
            out = np.empty(arr.size, np.float64)
            for i in range(arr.size):
                out[i] = arr[i]
            return out
        return widen32

    def decode(arr, table, shift):  # type: ignore[no-untyped-def,unused-ignore]
        out = np.empty(arr.size, np.float64)
        if shift >= 0:
            for i in range(arr.size):
                bits = np.uint32(np.uint32(arr[i]) << np.uint32(shift))
                out[i] = np.float64(bits.view(np.float32))
        else:
            for i in range(arr.size):
                out[i] = table[arr[i]]
        return out
    return decode


def _signalling(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
    """Whether element ``j`` (already known to be NaN) is a signalling NaN."""


@overload(_signalling, jit_options=_JIT)
def _signalling_impl(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype == types.float32:
        def float32_bits(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
            return (np.float32(arr[j]).view(np.uint32) & np.uint32(1 << 22)) == 0
        return float32_bits
    if arr.dtype == types.float64:
        def float64_bits(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
            return (np.float64(arr[j]).view(np.uint64) & np.uint64(1 << 51)) == 0
        return float64_bits

    def code(arr, j, table):  # type: ignore[no-untyped-def,unused-ignore]
        # the decode table holds signalling float64 NaNs for signalling codes
        return (np.float64(table[arr[j]]).view(np.uint64) & np.uint64(1 << 51)) == 0
    return code


# ----------------------------------------------------------------------------- helpers
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _ulp_up(ah: float) -> float:
    """Spacing above ``ah > 0`` (normal binary64)."""
    _, e = math.frexp(ah)
    return math.ldexp(1.0, e - 53)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _ulp_down(ah: float) -> float:
    """Spacing below ``ah > 0`` (half of ``_ulp_up`` at a power of two)."""
    m, e = math.frexp(ah)
    return math.ldexp(1.0, e - 54) if m == 0.5 else math.ldexp(1.0, e - 53)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _two_sum(a: float, b: float) -> tuple[float, float]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _two_prod(a: float, b: float) -> tuple[float, float]:
    p = a * b
    c = 134217729.0 * a
    ah = c - (c - a)
    al = a - ah
    c = 134217729.0 * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sticky(m: float) -> float:
    """A term far below the others: only its sign counts."""
    return 0.0 if m == 0 else math.copysign(2.0**-300, m)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _nudge(h: float, lo: float) -> float:
    """Keep a rounded residual strictly inside half the spacing on its side of ``h``."""
    if lo == 0 or h == 0:
        return lo
    ah = abs(h)
    hs = 0.5 * (_ulp_up(ah) if lo * h > 0 else _ulp_down(ah))
    if abs(lo) >= hs:
        return math.copysign(hs * (1.0 - 2.0**-53), lo)
    return lo


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _three_sum_rne(x1: float, x2: float, x3: float) -> tuple[float, float, float]:
    """``h = RNE64(x1 + x2 + x3)``, a residual with the sign of the rest, never a false
    tie (:func:`numerics.eft.three_sum_rne`, one element), and a value with the sign of
    ``x1 + x2 + x3 - (h + residual)``."""
    s, t = _two_sum(x1, x3)
    u, w = _two_sum(t, x2)
    h, ll = _two_sum(s, u)
    if h == 0:
        h, w = w, 0.0
    t2, e2 = _two_sum(ll, w)
    if h == 0:
        return 0.0, 0.0, 0.0
    ah = abs(h)
    sp = _ulp_up(ah) if t2 * h > 0 else _ulp_down(ah)
    hs = 0.5 * sp
    art = abs(t2)
    beyond = art > hs or (art == hs and e2 * t2 > 0)
    tie = art == hs and e2 == 0
    _, e = math.frexp(ah)
    odd = (np.int64(math.ldexp(ah, 53 - e)) & 1) == 1
    step = math.copysign(sp, t2) if (beyond or (tie and odd)) else 0.0
    h_new = h + step
    r, e3 = _two_sum(t2 - step, e2)
    if h_new == 0:
        return 0.0, 0.0, 0.0
    ah2 = abs(h_new)
    hs2 = 0.5 * (_ulp_up(ah2) if r * h_new > 0 else _ulp_down(ah2))
    if abs(r) == hs2 and e3 != 0:
        r_in = math.copysign(hs2 * (1.0 - 2.0**-53), r)
        return h_new, r_in, (r - r_in) + e3  # (r - r_in is exact)
    return h_new, r, e3


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _settle(h: float, lo: float, rest: float) -> float:
    """``lo``, or the float next to it toward ``-h``'s side when the exact value lies
    strictly between ``h + lo`` and that float (``rest``, the sign of the exact value
    minus ``h + lo``, is against ``h``).

    Stochastic rounding compares ``floor(frac * 2**ubits)`` of the pair with the draw,
    and a rounded residual can land on one of those grid points while the exact value
    lies just below it.  The grid is a lattice coarser than the spacing of ``lo``
    (``|lo| < 2**-53 |h|``, ``ubits <= 53``), so the exact value and the settled pair
    lie strictly between the same two grid points; the deterministic modes need no
    settling (their residuals are kept off the half-way points instead).
    """
    if rest == 0 or (rest < 0) == (h < 0):
        return lo
    if lo == 0:
        return math.copysign(5e-324, -h)
    step = np.int64(-1 if (lo < 0) == (h < 0) else 1)  # toward -h: |h + lo| shrinks
    return np.int64(np.float64(lo).view(np.int64) + step).view(np.float64)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _div_rest(r: float, lo: float, b: float) -> float:
    """The sign of ``r / b - lo`` (``lo`` a rounding of ``r / b``; ``r - fl(lo * b)`` is
    exact by Sterbenz's lemma)."""
    p, e = _two_prod(lo, b)
    d = (r - p) - e
    return d if b > 0 else -d


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sqrt_rest(r: float, s: float, lo: float) -> float:
    """The sign of ``sqrt(s*s + r) - (s + lo)``, that is of ``r - 2*s*lo - lo*lo``
    (``lo`` a rounding of ``r / (2s)``), summed exactly as an expansion
    (Shewchuk's Grow-Expansion: the largest non-zero part has the sign of the sum)."""
    p, e = _two_prod(2.0 * s, lo)
    q1, q2 = _two_prod(lo, lo)
    d = r - p  # exact: Sterbenz
    g2, g1 = _two_sum(-e, d)
    f3, f1 = _two_sum(-q1, g1)
    f3, f2 = _two_sum(f3, g2)
    k4, k1 = _two_sum(-q2, f1)
    k4, k2 = _two_sum(k4, f2)
    k4, k3 = _two_sum(k4, f3)
    return k4 if k4 != 0 else (k3 if k3 != 0 else (k2 if k2 != 0 else k1))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _zero_sign(x: float, y: float, mode: int) -> float:
    """IEEE sign of an exact zero sum ``x + y``: same-signed zeros keep it, else +0 (rd: -0)."""
    if x == 0 and y == 0 and math.copysign(1.0, x) == math.copysign(1.0, y):
        return x
    return -0.0 if mode == rnd.MODE_RD else 0.0


# ----------------------------------------------------------------------------- exact pair
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _exact_pair(op: int, a: float, b: float, c: float, narrow: bool, mode: int
                ) -> tuple[float, float, int]:
    """``(h, lo, k)`` with ``(h + lo) * 2**k`` the exact result on finite operands
    (``h == 0``: an exact zero, with its IEEE sign)."""
    if op == 5:  # convert: the operand itself
        return a, 0.0, 0
    if narrow:
        if op == 0:
            h, lo = _two_sum(a, b)
            return (_zero_sign(a, b, mode) if h == 0 else h), lo, 0
        if op == 1:
            return a * b, 0.0, 0
        if op == 2:
            q = a / b
            p, e = _two_prod(q, b)
            r = (a - p) - e  # the exact remainder
            lo = r / b
            if mode == rnd.MODE_SR:
                lo = _settle(q, lo, _div_rest(r, lo, b))
            return q, lo, 0
        if op == 4:
            s = math.sqrt(a)
            if s == 0:
                return a, 0.0, 0
            p, e = _two_prod(s, s)
            r = (a - p) - e
            lo = r / (2.0 * s)
            if mode == rnd.MODE_SR:
                lo = _settle(s, lo, _sqrt_rest(r, s, lo))
            return s, lo, 0
        p = a * b
        h, lo = _two_sum(p, c)
        return (_zero_sign(p, c, mode) if h == 0 else h), lo, 0
    ma, ea = math.frexp(a)
    mb, eb = math.frexp(b)
    if op == 0:
        k = eb if a == 0 else ea if b == 0 else max(ea, eb)
        a2 = math.ldexp(ma, ea - k) if ea - k >= -150 else _sticky(ma)
        b2 = math.ldexp(mb, eb - k) if eb - k >= -150 else _sticky(mb)
        h, lo = _two_sum(a2, b2)
        return (_zero_sign(a, b, mode) if h == 0 else h), lo, k
    if op == 1:
        h, lo = _two_prod(ma, mb)
        return h, lo, ea + eb
    if op == 2:
        q = ma / mb
        p, e = _two_prod(q, mb)
        r = (ma - p) - e
        lo = _nudge(q, r / mb)
        if mode == rnd.MODE_SR:
            lo = _settle(q, lo, _div_rest(r, lo, mb))
        return q, lo, ea - eb
    if op == 4:
        if a == 0:
            return a, 0.0, 0
        if ea & 1:
            ma, ea = ma * 2.0, ea - 1
        s = math.sqrt(ma)
        p, e = _two_prod(s, s)
        r = (ma - p) - e
        lo = _nudge(s, r / (2.0 * s))
        if mode == rnd.MODE_SR:
            lo = _settle(s, lo, _sqrt_rest(r, s, lo))
        return s, lo, ea // 2
    mc, ec = math.frexp(c)
    x1, x2 = _two_prod(ma, mb)
    kp = ea + eb
    if x1 == 0:  # an exact zero product: the result is c
        if c == 0:
            return _zero_sign(math.copysign(0.0, a) * math.copysign(1.0, b), c, mode), 0.0, 0
        return mc, 0.0, ec
    if c == 0:
        return x1, x2, kp
    diff = ec - kp
    if diff > 150:  # c dominates: the product is a sticky term
        h, lo = _two_sum(mc, _sticky(x1))
        return h, lo, ec
    c2 = _sticky(mc) if diff < -150 else math.ldexp(mc, diff)
    h, lo, rest = _three_sum_rne(x1, x2, c2)
    if h == 0:
        return _zero_sign(x1, c2, mode), 0.0, 0
    if mode == rnd.MODE_SR:
        lo = _settle(h, lo, rest)
    return h, lo, kp


# ----------------------------------------------------------------------------- rounding
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _bit_length(x: int) -> int:
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _round_int(sig: int, eps: float, shift: int, mm: int, n_odd_field: int,
               t: int, u: Any, ubits: int) -> tuple[int, bool]:
    """``m``, the rounding of ``(sig + eps) / 2**shift`` to an integer in magnitude mode
    ``mm`` (``shift >= 1``), and whether that division was exact.  ``n_odd_field`` is the
    parity of the exponent field, used for even/odd when ``t == 0``."""
    if shift >= 63:
        n = np.int64(0)
        rem = sig
        exact = False
        above = False
        tie = False
    else:
        n = sig >> shift
        rem = sig & ((np.int64(1) << shift) - 1)
        half = np.int64(1) << (shift - 1)
        exact = rem == 0 and eps == 0
        above = rem > half or (rem == half and eps > 0)
        tie = rem == half and eps == 0
    if exact or mm == _RTZ:
        return n, exact
    odd = (n_odd_field if (t == 0 and n > 0) else n) & 1
    if mm == _RAZ:
        return n + 1, exact
    if mm == _RNE:
        return n + (1 if (above or (tie and odd == 1)) else 0), exact
    if mm == _RNA:
        return n + (1 if (above or tie) else 0), exact
    if mm == _RTO:
        return n + (0 if odd == 1 else 1), exact
    # stochastic: away iff u < floor(frac * 2**ubits), frac = (rem + eps) / 2**shift
    if shift - ubits >= 63:
        f = np.uint64(0)
    elif shift >= ubits:
        f = np.uint64(rem >> (shift - ubits))
    else:
        f = np.uint64((rem << (ubits - shift))
                      + np.int64(math.floor(math.ldexp(eps, ubits - shift))))
    return n + (1 if u < f else 0), exact


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _to_scaled(h: float, lo: float, k: int) -> tuple[bool, int, float, int]:
    """``(neg, sig, eps, exp)`` with ``h + lo == (-1)**neg * (sig + eps) * 2**(exp - k)``."""
    m, e = math.frexp(h)
    neg = m < 0
    big = np.int64(math.ldexp(abs(m), 53))
    f = math.ldexp(-lo if neg else lo, 53 + _GUARD - e)
    fl = math.floor(f)
    return neg, (big << _GUARD) + np.int64(fl), f - fl, e - 53 - _GUARD + k


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _flags(neg: bool, sig: int, eps: float, exp: int, P: np.ndarray,
           maxval: float, mode: int, tiny_after: bool, u: Any, ubits: int
           ) -> int:
    """IEEE flag bits of rounding ``(-1)**neg * (sig + eps) * 2**exp`` (``sig > 0``) into
    ``P``: the same decisions as the rounding itself, plus the rounding with unbounded
    exponent that overflow and tininess after rounding are defined by."""
    t, emin, bias = P[rnd.T], P[rnd.EMIN], P[rnd.BIAS]
    if P[rnd.SIGNED] == 0 and neg:  # no negative values at all: NaN
        return np.int64(8)
    if mode == rnd.MODE_RU:
        mm = _RTZ if neg else _RAZ
    elif mode == rnd.MODE_RD:
        mm = _RAZ if neg else _RTZ
    else:
        mm = (_RNE, _RNA, _RTZ, 0, 0, _RTO, _SR)[mode]
    e_val = _bit_length(sig) - 1 + exp
    tiny = e_val < emin
    qe = max(e_val, emin) - t
    m, exact = _round_int(sig, eps, qe - exp, mm, qe + bias, t, u, ubits)
    if tiny and P[rnd.SUBN] == 0:  # no subnormals (and no zero): 2**emin
        m, qe, exact = np.int64(1) << t, emin - t, False
    flags = np.int64(0) if exact else np.int64(1)
    if math.ldexp(np.float64(m), qe) > maxval:  # not tiny: this rounding is the unbounded one
        flags |= 5
    elif tiny and not exact:
        if mode == rnd.MODE_SR or not tiny_after:
            flags |= 2
        else:
            mu, _ = _round_int(sig, eps, e_val - t - exp, mm, e_val + bias, t, u, ubits)
            if _bit_length(mu) - 1 + e_val - t < emin:
                flags |= 2
    return flags


# ----------------------------------------------------------------------------- specials
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _special(op: int, a: float, b: float, c: float) -> tuple[float, int]:
    """IEEE result and flag bits (invalid 8, divide_by_zero 16) of an element with a
    special operand (NaN, infinity, ``x / 0``, ``sqrt(x < 0)``)."""
    nan_in = a != a or b != b or c != c
    if op == 3:
        if (a == 0 and math.isinf(b)) or (math.isinf(a) and b == 0):
            return _NAN, np.int64(8)
        if nan_in:
            return _NAN, np.int64(0)
        p = a * b if (math.isinf(a) or math.isinf(b)) else \
            math.copysign(1.0, a) * math.copysign(1.0, b)
        r = p + c
    elif op == 0 or op == 5:
        r = a + b if op == 0 else a
    elif op == 1:
        r = a * b
    elif op == 2:
        r = a / b if b != 0 else (a * math.copysign(np.inf, b) if a == a and a != 0
                                  else _NAN)
    else:
        r = math.sqrt(a) if a >= 0 else _NAN
    flags = np.int64(0)
    if r != r and not nan_in:
        flags |= 8
    if op == 2 and b == 0 and a == a and a != 0 and not math.isinf(a):
        flags |= 16
    return r, flags


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _round_normal(h: float, lo: float, cut: int, mode: int) -> float:
    """The rounding of ``h + lo`` to ``53 - cut`` significant bits, for a result in the
    format's normal range (``|h| > 2**emin``; the caller checks ``<= max`` after).

    The same decisions as :func:`numerics.kernels.rounding.round_pair` on the bits of
    ``h``: keep the bits above ``cut``; the dropped bits ``low`` and the sign of the
    residual ``lo`` pick the neighbour.  The bit patterns of floats are monotone, so
    one unit more or less at ``cut`` is the next value of the coarser grid, across a
    binade too.
    """
    bits = np.float64(h).view(np.int64)
    unit = np.int64(1) << cut
    low = bits & (unit - 1)
    base = bits - low
    half = unit >> 1
    neg = h < 0
    rel = -lo if neg else lo  # > 0: the exact magnitude is above |h| (no product to underflow)
    # Branch-free decisions (bitwise on booleans): the data make branches unpredictable.
    if mode == rnd.MODE_RNE:
        odd = (base & unit) != 0
        up = (low > half) | ((low == half) & ((rel > 0) | ((rel == 0) & odd)))
    elif mode == rnd.MODE_RNA:
        up = (low > half) | ((low == half) & (rel >= 0))
    elif mode == rnd.MODE_RTZ or (mode == rnd.MODE_RU and neg) or (mode == rnd.MODE_RD
                                                                   and not neg):
        up = False
        base -= unit * np.int64((low == 0) & (rel < 0))  # just below a grid point
    else:  # away from zero
        up = (low != 0) | (rel > 0)
    return np.int64(base + unit * np.int64(up)).view(np.float64)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _round(h: float, lo: float, k: int, P: np.ndarray, mode: int, overflow: int,
           u: Any, ubits: int) -> Any:
    """The code of ``(h + lo) * 2**k`` rounded once (:mod:`numerics.kernels.rounding`):
    the pair itself, against the format's exponent range moved down by ``k``
    (the pair scaled by ``2**k`` may leave binary64's range)."""
    if k == 0:
        return rnd.round_pair(h, lo, P, np.int64(mode), np.int64(overflow), u, np.int64(ubits))
    return rnd.round_pair(h, lo, rnd.lowered_params(P, np.int64(k)), np.int64(mode),
                          np.int64(overflow), u, np.int64(ubits))


@numba.njit(cache=True, nogil=True)
def widen(x: np.ndarray, n: int, m: int) -> np.ndarray:
    """An operand of a span loop over ``n`` elements in chunks of at most ``m``: itself
    when it has ``n`` elements, else (a broadcast operand of length 1) one chunk's
    worth of its value, read by every chunk through :func:`piece`."""
    return x if x.size == n else np.full(m, x[0])


@numba.njit(cache=True, nogil=True)
def piece(x: np.ndarray, n: int, start: int, stop: int) -> np.ndarray:
    """The chunk ``start:stop`` of a :func:`widen` operand."""
    return x[start:stop] if x.size == n else x[:stop - start]


# ----------------------------------------------------------------------------- the loop
def apply_lean(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
               P: np.ndarray, overflow: int, want: bool, tiny_after: bool, out: np.ndarray,
               fl: np.ndarray) -> int:
    """``out[i] = a[i] + b[i]``, ``a[i] * b[i]`` or ``a[i] - b[i]`` (``op`` 0, 1, 2)
    rounded to nearest-even into the format ``P``, which :func:`lean_fits` accepts
    (:func:`_lean_chunk`), with the flag bits in ``fl`` when ``want``; float32 operands
    or codes (uint8, uint16; int16 for codes that are float32 top halves) decoded in the
    loop by the :func:`numerics.kernels.unpack.plan` array ``d``, of the result's length
    or of length 1; ``out`` float32 or float64.  Also ``a[i] /
    b[i]`` (``op`` 3: without flags in the formats ``lean_fits(..., 2)`` takes, with
    flags in binary32) and ``fma(a[i], b[i], c[i])`` (``op`` 4: ``c`` is read by fma
    only).  Chunks run on the threads.

    Returns the number of fma results left wrong without flags (products binary32
    may have rounded, D13: the caller runs the call again with flags, which marks
    them :data:`GENERAL`); 0 for the other operations and with flags."""
    chunks = (out.size + _CHUNK - 1) // _CHUNK
    span = _lean_span(bool(want), bool(P[rnd.T] == 23))
    return sum(spread(lambda lo, hi: span(op, a, b, c, d, P, overflow, tiny_after, out, fl,
                                          lo, hi),
                      chunks, unit=_CHUNK, minimum=_MIN_STEPS))


@functools.cache
def _lean_span(want: bool, exact32: bool) -> Callable[..., int]:
    """:func:`apply_lean_span` for one ``want`` and ``exact32`` (binary32 itself), as a
    compiled function of its own that passes them on as literals, so a first call
    compiles the four operations' loops of its case only.  With both as arguments the
    span compiled every case its branches reach: a first binary32 ``add`` of 1000
    elements took 26 s, and takes 8 s (fresh cache, AMD Zen 4 VM).  The operation
    stays an argument: one span per operation too took that call to 3.4 s but the
    test files of ``ops``, run in one process, from 183 to 223 CPU-s (this split: 197
    against 205, run side by side).  numba caches each case apart, keyed by the
    values the function closes over."""
    @numba.njit(cache=True, nogil=True)
    def span(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
             P: np.ndarray, overflow: int, tiny_after: bool, out: np.ndarray,
             fl: np.ndarray, first: int, last: int) -> int:
        return apply_lean_span(op, want, exact32, a, b, c, d, P, overflow, tiny_after, out,
                               fl, first, last)
    return cast(Callable[..., int], span)


@specialised(error_model="numpy")
def apply_lean_span(op: int, want: bool, exact32: bool, a: np.ndarray, b: np.ndarray,
                    c: np.ndarray, d: np.ndarray, P: np.ndarray, overflow: int,
                    tiny_after: bool, out: np.ndarray, fl: np.ndarray, first: int,
                    last: int) -> int:
    """:func:`apply_lean` for the chunks ``first .. last - 1`` of :data:`_CHUNK` elements on
    this thread, ``want`` and ``exact32`` literals; returns their count of wrong fma
    results (D13)."""
    n = out.size
    # pieces of _LEAN_STEP elements (the per-piece setup costs about a third of a
    # 4096-element float32 loop); the threads still split the work by chunks
    m = min(n, _LEAN_STEP)
    # a broadcast operand: one piece's worth, read by every piece
    a, b, c = widen(a, n, m), widen(b, n, m), widen(c, n, m)
    t, emin = P[rnd.T], P[rnd.EMIN]
    maxval = rnd.decode_one(np.uint64(P[rnd.MAXMAG]), P)
    big = overflow_value(P, overflow, maxval)
    negzero = P[rnd.NEGZERO] != 0
    # 8-bit codes are widened a chunk at a time (the loops compile for uint16 only);
    # with flags, codes are decoded into float32 scratch (once per span: an allocation
    # per chunk costs more than the chunk's arithmetic)
    wa, wb, wc = scratch16(a, m), scratch16(b, m), scratch16(c, m)
    k = m if want else 0
    sa, sb, sc = scratch32(a, k), scratch32(b, k), scratch32(c, k)
    so = np.empty(m if out.itemsize == 8 and (want or not exact32) else 0,
                  np.float32)  # _staged
    marks = 0
    hi = min(last * _CHUNK, n)
    for start in range(first * _CHUNK, hi, _LEAN_STEP):
        stop = min(start + _LEAN_STEP, hi)
        aa, bb, cc = (codes16(piece(a, n, start, stop), wa),
                      codes16(piece(b, n, start, stop), wb),  # (c: read by fma only)
                      codes16(piece(c, n, start, stop if op == 4 else start + 1), wc))
        o = out[start:stop]
        staged = _staged(o, so, exact32, want)
        marks += _lean_chunk(op, want, exact32, aa, bb, cc, d, t, emin, maxval, big,
                             negzero, tiny_after, staged,
                             fl[start:stop] if want else fl, sa, sb, sc)
        unstage(o, staged)
    return marks


def _staged(out, buf, exact32, want):  # type: ignore[no-untyped-def,unused-ignore]
    """Where the lean loop writes a piece of results: ``out`` itself when float32, else
    the float32 scratch ``buf`` (:func:`unstage` widens it into ``out``).  A loop that
    stores float64 takes four lanes per vector for its float32 arithmetic too; on an
    Intel core the float32 loop and a widening pass over the piece in cache took 25%
    less time than the float64 loop.  binary32 itself (one hardware operation an
    element; the literal ``exact32``) stores float64 directly without flags: on an AMD
    Zen 4 core, 0.30 against 0.44 ns an element for ``add`` (2**20 float32 operands),
    where the widening pass alone runs at the store bandwidth (0.14 ns).  With flags
    (``want``) it stages too, since the flags of ``* /`` are float32 arithmetic
    (:func:`_binary32_lane_flags`): ``mul`` and ``div`` with flags took 0.50 and 0.54
    ms against 0.60 and 0.68 when they stored float64 after binary64 checks (2
    threads, the same VM).  (Before those checks moved to float32, storing float64
    directly was the faster way for binary32 with flags: 0.60 against 0.68 ms.)"""


@overload(_staged, jit_options=_JIT, inline="always", prefer_literal=True)
def _staged_impl(out, buf, exact32, want):  # type: ignore[no-untyped-def,unused-ignore]
    direct = isinstance(exact32, types.BooleanLiteral) and exact32.literal_value \
        and isinstance(want, types.BooleanLiteral) and not want.literal_value
    if out.dtype == types.float64 and not direct:
        return lambda out, buf, exact32, want: buf[:out.size]
    return lambda out, buf, exact32, want: out


def unstage(out, staged):  # type: ignore[no-untyped-def,unused-ignore]
    """``out[:] = staged`` when their dtypes differ (float32 to float64 here; float64
    holding float32 values to float32 in :mod:`numerics.kernels.ops_wide`: exact both
    ways), nothing when they are one array."""


@overload(unstage, jit_options=_JIT, inline="always")
def _unstage_impl(out, staged):  # type: ignore[no-untyped-def,unused-ignore]
    if out.dtype == staged.dtype:
        return lambda out, staged: None

    def convert(out, staged):  # type: ignore[no-untyped-def,unused-ignore]
        for i in range(out.size):
            out[i] = staged[i]
    return convert


@numba.njit(cache=True, nogil=True)
def overflow_value(P: np.ndarray, overflow: int, maxval: float) -> float:
    """The magnitude a result beyond ``max`` takes under round to nearest (the rule of
    :func:`numerics.kernels.rounding.round_pair`): ``max`` when saturating, else
    infinity, else NaN, else ``max``."""
    if overflow == rnd.OVERFLOW_SATURATE:
        return maxval
    if P[rnd.INFMAG] >= 0:
        return np.inf
    if P[rnd.NANKIND] != rnd.NAN_NONE:
        return np.nan
    return maxval


def apply(op: int, negate_b: bool, a: np.ndarray, b: np.ndarray, c: np.ndarray,
          table: np.ndarray, P: np.ndarray, mode: int, overflow: int, tiny_after: bool,
          seed: Any, ubits: int, want: bool, shift: int, out: np.ndarray, fl: np.ndarray
          ) -> None:
    """``out[i] = op(a[i], b[i], c[i])`` rounded once into the format ``P``
    (:func:`numerics.kernels.rounding.format_params`), ``fl[i]`` its flag bits
    (:data:`FLAG_BITS`; exact when ``want``, else only where the general steps ran).
    ``shift`` tells how code operands decode (:func:`_values`).

    Operands of length 1 broadcast.  Chunks of :data:`_CHUNK` elements run on the
    threads; in each, a straight-line loop rounds the results that land in the
    format's normal range (:func:`_fast_chunk`) and the rest take the general steps
    (:func:`_element`).  ``out`` is NaN where a format without NaN has no result (the
    caller raises)."""
    chunks = (out.size + _CHUNK - 1) // _CHUNK
    spread(lambda lo, hi: apply_span(
        op, negate_b, a, b, c, table, P, mode, overflow, tiny_after, seed, ubits, want,
        shift, out, fl, lo, hi),
        chunks, unit=_CHUNK, minimum=_MIN_STEPS)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def apply_span(op: int, negate_b: bool, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               table: np.ndarray, P: np.ndarray, mode: int, overflow: int, tiny_after: bool,
               seed: Any, ubits: int, want: bool, shift: int, out: np.ndarray,
               fl: np.ndarray, first: int, last: int) -> None:
    """:func:`apply` for the chunks ``first .. last - 1`` of :data:`_CHUNK` elements on
    this thread."""
    n = out.size
    m = min(n, _CHUNK)
    # a broadcast operand: one chunk's worth, read by every chunk
    a, b, c = widen(a, n, m), widen(b, n, m), widen(c, n, m)
    t, emin, emax = P[rnd.T], P[rnd.EMIN], P[rnd.EMAX]
    narrow = t <= 25 and emax <= 250 and emin - t >= -250
    maxval = rnd.decode_one(np.uint64(P[rnd.MAXMAG]), P)
    # _fast_chunk: narrow formats, deterministic modes and stochastic rounding, t >= 1
    # (its even/odd is the last significand bit), signed; binary64 in round to nearest
    # even and the directed modes (ubits <= 53: the draw's floor fits the arithmetic)
    binary64 = t == 52 and emin == -1022 and emax == 1023 and P[rnd.SUBN] == 1
    fast = (narrow and (mode <= rnd.MODE_RD or mode == rnd.MODE_SR and ubits <= 53)
            and t >= 1 and P[rnd.SIGNED] == 1
            or binary64 and P[rnd.SIGNED] == 1 and mode != rnd.MODE_RNA
            and mode <= rnd.MODE_RD and table.size == 1)
    lo_normal = _WIDE_LOW if binary64 else math.ldexp(1.0, emin)
    cut = 52 - t
    residual = want or mode != rnd.MODE_RNE or t > 24 or op == 3
    for ch in range(first, last):
        start = ch * _CHUNK
        stop = min(start + _CHUNK, n)
        aa, bb, cc = (piece(a, n, start, stop), piece(b, n, start, stop),
                      piece(c, n, start, stop))
        oo = out[start:stop]
        ff = fl[start:stop]
        bad = stop - start
        if fast:
            bad = _fast_chunk(op, negate_b, _values(aa, table, shift),
                              _values(bb, table, shift), _values(cc, table, shift), table,
                              cut, mode, lo_normal, maxval, residual, seed, start, ubits,
                              oo, ff)
        if bad == 0:
            continue
        for j in range(stop - start):
            if fast and np.float64(oo[j]).view(np.int64) != _SENTINEL:
                continue
            x = _load(aa, j, table)
            y = _load(bb, j, table)
            z = _load(cc, j, table)
            snan = (x != x and _signalling(aa, j, table)) \
                or (op <= 3 and y != y and _signalling(bb, j, table)) \
                or (op == 3 and z != z and _signalling(cc, j, table))
            oo[j], flags = _element(op, x, -y if negate_b else y, z, snan, start + j, P,
                                    narrow, maxval, mode, overflow, tiny_after, seed, ubits)
            ff[j] = np.uint8(flags)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fast_chunk(op: int, negate_b: bool, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                table: np.ndarray, cut: int, mode: int, lo_normal: float, maxval: float,
                residual: bool, seed: Any, first: int, ubits: int, out: np.ndarray,
                fl: np.ndarray) -> int:
    """The elements whose exact result (narrow formats: an unscaled pair) rounds into the
    normal range, by :func:`_fast_value`, with their flags (only inexact can be
    raised there); the others (special operands, zero, subnormal or overflowing
    results) get :data:`_SENTINEL` and are counted.  Straight-line loops over
    contiguous chunks, one per operation, so that the compiler vectorizes them.
    Stochastic rounding draws element ``i``'s bits with the index ``first + i``.

    ``residual=False`` (round to nearest even, ``p <= 25``, ``+ - / sqrt``, no flags
    wanted) rounds ``h`` alone: Figueroa's theorem (``proofs/double_rounding.md``, D1)
    makes ``RNE_p(RNE_53(x)) == RNE_p(x)``; the inexact flag would need the residual.

    ``cut == 0`` is binary64 itself (:func:`_wide_loop`: the pair unscaled where the
    error-free transformations are exact, round to nearest even and the directed modes)."""
    sign = -1.0 if negate_b else 1.0
    if cut == 0:
        return _wide_chunk(op, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    if mode == rnd.MODE_SR:
        return _sr_chunk(op, a, b, c, table, sign, cut, lo_normal, maxval, seed, first,
                         ubits, out, fl)
    # every (op, residual) a call with literal flags: one straight loop each
    if op == 0 and residual:
        return _fast_loop(0, True, False, a, b, c, table, sign, cut, mode, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 0:
        return _fast_loop(0, False, False, a, b, c, table, sign, cut, mode, lo_normal,
                          maxval, seed, first, ubits, out, fl)
    if op == 1:
        return _fast_loop(1, False, False, a, b, c, table, sign, cut, mode, lo_normal,
                          maxval, seed, first, ubits, out, fl)
    if op == 2 and residual:
        return _fast_loop(2, True, False, a, b, c, table, sign, cut, mode, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 2:
        return _fast_loop(2, False, False, a, b, c, table, sign, cut, mode, lo_normal,
                          maxval, seed, first, ubits, out, fl)
    if op == 3:
        return _fast_loop(3, True, False, a, b, c, table, sign, cut, mode, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 4 and residual:
        return _fast_loop(4, True, False, a, b, c, table, sign, cut, mode, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 4:
        return _fast_loop(4, False, False, a, b, c, table, sign, cut, mode, lo_normal,
                          maxval, seed, first, ubits, out, fl)
    return _fast_loop(5, False, False, a, b, c, table, sign, cut, mode, lo_normal, maxval,
                      seed, first, ubits, out, fl)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sr_chunk(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, table: np.ndarray,
              sign: float, cut: int, lo_normal: float, maxval: float, seed: Any, first: int,
              ubits: int, out: np.ndarray, fl: np.ndarray) -> int:
    """:func:`_fast_chunk` under stochastic rounding (always with the residual), ``op``
    a literal."""
    m = rnd.MODE_SR
    if op == 0:
        return _fast_loop(0, True, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 1:
        return _fast_loop(1, False, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 2:
        return _fast_loop(2, True, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 3:
        return _fast_loop(3, True, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    if op == 4:
        return _fast_loop(4, True, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                          seed, first, ubits, out, fl)
    return _fast_loop(5, False, True, a, b, c, table, sign, cut, m, lo_normal, maxval,
                      seed, first, ubits, out, fl)


@specialised(error_model="numpy")
def _fast_loop(op: int, residual: bool, sr: bool, a: np.ndarray, b: np.ndarray,
               c: np.ndarray, table: np.ndarray, sign: float, cut: int, mode: int,
               lo_normal: float, maxval: float, seed: Any, first: int, ubits: int,
               out: np.ndarray, fl: np.ndarray) -> int:
    """The loop of :func:`_fast_chunk` for literal ``op``, ``residual`` and ``sr``
    (stochastic rounding): ``h`` (and with ``residual`` its exact error ``lo``, or for
    ``/`` and sqrt its rounding, settled under ``sr`` as :func:`_exact_pair` does) of
    each element, rounded by :func:`_fast_value`; returns the number of sentinels."""
    bad = 0
    for i in range(out.size):
        x = _load(a, i, table)
        lo = 0.0
        if op == 0 and residual:
            h, lo = _two_sum(x, sign * _load(b, i, table))
        elif op == 0:
            h = x + sign * _load(b, i, table)
        elif op == 1:
            h = x * _load(b, i, table)
        elif op == 2 and residual:
            y = _load(b, i, table)
            h = x / y
            p, e = _two_prod(h, y)
            r = (x - p) - e
            lo = r / y
            if sr:
                lo = _settle(h, lo, _div_rest(r, lo, y))
        elif op == 2:
            h = x / _load(b, i, table)
        elif op == 3:
            h, lo = _two_sum(x * _load(b, i, table), _load(c, i, table))
        elif op == 4 and residual:
            h = math.sqrt(x)
            p, e = _two_prod(h, h)
            r = (x - p) - e
            lo = r / (2.0 * h)
            if sr:
                lo = _settle(h, lo, _sqrt_rest(r, h, lo))
        elif op == 4:
            h = math.sqrt(x)
        else:
            h = x
        u = draw(seed, np.uint64(first + i), np.int64(ubits)) if sr else np.uint64(0)
        out[i], fl[i], bad_i = _fast_value(h, lo, cut, mode, lo_normal, maxval, u, ubits)
        bad += bad_i
    return bad


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fma_rest(p: float, e: float, c: float, h: float) -> float:
    """A value with the sign of ``p + e + c - h``, summed exactly as an expansion
    (Shewchuk's Grow-Expansion, as :func:`_sqrt_rest`: the largest non-zero part has the
    sign of the sum); no products, so nothing underflows to a false zero."""
    s1, e1 = _two_sum(p, c)
    q, g1 = _two_sum(e, e1)
    q, g2 = _two_sum(q, s1)
    r, k1 = _two_sum(-h, g1)
    r, k2 = _two_sum(r, g2)
    r, k3 = _two_sum(r, q)
    return r if r != 0 else (k3 if k3 != 0 else (k2 if k2 != 0 else k1))


#: binary64's fast loop leaves results and operands below this to the general steps:
#: above it the error-free transformations are exact (their errors are binary64 numbers).
_WIDE_LOW = 2.0**-960


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _wide_chunk(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, sign: float,
                mode: int, lo_normal: float, maxval: float, out: np.ndarray, fl: np.ndarray
                ) -> int:
    """:func:`_fast_chunk` for binary64 itself (float64 operands), ``op`` a literal."""
    if op == 0:
        return _wide_loop(0, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    if op == 1:
        return _wide_loop(1, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    if op == 2:
        return _wide_loop(2, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    if op == 3:
        return _wide_loop(3, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    if op == 4:
        return _wide_loop(4, a, b, c, sign, mode, lo_normal, maxval, out, fl)
    return _wide_loop(5, a, b, c, sign, mode, lo_normal, maxval, out, fl)


@specialised(error_model="numpy")
def _wide_loop(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, sign: float,
               mode: int, lo_normal: float, maxval: float, out: np.ndarray, fl: np.ndarray
               ) -> int:
    """binary64 in round to nearest even and the directed modes, ``op`` a literal: the
    hardware's result ``h`` (correctly rounded to nearest) and a residual with the sign
    of the exact value minus ``h`` (all the directed modes read), without the
    ``frexp`` scaling of :func:`_exact_pair`: TwoSum for ``+`` (exact unless it
    overflows), the hardware fma's ``x*y - h`` for ``*``, the remainder ``x - h*y`` for
    ``/`` and ``x - h*h`` for sqrt, and for fma :func:`_fma_rest` of the exact product,
    ``c`` and ``h``.  Those errors are binary64 numbers when ``|h|`` and ``|x|`` (for
    ``/`` and sqrt) or ``|x*y|`` (fma) are at least :data:`_WIDE_LOW` (``lo_normal``);
    elements below, and zero, special or overflowing results, get the sentinel."""
    bad = 0
    for i in range(out.size):
        x = np.float64(a[i])
        lo = 0.0
        guard = lo_normal
        if op == 0:
            h, lo = _two_sum(x, sign * np.float64(b[i]))
        elif op == 1:
            y = np.float64(b[i])
            h = x * y
            lo = fma(x, y, -h)
        elif op == 2:
            y = np.float64(b[i])
            h = x / y
            lo = fma(-h, y, x) / y  # the exact remainder over y: its sign
            guard = abs(x)
        elif op == 3:
            y = np.float64(b[i])
            p = x * y
            h = fma(x, y, np.float64(c[i]))
            lo = _fma_rest(p, fma(x, y, -p), np.float64(c[i]), h)
            guard = abs(p)
        elif op == 4:
            h = math.sqrt(x)
            lo = fma(-h, h, x)
            guard = x
        else:
            h = x
        # (a failed guard, or a residual that overflowed: h to NaN, which fails the
        # range test)
        h = h if (guard >= lo_normal) & (lo - lo == 0) else _NAN
        out[i], fl[i], bad_i = _fast_value(h, lo, 0, mode, lo_normal, maxval, np.uint64(0),
                                           0)
        bad += bad_i
    return bad


@specialised(error_model="numpy")
def _lean_flags(op: int, x: Any, y: Any, z: Any, h: Any, v: Any, unbounded: Any,
                threshold: Any, possible: bool, tiny_product: Any, cut_after: Any,
                maxval: Any, tiny_after: bool, exact32: bool) -> np.uint8:
    """The flag bits (:data:`FLAG_BITS`) of one element of :func:`_lean_loop`: ``h`` is
    the binary32 result of ``x op y`` (``op`` 0, ``x + y``, with ``y`` already negated
    for a difference; 1, ``x * y``; 3, ``x / y``) or ``fma(x, y, z)`` rounded to odd
    (``op`` 4, D11; for the others ``z`` is ``x``, whose terms then repeat), ``v`` its
    rounding into the format before the overflow rule, ``unbounded`` the rounding with
    unbounded exponent (the bits step); ``exact32``: the format is binary32 itself.

    * invalid: a signalling NaN operand (quiet bit clear), a NaN from numbers
      (``inf - inf``, ``0 * inf``, ``0 / 0``), or fma's ``0 * inf``; divide_by_zero:
      a finite non-zero ``x`` over a zero ``y``;
    * the exact result is ``h`` plus TwoSum's error for ``+ -``, ``h`` for products in
      binary32's normal range, and every sum below ``2**emin`` is exact in binary32
      (claim D5), so tininess before rounding is ``0 < |h| < 2**emin`` and after
      rounding ``0 < |unbounded| < 2**emin``; a quotient is exact when ``v * y == x``
      and tiny when ``|h| < 2**emin``, or ``|h| == 2**emin`` and ``|x| < |h * y|``
      (products exact in binary32 for the elements not marked, D12); for fma, tininess
      after rounding is ``0 < |h| < cut_after = 2**emin (1 - 2**-(t + 2))``, the
      half-way point below which rounding to ``p`` bits stays under ``2**emin`` (``h``
      may be a binary32 subnormal, whose bits do not round as ``unbounded``'s: D13.4);
    * overflow: ``|unbounded|`` beyond ``max``, or an infinite ``h`` from finite operands;
    * inexact: ``v`` differs from the exact result, or overflow; underflow: tiny and
      inexact;
    * :data:`GENERAL`: a product or quotient of finite non-zero operands with ``|h|``
      below ``2**-125`` (binary32 may have rounded it, or rounded it on its subnormal
      grid), which the caller recomputes with the general loop (D12); for fma, an
      inexact product (:func:`_fma_general`, D13).
    """
    # bitwise operators on booleans throughout: no branches, so the loop vectorizes
    xnan = x != x
    ynan = y != y
    znan = z != z
    xquiet = (bits_of_f32(x) & np.uint32(0x400000)) != 0
    yquiet = (bits_of_f32(y) & np.uint32(0x400000)) != 0
    zquiet = (bits_of_f32(z) & np.uint32(0x400000)) != 0
    snan = (xnan & ~xquiet) | (ynan & ~yquiet) | (znan & ~zquiet)
    invalid = snan | ((h != h) & ~xnan & ~ynan & ~znan)
    if op == 4:  # 0 * inf is invalid whatever z is (a quiet NaN too), as in the general loop
        invalid = invalid | ((x == 0) & (abs(y) == np.inf)) | ((abs(x) == np.inf) & (y == 0))
    big32 = np.float32(3.4028234663852886e38)
    finite = (abs(x) <= big32) & (abs(y) <= big32) & (abs(z) <= big32)
    # (fma: an inexact h, rounded to odd, has its 24th bit set, so v differs from it)
    err = np.float32(0.0)
    if op == 0:  # TwoSum (Knuth): h + err == x + y exactly when h is finite
        bb = h - x
        err = (x - (h - bb)) + (y - bb)
    divide = False
    if op == 3:  # D12.2: the quotient's exactness and tininess by exact products
        divide = finite & (y == 0) & (x != 0)
        finite = finite & (y != 0)
        exact = v * y == x
        ah = abs(h)
        tiny = (x != 0) & ((ah < threshold) | ((ah == threshold) & (abs(x) < abs(h * y))))
    else:
        exact = (v == h) & (err == 0)
        tiny = (abs(h) > 0) & (abs(h) < threshold)
    h_inf = abs(h) == np.float32(np.inf)
    over = finite & (h_inf | (abs(unbounded) > maxval))
    inexact = finite & (over | ~exact)
    if tiny_after and op == 4:  # h, rounded to odd, may be a binary32 subnormal (D13.4)
        tiny = (abs(h) > 0) & (abs(h) < cut_after)
    elif tiny_after:
        tiny = (abs(unbounded) > 0) & (abs(unbounded) < threshold)
    # (binary32's own sums below 2**-126 are exact: a sum never underflows there)
    under = False if exact32 and op == 0 else inexact & tiny
    # D12: a product or quotient near binary32's underflow threshold (h inexact, or
    # rounded on binary32's subnormal grid) is left to the general loop
    general = False
    if op == 1 or op == 3:
        general = finite & (x != 0) & (y != 0) & (abs(h) < np.float32(2.0**-125))
    elif op == 4 and possible:  # (False for D11's formats)
        general = _fma_general(x, y, x * y, tiny_product)
    return np.uint8(np.uint8(inexact) | (np.uint8(under) << 1) | (np.uint8(over) << 2)
                    | (np.uint8(invalid) << 3) | (np.uint8(divide) << 4)
                    | (np.uint8(general) << 7))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fma_general(x: Any, y: Any, pr: Any, tiny_product: Any) -> Any:
    """Whether binary32's product ``pr`` of the finite non-zero ``x`` and ``y`` may be
    inexact (claim D13): below ``tiny_product = 2**(2t - 148)`` (its last bit may fall
    under ``2**-149``) or infinite.  Never for formats D11 takes."""
    big32 = np.float32(3.4028234663852886e38)
    return (abs(x) <= big32) & (abs(y) <= big32) & (x != 0) & (y != 0) \
        & ((abs(pr) < tiny_product) | (abs(pr) > big32))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def to_odd(s: float, err: float) -> float:
    """``s + err`` (``s`` the binary64 sum, ``err`` its exact error) rounded to odd:
    ``s`` when exact, else the truncation with its last bit set."""
    inexact = (err != 0) & (err == err)  # (an infinite sum has a NaN error)
    toward_zero = inexact & ((err < 0) != (s < 0))
    b = _f64_bits(s) - (np.uint64(1) if toward_zero else np.uint64(0))
    return _bits_f64(b | (np.uint64(1) if inexact else np.uint64(0)))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def to_odd32(s: Any, err: Any) -> Any:
    """:func:`to_odd` in binary32: ``s + err`` (``s`` the binary32 sum, ``err`` its exact
    error) rounded to odd at 24 bits."""
    inexact = (err != 0) & (err == err)
    toward_zero = inexact & ((err < 0) != (s < 0))
    b = _U32(bits_of_f32(s) - (_U32(1) if toward_zero else _U32(0)))
    return f32_of_bits(_U32(b | (_U32(1) if inexact else _U32(0))))


@specialised(error_model="numpy")
def _binary32_flags(op: int, x: Any, y: Any, z: Any, h: Any, tiny_after: bool) -> np.uint8:
    """The flag bits of binary32's own ``x * y``, ``x / y`` or ``fma(x, y, z)`` (``op`` 1,
    3, 4), ``h`` the hardware's result, from exact binary64 arithmetic on the operands
    (claim D9 of ``proofs/double_rounding.md``; the lane loop uses it for fma, and
    :func:`_binary32_lane_flags` for ``*`` and ``/``):

    * inexact: ``x * y`` (at most 48 bits, within binary64's range) differs from
      ``h``, or ``h * y`` (exact likewise) differs from ``x``; for fma, ``x * y + z``
      as the binary64 sum ``s`` and its exact error (TwoSum) is not ``h``;
    * overflow: an infinite ``h`` from finite operands (binary32's unbounded rounding
      exceeds its max exactly when the hardware overflows);
    * tininess before rounding: ``0 < |x * y| < 2**-126``, or ``0 < |x| < 2**-126 |y|``,
      or for fma the sum rounded to odd at 53 bits below ``2**-126`` (D7.3); after
      rounding: the same with ``(1 - 2**-25) 2**-126``, the half-way point below which
      the rounding to 24 bits with unbounded exponent stays under ``2**-126``;
    * invalid: a signalling NaN operand, a NaN from numbers, or fma's ``0 * inf``;
      divide_by_zero: a finite non-zero ``x`` over a zero ``y``.
    """
    xnan = x != x
    ynan = y != y
    znan = z != z
    xquiet = (bits_of_f32(x) & np.uint32(0x400000)) != 0
    yquiet = (bits_of_f32(y) & np.uint32(0x400000)) != 0
    zquiet = (bits_of_f32(z) & np.uint32(0x400000)) != 0
    # (for * and /, z is x: the z terms repeat x's)
    invalid = (xnan & ~xquiet) | (ynan & ~yquiet) | (znan & ~zquiet) \
        | ((h != h) & ~xnan & ~ynan & ~znan)
    big32 = np.float32(3.4028234663852886e38)
    finite = (abs(x) <= big32) & (abs(y) <= big32)
    xx, yy, hh = np.float64(x), np.float64(y), np.float64(h)
    cut = 2.0**-126 * (1.0 - 2.0**-25) if tiny_after else 2.0**-126
    divide = False
    if op == 1:
        p = xx * yy
        exact = hh == p
        tiny = (p != 0) & (abs(p) < cut)
    elif op == 4:
        zz = np.float64(z)
        invalid = invalid | ((xx == 0) & (abs(yy) == np.inf)) \
            | ((abs(xx) == np.inf) & (yy == 0))
        finite = finite & (abs(z) <= big32)
        p = xx * yy
        s = p + zz
        bb = s - p
        err = (p - (s - bb)) + (zz - bb)
        exact = (hh == s) & (err == 0)
        v = abs(to_odd(s, err))
        tiny = (v != 0) & (v < cut)
    else:
        exact = hh * yy == xx
        tiny = (xx != 0) & (abs(xx) < cut * abs(yy))
        divide = finite & (yy == 0) & (xx != 0)
        finite = finite & (yy != 0)
    over = finite & (abs(h) == np.float32(np.inf))
    inexact = finite & (over | ~exact)
    under = inexact & tiny
    return np.uint8(np.uint8(inexact) | (np.uint8(under) << 1) | (np.uint8(over) << 2)
                    | (np.uint8(invalid) << 3) | (np.uint8(divide) << 4))


@specialised(error_model="numpy")
def _binary32_lane_flags(op: int, x: Any, y: Any, h: Any) -> np.uint8:
    """The flag bits of binary32's own ``x * y`` or ``x / y`` (``op`` 1, 3), ``h`` the
    hardware's result, in binary32 lanes (claim D16 of ``proofs/double_rounding.md``):
    the residual ``fma(x, y, -h)`` (``fma(-h, y, x)`` for ``/``) is exact, so it is zero
    exactly when ``h`` is, for every element that is not :data:`GENERAL`: finite
    non-zero operands with ``|h| < 2**-100`` (``*``), or with ``|h| < 2**-125`` or
    ``|x| < 2**-100`` (``/``), which the caller recomputes with the general loop.  The
    others are never tiny.  Overflow is an infinite ``h`` from finite operands (D9.2),
    invalid and divide_by_zero D9.4's.  (Binary64 checks, :func:`_binary32_flags`,
    need float64 lanes: half as many per vector.)"""
    xnan = x != x
    ynan = y != y
    xquiet = (bits_of_f32(x) & np.uint32(0x400000)) != 0
    yquiet = (bits_of_f32(y) & np.uint32(0x400000)) != 0
    invalid = (xnan & ~xquiet) | (ynan & ~yquiet) | ((h != h) & ~xnan & ~ynan)
    big32 = np.float32(3.4028234663852886e38)
    finite = (abs(x) <= big32) & (abs(y) <= big32)
    divide = False
    if op == 1:
        r = fma(x, y, -h)
        general = finite & (x != 0) & (y != 0) & (abs(h) < np.float32(2.0**-100))
    else:
        r = fma(-h, y, x)
        divide = finite & (y == 0) & (x != 0)
        finite = finite & (y != 0)
        general = finite & (x != 0) & ((abs(h) < np.float32(2.0**-125))
                                       | (abs(x) < np.float32(2.0**-100)))
    over = finite & (abs(h) == np.float32(np.inf))
    inexact = finite & (over | (r != 0))  # (an infinite h makes r infinite or NaN)
    return np.uint8(np.uint8(inexact) | (np.uint8(over) << 2) | (np.uint8(invalid) << 3)
                    | (np.uint8(divide) << 4) | (np.uint8(general) << 7))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def quantum_fits(t: int, maxval: float) -> bool:
    """Whether :func:`round_by_quantum` rounds into a format of ``t <= 22`` trailing
    bits whose largest finite value is ``maxval`` (claim D14 of
    ``proofs/double_rounding.md``): its binades ``E <= emax`` need the constant
    ``2**(E + 23 - t)``, a binary32 number when ``emax <= 104 + t``.

    Examples
    --------
    >>> quantum_fits(3, 448.0), quantum_fits(7, 3.3895313892515355e+38)
    (True, False)
    """
    return np.float64(maxval) < 2.0 ** (105 + t)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def round_by_quantum(m: Any, threshold_bits: Any, quantum_shift: Any) -> Any:
    """The bits of ``|h|`` (bits ``m``, a binary32 magnitude) rounded to nearest-even
    to its format's quantum, by claim D14 of ``proofs/double_rounding.md``:
    ``(|h| + C) - C`` with ``C = 2**(max(E, emin) + 23 - t)``, where
    ``2**E <= |h| < 2**(E + 1)`` (``threshold_bits``: the bits of ``2**emin``;
    ``quantum_shift``: ``(23 - t) << 23``).  The format's unbounded rounding for
    ``|h| < 2**(emax + 1)`` when :func:`quantum_fits`; beyond, a magnitude above
    ``max`` (``|h|`` itself, a NaN, or an infinity for an infinite ``h``), which the
    overflow rule then replaces.

    Examples
    --------
    >>> import numpy as np
    >>> bits = lambda x: int(np.float32(x).view(np.uint32))
    >>> value = lambda m: float(np.uint32(m).view(np.float32))
    >>> emin, t = -6, 3  # e4m3fn: 17 = 2**4 * 1.0625 rounds to 16, 2**-9 * 1.5 to 2**-8
    >>> [value(round_by_quantum(np.uint32(bits(x)), np.uint32(bits(2.0**emin)),
    ...                         np.uint32((23 - t) << 23))) for x in (17.0, 2**-9 * 1.5)]
    [16.0, 0.00390625]
    """
    e = _U32(m & _U32(0x7F800000))
    e = e if e > threshold_bits else threshold_bits
    c = f32_of_bits(_U32(e + quantum_shift))
    return bits_of_f32((f32_of_bits(m) + c) - c)


# (numba's own pipeline, not numerics.kernels.specialise: pruned, the binary32 add
# variant ran 1.6 times slower, 0.67 against 0.40 ms on 2**20 float32)
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lean_loop(op: int, a: np.ndarray, b: np.ndarray, z: np.ndarray, D: Any, negate: Any,
               exact32: bool, t: int, emin: int, maxval: Any, big: Any, negzero: bool,
               want: bool, tiny_after: bool, out: np.ndarray, fl: np.ndarray) -> int:
    """The loop of :func:`_lean_chunk` for literal ``op`` (0 add, 1 mul, 3 div, 4 fma,
    whose third operand is ``z``), ``exact32`` (binary32 itself:
    ``h`` is the result) and ``want`` (also the flags: :func:`_lean_flags`, or
    :func:`_binary32_flags` for binary32's ``* / fma``); ``out`` is float32.
    Operands are float32 numbers or codes, decoded in the loop
    (:func:`numerics.kernels.unpack.load32` with the plan constants ``D``); the bits of
    ``b`` are XORed with ``negate`` (``0x80000000`` makes ``a + b`` the difference:
    the sign of a NaN plays no part).  Signs, the overflow rule and NaNs are bit
    operations on the float32 pattern (a branch or a float64 select would keep the
    loop from vectorizing).

    Returns the number of fma elements whose binary32 product may be inexact (D13:
    :func:`_fma_general`) without flags: their results are :data:`MARK` (with flags
    their flag bytes get :data:`GENERAL` instead)."""
    s = _U32(23 - t)
    round_bias = _U32((1 << (22 - t)) - 1) if t < 23 else _U32(0)
    keep = _U32(~((1 << (23 - t)) - 1) & 0xFFFFFFFF)
    threshold = np.float32(math.ldexp(1.0, emin))
    threshold_bits = bits_of_f32(threshold)
    c = np.float32(math.ldexp(1.0, emin - t + 23))
    max_bits = bits_of_f32(np.float32(maxval))
    big_bits = _U32(bits_of_f32(np.float32(big)) & _U32(0x7FFFFFFF))
    # an overflow to NaN (a format with NaN and no infinity) is the one quiet NaN: no sign
    big_sign = _U32(0) if big != big else _U32(0xFFFFFFFF)
    zero_sign = _U32(0x80000000) if negzero else _U32(0)
    nan = np.float32(np.nan)
    mark = f32_of_bits(MARK)
    tiny_product = np.float32(math.ldexp(1.0, 2 * t - 148))
    cut_after = np.float32(math.ldexp(1.0, emin) - math.ldexp(1.0, emin - t - 2))
    # fma products that binary32 may round (D13; never in D11's formats, and then
    # LLVM unswitches the loop on this test): marked with flags, else counted
    possible = op == 4 and not exact32 and not (
        2 * (emin - t) >= 2 * t - 148 and np.float64(maxval)**2 < 2.0**128)
    count = possible and not want
    # without flags, a format whose exponents stay clear of binary32's top rounds by
    # one addition (see :func:`round_by_quantum`); the test is loop-invariant (LLVM
    # unswitches the loop on it)
    by_quantum = not exact32 and not want and quantum_fits(t, maxval)
    quantum_shift = _U32((23 - t) << 23)
    for i in range(out.size):
        wrong = False
        x = load32(a, i, D)
        y = f32_of_bits(_U32(bits_of_f32(load32(b, i, D)) ^ negate))
        w = load32(z, i, D) if op == 4 else x
        if op == 0:
            h = x + y
        elif op == 3:
            h = x / y
        elif op == 4 and exact32:
            h = fma(x, y, w)
        elif op == 4:  # the exact product plus w, rounded to odd at 24 bits (D11, D13)
            pr = x * y
            sm = pr + w
            bb = sm - pr
            h = to_odd32(sm, (pr - (sm - bb)) + (w - bb))
            if count:
                wrong = _fma_general(x, y, pr, tiny_product)
        else:
            h = x * y
        bits = bits_of_f32(h)
        sign = _U32(bits & _U32(0x80000000))
        m = _U32(bits & _U32(0x7FFFFFFF))
        if exact32:
            mag = m
            normal = m
        elif by_quantum:
            mag = round_by_quantum(m, threshold_bits, quantum_shift)
            normal = mag
        else:
            normal = _U32(_U32(m + round_bias + _U32(shr32(m, s) & _U32(1))) & keep)
            sub = bits_of_f32((f32_of_bits(m) + c) - c)
            mag = normal if m >= threshold_bits else sub
        if want and exact32 and op == 4:
            fl[i] = _binary32_flags(op, x, y, w, h, tiny_after)
        elif want and exact32 and (op == 1 or op == 3):
            fl[i] = _binary32_lane_flags(op, x, y, h)
        elif want:
            fl[i] = _lean_flags(op, x, y, w, h, f32_of_bits(_U32(mag | sign)),
                                f32_of_bits(_U32(normal | sign)), threshold, possible,
                                tiny_product, cut_after, maxval, tiny_after, exact32)
        over = mag > max_bits
        res = big_bits if over else mag
        sign = _U32(sign & big_sign) if over else sign if mag != _U32(0) else \
            _U32(sign & zero_sign)
        out[i] = mark if wrong else nan if m > _U32(0x7F800000) else \
            f32_of_bits(_U32(res | sign))
    # (counted in a loop of its own, over the output in cache: a count in the loop
    # above would halve its vector width)
    marks = 0
    if count:
        for i in range(out.size):
            marks += bits_of_f32(np.float32(out[i])) == MARK
    return marks


@specialised(error_model="numpy")
def _lean_chunk(op: int, want: bool, exact32: bool, a: np.ndarray, b: np.ndarray,
                c: np.ndarray, d: np.ndarray, t: int, emin: int, maxval: float, big: float,
                negzero: bool, tiny_after: bool, out: np.ndarray, fl: np.ndarray,
                sa: np.ndarray, sb: np.ndarray, sc: np.ndarray) -> int:
    """``a + b``, ``a * b`` or ``a - b`` (``op`` 0, 1, 2; float32 operands or codes,
    decoded by the :func:`numerics.kernels.unpack.plan` array ``d``) rounded to nearest-even
    into a format whose values, sums and products :func:`lean_fits` keeps within
    float32: one straight loop of 32-bit lanes per case; with ``want``, ``fl[i]`` gets
    the flag bits (:func:`_lean_flags`, tininess after rounding when ``tiny_after``).

    The float32 result ``h`` is the exact one rounded once to 24 bits, and rounding it
    to the format's ``p = t + 1`` bits gives the exact result's rounding:

    * a product of two ``p``-bit numbers has at most ``2p <= 24`` bits and, by
      :func:`lean_fits` (op 1), lies in float32's normal range or is zero: exact;
      without flags, ``lean_fits(..., 2)`` formats (bfloat16) round products and
      quotients through float32 innocuously (``proofs/double_rounding.md`` D8);
    * a sum below ``2**emin`` is a multiple of the quantum ``2**(emin - t)`` (so are
      both operands) with at most ``p`` bits: exact; above, ``24 >= 2p + 1`` makes the
      double rounding innocuous (Figueroa; ``proofs/double_rounding.md`` D1);
    * binary32 itself (``t = 23``) is the hardware operation, which also serves ``/``
      and fma there (``op`` 3, 4; the flags of ``* / fma`` come from exact binary64
      arithmetic, D9).

    The second rounding is :mod:`numerics.kernels.narrow`'s: add ``2**(s-1) - 1`` plus
    the last kept bit and clear the ``s = 23 - t`` low bits in the normal range, and
    ``(|h| + C) - C`` with ``C = 2**(emin - t + 23)`` (rounded to the quantum by the
    addition) below ``2**emin``.  A magnitude beyond ``maxval`` (an infinite result
    too) becomes ``big`` with the sign (``encode``'s overflow rule), a NaN becomes the
    one quiet NaN, and a zero of a format without -0 is +0.  ``out`` is float32 (float64
    results are staged through it, :func:`_staged`, except binary32's own).
    ``want`` and ``exact32`` (binary32 itself) are literals.

    Without flags, codes are decoded inside the loop
    (:func:`numerics.kernels.unpack.load32`: no pass over memory), so those loops
    compile once per code dtype; with flags, into the float32 scratch ``sa``, ``sb``,
    ``sc`` first (:func:`numerics.kernels.unpack.values32`), so the larger flag loops
    compile for float32 operands only."""
    cc = c if op == 4 else c[:1]
    D = constants(d)
    m, g = np.float32(maxval), np.float32(big)
    if want:
        return _lean_ops(op, values32(a, D, sa), values32(b, D, sb), values32(cc, D, sc), D,
                         exact32, t, emin, m, g, negzero, True, tiny_after, out, fl)
    return _lean_ops(op, a, b, cc, D, exact32, t, emin, m, g, negzero, False, tiny_after,
                     out, fl)


@specialised(error_model="numpy")
def _lean_ops(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, D: Any, exact32: bool,
              t: int, emin: int, m: Any, g: Any, negzero: bool, want: bool,
              tiny_after: bool, out: np.ndarray, fl: np.ndarray) -> int:
    """:func:`_lean_loop` for ``op`` (``a - b`` as ``a + (-b)``), each operation a loop
    of its own, ``exact32`` and ``want`` literals."""
    neg = _U32(0x80000000) if op == 2 else _U32(0)
    if op == 1:
        return _lean_loop(1, a, b, c, D, neg, exact32, t, emin, m, g, negzero, want,
                          tiny_after, out, fl)
    if op == 3:
        return _lean_loop(3, a, b, c, D, neg, exact32, t, emin, m, g, negzero, want,
                          tiny_after, out, fl)
    if op == 4:
        return _lean_loop(4, a, b, c, D, neg, exact32, t, emin, m, g, negzero, want,
                          tiny_after, out, fl)
    return _lean_loop(0, a, b, c, D, neg, exact32, t, emin, m, g, negzero, want,
                      tiny_after, out, fl)


def lean_fits(t: int, emin: int, emax: int, op: int) -> bool:
    """Whether :func:`_lean_chunk` computes ``op`` for a format, by claim D5 or D8 of
    ``proofs/double_rounding.md``: 0, ``+ -`` (binary32 itself, or ``p <= 11`` with
    every value a binary32 number); 1, ``*`` with flags (also every product of two
    values a binary32 normal number, zero, or beyond binary32's max: the product is
    exact); 2, ``*`` and ``/`` without flags (``p <= 8`` and ``emin >= 3t - 147``:
    binary32's rounding of the product or quotient is innocuous, D8); 3, fma (the
    exact product plus the addend rounded to odd, D11; products binary32 may have
    rounded, which only formats with products outside its normal range have, are
    counted or marked for the general loop, D13).

    Examples
    --------
    >>> lean_fits(7, -126, 127, 1), lean_fits(7, -126, 127, 2), lean_fits(10, -14, 15, 2)
    (False, True, False)
    >>> lean_fits(3, -6, 8, 3), lean_fits(7, -126, 127, 3), lean_fits(12, -14, 15, 3)
    (True, True, False)
    """
    if t == 23 and emin == -126 and emax == 127:
        return True
    # (t = 0: the last kept bit of the float32 pattern is its exponent's, whose parity
    # need not be the code's, so ties to even would go wrong)
    if t < 1 or t > 10 or emin < -126 or emax > 127 or emin - t < -149:
        return False
    if op == 2:
        return t <= 7 and emin >= 3 * t - 147
    if op == 3:  # products binary32 may round are marked (D13)
        return True
    return op == 0 or (2 * (emin - t) >= -126 and 2 * (emax + 1) <= 128)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def round_sr(h: float, lo: float, cut: int, u: Any, ubits: int) -> float:
    """The stochastic rounding of ``h + lo`` to ``53 - cut`` significant bits for a result
    in the format's normal range (``|h| > 2**emin``, the caller checks ``<= max``), by
    the ``ubits``-bit draw ``u`` (``ubits <= 53``): away from zero iff ``u < F =
    floor(frac * 2**ubits)``, ``frac`` the exact distance of ``|h + lo|`` from its lower
    neighbour ``L`` in units of the gap ``2**k`` to the next (the rule of
    :func:`numerics.kernels.rounding.round_pair`).  ``lo`` is a residual with the sign
    of the exact value's and, where it is itself rounded, settled (:func:`_settle`).

    On the bits of ``h`` (as :func:`_round_normal`): ``low``, the dropped bits, are
    ``|h| - L`` in units of ``2**E`` (``h``'s last bit) and ``l`` (the residual toward
    the magnitude) adds ``l * 2**-E`` of them; below a grid point (``low == 0``,
    ``l < 0``) ``L`` is the value one unit lower and the distance ``2**k2 - |l|``, with
    ``k2 = k - 1`` at a power of two (the lower binade's gap).  With ``r = ubits - cut``
    and ``g = l * 2**(ubits - k2)``: ``F = (low << r) + floor(g)`` for ``r >= 0``, else
    ``(low + floor(g)) >> -r`` (``|l| <= 2**(E - 1)``, so ``floor(g)`` is ``floor(l *
    2**-E)``: 0 or -1); ``low`` is ``2**cut`` below a grid point.  A ``g`` that
    underflows to zero still floors to -1 when ``l < 0``.
    """
    bits = np.float64(h).view(np.int64)
    unit = np.int64(1) << cut
    low = bits & (unit - 1)
    base = bits - low
    neg = h < 0
    lm = -lo if neg else lo  # the residual toward the magnitude
    below = (low == 0) & (lm < 0)
    pow2 = (bits & np.int64(0xFFFFFFFFFFFFF)) == 0
    # 2**(ubits - k2) with k2 = E + cut - (below at a power of two), built from its bits
    k2 = ((bits >> 52) & 0x7FF) - 1075 + cut - np.int64(below & pow2)
    scale = np.int64((ubits - k2 + 1023) << 52).view(np.float64)
    g = lm * scale
    fg = np.int64(math.floor(g)) - np.int64((g == 0) & (lm < 0))
    a = unit if below else low
    r = ubits - cut
    if r >= 0:
        f = (a << r) + fg
    else:
        f = (a + fg) >> (-r)
    up = np.uint64(u) < np.uint64(f)
    lower = base - unit * np.int64(below)
    return np.int64(lower + unit * np.int64(up)).view(np.float64)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fast_value(h: float, lo: float, cut: int, mode: int, lo_normal: float, maxval: float,
                u: Any, ubits: int) -> tuple[float, int, int]:
    """The normal-range rounding of ``h + lo`` (stochastic by the draw ``u``, or
    :func:`_round_normal`; ``cut == 0``, binary64 itself: ``h`` to nearest, or its
    neighbour by ``lo``'s sign in the directed modes), its inexact flag and 0, or the
    sentinel and 1 (NaN and infinite ``h`` fail the range test).  (Stores stay in the
    loops: an inlined store keeps the compiler from vectorizing them.)"""
    if mode == rnd.MODE_SR:
        v = round_sr(h, lo, cut, u, ubits)
    elif cut == 0 and mode == rnd.MODE_RNE:
        v = h
    else:
        v = _round_normal(h, lo, cut, mode)
    ah = abs(h)
    ok = (ah > lo_normal) & (ah <= maxval) & (abs(v) <= maxval)
    return (v if ok else _SENTINEL_F), np.uint8((v != h) | (lo != 0)), np.int64(not ok)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _element(op: int, x: float, y: float, z: float, snan: bool, i: int, P: np.ndarray,
             narrow: bool, maxval: float, mode: int, overflow: int, tiny_after: bool,
             seed: Any, ubits: int) -> tuple[float, int]:
    """Element ``i`` by the general steps: special operands (``snan``: one of them is a
    signalling NaN), or the exact pair rounded by :mod:`numerics.kernels.rounding`, with
    its flag bits (NaN where a format without NaN has no result)."""
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)) \
            or (op == 2 and y == 0) or (op == 4 and x < 0):
        # NaN (one quiet NaN, whatever the operands'), +-inf or a signed zero
        r, flags = _special(op, x, y, z)
        if snan:
            flags |= 8
        if r == 0 and P[rnd.SUBN] == 0:  # x / inf, exactly zero, in a format without it
            r = _NAN
            flags |= 8
        if r != r and P[rnd.NANKIND] == rnd.NAN_NONE:
            return _NAN, flags
        v = rnd.decode_one(rnd.round_pair(_NAN if r != r else r, 0.0, P, np.int64(mode),
                                          np.int64(overflow), np.uint64(0), np.int64(1)), P)
        # a number no value stands for: converted into NaN, or negative (-inf from
        # an infinite operand) in an unsigned format
        if (op == 5 and r == r and v != v) or (r < 0 and P[rnd.SIGNED] == 0):
            flags |= 8
        return v, flags
    h, lo, k = _exact_pair(op, x, y, z, narrow, mode)
    u = draw(seed, np.uint64(i), np.int64(ubits)) if mode == rnd.MODE_SR else np.uint64(0)
    v = rnd.decode_one(_round(h, lo, k, P, mode, overflow, u, ubits), P)
    if h == 0:  # an exact zero: NaN (invalid) where the format has none
        if P[rnd.SUBN] == 0:
            return _NAN, np.int64(8)
        return v, np.int64(0)
    neg, sig, eps, exp = _to_scaled(h, lo, k)
    return v, _flags(neg, sig, eps, exp, P, maxval, mode, tiny_after, u, ubits)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def decode_all(P: np.ndarray) -> np.ndarray:
    """The float64 value of every code of a format of at most 16 bits, signalling NaN
    codes (IEEE-style NaNs with the top trailing bit clear) as signalling float64 NaNs."""
    n = 1 << P[rnd.BITS]
    out = np.empty(n, np.float64)
    t = P[rnd.T]
    for code in range(n):
        v = rnd.decode_one(np.uint64(code), P)
        if v != v and P[rnd.NANKIND] == rnd.NAN_IEEE and ((code >> (t - 1)) & 1) == 0:
            v = np.uint64(np.float64(v).view(np.uint64) & ~np.uint64(1 << 51)
                          | np.uint64(1 << 50)).view(np.float64)
        out[code] = v
    return out


def unpack_flags(fl: np.ndarray, out: np.ndarray) -> None:
    """``out[k, i]`` (bool, shape ``(5, n)``, C order): bit :data:`FLAG_BITS` ``[k]`` of
    ``fl[i]``.  Pieces run on the threads (a pass at the store bandwidth: from
    :data:`FAST_LOOP_MIN` elements)."""
    spread(lambda lo, hi: _unpack_span(fl[lo:hi], out[0, lo:hi], out[1, lo:hi],
                                       out[2, lo:hi], out[3, lo:hi], out[4, lo:hi]),
           fl.size, align=64, minimum=FAST_LOOP_MIN)


@numba.njit(cache=True, nogil=True)
def _unpack_span(fl: np.ndarray, o0: np.ndarray, o1: np.ndarray, o2: np.ndarray,
                 o3: np.ndarray, o4: np.ndarray) -> None:
    """:func:`unpack_flags` of one piece, each flag's row a contiguous array (a loop
    over ``out[k, lo + i]`` with a start that may be negative, as numba must assume,
    does not vectorize: 30 times slower)."""
    for i in range(fl.size):
        f = fl[i]
        o0[i] = f & 1
        o1[i] = (f >> 1) & 1
        o2[i] = (f >> 2) & 1
        o3[i] = (f >> 3) & 1
        o4[i] = (f >> 4) & 1
