"""TurboQuant: rotation plus Lloyd-Max scalar quantization of vectors (arXiv 2504.19874).

Zandieh, Daliri, Hadian, Mirrokni, "TurboQuant: Online Vector Quantization with Near-optimal
Distortion Rate" (Google Research, 2025).

* ``variant="mse"``: a vector ``x`` is stored as its norm and, for the unit vector
  ``u = x / |x|``, the indices of ``Pi u`` in a ``bits``-bit Lloyd-Max codebook, where ``Pi``
  is a seeded uniformly random rotation (the Q of a QR of a Gaussian matrix, columns
  sign-fixed by ``sign(diag(R))`` so that Q is Haar distributed).  Each coordinate of ``Pi u``
  has the density ``f(t) ~ (1 - t**2)**((d-3)/2)`` on ``[-1, 1]`` (a Beta((d-1)/2, (d-1)/2)
  mapped to ``[-1, 1]``, near N(0, 1/d)); the codebook is the optimal scalar quantizer of that
  density (the Lloyd-Max fixed point, solved by Newton's method: :func:`lloyd_max_codebook`)
  and cached.
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

from numerics.quant.quantized import as_float_array

__all__ = ["MAX_DIM", "TurboQuant", "TurboQuantized", "lloyd_max_codebook"]

_VARIANTS = ("mse", "prod")


#: Largest ``dim`` of :func:`lloyd_max_codebook` (the codebook needs no ``dim x dim`` matrix).
MAX_CODEBOOK_DIM = 1 << 16
#: Largest ``dim`` of :class:`TurboQuant`: its rotation (and the QJL matrix of ``"prod"``)
#: is a dense ``dim x dim`` float64 matrix, 512 MiB each at the limit.
MAX_DIM = 8192
#: Largest ``bits`` of :func:`lloyd_max_codebook`.
MAX_CODEBOOK_BITS = 12

# Cell integrals: Gauss-Legendre in phi = arcsin(t), each cell cut into _PANELS panels of
# _NODES nodes; a cell is cut off where the density falls below exp(-_CUTOFF) of its value at
# the cell's inner end.  Newton stops at a codebook with |c - mean| <= _REL_TOL * width +
# _ULPS * eps * |c| in every cell, reached by a step of at most _STEP_TOL * width.
_NODES = 16
_PANELS = 16
_CUTOFF = 80.0
_REL_TOL = 1e-12
_ULPS = 8.0
_STEP_TOL = 1e-6
_MAX_NEWTON = 100
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_NODES)


def _cell_integrals(beta: np.ndarray, c: np.ndarray | None, dim: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P, M, E)`` of the cells ``[beta[i], beta[i+1]]`` of ``[0, 1]`` (unnormalized).

    ``P = int f``, ``M = int t f`` and (with centroids ``c``) ``E = int (t - c_i)**2 f`` over
    each cell, for ``f(t) = (1 - t**2)**((dim-3)/2)``.  With ``t = sin(phi)``, ``f(t) dt =
    cos(phi)**(dim-2) dphi``: a power of ``cos`` with a non-negative integer exponent, smooth
    on the whole of ``[0, pi/2]`` (the endpoint singularity of ``f`` at ``t = 1`` for ``dim =
    2`` is gone).  ``cos**(dim-2)`` is log-concave and decreasing on the cell, so beyond the
    angle where it has fallen by ``exp(-80)`` from the cell's inner end the rest of the cell
    holds less than ``1e-30`` of its mass; the integral stops there.
    """
    lo = np.arcsin(beta[:-1])
    hi = np.arcsin(beta[1:])
    if dim > 2:
        hi = np.minimum(hi, np.arccos(np.cos(lo) * math.exp(-_CUTOFF / (dim - 2))))
    width = (hi - lo) / _PANELS
    x = (np.arange(_PANELS)[:, None] + (_GL_X[None, :] + 1.0) / 2.0).reshape(-1)
    phi = lo[:, None] + width[:, None] * x[None, :]
    g = (width[:, None] * np.tile(_GL_W / 2.0, _PANELS)[None, :]) * np.cos(phi) ** (dim - 2)
    t = np.sin(phi)
    mass = g.sum(axis=1)
    first = (g * t).sum(axis=1)
    err = np.zeros_like(mass) if c is None else (g * (t - c[:, None]) ** 2).sum(axis=1)
    return mass, first, err


