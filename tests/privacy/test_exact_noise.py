"""dperm.privacy.exact_noise: exact samplers (integer draws only) and the power-of-two grid.

Distribution tests use fixed seeds and reject at p < 1e-6 (chi-square against the
exact pmf, binomial/normal tolerance of 5 standard deviations), so correct samplers
pass deterministically; the power tests run the *same* tests on broken variants
(discrete Gaussian with s^2 halved, a Bernoulli(exp(-gamma)) coin returning the even
K, a Laplace with the wrong scale) and require them to fail.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dperm.privacy import exact_noise as en
from dperm.privacy.exact_noise import (
    bernoulli_exp,
    calibrate_on_grid,
    discrete_gaussian,
    discrete_laplace,
    gaussian_on_grid,
    grid_for,
    grid_sensitivity,
    grid_variance,
    on_grid,
    round_to_grid,
)

P_MIN = 1e-6
N = 100_000


# ---------------------------------------------------------------- exact pmfs and the tests

def _gauss_pmf(s2, lo, hi):
    """exact-in-float pmf of N_Z(0, s2) on [lo, hi] (normaliser summed far into the tails)."""
    s2 = float(s2)
    width = int(40 * math.sqrt(s2)) + 40
    zs = np.arange(-width, width + 1)
    w = np.exp(-zs.astype(float) ** 2 / (2 * s2))
    return w[(zs >= lo) & (zs <= hi)] / w.sum()


def _laplace_pmf(t, lo, hi):
    t = float(t)
    q = math.exp(-1 / t)
    ys = np.arange(lo, hi + 1)
    return (1 - q) / (1 + q) * q ** np.abs(ys).astype(float)


def _chi2_p(samples, pmf_fn, min_expected=20):
    """chi-square p-value of integer samples against pmf_fn(lo, hi); tails pooled."""
    samples = np.asarray(samples).ravel()
    n = samples.size
    lo, hi = int(samples.min()), int(samples.max())
    span = max(abs(lo), abs(hi)) + 1
    pmf = pmf_fn(-span, span)
    values = np.arange(-span, span + 1)
    # central bins where the expected count is large enough; everything else pooled
    central = values[pmf * n >= min_expected]
    a, b = int(central.min()), int(central.max())
    counts = [np.count_nonzero(samples < a)]
    expected = [1.0 - pmf[values >= a].sum()]
    for v in range(a, b + 1):
        counts.append(np.count_nonzero(samples == v))
        expected.append(pmf[values == v][0])
    counts.append(np.count_nonzero(samples > b))
    expected.append(1.0 - pmf[values <= b].sum())
    counts, expected = np.array(counts, float), np.array(expected) * n
    keep = expected > 0
    # fold tiny tail bins into the neighbouring bin so the statistic is well behaved
    if expected[0] < 5:
        counts[1] += counts[0]
        expected[1] += expected[0]
        keep[0] = False
    if expected[-1] < 5:
        counts[-2] += counts[-1]
        expected[-2] += expected[-1]
        keep[-1] = False
    counts, expected = counts[keep], expected[keep]
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stats.chi2.sf(stat, df=counts.size - 1)


def _bern_ok(x, p, sds=5.0):
    n = x.size
    sd = math.sqrt(max(p * (1 - p), 1e-12) / n)
    return abs(x.mean() - p) <= sds * sd + 1e-12


# ---------------------------------------------------------------- Bernoulli(exp(-gamma))

@pytest.mark.parametrize("num,den", [(0, 1), (1, 2), (1, 1), (37, 10), (5, 3), (1, 1000), (7, 1)])
def test_bernoulli_exp_mean(num, den):
    x = bernoulli_exp(num, den, size=200_000, rng=np.random.default_rng(num * 31 + den))
    assert x.dtype == bool and x.shape == (200_000,)
    p = math.exp(-num / den)
    assert _bern_ok(x, p), (x.mean(), p)
    if num == 0:
        assert x.all()


def test_bernoulli_exp_array_gamma():
    nums = np.array([0, 1, 5, 37])
    x = bernoulli_exp(np.repeat(nums[:, None], 50_000, axis=1), 10, rng=np.random.default_rng(3))
    assert x.shape == (4, 50_000)
    for row, num in zip(x, nums):
        assert _bern_ok(row, math.exp(-num / 10))


def test_bernoulli_exp_power(monkeypatch):
    """The mean test detects a coin whose K loop returns on even K (prob 1 - e^-gamma)."""
    real = en._bern_exp_frac

    def broken(r, q, rng):
        return ~real(r, q, rng)
    monkeypatch.setattr(en, "_bern_exp_frac", broken)
    x = bernoulli_exp(1, 2, size=200_000, rng=np.random.default_rng(5))
    assert not _bern_ok(x, math.exp(-0.5))


def test_bernoulli_exp_refuses_bad_gamma():
    with pytest.raises(ValueError, match="gamma_num"):
        bernoulli_exp(-1, 2, size=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="gamma_den"):
        bernoulli_exp(1, 0, size=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="gamma_num"):
        bernoulli_exp(0.5, 1, size=3, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- discrete Laplace

@pytest.mark.parametrize("t", [1, 3, Fraction(5, 2), (2, 7), 0.75])
def test_discrete_laplace_chi2(t):
    y = discrete_laplace(t, size=N, rng=np.random.default_rng(11))
    assert y.dtype == np.int64 and y.shape == (N,)
    tf = Fraction(*t) if isinstance(t, tuple) else Fraction(t)
    assert _chi2_p(y, lambda lo, hi: _laplace_pmf(tf, lo, hi)) > P_MIN


def test_discrete_laplace_power():
    """Samples at t = 3 fail the test for t = 2.5 (and vice versa)."""
    y = discrete_laplace(3, size=N, rng=np.random.default_rng(12))
    assert _chi2_p(y, lambda lo, hi: _laplace_pmf(2.5, lo, hi)) < P_MIN


def test_discrete_laplace_refuses():
    with pytest.raises(ValueError, match="t"):
        discrete_laplace(0, size=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="2\\*\\*52"):
        discrete_laplace(Fraction(1, 2 ** 60), size=3, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- discrete Gaussian

@pytest.mark.parametrize("num,den", [(2, 1), (73, 10), (1, 4), (50, 1)])
def test_discrete_gaussian_chi2(num, den):
    z = discrete_gaussian(num, den, size=N, rng=np.random.default_rng(21 + num))
    assert z.dtype == np.int64 and z.shape == (N,)
    assert _chi2_p(z, lambda lo, hi: _gauss_pmf(num / den, lo, hi)) > P_MIN


@pytest.mark.parametrize("num,den", [(2, 1), (73, 10)])
def test_discrete_gaussian_power_halved_variance(num, den):
    """A sampler with s^2 halved fails the same chi-square test (and so would its privacy)."""
    z = discrete_gaussian(num, 2 * den, size=N, rng=np.random.default_rng(21 + num))
    assert _chi2_p(z, lambda lo, hi: _gauss_pmf(num / den, lo, hi)) < P_MIN


def test_discrete_gaussian_large_scale_moments():
    s = 2.0 ** 20
    n = 200_000
    z = discrete_gaussian(2 ** 40, 1, size=n, rng=np.random.default_rng(31))
    # variance of N_Z(0, s^2) is <= s^2 and equal to it up to ~exp(-2 pi^2 s^2) here
    assert abs(z.mean()) <= 5 * s / math.sqrt(n)
    var = z.astype(float).var()
    assert abs(var / s ** 2 - 1) <= 5 * math.sqrt(2 / n)
    # symmetric, and the (standardised) fourth moment of a Gaussian
    assert abs(np.mean((z / s) ** 4) - 3) <= 5 * math.sqrt(96 / n)
    # a halved variance fails the same check
    zh = discrete_gaussian(2 ** 39, 1, size=n, rng=np.random.default_rng(31))
    assert abs(zh.astype(float).var() / s ** 2 - 1) > 5 * math.sqrt(2 / n)


def test_discrete_gaussian_fraction_argument_and_shape():
    a = discrete_gaussian(Fraction(73, 10), size=(3, 4), rng=np.random.default_rng(1))
    b = discrete_gaussian(73, 10, size=(3, 4), rng=np.random.default_rng(1))
    assert a.shape == (3, 4) and np.array_equal(a, b)
    assert discrete_gaussian(2, 1, size=0, rng=np.random.default_rng(1)).shape == (0,)


def test_discrete_gaussian_refuses():
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian(0, 1, size=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="2\\*\\*52"):
        discrete_gaussian(2 ** 53 + 1, 1, size=3, rng=np.random.default_rng(0))


def test_gamma_parts_big_integer_branch():
    """The rejection exponent den * diff^2 / q is split exactly, also where den * diff^2
    leaves int64 (Python-integer branch) and where the floor is clipped."""
    den, q = 2 ** 20, 2 * (2 ** 52 - 1)
    lim = math.isqrt(en._I64_MAX // den)
    diff = np.array([0, 1, -1, lim, lim + 1, -(lim + 1), 3 * lim, 2 ** 40, -(2 ** 62)], dtype=np.int64)
    whole, frac = en._gamma_parts(diff, den, q)
    for dd, w, f in zip(diff.tolist(), whole.tolist(), frac.tolist()):
        ew, ef = divmod(den * dd * dd, q)
        assert f == ef and w == min(ew, en._I64_MAX)
    assert whole[-1] == en._I64_MAX


# ---------------------------------------------------------------- only integer draws

class IntegersOnly(np.random.Generator):
    """A Generator whose float draws raise; counts the integer draws."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.calls = 0

    def integers(self, *args, **kwargs):
        self.calls += 1
        return super().integers(*args, **kwargs)

    def _refuse(self, *args, **kwargs):
        raise AssertionError("a float draw was used")

    random = normal = standard_normal = uniform = exponential = standard_exponential = _refuse
    laplace = gamma = standard_gamma = geometric = binomial = poisson = choice = _refuse


