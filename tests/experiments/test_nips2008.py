"""The NIPS 2008 experiments (dperm.experiments.nips2008 and nips2008_early): the data sets
the paper defines, the two readings of its noise law (and that the 2008 text's is not eps-DP,
by the exact output density), the calibrations, and the quick run beside the paper's numbers."""
import csv
import os
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from dperm import cli, erm, objective_perturbation
from dperm.exceptions import PrivacyLeakWarning
from dperm.experiments import _nips2008_common as cm
from dperm.experiments import nips2008 as nx
from dperm.experiments import nips2008_early as early

SHARED = Path(__file__).resolve().parents[3] / "shared"
PIMA_CSV = SHARED / "data" / "pima" / "pima-indians-diabetes.csv"
needs_pima = pytest.mark.skipif(not PIMA_CSV.is_file(), reason="../shared/data/pima is absent")


# ------------------------------------------------------------------ data sets
def test_d_gamma_support_is_the_papers_distribution():
    d, g = 10, 0.001
    X, y = nx.d_gamma_support(d, g)
    assert X.shape == (2 ** d, d) and y.shape == (2 ** d,)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.abs(X[:, 0]), g)
    np.testing.assert_allclose(np.abs(X[:, 1:]), np.sqrt((1 - g * g) / (d - 1)))
    assert len({tuple(np.sign(r)) for r in X}) == 2 ** d          # every corner once
    np.testing.assert_array_equal(y, np.sign(X[:, 0]))
    assert nx.d_gamma_error(np.eye(d)[0], g) == 0.0              # (1, 0, ..., 0) is perfect
    assert nx.d_gamma_error(-np.eye(d)[0], g) == 1.0
    assert nx.d_gamma_error(np.eye(d)[1], g) == pytest.approx(0.5)
    assert nx.d_gamma_error(np.ones((3, 4, d)), g).shape == (3, 4)
    Xs, ys = nx.sample_d_gamma(50_000, d, g, random_state=1)
    np.testing.assert_allclose(np.abs(Xs), np.broadcast_to(np.abs(X[0]), Xs.shape))
    assert abs(np.mean(ys > 0) - 0.5) < 5 * np.sqrt(0.25 / 50_000)
    w = np.random.default_rng(2).standard_normal(d)
    assert abs(np.mean((Xs @ w) * ys <= 0) - nx.d_gamma_error(w, g)) < 0.01
    with pytest.raises(ValueError):
        nx.d_gamma_support(1, g)
    with pytest.raises(ValueError):
        nx.sample_d_gamma(0, d, g)


@pytest.mark.parametrize("margin", [0.1, 0.05])
def test_sphere_margin_definition(margin):
    X, y, w = nx.sample_sphere_margin(1250, 20, margin, random_state=4)
    assert X.shape == (1250, 20) and y.shape == (1250,)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-12)
    z = X @ w
    assert np.all(np.abs(z) >= margin) and np.min(np.abs(z)) < margin + 0.02
    np.testing.assert_array_equal(y, np.sign(z))
    X2, _, w2 = nx.sample_sphere_margin(300, 20, margin, w=w, random_state=5)
    np.testing.assert_allclose(w2, w)
    assert np.all(np.abs(X2 @ w) >= margin)


def test_unseparable_sphere_flips_only_inside_the_margin():
    X, y, w = early.sample_sphere_unseparable(200_000, 10, 0.1, 0.2, random_state=6)
    z = X @ w
    inside = np.abs(z) < 0.1
    np.testing.assert_array_equal(y[~inside], np.sign(z[~inside]))
    flipped = y[inside] != np.sign(z[inside])
    assert abs(flipped.mean() - 0.2) < 5 * np.sqrt(0.16 / inside.sum())
    with pytest.raises(ValueError):
        early.sample_sphere_unseparable(10, 10, 0.1, 1.5)


def test_uci_preprocessings():
    X = np.random.default_rng(7).gamma(2.0, 3.0, size=(100, 5))
    before = X.copy()
    for how in nx.UCI_PREPROCESSINGS:
        Z = nx.preprocess_uci(X, how)
        norms = np.linalg.norm(Z, axis=1)
        assert np.all(norms <= 1 + 1e-12)
        if how.endswith("max_norm"):
            assert norms.max() == pytest.approx(1.0)
        else:
            np.testing.assert_allclose(norms, 1.0)
    np.testing.assert_array_equal(X, before)                      # the input is untouched
    # max_norm keeps the raw attributes' directions and relative norms
    Z = nx.preprocess_uci(X, "max_norm")
    np.testing.assert_allclose(Z * np.linalg.norm(X, axis=1).max(), X)
    with pytest.raises(ValueError, match="preprocess"):
        nx.preprocess_uci(X, "zscore")
    Xb, yb = nx.load_breast_cancer_paper()
    assert Xb.shape == (569, 30) and set(np.unique(yb)) == {-1.0, 1.0}


