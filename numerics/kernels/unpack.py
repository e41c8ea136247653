"""Codes of a narrow format as float32 values in 32-bit lanes, by arithmetic.

A table lookup per element (an AVX2 gather) is the slow part of a loop over 8-bit
codes.  For a format whose values are float32 values and whose codes are laid out
as IEEE 754 interchange formats are (sign, biased exponent, trailing significand;
exponent field 0 for zero and subnormals) the value follows from the code's bits:

1. Shift the magnitude bits left by ``23 - t``: the exponent field lands in
   float32's and the trailing bits at the top of its significand, so read as a
   float32 the pattern is the code's value times ``2**(bias - 127)``, subnormal
   codes included (they become float32 subnormals, ``m 2**(-126 - t)``).  Multiply
   by ``2**(127 - bias)``: exact, since the product is the code's value, a float32
   number, and the sign, in bit 31, passes through it.  (The code shifted left to
   put its sign bit in bit 31, shifted back arithmetically and masked places sign
   and magnitude at once; with the multiplication, four lane operations.)

   A format whose exponent field fits binary16's (at most 4 bits, or 5 with IEEE
   specials, which are binary16's) and with at most 10 trailing bits goes through
   binary16 instead: the magnitude shifted left by ``10 - t`` and the sign in bit 15
   form a binary16 pattern worth the code's value times ``2**(bias - 15)``, which
   the processor's conversion (F16C ``vcvtph2ps``) turns into a float32, binary16
   subnormals into normal float32 numbers; the multiplication by ``2**(15 - bias)``
   is again exact.  Two lane operations more, but no float32 subnormal ever reaches
   the multiplication, for which Intel cores take a microcode assist (AMD's Zen cores
   do not).  On this project's 2-core Intel Xeon benchmark machine, a loop decoding
   random e4m3fn codes (one in sixteen subnormal) took 1.5 ns per code in float32
   and 0.16 ns through binary16; codes with no subnormal took 0.095 ns in float32.
2. IEEE specials: a magnitude at or above the all-ones exponent field is an
   infinity or a NaN with its trailing bits (so the quiet bit of a NaN is float32's);
   in a format whose largest magnitudes are NaNs (``e4m3fn``), from the first of them.
   (Through binary16, the pattern shifted left by 13 more puts the trailing bits
   there: the processor's conversion would set the quiet bit of a signalling NaN.)
3. Up to :data:`EXCEPTIONS` single codes with their own value (P3109's NaN and
   infinities, the ``fnuz`` NaN at the negative-zero code).  A format with none skips
   the step (the test is the same for every code, so a loop is split on it).

:func:`plan` builds the constants and checks the recipe against the format's decode
table on every code; a format it does not fit (no subnormals, more special codes
than fit) gets ``None`` and keeps the table.  A 16-bit format whose codes are the top
halves of the float32 patterns of their values (bfloat16, :func:`top_half`) needs
only the shift (:func:`decode_top`); the lane loops take its codes as ``int16`` to
tell the two apart by type.

Examples
--------
>>> import numpy as np
>>> from numerics.kernels.ops import decode_all
>>> from numerics.kernels.rounding import format_params
>>> P = format_params("e4m3fn")
>>> D = plan(P, decode_all(P))
>>> [float(v) for v in decode_codes(np.array([0x38, 0x01, 0xFE, 0x7F], np.uint16), D)]
[1.0, 0.001953125, -448.0, nan]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import HAS_F16C, bits_of_f32, f32_of_bits, f32_of_f16_bits, sar32, shl32
from numerics.kernels.rounding import BIAS, BITS, MAGMASK, NAN_IEEE, NANKIND, SIGNED, T, W

__all__ = ["EXCEPTIONS", "PLAN_SIZE", "codes16", "constants", "decode32", "decode_codes",
           "decode_top", "load32", "plan", "quiet32", "scratch16", "scratch32", "top_half",
           "values32"]

#: Codes with a value of their own that the recipe can carry.
EXCEPTIONS = 4
_NONE = 0xFFFFFFFF  # an exception slot that no 16-bit code matches
_HALF = 6  # the plan entry that says step 1 goes through binary16
_EXC = 7  # where the exception codes start in a plan array
#: Entries of a :func:`plan` array.
PLAN_SIZE = _EXC + 2 * EXCEPTIONS
_U32 = np.uint32
_JIT: Any = {"cache": True, "nogil": True}


def _recipe(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Steps 1 to 3 on uint32 ``codes`` in numpy: float32 values (the reference for the
    compiled :func:`decode32`)."""
    s, sign_mask, sign_shift, mag_mask, top, scale = (int(v) for v in d[:6])
    half = bool(d[_HALF])
    sign = ((codes & sign_mask) << sign_shift).astype(np.uint32)
    mag = codes & mag_mask
    with np.errstate(invalid="ignore", over="ignore"):
        if half:  # (plan takes it only where no code reads as a binary16 NaN or inf)
            x = (mag << s).astype(np.uint16).view(np.float16).astype(np.float32)
        else:
            x = (mag << s).astype(np.uint32).view(np.float32)
        v = (x * np.uint32(scale).view(np.float32)).view(np.uint32)
    # a NaN or an infinity: the trailing bits at the top of float32's
    nan = (mag << (s + 13 if half else s)).astype(np.uint32) | 0x7F800000
    v = np.where(mag >= top, nan, v) | sign
    for k in range(EXCEPTIONS):
        v = np.where(codes == d[_EXC + k], d[_EXC + EXCEPTIONS + k], v)
    return v.astype(np.uint32).view(np.float32)


