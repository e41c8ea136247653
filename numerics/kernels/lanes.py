"""Lane arithmetic: 32-bit integer shifts and float bit casts that vectorize.

numba types an operation on two ``uint32`` values as ``uint64`` (numpy's scalar
rules widened to the machine integer), so a loop written in ``uint32`` runs in
64-bit lanes: half as many per AVX2 register, and variable shifts that AVX2 lacks
for unsigned 64-bit compares.  Wrapping each result in ``np.uint32(...)`` lets
LLVM narrow additions, masks and compares back to 32 bits, but not shifts by a
variable amount (a 64-bit shift by 40 is defined, a 32-bit one is not).  The
intrinsics here emit the 32-bit instruction directly.

Preconditions
-------------
``shl32(x, s)``, ``shr32(x, s)`` and ``sar32(x, s)`` need ``0 <= s < 32`` (LLVM's ``shl``/``lshr``
are poison beyond the width); every caller clamps ``s`` first.

Examples
--------
>>> import numba
>>> import numpy as np
>>> @numba.njit
... def demo(x):
...     return (shr32(np.uint32(x), np.uint32(4)), sar32(np.uint32(x), np.uint32(4)),
...             bits_of_f32(f32_of_bits(np.uint32(x))))
>>> [hex(v) for v in demo(0xBF800000)]
['0xbf80000', '0xfbf80000', '0xbf800000']
"""

from __future__ import annotations

from typing import Any, Callable, cast

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["HAS_F16C", "bits_of_f32", "f16_bits_of_f32", "f32_of_bits", "f32_of_f16_bits",
           "fma", "prefetch", "sar32", "shl32", "shr32"]


def _host_has_f16c() -> bool:
    """Whether numba compiles for this host and the host converts binary16 in hardware
    (x86's F16C; elsewhere, or for a CPU named by NUMBA_CPU_NAME / NUMBA_CPU_FEATURES,
    ``fptrunc`` to ``half`` could become a runtime library call)."""
    from numba import config

    if getattr(config, "CPU_NAME", None) is not None \
            or getattr(config, "CPU_FEATURES", None) is not None:
        return False
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("f16c", False))
    except Exception:  # pragma: no cover - a host without the query
        return False


#: Whether the kernels may round float32 to binary16 with the processor's conversion
#: (:func:`f16_bits_of_f32`); a constant that compiled kernels read once.
HAS_F16C = _host_has_f16c()


def _u32(context: Any, builder: Any, value: Any, ty: types.Type) -> Any:
    """``value`` of numba type ``ty`` as an LLVM i32 (truncated or extended)."""
    return context.cast(builder, value, ty, types.uint32)


def _shift32(name: str, instruction: str, doc: str) -> Any:
    """A lane intrinsic ``name(x, s)``: LLVM's 32-bit ``instruction`` (``shl``, ``lshr``,
    ``ashr``) on ``x`` and ``s`` taken as uint32, returned as uint32."""

    def shift(typingctx: object, x: types.Type, s: types.Type) -> tuple[Any, Any]:
        sig = types.uint32(x, s)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            a = _u32(context, builder, args[0], signature.args[0])
            b = _u32(context, builder, args[1], signature.args[1])
            return getattr(builder, instruction)(a, b)

        return sig, codegen

    # (the module attribute's name: numba's cache finds the intrinsic by it)
    shift.__name__ = shift.__qualname__ = name
    shift.__doc__ = doc
    return intrinsic(shift)


_shl32 = _shift32("_shl32", "shl", "``(x << s) mod 2**32`` in a 32-bit lane, for "
                  "``0 <= s < 32``.")
_shr32 = _shift32("_shr32", "lshr", "``x >> s`` (logical) in a 32-bit lane, for "
                  "``0 <= s < 32``.")
_sar32 = _shift32("_sar32", "ashr", "``x >> s`` (arithmetic: bit 31 copied into the "
                  "vacated bits) in a 32-bit lane, for ``0 <= s < 32``, returned as the "
                  "uint32 of the same bits.")


@intrinsic
def _f32_of_bits(typingctx: object, x: types.Type) -> tuple[Any, Any]:
    """The float32 whose bits are the low 32 bits of ``x``."""
    sig = types.float32(x)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = _u32(context, builder, args[0], signature.args[0])
        return builder.bitcast(word, context.get_value_type(types.float32))

    return sig, codegen


@intrinsic
def _bits_of_f32(typingctx: object, x: types.Type) -> tuple[Any, Any] | None:
    """The bits of a float32 as a uint32."""
    if x != types.float32:
        return None
    sig = types.uint32(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(types.uint32))

    return sig, codegen


def _f32_of_f16_bits_by_steps(x: Any) -> Any:
    """:func:`f32_of_f16_bits` in integer steps, for hosts without F16C: the same
    float32 for every 16-bit pattern (NaNs quiet, payload kept)."""
    h = np.uint32(np.uint32(x) & np.uint32(0xFFFF))
    sign = np.uint32((h & np.uint32(0x8000)) << np.uint32(16))
    e = np.uint32((h >> np.uint32(10)) & np.uint32(0x1F))
    m = np.uint32(h & np.uint32(0x3FF))
    if e == 0:  # zero or subnormal: m * 2**-24, exact in float32
        return f32_of_bits(np.uint32(sign | bits_of_f32(np.float32(m) * np.float32(2.0**-24))))
    if e == 0x1F:  # infinity, or a NaN made quiet
        quiet = np.uint32(0x400000) if m != 0 else np.uint32(0)
        return f32_of_bits(np.uint32(sign | np.uint32(0x7F800000) | (m << np.uint32(13))
                                     | quiet))
    # rebias 15 -> 127 and widen the trailing bits
    return f32_of_bits(np.uint32(sign | ((e + np.uint32(112)) << np.uint32(23))
                                 | (m << np.uint32(13))))