class Wrapper:
    """Not a Generator at all: exposes integers only."""

    def __init__(self, seed):
        self._g = np.random.default_rng(seed)

    def integers(self, *args, **kwargs):
        return self._g.integers(*args, **kwargs)

    def __getattr__(self, name):
        raise AssertionError(f"rng.{name} was used")


@pytest.mark.parametrize("make", [IntegersOnly, Wrapper])
def test_only_integer_draws(make):
    rng = make(0)
    bernoulli_exp(37, 10, size=1000, rng=rng)
    discrete_laplace(Fraction(7, 3), size=1000, rng=rng)
    discrete_gaussian(73, 10, size=1000, rng=rng)
    released, g = gaussian_on_grid(np.linspace(-1, 1, 50).reshape(5, 10), 0.3, rng)
    assert on_grid(released, g)
    if isinstance(rng, IntegersOnly):
        assert rng.calls > 0


# ---------------------------------------------------------------- the grid

@pytest.mark.parametrize("sigma", [1.0, 0.3, 2.0 ** -7, 3 * 2.0 ** 30, np.nextafter(4.0, 0), 1e-200])
@pytest.mark.parametrize("bits", [20, 10, 25])
def test_grid_for(sigma, bits):
    g = grid_for(sigma, bits)
    m, e = math.frexp(g)
    assert m == 0.5                                    # a power of two
    s = sigma / g
    assert Fraction(s) == Fraction(sigma) / Fraction(g)   # exact
    assert 2 ** bits <= s < 2 ** (bits + 1)


