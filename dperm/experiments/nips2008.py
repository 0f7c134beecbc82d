"""The experiments of Chaudhuri & Monteleoni, "Privacy-preserving logistic
regression", NIPS 2008 (the conference predecessor of the JMLR 2011 paper),
logistic loss only.

What was available to write this, and what was not
---------------------------------------------------
Only the 2008 paper's abstract and the opening of its introduction could be
read from the stored copies of the proceedings text; its Sections 3-5 (the
example distribution, the privacy proof of the new method, the experiments
and their tables) could not.  So:

* the data-set parameters below (d, gamma, epsilon, Lambda, margins, n, the
  Breast Cancer Lambda) are the ones of the task that asked for this
  reproduction, not read from the paper;
* :func:`sample_d_gamma` is OUR hard case for the sensitivity method, built to
  show what the abstract states ("for certain data distributions, this
  algorithm has poor learning generalization, compared with standard
  regularized logistic regression"); it is not the paper's D_d(gamma), whose
  definition we could not read;
* :data:`PAPER` holds the paper's reported means and standard deviations; every
  entry is ``None`` (not retrieved), and the text output says so instead of
  inventing a comparison.  Filling an entry (mean, std) turns on the
  difference and within-one-standard-deviation columns.

The two calibrations of the new method (objective perturbation)
----------------------------------------------------------------
Both papers minimise the same objective, with the same normalisation:

    J(f) = (1/n) sum_i log(1 + exp(-y_i f.x_i)) + (Lambda/2) ||f||^2,  ||x_i|| <= 1.

* Sensitivity method (output perturbation): identical in both papers.  The
  minimiser's L2 sensitivity is 2/(n Lambda), so f* + b with density of b
  proportional to exp(-n Lambda eps ||b|| / 2).
* New method, "NIPS 2008 calibration": argmin J(f) + b.f/n with b of density
  proportional to exp(-eps ||b|| / 2), i.e. beta = eps/2 and Delta = 0 for
  every Lambda (no slack).  This is the 2008 algorithm as public
  implementations of it draw the noise (||b|| ~ Gamma(d, 2/eps)); the JMLR
  paper says of the slack it adds that it "is due to additional factors in
  bounding the ratio of the densities", i.e. the factors the 2008 calibration
  does not pay for.
* New method, "JMLR 2011 calibration" (dperm's Algorithm 2):
  eps' = eps - log(1 + 2c/(n Lambda) + c^2/(n Lambda)^2) with c = 1/4 for
  the logistic loss; if eps' <= 0, Delta = c/(n(e^{eps/4} - 1)) - Lambda and
  eps' = eps/2; beta = eps'/2.

Why the 2011 version is the corrected one.  The output f determines the
noise, b_D(f) = -n grad J_D(f), and the density of f is the density of
b_D(f) times |det d b_D / d f| = det(n Lambda I + sum_i l''(y_i f.x_i) x_i x_i^T).
Between neighbouring data sets the noise term changes by at most
exp(beta ||b_D - b_D'||) <= exp(2 beta), but the determinant changes too: by
a factor up to (1 + c/(n Lambda))^2.  With beta = eps/2 and no slack the
privacy loss can therefore reach eps + 2 log(1 + c/(n Lambda)) (our
:func:`epsilon_bound`), which is far above eps whenever n Lambda is not large
against c; the 2011 constants make this bound exactly eps.  This is not only a
loose bound: on a one-dimensional pair of neighbouring data sets the exact log
ratio of the output densities of the 2008 calibration exceeds eps (the test
`test_nips2008_calibration_exceeds_epsilon` computes it), while the 2011
calibration stays under eps.  Where the two calibrations' errors differ, the
2008 column is bought with a weaker privacy guarantee than its nominal eps;
the tables show that bound next to it.

Protocols (ours, where the paper's could not be read)
-----------------------------------------------------
* Figure 1, learning curves on D_d(gamma): d = 10, gamma = 0.001, eps = 0.2,
  Lambda = gamma and gamma^2; for each training size, fresh data sets and
  fresh noise draws; the test error is computed exactly from the distribution.
* Figure 2 (table): uniform on the unit sphere in R^20, labels by a random
  hyperplane through the origin, points closer than the margin (0.1, 0.05)
  to it removed (rejection, so exactly n = 1250 remain); 10-fold
  cross-validation, eps = 0.2, every mechanism run 50 times per fold; each
  method at its best Lambda on a grid (selected on the test folds, as the
  JMLR paper's tables do: an optimistic, non-private choice).  Mean and
  standard deviation over all (fold, run) errors.
* Figure 3: the same data and protocol, error against eps at each method's
  Lambda of the table.
* Figure 4: learning curves on the sphere data (same hyperplane), fresh
  training sets of each size, a fixed test set of 10,000 points.
* Breast Cancer Wisconsin (Diagnostic), sklearn's copy (569 rows, 30
  features): columns standardised, then every row scaled to norm 1;
  10-fold cross-validation, eps = 0.2, Lambda = 1e-6 (and a Lambda grid
  alongside); 50 runs per fold.  The standardisation reads means and standard
  deviations from the data: fine for a reproduction, not for a release.
* Pima Indians Diabetes: not shipped and not downloadable here; reported as
  "not available offline, not run".

Every private problem of one data set is solved in ONE batched call to
:func:`dperm.erm.minimize` (all Lambda, calibrations and draws); the two
calibrations share their noise draws (one direction and Gamma variate,
scaled by each calibration's beta), so their difference is not noise.  The
seeds make runs reproducible and void the privacy guarantee: this is an
experiment, not a release.
"""
import csv
import os
import time

import numpy as np

from dperm import erm
from dperm.experiments._progress import Progress, plural
from dperm.mechanisms import add_output_noise, objective_perturbation_constants
from dperm.noise import sample_l2_laplace

