"""Testing toolkit for kernel test suites: hypothesis strategies and ULP assertions.

Strategies live in :mod:`numerics.testing.strategies` (``values``, ``codes``,
``arrays``, ``code_arrays``, ``blocks``, ``ties``, ``near_ties``, ``seeds``,
``rngs``, ``formats``, ``roundings``); the assertions are re-exported here:
``assert_ulp_close``, ``assert_bitwise_equal``, ``assert_within_bound``,
``assert_rounded_from`` and ``assert_stochastic_rounding``, with the error
bounds ``tolerance_for``, ``elementwise_bound`` and ``softmax_bound``
(:mod:`numerics.testing.tolerances`), and ``exhaustive`` (every input of a
format through a conversion kernel, :mod:`numerics.testing.exhaustive`).  The pytest plugin
(:mod:`numerics.testing.plugin`) adds ``--numerics-seed`` and the
``numerics_seed`` / ``numerics_rng`` fixtures; :mod:`numerics.testing.profiles`
holds the hypothesis profiles ``dev``, ``ci`` and ``thorough``.

Importing this package registers nothing, loads no profile and does not import
hypothesis (a test extra): ``register_profiles`` and the strategies load it when first
used, so the pytest plugin, which lives here, works in an environment without it.
"""

from __future__ import annotations

from typing import Any

from numerics.testing.assertions import (
    ALGORITHMS,
    assert_bitwise_equal,
    assert_ulp_close,
    assert_within_bound,
    tolerance_for,
    ulp_distances,
)
from numerics.testing.exhaustive import ExhaustiveReport, exhaustive
from numerics.testing.stochastic import assert_rounded_from, assert_stochastic_rounding
from numerics.testing.tolerances import elementwise_bound, softmax_bound

__all__ = [
    "ALGORITHMS",
    "ExhaustiveReport",
    "assert_bitwise_equal",
    "assert_rounded_from",
    "assert_stochastic_rounding",
    "assert_ulp_close",
    "assert_within_bound",
    "elementwise_bound",
    "exhaustive",
    "register_profiles",
    "softmax_bound",
    "tolerance_for",
    "ulp_distances",
]


def __getattr__(name: str) -> Any:
    """``register_profiles``, imported on first use (it imports hypothesis)."""
    if name == "register_profiles":
        from numerics.testing.profiles import register_profiles

        return register_profiles
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