def test_grid_for_refuses():
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="sigma"):
            grid_for(bad)
    with pytest.raises(ValueError, match="bits"):
        grid_for(1.0, bits=26)


def test_round_to_grid_is_exact_nearest():
    rng = np.random.default_rng(7)
    g = 2.0 ** -10
    v = np.concatenate([rng.normal(scale=10.0, size=2000),
                        np.array([0.5, 1.5, 2.5, -0.5]) * g,          # ties: to even
                        rng.integers(-1000, 1000, 50) * g])           # already on the grid
    v0 = v.copy()
    r = round_to_grid(v, g)
    assert r.dtype == np.float64 and r.shape == v.shape
    assert np.array_equal(v, v0)                                      # input untouched
    assert on_grid(r, g)
    for x, y in zip(v.tolist(), r.tolist()):
        fx, fy, fg = Fraction(x), Fraction(y), Fraction(g)
        k = fy / fg
        assert k.denominator == 1
        assert abs(fx - fy) <= fg / 2
        if abs(fx - fy) == fg / 2:                                   # a tie goes to even k
            assert k.numerator % 2 == 0
    assert np.array_equal(r[2000:2004], np.array([0.0, 2.0, 2.0, -0.0]) * g)
    assert np.array_equal(r[-50:], v[-50:])


