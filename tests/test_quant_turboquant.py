"""TurboQuant: codebook, distortion between the paper's bounds, unbiased inner products."""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.quant import TurboQuant, lloyd_max_codebook

PAPER = {1: 0.36, 2: 0.117, 3: 0.03, 4: 0.009}


def _unit(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_codebook_is_lloyd_max_fixed_point() -> None:
    """T3 (and T1's density, sampled). Independent check by Monte Carlo on exact samples
    of the coordinate law: centroids are
    conditional means (to sampling error) and boundaries are midpoints."""
    d = 16
    c, b, mse = lloyd_max_codebook(d, 2)
    np.testing.assert_allclose(b, (c[1:] + c[:-1]) / 2)
    np.testing.assert_allclose(c, -c[::-1], atol=1e-15)
    # a coordinate of a uniform unit vector: 2*Beta((d-1)/2, (d-1)/2) - 1
    t = 2 * np.random.default_rng(0).beta((d - 1) / 2, (d - 1) / 2, 400_000) - 1
    idx = np.searchsorted(b, t)
    means = np.array([t[idx == k].mean() for k in range(len(c))])
    np.testing.assert_allclose(means, c, atol=2e-3)
    assert mse == pytest.approx(np.mean((t - c[idx]) ** 2), rel=1e-2)
    # d = 3: the coordinate is uniform on [-1, 1]; 1 bit: centroids +-1/2, mse 1/12
    c3, _, m3 = lloyd_max_codebook(3, 1)
    np.testing.assert_allclose(c3, [-0.5, 0.5], atol=1e-6)
    assert m3 == pytest.approx(1 / 12, rel=1e-5)


@pytest.mark.parametrize("bits", [1, 2, 3, 4])
def test_distortion_between_paper_bounds_d128(bits: int) -> None:
    """T4: the measured distortion lies between the paper's lower and upper bounds."""
    """Measured E|u - u_hat|^2 at d = 128 lies in [4**-b, sqrt(3) pi/2 4**-b] and near the
    Lloyd-Max optimum (the paper reports 0.36, 0.117, 0.03, 0.009)."""
    u = _unit(2000, 128, 1000 + bits)  # not the rotation seed: that stream would build Pi
    tq = TurboQuant(128, bits, seed=bits)
    dist = float(np.mean(np.sum((tq.dequantize(tq.quantize(u)) - u) ** 2, axis=1)))
    assert 4.0**-bits < dist < math.sqrt(3) * math.pi / 2 * 4.0**-bits
    assert dist == pytest.approx(tq.expected_distortion, rel=0.05)
    assert dist == pytest.approx(PAPER[bits], rel=0.15)


def test_norms_stored_separately_and_zero_vector() -> None:
    x = np.random.default_rng(1).standard_normal((5, 32)) * np.array([[0], [1], [10], [1e-3],
                                                                       [1e6]])
    tq = TurboQuant(32, 3)
    q = tq.quantize(x)
    np.testing.assert_allclose(q.norms, np.linalg.norm(x, axis=1))
    d = tq.dequantize(q)
    assert np.all(d[0] == 0)
    rel = np.linalg.norm(d[1:] - x[1:], axis=1) / np.linalg.norm(x[1:], axis=1)
    assert np.all(rel < 0.5)
    assert q.indices.dtype == np.uint8 and q.indices.max() < 8


def test_T1_T2_rotated_coordinates_follow_the_sphere_law() -> None:
    """T1: one fixed unit vector rotated by many seeded Haar rotations has coordinates with
    the law of a uniform point on the sphere: mean 0, variance 1/d, fourth moment
    3/(d(d+2)) (the Beta((d-1)/2, (d-1)/2) law on [-1, 1]).  T2: two coordinates are
    uncorrelated, yet not independent (their squares are negatively correlated)."""
    d, n = 8, 4000
    u = np.zeros(d)
    u[0] = 1.0  # the worst case for an unrotated quantizer: all energy in one coordinate
    z = np.array([TurboQuant(d, 2, seed=s).rotation @ u for s in range(n)])
    se = 5 / math.sqrt(n)
    assert abs(z[:, 3].mean()) < se * math.sqrt(1 / d)
    assert z[:, 3].var() == pytest.approx(1 / d, rel=5 * math.sqrt(2 / n))
    assert np.mean(z[:, 3] ** 4) == pytest.approx(3 / (d * (d + 2)), rel=0.15)
    assert abs(np.mean(z[:, 1] * z[:, 2])) < se / d * 2
    cov_sq = np.mean(z[:, 1] ** 2 * z[:, 2] ** 2) - np.mean(z[:, 1] ** 2) * np.mean(z[:, 2] ** 2)
    exact_cov_sq = 1 / (d * (d + 2)) - 1 / d**2  # < 0: the squares sum to 1
    assert cov_sq == pytest.approx(exact_cov_sq, rel=0.5)


def test_rotation_is_orthogonal_and_seeded() -> None:
    a, b, c = TurboQuant(24, 2, seed=3), TurboQuant(24, 2, seed=3), TurboQuant(24, 2, seed=4)
    np.testing.assert_allclose(a.rotation @ a.rotation.T, np.eye(24), atol=1e-12)
    np.testing.assert_array_equal(a.rotation, b.rotation)
    assert not np.allclose(a.rotation, c.rotation)


@pytest.mark.parametrize("bits", [2, 3])
def test_prod_inner_product_unbiased_over_seeds(bits: int) -> None:
    """T5: E_seed[<y, x_hat>] = <y, x>: mean over 600 seeds within 5 standard errors, for fixed
    x and y (and the mse variant is biased: it shrinks inner products)."""
    d = 32
    rng = np.random.default_rng(11)
    x = rng.standard_normal(d)
    y = x + 0.5 * rng.standard_normal(d)
    truth = float(x @ y)
    est = []
    for seed in range(600):
        tq = TurboQuant(d, bits, variant="prod", seed=seed)
        est.append(float(tq.inner_product(tq.quantize(x), y)[0]))
    e = np.array(est)
    assert abs(e.mean() - truth) <= 5 * e.std(ddof=1) / math.sqrt(len(e))
    mse_est = []
    for seed in range(600):
        tq = TurboQuant(d, 1, seed=seed)
        mse_est.append(float(tq.inner_product(tq.quantize(x), y)[0]))
    m = np.array(mse_est)
    assert m.mean() < truth - 5 * m.std(ddof=1) / math.sqrt(len(m))  # 1-bit mse shrinks


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="variant='fast'"):
        TurboQuant(8, 2, variant="fast")
    with pytest.raises(ValueError, match="bits=1"):
        TurboQuant(8, 1, variant="prod")
    with pytest.raises(ValueError, match="dim=1"):
        TurboQuant(1, 2)
    with pytest.raises(TypeError, match="bits=2.5"):
        TurboQuant(8, 2.5)  # type: ignore[arg-type]
    tq = TurboQuant(8, 2)
    with pytest.raises(ValueError, match=r"shape \(3, 7\)"):
        tq.quantize(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="non-finite"):
        tq.quantize(np.full(8, np.nan))
    with pytest.raises(ValueError, match="seed=1"):
        tq.dequantize(TurboQuant(8, 2, seed=1).quantize(np.ones(8)))
