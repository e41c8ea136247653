"""Hash kernels in uint32 arithmetic and in emulated floating-point arithmetic.

Two families live here.

Byte hashes
    :func:`fnv1a32`, :func:`murmur3_32` (MurmurHash3 x86_32) and :func:`xxh32`
    hash keys given as ``bytes`` or as the rows of a 2-D ``uint8`` array.  Each
    is one compiled loop per key (:mod:`numerics.kernels.hash`), keys spread over
    the threads (:func:`numerics.threads.set_num_threads`; the bits never depend
    on the thread count), and they agree bit for bit with the reference
    implementations (the ``mmh3`` and ``xxhash`` packages, the published FNV test
    values).

Integer hashes with a choice of arithmetic
    :func:`spatial_hash` (the instant-NGP grid hash) and :func:`poly_hash` (the
    polynomial rolling hash) run either in exact ``uint32`` arithmetic or *as if*
    written with ``float32``, ``bfloat16`` or ``float16`` arithmetic, the way a
    kernel language that defaults to floats silently computes them.  The float
    variants are exact emulations, not approximations; the rules follow.

Emulated float arithmetic (``arithmetic="float32" | "bfloat16" | "float16"``)
-------------------------------------------------------------------------------
1. Every integer input (a coordinate, a token) and every constant (a prime, the
   base, the modulus) is first rounded to the format, round-to-nearest-even.
   Inputs are below ``2**24``, so they are exact in float32; constants such as
   2654435761 are not (it becomes 2654435840).
2. Each multiply and each add is ONE correctly rounded operation of the format
   (round-to-nearest-even), exactly as IEEE 754 defines it:

   * float32: IEEE single operations (binary32 operands in the compiled
     kernels of :mod:`numerics.kernels.hash`).
   * bfloat16 (p = 8): the operation is done in float32 and the result rounded
     to bfloat16 with ties-to-even.  A product of two 8-bit significands has at
     most 16 bits, so it is exact in float32 and rounded once.  A sum may be
     rounded twice, but 24 >= 2*8 + 2, so by Figueroa's theorem (double
     rounding through a format with q >= 2p + 2 bits is innocuous for +, -,
     *, /, sqrt of p-bit operands) the result is the correctly rounded sum.
   * float16 (p = 11): the same construction; 24 >= 2*11 + 2 = 24, so
     Figueroa's theorem applies again (products of two 11-bit significands are
     even exact in float32).
3. Every intermediate is an integer-valued float (a rounded integer is still an
   integer), so where a bitwise operation (XOR) needs an integer, the value
   enters as its exact integer value reduced mod ``2**32``.  That is what a
   cast through int64 to uint32 gives for values below ``2**63``; it is
   computed here from the float's significand and exponent instead, so it is
   exact at every float32 magnitude, also beyond ``2**63`` where an int64 cast
   overflows.
4. The final ``mod table_size`` (or ``mod modulus``) is integer arithmetic.
5. If a rounded constant or an intermediate is not finite (float16 overflows
   above 65504; 2654435761 is already ``inf`` there), the kernel has no
   integer result and a ValueError says which value overflowed.

Rounding error and collisions are analysed in ``proofs/uint32_vs_fp32.md``
(claims C1 to C5); :func:`count_representable_integers` is its claim C5.
"""

from __future__ import annotations

from numerics.hashing._analysis import (
    CollisionReport,
    collision_report,
    count_representable_integers,
)
from numerics.hashing._bytes import fnv1a32, murmur3_32, xxh32
from numerics.hashing._emulated import (
    ARITHMETICS,
    INPUT_LIMIT,
    INSTANT_NGP_PRIMES,
    Arithmetic,
    poly_hash,
    spatial_hash,
)

__all__ = [
    "ARITHMETICS",
    "INPUT_LIMIT",
    "INSTANT_NGP_PRIMES",
    "Arithmetic",
    "CollisionReport",
    "collision_report",
    "count_representable_integers",
    "fnv1a32",
    "murmur3_32",
    "poly_hash",
    "spatial_hash",
    "xxh32",
]
