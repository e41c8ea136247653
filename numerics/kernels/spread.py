"""Spread a serial span kernel over the threads: Python threads calling ``nogil`` code.

Every loop in this package is a serial function of an index range, ``span(start,
stop)``, compiled once per signature.  :func:`spread` cuts ``[0, n)`` into one
contiguous piece per thread (boundaries on multiples of ``align``), runs the first
piece on the calling thread and the others on the worker threads, and returns the
pieces' results in index order.  The kernels release the GIL, so the pieces run at
the same time.  The workers are a :class:`numerics.kernels.team.Team`, which spin
between pieces instead of sleeping: on 2 threads of a 2-core KVM machine, a call of
2**18 elements that a ``ThreadPoolExecutor`` handed over in 160 to 185 us takes 119
to 122 us (107 us is half the serial time).  While one thread's call holds the
team, another thread's call hands its pieces to a ``ThreadPoolExecutor``.

Why not ``numba.prange``: a ``parallel=True`` driver is a second compiled function
per signature, and numba's parfor pass made it the slowest one to compile (about
half the compile time of the test tier), for no run-time gain on loops this coarse.

The results do not depend on the thread count as long as the span's result for an
element depends only on that element's inputs and index, which every kernel here
guarantees (see :mod:`numerics.kernels.random` for stochastic rounding).  The number
of threads is :func:`numerics.threads.get_num_threads` of the calling thread; a
span that itself calls :func:`spread` from a worker thread runs serially, so nested
calls cannot wait on each other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import numba

from numerics.kernels.team import Team

__all__ = ["PARALLEL_MIN", "FAST_LOOP_MIN", "pieces", "serial", "spread"]

R = TypeVar("R")

#: Below this many elements a call runs on the calling thread (a worker starts its
#: piece about 20 us after the call: :data:`numerics.kernels.team.LINGER`).
PARALLEL_MIN = 1 << 17
#: The same for the fastest loops (:func:`serial` with ``fast``: the codec's
#: conversions of float32 and binary16 by nearest-even, and of codes to floats, at
#: 0.1 to 0.25 ns an element on one thread).  On 2 threads of a 2-core AMD EPYC Zen 4
#: VM, float32 to e4m3fn and to bfloat16 and e4m3fn codes to float32 ran 0.75 to 1.0
#: times as fast as on one at 2**17 elements, 1.0 to 1.25 at 2**18, 1.15 to 1.6 at
#: 2**19 and 1.6 to 1.8 at 2**20 (medians of 400 calls).
FAST_LOOP_MIN = 1 << 19

_LOCAL = threading.local()
_LOCK = threading.Lock()
_POOL: list[ThreadPoolExecutor] = []
_TEAM: list[Team] = []


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


def _team() -> Team:
    """The team, started on first use, and again after a run that broke it."""
    with _LOCK:
        if not _TEAM or _TEAM[0].broken:
            top = int(getattr(numba.config, "NUMBA_NUM_THREADS"))
            _TEAM[:] = [Team(max(1, top - 1), mark=_mark_worker)]
        return _TEAM[0]


def _forget_pool() -> None:
    """In a forked child the threads are gone: start new ones on demand.  The lock too
    is new: another thread of the parent may have held it at the fork."""
    global _LOCK
    _LOCK = threading.Lock()
    _POOL.clear()
    _TEAM.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def serial(n: int, unit: int = 1, *, fast: bool = False) -> bool:
    """Whether ``n`` indices of ``unit`` element steps run as one piece on the calling
    thread for their size alone: below :data:`PARALLEL_MIN` element steps, or
    :data:`FAST_LOOP_MIN` for a ``fast`` loop (a fraction of a nanosecond an element).
    A driver on a hot small-array path calls its span directly then, skipping the
    closure and the list (about 0.7 us), and else hands it to :func:`spread`.

    Examples
    --------
    >>> serial(1000), serial(1 << 18), serial(1 << 18, fast=True)
    (True, False, True)
    """
    return n * unit < (FAST_LOOP_MIN if fast else PARALLEL_MIN)


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
    when it is itself a worker thread.  An exception in any piece
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
    team = _team()
    if team.lock.acquire(blocking=False):
        try:
            return team.run([(span, lo, hi) for lo, hi in work])
        finally:
            team.lock.release()
    pool = _pool()  # another thread's call holds the team
    futures: list[Future[R]] = [pool.submit(span, lo, hi) for lo, hi in work[1:]]
    try:
        first = span(*work[0])
    finally:
        wait(futures)  # no piece outlives the call, even when one fails
    return [first] + [f.result() for f in futures]
