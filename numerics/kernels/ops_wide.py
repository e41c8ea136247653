"""``+ - * / fma`` rounded to nearest-even in float64 lanes, with IEEE flags.

For a format whose values are all float32 values (``p = t + 1 <= 24`` significant
bits, exponents within float32's, subnormals; :func:`fits`), one element is:

1. **Operands** as float64: float32 and float64 numbers as they are; codes are first
   decoded into float32 per chunk, 8 lanes at a time, by
   :func:`numerics.kernels.unpack.decode32` (uint16) or ``decode_top`` (int16: codes
   that are float32 top halves, bfloat16).  A signalling NaN is noted before the
   conversion (which would quiet it).
2. **``h``, the exact result rounded to 53 bits, to odd or harmlessly:**

   * ``x * y``: exact (at most ``2p <= 48`` bits, inside binary64's range);
   * ``x + y``, ``x - y`` and ``fma(x, y, z) = (x*y) + z``: the binary64 sum and its
     error by TwoSum (Knuth), then round to odd (the sum truncated, its last bit set
     when inexact: claim D6 of ``proofs/double_rounding.md``);
   * ``x / y``: the binary64 quotient, whose second rounding is innocuous (claim D7).

3. **One rounding** of ``h`` to ``p`` bits on its binary64 bits: add
   ``2**(s-1) - 1`` plus the last kept bit and clear the ``s = 52 - t`` low bits
   (the rounding with unbounded exponent, also what the flags need), or below
   ``2**emin`` ``(|h| + C) - C`` with ``C = 2**(emin - t + 52)``.  A magnitude
   beyond ``max`` becomes the overflow rule's value, a NaN the one quiet NaN, and a
   zero of a format without -0 is +0.
4. **Flags** from the same quantities: ``inexact`` when the rounded value differs
   from ``h`` (for ``/``: when ``v * y != x``, exact in binary64), ``underflow``
   (tiny and inexact: before rounding ``0 < |h| < 2**emin``, or ``|x| < 2**emin |y|``
   for ``/``; after rounding judged on the unbounded rounding), ``overflow`` (the
   unbounded rounding beyond ``max``), ``invalid`` (a signalling NaN operand, a NaN
   from numbers, ``0 * inf`` in fma) and ``divide_by_zero``.

binary64 itself needs none of this (:func:`apply_native`): each operation of the
hardware is IEEE 754's, rounded once to nearest-even, so ``h`` is the result; only the
overflow rule and the one quiet NaN are applied to its bits, and the flags of ``+ - *
/`` come from error-free transformations (claim D10).

The tests pin every element and flag to the general loop of
:mod:`numerics.kernels.ops` and to the Fraction reference.
"""

from __future__ import annotations

import math
from typing import Any, Callable, cast

import numba
import numpy as np
from numba import types
from numba.extending import overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
import numerics.kernels.rounding as rnd
from numerics.kernels.lanes import bits_of_f32, fma
from numerics.kernels.ops import GENERAL, overflow_value, piece, to_odd, unstage, widen
from numerics.kernels.rounding import bits_f64 as _bits_f64
from numerics.kernels.rounding import f64_bits as _f64_bits
from numerics.kernels.specialise import specialised
from numerics.kernels.spread import PARALLEL_MIN, spread
from numerics.kernels.unpack import constants, scratch32, values32

__all__ = ["GENERAL", "OPS", "apply_native", "apply_native_span", "apply_wide",
           "apply_wide_span", "fits", "native"]

#: Operation codes of :func:`apply_wide`.
OPS = {"add": 0, "mul": 1, "sub": 2, "div": 3, "fma": 4}
_ADD, _MUL, _SUB, _DIV, _FMA = range(5)
_CHUNK = 1 << 12
_MIN_STEPS = PARALLEL_MIN  # elements worth a thread (see numerics.kernels.ops._MIN_STEPS)
_JIT: Any = {"cache": True, "nogil": True, "error_model": "numpy"}
_U64 = np.uint64
_NAN = np.float64(np.nan)
_SIGN = np.uint64(1 << 63)
_INF_BITS = np.uint64(0x7FF0000000000000)
_MAX = 1.7976931348623157e308
# the intrinsics as plain callables for type checkers (numba's typing context is their
# first parameter in Python)
f64_bits = cast(Callable[[Any], Any], _f64_bits)
bits_f64 = cast(Callable[[Any], Any], _bits_f64)


