"""Compiled kernels: one module per job, each a plain loop that follows the exact reference.

Every function here is ``numba.njit(cache=True, nogil=True)``; importing this
package does not import numba (the public API imports a kernel module the first
time it needs one), so ``import numerics`` compiles nothing.

Modules
-------
``random``    the counter-based random stream for stochastic rounding
``rounding``  scalar rounding of an exact value (a float64 pair or an integer significand)
              into any format: the step of :mod:`numerics.codec` every other kernel shares
``codec``     encode / decode loops
``ops``       correctly rounded arithmetic with IEEE flags
``pairs``     ``+ - * /`` on codes of formats up to 8 bits, read from a table of every
              pair's result
``accum``     summation, dot and GEMM loops, tensor-core adders
``compare``   comparison and statistics passes
``quant``     scaled and block quantization
``hash``      hash loops in uint32 and emulated float arithmetic
``spread``    runs a span kernel's index ranges on the threads
``stream``    streaming stores for large outputs, and the element-map loop that uses them
``cachedir``  where numba caches the kernels when neither the package folder nor the
              user's home is writable (imported by every kernel module first)
``inlining``  LLVM's inlining threshold while the kernels compile (imported by every
              kernel module first)
``specialise`` the pipeline of the loops called with literal flags: each flag a
              constant, so a variant compiles only its own branches

Compile time
------------
Outside :mod:`numerics.kernels.narrow`, no ``numba.njit`` function is
``inline="always"``: numba inlines at the level of its IR and types the grown caller
again at every call site, so a loop inlined once per literal flag combination
compiled several times slower than the same loops as separate specializations (the
encode kernels: about 170 s against 35 s), and the element helpers inlined that way
tripled the compile of the arithmetic kernels (76 s against 28 s for
``numerics.ops`` on float64 operands). The helpers are plain calls that LLVM inlines
when it optimizes the kernel, under the raised threshold of
:mod:`numerics.kernels.inlining`; the loops run as fast. The float-to-code loops of
:mod:`numerics.kernels.narrow` keep their helpers inlined by numba and LLVM's
default threshold, as they were tuned (without, the float64 ones ran 3 to 17%
slower). Elsewhere two kinds stay ``inline="always"``: loop templates that take an
element function as an argument (:func:`numerics.kernels.stream.map_plain`, the lane
loops of :mod:`numerics.kernels.accum`), where inlining makes the function a
constant of the caller (passed as a value, numba cannot cache the caller), and a few
``overload`` shims that pick one implementation by an argument's type or a literal
flag (:func:`numerics.kernels.stream.map_into`: ordinary or streaming stores).
numba's cache keys a kernel on its own source file: after editing a helper
in another module, delete the ``__pycache__/*.nbi`` / ``*.nbc`` files.

A loop that serves several cases by flags compiles once per literal combination,
and numba types every branch of each variant, also the ones its flags rule out:
the loops that take literal flags (the arithmetic loops of ``ops`` and
``ops_wide``, the directed, stochastic and float64 loops of ``narrow``, the
``next`` loop of ``ulp``) compile by :mod:`numerics.kernels.specialise`'s pipeline,
which makes each flag a constant that numba's branch pruning folds.  One loop stays
on numba's own pipeline: ``ops._lean_loop``, whose binary32 ``add`` ran 1.6 times
slower pruned (0.67 against 0.40 ms on 2**20 float32, one thread, Zen 2 VM; the
other loops ran as fast, to within the noise of repeated runs).  Where Python
already knows the case (the lanes of ``ops``: flags wanted or not, binary32 or a
narrower format), a small compiled closure per case passes it on as literals
(``ops._lean_span``; numba caches a closure by the values it closes over), so a
first call compiles the loops of its case only.  Where the
choice is by an argument's dtype (float32 or float64 input), an ``overload`` shim
picks the block when the caller compiles (:func:`numerics.kernels.narrow._rne_block`),
and :func:`numerics.kernels.stream.map_into` asks numba to try literal arguments
first (``prefer_literal``), so a kernel compiled for ordinary stores no longer
builds the streaming loop beside it.  The shim and ``prefer_literal`` together
took the encode kernels of one float32 call into e4m3fn from 17 to 9 s of compile.

A signature is compiled once per distinct argument type, and numba's array type
includes whether the array is read-only: the Python drivers hand a kernel arrays of
one kind (``numerics.ops`` copies a read-only operand and keeps its tables
read-only; ``numerics.compare`` passes read-only views), so a memory map and a
fresh array share one compiled loop.

Threads
-------
A loop is a serial function of an index range (``*_span(..., start, stop)``); a
plain Python driver of the same name without ``_span`` hands one range per thread
to :func:`numerics.kernels.spread.spread`, which runs them on Python threads (the
kernels release the GIL).  No kernel is ``parallel=True``: numba's parfor pass made
each parallel driver a second compile per signature, the slowest of all, for no
gain on loops this coarse.  Every result depends only on the element's inputs and,
for stochastic rounding, on ``(seed, index)`` (see :mod:`numerics.kernels.random`),
so the bits are the same for every thread count.
"""