__all__ = [
    "CALIBRATIONS", "CALIBRATION_LABELS", "METHODS", "METHOD_LABELS", "PAPER", "PAPER_NOTE",
    "PIMA_LINE", "LOGISTIC_C", "sample_d_gamma", "d_gamma_error", "sample_sphere_margin",
    "load_breast_cancer_paper", "nips2008_objective_constants", "calibration_constants",
    "epsilon_bound", "run_nips2008", "write_nips2008", "format_nips2008", "reproduce_nips2008",
]

#: curvature bound c of the logistic loss (l'' <= 1/4)
LOGISTIC_C = 0.25

CALIBRATIONS = ("nips2008", "jmlr2011")
CALIBRATION_LABELS = {"nips2008": "NIPS 2008 calibration", "jmlr2011": "JMLR 2011 calibration"}

#: result keys of the four columns; the sensitivity method is the same under both calibrations
METHODS = ("nonprivate", "sensitivity", "new_nips2008", "new_jmlr2011")
METHOD_LABELS = {
    "nonprivate": "non-private",
    "sensitivity": "sensitivity method (both calibrations)",
    "new_nips2008": "new method, NIPS 2008 calibration",
    "new_jmlr2011": "new method, JMLR 2011 calibration",
}
_SHORT = {"nonprivate": "non-private", "sensitivity": "sensitivity",
          "new_nips2008": "new, NIPS 2008 cal.", "new_jmlr2011": "new, JMLR 2011 cal."}

PAPER_NOTE = ("paper's numbers not retrieved: only the abstract and the opening of the "
              "introduction of the NIPS 2008 text could be read, so no paper column is filled "
              "and no 'within the paper's standard deviation' verdict is made")

#: The paper's reported (mean, std) per table cell; None = not retrieved (see PAPER_NOTE).
PAPER = {
    "figure2": {(margin, m): None for margin in (0.1, 0.05) for m in METHODS},
    "breast_cancer": {m: None for m in METHODS},
    "pima": {m: None for m in METHODS},
}

PIMA_LINE = "Pima: not available offline, not run"

# ------------------------------------------------------------------ settings
FULL = dict(
    dg_d=10, dg_gamma=1e-3, dg_eps=0.2,
    dg_sizes=(100, 300, 1000, 3000, 10000, 30000, 100000), dg_datasets=10, dg_draws=10,
    sp_d=20, sp_margins=(0.1, 0.05), sp_n=1250, sp_eps=0.2, sp_folds=10, sp_folds_run=10,
    sp_runs=50, sp_lambda_exponents=tuple(np.arange(-6.0, 2.01, 0.5)),
    sp_epsilons=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
    sp_sizes=(50, 100, 200, 500, 1000, 2000, 5000, 10000), sp_curve_datasets=10,
    sp_curve_draws=10, sp_test=10000,
    bc_eps=0.2, bc_lambda=1e-6, bc_lambda_exponents=(-6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0),
    bc_folds=10, bc_folds_run=10, bc_runs=50,
)
QUICK = dict(
    FULL, dg_sizes=(100, 1000, 10000), dg_datasets=2, dg_draws=5,
    sp_folds_run=2, sp_runs=10, sp_lambda_exponents=(-6.0, -4.0, -2.0, -1.0, 0.0, 1.0),
    sp_epsilons=(0.05, 0.2, 1.0), sp_sizes=(100, 1000), sp_curve_datasets=2, sp_curve_draws=5,
    sp_test=2000, bc_lambda_exponents=(-6.0, -3.0, 0.0), bc_folds_run=2, bc_runs=10,
)

# the solver's defaults are tight (1e-10); tiny Lambda with the 2008 noise can put the minimiser
# far out where the loss is flat, so allow more iterations and record who did not converge
_MAX_ITER = 5000


# ------------------------------------------------------------------ data
def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def sample_d_gamma(n, d=10, gamma=0.001, random_state=None):
    """n examples of our D_d(gamma) (NOT the paper's definition, which we could not read).

    Each example picks a coordinate j uniformly in {1..d} and a label y
    uniformly in {-1, +1}; x = y e_j with probability 1 - gamma and
    x = -y e_j (label noise) with probability gamma.  Every ||x|| = 1.
    The Bayes classifier is f = (1, ..., 1) with error gamma.

    Why it separates the two mechanisms: each coordinate is its own
    one-dimensional problem whose minimiser f_j is about log(1/gamma) for
    small Lambda, and the data's curvature along e_j, about
    l''(f_j)/d, is far above Lambda.  The new method's perturbation b/n is
    damped by that curvature, so it errs only while ||b||/n is comparable to
    it; the sensitivity method's noise has norm about 2d/(n Lambda eps)
    whatever the data, so with Lambda = gamma^2 it needs about 1/gamma^2
    times more data to stop flipping coordinates.

    Returns X (n, d) float64 and y (n,) in {-1.0, +1.0}.
    """
    n, d = int(n), int(d)
    if n < 1 or d < 1 or not 0.0 <= gamma < 0.5:
        raise ValueError(f"sample_d_gamma: need n, d >= 1 and 0 <= gamma < 0.5, got {n}, {d}, {gamma}")
    rng = _rng(random_state)
    j = rng.integers(0, d, size=n)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    flip = rng.random(n) < gamma
    X = np.zeros((n, d))
    X[np.arange(n), j] = np.where(flip, -y, y)
    return X, y


def d_gamma_error(coef, gamma):
    """Exact test error of linear classifiers coef (..., d) on D_d(gamma) (score 0 = mistake)."""
    coef = np.asarray(coef, dtype=np.float64)
    wrong_clean = coef <= 0          # clean point y e_j: margin f_j
    wrong_noisy = coef >= 0          # noisy point -y e_j: margin -f_j
    return ((1.0 - gamma) * wrong_clean + gamma * wrong_noisy).mean(axis=-1)


