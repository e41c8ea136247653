"""The LLVM inlining threshold of :mod:`numerics.kernels.inlining`: raised for the
compiles of this package's functions only, and restored when each ends."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from numerics.kernels import inlining


def _event(module: str) -> Any:
    func = SimpleNamespace(__module__=module)
    return SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=func)})


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    monkeypatch.setattr(inlining, "_set", seen.append)
    return seen


def test_only_our_compiles_raise_it(calls: list[int]) -> None:
    switch = inlining._Switch()
    user = _event("my_project.kernels")
    switch.on_start(user)
    switch.on_end(user)
    assert calls == []
    ours = _event("numerics.kernels.ops")
    switch.on_start(ours)
    assert calls == [inlining.THRESHOLD]
    switch.on_end(ours)
    assert calls == [inlining.THRESHOLD, inlining._default_threshold()]


def test_nested_compiles_restore_at_the_one_that_raised(calls: list[int]) -> None:
    """A user's function that calls a kernel: raised for the kernel (and its callees),
    restored when the kernel's compile ends, not before and not at the user's."""
    switch = inlining._Switch()
    user, kernel, helper = (_event("app"), _event("numerics.kernels.ops"),
                            _event("numerics.kernels.rounding"))
    switch.on_start(user)
    switch.on_start(kernel)
    switch.on_start(helper)
    switch.on_end(helper)
    assert calls == [inlining.THRESHOLD]
    switch.on_end(kernel)
    assert calls == [inlining.THRESHOLD, inlining._default_threshold()]
    switch.on_end(user)
    assert len(calls) == 2


def test_events_without_a_dispatcher_are_not_ours(calls: list[int]) -> None:
    switch = inlining._Switch()
    odd = SimpleNamespace(data=None)
    switch.on_start(odd)
    switch.on_end(odd)
    assert calls == []


def test_the_default_follows_numbas_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inlining.config, "OPT", 3)
    assert inlining._default_threshold() == 250
    monkeypatch.setattr(inlining.config, "OPT", 2)
    assert inlining._default_threshold() == 225


def test_a_real_compile_goes_through_the_switch(calls: list[int]) -> None:
    """numba's compile events reach the installed switch: a function that claims a
    module of this package raises the threshold while it compiles, a user's does not."""
    import numba

    def ours(x: int) -> int:
        return x + 1

    def theirs(x: int) -> int:
        return x + 2

    ours.__module__ = "numerics.kernels.for_the_test"
    assert numba.njit(theirs)(1) == 3
    assert calls == []
    assert numba.njit(ours)(1) == 2
    assert calls == [inlining.THRESHOLD, inlining._default_threshold()]


def test_the_modules_kept_at_the_default_do_not_raise_it(calls: list[int]) -> None:
    switch = inlining._Switch()
    for module in sorted(inlining.AT_DEFAULT):
        ev = _event(module)
        switch.on_start(ev)
        switch.on_end(ev)
    assert calls == []