# ------------------------------------------------------------------ Pima
@needs_pima
def test_load_pima(monkeypatch, tmp_path):
    from dperm.datasets import PIMA_COLUMNS, load_pima

    X, y = load_pima(PIMA_CSV)
    assert X.shape == (768, 8) and int((y > 0).sum()) == 268
    assert X[0].tolist() == [6, 148, 72, 35, 0, 33.6, 0.627, 50] and y[0] == 1.0
    monkeypatch.setenv("DPERM_PIMA", str(PIMA_CSV))
    b = load_pima(return_frame=True)
    assert b.feature_names == list(PIMA_COLUMNS) and b.data.shape == (768, 8)
    Xp, _ = load_pima(preprocess="public")
    assert np.all(np.linalg.norm(Xp, axis=1) <= 1 + 1e-12) and np.all(Xp >= 0)
    with pytest.warns(PrivacyLeakWarning, match="READ FROM THE DATA"):
        Xn, _ = load_pima(preprocess="nips2008")
    assert np.linalg.norm(Xn, axis=1).max() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="preprocess"):
        load_pima(preprocess="paper")
    # another copy: refused by the checksum unless check=False; a bad header is named
    text = PIMA_CSV.read_text()
    other = tmp_path / "pima.csv"
    other.write_text(text.replace("6,148,72", "7,148,72", 1))
    from dperm.datasets import DataChecksumError
    with pytest.raises(DataChecksumError, match="check=False"):
        load_pima(other)
    assert load_pima(other, check=False)[0][0, 0] == 7
    assert other.read_text() == text.replace("6,148,72", "7,148,72", 1)   # file unchanged
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace("pregnant", "pregnancies", 1))
    with pytest.raises(ValueError, match="columns"):
        load_pima(bad, check=False)


def test_load_pima_missing_says_how_to_get_it(monkeypatch, tmp_path):
    from dperm.datasets import load_pima

    monkeypatch.delenv("DPERM_PIMA", raising=False)
    with pytest.raises(FileNotFoundError, match="DPERM_PIMA"):
        load_pima()
    with pytest.raises(FileNotFoundError, match="not a file"):
        load_pima(tmp_path / "nowhere.csv")


def test_cli_pima_flag(tmp_path):
    assert cli.main(["reproduce", "nips2008", "--pima", str(tmp_path / "none.csv"),
                     "--out", str(tmp_path)]) == 2


# ------------------------------------------------------------------ the two noise laws
def test_noise_readings_draw_their_laws():
    rng = np.random.default_rng(8)
    d, s, n = 5, 3.0, 20_000
    lap = cm.sample_noise("laplace_norm", s, d, n, rng)
    gam = cm.sample_noise("gamma", s, d, n, rng)
    assert lap.shape == gam.shape == (n, d)
    rl, rg = np.linalg.norm(lap, axis=1), np.linalg.norm(gam, axis=1)
    assert stats.kstest(rl, stats.expon(scale=s).cdf).pvalue > 1e-3       # |Laplace(0, s)|
    assert stats.kstest(rg, stats.gamma(d, scale=s).cdf).pvalue > 1e-3     # Gamma(d, s)
    # power: each norm sample is rejected under the other reading's law
    assert stats.kstest(rl, stats.gamma(d, scale=s).cdf).pvalue < 1e-6
    assert stats.kstest(rg, stats.expon(scale=s).cdf).pvalue < 1e-6
    u = lap / rl[:, None]
    assert stats.kstest((u[:, 0] + 1) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="reading"):
        cm.sample_noise("gaussian", s, d, 3, rng)


def _log_h(b, reading, s):
    """log density of the noise vector b (rows) in R^d under a reading, scale s."""
    d = b.shape[-1]
    r = np.linalg.norm(b, axis=-1)
    log_sphere = np.log(2.0) + (d / 2.0) * np.log(np.pi) - gammaln(d / 2.0)   # S_{d-1} area
    if reading == "laplace_norm":       # f(r) = exp(-r/s)/s, spread over the sphere of radius r
        return -r / s - np.log(s) - log_sphere - (d - 1) * np.log(r)
    return -r / s - d * np.log(s) - gammaln(d) - log_sphere      # prop. to exp(-||b||/s)