def fits(t: int, emin: int, emax: int, signed: bool, subnormals: bool) -> bool:
    """Whether :func:`apply_wide` takes a format: every value a float32 value, signed,
    with subnormals (step 3 rounds below ``2**emin`` to the subnormal quantum) and at
    least one trailing bit (with none, the last kept bit of a binary64 pattern is an
    exponent bit, whose parity need not be the code's: ties to even would go wrong).

    Examples
    --------
    >>> fits(7, -126, 127, True, True), fits(52, -1022, 1023, True, True)
    (True, False)
    """
    return 1 <= t <= 23 and emin >= -126 and emax <= 127 and emin - t >= -149 and signed \
        and subnormals


def native(t: int, emin: int, emax: int, signed: bool, subnormals: bool, nan: bool,
           infinity: bool) -> bool:
    """Whether a format is binary64 (IEEE 754 specials included), which
    :func:`apply_native` computes by the hardware's own operations.

    Examples
    --------
    >>> native(52, -1022, 1023, True, True, True, True), native(23, -126, 127, True, True,
    ...                                                         True, True)
    (True, False)
    """
    return (t == 52 and emin == -1022 and emax == 1023 and signed and subnormals and nan
            and infinity)


def _load(arr, i):  # type: ignore[no-untyped-def,unused-ignore]
    """Element ``i`` of a float operand as float64, and whether it is a signalling NaN."""


@overload(_load, jit_options=_JIT, inline="always")
def _load_impl(arr, i):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype == types.float64:
        def load64(arr, i):  # type: ignore[no-untyped-def,unused-ignore]
            v = arr[i]
            quiet = (f64_bits(v) & _U64(1 << 51)) != _U64(0)
            return v, (v != v) & ~quiet
        return load64

    def load32(arr, i):  # type: ignore[no-untyped-def,unused-ignore]
        v = arr[i]
        quiet = (bits_of_f32(v) & np.uint32(0x400000)) != np.uint32(0)
        return np.float64(v), (v != v) & ~quiet
    return load32


