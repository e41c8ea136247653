"""Shared test configuration: the hypothesis profile of the project's own default tier.

``numerics-tier`` (loaded here) is derandomized so that a green run stays green, with
hypothesis's default number of examples.  The toolkit's own profiles, registered by the
``numerics`` pytest plugin, stay available: ``pytest --hypothesis-profile=dev`` explores
with fresh random examples, ``--hypothesis-profile=thorough`` runs ten times more.

The variables by which a user's shell sets rich's colour and width are cleared for the
whole run (the tests that need one set it), so the rendered output the tests compare
does not depend on the machine: ``FORCE_COLOR=1`` (set by some CI services) put
escape codes into the captured tables, and ``TERM=dumb`` took the colour out of the
tests that force it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

for _name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM",
              "COLORTERM", "COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES"):
    os.environ.pop(_name, None)

settings.register_profile(
    "numerics-tier",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("numerics-tier")
