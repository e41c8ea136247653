"""pytest plugin (entry point ``pytest11: numerics``): a seed for stochastic rounding.

Options
-------
``--numerics-seed=N``
    The seed of the ``numerics_seed`` and ``numerics_rng`` fixtures: a
    non-negative int in decimal (leading zeros allowed: ``007`` is 7) or
    with a ``0x``/``0o``/``0b`` prefix.  The default is 0, so every run is
    reproducible without flags; ``--numerics-seed=random`` draws a fresh seed,
    which the header shows so a failing run can be replayed.  Under
    pytest-xdist every worker uses the seed the controller drew and printed.

The seed is printed in the report header (``numerics: --numerics-seed=0``)
and added as a "numerics" section to the report of every failing test that
used one of the fixtures.  The plugin also registers the hypothesis profiles
``dev``, ``ci`` and ``thorough`` (:mod:`numerics.testing.profiles`); load one
with ``--hypothesis-profile=NAME``.

Fixtures
--------
``numerics_seed`` (session)
    The int seed.
``numerics_rng`` (function)
    ``numpy.random.default_rng([seed, crc32(test node id)])``: a fresh
    generator per test, independent of test order and selection; pass it as
    ``rng=`` to ``encode(..., rounding="sr")``.

Under ``@given`` use :func:`numerics.testing.strategies.seeds` or
:func:`~numerics.testing.strategies.rngs` instead: a function-scoped fixture
is created once per test, not per example, so its generator's state would
carry from one example to the next (a failing example would not replay),
and hypothesis rejects such fixtures (health check
``function_scoped_fixture``).  A drawn seed shrinks and replays.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

__all__ = [
    "numerics_rng",
    "numerics_seed",
    "pytest_addoption",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_makereport",
]

_KEY = pytest.StashKey[int]()


def _parse_seed(text: str) -> int | str:
    if text == "random":
        return text
    try:
        # plain decimal digits are decimal, leading zeros included ("007" is 7); other
        # text as Python writes ints ("0x2A", "1_000")
        value = int(text, 10) if text.isascii() and text.isdigit() else int(text, 0)
    except ValueError:
        raise pytest.UsageError(
            f"Got --numerics-seed={text!r}, but it must be a non-negative int or 'random' "
            "(decimal digits, or an int with a 0x/0o/0b prefix)"
        ) from None
    if value < 0:
        raise pytest.UsageError(f"Got --numerics-seed={value}, but it must be >= 0")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--numerics-seed`` and register the hypothesis profiles (pytest hook).

    Parameters
    ----------
    parser : pytest.Parser
        pytest's command-line parser; the option goes in its ``numerics`` group.
    """
    group = parser.getgroup("numerics")
    group.addoption("--numerics-seed", action="store", default="0", metavar="N|random",
                    help="seed of the numerics_seed / numerics_rng fixtures (default 0; "
                         "'random' draws one and prints it)")
    # Registered here, before conftest.py files are imported, so that a project's own
    # profiles of the same names replace these.
    # hypothesis is a test extra: without it the plugin still gives the seed fixtures.
    try:
        from numerics.testing.profiles import register_profiles
    except ImportError:  # pragma: no cover - hypothesis not installed
        return
    register_profiles()


def pytest_configure(config: pytest.Config) -> None:
    """Fix the session's seed (pytest hook): ``--numerics-seed``, a fresh one for
    ``random``, or under pytest-xdist the one the controller chose.

    Parameters
    ----------
    config : pytest.Config
        The session's config; the seed is kept in its stash.

    Raises
    ------
    pytest.UsageError
        If ``--numerics-seed`` is neither a non-negative int nor ``random``.
    """
    # a pytest-xdist worker takes the seed its controller chose (pytest_configure_node),
    # so that --numerics-seed=random gives every worker the seed the header shows
    given = getattr(config, "workerinput", {}).get("numerics_seed")
    if given is not None:
        config.stash[_KEY] = int(given)
        return
    raw = config.getoption("numerics_seed", default="0")
    seed = _parse_seed(str(raw))
    config.stash[_KEY] = secrets.randbits(32) if seed == "random" else int(seed)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist (when installed): hand the session's seed to each worker."""
    node.workerinput["numerics_seed"] = _seed(node.config)


def _seed(config: pytest.Config) -> int:
    return config.stash.get(_KEY, 0)


def pytest_report_header(config: pytest.Config) -> str:
    """The report header line naming the seed (pytest hook).

    Parameters
    ----------
    config : pytest.Config
        The session's config.

    Returns
    -------
    str
        ``"numerics: --numerics-seed=N"``.
    """
    return f"numerics: --numerics-seed={_seed(config)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, Any, None]:
    """Add a "numerics" section naming the seed to the report of a failing test that
    used ``numerics_seed`` or ``numerics_rng`` (pytest hook wrapper).

    Parameters
    ----------
    item : pytest.Item
        The test.
    call : pytest.CallInfo
        The call of the phase being reported.

    Yields
    ------
    None
        Once, while pytest makes the report (whose result the wrapper then reads).
    """
    outcome = yield
    report = outcome.get_result()
    used = {"numerics_seed", "numerics_rng"} & set(getattr(item, "fixturenames", ()))
    if report.failed and used:
        report.sections.append(
            ("numerics", f"replay with --numerics-seed={_seed(item.config)}")
        )


@pytest.fixture(scope="session")
def numerics_seed(pytestconfig: pytest.Config) -> int:
    """The seed given by ``--numerics-seed`` (default 0).

    Parameters
    ----------
    pytestconfig : pytest.Config
        The session's config (pytest's fixture).

    Returns
    -------
    int
        The seed, a non-negative int.
    """
    return _seed(pytestconfig)


@pytest.fixture
def numerics_rng(numerics_seed: int, request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the session seed and this test's node id.

    Parameters
    ----------
    numerics_seed : int
        The session's seed (the fixture above).
    request : pytest.FixtureRequest
        The requesting test (its node id).

    Returns
    -------
    numpy.random.Generator
        ``numpy.random.default_rng([seed, crc32(node id)])``, fresh per test.
    """
    return np.random.default_rng([numerics_seed, zlib.crc32(request.node.nodeid.encode())])