def _boundaries(c: np.ndarray) -> np.ndarray:
    """``[0, (c0+c1)/2, ..., 1]``: the cells of the positive half-codebook ``c``."""
    return np.concatenate([[0.0], 0.5 * (c[1:] + c[:-1]), [1.0]])


def _initial_half(dim: int, n: int) -> np.ndarray:
    """Start of Newton: the high-resolution point density ``f**(1/3)`` (Panter-Dite), i.e.
    centroid ``i`` at the ``(i + 1/2)/n`` quantile of ``f**(1/3)`` on ``[0, 1]``."""
    grid = np.linspace(0.0, math.pi / 2, 20001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    dens = np.cos(mid) ** ((dim - 3) / 3.0 + 1.0)  # f**(1/3) dt in phi
    cdf = np.concatenate([[0.0], np.cumsum(dens)])
    cdf /= cdf[-1]
    return np.sin(np.interp((np.arange(n) + 0.5) / n, cdf, grid))


def _tridiagonal_solve(sub: np.ndarray, diag: np.ndarray, sup: np.ndarray,
                       rhs: np.ndarray) -> np.ndarray:
    """Thomas' algorithm (the Newton matrix ``I - dm/dc`` is an M-matrix: no pivoting)."""
    n = diag.size
    d = diag.astype(np.float64)
    r = rhs.astype(np.float64)
    for i in range(1, n):
        w = sub[i - 1] / d[i - 1]
        d[i] -= w * sup[i - 1]
        r[i] -= w * r[i - 1]
    out = np.empty(n)
    out[-1] = r[-1] / d[-1]
    for i in range(n - 2, -1, -1):
        out[i] = (r[i] - sup[i] * out[i + 1]) / d[i]
    return out


@lru_cache(maxsize=64)
def _codebook_cached(dim: int, bits: int) -> tuple[np.ndarray, np.ndarray, float]:
    n = 1 << (bits - 1)  # centroids on the positive half; the codebook is symmetric
    c = _initial_half(dim, n)
    small_step = False  # at least one Newton step: the residual alone does not see Lloyd's
    for _ in range(_MAX_NEWTON):  # slow mode (eigenvalue ~ (pi/n)**2 of the Jacobian)
        beta = _boundaries(c)
        mass, first, _ = _cell_integrals(beta, None, dim)
        mean = first / mass
        resid = c - mean
        width = np.diff(beta)
        if small_step and np.all(np.abs(resid) <= _REL_TOL * width
                                 + _ULPS * 2.0**-53 * np.abs(c)):
            break
        # Newton on R(c) = c - mean(c): with boundaries beta_i = (c_{i-1} + c_i)/2,
        # d mean_i / d beta_i = f(beta_i) (mean_i - beta_i) / P_i and
        # d mean_i / d beta_{i+1} = f(beta_{i+1}) (beta_{i+1} - mean_i) / P_i
        fb = np.ones_like(beta)
        fb[1:-1] = (1.0 - beta[1:-1] ** 2) ** ((dim - 3) / 2.0)
        dl = fb[:-1] * (mean - beta[:-1]) / mass
        dr = fb[1:] * (beta[1:] - mean) / mass
        dl[0] = 0.0  # beta_0 = 0 is fixed by symmetry
        dr[-1] = 0.0  # beta_n = 1
        step = _tridiagonal_solve(-0.5 * dl[1:], 1.0 - 0.5 * (dl + dr), -0.5 * dr[:-1],
                                  -resid)
        damping = 1.0
        while True:  # keep the centroids increasing inside (0, 1)
            new = c + damping * step
            if new[0] > 0 and new[-1] < 1 and np.all(np.diff(new) > 0):
                break
            damping /= 2
        small_step = bool(np.all(np.abs(new - c) <= _STEP_TOL * width))
        c = new
    else:
        raise RuntimeError(
            f"lloyd_max_codebook({dim}, {bits}): Newton's method did not reach the Lloyd-Max "
            f"fixed point in {_MAX_NEWTON} steps (largest |c - E[t | cell]| / width "
            f"{float(np.max(np.abs(resid) / width)):.3g})")
    beta = _boundaries(c)
    mass, _, err = _cell_integrals(beta, c, dim)
    mse_coord = float(np.sum(err) / np.sum(mass))  # the returned codebook's own distortion
    centroids = np.concatenate([-c[::-1], c])
    boundaries = 0.5 * (centroids[1:] + centroids[:-1])  # the cells integrated above
    centroids.setflags(write=False)
    boundaries.setflags(write=False)
    return centroids, boundaries, mse_coord


def lloyd_max_codebook(dim: int, bits: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Optimal ``bits``-bit scalar codebook for a coordinate of a random unit vector in R^dim.

    Parameters
    ----------
    dim : int
        Dimension, ``2 <= dim <= 65536``.
    bits : int
        Bits per coordinate, ``1 <= bits <= 12``.

    Returns
    -------
    centroids : ndarray
        ``2**bits`` increasing, symmetric centroids: the Lloyd-Max fixed point of the
        coordinate density ``f(t) ~ (1 - t**2)**((dim-3)/2)`` on ``[-1, 1]`` (each centroid
        the conditional mean of its cell, to ``1e-12`` of the cell's width plus 8 float64
        ulps, reached by a Newton step below ``1e-6`` of a width; claim T3).  For ``dim >= 3``
        the density is log-concave and this fixed point is the unique optimal quantizer.  The
        fixed-point equations are ill-conditioned in Lloyd's slow mode (Jacobian eigenvalue
        about ``(pi/2**bits)**2``), so a centroid may sit farther from the exact fixed point
        than its residual says: at ``dim = 3``, where the optimum is known, ``3e-12`` of a
        width at ``bits = 8`` and ``3e-9`` at 12; the MSE is off by the square of that.
    boundaries : ndarray
        The ``2**bits - 1`` decision boundaries, ``(c[i] + c[i+1]) / 2`` in float64.
    mse : float
        The per-coordinate mean squared error ``E (t - Q(t))**2`` of exactly these centroids
        and boundaries, by quadrature (not a fixed-point identity); ``dim * mse`` is the
        expected distortion ``E|u - u_hat|**2`` of a unit vector.

    Raises
    ------
    TypeError, ValueError
        ``dim`` or ``bits`` not an int in range.
    RuntimeError
        If Newton's method does not converge (never observed in the supported range).

    Notes
    -----
    Newton's method on ``R(c) = c - E[t | cell(c)]`` over the positive half (tridiagonal
    Jacobian), from the Panter-Dite point density ``f**(1/3)``; cell integrals by
    Gauss-Legendre quadrature in ``phi = arcsin(t)`` (see ``proofs/turboquant.md``, T3).

    Examples
    --------
    >>> c, b, mse = lloyd_max_codebook(128, 1)
    >>> round(float(c[1]) * math.sqrt(math.pi * 128 / 2), 2)  # ~ E|t| = sqrt(2/(pi d))
    1.0
    >>> round(128 * mse, 3)
    0.361
    >>> c, b, mse = lloyd_max_codebook(3, 2)  # d = 3: t is uniform, the grid is uniform
    >>> np.round(c, 12).tolist(), round(mse * 3 * 4**2, 12)
    ([-0.75, -0.25, 0.25, 0.75], 1.0)
    """
    _check_int("dim", dim, 2, MAX_CODEBOOK_DIM)
    _check_int("bits", bits, 1, MAX_CODEBOOK_BITS)
    return _codebook_cached(int(dim), int(bits))


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Got {name}={value!r}, but it must be an int")
    if not lo <= value <= hi:
        raise ValueError(f"Got {name}={value!r}, but it must lie in [{lo}, {hi}]")


def _size_text(nbytes: int) -> str:
    """``nbytes`` to 3 significant digits in MiB below a GiB, else in GiB: ``"512 MiB"``."""
    if nbytes < 2**30:
        return f"{nbytes / 2**20:.3g} MiB"
    return f"{nbytes / 2**30:.3g} GiB"


def _products(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``a @ m``, each row's result from that row alone (a fixed order of additions:
    :func:`numerics.kernels.quant.row_products`): a vector's codes do not depend on the
    batch it is quantized in, which a BLAS product's shape-chosen kernel would change in
    the last bit, and so flip an index at a codebook boundary."""
    from numerics.kernels.quant import row_products

    return row_products(a, m)


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
    """Quantized vectors: codebook indices, norms and (``prod``) the QJL sketch.

    Attributes
    ----------
    indices : numpy.ndarray, shape (n, dim)
        Codebook indices of the rotated unit vectors.
    norms : numpy.ndarray, shape (n,)
        Euclidean norms of the input vectors.
    qjl : numpy.ndarray of int8, shape (n, dim), or None
        Signs +-1 of ``S r`` (``"prod"`` only).
    residual_norms : numpy.ndarray, shape (n,), or None
        Norms of the unit-vector residuals ``r`` (``"prod"`` only).
    dim, bits : int
        The quantizer's dimension and bits per coordinate.
    variant : {"mse", "prod"}
        The quantizer's variant.
    seed : int
        The quantizer's seed.
    """

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
        Vector dimension, ``2 <= d <= 8192`` (``MAX_DIM``: the rotation is a dense ``d x d``
        float64 matrix, 512 MiB at the limit, and ``"prod"`` adds a second one).
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
        if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim > MAX_DIM:
            raise ValueError(f"Got {dim=}, but TurboQuant takes dim in [2, {MAX_DIM}] "
                             "(MAX_DIM): its rotation is a dense dim x dim float64 matrix, "
                             f"{_size_text(int(dim) ** 2 * 8)} at this dim")
        _check_int("dim", dim, 2, MAX_DIM)
        if not isinstance(variant, str) or variant not in _VARIANTS:
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
        """``E|u - u_hat|**2`` of the ``mse`` codebook for a unit vector: ``dim`` times the
        per-coordinate MSE of the returned centroids and boundaries, computed by quadrature
        (:func:`lloyd_max_codebook`)."""
        return self.dim * self._mse_coord

    def _rows(self, x: object, name: str) -> tuple[np.ndarray, bool]:
        # numpy, ml_dtypes (bfloat16, fp8) and torch input as quantize takes it; ragged
        # lists, complex, bool, strings raise naming the argument
        arr = as_float_array(x, name=name)
        shape = arr.shape
        single = arr.ndim == 1
        if single:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"Got {name} of shape {shape}, but it must be ({self.dim},) "
                             f"or (n, {self.dim})")
        finite = np.isfinite(arr)
        if not np.all(finite):
            where = np.unravel_index(int(np.argmin(finite)), arr.shape)
            at = where[1:] if single else where
            raise ValueError(f"Got non-finite {name}[{', '.join(str(int(i)) for i in at)}] = "
                             f"{float(arr[where])}, but TurboQuant needs finite vectors")
        # C order: numpy's row sums and matrix products add in another order for a
        # Fortran-ordered array, and the results must not depend on the layout
        return np.ascontiguousarray(arr), single

    def _mse_decode(self, idx: np.ndarray) -> np.ndarray:
        return _products(self.centroids[idx], self.rotation)

    def quantize(self, x: object) -> TurboQuantized:
        """Quantize the rows of ``x`` (shape ``(n, dim)`` or ``(dim,)``): any real numpy,
        ml_dtypes (bfloat16, fp8) or torch array, or a nested list, as :func:`quantize` takes
        it (computed in float64); a ragged list, complex, bool or non-finite values raise."""
        arr, _ = self._rows(x, "x")
        norms, u = unit_rows(arr)
        z = _products(u, self.rotation.T)
        idx = np.searchsorted(self.boundaries, z).astype(np.uint8 if self.mse_bits <= 8
                                                         else np.uint16)
        qjl = rnorm = None
        if self.variant == "prod":
            assert self.sketch is not None
            r = u - self._mse_decode(idx)
            rnorm = np.linalg.norm(r, axis=1)
            qjl = np.where(_products(r, self.sketch.T) >= 0, 1, -1).astype(np.int8)
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
            u = u + (c * q.residual_norms)[:, None] * _products(q.qjl.astype(np.float64),
                                                                 self.sketch)
        return u * q.norms[:, None]

    def inner_product(self, q: TurboQuantized, y: object) -> np.ndarray:
        """Estimates of ``<x_i, y_j>``: shape ``(n, m)`` for ``y`` of shape ``(m, dim)``, or
        ``(n,)`` for one vector ``y``.  Unbiased over the seed for ``variant="prod"``."""
        yarr, single = self._rows(y, "y")
        out = _products(self.dequantize(q), yarr.T)
        return out[:, 0] if single else out
