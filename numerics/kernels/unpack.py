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
   and magnitude at once; with the multiplication, four lane operations.  A
   subnormal operand costs nothing extra on the AMD Zen 4 this project benchmarks
   on, and on CPUs that take a microcode assist for one, only subnormal codes pay.)
2. IEEE specials: a magnitude at or above the all-ones exponent field is an
   infinity or a NaN with its trailing bits (so the quiet bit of a NaN is float32's);
   in a format whose largest magnitudes are NaNs (``e4m3fn``), from the first of them.
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
from numba.core import types
from numba.extending import overload

from numerics.kernels.lanes import bits_of_f32, f32_of_bits, sar32, shl32
from numerics.kernels.rounding import BIAS, BITS, MAGMASK, NAN_IEEE, NANKIND, SIGNED, T, W

__all__ = ["EXCEPTIONS", "PLAN_SIZE", "codes16", "constants", "decode32", "decode_codes",
           "decode_top", "load32", "plan", "scratch16", "scratch32", "top_half", "values32"]

#: Codes with a value of their own that the recipe can carry.
EXCEPTIONS = 4
_NONE = 0xFFFFFFFF  # an exception slot that no 16-bit code matches
_EXC = 6  # where the exception codes start in a plan array
#: Entries of a :func:`plan` array.
PLAN_SIZE = _EXC + 2 * EXCEPTIONS
_U32 = np.uint32
_JIT: Any = {"cache": True, "nogil": True}


def _recipe(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Steps 1 to 3 on uint32 ``codes`` in numpy: float32 values (the reference for the
    compiled :func:`decode32`)."""
    s, sign_mask, sign_shift, mag_mask, top, scale = (int(v) for v in d[:6])
    sign = ((codes & sign_mask) << sign_shift).astype(np.uint32)
    mag = codes & mag_mask
    shifted = (mag << s).astype(np.uint32)
    with np.errstate(invalid="ignore", over="ignore"):
        v = (shifted.view(np.float32) * np.uint32(scale).view(np.float32)).view(np.uint32)
    v = np.where(mag >= top, shifted | 0x7F800000, v) | sign
    for k in range(EXCEPTIONS):
        v = np.where(codes == d[_EXC + k], d[_EXC + EXCEPTIONS + k], v)
    return v.astype(np.uint32).view(np.float32)


def plan(P: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """The constants of :func:`decode32` for the format ``P``
    (:func:`numerics.kernels.rounding.format_params`) whose float64 decode table is
    ``table`` (signalling NaN codes as signalling NaNs), or None where the recipe does
    not reproduce every code: each value exactly, the sign of each zero, and each NaN
    as a NaN that is signalling exactly when the table's is."""
    t, w, bias, bits = int(P[T]), int(P[W]), int(P[BIAS]), int(P[BITS])
    if not (0 <= t <= 23 and bits <= 16 and -126 <= 127 - bias <= 127):
        return None
    signed = int(P[SIGNED]) == 1
    scale = np.float32(2.0 ** (127 - bias))
    d = np.array([23 - t, (1 << (bits - 1)) if signed else 0, 32 - bits,
                  int(P[MAGMASK]), 0, int(scale.view(np.uint32))]
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
    want_quiet = (table.view(np.uint64) >> np.uint64(51)) & np.uint64(1) == 1

    def wrong(v: np.ndarray) -> np.ndarray:
        quiet = (v.view(np.uint32) >> np.uint32(22)) & np.uint32(1) == 1
        same_nan = want_nan & np.isnan(v) & (quiet == want_quiet)
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
        d[_EXC + EXCEPTIONS + k] = 0x7FC00000 if want_nan[code] else want[code].view(np.uint32)
    return None if wrong(_recipe(codes, d)).any() else d


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


@numba.njit(cache=True, nogil=True, inline="always")
def decode_top(code: Any) -> Any:
    """The float32 whose bits are the 16-bit ``code`` followed by 16 zeros (any integer
    type: the shift drops a sign extension)."""
    return f32_of_bits(shl32(code, _U32(16)))


@numba.njit(cache=True, nogil=True, inline="always")
def constants(d: np.ndarray) -> tuple[Any, ...]:
    """The constants of :func:`decode32` from a :func:`plan` array, as 32-bit loop
    invariants (so that a loop keeps them in registers): the two shifts and the mask
    that place sign and magnitude, the NaN threshold on the placed magnitude, the
    scale, and the exception codes and values."""
    s = np.int64(d[0])
    left = np.int64(d[2]) - (1 if d[1] == 0 else 0)  # the code's top bit to bit 31 (signed)
    keep = np.int64(d[1] != 0) << 31 | np.int64(d[3]) << s
    top = min(np.int64(d[4]) << s, np.int64(0xFFFFFFFF))
    return (_U32(left), _U32(left - s), _U32(keep), _U32(top), f32_of_bits(_U32(d[5])),
            (_U32(d[6]), _U32(d[7]), _U32(d[8]), _U32(d[9])),
            (_U32(d[10]), _U32(d[11]), _U32(d[12]), _U32(d[13])))


@numba.njit(cache=True, nogil=True, inline="always")
def _pick(cond: bool, yes: Any, no: Any) -> Any:
    """``yes if cond else no`` on uint32 bits, by masks (no branch, no phi node)."""
    mask = _U32(_U32(0) - _U32(cond))
    return _U32((yes & mask) | (no & ~mask))


@numba.njit(cache=True, nogil=True)
def decode32(code: Any, D: tuple[Any, ...]) -> Any:
    """The float32 value of one code (steps 1 to 3; ``D`` from :func:`constants`).
    Branch-free but for the test of step 3, which is the same for every code, so a
    loop over codes vectorizes.  (Left to LLVM to inline: numba's own inlining of
    the branch into the lane loops trips its IR checks.)"""
    left, right, keep, top, scale, exc, val = D
    c = _U32(code)
    # the sign to bit 31 and the magnitude bits to float32's places in two shifts (the
    # arithmetic one copies the sign into the bits the mask then clears)
    shifted = _U32(sar32(shl32(c, left), right) & keep)
    v = bits_of_f32(f32_of_bits(shifted) * scale)  # (the sign passes the product)
    # (the exponent field of ``shifted`` lies within float32's: setting all of its bits
    # keeps the trailing bits)
    v = _pick(_U32(shifted & _U32(0x7FFFFFFF)) >= top, _U32(shifted | _U32(0x7F800000)), v)
    # (the test is the same for every code: a loop is split on it)
    return f32_of_bits(_exceptions(c, v, exc, val) if exc[0] != _U32(_NONE) else v)


@numba.njit(cache=True, nogil=True, inline="always")
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


def load32(arr, i, D):  # type: ignore[no-untyped-def,unused-ignore]
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


def values32(arr, D, buf):  # type: ignore[no-untyped-def,unused-ignore]
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


def scratch16(arr, m):  # type: ignore[no-untyped-def,unused-ignore]
    """Scratch for :func:`codes16`: ``m`` uint16 for uint8 codes, none for other operands."""


@overload(scratch16, jit_options=_JIT)
def _scratch16_impl(arr, m):  # type: ignore[no-untyped-def,unused-ignore]
    if arr.dtype == types.uint8:
        return lambda arr, m: np.empty(m, np.uint16)
    return lambda arr, m: np.empty(0, np.uint16)


def codes16(arr, buf):  # type: ignore[no-untyped-def,unused-ignore]
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


def scratch32(arr, m):  # type: ignore[no-untyped-def,unused-ignore]
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