def plan(P: np.ndarray, table: np.ndarray, binary16: bool = True,
         quiet: bool = False) -> np.ndarray | None:
    """The constants of :func:`decode32` for the format ``P``
    (:func:`numerics.kernels.rounding.format_params`) whose float64 decode table is
    ``table`` (signalling NaN codes as signalling NaNs), or None where the recipe does
    not reproduce every code: each value exactly, the sign of each zero, and each NaN
    as a NaN that is signalling exactly when the table's is.  ``binary16=False`` keeps
    step 1 in float32 where it could go through binary16.

    ``quiet=True`` plans for :func:`decode32` followed by :func:`quiet32` (the public
    decode's values): ``table`` is then the float32 decode table, and the recipe must
    give its bits exactly, NaN signs and payloads included."""
    t, w, bias, bits = int(P[T]), int(P[W]), int(P[BIAS]), int(P[BITS])
    if not (0 <= t <= 23 and bits <= 16 and -126 <= 127 - bias <= 127):
        return None
    signed = int(P[SIGNED]) == 1
    # step 1 through binary16 where the processor converts it and no code reads as a
    # binary16 infinity or NaN but those that step 2 replaces
    half = binary16 and HAS_F16C and t <= 10 and \
        (w <= 4 or (w == 5 and int(P[NANKIND]) == NAN_IEEE))
    s, scale = (10 - t, np.float32(2.0 ** (15 - bias))) if half else \
        (23 - t, np.float32(2.0 ** (127 - bias)))
    d = np.array([s, (1 << (bits - 1)) if signed else 0, 32 - bits,
                  int(P[MAGMASK]), 0, int(scale.view(np.uint32)), int(half)]
                 + [_NONE] * (2 * EXCEPTIONS), np.uint32)
    codes = np.arange(table.size, dtype=np.uint32)
    mags = codes & np.uint32(P[MAGMASK])
    if int(P[NANKIND]) == NAN_IEEE:
        tops = [((1 << w) - 1) << t]
    else:  # no specials, or NaNs at the largest magnitudes (e4m3fn's): step 3 from there
        tops = [1 << 16, int(mags[~np.isnan(table)].max(initial=0)) + 1]
    with np.errstate(invalid="ignore", over="ignore"):
        want = table.astype(np.float32)  # (NaNs lose their signalling bit here)
    want_nan = np.isnan(table)
    want_quiet = None if quiet else \
        (table.view(np.uint64) >> np.uint64(51)) & np.uint64(1) == 1

    def wrong(v: np.ndarray) -> np.ndarray:
        if quiet:
            return _quieted(v).view(np.uint32) != want.view(np.uint32)
        quiet_bit = (v.view(np.uint32) >> np.uint32(22)) & np.uint32(1) == 1
        same_nan = want_nan & np.isnan(v) & (quiet_bit == want_quiet)
        with np.errstate(invalid="ignore"):
            same_num = ~want_nan & (v.astype(np.float64) == table) \
                & (np.signbit(v) == np.signbit(want))
        return ~(same_nan | same_num)

    misses = []
    for top in tops:
        d[4] = top
        misses.append(np.flatnonzero(wrong(_recipe(codes, d))))
    k = int(np.argmin([m.size for m in misses]))  # the recipe with the fewest exceptions
    d[4], bad = tops[k], misses[k]
    if bad.size > EXCEPTIONS:
        return None
    for k, code in enumerate(bad):
        d[_EXC + k] = code
        d[_EXC + EXCEPTIONS + k] = 0x7FC00000 if want_nan[code] and not quiet else \
            want[code].view(np.uint32)
    return None if wrong(_recipe(codes, d)).any() else d


