"""dperm.privacy.noise.sample_l2_laplace: distribution and randomness policy.

Density proportional to exp(-beta ||b||) on R^d means: ||b|| ~ Gamma(d, scale 1/beta),
direction uniform on the sphere and independent of the norm; for d = 1, Laplace(0, 1/beta).
For a uniform direction u and a fixed unit e, (u.e + 1)/2 ~ Beta((d-1)/2, (d-1)/2).

The KS tests use fixed seeds, 20000 draws and reject at p < 1e-4, so a correct sampler
passes deterministically; the power tests show the same test rejects a sampler whose
noise is halved (beta doubled), i.e. the bug that would double the privacy loss.
"""
import numpy as np
import pytest
from scipy import stats

from dperm.privacy.noise import sample_l2_laplace

N = 20000
P_MIN = 1e-4

CASES = [(1, 0.5), (1, 4.0), (2, 1.0), (2, 0.1), (5, 2.0), (50, 1.0), (50, 30.0)]


def _unit(d, seed):
    e = np.random.default_rng(seed).standard_normal(d)
    return e / np.linalg.norm(e)


@pytest.mark.parametrize("d,beta", CASES)
def test_norm_is_gamma(d, beta):
    b = sample_l2_laplace(beta, d, size=N, random_state=1000 + d)
    assert b.shape == (N, d) and b.dtype == np.float64
    r = np.linalg.norm(b, axis=1)
    p = stats.kstest(r, "gamma", args=(d, 0, 1.0 / beta)).pvalue
    assert p > P_MIN, f"||b|| is not Gamma({d}, 1/{beta}) (KS p = {p:.2e})"


@pytest.mark.parametrize("d,beta", [c for c in CASES if c[0] >= 2])
def test_direction_is_uniform(d, beta):
    b = sample_l2_laplace(beta, d, size=N, random_state=2000 + d)
    u = b / np.linalg.norm(b, axis=1, keepdims=True)
    a = (d - 1) / 2.0
    # a coordinate axis and an arbitrary direction: uniformity must not depend on the axis
    for e in (np.eye(d)[0], _unit(d, 7)):
        p = stats.kstest((u @ e + 1.0) / 2.0, "beta", args=(a, a)).pvalue
        assert p > P_MIN, f"direction not uniform in d={d} (KS p = {p:.2e})"


@pytest.mark.parametrize("d", [2, 5])
def test_norm_independent_of_direction(d):
    # the norm law must not change with where the vector points
    b = sample_l2_laplace(1.0, d, size=N, random_state=3000 + d)
    r = np.linalg.norm(b, axis=1)
    side = b @ _unit(d, 3) > 0
    p = stats.ks_2samp(r[side], r[~side]).pvalue
    assert p > P_MIN, f"norm depends on direction (KS p = {p:.2e})"


@pytest.mark.parametrize("beta", [0.5, 4.0])
def test_one_dimensional_is_laplace(beta):
    b = sample_l2_laplace(beta, 1, size=N, random_state=4000)[:, 0]
    p = stats.kstest(b, "laplace", args=(0.0, 1.0 / beta)).pvalue
    assert p > P_MIN, f"d=1 draw is not Laplace(0, 1/{beta}) (KS p = {p:.2e})"


def test_beta_broadcasts_per_row():
    # the mechanisms pass beta[:, None] with size (n_alpha, n_draws): one beta per row
    betas = np.array([[0.5], [8.0]])
    b = sample_l2_laplace(betas, 3, size=(2, N // 2), random_state=5000)
    assert b.shape == (2, N // 2, 3)
    for row, beta in zip(b, betas[:, 0]):
        p = stats.kstest(np.linalg.norm(row, axis=1), "gamma", args=(3, 0, 1.0 / beta)).pvalue
        assert p > P_MIN, f"row with beta={beta} has the wrong norm law (KS p = {p:.2e})"


def test_shapes():
    assert sample_l2_laplace(1.0, 4, random_state=0).shape == (4,)
    assert sample_l2_laplace(1.0, 4, size=3, random_state=0).shape == (3, 4)
    assert sample_l2_laplace(1.0, 4, size=(2, 3), random_state=0).shape == (2, 3, 4)


# ---------------------------------------------------------------- power of the KS tests
@pytest.mark.parametrize("d,beta", [(1, 1.0), (2, 1.0), (5, 2.0), (50, 1.0)])
def test_ks_rejects_halved_noise(d, beta):
    # a sampler with beta doubled (noise halved) must fail the very test above
    b = sample_l2_laplace(2.0 * beta, d, size=N, random_state=6000 + d)
    p = stats.kstest(np.linalg.norm(b, axis=1), "gamma", args=(d, 0, 1.0 / beta)).pvalue
    assert p < 1e-12, f"KS test cannot tell halved noise from the claim (p = {p:.2e})"
    if d == 1:
        p = stats.kstest(b[:, 0], "laplace", args=(0.0, 1.0 / beta)).pvalue
        assert p < 1e-12


def test_ks_rejects_non_uniform_direction():
    # normalized uniform-cube vectors crowd the diagonals: the direction test must see it
    rng = np.random.default_rng(7)
    v = rng.uniform(-1, 1, size=(N, 2))
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    p = stats.kstest((u[:, 0] + 1) / 2, "beta", args=(0.5, 0.5)).pvalue
    assert p < P_MIN, f"direction test has no power (p = {p:.2e})"


# ---------------------------------------------------------------- randomness policy
def test_int_seed_reproducible():
    a = sample_l2_laplace(1.0, 3, size=10, random_state=123)
    b = sample_l2_laplace(1.0, 3, size=10, random_state=123)
    c = sample_l2_laplace(1.0, 3, size=10, random_state=124)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_none_draws_fresh_noise():
    # the default must be fresh OS entropy: two calls never repeat
    a = sample_l2_laplace(1.0, 3, size=10)
    b = sample_l2_laplace(1.0, 3, size=10)
    assert not np.allclose(a, b)


def test_generator_accepted_and_advanced():
    g = np.random.default_rng(9)
    a = sample_l2_laplace(1.0, 3, size=10, random_state=g)
    b = sample_l2_laplace(1.0, 3, size=10, random_state=g)
    assert not np.allclose(a, b), "a shared Generator must advance between calls"
    np.testing.assert_array_equal(
        a, sample_l2_laplace(1.0, 3, size=10, random_state=np.random.default_rng(9)))


@pytest.mark.parametrize("beta", [0.0, -1.0, np.nan, np.inf, [1.0, 0.0]])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        sample_l2_laplace(beta, 2, size=2, random_state=0)


@pytest.mark.parametrize("d", [0, -1, 1.5])
def test_bad_d(d):
    with pytest.raises(ValueError, match="d"):
        sample_l2_laplace(1.0, d, size=2, random_state=0)
