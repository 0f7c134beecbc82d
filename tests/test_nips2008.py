"""The NIPS 2008 experiments (dperm.experiments.nips2008): data generators, the two
calibrations of the new method, the quick run's shapes and sanity, and its files."""
import csv
import os

import numpy as np
import pytest

from dperm import erm, objective_perturbation
from dperm.exceptions import PrivacyLeakWarning
from dperm.experiments import nips2008 as nx


# ------------------------------------------------------------------ generators
def test_d_gamma_definition():
    d, g, n = 10, 0.1, 200_000
    X, y = nx.sample_d_gamma(n, d, g, random_state=1)
    assert X.shape == (n, d) and y.shape == (n,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    # one nonzero coordinate per row, of absolute value 1: every norm is exactly 1 (<= 1)
    assert np.all((X != 0).sum(axis=1) == 1)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    s = X.sum(axis=1) * y                 # +1 clean, -1 label noise
    sd = np.sqrt(g * (1 - g) / n)
    assert abs(np.mean(s < 0) - g) < 5 * sd
    coord = np.argmax(X != 0, axis=1)
    np.testing.assert_allclose(np.bincount(coord, minlength=d) / n, 1.0 / d, atol=5 * np.sqrt(0.1 * 0.9 / n))
    assert abs(np.mean(y > 0) - 0.5) < 5 * np.sqrt(0.25 / n)
    # the paper-scale gamma: the noisy fraction is still gamma
    X, y = nx.sample_d_gamma(400_000, 10, 0.001, random_state=2)
    frac = np.mean(X.sum(axis=1) * y < 0)
    assert abs(frac - 0.001) < 5 * np.sqrt(0.001 / 400_000)


def test_d_gamma_error_is_exact():
    g, d = 0.2, 4
    X, y = nx.sample_d_gamma(400_000, d, g, random_state=3)
    w = np.array([1.0, -2.0, 0.5, 3.0])
    empirical = np.mean((X @ w) * y <= 0)
    assert abs(nx.d_gamma_error(w, g) - empirical) < 0.005
    # the Bayes classifier errs with probability gamma; its negation with 1 - gamma
    assert nx.d_gamma_error(np.ones(d), g) == pytest.approx(g)
    assert nx.d_gamma_error(-np.ones(d), g) == pytest.approx(1 - g)
    assert nx.d_gamma_error(np.ones((3, 5, d)), g).shape == (3, 5)


@pytest.mark.parametrize("margin", [0.1, 0.05])
def test_sphere_margin_definition(margin):
    X, y, w = nx.sample_sphere_margin(1250, 20, margin, random_state=4)
    assert X.shape == (1250, 20) and y.shape == (1250,)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(w), 1.0)
    z = X @ w
    assert np.all(np.abs(z) >= margin)
    np.testing.assert_array_equal(y, np.sign(z))
    # the margin is not wider than asked: some points lie just outside it
    assert np.min(np.abs(z)) < margin + 0.02
    # uniform on the sphere: no preferred direction off the hyperplane normal
    assert np.linalg.norm(X.mean(axis=0) - (X.mean(axis=0) @ w) * w) < 0.1
    # the same hyperplane when w is passed in
    X2, y2, w2 = nx.sample_sphere_margin(300, 20, margin, w=w, random_state=5)
    np.testing.assert_allclose(w2, w)
    assert np.all(np.abs(X2 @ w) >= margin)


def test_breast_cancer_preprocessing():
    X, y = nx.load_breast_cancer_paper()
    assert X.shape == (569, 30)
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
    assert set(np.unique(y)) == {-1.0, 1.0}


def test_bad_generator_arguments():
    with pytest.raises(ValueError):
        nx.sample_d_gamma(10, 3, 0.6)
    with pytest.raises(ValueError):
        nx.sample_sphere_margin(10, 20, 1.5)


