"""TurboQuant: rotation plus Lloyd-Max scalar quantization of vectors (arXiv 2504.19874).

Zandieh, Daliri, Hadian, Mirrokni, "TurboQuant: Online Vector Quantization with Near-optimal
Distortion Rate" (Google Research, 2025).

* ``variant="mse"``: a vector ``x`` is stored as its norm and, for the unit vector
  ``u = x / |x|``, the indices of ``Pi u`` in a ``bits``-bit Lloyd-Max codebook, where ``Pi``
  is a seeded uniformly random rotation (the Q of a QR of a Gaussian matrix, columns
  sign-fixed by ``sign(diag(R))`` so that Q is Haar distributed).  Each coordinate of ``Pi u``
  has the density ``f(t) ~ (1 - t**2)**((d-3)/2)`` on ``[-1, 1]`` (a Beta((d-1)/2, (d-1)/2)
  mapped to ``[-1, 1]``, near N(0, 1/d)); the codebook is the optimal scalar quantizer of that
  density, computed numerically (Lloyd's iteration on a fine grid) and cached.
* ``variant="prod"``: a ``(bits-1)``-bit ``mse`` quantizer plus a 1-bit QJL sketch (Zandieh,
  Daliri, Han, arXiv 2406.03482) of the residual ``r = u - u_mse``: the signs of ``S r`` for a
  seeded Gaussian ``S`` and ``|r|``.  The dequantized vector
  ``|x| (u_mse + sqrt(pi/2)/d * |r| * S^T sign(S r))`` gives inner products that are unbiased
  over the randomness of ``S``: ``E[s sign(s.r)] = sqrt(2/pi) r/|r|`` for ``s ~ N(0, I)``.

See proofs/turboquant.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["TurboQuant", "TurboQuantized", "lloyd_max_codebook"]

_VARIANTS = ("mse", "prod")


@lru_cache(maxsize=64)
def _codebook_cached(dim: int, bits: int) -> tuple[np.ndarray, np.ndarray, float]:
    n = 400_000
    lim = min(1.0, 14.0 / math.sqrt(dim))
    edges = np.linspace(-lim, lim, n + 1)
    mid = 0.5 * (edges[:-1] + edges[1:])
    with np.errstate(divide="ignore"):
        logf = 0.5 * (dim - 3) * np.log1p(-mid * mid)
    w = np.exp(logf - logf.max())
    w /= w.sum()
    cw = np.concatenate([[0.0], np.cumsum(w)])
    cxw = np.concatenate([[0.0], np.cumsum(w * mid)])
    levels = 1 << bits
    # start at the quantiles of the distribution
    c = np.interp((np.arange(levels) + 0.5) / levels, cw, edges)
    for _ in range(5000):
        b = 0.5 * (c[1:] + c[:-1])
        bb = np.concatenate([[-lim], b, [lim]])
        pw = np.interp(bb, edges, cw)
        px = np.interp(bb, edges, cxw)
        mass = np.diff(pw)
        new = np.where(mass > 0, np.diff(px) / np.where(mass > 0, mass, 1.0), c)
        new = 0.5 * (new - new[::-1])  # the density is even: keep the codebook symmetric
        done = np.max(np.abs(new - c)) < 1e-14
        c = new
        if done:
            break
    b = 0.5 * (c[1:] + c[:-1])
    bb = np.concatenate([[-lim], b, [lim]])
    mass = np.diff(np.interp(bb, edges, cw))
    second = float(np.sum(w * mid * mid))
    mse_coord = second - float(np.sum(mass * c * c))
    c.setflags(write=False)
    b.setflags(write=False)
    return c, b, mse_coord


def lloyd_max_codebook(dim: int, bits: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Optimal ``bits``-bit scalar codebook for a coordinate of a random unit vector in R^dim.

    Returns ``(centroids, boundaries, mse)``: ``2**bits`` increasing centroids, the
    ``2**bits - 1`` decision boundaries (midpoints), and the per-coordinate mean squared error
    (times ``dim`` it is the expected distortion ``E|u - u_hat|**2`` of a unit vector).

    Examples
    --------
    >>> c, b, mse = lloyd_max_codebook(128, 1)
    >>> round(float(c[1]) * math.sqrt(math.pi * 128 / 2), 2)  # ~ E|t| = sqrt(2/(pi d))
    1.0
    >>> round(128 * mse, 3)
    0.361
    """
    _check_int("dim", dim, 2, 1 << 16)
    _check_int("bits", bits, 1, 12)
    return _codebook_cached(int(dim), int(bits))


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Got {name}={value!r}, but it must be an int")
    if not lo <= value <= hi:
        raise ValueError(f"Got {name}={value!r}, but it must lie in [{lo}, {hi}]")


