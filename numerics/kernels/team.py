"""A team of worker threads that wait for their next piece spinning, not asleep.

Handing a piece of work to a sleeping thread costs the time the operating system
takes to wake it: on this project's 2-core KVM machines, a
``ThreadPoolExecutor.submit(...).result()`` round trip of a compiled function that
returns at once took 35 us at best and 54 us in the median, and :func:`spread
<numerics.kernels.spread.spread>` on two threads lost 60 to 130 us a call to it,
as much as 2**17 elements of work.  A worker of this team instead spins after each
piece (:data:`SPIN` reads of its flag, about half a millisecond) in compiled code
with the GIL released, and takes the next piece as soon as the caller raises the
flag; the caller likewise spins (:data:`WAIT`) for the pieces to come back.  Only a
thread that has waited out its spin sleeps on a condition variable, and is woken
as any thread.

The GIL is the other place where a thread can fall asleep: CPython's
``take_gil`` does not spin, so a thread that asks for the GIL while another holds it
sleeps until it is let go, and pays a wake-up.  Both hand-overs are arranged so that
the GIL is free when it is asked for:

* the caller raises ``GO`` holding the GIL (:func:`publish` does not release it) and
  keeps it until it enters its own piece's compiled loop; the worker, having seen
  ``GO``, reads its flag :data:`LINGER` more times (about 18 us) before it returns to
  Python and takes the GIL.  On the 2-core machine a shorter wait (4.5 us) left the
  worker asleep on the GIL in most calls, and the median call of 2**20 elements
  (float32 to e4m3fn, 2 threads) took 106 us instead of 89 us;
* the worker raises ``DONE`` from compiled code with the GIL released, then spins
  for its next piece there (:func:`finish`): a caller that sees ``DONE`` and returns
  to Python finds the GIL free.

Each worker has a row of :data:`FLAGS`: ``GO`` (the caller's count of pieces handed
to it), ``DONE`` (the worker's count of pieces finished), ``ASLEEP`` (the worker
sleeps, or is about to, on its condition) and ``WAITING`` (the caller does).  A
thread about to sleep raises its flag by a sequentially consistent store and then
reads the other side's, and so does the other side (:func:`publish`, :func:`finish`);
of two threads that each store and then load, at least one sees the other's store,
so a sleeper is always woken.  The piece itself and its result pass through Python
attributes, written before ``GO`` or ``DONE`` is raised and read after it is seen.

Examples
--------
>>> team = Team(1)
>>> team.run([(lambda lo, hi: hi - lo, 0, 10), (lambda lo, hi: hi - lo, 10, 15)])
[10, 5]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

import numerics.kernels.cachedir  # noqa: F401 - before the first cached kernel

__all__ = ["ASLEEP", "DONE", "FLAGS", "GO", "LINGER", "SPIN", "WAIT", "WAITING", "Team",
           "WorkerLost", "finish", "publish", "spin_while"]

#: The flags of one worker, each in a cache line of its own (8 int64 a line).
GO, DONE, ASLEEP, WAITING = 0, 8, 16, 24
FLAGS = 32
#: Reads of its flag before an idle worker sleeps instead: about half a millisecond
#: (0.55 ms on an AMD EPYC Zen 4 VM), enough to span the Python work between the
#: parallel calls of a loop over large arrays, short enough that a busy machine loses
#: little to it.
SPIN = 1 << 20
#: Reads of a worker's flag before the caller sleeps instead: a quarter millisecond.
#: The pieces are of equal size, so the caller's wait is short unless its worker has
#: lost its core, and then spinning would only keep the core from it.
WAIT = 1 << 19
#: Reads a worker makes after it sees its piece come, before it takes the GIL (about
#: 18 us): time for the caller to enter its own piece and let the GIL go.
LINGER = 1 << 15


def _pointer(context: Any, builder: Any, ty: Any, arr: Any, i: Any) -> Any:
    ary = context.make_array(ty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, ty, ary, [i])


@intrinsic
def _load_atomic(typingctx: object, arr: types.Type, i: types.Type) -> tuple[Any, Any]:
    """``arr[i]`` (int64) by a sequentially consistent atomic load: read from memory on
    every call (a plain load in a loop could be hoisted out of it)."""
    sig = types.int64(arr, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@intrinsic
def _store_atomic(typingctx: object, arr: types.Type, i: types.Type,
                  v: types.Type) -> tuple[Any, Any]:
    """``arr[i] = v`` (int64) by a sequentially consistent atomic store (on x86 an
    ``xchg``, which also drains the store buffer before any later load)."""
    sig = types.void(arr, i, v)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
        value = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(value, ptr, "seq_cst", 8)
        return context.get_dummy_value()

    return sig, codegen


# (typed for the compiled callers; numba resolves the intrinsics)
_load = cast(Callable[[np.ndarray, int], int], _load_atomic)
_store = cast(Callable[[np.ndarray, int, int], None], _store_atomic)


@numba.njit(cache=True)
def publish(flags: np.ndarray, mine: int, value: int, theirs: int) -> int:
    """Raise ``flags[mine] = value``, then read ``flags[theirs]`` (both sequentially
    consistent).  The caller keeps the GIL: a worker that sees the flag does not find
    the GIL free until the caller lets it go."""
    _store(flags, mine, value)
    return _load(flags, theirs)


@numba.njit(cache=True, nogil=True)
def spin_while(flags: np.ndarray, i: int, value: int, limit: int, linger: int) -> bool:
    """Read ``flags[i]`` until it differs from ``value`` (True) or ``limit`` reads have
    seen it unchanged (False), with the GIL released; after a change, ``linger`` more
    reads before returning (and taking the GIL)."""
    for _ in range(limit):
        if _load(flags, i) != value:
            for _ in range(linger):
                _load(flags, i)
            return True
    return False


@numba.njit(cache=True, nogil=True)
def finish(flags: np.ndarray, seen: int, limit: int, linger: int) -> int:
    """A worker's end of piece ``seen``: raise ``DONE`` with the GIL released (the
    caller that sees it finds the GIL free), then -1 if the caller sleeps (the worker
    wakes it), else :func:`spin_while` for the next piece (1, or 0 when it did not
    come)."""
    _store(flags, DONE, seen)
    if _load(flags, WAITING):
        return -1
    return np.int64(spin_while(flags, GO, seen, limit, linger))


class _Worker:
    """One thread of a :class:`Team` and its flags (module docstring)."""

    def __init__(self, mark: Callable[[], None]) -> None:
        self.flags = np.zeros(FLAGS, np.int64)
        self.cv = threading.Condition()
        self.piece: tuple[Callable[[int, int], Any], int, int] | None = None
        self.result: tuple[Any, BaseException | None] = (None, None)
        self.sent = 0  # pieces handed over (the caller's copy of GO)
        self.retired = False
        self._mark = mark
        self.thread = threading.Thread(target=self._loop, name="numerics-team", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        self._mark()
        flags, seen = self.flags, 0
        state = int(spin_while(flags, GO, seen, SPIN, LINGER))
        while True:
            if not state:
                with self.cv:
                    if publish(flags, ASLEEP, 1, GO) == seen:
                        while int(flags[GO]) == seen:
                            if self.retired:  # (its team is broken: nothing more comes)
                                return
                            self.cv.wait()
                    flags[ASLEEP] = 0
            seen += 1  # (one piece at a time: the caller waits for DONE before the next)
            piece, self.piece = self.piece, None
            try:
                span, lo, hi = piece  # type: ignore[misc]
                self.result = (span(lo, hi), None)
            except BaseException as exc:  # handed to the caller, which raises it
                self.result = (None, exc)
            state = finish(flags, seen, SPIN, LINGER)
            if state < 0:
                with self.cv:
                    self.cv.notify()
                state = int(spin_while(flags, GO, seen, SPIN, LINGER))

    def retire(self) -> None:
        """Let the thread end once it is idle (it finishes a piece it holds first)."""
        self.retired = True
        with self.cv:
            self.cv.notify()

    def send(self, span: Callable[[int, int], Any], lo: int, hi: int) -> None:
        """Hand over ``span(lo, hi)``."""
        self.piece = (span, lo, hi)
        self.sent += 1
        if publish(self.flags, GO, self.sent, ASLEEP):
            with self.cv:
                self.cv.notify()

    def receive(self) -> tuple[Any, BaseException | None]:
        """Wait for the piece handed over last: its ``(result, exception)``.

        Raises :class:`WorkerLost` if the thread has ended without finishing it (a
        worker ends only on a failure outside any piece, such as a fork that copied a
        half-done import into the child)."""
        flags = self.flags
        if not spin_while(flags, DONE, self.sent - 1, WAIT, 0):
            with self.cv:
                try:
                    if publish(flags, WAITING, 1, DONE) != self.sent:
                        while int(flags[DONE]) != self.sent:
                            self.cv.wait(0.25)
                            if not self.thread.is_alive() and int(flags[DONE]) != self.sent:
                                raise WorkerLost
                finally:
                    flags[WAITING] = 0
        result, self.result = self.result, (None, None)
        return result


class WorkerLost(Exception):
    """A worker thread ended without finishing its piece."""


class Team:
    """``size`` worker threads, each taking one piece at a time (module docstring).

    One caller at a time: :meth:`run` is guarded by :attr:`lock`, which a caller takes
    without blocking (:mod:`numerics.kernels.spread` falls back to a thread pool when
    another thread holds it).  A run that did not come to its end (an exception in
    the caller outside the pieces, a ``KeyboardInterrupt`` while it waited) may leave a
    piece with a worker, so the team is :attr:`broken` from then on and the caller
    starts a new one; a broken team's workers finish what they hold and end."""

    def __init__(self, size: int, mark: Callable[[], None] = lambda: None) -> None:
        self.lock = threading.Lock()
        self.broken = False
        self._workers: list[_Worker] = []
        try:
            for _ in range(size):
                self._workers.append(_Worker(mark))
        except BaseException:  # (a KeyboardInterrupt while the threads start: none stays)
            for worker in self._workers:
                worker.retire()
            raise

    @property
    def size(self) -> int:
        """Number of worker threads (the calling thread, which runs a piece too, not
        counted).

        Returns
        -------
        int
            The workers started, ``size`` as given to the constructor.
        """
        return len(self._workers)

    def run(self, work: Sequence[tuple[Callable[[int, int], Any], int, int]]) -> list[Any]:
        """``[span(lo, hi) for span, lo, hi in work]``: the first on the calling thread,
        the others on the workers (at most :attr:`size` of them).  An exception in any
        piece propagates after every piece has finished.  A piece whose worker was lost
        runs again on the calling thread (a piece's results depend only on its range,
        so a second run writes the same bits)."""
        rest = work[1:]
        if self.broken:
            raise RuntimeError("Got a broken team; spread starts a new one")
        if len(rest) > self.size:
            raise ValueError(f"Got {len(work)} pieces, but the team runs at most "
                             f"{self.size + 1}")
        finished = False
        try:
            for worker, (span, lo, hi) in zip(self._workers, rest):
                worker.send(span, lo, hi)
            results = [_call(*work[0])]
            for worker, piece in zip(self._workers, rest):
                try:
                    results.append(worker.receive())
                except WorkerLost:
                    self.broken = True
                    results.append(_call(*piece))
            finished = True
        finally:
            if not finished:
                self.broken = True
            if self.broken:
                for worker in self._workers:
                    worker.retire()
        for _, error in results:
            if error is not None:
                raise error
        return [value for value, _ in results]


def _call(span: Callable[[int, int], Any], lo: int, hi: int) -> tuple[Any, BaseException | None]:
    """``(span(lo, hi), None)``, or ``(None, the exception it raised)``."""
    try:
        return span(lo, hi), None
    except BaseException as exc:  # raised by Team.run once every piece has finished
        return None, exc