def _quieted(v: np.ndarray) -> np.ndarray:
    """:func:`quiet32` of float32 ``v`` in numpy (the reference for the compiled one)."""
    bits = v.view(np.uint32)
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, bits | np.uint32(1 << 22), bits).astype(np.uint32).view(np.float32)


def _same(v: np.ndarray, table: np.ndarray) -> bool:
    """Whether the float32 ``v`` are the values of ``table`` code for code: each value,
    the sign of each zero, each NaN signalling exactly when the table's is."""
    want_nan = np.isnan(table)
    quiet = (v.view(np.uint32) >> np.uint32(22)) & np.uint32(1) == 1
    want_quiet = (table.view(np.uint64) >> np.uint64(51)) & np.uint64(1) == 1
    nan_ok = np.isnan(v) == want_nan
    with np.errstate(invalid="ignore"):
        num_ok = (v.astype(np.float64) == table) & (np.signbit(v) == np.signbit(table))
    return bool(np.all(nan_ok & np.where(want_nan, quiet == want_quiet, num_ok)))


def top_half(P: np.ndarray, table: np.ndarray) -> bool:
    """Whether every code of a 16-bit format (``P`` and its float64 decode ``table``, as
    for :func:`plan`) is the top half of its value's float32 pattern.

    Examples
    --------
    >>> from numerics.kernels.ops import decode_all
    >>> from numerics.kernels.rounding import format_params
    >>> [top_half(format_params(f), decode_all(format_params(f)))
    ...  for f in ("bfloat16", "binary16")]
    [True, False]
    """
    if int(P[BITS]) != 16:
        return False
    codes = np.arange(1 << 16, dtype=np.uint32)
    return _same((codes << np.uint32(16)).view(np.float32), table)


@numba.njit(cache=True, nogil=True)
def decode_top(code: Any) -> Any:
    """The float32 whose bits are the 16-bit ``code`` followed by 16 zeros (any integer
    type: the shift drops a sign extension)."""
    return f32_of_bits(shl32(code, _U32(16)))


@numba.njit(cache=True, nogil=True)
def constants(d: np.ndarray) -> tuple[Any, ...]:
    """The constants of :func:`decode32` from a :func:`plan` array, as 32-bit loop
    invariants (so that a loop keeps them in registers): the two shifts and the mask
    that place sign and magnitude (the sign in bit 15 for the binary16 route, else in
    bit 31), the NaN threshold on the placed magnitude, the scale, whether step 1 goes
    through binary16, the mask of the placed magnitude, and the exception codes and
    values."""
    s = np.int64(d[0])
    left = np.int64(d[2]) - (1 if d[1] == 0 else 0)  # the code's top bit to bit 31 (signed)
    sign_at = 15 if d[_HALF] else 31
    keep = np.int64(d[1] != 0) << sign_at | np.int64(d[3]) << s
    top = min(np.int64(d[4]) << s, np.int64(0xFFFFFFFF))
    e, v = _EXC, _EXC + EXCEPTIONS
    return (_U32(left), _U32(left - s), _U32(keep), _U32(top), f32_of_bits(_U32(d[5])),
            _U32(d[_HALF]), _U32((1 << sign_at) - 1),
            (_U32(d[e]), _U32(d[e + 1]), _U32(d[e + 2]), _U32(d[e + 3])),
            (_U32(d[v]), _U32(d[v + 1]), _U32(d[v + 2]), _U32(d[v + 3])))