def sample_sphere_margin(n, d=20, margin=0.1, w=None, random_state=None):
    """n points uniform on the unit sphere of R^d, labelled by a hyperplane, margin removed.

    w: the unit normal of the hyperplane through the origin (drawn uniformly
    when None).  Points with |w.x| < margin are discarded and replaced
    (rejection sampling), so exactly n points remain; y = sign(w.x).
    Returns (X (n, d), y (n,), w (d,)).
    """
    n, d = int(n), int(d)
    if n < 1 or d < 2 or not 0.0 <= margin < 1.0:
        raise ValueError("sample_sphere_margin: need n >= 1, d >= 2, 0 <= margin < 1, "
                         f"got {n}, {d}, {margin}")
    rng = _rng(random_state)
    if w is None:
        w = rng.standard_normal(d)
    w = np.asarray(w, dtype=np.float64)
    w = w / np.linalg.norm(w)
    parts, kept = [], 0
    while kept < n:
        Z = rng.standard_normal((max(2 * (n - kept), 64), d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z[np.abs(Z @ w) >= margin]
        parts.append(Z)
        kept += Z.shape[0]
    X = np.concatenate(parts)[:n]
    return X, np.where(X @ w > 0, 1.0, -1.0), w


def load_breast_cancer_paper():
    """Breast Cancer Wisconsin (Diagnostic) from scikit-learn, preprocessed for the experiment.

    Columns standardised (mean 0, std 1, read from the data: reproduction
    only), then each row divided by its norm so ||x_i|| = 1.  Labels: +1 =
    benign (scikit-learn's target 1), -1 = malignant.  Returns (X, y).
    """
    from sklearn.datasets import load_breast_cancer

    X, t = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.where(t == 1, 1.0, -1.0)


# ------------------------------------------------------------------ calibrations
def nips2008_objective_constants(n, alpha, epsilon, data_norm=1.0):
    """(eps', Delta, beta) of the NIPS 2008 calibration: eps' = eps, Delta = 0, beta = eps/(2R).

    Same layout as dperm.mechanisms.objective_perturbation_constants; n is unused
    (the 2008 noise does not depend on n Lambda, which is exactly its flaw).
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    eps = np.full(alpha.shape, float(epsilon))
    return eps, np.zeros_like(alpha), eps / (2.0 * data_norm)


def calibration_constants(calibration, n, alpha, epsilon, c=LOGISTIC_C):
    """(eps', Delta, beta) arrays for `calibration` in CALIBRATIONS."""
    if calibration == "nips2008":
        return nips2008_objective_constants(n, alpha, epsilon)
    if calibration == "jmlr2011":
        return objective_perturbation_constants(n, alpha, epsilon, c)
    raise ValueError(f"calibration: expected one of {CALIBRATIONS}, got {calibration!r}")


def epsilon_bound(calibration, n, alpha, epsilon, c=LOGISTIC_C):
    """The privacy loss the JMLR 2011 analysis guarantees for the new method under `calibration`.

    2 beta (noise term: ||b_D - b_D'|| <= 2) + 2 log(1 + c/(n(Lambda + Delta)))
    (the Jacobian determinant).  Equals epsilon for "jmlr2011"; for "nips2008"
    it is epsilon + 2 log(1 + c/(n Lambda)).
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    _, delta, beta = calibration_constants(calibration, n, alpha, epsilon, c)
    return 2.0 * beta + 2.0 * np.log1p(c / (n * (alpha + delta)))


# ------------------------------------------------------------------ one batched solve
def _solve(X, y, *, np_alphas, out_specs, new_specs, n_draws, rng, n_threads):
    """All mechanisms on one training set, in two calls to the batched solver.

    np_alphas : Lambdas of the non-private minimisers (also the sensitivity method's).
    out_specs : list of (Lambda, eps) for the sensitivity method (Lambda in np_alphas).
    new_specs : {calibration: list of (Lambda, eps)} for the new method.
    Returns {"nonprivate": (k, d), "sensitivity": (len(out_specs), R, d),
             "new_<cal>": (len, R, d), "n_unconverged": int}.
    """
    n, d = X.shape
    np_alphas = np.asarray(np_alphas, dtype=np.float64)
    exact = erm.minimize(X, y, alpha=np_alphas, max_iter=_MAX_ITER, n_threads=n_threads,
                         warn=False)
    coef = np.atleast_2d(exact.coef)
    out = {"nonprivate": coef, "n_unconverged": int(np.sum(~np.atleast_1d(exact.converged)))}
    if out_specs:
        idx = [int(np.flatnonzero(np.isclose(np_alphas, a, rtol=1e-12))[0]) for a, _ in out_specs]
        la = np.array([a for a, _ in out_specs])
        le = np.array([e for _, e in out_specs])
        _, out["sensitivity"] = add_output_noise(coef[idx], n, la, le, 1.0, n_draws, rng)
    alphas, betas, deltas, slices = [], [], [], {}
    for cal, specs in new_specs.items():
        start = len(alphas)
        for a, e in specs:
            _, dl, be = calibration_constants(cal, n, a, e)
            alphas.append(a)
            betas.append(be[0])
            deltas.append(dl[0])
        slices[cal] = slice(start, len(alphas))
    if alphas:
        k = len(alphas)
        # one draw per (problem, run) at beta = 1; each calibration scales it by its own beta
        u = sample_l2_laplace(1.0, d, size=(k, n_draws), random_state=rng)
        B = (u / np.asarray(betas)[:, None, None]).reshape(k * n_draws, d)
        res = erm.minimize(X, y, alpha=np.repeat(alphas, n_draws), linear=B,
                           extra_l2=np.repeat(deltas, n_draws), max_iter=_MAX_ITER,
                           n_threads=n_threads, warn=False)
        W = res.coef.reshape(k, n_draws, d)
        out["n_unconverged"] += int(np.sum(~res.converged))
        for cal, sl in slices.items():
            out["new_" + cal] = W[sl]
    return out


def _errors(coef, X, y):
    """Test error of each coefficient vector; coef (..., d) -> (...); score 0 = mistake."""
    shape = coef.shape[:-1]
    return ((coef.reshape(-1, coef.shape[-1]) @ X.T) * y <= 0).mean(axis=1).reshape(shape)


def _folds(n, k, rng):
    return np.array_split(rng.permutation(n), k)


def _mean_std(a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


# ------------------------------------------------------------------ sections
def _run_d_gamma(cfg, rng, bar, n_threads):
    d, g, eps = cfg["dg_d"], cfg["dg_gamma"], cfg["dg_eps"]
    lams = (g, g * g)
    sizes = tuple(cfg["dg_sizes"])
    R = cfg["dg_datasets"] * cfg["dg_draws"]
    err = {(m, lam): np.zeros((len(sizes), R if m != "nonprivate" else cfg["dg_datasets"]))
           for m in METHODS for lam in lams}
    unconv = 0
    for si, n in enumerate(sizes):
        for r in range(cfg["dg_datasets"]):
            X, y = sample_d_gamma(n, d, g, rng)
            sol = _solve(X, y, np_alphas=lams, out_specs=[(lam, eps) for lam in lams],
                         new_specs={c: [(lam, eps) for lam in lams] for c in CALIBRATIONS},
                         n_draws=cfg["dg_draws"], rng=rng, n_threads=n_threads)
            unconv += sol["n_unconverged"]
            sl = slice(r * cfg["dg_draws"], (r + 1) * cfg["dg_draws"])
            for li, lam in enumerate(lams):
                err[("nonprivate", lam)][si, r] = d_gamma_error(sol["nonprivate"][li], g)
                for m in METHODS[1:]:
                    err[(m, lam)][si, sl] = d_gamma_error(sol[m][li], g)
            bar.update(1, note=f"D_d(gamma) n={n}")
    bounds = {(c, lam): np.array([epsilon_bound(c, n, lam, eps)[0] for n in sizes])
              for c in CALIBRATIONS for lam in lams}
    delta_branch = {lam: np.array([calibration_constants("jmlr2011", n, lam, eps)[1][0] > 0
                                   for n in sizes]) for lam in lams}
    return {"d": d, "gamma": g, "epsilon": eps, "lambdas": lams, "sizes": sizes,
            "n_datasets": cfg["dg_datasets"], "n_draws": cfg["dg_draws"], "errors": err,
            "epsilon_bound": bounds, "jmlr_delta_branch": delta_branch, "n_unconverged": unconv}


def _cv_grid(X, y, lams, eps, n_runs, n_folds, folds_run, rng, n_threads, done):
    """Test errors per method over the first `folds_run` of `n_folds` folds: arrays
    (len(lams), folds_run, runs) (1 run for non-private), the unconverged count, the folds."""
    folds = _folds(X.shape[0], n_folds, rng)
    grid = {m: np.zeros((lams.size, folds_run, 1 if m == "nonprivate" else n_runs))
            for m in METHODS}
    unconv = 0
    for f in range(folds_run):
        te = folds[f]
        tr = np.concatenate([folds[h] for h in range(n_folds) if h != f])
        sol = _solve(X[tr], y[tr], np_alphas=lams, out_specs=[(a, eps) for a in lams],
                     new_specs={c: [(a, eps) for a in lams] for c in CALIBRATIONS},
                     n_draws=n_runs, rng=rng, n_threads=n_threads)
        unconv += sol["n_unconverged"]
        grid["nonprivate"][:, f, 0] = _errors(sol["nonprivate"], X[te], y[te])
        for m in METHODS[1:]:
            grid[m][:, f, :] = _errors(sol[m], X[te], y[te])
        done(f)
    return grid, unconv, folds


def _run_sphere_table(cfg, X, y, rng, bar, n_threads, margin):
    lams = 10.0 ** np.asarray(cfg["sp_lambda_exponents"])
    eps, R = cfg["sp_eps"], cfg["sp_runs"]
    nf = min(cfg["sp_folds_run"], cfg["sp_folds"])
    grid, unconv, folds = _cv_grid(X, y, lams, eps, R, cfg["sp_folds"], nf, rng, n_threads,
                            lambda f: bar.update(1, note=f"sphere margin {margin:g} fold {f + 1}"))
    mean = {m: grid[m].mean(axis=(1, 2)) for m in METHODS}
    # ties: the larger Lambda (the non-private error is 0 over a wide range)
    best = {m: float(lams[lams.size - 1 - int(np.argmin(mean[m][::-1]))]) for m in METHODS}
    at_best = {m: grid[m][int(np.flatnonzero(lams == best[m])[0])] for m in METHODS}
    n_train = X.shape[0] - int(np.ceil(X.shape[0] / cfg["sp_folds"]))
    return {"lambdas": lams, "grid": grid, "best_lambda": best, "errors": at_best,
            "n_train": n_train, "folds_run": nf, "n_runs": R, "epsilon": eps,
            "epsilon_bound": {m: float(epsilon_bound(m[4:], n_train, best[m], eps)[0])
                              for m in ("new_nips2008", "new_jmlr2011")},
            "n_unconverged": unconv, "folds": folds}


def _run_sphere_epsilon(cfg, X, y, table, rng, bar, n_threads, margin):
    epsilons = tuple(cfg["sp_epsilons"])
    best, folds = table["best_lambda"], table["folds"]
    nf, R = table["folds_run"], cfg["sp_runs"]
    err = {m: np.zeros((len(epsilons), nf, 1 if m == "nonprivate" else R)) for m in METHODS}
    unconv = 0
    for f in range(nf):
        te = folds[f]
        tr = np.concatenate([folds[h] for h in range(cfg["sp_folds"]) if h != f])
        np_al = sorted({best["nonprivate"], best["sensitivity"]})
        sol = _solve(X[tr], y[tr], np_alphas=np_al,
                     out_specs=[(best["sensitivity"], e) for e in epsilons],
                     new_specs={c: [(best["new_" + c], e) for e in epsilons] for c in CALIBRATIONS},
                     n_draws=R, rng=rng, n_threads=n_threads)
        unconv += sol["n_unconverged"]
        i_np = np_al.index(best["nonprivate"])
        err["nonprivate"][:, f, 0] = _errors(sol["nonprivate"][i_np], X[te], y[te])
        for m in METHODS[1:]:
            err[m][:, f, :] = _errors(sol[m], X[te], y[te])
        bar.update(1, note=f"sphere margin {margin:g} eps curve fold {f + 1}")
    return {"epsilons": epsilons, "errors": err, "lambda": dict(best), "n_unconverged": unconv}


def _run_sphere_curve(cfg, w, table, rng, bar, n_threads, margin):
    sizes = tuple(cfg["sp_sizes"])
    best, eps = table["best_lambda"], cfg["sp_eps"]
    nd, dr = cfg["sp_curve_datasets"], cfg["sp_curve_draws"]
    Xte, yte, _ = sample_sphere_margin(cfg["sp_test"], cfg["sp_d"], margin, w=w, random_state=rng)
    err = {m: np.zeros((len(sizes), nd if m == "nonprivate" else nd * dr)) for m in METHODS}
    unconv = 0
    for si, n in enumerate(sizes):
        for r in range(nd):
            X, y, _ = sample_sphere_margin(n, cfg["sp_d"], margin, w=w, random_state=rng)
            np_al = sorted({best["nonprivate"], best["sensitivity"]})
            sol = _solve(X, y, np_alphas=np_al, out_specs=[(best["sensitivity"], eps)],
                         new_specs={c: [(best["new_" + c], eps)] for c in CALIBRATIONS},
                         n_draws=dr, rng=rng, n_threads=n_threads)
            unconv += sol["n_unconverged"]
            err["nonprivate"][si, r] = _errors(sol["nonprivate"][np_al.index(best["nonprivate"])],
                                               Xte, yte)
            for m in METHODS[1:]:
                err[m][si, r * dr:(r + 1) * dr] = _errors(sol[m][0], Xte, yte)
            bar.update(1, note=f"sphere margin {margin:g} n={n}")
    return {"sizes": sizes, "errors": err, "lambda": dict(best), "epsilon": eps,
            "n_datasets": nd, "n_draws": dr, "test_size": cfg["sp_test"], "n_unconverged": unconv}


def _run_breast_cancer(cfg, rng, bar, n_threads):
    X, y = load_breast_cancer_paper()
    eps, R = cfg["bc_eps"], cfg["bc_runs"]
    lams = sorted(set([cfg["bc_lambda"]] + [10.0**e for e in cfg["bc_lambda_exponents"]]))
    lams = np.array(lams)
    nf = min(cfg["bc_folds_run"], cfg["bc_folds"])
    grid, unconv, _ = _cv_grid(X, y, lams, eps, R, cfg["bc_folds"], nf, rng, n_threads,
                            lambda f: bar.update(1, note=f"breast cancer fold {f + 1}"))
    i = int(np.flatnonzero(np.isclose(lams, cfg["bc_lambda"]))[0])
    n_train = X.shape[0] - int(np.ceil(X.shape[0] / cfg["bc_folds"]))
    return {"lambda": cfg["bc_lambda"], "lambdas": lams, "grid": grid,
            "errors": {m: grid[m][i] for m in METHODS}, "epsilon": eps, "n": X.shape[0],
            "d": X.shape[1], "n_train": n_train, "folds_run": nf, "n_runs": R,
            "majority_error": float(min(np.mean(y > 0), np.mean(y < 0))),
            "epsilon_bound": {m: np.array([epsilon_bound(m[4:], n_train, a, eps)[0] for a in lams])
                              for m in ("new_nips2008", "new_jmlr2011")},
            "n_unconverged": unconv}


# ------------------------------------------------------------------ entry points
def run_nips2008(quick=False, random_state=0, progress=True, n_threads=None):
    """Run every experiment; returns a result dict (see the module docstring for the protocols).

    quick: a small seeded version (seconds) with the same structure.
    random_state: an int seed; each section gets its own independent stream.
    """
    cfg = dict(QUICK if quick else FULL)
    seeds = np.random.SeedSequence(random_state if random_state is not None else None).spawn(8)
    rngs = [np.random.default_rng(s) for s in seeds]
    nm = len(cfg["sp_margins"])
    total = (len(cfg["dg_sizes"]) * cfg["dg_datasets"]
             + nm * 2 * min(cfg["sp_folds_run"], cfg["sp_folds"])
             + nm * len(cfg["sp_sizes"]) * cfg["sp_curve_datasets"]
             + min(cfg["bc_folds_run"], cfg["bc_folds"]))
    bar = Progress(total, "nips2008", enabled=progress)
    t0 = time.perf_counter()
    seconds = {}
    t = time.perf_counter()
    dg = _run_d_gamma(cfg, rngs[0], bar, n_threads)
    seconds["figure1"] = time.perf_counter() - t
    table, epscurve, curves, data = {}, {}, {}, {}
    for k, margin in enumerate(cfg["sp_margins"]):
        X, y, w = sample_sphere_margin(cfg["sp_n"], cfg["sp_d"], margin, random_state=rngs[1 + k])
        data[margin] = {"n": X.shape[0], "d": X.shape[1]}
        t = time.perf_counter()
        table[margin] = _run_sphere_table(cfg, X, y, rngs[3 + k], bar, n_threads, margin)
        seconds.setdefault("figure2", 0.0)
        seconds["figure2"] += time.perf_counter() - t
        t = time.perf_counter()
        epscurve[margin] = _run_sphere_epsilon(cfg, X, y, table[margin], rngs[3 + k], bar,
                                               n_threads, margin)
        seconds.setdefault("figure3", 0.0)
        seconds["figure3"] += time.perf_counter() - t
        t = time.perf_counter()
        curves[margin] = _run_sphere_curve(cfg, w, table[margin], rngs[5 + k], bar, n_threads,
                                           margin)
        seconds.setdefault("figure4", 0.0)
        seconds["figure4"] += time.perf_counter() - t
    t = time.perf_counter()
    bc = _run_breast_cancer(cfg, rngs[7], bar, n_threads)
    seconds["breast_cancer"] = time.perf_counter() - t
    bar.close()
    for v in table.values():
        v.pop("folds", None)
    return {"quick": bool(quick), "random_state": random_state, "config": cfg,
            "figure1": dg, "figure2": table, "figure3": epscurve, "figure4": curves,
            "sphere_data": data, "breast_cancer": bc, "pima": PIMA_LINE, "paper": PAPER,
            "paper_note": PAPER_NOTE, "seconds": time.perf_counter() - t0,
            "section_seconds": seconds}


# ------------------------------------------------------------------ comparison with the paper
def _compare(ours, paper):
    """(paper text, difference text, within text) for our (mean, std) and the paper's."""
    if paper is None:
        return "n/a", "-", "-"
    pm, ps = paper
    diff = ours[0] - pm
    within = "yes" if abs(diff) <= ps else "no"
    return f"{pm:.4f} ± {ps:.4f}", f"{diff:+.4f}", within


def _table_lines(rows):
    """rows: (label, (mean, std), extra text, paper) -> aligned lines."""
    head = f"  {'method':<40} {'ours (mean ± std)':>18}  {'paper':>17}  {'diff':>7}  {'within':>6}  notes"
    out = [head]
    for label, ms, extra, paper in rows:
        p, dtxt, w = _compare(ms, paper)
        out.append(f"  {label:<40} {ms[0]:>8.4f} ± {ms[1]:<7.4f}  {p:>17}  {dtxt:>7}  {w:>6}  {extra}")
    return out


def format_nips2008(result):
    """Every table next to the paper's numbers (n/a where they were not retrieved)."""
    L = []
    mode = "quick" if result["quick"] else "full"
    L.append(f"NIPS 2008 (Chaudhuri & Monteleoni), logistic regression: {mode} run, "
             f"seed {result['random_state']}, {result['seconds']:.1f}s")
    L.append(f"Note: {result['paper_note']}.")
    L.append("Calibrations of the new method: NIPS 2008 = b ~ exp(-eps||b||/2), no slack; "
             "JMLR 2011 = eps' = eps - log(1 + 2c/(nΛ) + (c/(nΛ))^2), Δ branch (c = 1/4). "
             "The sensitivity method is the same in both.")
    L.append("'eps bound' = the privacy loss the 2011 analysis guarantees for that column "
             "(the nominal eps for JMLR 2011; eps + 2 log(1 + c/(nΛ)) for NIPS 2008).")

    dg = result["figure1"]
    L.append("")
    L.append(f"Figure 1: learning curves on our D_d(γ) (d = {dg['d']}, γ = {dg['gamma']:g}, "
             f"eps = {dg['epsilon']:g}); exact error, mean ± std over "
             f"{plural(dg['n_datasets'], 'data set')} x {plural(dg['n_draws'], 'draw')}; "
             f"Bayes error {dg['gamma']:g}; paper: n/a")
    for lam in dg["lambdas"]:
        L.append(f" Λ = {lam:g}")
        L.append(f"  {'n':>7}  " + "  ".join(f"{_SHORT[m]:>20}" for m in METHODS)
                 + f"  {'NIPS08 eps bound':>16}  JMLR Δ branch")
        for si, n in enumerate(dg["sizes"]):
            cells = "  ".join("{:>11.4f} ± {:<6.4f}".format(*_mean_std(dg["errors"][(m, lam)][si]))
                              for m in METHODS)
            L.append(f"  {n:>7}  {cells}  {dg['epsilon_bound'][('nips2008', lam)][si]:>16.3f}  "
                     f"{'yes' if dg['jmlr_delta_branch'][lam][si] else 'no'}")

    L.append("")
    L.append("Figure 2 (table): sphere data in R^{d}, n = {n}, eps = {e:g}, each method at its best Λ "
             "(grid, chosen on the test folds); mean ± std over (fold, run) errors".format(
                 d=result["config"]["sp_d"], n=result["config"]["sp_n"], e=result["config"]["sp_eps"]))
    for margin, tb in result["figure2"].items():
        L.append(f" margin {margin:g} ({plural(tb['folds_run'], 'fold')}, "
                 f"{plural(tb['n_runs'], 'run')} each, n_train = {tb['n_train']})")
        rows = []
        for m in METHODS:
            extra = f"Λ = {tb['best_lambda'][m]:.3g}"
            if m in tb["epsilon_bound"]:
                extra += f", eps bound {tb['epsilon_bound'][m]:.3g}"
            rows.append((METHOD_LABELS[m], _mean_std(tb["errors"][m]), extra,
                         result["paper"]["figure2"].get((margin, m))))
        L.extend(_table_lines(rows))
        L.append("  mean error over the Λ grid (not in the paper's table); log10 Λ:")
        L.append(f"  {'':<22}" + "".join(f"{np.log10(a):>6g}" for a in tb["lambdas"]))
        for m in METHODS:
            L.append(f"  {_SHORT[m]:<22}" + "".join(f"{tb['grid'][m][j].mean():>6.3f}"
                                                    for j in range(len(tb["lambdas"]))))

    L.append("")
    L.append("Figure 3: error against eps on the sphere data (each method at its Λ of the table); "
             "mean ± std; paper: n/a")
    for margin, ec in result["figure3"].items():
        L.append(f" margin {margin:g}")
        L.append(f"  {'eps':>6}  " + "  ".join(f"{_SHORT[m]:>20}" for m in METHODS))
        for i, e in enumerate(ec["epsilons"]):
            cells = "  ".join("{:>11.4f} ± {:<6.4f}".format(*_mean_std(ec["errors"][m][i]))
                              for m in METHODS)
            L.append(f"  {e:>6g}  {cells}")

    L.append("")
    L.append("Figure 4: learning curves on the sphere data (eps = {:g}, Λ of the table, test set "
             "of {} points); mean ± std; paper: n/a".format(
                 result["config"]["sp_eps"], result["config"]["sp_test"]))
    for margin, cv in result["figure4"].items():
        L.append(f" margin {margin:g} ({plural(cv['n_datasets'], 'data set')} x "
                 f"{plural(cv['n_draws'], 'draw')} per size)")
        L.append(f"  {'n':>6}  " + "  ".join(f"{_SHORT[m]:>20}" for m in METHODS))
        for i, n in enumerate(cv["sizes"]):
            cells = "  ".join("{:>11.4f} ± {:<6.4f}".format(*_mean_std(cv["errors"][m][i]))
                              for m in METHODS)
            L.append(f"  {n:>6}  {cells}")

    bc = result["breast_cancer"]
    L.append("")
    L.append(f"Real data (eps = {bc['epsilon']:g}, Λ = {bc['lambda']:g}; "
             f"{plural(bc['folds_run'], 'fold')}, {plural(bc['n_runs'], 'run')} each)")
    L.append(f" Breast Cancer Wisconsin (Diagnostic): n = {bc['n']}, d = {bc['d']}, "
             f"majority-class error {bc['majority_error']:.4f}")
    i = int(np.flatnonzero(np.isclose(bc["lambdas"], bc["lambda"]))[0])
    rows = []
    for m in METHODS:
        extra = f"eps bound {bc['epsilon_bound'][m][i]:.3g}" if m in bc["epsilon_bound"] else ""
        rows.append((METHOD_LABELS[m], _mean_std(bc["errors"][m]), extra,
                     result["paper"]["breast_cancer"].get(m)))
    L.extend(_table_lines(rows))
    L.append("  Λ grid (not in the paper's table): " + "; ".join(
        f"Λ={a:g}: " + "/".join(f"{bc['grid'][m][j].mean():.3f}" for m in METHODS)
        for j, a in enumerate(bc["lambdas"])) + "  (" + "/".join(_SHORT[m] for m in METHODS) + ")")
    L.append(f" {result['pima']}")

    unconv = (result["figure1"]["n_unconverged"] + result["breast_cancer"]["n_unconverged"]
              + sum(v["n_unconverged"] for v in result["figure2"].values())
              + sum(v["n_unconverged"] for v in result["figure3"].values())
              + sum(v["n_unconverged"] for v in result["figure4"].values()))
    L.append("")
    L.append(f"Solver: {plural(unconv, 'problem')} stopped before the gradient tolerance "
             f"(1e-10); times: " + ", ".join(f"{k} {v:.1f}s" for k, v in result["section_seconds"].items()))
    return "\n".join(L)


# ------------------------------------------------------------------ files
def _write_rows(path, header, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _paper_cells(paper, ms):
    if paper is None:
        return ["", "", "", ""]
    _, dtxt, w = _compare(ms, paper)
    return [f"{paper[0]:.5f}", f"{paper[1]:.5f}", dtxt, w]


def write_nips2008(result, out_dir):
    """CSV files (always) and PNG figures (when matplotlib is importable); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    dg = result["figure1"]
    rows = []
    for lam in dg["lambdas"]:
        for m in METHODS:
            for si, n in enumerate(dg["sizes"]):
                mu, sd = _mean_std(dg["errors"][(m, lam)][si])
                bound = "" if m in ("nonprivate", "sensitivity") else \
                    f"{dg['epsilon_bound'][(m[4:], lam)][si]:.5g}"
                rows.append([dg["d"], dg["gamma"], dg["epsilon"], f"{lam:g}", m, n, f"{mu:.5f}",
                             f"{sd:.5f}", dg["errors"][(m, lam)].shape[1], bound])
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_figure1.csv"),
                             ["d", "gamma", "epsilon", "lambda", "method", "n", "error_mean",
                              "error_std", "runs", "epsilon_bound"], rows))
    rows = []
    for margin, tb in result["figure2"].items():
        for m in METHODS:
            ms = _mean_std(tb["errors"][m])
            rows.append([margin, m, f"{tb['best_lambda'][m]:.6g}", tb["epsilon"], f"{ms[0]:.5f}",
                         f"{ms[1]:.5f}", f"{tb['errors'][m].mean(axis=-1).std():.5f}",
                         tb["folds_run"], 1 if m == "nonprivate" else tb["n_runs"],
                         f"{tb['epsilon_bound'][m]:.5g}" if m in tb["epsilon_bound"] else ""]
                        + _paper_cells(result["paper"]["figure2"].get((margin, m)), ms))
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_figure2_table.csv"),
                             ["margin", "method", "lambda", "epsilon", "error_mean", "error_std",
                              "error_fold_std", "folds", "runs_per_fold", "epsilon_bound",
                              "paper_mean", "paper_std", "difference", "within_paper_std"], rows))
    rows = []
    for margin, tb in result["figure2"].items():
        for m in METHODS:
            for j, a in enumerate(tb["lambdas"]):
                rows.append([margin, m, f"{np.log10(a):g}", f"{tb['grid'][m][j].mean():.5f}",
                             f"{tb['grid'][m][j].std():.5f}",
                             "yes" if np.isclose(a, tb["best_lambda"][m]) else ""])
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_figure2_lambda_grid.csv"),
                             ["margin", "method", "log10_lambda", "error_mean", "error_std", "best"],
                             rows))
    rows = []
    for margin, ec in result["figure3"].items():
        for m in METHODS:
            for i, e in enumerate(ec["epsilons"]):
                mu, sd = _mean_std(ec["errors"][m][i])
                rows.append([margin, m, f"{ec['lambda'][m]:.6g}", e, f"{mu:.5f}", f"{sd:.5f}"])
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_figure3.csv"),
                             ["margin", "method", "lambda", "epsilon", "error_mean", "error_std"],
                             rows))
    rows = []
    for margin, cv in result["figure4"].items():
        for m in METHODS:
            for i, n in enumerate(cv["sizes"]):
                mu, sd = _mean_std(cv["errors"][m][i])
                rows.append([margin, m, f"{cv['lambda'][m]:.6g}", cv["epsilon"], n, f"{mu:.5f}",
                             f"{sd:.5f}", cv["errors"][m].shape[1]])
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_figure4.csv"),
                             ["margin", "method", "lambda", "epsilon", "n", "error_mean",
                              "error_std", "runs"], rows))
    bc = result["breast_cancer"]
    rows = []
    for m in METHODS:
        for j, a in enumerate(bc["lambdas"]):
            ms = _mean_std(bc["grid"][m][j])
            headline = bool(np.isclose(a, bc["lambda"]))
            paper = result["paper"]["breast_cancer"].get(m) if headline else None
            rows.append(["breast_cancer", m, f"{a:g}", bc["epsilon"], f"{ms[0]:.5f}",
                         f"{ms[1]:.5f}", "yes" if headline else "",
                         f"{bc['epsilon_bound'][m][j]:.5g}" if m in bc["epsilon_bound"] else "",
                         ""] + _paper_cells(paper, ms))
    rows.append(["pima", "", "", "", "", "", "", "", "not available offline, not run",
                 "", "", "", ""])
    paths.append(_write_rows(os.path.join(out_dir, "nips2008_real_data.csv"),
                             ["dataset", "method", "lambda", "epsilon", "error_mean", "error_std",
                              "paper_setting", "epsilon_bound", "status", "paper_mean",
                              "paper_std", "difference", "within_paper_std"], rows))
    try:
        paths.extend(_plot_all(result, out_dir))
    except ImportError:
        pass
    return paths


_STYLE = {"nonprivate": ("k", "--", "o"), "sensitivity": ("tab:red", "-", "s"),
          "new_nips2008": ("tab:green", "-", "^"), "new_jmlr2011": ("tab:blue", "-", "v")}


def _plot_all(result, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'dperm[plot]'") from exc

    def curve(ax, x, errs, m, label=None):
        mu = np.array([a.mean() for a in errs])
        sd = np.array([a.std() for a in errs])
        c, ls, mk = _STYLE[m]
        ax.errorbar(x, mu, yerr=sd, color=c, linestyle=ls, marker=mk, ms=3, capsize=2,
                    label=label or METHOD_LABELS[m])

    paths = []
    dg = result["figure1"]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6), sharey=True)
    for ax, lam in zip(axes, dg["lambdas"]):
        for m in METHODS:
            curve(ax, dg["sizes"], list(dg["errors"][(m, lam)]), m)
        ax.axhline(dg["gamma"], color="0.6", lw=0.8, ls=":", label=f"Bayes error {dg['gamma']:g}")
        ax.set_xscale("log")
        ax.set_xlabel("training set size n")
        ax.set_title(f"Λ = {lam:g}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(f"Our D_d(γ), d = {dg['d']}, γ = {dg['gamma']:g}, ε = {dg['epsilon']:g} "
                 f"({plural(dg['n_datasets'], 'data set')} x {plural(dg['n_draws'], 'draw')} per n)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    p = os.path.join(out_dir, "nips2008_figure1.png")
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)

    for key, name, xlab, logx in (("figure3", "epsilons", "privacy parameter ε", True),
                                  ("figure4", "sizes", "training set size n", True)):
        block = result[key]
        fig, axes = plt.subplots(1, len(block), figsize=(5.3 * len(block), 4), sharey=True,
                                 squeeze=False)
        for ax, (margin, r) in zip(axes[0], block.items()):
            for m in METHODS:
                curve(ax, r[name], [a for a in r["errors"][m]], m,
                      label=f"{METHOD_LABELS[m]} (Λ={r['lambda'][m]:.2g})")
            if logx:
                ax.set_xscale("log")
            ax.set_xlabel(xlab)
            ax.set_title(f"sphere in R^{result['config']['sp_d']}, margin {margin:g}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower left")
        axes[0][0].set_ylabel("test error")
        if key == "figure3":
            sub = (f"error against ε, n = {result['config']['sp_n']}, "
                   f"{plural(result['figure2'][next(iter(block))]['folds_run'], 'fold')}, "
                   f"{plural(result['config']['sp_runs'], 'run')} each")
        else:
            any_c = next(iter(block.values()))
            sub = (f"learning curves, ε = {any_c['epsilon']:g}, "
                   f"{plural(any_c['n_datasets'], 'data set')} x {plural(any_c['n_draws'], 'draw')} per n")
        fig.suptitle(sub, fontsize=10)
        fig.tight_layout()
        p = os.path.join(out_dir, f"nips2008_{key}.png")
        fig.savefig(p, dpi=120)
        plt.close(fig)
        paths.append(p)
    return paths


def reproduce_nips2008(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
    """Run, format and write the NIPS 2008 experiments. Returns (result, text, paths)."""
    result = run_nips2008(quick=quick, random_state=seed, progress=progress, n_threads=n_threads)
    text = format_nips2008(result)
    paths = write_nips2008(result, out)
    return result, text, paths
