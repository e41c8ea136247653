"""Streaming stores: a large output written past the caches, with its input read ahead.

An ordinary store to a line that is not in the cache first reads the line from
memory (a read for ownership), so a loop that reads 4 bytes and writes 2 per element
moves 8 bytes over the memory bus, not 6.  A non-temporal ("streaming") store goes
to memory in whole lines through write-combining buffers, without that read.  LLVM
emits one (``vmovntdq`` on x86, ``stnp`` on AArch64) only for a vector store aligned
to its size, which a vectorized loop over an array of unknown alignment never has,
so :func:`map_streamed` computes each block of 128 output bytes into a small scratch
array (in the L1 cache) and stores it with aligned 32-byte streaming stores; the
partial blocks at either end take ordinary stores.  Each block also asks for the
cache lines of the input 8 KiB ahead.

Measured on an AMD EPYC (Zen 2) core, one thread, 2**24 elements
(``python benchmarks/run.py --only codec``): binary16 and bfloat16 codes decode to
float32 in 3.4 / 3.5 ms, from 5.2 / 5.1 ms with ordinary stores (torch 6.1 / 5.6 ms);
float32 encodes to e5m2 in 6.9 ms, from 7.2 to 7.7.  In a bare loop rounding
float32 to bfloat16, blocks of 128 output bytes were the fastest of 64 bytes to
32 KiB: a long run of streaming stores fills the write-combining buffers and stalls
the loads behind it (2 KiB blocks took 6.2 ms against 4.0), and reading 8 KiB
ahead took the loop from 5.0 to 4.0 ms.

The output then sits in memory, not in the caches, which only pays when it would
not have stayed there: a driver hands a piece whose output holds at least
:data:`STREAM_MIN` bytes (:func:`wanted`) to the kernel's ``*_stream_span``, the
others to its ``*_span``.  The two pass a literal flag down to :func:`map_into`,
which compiles only the loop the flag picks.  Streaming stores are weakly ordered,
so :func:`map_streamed` ends with a fence before another thread may read what it
wrote.  The values written are the same either way.
"""

from __future__ import annotations

import platform
from typing import Any, Callable, cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel
import numerics.kernels.inlining  # noqa: F401 - LLVM inlines the helpers
from numerics.kernels.lanes import prefetch

__all__ = ["STREAM_MIN", "map_into", "map_plain", "map_streamed", "wanted"]

#: A piece whose output holds at least this many bytes (half the last-level cache of
#: the development machines) is written with streaming stores.
STREAM_MIN = 1 << 23
#: Whether numba compiles for x86 (the host: the kernels are not cross-compiled).
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "i386")
#: Output bytes per block: four 32-byte streaming stores.
_BLOCK = 128
#: How far ahead of the block, in input bytes, each block asks for the input's lines.
_AHEAD = 8192


@intrinsic
def _put32(typingctx: object, dst: types.Type, i: types.Type, src: types.Type,
           j: types.Type) -> tuple[Any, Any] | None:
    """Store the 32 bytes at ``&src[j]`` to ``&dst[i]`` with a streaming store (1-D
    contiguous arrays of one dtype; ``&dst[i]`` a multiple of 32, both ranges in
    bounds)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.void(dst, i, src, j)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        i_ = context.cast(builder, args[1], signature.args[1], types.intp)
        j_ = context.cast(builder, args[3], signature.args[3], types.intp)
        vector = ir.VectorType(ir.IntType(64), 4).as_pointer()
        to = builder.bitcast(builder.gep(d.data, [i_]), vector)
        word = builder.load(builder.bitcast(builder.gep(s.data, [j_]), vector), align=1)
        store = builder.store(word, to, align=32)
        store.set_metadata("nontemporal",
                           builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _fence(typingctx: object) -> tuple[Any, Any]:
    """A fence that orders the streaming stores before every later store: x86's
    ``sfence`` (LLVM lowers its own sequentially consistent fence to a locked
    instruction there, which the processor manuals do not promise orders streaming
    stores), elsewhere LLVM's sequentially consistent fence."""
    sig = types.void()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if _X86:
            fn = builder.module.declare_intrinsic("llvm.x86.sse.sfence", [],
                                                  ir.FunctionType(ir.VoidType(), []))
            builder.call(fn, [])
        else:  # pragma: no cover - not x86
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _width(typingctx: object, a: types.Type) -> tuple[Any, Any] | None:
    """The itemsize of the array ``a`` as a compile-time constant (the array's own
    ``itemsize`` is a field read at run time, which kept the block arithmetic below
    from folding: a division per block)."""
    if not isinstance(a, types.Array):
        return None
    sig = types.intp(a)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        width = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        return context.get_constant(types.intp, width)

    return sig, codegen


