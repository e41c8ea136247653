"""Statistics and fingerprints of every tensor of a checkpoint, streamed in chunks."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.checkpoint.run import Progress, check_run_options, execute
from numerics.checkpoint.sources import (
    Source,
    TensorFileError,
    TensorRef,
    check_ref,
    open_source,
)
from numerics.fingerprint import (
    ALGORITHM,
    BLOCK_BYTES,
    Fingerprint,
    block_digests,
    code_stream,
    combine_digests,
    hashed_dtype,
)
from numerics.formats import Format, as_format
from numerics.stats import (
    CANDIDATE_FORMATS,
    StatsPartial,
    TensorStats,
    finish_stats,
    stats_chunk,
)
from numerics.tensors import fs_path

__all__ = [
    "CHUNK",
    "CheckpointHash",
    "CheckpointStats",
    "hash_source",
    "stats_source",
]

#: Elements per chunk: one task each (large enough that the tasks' overhead is small).
CHUNK = 1 << 22
_MAGIC = b"numerics.checkpoint/2\n"
#: Elements converted to float64 at a time by a stats task (bounds its temporaries).
_CONVERT = 1 << 20


@dataclass(frozen=True)
class CheckpointStats:
    """Per-tensor statistics and those of all elements together.

    ``tensors`` pairs each tensor (by name, sorted) with its
    :class:`~numerics.stats.TensorStats`; ``total`` treats every element of
    every tensor as one population (fractions of all elements).

    Attributes
    ----------
    path : str
        The source's path.
    tensors : tuple of (TensorRef, TensorStats)
        Each tensor and its statistics, by name.
    total : TensorStats
        The statistics of all elements together.
    """

    path: str
    tensors: tuple[tuple[TensorRef, TensorStats], ...]
    total: TensorStats


@dataclass(frozen=True)
class CheckpointHash:
    """A checkpoint's fingerprint and each tensor's.

    ``digest`` is SHA-256 over ``b"numerics.checkpoint/2\\n"`` and one line
    ``json.dumps([name, tensor digest]) + "\\n"`` per tensor in name order
    (Python's defaults: ``", "`` between the two, non-ASCII escaped as ``\\uXXXX``),
    each tensor's digest its :func:`numerics.fingerprint.fingerprint` (XXH64
    over each 1 MiB block of the tensor's codes, SHA-256 over those): it
    depends on the names, dtypes, shapes and bits of the tensors only, not on
    how they are sharded or ordered in files.  Meant to tell changed
    checkpoints apart, not to resist an adversary (XXH64 is not
    cryptographic).

    Attributes
    ----------
    path : str
        The source's path.
    digest : str
        The checkpoint's SHA-256 hex digest.
    tensors : tuple of (TensorRef, Fingerprint)
        Each tensor and its fingerprint, by name.
    canonical : bool
        Whether ``canonicalize=True`` was asked for (integer tensors are hashed as
        they are either way).
    algorithm : str
        :data:`numerics.fingerprint.ALGORITHM`.
    skipped : tuple of str
        Entries of the source that are not real-number tensors (complex, a torch
        dtype with no format such as packed ``float4_e2m1fn_x2``, objects): the digest
        leaves them out, so two sources differing only there hash alike
        (:attr:`numerics.checkpoint.Source.skipped`).
    """

    path: str
    digest: str
    tensors: tuple[tuple[TensorRef, Fingerprint], ...]
    canonical: bool
    algorithm: str = ALGORITHM
    skipped: tuple[str, ...] = ()


def _values(ref: TensorRef, x: np.ndarray) -> tuple[np.ndarray, Format | None]:
    """A chunk as :func:`numerics.stats.stats_chunk` takes it: float32/float64 values,
    integers, or narrow codes."""
    fmt = ref.format
    if fmt is None:
        return x, None  # integers and bools: stats_chunk reads them exactly
    if x.dtype in (np.float32, np.float64):
        return x, None
    if fmt.bits <= 16:
        return x.view(np.dtype(f"u{x.dtype.itemsize}")), fmt
    from numerics.encoding import decode

    return np.asarray(decode(x.view(fmt.code_dtype), fmt), np.float64), None


def _stats_item(item: tuple[TensorRef, int, int, tuple[Format, ...]], mmap: bool) \
        -> StatsPartial:
    ref, start, stop, formats = item
    x = ref.read(start, stop, mmap=mmap)
    if x.dtype in (np.float32, np.float64) or ref.format is not None and ref.format.bits <= 16:
        values, fmt = _values(ref, x)  # read in place: the whole chunk in one call
        return stats_chunk(values, formats, fmt=fmt)
    part = StatsPartial.empty(len(formats))
    for s in range(0, x.size, _CONVERT):  # converted to float64 a part at a time
        values, fmt = _values(ref, x[s:s + _CONVERT])
        part.add(stats_chunk(values, formats, fmt=fmt))
    return part


def _source(src: Source | str | bytes | os.PathLike[str],
            raw_format: Format | str | None) -> Source:
    s = src if isinstance(src, Source) else open_source(fs_path(src, "src"))
    if raw_format is not None:
        fmt = as_format(raw_format, arg="raw_format")
        if not any(t.is_raw for t in s.tensors):
            first = (f" ({s.tensors[0].name!r} is {s.tensors[0].dtype_name})"
                     if s.tensors else "")
            raise ValueError(
                f"Got raw_format={raw_format!r}, but no tensor of {s.path!r} is raw bytes"
                f"{first}; raw_format only reads raw bytes (numpy '<V2') as a format")
        s = s.with_raw_format(fmt)
    raw = [t for t in s.tensors if t.is_raw]
    if raw:
        raise TensorFileError(
            f"Got tensor {raw[0].name!r} in {raw[0].file!r} of raw dtype {raw[0].stored_dtype}; "
            "give its format with -f to read the bytes as it")
    return s


def stats_source(
    src: Source | str | bytes | os.PathLike[str],
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
        The source (see :func:`numerics.checkpoint.open_source`).
    formats : tuple of Format or str
        The candidate formats (a single format or name is taken as a 1-tuple).
    raw_format : Format or str, optional
        Read raw tensors (numpy's void dtype) as codes of this format; a
        ValueError where the source holds no raw tensor.
    chunk, threads, client, progress
        As for :func:`numerics.checkpoint.diff_sources`.

    Returns
    -------
    CheckpointStats
        Each tensor's statistics and those of all elements together.

    Raises
    ------
    TypeError, ValueError
        For an invalid argument (the message names it).
    TensorFileError
        If the source cannot be read.

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
    if not isinstance(formats, (tuple, list)):
        raise TypeError(f"Got formats={formats!r}, but it must be a format or a tuple of "
                        "formats (Format or name)")
    fmts = tuple(as_format(f, arg="formats") for f in formats)
    check_run_options(threads=threads, client=client, progress=progress, chunk=chunk)
    s = _source(src, raw_format)
    parts = {t.name: StatsPartial.empty(len(fmts)) for t in s.tensors}
    items = [(t, start, min(start + chunk, t.size), fmts) for t in s.tensors
             for start in range(0, t.size, chunk)]
    sizes = [t.stored_bytes(start, stop) for t, start, stop, _ in items]

    def fold(item: tuple[TensorRef, int, int, tuple[Format, ...]], part: StatsPartial) -> None:
        parts[item[0].name].add(part)

    execute(_stats_item, items, fold, sizes=sizes, threads=threads, client=client,
            progress=progress)
    total = StatsPartial.empty(len(fmts))
    for p in parts.values():
        total.add(p)
    return CheckpointStats(s.path, tuple((t, finish_stats(parts[t.name], fmts))
                                         for t in s.tensors), finish_stats(total, fmts))


#: A hash task: a tensor, canonicalise?, and its elements [start, stop) (whole blocks).
_HashItem = tuple[TensorRef, bool, int, int]


def _codes(ref: TensorRef, x: np.ndarray) -> np.ndarray:
    """Elements as read, as the fingerprint takes them (codes of a float format)."""
    if ref.format is None:
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(ref.format.code_dtype, copy=False)


def _hashed(ref: TensorRef) -> tuple[str, np.dtype]:
    return hashed_dtype(_codes(ref, np.empty(0, ref.dtype)).dtype, ref.format)


def _hash_item(item: _HashItem, mmap: bool) -> np.ndarray:
    ref, canonical, start, stop = item
    codes = _codes(ref, ref.read(start, stop, mmap=mmap))
    stream_dtype = _hashed(ref)[1]
    if not canonical:  # hashed in place
        return block_digests(code_stream(codes, ref.format, stream_dtype))
    per = BLOCK_BYTES // stream_dtype.itemsize  # canonical codes are a copy: a block at a time
    return np.concatenate([np.empty(0, np.uint64)] + [
        block_digests(code_stream(codes[s:s + per], ref.format, stream_dtype, canonicalize=True))
        for s in range(0, codes.size, per)])


def _fingerprints(tensors: tuple[TensorRef, ...], canonicalize: bool, chunk: int,
                  threads: int | None, client: Any,
                  progress: Progress | None) -> dict[str, Fingerprint]:
    """Each tensor's fingerprint; every run of whole blocks of every tensor is one task."""
    items: list[_HashItem] = []
    for t in tensors:
        per_block = BLOCK_BYTES // _hashed(t)[1].itemsize
        per = max(1, chunk // per_block) * per_block
        canonical = bool(canonicalize) and t.format is not None
        items += [(t, canonical, start, min(start + per, t.size))
                  for start in range(0, t.size, per)]
    sizes = [t.stored_bytes(start, stop) for t, _, start, stop in items]
    parts: dict[str, dict[int, np.ndarray]] = {t.name: {} for t in tensors}

    def fold(item: _HashItem, digests: np.ndarray) -> None:
        parts[item[0].name][item[2]] = digests

    execute(_hash_item, items, fold, sizes=sizes, threads=threads, client=client,
            progress=progress)
    out = {}
    for t in tensors:
        name = _hashed(t)[0]
        blocks = [parts[t.name][k] for k in sorted(parts[t.name])]
        out[t.name] = Fingerprint(combine_digests(name, t.shape, blocks), name, t.shape,
                                  bool(canonicalize) and t.format is not None)
    return out


def _check_hash_options(canonicalize: object, chunk: object, threads: object, client: object,
                        progress: object) -> None:
    if not isinstance(canonicalize, (bool, np.bool_)):
        raise TypeError(f"Got canonicalize={canonicalize!r}, but it must be a bool")
    check_run_options(threads=threads, client=client, progress=progress, chunk=chunk)


def tensor_fingerprint(ref: TensorRef, *, canonicalize: bool = False, chunk: int = CHUNK,
                       threads: int | None = None, client: Any = None,
                       progress: Progress | None = None) -> Fingerprint:
    """The :func:`numerics.fingerprint.fingerprint` of one tensor, streamed from its file.

    Runs of whole blocks are hashed on ``threads`` threads (or as tasks on a Dask
    ``client``); ``progress`` is called with the bytes of each run.

    Parameters
    ----------
    ref : TensorRef
        The tensor (of :attr:`Source.tensors`).
    canonicalize : bool, default False
        Make ``-0`` into ``+0`` and every NaN the canonical NaN first (float formats
        only).
    chunk : int
        Elements per task, rounded down to whole 1 MiB blocks (the digest does not
        depend on it).
    threads, client, progress
        As for :func:`numerics.checkpoint.diff_sources`.

    Returns
    -------
    Fingerprint
        The same fingerprint :func:`numerics.fingerprint.fingerprint` gives the
        tensor's codes (or integers) read whole.

    Raises
    ------
    TypeError, ValueError
        For an invalid argument (the message names it).

    Examples
    --------
    >>> import tempfile, os
    >>> from numerics.fingerprint import fingerprint
    >>> d = tempfile.mkdtemp()
    >>> x = np.arange(600_000, dtype=np.int32)
    >>> np.save(os.path.join(d, "x.npy"), x)
    >>> ref = open_source(os.path.join(d, "x.npy")).tensors[0]
    >>> tensor_fingerprint(ref, chunk=1).digest == fingerprint(x).digest
    True
    """
    check_ref(ref, "ref")
    _check_hash_options(canonicalize, chunk, threads, client, progress)
    return _fingerprints((ref,), canonicalize, chunk, threads, client, progress)[ref.name]


def hash_source(
    src: Source | str | bytes | os.PathLike[str],
    *,
    canonicalize: bool = False,
    raw_format: Format | str | None = None,
    chunk: int = CHUNK,
    threads: int | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> CheckpointHash:
    """Fingerprint every tensor of a source, and the source as a whole (:class:`CheckpointHash`).

    Every run of ``chunk`` elements (whole 1 MiB blocks) of every tensor is
    one task; the runs' block digests are combined in order (see
    :class:`CheckpointHash`), so neither ``chunk`` nor ``threads`` nor a
    Dask ``client`` changes a digest.

    Parameters
    ----------
    src : Source or path
        The source (see :func:`numerics.checkpoint.open_source`).
    canonicalize : bool
        Make ``-0`` into ``+0`` and every NaN the canonical NaN first.
    raw_format : Format or str, optional
        Read raw tensors (numpy's void dtype) as codes of this format; a
        ValueError where the source holds no raw tensor.
    chunk, threads, client, progress
        As for :func:`numerics.checkpoint.diff_sources`.

    Returns
    -------
    CheckpointHash
        The checkpoint's digest and each tensor's fingerprint.

    Raises
    ------
    TypeError, ValueError
        For an invalid argument (the message names it).

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
    _check_hash_options(canonicalize, chunk, threads, client, progress)
    s = _source(src, raw_format)
    prints = _fingerprints(s.tensors, canonicalize, chunk, threads, client, progress)
    h = hashlib.sha256(_MAGIC)
    for t in s.tensors:
        h.update((json.dumps([t.name, prints[t.name].digest]) + "\n").encode())
    return CheckpointHash(s.path, h.hexdigest(), tuple((t, prints[t.name]) for t in s.tensors),
                          bool(canonicalize), skipped=tuple(s.skipped))