def test_round_to_grid_refuses():
    g = 2.0 ** -10
    with pytest.raises(ValueError, match="values"):
        round_to_grid([2.0 ** 42], g)                                 # |v|/g = 2^52
    round_to_grid([np.nextafter(2.0 ** 42, 0)], g)                     # just below: fine
    with pytest.raises(ValueError, match="values"):
        round_to_grid([np.nan], g)
    with pytest.raises(ValueError, match="g"):
        round_to_grid([1.0], 0.3)


def test_on_grid_exact():
    g = 2.0 ** -3
    assert on_grid(np.arange(-40, 40) * g, g)
    assert not on_grid([1.0 + 2.0 ** -4], g)
    assert on_grid([1.0 + 2.0 ** -3, 0.0, -0.0], g)
    assert not on_grid([5e-324], 1.0)                # a subnormal is no multiple of 1
    assert on_grid([1e308], 2.0 ** -100)             # v / g would overflow; still a multiple
    assert on_grid([2.0 ** -1022 * 3], 2.0 ** -1022)
    assert not on_grid([2.0 ** -1074 * 3], 2.0 ** -1022)   # subnormal, below the step
    with pytest.raises(ValueError, match="g"):
        on_grid([0.0], 2.0 ** -1073)                         # subnormal steps are refused
    assert not on_grid([np.nan], g) and not on_grid([np.inf], g)
    assert on_grid([], g)
    assert not on_grid([1.0 + 2.0 ** -52], 1.0)
    assert on_grid([2.0 ** 60 + 2.0 ** 8], 2.0 ** 8)


def test_gaussian_on_grid_shape_dtype_grid_and_exact_rounding():
    rng_c = np.random.default_rng(8)
    center = rng_c.normal(size=(6, 7))
    center.setflags(write=False)                      # any in-place write would raise
    sigma = 0.37
    released, g = gaussian_on_grid(center, sigma, np.random.default_rng(99))
    assert released.dtype == np.float64 and released.shape == (6, 7)
    assert g == grid_for(sigma) and on_grid(released, g)
    # exactly rounded center + g * (the discrete Gaussian from the same stream)
    s2 = grid_variance(sigma, g)
    z = discrete_gaussian(s2.numerator, s2.denominator, size=(6, 7), rng=np.random.default_rng(99))
    expect = round_to_grid(center, g) + g * z.astype(float)
    assert np.array_equal(released, expect)
    for x, y, zz in zip(released.ravel().tolist(), round_to_grid(center, g).ravel().tolist(),
                        z.ravel().tolist()):
        assert Fraction(x) == Fraction(y) + Fraction(g) * zz     # no float rounding anywhere


def test_gaussian_on_grid_deterministic_and_inputs_unchanged():
    center = np.linspace(-3, 3, 40)
    c0 = center.copy()
    a, ga = gaussian_on_grid(center, 1.5, np.random.default_rng(5))
    b, gb = gaussian_on_grid(center, 1.5, np.random.default_rng(5))
    c, _ = gaussian_on_grid(center, 1.5, np.random.default_rng(6))
    assert ga == gb and np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(center, c0)
    # list input and a scalar-shaped center
    r, _ = gaussian_on_grid(0.25, 1.5, np.random.default_rng(5))
    assert r.shape == ()


def test_gaussian_on_grid_low_bits_do_not_leak():
    """Two centers that round to one grid point give bit-identical releases for one
    random stream: the output depends on the center only through its grid point."""
    sigma = 1.0
    g = grid_for(sigma)
    base = np.arange(-20, 20) * g
    nudged = base + np.linspace(-0.49, 0.49, 40) * g
    assert np.array_equal(round_to_grid(nudged, g), base)
    a, _ = gaussian_on_grid(base, sigma, np.random.default_rng(3))
    b, _ = gaussian_on_grid(nudged, sigma, np.random.default_rng(3))
    assert np.array_equal(a, b)