@numba.njit(cache=True, nogil=True)
def _pick(cond: bool, yes: Any, no: Any) -> Any:
    """``yes if cond else no`` on uint32 bits, by masks (no branch, no phi node)."""
    mask = _U32(_U32(0) - _U32(cond))
    return _U32((yes & mask) | (no & ~mask))


@numba.njit(cache=True, nogil=True)
def decode32(code: Any, D: tuple[Any, ...]) -> Any:
    """The float32 value of one code (steps 1 to 3; ``D`` from :func:`constants`).
    Branch-free but for the route of step 1 and the test of step 3, which are the same
    for every code, so a loop over codes is split on them and vectorizes.  (Left to
    LLVM to inline: numba's own inlining of the branch into the lane loops trips its
    IR checks.)"""
    left, right, keep, top, scale, half, magnitude, exc, val = D
    c = _U32(code)
    # the sign to bit 31 (bit 15) and the magnitude bits to float32's (binary16's)
    # places in two shifts (the arithmetic one copies the sign into the bits the mask
    # then clears)
    placed = sar32(shl32(c, left), right)
    shifted = _U32(placed & keep)
    # the product keeps the sign; setting all of float32's exponent bits keeps the
    # trailing bits at the top of its significand (a NaN's payload, an infinity's 0)
    if half:
        v = bits_of_f32(f32_of_f16_bits(shifted) * scale)
        special = _U32(shl32(placed, _U32(13)) | _U32(0x7F800000))
    else:
        v = bits_of_f32(f32_of_bits(shifted) * scale)
        special = _U32(shifted | _U32(0x7F800000))
    v = _pick(_U32(shifted & magnitude) >= top, special, v)
    # (the test is the same for every code: a loop is split on it)
    return f32_of_bits(_exceptions(c, v, exc, val) if exc[0] != _U32(_NONE) else v)


@numba.njit(cache=True, nogil=True)
def quiet32(v: Any) -> Any:
    """float32 ``v`` with a NaN's quiet bit set (sign and payload kept), as the public
    decode gives NaNs; any other value unchanged."""
    b = bits_of_f32(v)
    return f32_of_bits(_pick(_U32(b & _U32(0x7FFFFFFF)) > _U32(0x7F800000),
                             _U32(b | _U32(0x400000)), b))


@numba.njit(cache=True, nogil=True)
def _exceptions(c: Any, v: Any, exc: tuple[Any, ...], val: tuple[Any, ...]) -> Any:
    """Step 3: the bits ``v`` of code ``c``, or its exception's value."""
    v = _pick(c == exc[0], val[0], v)
    v = _pick(c == exc[1], val[1], v)
    v = _pick(c == exc[2], val[2], v)
    return _pick(c == exc[3], val[3], v)