def _f16_bits_of_f32_by_steps(v: Any) -> Any:
    """:func:`f16_bits_of_f32` in integer steps, for hosts without F16C: the same
    binary16 bits for every float32 (nearest-even, overflow to infinity, a NaN quiet
    with its sign and the top of its payload)."""
    b = bits_of_f32(v)
    sign = np.uint32((b >> np.uint32(16)) & np.uint32(0x8000))
    a = np.uint32(b & np.uint32(0x7FFFFFFF))
    if a > np.uint32(0x7F800000):  # NaN
        r = np.uint32(np.uint32(0x7E00) | ((a >> np.uint32(13)) & np.uint32(0x3FF)))
    elif a >= np.uint32(0x477FF000):  # from 65520 (max + half a step, which ties to
        r = np.uint32(0x7C00)          # the even infinity) up: infinity
    elif a >= np.uint32(0x38800000):  # normal: round off 13 bits, then rebias 127 -> 15
        odd = (a >> np.uint32(13)) & np.uint32(1)
        r = np.uint32((a + np.uint32(0xFFF) + odd - np.uint32(0x38000000)) >> np.uint32(13))
    else:  # below 2**-14: the addition rounds to a multiple of 2**-24 (0.5's spacing)
        r = np.uint32(bits_of_f32(f32_of_bits(a) + np.float32(0.5)) - np.uint32(0x3F000000))
    return np.uint16(sign | r)


@intrinsic
def _f32_of_f16_bits(typingctx: object, x: types.Type) -> tuple[Any, Any]:
    """The float32 value of the binary16 bits in the low 16 bits of ``x`` (exact; a NaN
    keeps its sign and payload, quiet bit set): F16C's ``vcvtph2ps`` where
    :data:`HAS_F16C`, else :func:`_f32_of_f16_bits_by_steps`."""
    sig = types.float32(x)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if not HAS_F16C:  # (LLVM would call a runtime function that numba cannot link)
            return context.compile_internal(builder, _f32_of_f16_bits_by_steps,
                                            signature, args)
        word = context.cast(builder, args[0], signature.args[0], types.uint16)
        half = builder.bitcast(word, ir.HalfType())
        return builder.fpext(half, context.get_value_type(types.float32))

    return sig, codegen


@intrinsic
def _f16_bits_of_f32(typingctx: object, x: types.Type) -> tuple[Any, Any] | None:
    """The binary16 bits of the float32 ``x`` rounded to nearest-even (LLVM's
    ``fptrunc``: F16C's ``vcvtps2ph`` under the default MXCSR, with binary16's
    subnormals and overflow to infinity; a NaN keeps its sign, the quiet bit set),
    where :data:`HAS_F16C`; else :func:`_f16_bits_of_f32_by_steps`, the same bits in
    integer steps."""
    if x != types.float32:
        return None
    sig = types.uint16(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if not HAS_F16C:
            return context.compile_internal(builder, _f16_bits_of_f32_by_steps,
                                            signature, args)
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return sig, codegen


@intrinsic
def _fma(typingctx: object, x: types.Type, y: types.Type, z: types.Type
         ) -> tuple[Any, Any] | None:
    """``x * y + z`` rounded once, for three float32 or three float64 operands (LLVM's
    ``llvm.fma``: the FMA instruction, which loops vectorize; a correctly rounded
    library call where the CPU has none)."""
    if not (x in (types.float32, types.float64) and y == x and z == x):
        return None
    sig = x(x, x, x)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ty = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic("llvm.fma", [ty],
                                              ir.FunctionType(ty, [ty, ty, ty]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _prefetch(typingctx: object, arr: types.Type, i: types.Type) -> tuple[Any, Any] | None:
    """Ask for the cache line of ``arr[i]`` (a contiguous array, ``i`` its flat index
    in C order) to be read soon: LLVM's ``llvm.prefetch`` (x86 ``prefetcht0``), a hint
    that never faults, so ``i`` needs no bounds check."""
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None
    sig = types.void(arr, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        address = builder.bitcast(builder.gep(ary.data, [index]), i8p)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p],
                                              ir.FunctionType(ir.VoidType(),
                                                              [i8p, i32, i32, i32]))
        # read, the highest locality, the data cache
        builder.call(fn, [address, ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


# The intrinsics as plain callables for type checkers (their Python signature carries
# numba's typing context); at run time these are the intrinsic objects themselves.
shl32 = cast(Callable[[Any, Any], Any], _shl32)
shr32 = cast(Callable[[Any, Any], Any], _shr32)
sar32 = cast(Callable[[Any, Any], Any], _sar32)
f32_of_bits = cast(Callable[[Any], Any], _f32_of_bits)
bits_of_f32 = cast(Callable[[Any], Any], _bits_of_f32)
f32_of_f16_bits = cast(Callable[[Any], Any], _f32_of_f16_bits)
f16_bits_of_f32 = cast(Callable[[Any], Any], _f16_bits_of_f32)
fma = cast(Callable[[Any, Any, Any], Any], _fma)
prefetch = cast(Callable[[Any, Any], None], _prefetch)
