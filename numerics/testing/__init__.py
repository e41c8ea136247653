"""Testing toolkit for kernel test suites: hypothesis strategies and ULP assertions.

Strategies live in :mod:`numerics.testing.strategies` (``values``, ``codes``,
``arrays``, ``ties``, ``near_ties``, ``formats``, ``roundings``); the
assertions are re-exported here.  The pytest plugin
(:mod:`numerics.testing.plugin`) adds ``--numerics-seed`` and the
``numerics_seed`` / ``numerics_rng`` fixtures; :mod:`numerics.testing.profiles`
holds the hypothesis profiles ``dev``, ``ci`` and ``thorough``.

Importing this package registers nothing and loads no profile.
"""

from __future__ import annotations

from numerics.testing.assertions import (
    ALGORITHMS,
    assert_bitwise_equal,
    assert_ulp_close,
    assert_within_bound,
    tolerance_for,
    ulp_distances,
)
from numerics.testing.profiles import register_profiles

__all__ = [
    "ALGORITHMS",
    "assert_bitwise_equal",
    "assert_ulp_close",
    "assert_within_bound",
    "register_profiles",
    "tolerance_for",
    "ulp_distances",
]
