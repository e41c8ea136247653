"""How many threads the compiled kernels use.

Large inputs are split over all cores by default: one piece per thread, run on a
pool of Python threads that call the compiled kernels with the GIL released
(:mod:`numerics.kernels.spread`).  The count is numba's setting for the calling
thread, at most ``NUMBA_NUM_THREADS`` (by default the number of cores).  Results
never depend on the count: see :mod:`numerics.kernels.random`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

__all__ = ["get_num_threads", "ordered_map", "set_num_threads"]

T = TypeVar("T")
R = TypeVar("R")


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 to the pool size, ``NUMBA_NUM_THREADS``) in the kernels.

    The setting applies to calls made from the calling thread, as numba's does.

    Parameters
    ----------
    n : int
        A Python or numpy integer (not a bool).

    Raises
    ------
    ValueError
        If ``n`` is not an int in ``[1, pool size]``.
    """
    import numba

    top = int(getattr(numba.config, "NUMBA_NUM_THREADS"))
    if isinstance(n, (bool, np.bool_, np.timedelta64)) \
            or not isinstance(n, (int, np.integer)) or not 1 <= n <= top:
        raise ValueError(f"Got n={n!r}, but it must be an int in [1, {top}] "
                         "(NUMBA_NUM_THREADS sets the upper end)")
    numba.set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads the kernels use for calls from this thread.

    Examples
    --------
    >>> get_num_threads() >= 1
    True
    """
    import numba

    return int(numba.get_num_threads())


def ordered_map(func: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``func(item)`` for every item, in order, on ``threads`` Python threads.

    Unlike ``ThreadPoolExecutor.map``, which submits every item before the first
    result, at most ``2 * threads`` items are in flight: a huge or endless ``items``
    costs no memory, and the first error is raised as soon as its item's turn comes
    (the items not started are dropped).

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(5), 2))
    [0, 1, 4, 9, 16]
    """
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from itertools import islice

    source = iter(items)
    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        window = deque(pool.submit(func, item) for item in islice(source, 2 * max(1, threads)))
        while window:
            result = window.popleft().result()
            window.extend(pool.submit(func, item) for item in islice(source, 1))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