@specialised(error_model="numpy")
def _wide_loop(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, t: int,
               emin: int, maxval: float, big: float, negzero: bool, want: bool,
               tiny_after: bool, out: np.ndarray, fl: np.ndarray) -> None:
    """Steps 1 to 4 for literal ``op`` and ``want`` (also the flags)."""
    s = _U64(52 - t)
    round_bias = _U64((1 << (51 - t)) - 1)
    keep = ~_U64((1 << (52 - t)) - 1)
    threshold = math.ldexp(1.0, emin)
    threshold_bits = f64_bits(threshold)
    cc = math.ldexp(1.0, emin - t + 52)
    max_bits = f64_bits(maxval)
    big_bits = f64_bits(abs(big))
    # an overflow to NaN (a format with NaN and no infinity) is the one quiet NaN: no sign
    big_sign = _U64(0) if big != big else ~_U64(0)
    zero_sign = _SIGN if negzero else _U64(0)
    for i in range(out.size):
        x, xs = _load(a, i)
        y, ys = _load(b, i)
        z, zs = _load(c, i) if op == _FMA else (0.0, False)
        if op == _MUL:
            h = x * y
        elif op == _DIV:
            h = x / y
        else:
            p = x * y if op == _FMA else x
            q = z if op == _FMA else (-y if op == _SUB else y)
            sm = p + q
            bb = sm - p
            h = to_odd(sm, (p - (sm - bb)) + (q - bb))
        # step 3 on the bits (a branch or a float select would keep the loop scalar)
        hb = f64_bits(h)
        sign = hb & _SIGN
        m = hb & ~_SIGN
        unbounded = (m + round_bias + ((m >> s) & _U64(1))) & keep
        sub = f64_bits((bits_f64(m) + cc) - cc)
        mag = unbounded if m >= threshold_bits else sub
        if want:
            v = bits_f64(mag | sign)
            ub = bits_f64(unbounded)
            xnan, ynan, znan = x != x, y != y, z != z
            finite = (abs(x) <= _MAX) & (abs(y) <= _MAX) & (abs(z) <= _MAX)
            invalid = xs | ys | zs | ((h != h) & ~xnan & ~ynan & ~znan)
            divide = False
            if op == _DIV:
                divide = finite & (y == 0) & (x != 0)
                finite = finite & (y != 0)
                exact = v * y == x
                tiny = (x != 0) & (abs(x) < threshold * abs(y))
            else:
                exact = v == h
                tiny = (m > _U64(0)) & (m < threshold_bits)
            if op == _FMA:
                invalid = invalid | ((x == 0) & (abs(y) == np.inf)) | \
                    ((abs(x) == np.inf) & (y == 0))
            if tiny_after:
                tiny = (ub > 0) & (ub < threshold)
            over = finite & (ub > maxval)
            inexact = finite & (over | ~exact)
            under = inexact & tiny
            fl[i] = np.uint8(np.uint8(inexact) | (np.uint8(under) << 1)
                             | (np.uint8(over) << 2) | (np.uint8(invalid) << 3)
                             | (np.uint8(divide) << 4))
        over = mag > max_bits
        res = big_bits if over else mag
        sign = sign & big_sign if over else sign if mag != _U64(0) else sign & zero_sign
        out[i] = _NAN if m > _INF_BITS else bits_f64(res | sign)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _wide_chunk(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, t: int, emin: int,
                maxval: float, big: float, negzero: bool, want: bool, tiny_after: bool,
                out: np.ndarray, fl: np.ndarray) -> None:
    """:func:`_wide_loop` with ``op`` and ``want`` as literals (one straight loop each)."""
    if want:
        if op == _ADD:
            _wide_loop(0, a, b, c, t, emin, maxval, big, negzero, True, tiny_after, out, fl)
        elif op == _MUL:
            _wide_loop(1, a, b, c, t, emin, maxval, big, negzero, True, tiny_after, out, fl)
        elif op == _SUB:
            _wide_loop(2, a, b, c, t, emin, maxval, big, negzero, True, tiny_after, out, fl)
        elif op == _DIV:
            _wide_loop(3, a, b, c, t, emin, maxval, big, negzero, True, tiny_after, out, fl)
        else:
            _wide_loop(4, a, b, c, t, emin, maxval, big, negzero, True, tiny_after, out, fl)
    elif op == _ADD:
        _wide_loop(0, a, b, c, t, emin, maxval, big, negzero, False, tiny_after, out, fl)
    elif op == _MUL:
        _wide_loop(1, a, b, c, t, emin, maxval, big, negzero, False, tiny_after, out, fl)
    elif op == _SUB:
        _wide_loop(2, a, b, c, t, emin, maxval, big, negzero, False, tiny_after, out, fl)
    elif op == _DIV:
        _wide_loop(3, a, b, c, t, emin, maxval, big, negzero, False, tiny_after, out, fl)
    else:
        _wide_loop(4, a, b, c, t, emin, maxval, big, negzero, False, tiny_after, out, fl)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _wide_into(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, t: int,
               emin: int, maxval: float, big: float, negzero: bool, want: bool,
               tiny_after: bool, out: np.ndarray, fl: np.ndarray, sa: np.ndarray,
               sb: np.ndarray, sc: np.ndarray) -> None:
    """:func:`_wide_chunk` into the float64 ``out``; codes are first decoded into the
    span's float32 scratch ``sa``, ``sb``, ``sc`` by a loop of 8-wide lanes
    (:func:`numerics.kernels.unpack.values32`)."""
    D = constants(d)
    cc = c if op == _FMA else c[:1]  # (only fma reads c)
    _wide_chunk(op, values32(a, D, sa), values32(b, D, sb), values32(cc, D, sc), t, emin,
                maxval, big, negzero, want, tiny_after, out, fl)


def apply_wide(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
               P: np.ndarray, overflow: int, want: bool, tiny_after: bool, out: np.ndarray,
               fl: np.ndarray) -> None:
    """``out[i] = op(a[i], b[i][, c[i]])`` (``op`` from :data:`OPS`) rounded to nearest-even
    into the format ``P`` that :func:`fits` accepts, with the flag bits in ``fl`` when
    ``want``.  Operands: one dtype (float64, float32, or uint16 codes decoded by the
    :func:`numerics.kernels.unpack.plan` array ``d``), each of the result's length or of
    length 1; ``out`` float32 or float64.  (uint16 codes decode by the plan, int16 codes by the
    shift of :func:`numerics.kernels.unpack.decode_top`.)  Chunks run on the threads."""
    chunks = (out.size + _CHUNK - 1) // _CHUNK
    spread(lambda lo, hi: apply_wide_span(
        op, a, b, c, d, P, overflow, want, tiny_after, out, fl, lo, hi),
        chunks, unit=_CHUNK, minimum=_MIN_STEPS)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def apply_wide_span(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
                    P: np.ndarray, overflow: int, want: bool, tiny_after: bool, out: np.ndarray,
                    fl: np.ndarray, first: int, last: int) -> None:
    """:func:`apply_wide` for the chunks ``first .. last - 1`` of :data:`_CHUNK` elements on
    this thread."""
    n = out.size
    m = min(n, _CHUNK)
    # a broadcast operand: one chunk's worth, read by every chunk
    a, b, c = widen(a, n, m), widen(b, n, m), widen(c, n, m)
    t, emin = P[rnd.T], P[rnd.EMIN]
    maxval = rnd.decode_one(np.uint64(P[rnd.MAXMAG]), P)
    big = overflow_value(P, overflow, maxval)
    negzero = P[rnd.NEGZERO] != 0
    # scratch for decoded codes, once per span (an allocation per chunk costs more than
    # the chunk's arithmetic)
    sa, sb, sc = scratch32(a, m), scratch32(b, m), scratch32(c, m)
    so = np.empty(m if out.itemsize == 4 else 0)  # float32 results: _target
    for ch in range(first, last):
        start = ch * _CHUNK
        stop = min(start + _CHUNK, n)
        aa, bb, cc = (piece(a, n, start, stop), piece(b, n, start, stop),
                      piece(c, n, start, stop))
        o = out[start:stop]
        staged = _target(o, so)
        _wide_into(op, aa, bb, cc, d, t, emin, maxval, big, negzero, want, tiny_after,
                   staged, fl[start:stop] if want else fl, sa, sb, sc)
        unstage(o, staged)


