"""Whole checkpoints: list, compare, summarise and fingerprint every tensor, streamed.

A source is a file, a directory of shards, an index or ``PATH:KEY`` (see
:mod:`numerics.checkpoint.sources`); every operation reads tensors in chunks
through memory maps (bounded memory whatever the size), on threads or, with a
``client=``, as tasks on a ``dask.distributed`` cluster, and gives the same
result either way.

* :func:`open_source` -- the tensors a path names (``fpinspect ls``);
* :func:`diff_sources` -- tensor-by-tensor comparison (``fpinspect diff A B``);
* :func:`stats_source` -- range statistics and format fit (``fpinspect stats``);
* :func:`hash_source` -- fingerprints independent of sharding (``fpinspect hash``).
"""

from numerics.checkpoint.diff import CheckpointDiff, TensorDiff, coarser, diff_sources
from numerics.checkpoint.sources import Source, TensorFileError, TensorRef, open_source
from numerics.checkpoint.summary import (
    CheckpointHash,
    CheckpointStats,
    hash_source,
    stats_source,
    tensor_fingerprint,
)

__all__ = [
    "CheckpointDiff",
    "CheckpointHash",
    "CheckpointStats",
    "Source",
    "TensorDiff",
    "TensorFileError",
    "TensorRef",
    "coarser",
    "diff_sources",
    "hash_source",
    "open_source",
    "stats_source",
    "tensor_fingerprint",
]
