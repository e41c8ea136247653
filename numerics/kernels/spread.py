"""Spread a serial span kernel over the threads: Python threads calling ``nogil`` code.

Every loop in this package is a serial function of an index range, ``span(start,
stop)``, compiled once per signature.  :func:`spread` cuts ``[0, n)`` into one
contiguous piece per thread (boundaries on multiples of ``align``), runs the first
piece on the calling thread and the others on a shared pool of Python threads, and
returns the pieces' results in index order.  The kernels release the GIL, so the
pieces run at the same time.

Why not ``numba.prange``: a ``parallel=True`` driver is a second compiled function
per signature, and numba's parfor pass made it the slowest one to compile (about
half the compile time of the test tier), for no run-time gain on loops this coarse.

The results do not depend on the thread count as long as the span's result for an
element depends only on that element's inputs and index, which every kernel here
guarantees (see :mod:`numerics.kernels.random` for stochastic rounding).  The number
of threads is :func:`numerics.threads.get_num_threads` of the calling thread; a
span that itself calls :func:`spread` from a pool thread runs serially, so nested
calls cannot wait on each other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import numba

__all__ = ["PARALLEL_MIN", "pieces", "serial", "spread"]

R = TypeVar("R")

#: Below this many elements a call runs on the calling thread (a pool hand-off costs
#: tens of microseconds, about what 2**17 elements take).
PARALLEL_MIN = 1 << 17

_LOCAL = threading.local()
_LOCK = threading.Lock()
_POOL: list[ThreadPoolExecutor] = []


def _mark_worker() -> None:
    _LOCAL.worker = True


def _pool() -> ThreadPoolExecutor:
    with _LOCK:
        if not _POOL:
            top = int(getattr(numba.config, "NUMBA_NUM_THREADS"))
            _POOL.append(ThreadPoolExecutor(max_workers=max(1, top - 1),
                                            thread_name_prefix="numerics",
                                            initializer=_mark_worker))
        return _POOL[0]


def _forget_pool() -> None:
    """In a forked child the pool's threads are gone: start a new pool on demand."""
    _POOL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def serial(n: int, unit: int = 1) -> bool:
    """Whether :func:`spread` runs ``n`` indices of ``unit`` element steps as one piece
    on the calling thread for its size alone; a driver on a hot small-array path calls
    its span directly then, skipping the closure and the list (about 0.7 us).

    Examples
    --------
    >>> serial(1000), serial(1 << 20)
    (True, False)
    """
    return n * unit < PARALLEL_MIN


def pieces(n: int, parts: int, align: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into at most ``parts`` contiguous ``(start, stop)`` pieces of
    nearly equal length, every inner boundary a multiple of ``align``.

    Examples
    --------
    >>> pieces(10, 3, 2)
    [(0, 2), (2, 6), (6, 10)]
    >>> pieces(5, 4, 8)
    [(0, 5)]
    >>> pieces(0, 2, 1)
    []
    """
    blocks = -(-n // align)
    parts = max(1, min(parts, blocks))
    edges = [min(n, (blocks * k // parts) * align) for k in range(parts + 1)]
    return [(lo, hi) for lo, hi in zip(edges, edges[1:]) if hi > lo]


def spread(span: Callable[[int, int], R], n: int, *, align: int = 1, unit: int = 1,
           minimum: int = PARALLEL_MIN) -> list[R]:
    """``[span(start, stop) for each piece]`` of ``[0, n)``, the pieces on the threads.

    Each index of the range stands for ``unit`` element steps (a row of ``unit`` terms,
    a block of ``unit`` elements).  One piece (on the calling thread) when the call has
    fewer than ``minimum`` element steps, when the calling thread uses one thread, or
    when it is itself a pool thread.  An exception in any piece
    propagates after every piece has finished.

    Examples
    --------
    >>> sum(spread(lambda lo, hi: hi - lo, 10**6))
    1000000
    >>> spread(lambda lo, hi: (lo, hi), 10)
    [(0, 10)]
    """
    if n * unit < minimum:  # first: numba.get_num_threads takes about 2 us
        return [span(0, n)] if n > 0 else []
    threads = int(numba.get_num_threads())
    if threads <= 1 or getattr(_LOCAL, "worker", False):
        return [span(0, n)]
    work = pieces(n, threads, align)
    if len(work) == 1:
        return [span(*work[0])]
    pool = _pool()
    futures: list[Future[R]] = [pool.submit(span, lo, hi) for lo, hi in work[1:]]
    try:
        first = span(*work[0])
    finally:
        wait(futures)  # no piece outlives the call, even when one fails
    return [first] + [f.result() for f in futures]