def _target(out, buf):  # type: ignore[no-untyped-def,unused-ignore]
    """Where :func:`apply_wide_span` writes a chunk's results: ``out`` itself when
    float64, else the float64 scratch ``buf``, narrowed into ``out`` after (exact: the
    format's values are float32 values, and the one quiet NaN stays itself).  So the
    loops compile for float64 results only: storing float32 directly compiled every
    loop a second time, about 12 CPU-s of a cold test run, for a pass over a chunk in
    cache."""


@overload(_target, jit_options=_JIT, inline="always")
def _target_impl(out, buf):  # type: ignore[no-untyped-def,unused-ignore]
    if out.dtype == types.float64:
        return lambda out, buf: out
    return lambda out, buf: buf[:out.size]


# ----------------------------------------------------------------------------- binary64
_TINY = 2.0**-960  # below: a product's or quotient's error may not be representable
_SMALL = 2.0**-899  # a dividend below this: ``h * y - x`` could round to zero
_HUGE = 2.0**1022  # a sum beyond this: left to the general loop (claim D10)


def apply_native(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, big: float,
                 want: bool, out: np.ndarray, fl: np.ndarray) -> None:
    """``out[i] = op(a[i], b[i][, c[i]])`` (``op`` from :data:`OPS`) in binary64, rounded
    to nearest-even by the hardware (fma by ``llvm.fma.f64``): a result beyond
    binary64's max (an infinity) becomes ``big`` with its sign (``inf``, or max under
    ``overflow="saturate"``, as ``encode`` does) and a NaN the one quiet NaN.  With
    ``want`` (``+ - * /`` only), ``fl[i]`` gets the flag bits from error-free
    transformations (claim D10 of ``proofs/double_rounding.md``), or :data:`GENERAL`
    for an element the caller recomputes with the general loop (results below
    ``2**-960``, where an error term may not be representable, and sums beyond
    ``2**1022``).  Operands: float64 or float32 numbers, one dtype, each of ``out``'s
    length or of length 1 (``c`` read by fma only).  Chunks run on the threads."""
    chunks = (out.size + _CHUNK - 1) // _CHUNK
    spread(lambda lo, hi: apply_native_span(op, a, b, c, big, want, out, fl, lo, hi),
           chunks, unit=_CHUNK, minimum=PARALLEL_MIN)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def apply_native_span(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, big: float,
                      want: bool, out: np.ndarray, fl: np.ndarray, first: int,
                      last: int) -> None:
    """:func:`apply_native` for the chunks ``first .. last - 1`` of :data:`_CHUNK`
    elements on this thread."""
    n = out.size
    m = min(n, _CHUNK)
    # a broadcast operand: one chunk's worth, read by every chunk
    a, b, c = widen(a, n, m), widen(b, n, m), widen(c, n, m)
    k = m if a.itemsize == 4 else 0  # float32 operands: float64 scratch (_float64)
    sa, sb, sc = np.empty(k), np.empty(k), np.empty(k if op == _FMA else 1)
    for ch in range(first, last):
        start = ch * _CHUNK
        stop = min(start + _CHUNK, n)
        aa, bb = piece(a, n, start, stop), piece(b, n, start, stop)
        cc = piece(c, n, start, stop) if op == _FMA else c[:1]  # (only fma reads c)
        _native_chunk(op, _float64(aa, sa), _float64(bb, sb), _float64(cc, sc), big, want,
                      out[start:stop], fl[start:stop] if want else fl)