@numba.njit(cache=True, nogil=True)
def decode_codes(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """float32 values of ``codes`` by :func:`decode32` (a loop for tests and examples)."""
    D = constants(d)
    out = np.empty(codes.size, np.float32)
    for i in range(codes.size):
        out[i] = decode32(codes[i], D)
    return out


def load32(arr: np.ndarray, i: int, D: tuple[Any, ...]) -> Any:
    """Element ``i`` of an operand as float32: a float32 number as it is, a code by
    arithmetic (uint16, or uint8, by :func:`decode32` with the constants ``D``, int16 by
    :func:`decode_top`), NaN bits kept.  Inlined into a lane loop, the decode costs a
    few lane operations and no pass over memory."""


@overload(load32, jit_options=_JIT, inline="always")
def _load32_impl(arr, i, D):  # type: ignore[no-untyped-def,unused-ignore]
    if isinstance(arr.dtype, types.Float):
        return lambda arr, i, D: arr[i]
    if arr.dtype == types.int16:  # codes that are float32 top halves (bfloat16)
        return lambda arr, i, D: decode_top(arr[i])
    return lambda arr, i, D: decode32(arr[i], D)


def values32(arr: np.ndarray, D: tuple[Any, ...], buf: np.ndarray) -> Any:
    """A float operand as it is; codes decoded into the float32 scratch ``buf`` (at
    least ``arr.size`` long, allocated once per span by the caller: an allocation per
    chunk costs more than the chunk's arithmetic), returned as ``buf[:arr.size]``;
    uint16 by :func:`decode32` with the constants ``D``, int16 by
    :func:`decode_top`.  NaN bits are kept so that signalling NaNs stay signalling.
    One straight loop of 8 lanes, so the arithmetic loops that follow read float32
    and compile once for every format."""


@overload(values32, jit_options=_JIT)
def _values32_impl(arr, D, buf):  # type: ignore[no-untyped-def,unused-ignore]
    if isinstance(arr.dtype, types.Float):
        return lambda arr, D, buf: arr
    if arr.dtype == types.int16:  # codes that are float32 top halves (bfloat16)
        def top(arr, D, buf):  # type: ignore[no-untyped-def,unused-ignore]
            v = buf[:arr.size]
            _top_into(arr, v)
            return v
        return top

    def general(arr, D, buf):  # type: ignore[no-untyped-def,unused-ignore]
        v = buf[:arr.size]
        _decode_into(arr, D, v)
        return v
    return general


def scratch16(arr: np.ndarray, m: int) -> Any:
    """Scratch for :func:`codes16`: ``m`` uint16 for uint8 codes, none for other operands."""


@overload(scratch16, jit_options=_JIT)
def _scratch16_impl(arr, m):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype == types.uint8:
        return lambda arr, m: np.empty(m, np.uint16)
    return lambda arr, m: np.empty(0, np.uint16)


def codes16(arr: np.ndarray, buf: np.ndarray) -> Any:
    """uint8 codes widened into the uint16 scratch ``buf`` (returned as
    ``buf[:arr.size]``); any other operand as it is.  A chunk at a time, in cache:
    the lane loops then compile for uint16 codes only."""


@overload(codes16, jit_options=_JIT)
def _codes16_impl(arr, buf):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype != types.uint8:
        return lambda arr, buf: arr

    def widen(arr, buf):  # type: ignore[no-untyped-def,unused-ignore]
        v = buf[:arr.size]
        for i in range(arr.size):
            v[i] = arr[i]
        return v
    return widen


def scratch32(arr: np.ndarray, m: int) -> Any:
    """The scratch buffer :func:`values32` needs for chunks of ``m`` elements of ``arr``:
    ``m`` float32 for codes, none (an empty array) for float operands."""


@overload(scratch32, jit_options=_JIT)
def _scratch32_impl(arr, m):  # type: ignore[no-untyped-def,unused-ignore]
    if isinstance(arr.dtype, types.Float):
        return lambda arr, m: np.empty(0, np.float32)
    return lambda arr, m: np.empty(m, np.float32)


@numba.njit(cache=True, nogil=True)
def _decode_into(codes: np.ndarray, D: Any, v: np.ndarray) -> None:
    """``v[i]`` = :func:`decode32` of ``codes[i]``."""
    for i in range(codes.size):
        v[i] = decode32(codes[i], D)


@numba.njit(cache=True, nogil=True)
def _top_into(codes: np.ndarray, v: np.ndarray) -> None:
    """``v[i]`` = :func:`decode_top` of ``codes[i]``."""
    for i in range(codes.size):
        v[i] = decode_top(codes[i])