put32 = cast(Callable[[Any, Any, Any, Any], None], _put32)
fence = cast(Callable[[], None], _fence)
width = cast(Callable[[Any], int], _width)


def wanted(out: np.ndarray, start: int, stop: int) -> bool:
    """Whether a kernel should write ``out[start:stop]`` (``out`` 1-D, contiguous) with
    :func:`map_streamed`: at least :data:`STREAM_MIN` bytes, at an address that some
    element boundary aligns to 32 bytes.

    Examples
    --------
    >>> out = np.empty(STREAM_MIN // 2, np.uint16)
    >>> wanted(out, 0, out.size), wanted(out, 1, out.size)
    (True, False)
    """
    return (stop - start) * out.itemsize >= STREAM_MIN \
        and out.ctypes.data % out.itemsize == 0


@numba.njit(cache=True, nogil=True)
def _address(a: np.ndarray) -> int:
    """The address of ``a[0]`` as a signed integer (an unsigned one would turn mixed
    arithmetic into float64)."""
    return int(a.ctypes.data)


@numba.njit(cache=True, nogil=True, inline="always")
def map_plain(one: Any, x: np.ndarray, out: np.ndarray, C: Any) -> None:
    """``out[i] = one(x[i], C)`` for every ``i`` (1-D contiguous arrays of one size),
    with ordinary stores.  ``one`` is an element function (LLVM inlines it)."""
    for i in range(x.size):
        out[i] = one(x[i], C)


@numba.njit(cache=True, nogil=True, inline="always")
def map_streamed(one: Any, x: np.ndarray, out: np.ndarray, C: Any) -> None:
    """:func:`map_plain` with streaming stores: the blocks of :data:`_BLOCK` bytes of
    ``out`` that start on a 32-byte boundary are computed into a scratch array and
    written with streaming stores, and the input is read :data:`_AHEAD` bytes ahead;
    a fence follows the last streaming store.  The elements before ``out`` reaches a
    32-byte boundary and after the last full block take ordinary stores.  ``out``'s
    address is a multiple of its itemsize (:func:`wanted`).

    A kernel calls this function or :func:`map_plain` by a literal flag, so the
    streaming loop compiles only where a call streams (each compiled loop costs
    seconds)."""
    n = x.size
    step = _BLOCK // width(out)
    ahead = _AHEAD // width(x)
    line = max(1, 64 // width(x))
    first = min(n, (32 - _address(out) % 32) % 32 // width(out))
    last = first + (n - first) // step * step
    scratch = np.empty(step, out.dtype)
    for lo in range(first, last, step):
        for j in range(lo + ahead, lo + step + ahead, line):
            prefetch(x, j)
        xs = x[lo:lo + step]
        # (a count LLVM sees as constant was unrolled into scalar code: decoding
        # binary16 took 33 ms, not 3)
        for i in range(xs.size):
            scratch[i] = one(xs[i], C)
        for k in range(0, step, 32 // width(out)):
            put32(out, lo + k, scratch, k)
    fence()
    for part in range(2):
        xs = x[:first] if part == 0 else x[last:]
        os_ = out[:first] if part == 0 else out[last:]
        for i in range(xs.size):
            os_[i] = one(xs[i], C)


def map_into(one: Any, x: np.ndarray, out: np.ndarray, C: Any, stream: bool) -> None:
    """:func:`map_streamed` when ``stream``, else :func:`map_plain` (compiled code only).

    A literal ``stream`` picks one of the two when the caller compiles, so a kernel
    specialised for ordinary stores never compiles the streaming loop: numba does not
    prune a branch on a literal argument before it types both sides, and typing and
    lowering the streaming loop took about as long as the rest of the encode loops
    (29 against 16 s for the nearest-even float32 loops of e4m3fn).  A run-time
    ``stream`` compiles both.  (numba offers an ``overload`` the arguments without
    their literal types first unless it asks otherwise: without ``prefer_literal``
    below, every kernel took the run-time shape and compiled both loops.)"""
    raise NotImplementedError("map_into runs in compiled code only")


@overload(map_into, inline="always", prefer_literal=True)
def _map_into(one: Any, x: Any, out: Any, C: Any, stream: Any) -> Any:
    """:func:`map_into` for the argument types: one loop for a literal ``stream``.  (numba
    asks each implementation for the same parameters, annotations included.)"""
    if isinstance(stream, types.Literal):
        if stream.literal_value:
            def streamed(one: Any, x: Any, out: Any, C: Any, stream: Any) -> None:
                map_streamed(one, x, out, C)

            return streamed

        def plain(one: Any, x: Any, out: Any, C: Any, stream: Any) -> None:
            map_plain(one, x, out, C)

        return plain

    def either(one: Any, x: Any, out: Any, C: Any, stream: Any) -> None:
        if stream:
            map_streamed(one, x, out, C)
        else:
            map_plain(one, x, out, C)

    return either