def _float64(x, buf):  # type: ignore[no-untyped-def,unused-ignore]
    """An operand chunk of :func:`apply_native_span` as float64: itself, or float32
    widened into the scratch ``buf``, so that the loops compile for float64 operands
    only (float32 copies of them took about 5 CPU-s of a cold test run).  A NaN keeps
    its sign and payload, moved into place, and so stays signalling when it was (the
    hardware's conversion would quiet it, and the loops read that bit for the
    invalid flag); every other float32 widens exactly."""


@overload(_float64, jit_options=_JIT)
def _float64_impl(x, buf):  # type: ignore[no-untyped-def,unused-ignore]
    if x.dtype == types.float64:
        return lambda x, buf: x

    def widened(x, buf):  # type: ignore[no-untyped-def,unused-ignore]
        out = buf[:x.size]
        for i in range(x.size):
            b = bits_of_f32(x[i])
            nan = (_U64(b & np.uint32(0x80000000)) << _U64(32)) | _INF_BITS \
                | (_U64(b & np.uint32(0x7FFFFF)) << _U64(29))
            out[i] = bits_f64(nan) if (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000) \
                else np.float64(x[i])
        return out
    return widened


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _native_chunk(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, big: float,
                  want: bool, out: np.ndarray, fl: np.ndarray) -> None:
    """:func:`_native_loop` with ``op`` and ``want`` as literals (one straight loop
    each)."""
    if want:
        if op == _ADD:
            _native_loop(0, a, b, c, big, True, out, fl)
        elif op == _MUL:
            _native_loop(1, a, b, c, big, True, out, fl)
        elif op == _SUB:
            _native_loop(2, a, b, c, big, True, out, fl)
        else:
            _native_loop(3, a, b, c, big, True, out, fl)
    elif op == _ADD:
        _native_loop(0, a, b, c, big, False, out, fl)
    elif op == _MUL:
        _native_loop(1, a, b, c, big, False, out, fl)
    elif op == _SUB:
        _native_loop(2, a, b, c, big, False, out, fl)
    elif op == _DIV:
        _native_loop(3, a, b, c, big, False, out, fl)
    else:
        _native_loop(4, a, b, c, big, False, out, fl)


@specialised(error_model="numpy")
def _native_loop(op: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, big: float,
                 want: bool, out: np.ndarray, fl: np.ndarray) -> None:
    """The hardware's binary64 operation for literal ``op``; the overflow rule and the
    NaN on the result's bits (a branch would keep the loop scalar); with ``want`` the
    flags of claim D10."""
    max_bits = f64_bits(_MAX)
    big_bits = f64_bits(abs(big))
    for i in range(out.size):
        x, xs = _load(a, i)
        y, ys = _load(b, i)
        if op == _ADD:
            h = x + y
        elif op == _SUB:
            h = x - y
        elif op == _MUL:
            h = x * y
        elif op == _DIV:
            h = x / y
        else:
            h = fma(x, y, np.float64(c[i]))
        if want:
            finite = (abs(x) <= _MAX) & (abs(y) <= _MAX)
            invalid = xs | ys | ((h != h) & (x == x) & (y == y))
            divide = False
            ah = abs(h)
            if op == _MUL:
                exact = fma(x, y, -h) == 0.0
                general = finite & (ah < _TINY) & (x != 0) & (y != 0)
            elif op == _DIV:
                divide = finite & (y == 0) & (x != 0)
                finite = finite & (y != 0)
                exact = fma(h, y, -x) == 0.0
                general = finite & (x != 0) & ((abs(x) < _SMALL) | (ah < _TINY))
            else:  # TwoSum: the exact error of the sum
                q = -y if op == _SUB else y
                bb = h - x
                exact = (x - (h - bb)) + (q - bb) == 0.0
                general = finite & (ah > _HUGE)
            over = finite & (ah > _MAX)
            inexact = finite & (over | ~exact)
            fl[i] = np.uint8(np.uint8(inexact) | (np.uint8(over) << 2)
                             | (np.uint8(invalid) << 3) | (np.uint8(divide) << 4)
                             | (np.uint8(general) << 7))
        hb = f64_bits(h)
        m = hb & ~_SIGN
        res = big_bits if m > max_bits else m
        out[i] = _NAN if m > _INF_BITS else bits_f64(res | (hb & _SIGN))
