"""Shared test configuration: the hypothesis profile of the project's own default tier.

``numerics-tier`` (loaded here) is derandomized so that a green run stays green, with
hypothesis's default number of examples.  The toolkit's own profiles, registered by the
``numerics`` pytest plugin, stay available: ``pytest --hypothesis-profile=dev`` explores
with fresh random examples, ``--hypothesis-profile=thorough`` runs ten times more.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "numerics-tier",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("numerics-tier")
