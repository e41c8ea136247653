"""Running per-chunk work: on local threads, or as tasks on a Dask cluster.

Work is a list of *items* (small picklable tuples naming a tensor and an
element range); a module-level function turns an item into a small partial
result, and the caller folds the partials together as they arrive.  Every
fold used here (sums, maxima, sorted top lists) is exact and independent of
the order, so the threads' or the cluster's scheduling never changes a result.

Locally at most ``2 * threads`` items are in flight, so memory stays bounded
by the chunk size whatever the checkpoint's size; the compiled kernels release
the GIL, so threads run on all cores.  With a ``dask.distributed`` client
(``dask[distributed]``, the project's optional extra ``dask``) each item is one task that reads its
own byte range from the shared path (``mmap=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import numpy as np

__all__ = ["Progress", "check_run_options", "execute"]

T = TypeVar("T")
#: Called with the bytes each finished item covered.
Progress = Callable[[int], None]


def _check_client(client: Any) -> None:
    try:
        import distributed
    except ImportError:
        raise ValueError("Got a client, but dask.distributed is not installed; install it "
                         "(pip install 'dask[distributed]', or the project's extra "
                         "'.[dask]')") from None
    if not isinstance(client, distributed.Client):
        raise TypeError(f"Got client={client!r}, but it must be a dask.distributed.Client")
    if client.status != "running":
        raise ValueError(f"Got client={client!r}, which is {client.status}; a running client "
                         "is needed")
    if client.asynchronous:
        raise ValueError(f"Got client={client!r}, an asynchronous client; these calls block, "
                         "so they need a synchronous one (or run them in a thread: "
                         "asyncio.to_thread)")


_NOT_GIVEN = object()


def check_run_options(*, threads: object = None, client: object = None,
                      progress: object = None, chunk: object = _NOT_GIVEN) -> None:
    """Validate the options every streamed operation takes (before any file is read).

    Parameters
    ----------
    threads : int, optional
        Local threads, a positive int (None: :func:`numerics.get_num_threads`).
    client : dask.distributed.Client, optional
        The cluster to run on.
    progress : callable, optional
        Called with the bytes each finished chunk read.
    chunk : int, optional
        Elements per chunk, checked only where given.

    Raises
    ------
    TypeError
        ``threads`` not an int (a bool is not one), ``progress`` not callable,
        ``client`` not a ``dask.distributed.Client``.
    ValueError
        ``threads`` below 1; ``chunk`` (elements per chunk, where given) not a positive
        int; a client without dask.distributed installed.
    """
    if chunk is not _NOT_GIVEN and (isinstance(chunk, bool) or not isinstance(
            chunk, (int, np.integer)) or chunk < 1):
        raise ValueError(f"Got {chunk=!r}, but it must be a positive int")
    if threads is not None:
        if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
            raise TypeError(f"Got threads={threads!r}, but it must be a positive int "
                            "(or None: numerics.get_num_threads())")
        if threads < 1:
            raise ValueError(f"Got threads={threads!r}, but it must be a positive int")
    if progress is not None and not callable(progress):
        raise TypeError(f"Got progress={progress!r}, but it must be a callable taking the "
                        "bytes each finished chunk read (or None)")
    if client is not None:
        _check_client(client)


def execute(func: Callable[[Any, bool], T], items: Sequence[Any], fold: Callable[[Any, T], None],
            *, sizes: Sequence[int], threads: int | None = None, client: Any = None,
            progress: Progress | None = None) -> None:
    """Run ``func(item, mmap)`` for every item and ``fold(item, result)`` each result.

    ``fold`` runs in the calling thread, one result at a time; ``sizes[i]``
    is what item ``i`` reports to ``progress`` when it is done.

    Parameters
    ----------
    func : callable ``(item, mmap) -> result``
        A module-level function (picklable, for a Dask ``client``); ``mmap`` is True
        locally and False in a Dask task.
    items : sequence
        The work items (small picklable tuples).
    fold : callable ``(item, result) -> None``
        Takes each result, in the order they finish.
    sizes : sequence of int
        Bytes each item covers, reported to ``progress``.
    threads : int, optional
        Local threads (None: :func:`numerics.get_num_threads`); one runs the items in
        order in the calling thread.
    client : dask.distributed.Client, optional
        Run each item as a task on this cluster instead.
    progress : callable, optional
        Called with ``sizes[i]`` as item ``i`` is folded.

    Raises
    ------
    TypeError, ValueError
        For invalid options, as :func:`check_run_options` raises.
    """
    check_run_options(threads=threads, client=client, progress=progress)
    if client is not None:
        _execute_dask(func, items, fold, sizes=sizes, client=client, progress=progress)
        return
    if threads is None:
        from numerics.threads import get_num_threads

        threads = get_num_threads()
    threads = int(threads)
    if threads <= 1 or len(items) <= 1:
        for item, size in zip(items, sizes):
            fold(item, func(item, True))
            if progress is not None:
                progress(size)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending: dict[Future[T], int] = {}
        next_item = 0
        while next_item < len(items) or pending:
            while next_item < len(items) and len(pending) < 2 * threads:
                pending[pool.submit(func, items[next_item], True)] = next_item
                next_item += 1
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                fold(items[i], fut.result())
                if progress is not None:
                    progress(sizes[i])


def _execute_dask(func: Callable[[Any, bool], T], items: Sequence[Any],
                  fold: Callable[[Any, T], None], *, sizes: Sequence[int], client: Any,
                  progress: Progress | None) -> None:
    from distributed import as_completed

    futures = client.map(func, list(items), [False] * len(items), pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    for fut, result in as_completed(futures, with_results=True):
        i = index[fut.key]
        fold(items[i], result)
        if progress is not None:
            progress(sizes[i])