def _neighbours(n=50, d=2, seed=9):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X2, y2 = X.copy(), y.copy()
    # the last row replaced by a unit row at right angles to it, with the other label
    # (the logistic loss sees only y x, so flipping both would change nothing)
    X2[-1] = np.roll(X[-1], 1) * np.array([-1.0] + [1.0] * (d - 1)) / np.linalg.norm(X[-1])
    y2[-1] = -y[-1]
    return (X, y), (X2, y2)


@pytest.mark.parametrize("reading", cm.READINGS)
def test_sensitivity_method_exact_privacy_loss(reading):
    """Output density ratio of Algorithm 1 on neighbouring data sets, d = 2, evaluated on
    rays approaching each output's centre: the gamma reading stays within eps; the 2008 text's
    Laplace-norm reading is unbounded (the density of b is infinite at 0 when d > 1)."""
    (X, y), (X2, y2) = _neighbours()
    n, lam, eps = X.shape[0], 0.1, 0.5
    w1 = erm.minimize(X, y, alpha=lam).coef
    w2 = erm.minimize(X2, y2, alpha=lam).coef
    assert 0 < np.linalg.norm(w1 - w2) <= 2 / (n * lam)
    s = 2.0 / (n * lam * eps)
    angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    dirs = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    rho = np.logspace(-9, 1, 41) * s
    T = np.concatenate([c + rho[:, None, None] * dirs[None] for c in (w1, w2)]).reshape(-1, 2)
    loss = _log_h(T - w1, reading, s) - _log_h(T - w2, reading, s)
    worst = np.max(np.abs(loss))
    if reading == "gamma":
        assert worst <= eps + 1e-9
    else:
        assert worst > 10 * eps


def _b_and_logdet(f, X, y, lam):
    """b_D(f) = -n grad J_D(f) (the noise that makes f the minimiser) and log|det db/df|."""
    z = y * (X @ f)
    sig = 1.0 / (1.0 + np.exp(z))               # sigma(-z)
    b = -X.shape[0] * lam * f + (y * sig) @ X
    H = X.shape[0] * lam * np.eye(X.shape[1]) + (X.T * (sig * (1 - sig))) @ X
    return b, np.linalg.slogdet(H)[1]


@pytest.mark.parametrize("reading, calibration", [("laplace_norm", "nips2008"),
                                                  ("gamma", "jmlr2011")])
def test_new_method_exact_privacy_loss(reading, calibration):
    """Output density of Algorithm 2, h(b_D(f)) |det db_D/df|, on neighbouring data sets near
    the non-private minimisers (where b_D(f) -> 0): the JMLR 2011 calibration of the gamma
    law stays within eps; the Laplace-norm reading of the 2008 text does not, whatever eps."""
    (X, y), (X2, y2) = _neighbours(n=40, seed=10)
    lam, eps = 0.05, 0.5
    _, delta, beta = cm.calibration_constants(calibration, X.shape[0], lam, eps)
    lam_eff, s = lam + delta[0], 1.0 / beta[0]
    centres = [erm.minimize(A, b, alpha=lam_eff).coef for A, b in ((X, y), (X2, y2))]
    angles = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    worst = 0.0
    for c in centres:
        for rho in np.logspace(-9, 0, 19):
            for a in angles:
                f = c + rho * np.array([np.cos(a), np.sin(a)])
                b1, ld1 = _b_and_logdet(f, X, y, lam_eff)
                b2, ld2 = _b_and_logdet(f, X2, y2, lam_eff)
                loss = (_log_h(b1[None], reading, s)[0] + ld1) - (_log_h(b2[None], reading, s)[0] + ld2)
                worst = max(worst, abs(loss))
    if reading == "gamma":
        assert worst <= eps + 1e-9
    else:
        assert worst > 10 * eps


# ------------------------------------------------------------------ calibrations
def test_calibration_constants_and_bound():
    n, eps = 1000, 0.2
    alpha = np.array([1e-6, 1e-3, 1.0])
    e08, d08, b08 = nx.calibration_constants("nips2008", n, alpha, eps)
    np.testing.assert_allclose(b08, eps / 2)
    np.testing.assert_array_equal(d08, 0.0)
    np.testing.assert_allclose(nx.epsilon_bound("jmlr2011", n, alpha, eps), eps, rtol=1e-12)
    np.testing.assert_allclose(nx.epsilon_bound("nips2008", n, alpha, eps),
                               eps + 2 * np.log1p(0.25 / (n * alpha)))
    assert cm.column_epsilon_bound("sensitivity:laplace_norm", n, 1e-3, eps) == float("inf")
    assert cm.column_epsilon_bound("sensitivity:gamma", n, 1e-3, eps) == eps
    assert cm.column_epsilon_bound("new_jmlr2011", n, 1e-3, eps) == pytest.approx(eps)
    assert cm.column_epsilon_bound("nonprivate", n, 1e-3, eps) is None
    with pytest.raises(ValueError):
        nx.calibration_constants("nips2007", n, alpha, eps)


