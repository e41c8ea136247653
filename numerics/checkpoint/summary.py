"""Statistics and fingerprints of every tensor of a checkpoint, streamed in chunks."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.checkpoint.run import Progress, execute
from numerics.checkpoint.sources import Source, TensorFileError, TensorRef, open_source
from numerics.fingerprint import Fingerprint, fingerprint
from numerics.formats import Format, as_format
from numerics.stats import (
    CANDIDATE_FORMATS,
    StatsPartial,
    TensorStats,
    finish_stats,
    stats_chunk,
)

__all__ = [
    "CHUNK",
    "CheckpointHash",
    "CheckpointStats",
    "hash_source",
    "stats_source",
]

#: Elements per chunk: one task each (small enough that a chunk's passes stay in cache).
CHUNK = 1 << 20
_MAGIC = b"numerics.checkpoint/1\n"


@dataclass(frozen=True)
class CheckpointStats:
    """Per-tensor statistics and those of all elements together.

    ``tensors`` pairs each tensor (by name, sorted) with its
    :class:`~numerics.stats.TensorStats`; ``total`` treats every element of
    every tensor as one population (fractions of all elements).
    """

    path: str
    tensors: tuple[tuple[TensorRef, TensorStats], ...]
    total: TensorStats


@dataclass(frozen=True)
class CheckpointHash:
    """A checkpoint's fingerprint and each tensor's.

    ``digest`` is SHA-256 over ``b"numerics.checkpoint/1\\n"`` and one line
    ``json.dumps([name, tensor digest]) + "\\n"`` per tensor in name order:
    it depends on the names, dtypes, shapes and bits of the tensors only, not
    on how they are sharded or ordered in files.
    """

    path: str
    digest: str
    tensors: tuple[tuple[TensorRef, Fingerprint], ...]
    canonical: bool
    algorithm: str = "sha256"


def _values(ref: TensorRef, x: np.ndarray) -> tuple[np.ndarray, Format | None]:
    """A chunk as the stats kernel takes it: float32/float64 values, or narrow codes."""
    fmt = ref.format
    if fmt is None:
        return x.astype(np.float64), None
    if x.dtype in (np.float32, np.float64):
        return x, None
    if fmt.bits <= 16:
        return x.view(np.dtype(f"u{x.dtype.itemsize}")), fmt
    from numerics.encoding import decode

    return np.asarray(decode(x.view(fmt.code_dtype), fmt), np.float64), None


def _stats_item(item: tuple[TensorRef, int, int, tuple[Format, ...]], mmap: bool) \
        -> StatsPartial:
    ref, start, stop, formats = item
    values, fmt = _values(ref, ref.read(start, stop, mmap=mmap))
    return stats_chunk(values, formats, fmt=fmt)


def _source(src: Source | str | os.PathLike[str], raw_format: Format | str | None) -> Source:
    s = src if isinstance(src, Source) else open_source(src)
    if raw_format is not None:
        s = s.with_raw_format(as_format(raw_format))
    raw = [t for t in s.tensors if t.is_raw]
    if raw:
        raise TensorFileError(
            f"Got tensor {raw[0].name!r} in {raw[0].file!r} of raw dtype {raw[0].stored_dtype}; "
            "give its format with -f to read the bytes as it")
    return s


def stats_source(
    src: Source | str | os.PathLike[str],
    *,
    formats: tuple[Format | str, ...] = CANDIDATE_FORMATS,
    raw_format: Format | str | None = None,
    chunk: int = CHUNK,
    threads: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> CheckpointStats:
    """:func:`numerics.stats.tensor_stats` of every tensor of a source, and of all together.

    Parameters
    ----------
    src : Source or path
    formats : tuple of Format or str
        The candidate formats.
    raw_format : Format or str, optional
        Read raw tensors (numpy's void dtype) as codes of this format.
    chunk, threads, client, progress
        As for :func:`numerics.checkpoint.diff_sources`.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.savez(os.path.join(d, "m.npz"), w=np.array([1.0, 500.0], np.float32),
    ...          i=np.array([0, 3], np.int64))
    >>> s = stats_source(os.path.join(d, "m.npz"), formats=("e4m3fn",))
    >>> [(t.name, st.amax, st.fits[0].saturate) for t, st in s.tensors]
    [('i', 3.0, 0.0), ('w', 500.0, 0.5)]
    >>> s.total.count, s.total.zero, s.total.fits[0].saturate
    (4, 1, 0.25)
    """
    if isinstance(formats, (str, Format)):
        formats = (formats,)
    fmts = tuple(as_format(f) for f in formats)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"Got {chunk=!r}, but it must be a positive int")
    s = _source(src, raw_format)
    parts = {t.name: StatsPartial.empty(len(fmts)) for t in s.tensors}
    items = [(t, start, min(start + chunk, t.size), fmts) for t in s.tensors
             for start in range(0, t.size, chunk)]
    sizes = [(stop - start) * t.dtype.itemsize for t, start, stop, _ in items]

    def fold(item: tuple[TensorRef, int, int, tuple[Format, ...]], part: StatsPartial) -> None:
        parts[item[0].name].add(part)

    execute(_stats_item, items, fold, sizes=sizes, threads=threads, client=client,
            progress=progress)
    total = StatsPartial.empty(len(fmts))
    for p in parts.values():
        total.add(p)
    return CheckpointStats(s.path, tuple((t, finish_stats(parts[t.name], fmts))
                                         for t in s.tensors), finish_stats(total, fmts))


def tensor_fingerprint(ref: TensorRef, *, canonicalize: bool = False, chunk: int = CHUNK,
                       mmap: bool = True, progress: Progress | None = None) -> Fingerprint:
    """The :func:`numerics.fingerprint.fingerprint` of one tensor, streamed from its file.

    ``progress`` is called with the bytes of each chunk read.
    """
    fmt = ref.format

    def get(start: int, stop: int) -> np.ndarray:
        x = ref.read(start, stop, mmap=mmap)
        if progress is not None and x.size:
            progress(x.nbytes)
        if fmt is None:
            return x
        return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(fmt.code_dtype, copy=False)

    return fingerprint(get, ref.shape, fmt=fmt, canonicalize=canonicalize and fmt is not None,
                       chunk=chunk)


def _hash_item(item: tuple[TensorRef, bool, int], mmap: bool) -> Fingerprint:
    ref, canonical, chunk = item
    return tensor_fingerprint(ref, canonicalize=canonical, chunk=chunk, mmap=mmap)


def hash_source(
    src: Source | str | os.PathLike[str],
    *,
    canonicalize: bool = False,
    raw_format: Format | str | None = None,
    chunk: int = CHUNK,
    threads: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> CheckpointHash:
    """Fingerprint every tensor of a source, and the source as a whole (:class:`CheckpointHash`).

    Each tensor is one task (SHA-256 is sequential); tensors run in parallel.

    Examples
    --------
    >>> import tempfile, os
    >>> from safetensors.numpy import save_file
    >>> d = tempfile.mkdtemp()
    >>> w = {"a": np.ones(3, np.float32), "b": np.arange(4, dtype=np.int32)}
    >>> save_file(w, os.path.join(d, "one.safetensors"))
    >>> os.mkdir(os.path.join(d, "two"))
    >>> save_file({"b": w["b"]}, os.path.join(d, "two", "x.safetensors"))
    >>> save_file({"a": w["a"]}, os.path.join(d, "two", "y.safetensors"))
    >>> hash_source(os.path.join(d, "one.safetensors")).digest == \\
    ...     hash_source(os.path.join(d, "two")).digest
    True
    """
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"Got {chunk=!r}, but it must be a positive int")
    s = _source(src, raw_format)
    prints: dict[str, Fingerprint] = {}
    items = [(t, bool(canonicalize), chunk) for t in s.tensors]
    sizes = [t.nbytes for t in s.tensors]

    def fold(item: tuple[TensorRef, bool, int], fp: Fingerprint) -> None:
        prints[item[0].name] = fp

    if client is None and progress is not None:  # local threads report chunk by chunk
        lock = threading.Lock()

        def report(n: int) -> None:
            with lock:
                progress(n)

        def local(item: tuple[TensorRef, bool, int], mmap: bool) -> Fingerprint:
            return tensor_fingerprint(item[0], canonicalize=item[1], chunk=item[2], mmap=mmap,
                                      progress=report)

        execute(local, items, fold, sizes=[0] * len(items), threads=threads)
    else:
        execute(_hash_item, items, fold, sizes=sizes, threads=threads, client=client,
                progress=progress)
    h = hashlib.sha256(_MAGIC)
    for t in s.tensors:
        h.update((json.dumps([t.name, prints[t.name].digest]) + "\n").encode())
    return CheckpointHash(s.path, h.hexdigest(), tuple((t, prints[t.name]) for t in s.tensors),
                          bool(canonicalize))
