"""Across threads and processes, fifth-round findings; each failed before its fix.

- ``testing.exhaustive`` checks against the format it is given, user-defined or named
  like a registered one (it looked formats up again by name in each chunk).
- ``NotATree`` survives pickling and copying (a process pool's worker raising it broke
  the pool).
- ``Quantized.bound`` is cached per instance without functools.cached_property's
  class-wide lock (Python <= 3.11), so a second thread never waits on another's tensor.
"""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import numerics
from numerics import quant, testing
from numerics.formats import Infinity, NaNEncoding
from numerics.probe.order import NotATree, build_tree


def test_exhaustive_takes_a_user_format() -> None:
    user = numerics.Format(name="e3m3_user", exponent_bits=3, trailing_bits=3, bias=3)
    report = testing.exhaustive(lambda a: numerics.encode(a, user, overflow="saturate"),
                                "e5m2", user, overflow="saturate", threads=1)
    assert report.checked == 256 and report.mismatches == 0


def test_exhaustive_checks_the_format_given_not_the_one_of_its_name() -> None:
    # e4m3 with bias 8 and no infinity: its max is 224, not e4m3fn's 448
    impostor = numerics.Format(name="e4m3fn", exponent_bits=4, trailing_bits=3, bias=8,
                               infinity=Infinity.NONE, nan=NaNEncoding.TOP)

    def run(kernel_fmt: object) -> int:
        return testing.exhaustive(
            lambda a: numerics.encode(a, kernel_fmt, overflow="saturate"), "binary16",
            impostor, overflow="saturate", threads=2, check=False).mismatches

    assert run(impostor) == 0
    assert run("e4m3fn") > 0


def test_not_a_tree_pickles_with_its_findings() -> None:
    with pytest.raises(NotATree) as info:
        build_tree(4, lambda pairs: [3] * len(pairs))
    err = info.value
    assert err.findings
    for back in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert type(back) is NotATree and str(back) == str(err)
        assert back.findings == err.findings


def test_bound_is_computed_once_per_tensor_and_threads_do_not_wait_on_each_other() -> None:
    x = np.random.default_rng(0).standard_normal((64, 64))
    q = quant.nvfp4(x)
    assert q.bound is q.bound
    assert np.array_equal(pickle.loads(pickle.dumps(q)).bound, q.bound)
    # one thread computing a bound while another holds the class's attribute machinery:
    # with cached_property's lock (<= 3.11) the second would block until the first ends
    started, release = threading.Event(), threading.Event()

    results: list[np.ndarray] = []
    other = quant.nvfp4(x * 2)
    original = type(other).scale_per_element

    def slow_scale(self: object) -> np.ndarray:
        if self is other:
            started.set()
            release.wait(10)
        return original(self)  # type: ignore[arg-type]

    type(other).scale_per_element = slow_scale  # type: ignore[method-assign]
    try:
        t = threading.Thread(target=lambda: results.append(other.bound))
        t.start()
        assert started.wait(10)
        third = quant.nvfp4(x * 4)
        done = threading.Event()

        def compute_third() -> None:
            assert third.bound.shape == x.shape
            done.set()

        u = threading.Thread(target=compute_third)
        u.start()
        assert done.wait(10)  # not blocked by the first thread's computation
        release.set()
        t.join(10)
        u.join(10)
    finally:
        release.set()
        type(other).scale_per_element = original  # type: ignore[method-assign]
    assert len(results) == 1 and np.all(np.abs(other.dequantize() - x * 2) <= results[0])
