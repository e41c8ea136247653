"""numerics.kernels.team: pieces come back in order from the worker threads, failures
propagate after every piece, and a sleeping worker or caller is always woken."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numerics.kernels.spread import spread
from numerics.kernels.team import DONE, FLAGS, GO, WAITING, Team, finish, publish, spin_while
from numerics.threads import get_num_threads, set_num_threads


def finishes(fn: Callable[[], Any], seconds: float = 60.0) -> Any:
    """``fn()`` on a thread of its own, failing (not hanging) when it does not return."""
    box: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no answer within {seconds} s (a lost wake-up?)"
    if errors:
        raise errors[0]
    return box[0]


@pytest.fixture(scope="module")
def team() -> Team:
    return Team(2)


def test_flags_are_read_and_raised_from_compiled_code() -> None:
    flags = np.zeros(FLAGS, np.int64)
    assert not spin_while(flags, GO, 0, 100, 0)  # unchanged: gives up after the limit
    assert publish(flags, GO, 3, DONE) == 0
    assert flags[GO] == 3
    assert spin_while(flags, GO, 0, 1, 10)


def test_a_finished_piece_is_published_before_the_wait_for_the_next() -> None:
    flags = np.zeros(FLAGS, np.int64)
    flags[GO] = 1  # piece 1 handed over
    assert finish(flags, 1, 100, 0) == 0  # DONE raised; no next piece within the limit
    assert flags[DONE] == 1
    flags[GO], flags[WAITING] = 2, 1  # piece 2, and the caller sleeps: wake it
    assert finish(flags, 2, 100, 0) == -1 and flags[DONE] == 2
    flags[WAITING], flags[GO] = 0, 3  # the next piece has come
    assert finish(flags, 2, 100, 0) == 1


def test_pieces_run_on_the_workers_and_come_back_in_order(team: Team) -> None:
    def span(lo: int, hi: int) -> tuple[int, int, int]:
        return lo, hi, threading.get_ident()

    caller, got = finishes(lambda: (threading.get_ident(),
                                    team.run([(span, 0, 1), (span, 1, 5), (span, 5, 9)])))
    assert [g[:2] for g in got] == [(0, 1), (1, 5), (5, 9)]
    assert got[0][2] == caller
    assert len({g[2] for g in got}) == 3


def test_every_piece_finishes_before_a_failure_propagates(team: Team) -> None:
    finished: list[int] = []

    def span(lo: int, hi: int) -> int:
        if lo == 0:
            raise ValueError("first piece")
        time.sleep(0.05)
        finished.append(lo)
        return lo

    with pytest.raises(ValueError, match="first piece"):
        finishes(lambda: team.run([(span, 0, 1), (span, 1, 2), (span, 2, 3)]))
    assert sorted(finished) == [1, 2]

    def worker_fails(lo: int, hi: int) -> int:
        if lo == 2:
            raise KeyError(lo)
        return lo

    with pytest.raises(KeyError):
        finishes(lambda: team.run([(worker_fails, 0, 1), (worker_fails, 1, 2),
                                   (worker_fails, 2, 3)]))
    # the team is still whole
    assert finishes(lambda: team.run([(worker_fails, 0, 1), (worker_fails, 1, 2)])) == [0, 1]


def test_sleeping_workers_and_callers_are_woken(team: Team) -> None:
    def nap(lo: int, hi: int) -> int:
        time.sleep(hi / 1000)  # longer than the caller's spin: the caller sleeps
        return lo

    for pause in (0.0, 0.002, 0.02):  # a worker idle past its spin sleeps
        time.sleep(pause)
        assert finishes(lambda: team.run([(nap, 0, 0), (nap, 1, 5), (nap, 2, 1)])) == [0, 1, 2]


def test_many_rounds_lose_no_wake_up(team: Team) -> None:
    rng = np.random.default_rng(0)
    delays = rng.choice([0.0, 0.0, 0.0, 2e-4, 2e-3], size=(300, 3))

    def rounds() -> int:
        total = 0
        for row in delays:
            def span(lo: int, hi: int, row: np.ndarray = row) -> int:
                if row[lo]:
                    time.sleep(float(row[lo]))
                return lo
            total += sum(team.run([(span, 0, 1), (span, 1, 2), (span, 2, 3)]))
        return total

    assert finishes(rounds) == 3 * len(delays)


def test_more_pieces_than_workers_are_refused(team: Team) -> None:
    with pytest.raises(ValueError, match="at most 3"):
        team.run([(lambda lo, hi: lo, k, k + 1) for k in range(4)])


def test_concurrent_callers_share_the_threads() -> None:
    """Two threads spreading at once: one holds the team, the other goes to the pool;
    both get every piece back in order."""
    before = get_num_threads()
    try:
        set_num_threads(2)
    except ValueError:
        pytest.skip("a single-thread pool")
    try:
        results: dict[int, list[list[tuple[int, int]]]] = {0: [], 1: []}

        def caller(k: int) -> None:
            set_num_threads(2)
            for _ in range(200):
                results[k].append(spread(lambda lo, hi: (lo, hi), 1 << 20))

        threads = [threading.Thread(target=caller, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        want = [(0, 1 << 19), (1 << 19, 1 << 20)]
        assert all(r == want for k in (0, 1) for r in results[k])
        assert len(results[0]) == len(results[1]) == 200
    finally:
        set_num_threads(before)


def test_a_forked_child_spreads_on_threads_of_its_own() -> None:
    code = """