def test_gaussian_on_grid_noise_scale():
    sigma = 0.05
    n = 100_000
    released, g = gaussian_on_grid(np.zeros(n), sigma, np.random.default_rng(17))
    assert abs(released.std() / sigma - 1) <= 5 * math.sqrt(0.5 / n)
    assert abs(released.mean()) <= 5 * sigma / math.sqrt(n)


def test_gaussian_on_grid_clamps_a_large_center_and_refuses_a_non_finite_one():
    g = grid_for(1.0)
    out, _ = gaussian_on_grid([2.0 ** 52 * g], 1.0, np.random.default_rng(0))
    assert abs(out[0] - (2.0 ** 52 - 2.0 ** 40) * g) < 2.0 ** 30 * g
    for bad in (np.inf, np.nan):
        with pytest.raises(ValueError, match="center: must be finite"):
            gaussian_on_grid([bad], 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("sigma", [1.0, 0.3, 123.456, 2.0 ** -30 * 3])
def test_grid_variance_rounds_up(sigma):
    g = grid_for(sigma)
    s2 = grid_variance(sigma, g)
    exact = (Fraction(sigma) / Fraction(g)) ** 2
    assert s2 >= exact
    assert (s2 - exact) / exact <= Fraction(1, 2 ** 50)
    assert s2.numerator <= 2 ** 52 and s2.denominator <= 2 ** 20
    assert s2.denominator & (s2.denominator - 1) == 0     # dyadic


def test_grid_sensitivity_and_calibration():
    g = 2.0 ** -20
    for delta, d in [(0.1, 1), (1.0, 30), (0.0, 7), (2.5, 10 ** 6)]:
        out = grid_sensitivity(delta, d, g)
        # out >= delta + sqrt(d) g exactly: (out - delta)/g >= sqrt(d)
        lhs = (Fraction(out) - Fraction(delta)) / Fraction(g)
        assert lhs >= 0 and lhs * lhs >= d
        assert out - delta <= math.sqrt(d) * g * (1 + 1e-12) + 4 * np.spacing(out)
    with pytest.raises(ValueError, match="d"):
        grid_sensitivity(1.0, 0, g)
    with pytest.raises(ValueError, match="sensitivity"):
        grid_sensitivity(-1.0, 3, g)

    def sigma_for(delta):                   # any non-decreasing calibration, e.g. sqrt(2 ln(1.25/delta))/eps
        return 4.84 * delta

    for delta, d in [(1.0, 10), (2.0 ** 5, 3), (1e-3, 10 ** 4), (0.999999, 10 ** 9)]:
        sigma, gg = calibrate_on_grid(sigma_for, delta, d)
        assert gg == grid_for(sigma)
        assert sigma >= sigma_for(grid_sensitivity(delta, d, gg))
    # sqrt(d) * 2**-20 * 4.84 > 1: no sigma covers its own grid term; refused, not looped
    with pytest.raises(RuntimeError, match="bits"):
        calibrate_on_grid(sigma_for, 1.0, 10 ** 12)
    sigma, gg = calibrate_on_grid(sigma_for, 1.0, 10 ** 12, bits=25)
    assert sigma >= sigma_for(grid_sensitivity(1.0, 10 ** 12, gg))


def test_a_release_never_aborts_on_its_center_and_clamps_it_to_the_grid_range():
    """A center beyond the grid's exact range is clamped (1-Lipschitz), not refused: an
    abort, or an error quoting the center, would depend on the private data."""
    from dperm.privacy import exact_noise as en

    sigma = 1e-12
    g = en.grid_for(sigma)
    big = np.array([3.0, -5.0, 0.25 * en.grid_range(g)])
    assert np.abs(big[:2]).min() > en.grid_range(g)
    out, g2 = en.gaussian_on_grid(big, sigma, np.random.default_rng(0))
    assert g2 == g and en.on_grid(out, g)
    lim = en.grid_range(g)
    assert abs(out[0] - lim) < 10 * sigma and abs(out[1] + lim) < 10 * sigma
    assert abs(out[2] - big[2]) < 10 * sigma
    np.testing.assert_array_equal(en.clamp_to_range(big, g), np.clip(big, -lim, lim))
    # the error of the unclamped rounding names no value
    with pytest.raises(ValueError) as err:
        en.round_to_grid(big, g)
    assert "3.0" not in str(err.value) and "5.0" not in str(err.value)