# ------------------------------------------------------------------ calibrations
def test_calibration_constants_and_bound():
    n, eps = 1125, 0.2
    alpha = np.array([1e-6, 1e-3, 1.0])
    e08, d08, b08 = nx.calibration_constants("nips2008", n, alpha, eps)
    np.testing.assert_allclose(b08, eps / 2)
    np.testing.assert_array_equal(d08, 0.0)
    # the 2011 analysis guarantees exactly eps to its own constants, more to the 2008 ones
    np.testing.assert_allclose(nx.epsilon_bound("jmlr2011", n, alpha, eps), eps, rtol=1e-12)
    np.testing.assert_allclose(nx.epsilon_bound("nips2008", n, alpha, eps),
                               eps + 2 * np.log1p(0.25 / (n * alpha)))
    assert nx.epsilon_bound("nips2008", n, 1e-6, eps)[0] > 10
    with pytest.raises(ValueError):
        nx.calibration_constants("nips2007", n, alpha, eps)


def _log_density(f, x, y, n_zero, lam, beta):
    """log density (up to the common normaliser) of the 1-d objective perturbation output f.

    Data: one row (x, y) and n_zero rows at 0.  b_D(f) = -(n lam f + y l'(y f x) x) and
    |db/df| = n lam + l''(y f x) x^2 (logistic: l' = -sigma(-z), l'' = sigma(z) sigma(-z)).
    """
    z = y * f * x
    s = 1.0 / (1.0 + np.exp(-z))
    n = n_zero + 1
    b = -(n * lam * f - y * (1.0 - s) * x)
    return -beta * abs(b) + np.log(n * lam + s * (1.0 - s) * x * x)


@pytest.mark.parametrize("n, alpha", [(100, 1e-3), (1000, 1e-5)])
def test_nips2008_calibration_exceeds_epsilon(n, alpha):
    """Exact privacy loss on neighbours D = {x=1} + zeros, D' = {x=0} + zeros, in 1-d.

    The 2008 calibration exceeds its nominal eps; the 2011 one (with its Delta) does not.
    """
    eps = 0.2
    fs = np.linspace(-5.0, 5.0, 2001)
    worst = {}
    for cal in nx.CALIBRATIONS:
        _, delta, beta = nx.calibration_constants(cal, n, alpha, eps)
        lam = alpha + delta[0]
        loss = [abs(_log_density(f, 1.0, 1.0, n - 1, lam, beta[0])
                    - _log_density(f, 0.0, 1.0, n - 1, lam, beta[0])) for f in fs]
        worst[cal] = max(loss)
    assert worst["nips2008"] > 2 * eps
    assert worst["jmlr2011"] <= eps + 1e-9


