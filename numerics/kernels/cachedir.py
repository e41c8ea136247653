"""Where numba keeps the compiled kernels when it cannot keep them beside the package.

Every kernel is ``numba.njit(cache=True)``: numba writes the compiled code to
``__pycache__`` beside the module, or, where that is not writable (a read-only
install), to the user's cache folder (``~/.cache/numba``).  Where neither is
writable (a read-only install run by a user without a home, as in many
containers), numba refuses to define a cached function at all ("cannot cache
function ...: no locator available"), so the first use of any kernel would fail.

Importing this module (every kernel module does, before its first kernel) checks
that case once, by defining a cached function the way the kernels are defined, and
then points numba at a private folder in the system's temporary directory, as the
``NUMBA_CACHE_DIR`` environment variable would; a ``NUMBA_CACHE_DIR`` the user set
is left alone.

Examples
--------
>>> ensure_cache_dir() is None  # here the package's own folder is writable
True
"""

from __future__ import annotations

import os
import stat
import tempfile

import numba
from numba import config

__all__ = ["ensure_cache_dir"]


def _probe(x: int) -> int:  # pragma: no cover - never called, only defined as cached
    return x


def _private_folder() -> str:
    """A folder in the temporary directory that only this user can write: the same one
    in every process (so the cache is reused) when it is safe, else a fresh one."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"numerics-numba-cache-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
        if (not hasattr(os, "getuid") or info.st_uid == uid) and \
                not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return path
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="numerics-numba-cache-")


def ensure_cache_dir() -> str | None:
    """Point numba's cache at a private temporary folder where it has no writable place
    for this package's kernels; returns that folder, or None where nothing was needed."""
    if getattr(config, "CACHE_DIR", None):
        return None
    try:
        numba.njit(cache=True)(_probe)
        return None
    except RuntimeError:  # "cannot cache function ...: no locator available"
        folder = _private_folder()
        config.CACHE_DIR = folder  # type: ignore[attr-defined]
        return folder


ensure_cache_dir()
