"""Hypothesis settings profiles ``dev``, ``ci`` and ``thorough``.

Nothing is registered on import: call :func:`register_profiles` (the pytest
plugin :mod:`numerics.testing.plugin` does, before any ``conftest.py`` is
read, so a project's own profiles of the same names win), then load one with
``pytest --hypothesis-profile=ci`` or ``hypothesis.settings.load_profile("ci")``.

=========  ============  ========  =================================================
profile    max_examples  deadline  other settings
=========  ============  ========  =================================================
dev        20            None      fast local edit-test loops
ci         200           None      ``derandomize=True`` (same examples every run),
                                   ``database=None``, ``print_blob=True``
thorough   2000          None      nightly sweeps
=========  ============  ========  =================================================

``deadline=None`` everywhere: emulated low-precision kernels have uneven run
times and a deadline would make tests flaky.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings

__all__ = ["PROFILES", "register_profiles"]

#: The settings of each profile, by name.
PROFILES: dict[str, dict[str, Any]] = {
    "dev": {"max_examples": 20, "deadline": None},
    "ci": {"max_examples": 200, "deadline": None, "derandomize": True, "database": None,
           "print_blob": True},
    "thorough": {"max_examples": 2000, "deadline": None},
}


def register_profiles() -> tuple[str, ...]:
    """Register the ``dev``, ``ci`` and ``thorough`` profiles; return their names.

    Registering replaces any profile of the same name; it does not load one.

    Examples
    --------
    >>> register_profiles()
    ('dev', 'ci', 'thorough')
    >>> settings.get_profile("ci").max_examples
    200
    """
    for name, kwargs in PROFILES.items():
        settings.register_profile(name, **kwargs)
    return tuple(PROFILES)
