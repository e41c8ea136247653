"""``probe.verify``: run a recovered model and the black box on fresh random inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.formats import as_format
from numerics.probe.matmul import MAX_BATCH
from numerics.probe.model import MatmulModel
from numerics.probe.result import ProbeResult, SumResult
from numerics.probe.vectors import (
    BlackBox,
    check_int,
    check_seed,
    input_dtype,
    random_matrices,
    random_sum_inputs,
)

__all__ = ["MAX_TRIALS", "VerifyResult", "verify"]

#: The most calls :func:`verify` makes (``fpinspect probe --verify`` is bounded by it too).
MAX_TRIALS = 1_000_000


@dataclass(frozen=True)
class VerifyResult:
    """How often the model reproduced the black box bit for bit."""

    #: Outputs compared.
    outputs: int
    #: Outputs whose float64 bit patterns were equal (the sign of zero counts).
    matches: int
    #: The first output that differed: its inputs, the model's and the box's value.
    first_counterexample: dict[str, Any] | None

    @property
    def fraction(self) -> float:
        """``matches / outputs``."""
        return self.matches / self.outputs if self.outputs else 1.0


def verify(f_or_mm: Callable[..., Any], model: ProbeResult | MatmulModel | SumResult, *,
           trials: int = 4, seed: int = 12345, batch: int | None = None) -> VerifyResult:
    """Compare ``f_or_mm`` with ``model`` on random inputs over many binades.

    Matrix multiplies (``model`` a :class:`ProbeResult` or :class:`MatmulModel`):
    ``trials`` calls with ``A`` (batch, k) and ``B`` (k, batch) of random values of
    the input format (exponents over a dozen binades or more, random signs, a
    quarter of the products cancelling another exactly or nearly), so
    ``trials * batch**2`` outputs; ``batch`` defaults to the probed batch of a
    :class:`ProbeResult` (a kernel may order its sums by size) and to 64 for a
    :class:`MatmulModel`.  Sums (``model`` a :class:`SumResult`): ``trials``
    calls with random vectors of the same kind.

    ``trials`` is an int in ``[1, MAX_TRIALS]`` (1,000,000), ``batch`` None or an int
    in ``[1, MAX_BATCH]`` (4096) and ``seed`` an int ``>= 0``; ValueError (TypeError
    for a seed that is not an int) otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from numerics.probe import probe_sum
    >>> f = lambda x: x[0] + x[1] + x[2]
    >>> v = verify(f, probe_sum(f, 3), trials=50)
    >>> v.fraction, v.outputs
    (1.0, 50)
    """
    trials = check_int(trials, "trials", 1, MAX_TRIALS)
    if batch is not None:
        batch = check_int(batch, "batch", 1, MAX_BATCH)
    rng = np.random.default_rng(check_seed(seed))
    if isinstance(model, SumResult):
        return _verify_sum(f_or_mm, model, trials, rng)
    if isinstance(model, ProbeResult):
        if len(model.classes) > 1 or batch is None:
            batch = model.batch
        return _verify_matmul(f_or_mm, model.model, model.predict, trials, int(batch), rng)
    if not isinstance(model, MatmulModel):
        raise TypeError(f"Got model of type {type(model).__name__}, but verify takes a "
                        "ProbeResult, MatmulModel or SumResult")
    return _verify_matmul(f_or_mm, model, model.matmul, trials,
                          64 if batch is None else batch, rng)


def _verify_matmul(mm: Callable[..., Any], model: MatmulModel,
                   predict: Callable[[np.ndarray, np.ndarray], np.ndarray], trials: int,
                   batch: int, rng: np.random.Generator) -> VerifyResult:
    fin, fout = as_format(model.input_format), as_format(model.output_format)
    k = model.k
    box = BlackBox(mm, "mm")
    dtype = np.float64 if fin.precision > 24 or fin.emax > 127 else np.float32
    outputs = matches = 0
    first: dict[str, Any] | None = None
    for _ in range(trials):
        A, B = random_matrices(rng, batch, k, batch, fin, fout)
        got = box((batch, batch), A.astype(dtype), B.astype(dtype))
        want = predict(A, B)
        same = want.view(np.uint64) == got.view(np.uint64)
        outputs += same.size
        matches += int(same.sum())
        if first is None and not same.all():
            i, j = (int(t) for t in np.argwhere(~same)[0])
            first = {"row": A[i].tolist(), "column": B[:, j].tolist(),
                     "model": float(want[i, j]), "observed": float(got[i, j])}
    return VerifyResult(outputs=outputs, matches=matches, first_counterexample=first)


def _verify_sum(f: Callable[..., Any], model: SumResult, trials: int,
                rng: np.random.Generator) -> VerifyResult:
    fmt = as_format(model.fmt)
    box = BlackBox(f, "f")
    dtype = input_dtype(fmt)
    outputs = matches = 0
    first = None
    chunk = max(1, 2**20 // max(model.n, 1))  # about 8 MiB of terms at a time
    for t0 in range(0, trials, chunk):
        X = random_sum_inputs(rng, min(chunk, trials - t0), model.n, fmt)
        got = np.array([float(box((), x.astype(dtype))) for x in X])
        want = model.predict(X)
        same = want.view(np.uint64) == got.view(np.uint64)
        outputs += int(same.size)
        matches += int(same.sum())
        if first is None and not same.all():
            i = int(np.flatnonzero(~same)[0])
            first = {"x": X[i].tolist(), "model": float(want[i]), "observed": float(got[i])}
    return VerifyResult(outputs=outputs, matches=matches, first_counterexample=first)
