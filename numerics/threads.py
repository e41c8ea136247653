"""How many threads the compiled kernels use.

Large inputs are split over all cores by default: one piece per thread, run on a
pool of Python threads that call the compiled kernels with the GIL released
(:mod:`numerics.kernels.spread`).  The count is numba's setting for the calling
thread, at most ``NUMBA_NUM_THREADS`` (by default the number of cores).  Results
never depend on the count: see :mod:`numerics.kernels.random`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["get_num_threads", "set_num_threads"]


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
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) \
            or not 1 <= n <= top:
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