import os, sys, numba
from numerics.kernels.spread import spread
numba.set_num_threads(2)
assert len(spread(lambda lo, hi: (lo, hi), 1 << 20)) == 2  # the parent's team starts
pid = os.fork()
if pid == 0:
    ok = spread(lambda lo, hi: (lo, hi), 1 << 20) == [(0, 1 << 19), (1 << 19, 1 << 20)]
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    done = subprocess.run([sys.executable, "-c", code],
                          env={**os.environ, "NUMBA_NUM_THREADS": "2"}, timeout=120)
    assert done.returncode == 0


def test_a_lost_worker_s_piece_runs_on_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker thread that ends without taking its piece (as one may in a forked child
    that copied a half-done import) is noticed while the caller waits: the piece runs on
    the calling thread and the team is broken, so spread starts a new one."""
    import numerics.kernels.team as team_mod

    monkeypatch.setattr(team_mod._Worker, "_loop", lambda self: None)  # ends at once
    team = Team(1)
    got = finishes(lambda: team.run([(lambda lo, hi: (lo, hi), 0, 5),
                                     (lambda lo, hi: (lo, hi), 5, 9)]))
    assert got == [(0, 5), (5, 9)] and team.broken
    with pytest.raises(RuntimeError, match="broken"):
        team.run([(lambda lo, hi: lo, 0, 1)])


_INTERRUPTED = """
import os, signal, threading, time
# Ctrl-C as from a terminal: a test run started in the background (a shell's `&`,
# nohup) passes SIGINT on ignored, and Python then keeps it ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
import numba
numba.set_num_threads(2)
from numerics.kernels import spread as S
n = 1 << 18
def slow(lo, hi):
    if lo:  # the worker's piece: Ctrl-C while the caller waits for it
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
    return lo
S.spread(lambda lo, hi: lo, n)  # the team started and its kernels compiled
try:
    S.spread(slow, n)
except KeyboardInterrupt:
    print("interrupted")
for _ in range(3):
    assert S.spread(lambda lo, hi: (lo, hi), n) == [(0, n // 2), (n // 2, n)]
deadline = time.monotonic() + 30  # the old worker ends once its piece is done
while sum(t.name == "numerics-team" for t in threading.enumerate()) > 1 \
        and time.monotonic() < deadline:
    time.sleep(0.05)
print(sum(t.name == "numerics-team" for t in threading.enumerate()))
"""


def test_an_interrupted_call_leaves_later_calls_right() -> None:
    """Ctrl-C while the caller waited for a worker left that worker's piece outstanding;
    later calls read stale results (half of a decode wrong) and the worker thread died.
    The interrupted team is now broken: later calls start a new one, and the old worker
    ends once its piece is done.  (The child sets Python's SIGINT handler itself: run
    from a background job, this test failed with no "interrupted".)"""
    if not hasattr(os, "kill"):
        pytest.skip("no signals here")
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED], capture_output=True,
                          text=True, env={**os.environ, "NUMBA_NUM_THREADS": "2"},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["interrupted", "1"], done.stdout


_FORK_WITH_LOCK_HELD = """
import os, sys, numba
numba.set_num_threads(2)
import numerics.kernels.spread as S
with S._LOCK:  # as another thread starting the team holds it
    pid = os.fork()
    if pid == 0:
        ok = S.spread(lambda lo, hi: hi - lo, 1 << 18) == [1 << 17, 1 << 17]
        os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_while_the_lock_was_held_spreads() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    done = subprocess.run([sys.executable, "-c", _FORK_WITH_LOCK_HELD],
                          env={**os.environ, "NUMBA_NUM_THREADS": "2"}, timeout=120)
    assert done.returncode == 0


def test_a_team_cut_short_while_starting_leaves_no_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt while the threads start (the second worker's, here) left the
    first one waiting for pieces that never came."""
    import numerics.kernels.team as team_mod

    started: list[Any] = []
    real_init = team_mod._Worker.__init__

    def init(self: Any, mark: Any) -> None:
        if started:
            raise KeyboardInterrupt
        real_init(self, mark)
        started.append(self)

    monkeypatch.setattr(team_mod._Worker, "__init__", init)
    with pytest.raises(KeyboardInterrupt):
        Team(2)
    started[0].thread.join(30)
    assert not started[0].thread.is_alive()
