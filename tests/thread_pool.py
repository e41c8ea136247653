"""The thread counts a test may give :func:`numerics.set_num_threads`: numba's pool caps
them (``NUMBA_NUM_THREADS``, numba's default being the CPU count: 1 on a 1-CPU machine,
where asking for 2 is a ValueError)."""

from __future__ import annotations

import numba


def pool() -> int:
    """The largest thread count numerics takes in this process."""
    return int(getattr(numba.config, "NUMBA_NUM_THREADS"))


def available(*counts: int) -> list[int]:
    """``counts`` that the pool allows, sorted, each once.

    Examples
    --------
    >>> available(2, 1, 1)[0]
    1
    """
    return sorted({c for c in counts if 1 <= c <= pool()})