def _log_density_1d(f, x, y, n_zero, lam, beta):
    z = y * f * x
    s = 1.0 / (1.0 + np.exp(-z))
    n = n_zero + 1
    b = -(n * lam * f - y * (1.0 - s) * x)
    return -beta * abs(b) + np.log(n * lam + s * (1.0 - s) * x * x)


@pytest.mark.parametrize("n, alpha", [(100, 1e-3), (1000, 1e-5)])
def test_nips2008_calibration_exceeds_epsilon(n, alpha):
    """1-d (where both readings coincide): the 2008 calibration's missing slack lets the exact
    privacy loss exceed its nominal eps; the 2011 calibration (with its Delta) does not."""
    eps = 0.2
    fs = np.linspace(-5.0, 5.0, 2001)
    worst = {}
    for cal in nx.CALIBRATIONS:
        _, delta, beta = nx.calibration_constants(cal, n, alpha, eps)
        lam = alpha + delta[0]
        worst[cal] = max(abs(_log_density_1d(f, 1.0, 1.0, n - 1, lam, beta[0])
                             - _log_density_1d(f, 0.0, 1.0, n - 1, lam, beta[0])) for f in fs)
    assert worst["nips2008"] > 2 * eps
    assert worst["jmlr2011"] <= eps + 1e-9


def test_batched_jmlr_column_matches_dperm_objective_perturbation():
    """The experiment's shared-noise batch reproduces dperm.objective_perturbation draw for draw."""
    X, y, _ = nx.sample_sphere_margin(300, 5, 0.1, random_state=6)
    alpha, eps, R = 1e-3, 0.5, 4
    with pytest.warns(PrivacyLeakWarning):
        ref = objective_perturbation(X, y, alpha=alpha, epsilon=eps, n_draws=R, random_state=7)
    sol = cm.solve_columns(X, y, [(alpha, eps)], R, np.random.default_rng(7))
    np.testing.assert_allclose(sol["new_jmlr2011"][0], ref.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sol["nonprivate"][0], erm.minimize(X, y, alpha=alpha).coef,
                               rtol=1e-7, atol=1e-9)
    for k in cm.PRIVATE_KEYS:
        assert sol[k].shape == (1, R, 5)


def test_comparison_helpers():
    assert cm.compare((0.20, 0.01), None) == ("n/a", "-", "-")
    p, diff, within = cm.compare((0.20, 0.01), (0.25, 0.06))
    assert diff == "-0.0500" and within == "yes"
    # 2 sqrt(0.05^2 + 0.01^2) = 0.102 < 0.11
    assert cm.compare((0.20, 0.01), (0.31, 0.05))[2] == "no"
    assert cm.within_two_sd((0.0, 0.0), (0.0, 0.0))
    m, sd = cm.fold_mean_std(np.array([[0.1, 0.3], [0.3, 0.5]]))
    assert m == pytest.approx(0.3) and sd == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert cm.equivalent_epsilon([0.1, 1.0], [0.4, 0.0], 0.2) == pytest.approx(np.sqrt(0.1))
    assert cm.equivalent_epsilon([0.1, 1.0], [0.4, 0.1], 0.5) is None


# ------------------------------------------------------------------ the quick run
@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("nips2008")
    pima = str(PIMA_CSV) if PIMA_CSV.is_file() else None
    result, text, paths = nx.reproduce_nips2008(out=str(out), quick=True, progress=False,
                                                pima=pima)
    return result, text, paths, out


def test_quick_shapes(quick):
    r, _, _, _ = quick
    cfg = r["config"]
    dg = r["figure1"]
    assert dg["lambdas"] == (dg["gamma"], dg["gamma"] ** 2)
    for (k, _lam), e in dg["errors"].items():
        assert e.shape == (len(cfg["dg_sizes"]), cfg["dg_datasets"],
                           1 if k == "nonprivate" else cfg["dg_draws"])
        assert np.all((e >= 0) & (e <= 1))
    names = {"margin 0.1", "margin 0.05", "breast_cancer"} | ({"pima"} if PIMA_CSV.is_file() else set())
    assert set(r["datasets"]) == names
    for name, ds in r["datasets"].items():
        tb = ds["table"]
        assert tb["n_train"] == {"margin 0.1": 1000, "margin 0.05": 1000, "pima": 614,
                                 "breast_cancer": 455}[name]
        for k in nx.KEYS:
            assert tb["errors"][k].shape == (cfg["folds_run"], 1 if k == "nonprivate" else cfg["runs"])
            assert ds["learning_curve"]["errors"][k].shape[0] == len(ds["learning_curve"]["sizes"])
    assert r["datasets"]["margin 0.1"]["table"]["lambda"] == 0.01
    assert r["datasets"]["margin 0.05"]["table"]["lambda"] == 0.001
    assert r["datasets"]["breast_cancer"]["table"]["lambda"] == 1e-6
    assert set(r["early"]["datasets"]) == {"margin 0.03", "unseparable"}
    for ds in r["early"]["datasets"].values():
        assert ds["n_train"] == 14000