def unit_rows(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|x_i|, x_i / |x_i|)`` for the rows of a finite float64 matrix, without overflow or
    underflow: each row is first divided by its largest ``|entry|``, so the quotients lie in
    ``[-1, 1]`` and their sum of squares in ``[1, d]``, and ``1e155`` or ``1e-200`` entries
    give their true norms (a plain sum of squares overflows to inf or underflows to 0).
    Zero rows give norm 0 and a zero unit vector.  ValueError when a norm exceeds the
    float64 range.

    Examples
    --------
    >>> n, u = unit_rows(np.full((2, 4), [[1e155], [1e-200]]))
    >>> n.tolist(), u[0].tolist()
    ([2e+155, 2e-200], [0.5, 0.5, 0.5, 0.5])
    """
    big = np.max(np.abs(arr), axis=1, initial=0.0)
    safe = np.where(big > 0, big, 1.0)
    scaled = arr / safe[:, None]
    length = np.sqrt(np.sum(scaled * scaled, axis=1))
    with np.errstate(over="ignore"):
        norms = big * length
    if not np.all(np.isfinite(norms)):
        row = int(np.argmin(np.isfinite(norms)))
        raise ValueError(f"Got x whose row {row} has a Euclidean norm beyond the float64 "
                         "range; scale the input down")
    u = scaled / np.where(length > 0, length, 1.0)[:, None]
    return norms, u


@dataclass(frozen=True, eq=False)
class TurboQuantized:
    """Quantized vectors: codebook indices, norms and (``prod``) the QJL sketch."""

    #: ``(n, dim)`` codebook indices of the rotated unit vectors.
    indices: np.ndarray
    #: ``(n,)`` Euclidean norms of the input vectors.
    norms: np.ndarray
    #: ``(n, dim)`` int8 signs +-1 of ``S r`` (``prod`` only).
    qjl: np.ndarray | None
    #: ``(n,)`` norms of the unit-vector residuals ``r`` (``prod`` only).
    residual_norms: np.ndarray | None
    #: Parameters of the quantizer that produced it.
    dim: int
    bits: int
    variant: str
    seed: int


class TurboQuant:
    """TurboQuant vector quantizer (see the module docstring).

    Parameters
    ----------
    dim : int
        Vector dimension ``d >= 2``.
    bits : int
        Bits per coordinate in total: 1-8 for ``"mse"``, 2-9 for ``"prod"`` (``bits - 1`` for
        the codebook and 1 for the QJL sign).
    variant : {"mse", "prod"}
        Minimize the MSE, or make inner products unbiased.
    seed : int
        Seed of the rotation and of the QJL matrix.

    Examples
    --------
    >>> tq = TurboQuant(64, 4, seed=1)
    >>> x = np.random.default_rng(0).standard_normal((100, 64))
    >>> q = tq.quantize(x)
    >>> err = np.sum((tq.dequantize(q) - x) ** 2) / np.sum(x ** 2)
    >>> bool(4.0**-4 < err < math.sqrt(3) * math.pi / 2 * 4.0**-4)
    True
    """

    def __init__(self, dim: int, bits: int, *, variant: str = "mse", seed: int = 0) -> None:
        _check_int("dim", dim, 2, 1 << 16)
        if variant not in _VARIANTS:
            raise ValueError(f"Got {variant=}, but the only valid values are 'mse', 'prod'")
        if variant == "mse":
            _check_int("bits", bits, 1, 8)
        else:
            _check_int("bits", bits, 2, 9)
        _check_int("seed", seed, 0, 2**63 - 1)
        self.dim = int(dim)
        self.bits = int(bits)
        self.variant = variant
        self.seed = int(seed)
        self.mse_bits = self.bits if variant == "mse" else self.bits - 1
        rng = np.random.default_rng(self.seed)
        g = rng.standard_normal((self.dim, self.dim))
        qm, r = np.linalg.qr(g)
        d = np.sign(np.diag(r))
        d[d == 0] = 1.0
        #: The rotation ``Pi`` (rows applied as ``u @ Pi.T``).
        self.rotation: np.ndarray = qm * d
        #: The QJL Gaussian matrix ``S`` (``prod`` only).
        self.sketch: np.ndarray | None = (
            rng.standard_normal((self.dim, self.dim)) if variant == "prod" else None)
        self.centroids, self.boundaries, self._mse_coord = lloyd_max_codebook(
            self.dim, self.mse_bits)

    @property
    def expected_distortion(self) -> float:
        """``E|u - u_hat|**2`` of the ``mse`` codebook for a unit vector (``dim * mse``)."""
        return self.dim * self._mse_coord

    def _rows(self, x: object, name: str) -> tuple[np.ndarray, bool]:
        arr = np.asarray(x)
        shape = arr.shape
        if arr.dtype == object or arr.dtype.kind not in "fiu":
            raise TypeError(f"Got {name} of dtype {arr.dtype}, but it must be a real array")
        arr = arr.astype(np.float64)
        single = arr.ndim == 1
        if single:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"Got {name} of shape {shape}, but it must be ({self.dim},) "
                             f"or (n, {self.dim})")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"Got non-finite values in {name}, but TurboQuant needs finite "
                             "vectors")
        return arr, single

    def _mse_decode(self, idx: np.ndarray) -> np.ndarray:
        return self.centroids[idx] @ self.rotation

    def quantize(self, x: object) -> TurboQuantized:
        """Quantize the rows of ``x`` (shape ``(n, dim)`` or ``(dim,)``)."""
        arr, _ = self._rows(x, "x")
        norms, u = unit_rows(arr)
        z = u @ self.rotation.T
        idx = np.searchsorted(self.boundaries, z).astype(np.uint8 if self.mse_bits <= 8
                                                         else np.uint16)
        qjl = rnorm = None
        if self.variant == "prod":
            assert self.sketch is not None
            r = u - self._mse_decode(idx)
            rnorm = np.linalg.norm(r, axis=1)
            qjl = np.where(r @ self.sketch.T >= 0, 1, -1).astype(np.int8)
        return TurboQuantized(indices=idx, norms=norms, qjl=qjl, residual_norms=rnorm,
                              dim=self.dim, bits=self.bits, variant=self.variant, seed=self.seed)

    def _check_q(self, q: object) -> TurboQuantized:
        if not isinstance(q, TurboQuantized):
            raise TypeError(f"Got q={q!r}, expected a TurboQuantized")
        if (q.dim, q.bits, q.variant, q.seed) != (self.dim, self.bits, self.variant, self.seed):
            raise ValueError(
                f"Got q from TurboQuant(dim={q.dim}, bits={q.bits}, variant={q.variant!r}, "
                f"seed={q.seed}), but this quantizer is (dim={self.dim}, bits={self.bits}, "
                f"variant={self.variant!r}, seed={self.seed})")
        return q

    def dequantize(self, q: TurboQuantized) -> np.ndarray:
        """Reconstructed vectors, shape ``(n, dim)`` (``norm * u_hat``; an entry overflows to
        inf only where the true product exceeds the float64 range)."""
        q = self._check_q(q)
        u = self._mse_decode(q.indices)
        if self.variant == "prod":
            assert self.sketch is not None and q.qjl is not None and q.residual_norms is not None
            c = math.sqrt(math.pi / 2) / self.dim
            u = u + (c * q.residual_norms)[:, None] * (q.qjl.astype(np.float64) @ self.sketch)
        return u * q.norms[:, None]

    def inner_product(self, q: TurboQuantized, y: object) -> np.ndarray:
        """Estimates of ``<x_i, y_j>``: shape ``(n, m)`` for ``y`` of shape ``(m, dim)``, or
        ``(n,)`` for one vector ``y``.  Unbiased over the seed for ``variant="prod"``."""
        yarr, single = self._rows(y, "y")
        out = self.dequantize(q) @ yarr.T
        return out[:, 0] if single else out
