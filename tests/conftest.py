"""Shared test configuration: hypothesis profiles for the project's own suite.

``ci`` (the default) is derandomized so that a green run stays green; run
``pytest --hypothesis-profile=dev`` to explore with fresh random examples.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci")