def test_quick_new_method_below_sensitivity_method(quick):
    r, _, _, _ = quick
    for name in ("margin 0.1", "margin 0.05"):
        tb = r["datasets"][name]["table"]["errors"]
        assert tb["nonprivate"].mean() <= 0.01
        for reading in nx.READINGS:
            assert tb["new_nips2008:" + reading].mean() < tb["sensitivity:" + reading].mean()
        assert tb["new_jmlr2011"].mean() < tb["sensitivity:gamma"].mean()
    for ds in r["early"]["datasets"].values():
        assert ds["errors"]["new_nips2008:gamma"].mean() < ds["errors"]["sensitivity:gamma"].mean()
    bc = r["datasets"]["breast_cancer"]["table"]["errors"]
    assert bc["nonprivate"].mean() < 0.15
    assert bc["new_nips2008:laplace_norm"].mean() < bc["sensitivity:laplace_norm"].mean()


def test_quick_text_shows_every_paper_number(quick):
    r, text, _, _ = quick
    cells = [v for name, t in nx.PAPER.items() if name in r["datasets"] for v in t.values()]
    cells += [v for t in early.PAPER_EARLY.values() for v in t.values()]
    for mean, sd in cells:
        assert f"{mean:.4f} ± {sd:.4f}" in text
    for label in ("Figure 1", "Figure 2", "Figure 3", "Figure 4", "Earlier version", "Pima",
                  "Breast Cancer", "laplace_norm", "gamma", "not eps-DP", "≤2σ"):
        assert label in text
    # no NaN number anywhere; a word such as the Pima header's "pregnant" is not one
    # (a plain substring test failed whenever ../shared/data/pima was absent)
    assert not re.search(r"(?<![A-Za-z])nan(?![A-Za-z])", text, re.IGNORECASE), text
    if not PIMA_CSV.is_file():
        assert "UCI Pima Diabetes: not run" in text


def test_quick_files(quick):
    r, _, paths, out = quick
    names = {os.path.basename(p) for p in paths}
    assert {"nips2008_figure1.csv", "nips2008_figure2_table.csv",
            "nips2008_figure2_lambda_grid.csv", "nips2008_figure3.csv", "nips2008_figure4.csv",
            "nips2008_real_data.csv", "nips2008_uci_preprocessing.csv",
            "nips2008_early_table.csv", "nips2008_early_curves.csv"} <= names
    for p in paths:
        assert os.path.dirname(p) == str(out) and os.path.getsize(p) > 0

    def rows(name):
        with open(os.path.join(out, name)) as fh:
            return list(csv.DictReader(fh))
    table = rows("nips2008_figure2_table.csv")
    assert len(table) == 2 * len(nx.KEYS)
    for row in table + rows("nips2008_early_table.csv"):
        if row["method"] == "new_jmlr2011":
            assert row["paper_mean"] == ""
        else:
            assert row["paper_mean"] != "" and row["within_paper_std"] in ("yes", "no")
        assert row["reading"] in ("", "laplace_norm", "gamma")
    paper = {(row["margin"], row["method"]): float(row["paper_mean"]) for row in table
             if row["paper_mean"]}
    assert paper[("0.1", "sensitivity")] == 0.0924 and paper[("0.05", "new_nips2008")] == 0.0687
    real = rows("nips2008_real_data.csv")
    bc = {r_["method"] + r_["reading"]: r_ for r_ in real if r_["dataset"] == "breast_cancer"}
    assert bc["nonprivate"]["paper_mean"] == "0.0755"
    if not PIMA_CSV.is_file():
        assert any(r_["dataset"] == "pima" and r_["status"].startswith("not run") for r_ in real)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not [p for p in paths if p.endswith(".png")]
    else:
        assert {"nips2008_figure1.png", "nips2008_figure3.png", "nips2008_figure4.png",
                "nips2008_early_curves.png"} <= names