def test_batched_jmlr_path_matches_dperm_objective_perturbation():
    """The experiment's shared-noise batch reproduces dperm.objective_perturbation draw for draw."""
    X, y, _ = nx.sample_sphere_margin(300, 5, 0.1, random_state=6)
    alpha, eps, R = 1e-3, 0.5, 4
    with pytest.warns(PrivacyLeakWarning):
        ref = objective_perturbation(X, y, alpha=alpha, epsilon=eps, n_draws=R, random_state=7)
    sol = nx._solve(X, y, np_alphas=[alpha], out_specs=[],
                    new_specs={"jmlr2011": [(alpha, eps)]}, n_draws=R,
                    rng=np.random.default_rng(7), n_threads=None)
    np.testing.assert_allclose(sol["new_jmlr2011"][0], ref.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sol["nonprivate"][0], erm.minimize(X, y, alpha=alpha).coef,
                               rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------ the quick run
@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("nips2008")
    result, text, paths = nx.reproduce_nips2008(out=str(out), quick=True, progress=False)
    return result, text, paths, out


def test_quick_shapes(quick):
    r, _, _, _ = quick
    cfg = r["config"]
    dg = r["figure1"]
    assert dg["lambdas"] == (dg["gamma"], dg["gamma"] ** 2)
    for (m, lam), e in dg["errors"].items():
        runs = cfg["dg_datasets"] if m == "nonprivate" else cfg["dg_datasets"] * cfg["dg_draws"]
        assert e.shape == (len(cfg["dg_sizes"]), runs)
        assert np.all((e >= 0) & (e <= 1))
    assert set(r["figure2"]) == set(cfg["sp_margins"]) == {0.1, 0.05}
    for tb in r["figure2"].values():
        assert tb["n_train"] == 1125
        for m in nx.METHODS:
            assert tb["grid"][m].shape[0] == len(cfg["sp_lambda_exponents"])
            assert tb["errors"][m].shape == (cfg["sp_folds_run"], 1 if m == "nonprivate" else cfg["sp_runs"])
    for ec in r["figure3"].values():
        assert all(ec["errors"][m].shape[0] == len(cfg["sp_epsilons"]) for m in nx.METHODS)
    for cv in r["figure4"].values():
        assert all(cv["errors"][m].shape[0] == len(cfg["sp_sizes"]) for m in nx.METHODS)
    assert r["breast_cancer"]["errors"]["sensitivity"].shape == (cfg["bc_folds_run"], cfg["bc_runs"])
    assert r["seconds"] < 20


def test_quick_sanity_sphere(quick):
    r, _, _, _ = quick
    for margin, tb in r["figure2"].items():
        npriv = tb["errors"]["nonprivate"].mean()
        assert npriv < 0.5
        for m in ("sensitivity", "new_nips2008", "new_jmlr2011"):
            assert npriv < tb["errors"][m].mean()
        # at small eps the private methods are clearly worse than the non-private one
        ec = r["figure3"][margin]
        i = int(np.argmin(ec["epsilons"]))
        for m in ("sensitivity", "new_nips2008", "new_jmlr2011"):
            assert ec["errors"][m][i].mean() > ec["errors"]["nonprivate"][i].mean() + 0.1
        # the new method is no worse than the sensitivity method on average over the Lambda grid
        for m in ("new_nips2008", "new_jmlr2011"):
            assert tb["grid"][m].mean() <= tb["grid"]["sensitivity"].mean()


def test_quick_sanity_d_gamma_and_breast_cancer(quick):
    r, _, _, _ = quick
    dg = r["figure1"]
    big = len(dg["sizes"]) - 1
    tiny = dg["gamma"] ** 2
    # the sensitivity method stays near chance at Lambda = gamma^2; the new method learns
    assert dg["errors"][("sensitivity", tiny)][big].mean() > 0.3
    for m in ("new_nips2008", "new_jmlr2011"):
        assert dg["errors"][(m, tiny)][big].mean() < 0.05
        sens = dg["errors"][("sensitivity", dg["gamma"])][big].mean()
        assert dg["errors"][(m, dg["gamma"])][big].mean() <= sens
    bc = r["breast_cancer"]
    assert bc["errors"]["nonprivate"].mean() < 0.1
    for m in ("new_nips2008", "new_jmlr2011"):
        assert bc["errors"][m].mean() <= bc["errors"]["sensitivity"].mean()


def test_quick_text(quick):
    r, text, _, _ = quick
    assert nx.PIMA_LINE in text and r["pima"] == nx.PIMA_LINE
    for label in ("NIPS 2008 calibration", "JMLR 2011 calibration", "Figure 1", "Figure 2",
                  "Figure 3", "Figure 4", "Breast Cancer", "not retrieved"):
        assert label in text
    assert "nan" not in text


def test_quick_files(quick):
    _, _, paths, out = quick
    csvs = [p for p in paths if p.endswith(".csv")]
    assert {os.path.basename(p) for p in csvs} == {
        "nips2008_figure1.csv", "nips2008_figure2_table.csv", "nips2008_figure2_lambda_grid.csv",
        "nips2008_figure3.csv", "nips2008_figure4.csv", "nips2008_real_data.csv"}
    for p in paths:
        assert os.path.dirname(p) == str(out) and os.path.getsize(p) > 0
    with open(os.path.join(out, "nips2008_real_data.csv")) as fh:
        rows = list(csv.DictReader(fh))
    assert any(row["dataset"] == "pima" and row["status"] == "not available offline, not run"
               for row in rows)
    with open(os.path.join(out, "nips2008_figure2_table.csv")) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * len(nx.METHODS)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not [p for p in paths if p.endswith(".png")]
    else:
        assert {os.path.basename(p) for p in paths if p.endswith(".png")} == {
            "nips2008_figure1.png", "nips2008_figure3.png", "nips2008_figure4.png"}


def test_paper_comparison_columns():
    """With a paper value filled in, the difference and the one-std verdict appear."""
    assert nx._compare((0.20, 0.01), None) == ("n/a", "-", "-")
    p, diff, within = nx._compare((0.20, 0.01), (0.25, 0.06))
    assert diff == "-0.0500" and within == "yes"
    assert nx._compare((0.20, 0.01), (0.30, 0.05))[2] == "no"
