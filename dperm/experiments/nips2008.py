"""The experiments of Chaudhuri & Monteleoni, "Privacy-preserving logistic regression",
NIPS 2008 (the conference predecessor of the JMLR 2011 paper), beside the paper's numbers.

Everything below is read from the paper's text, its earlier version and the authors' talk
slides (their printed tables are :data:`PAPER` and
:data:`dperm.experiments.nips2008_early.PAPER_EARLY`); where the text is silent we say what
we chose.

The model: J(w) = (Lambda/2) ||w||^2 + (1/n) sum_i log(1 + exp(-y_i w.x_i)), no intercept
("the best separator passes through the origin"), ||x_i|| <= 1. Sensitivity method
(Algorithm 1): w* + noise of scale 2/(n Lambda eps). New method (Algorithm 2): the minimiser
of J(w) + b.w/n with noise of scale 2/eps. The noise law has two readings (the 2008 text's
Laplace-distributed norm, the slides' Gamma(d, .) norm) -- see
:mod:`dperm.experiments._nips2008_common`; every private column is run under both, and a
third column is dperm's eps-DP Algorithm 2 (the JMLR 2011 calibration).

Protocols
---------
* Figure 1 (Section 3.1): D_d(gamma), the 2^d corners of the hypercube scaled so that the
  first coordinate is +-gamma and the others +-sqrt((1 - gamma^2)/(d - 1)) (every norm is 1),
  label = sign of the first coordinate; d = 10, gamma = 0.001, eps = 0.2, Lambda = gamma
  and gamma^2, n = 100 ... 700 (the figure's axis, "N/100" = 1 ... 7). The paper measures on a
  1000-point holdout with 10 random restarts; we compute the error exactly over the 2^d
  support points (the holdout's expectation), over 10 training sets x 10 noise draws.
* Figure 2 (table): 1250 points uniform on the unit sphere of R^20 with no mass within the
  margin (0.1, 0.05) of a random hyperplane through the origin; Pima Indians Diabetes (768 x
  8) and Breast Cancer Wisconsin Diagnostic (569 x 30); 5-fold cross-validation (training
  sets of 1000, 614 and 455 rows: the table's N = 1000, 600, 450), 10 random restarts of
  each private method per fold, Lambda as the paper tuned it (0.01 for margin 0.1, 0.001 for
  margin 0.05, 1e-6 for the UCI data); eps = 0.2, the value of every eps-specific caption
  (the table's own caption does not print it). Mean and standard deviation over the five
  folds of the per-fold mean error, as the paper prints.
* The UCI preprocessing (the text only says rows have norm <= 1 and classification depends
  on the angle): we measured the non-private column under five readings
  (:data:`UCI_PREPROCESSINGS`) and use the one that reproduces it on both data sets, raw
  attributes with every row divided by the data set's largest row norm ("max_norm"; the
  table ``nips2008_uci_preprocessing.csv`` shows all five). Standardising the columns makes
  the non-private error far lower than the paper's (Pima 0.26 against 0.32). The text gives
  Breast Cancer 32 dimensions: the file's 32 columns are an id, the diagnosis and the 30
  attributes we use.
* Figure 3: error against eps (the paper: margin 0.1, eps up to 0.2; we run both margins
  and eps from 0.01 to 2, which also gives, for each paper cell, the eps at which our curve
  reaches the paper's number: the "equivalent eps" of the text output).
* Figure 4: learning curves over the same 5 folds, training on the first N rows of each
  training fold: N = 100, 200, ..., 1000 for the sphere data, 50, 100, ... for Pima and
  Breast Cancer.
* The earlier version's experiments: :mod:`dperm.experiments.nips2008_early`.

Every private problem of a training set is solved in ONE batched call to
:func:`dperm.optim.erm.minimize`. The seeds make runs reproducible and void the privacy guarantee:
this is an experiment, not a release.
"""
import os
import time

import numpy as np

from dperm.experiments import _nips2008_common as cm
from dperm.experiments import nips2008_early as early
from dperm.experiments._nips2008_common import (  # noqa: F401  (documented names)
    CALIBRATION_LABELS,
    CALIBRATIONS,
    COLUMNS,
    KEYS,
    LOGISTIC_C,
    METHOD_LABELS,
    METHODS,
    READING_LABELS,
    READINGS,
    calibration_constants,
    epsilon_bound,
    nips2008_objective_constants,
    sample_noise,
    sample_sphere_margin,
)
from dperm.experiments._progress import Progress, plural

__all__ = [
    "CALIBRATIONS", "CALIBRATION_LABELS", "COLUMNS", "KEYS", "METHODS", "METHOD_LABELS",
    "READINGS", "READING_LABELS", "PAPER", "LOGISTIC_C", "UCI_PREPROCESSINGS",
    "sample_d_gamma", "d_gamma_support", "d_gamma_error", "sample_sphere_margin",
    "load_breast_cancer_paper", "load_pima_paper", "preprocess_uci", "sample_noise",
    "nips2008_objective_constants", "calibration_constants", "epsilon_bound", "run_nips2008",
    "write_nips2008", "format_nips2008", "reproduce_nips2008",
]

#: The paper's printed (mean, standard deviation over five folds). Figure 2 of the NIPS 2008
#: text; "early" is the earlier version's table as the talk slides print it (N = 17,500).
#: Keys: data set -> the paper's column ("sensitivity", "new", "standard").
PAPER = {
    "margin 0.1": {"sensitivity": (0.0924, 0.0522), "new": (0.0259, 0.0149),
                   "standard": (0.0, 0.0)},
    "margin 0.05": {"sensitivity": (0.2842, 0.0283), "new": (0.0687, 0.0202),
                    "standard": (0.0, 0.0)},
    "pima": {"sensitivity": (0.4976, 0.0546), "new": (0.4262, 0.0496),
             "standard": (0.3184, 0.0155)},
    "breast_cancer": {"sensitivity": (0.4569, 0.0655), "new": (0.1900, 0.0554),
                      "standard": (0.0755, 0.0381)},
}
PAPER_N = {"margin 0.1": 1000, "margin 0.05": 1000, "pima": 600, "breast_cancer": 450}
DATASET_LABELS = {"margin 0.1": "Uniform, margin 0.1", "margin 0.05": "Uniform, margin 0.05",
                  "pima": "UCI Pima Diabetes", "breast_cancer": "UCI Breast Cancer"}

#: readings of "rows of norm at most one" for the UCI data (see the module docstring)
UCI_PREPROCESSINGS = ("max_norm", "row_norm", "standardize_row_norm", "minmax_max_norm",
                      "standardize_max_norm")
UCI_PREPROCESSING = "max_norm"

FULL = dict(
    dg_d=10, dg_gamma=1e-3, dg_eps=0.2, dg_sizes=(100, 200, 300, 400, 500, 600, 700),
    dg_datasets=10, dg_draws=10,
    sp_d=20, sp_n=1250, sp_margins=((0.1, 0.01), (0.05, 0.001)), eps=0.2, folds=5,
    folds_run=5, runs=10, uci_lambda=1e-6,
    sp_lambda_exponents=tuple(np.arange(-6.0, 1.01, 0.5)),
    epsilons=(0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.5, 1.0, 2.0),
    sp_sizes=tuple(range(100, 1001, 100)), pima_sizes=tuple(range(50, 601, 50)),
    bc_sizes=tuple(range(50, 451, 50)),
)
QUICK = dict(
    FULL, dg_sizes=(100, 400, 700), dg_datasets=2, dg_draws=3, folds_run=2, runs=4,
    sp_lambda_exponents=(-4.0, -2.0, 0.0), epsilons=(0.02, 0.2, 2.0),
    sp_sizes=(100, 1000), pima_sizes=(100, 600), bc_sizes=(100, 450),
)


# ------------------------------------------------------------------ data
def d_gamma_support(d=10, gamma=0.001):
    """The 2^d points of D_d(gamma) (uniform over them) and their labels: X (2^d, d), y (2^d,).

    Corners s of {-1, +1}^d scaled to (gamma s_1, c s_2, ..., c s_d), c = sqrt((1 -
    gamma^2)/(d - 1)), so every norm is 1; the label is s_1 (the sign of the first
    coordinate), and (1, 0, ..., 0) classifies perfectly with margin gamma.
    """
    d = int(d)
    if d < 2 or not 0.0 < gamma < 1.0:
        raise ValueError(f"d_gamma_support: need d >= 2 and 0 < gamma < 1, got {d}, {gamma}")
    s = 1.0 - 2.0 * ((np.arange(2 ** d)[:, None] >> np.arange(d)) & 1)
    scale = np.full(d, np.sqrt((1.0 - gamma * gamma) / (d - 1)))
    scale[0] = gamma
    return s * scale, s[:, 0].copy()


def sample_d_gamma(n, d=10, gamma=0.001, random_state=None):
    """n examples drawn uniformly from the 2^d points of D_d(gamma) (see d_gamma_support)."""
    n, d = int(n), int(d)
    if n < 1:
        raise ValueError(f"sample_d_gamma: need n >= 1, got {n}")
    X, y = d_gamma_support(d, gamma)
    idx = cm.rng_of(random_state).integers(0, X.shape[0], size=n)
    return X[idx], y[idx]


def d_gamma_error(coef, gamma, d=None):
    """Exact test error on D_d(gamma) of linear classifiers coef (..., d): the fraction of the
    2^d support points with y w.x <= 0."""
    coef = np.asarray(coef, dtype=np.float64)
    X, y = d_gamma_support(coef.shape[-1] if d is None else d, gamma)
    return cm.test_errors(coef, X, y)


def preprocess_uci(X, how=UCI_PREPROCESSING):
    """Rows of norm <= 1 from raw attributes, by one of :data:`UCI_PREPROCESSINGS`.

    max_norm: X / (largest row norm); row_norm: every row to norm 1; standardize_*: columns
    to mean 0, sd 1 first; minmax_max_norm: columns to [0, 1] first. All read statistics from
    the data (reproduction only, not a private pipeline).
    """
    X = np.asarray(X, dtype=np.float64)
    if how.startswith("standardize"):
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    elif how.startswith("minmax"):
        span = X.max(axis=0) - X.min(axis=0)
        X = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    elif how not in ("max_norm", "row_norm"):
        raise ValueError(f"preprocess: expected one of {UCI_PREPROCESSINGS}, got {how!r}")
    norms = np.linalg.norm(X, axis=1)
    if how.endswith("row_norm"):
        return X / np.where(norms > 0, norms, 1.0)[:, None]
    return X / norms.max()


def load_breast_cancer_paper(preprocess=UCI_PREPROCESSING):
    """Breast Cancer Wisconsin (Diagnostic) from scikit-learn (569 x 30), preprocessed for the
    experiment (:func:`preprocess_uci`). Labels: +1 = benign, -1 = malignant."""
    from sklearn.datasets import load_breast_cancer

    X, t = load_breast_cancer(return_X_y=True)
    return preprocess_uci(X, preprocess), np.where(t == 1, 1.0, -1.0)


def load_pima_paper(path=None, preprocess=UCI_PREPROCESSING):
    """Pima Indians Diabetes (768 x 8, :func:`dperm.datasets.load_pima`), preprocessed for the
    experiment. Labels: +1 = diabetes. FileNotFoundError (with how to get it) when missing."""
    from dperm.datasets import load_pima

    X, y = load_pima(path, preprocess="raw")
    return preprocess_uci(X, preprocess), y


# ------------------------------------------------------------------ sections
def _run_d_gamma(cfg, rng, bar, n_threads):
    d, g, eps = cfg["dg_d"], cfg["dg_gamma"], cfg["dg_eps"]
    lams = (g, g * g)
    sizes = tuple(cfg["dg_sizes"])
    nd, R = cfg["dg_datasets"], cfg["dg_draws"]
    err = {(k, lam): np.zeros((len(sizes), nd, 1 if k == "nonprivate" else R))
           for k in KEYS for lam in lams}
    unconv = 0
    for si, n in enumerate(sizes):
        for r in range(nd):
            X, y = sample_d_gamma(n, d, g, rng)
            sol = cm.solve_columns(X, y, [(lam, eps) for lam in lams], R, rng, n_threads)
            unconv += sol["n_unconverged"]
            for li, lam in enumerate(lams):
                err[("nonprivate", lam)][si, r, 0] = d_gamma_error(sol["nonprivate"][li], g)
                for k in cm.PRIVATE_KEYS:
                    err[(k, lam)][si, r] = d_gamma_error(sol[k][li], g)
            bar.update(1, note=f"D_d(gamma) n={n}")
    return {"d": d, "gamma": g, "epsilon": eps, "lambdas": lams, "sizes": sizes,
            "n_datasets": nd, "n_draws": R, "errors": err, "n_unconverged": unconv,
            "epsilon_bound": {(k, lam): [cm.column_epsilon_bound(k, n, lam, eps) for n in sizes]
                              for k in cm.PRIVATE_KEYS for lam in lams}}


def _cv(X, y, specs, cfg, rng, n_threads, sizes=None, note="", bar=None):
    tick = None if bar is None else (lambda f: bar.update(1, note=f"{note} fold {f + 1}"))
    return cm.cv_errors(X, y, specs, cfg["folds"], cfg["folds_run"], cfg["runs"], rng,
                        n_threads, sizes=sizes, tick=tick)


def _table_cell(err, n_train, lam, eps):
    return {"errors": {k: err[k] for k in KEYS}, "lambda": lam, "epsilon": eps,
            "n_train": n_train,
            "epsilon_bound": {k: cm.column_epsilon_bound(k, n_train, lam, eps)
                              for k in cm.PRIVATE_KEYS}}


def _run_dataset(name, X, y, lam, cfg, rng, bar, n_threads, sizes, lam_grid=None):
    """Table row, eps curve (sphere only), learning curve and Lambda grid of one data set."""
    eps = cfg["eps"]
    out = {"n": X.shape[0], "d": X.shape[1], "lambda": lam,
           "majority_error": float(min(np.mean(y > 0), np.mean(y < 0)))}
    specs = [(lam, eps)]
    if lam_grid is not None:
        specs += [(a, eps) for a in lam_grid]
    err, unconv, n_train = _cv(X, y, specs, cfg, rng, n_threads, note=name, bar=bar)
    out["table"] = _table_cell({k: v[0, 0] for k, v in err.items()}, n_train, lam, eps)
    if lam_grid is not None:
        out["lambda_grid"] = {"lambdas": np.asarray(lam_grid),
                              "errors": {k: v[1:, 0] for k, v in err.items()}}
    if name.startswith("margin"):
        e_specs = [(lam, e) for e in cfg["epsilons"]]
        err, u2, _ = _cv(X, y, e_specs, cfg, rng, n_threads, note=name + " eps", bar=bar)
        unconv += u2
        out["epsilon_curve"] = {"epsilons": tuple(cfg["epsilons"]),
                                "errors": {k: v[:, 0] for k, v in err.items()}}
    err, u3, _ = _cv(X, y, specs[:1], cfg, rng, n_threads, sizes=sizes, note=name + " curve",
                     bar=bar)
    out["learning_curve"] = {"sizes": tuple(sizes), "errors": {k: v[0] for k, v in err.items()}}
    out["n_unconverged"] = unconv + u3
    return out


def _run_preprocessing(datasets, cfg, rng, n_threads):
    """Non-private 5-fold error of each UCI preprocessing reading (raw data in `datasets`)."""
    rows = {}
    for name, (X, y) in datasets.items():
        folds = cm.folds_of(X.shape[0], cfg["folds"], rng)
        for how in UCI_PREPROCESSINGS:
            Z = preprocess_uci(X, how)
            errs = []
            for f in range(cfg["folds"]):
                tr, te = cm.train_test(folds, f)
                w = cm.erm.minimize(Z[tr], y[tr], alpha=cfg["uci_lambda"], max_iter=cm.MAX_ITER,
                                    n_threads=n_threads, warn=False).coef
                errs.append(cm.test_errors(np.atleast_2d(w), Z[te], y[te])[0])
            rows[(name, how)] = np.array(errs)[:, None]
    return rows


def _equivalent_epsilons(result):
    """For each sphere cell of the paper and each reading: the eps where our curve meets it."""
    out = {}
    for name in ("margin 0.1", "margin 0.05"):
        ds = result["datasets"].get(name)
        if ds is None:
            continue
        ec = ds["epsilon_curve"]
        for key in cm.PRIVATE_KEYS:
            col = cm.PAPER_COLUMN[key.partition(":")[0]]
            if col is None:
                continue
            mean = [a.mean() for a in ec["errors"][key]]
            out[(name, key)] = cm.equivalent_epsilon(ec["epsilons"], mean, PAPER[name][col][0])
    return out


# ------------------------------------------------------------------ entry points
def run_nips2008(quick=False, random_state=0, progress=True, n_threads=None, pima=None):
    """Run every experiment of both versions; returns a result dict (protocols: module doc).

    quick : a small seeded version (seconds) with the same structure.
    pima : path of the Pima CSV (default ``$DPERM_PIMA``); without it the Pima rows say why.
    """
    cfg = dict(QUICK if quick else FULL)
    seeds = np.random.SeedSequence(random_state).spawn(8)
    rngs = [np.random.default_rng(s) for s in seeds]
    raw = {}
    try:
        from dperm.datasets import load_pima
        raw["pima"] = load_pima(pima, preprocess="raw")
        pima_status = "run"
    except (FileNotFoundError, OSError, ValueError) as exc:
        pima_status = f"not run: {exc}"
    from sklearn.datasets import load_breast_cancer
    Xb, tb = load_breast_cancer(return_X_y=True)
    raw["breast_cancer"] = (Xb, np.where(tb == 1, 1.0, -1.0))
    nf = min(cfg["folds_run"], cfg["folds"])
    total = (len(cfg["dg_sizes"]) * cfg["dg_datasets"] + len(cfg["sp_margins"]) * 3 * nf
             + len(raw) * 2 * nf)
    bar = Progress(total, "nips2008", enabled=progress)
    t0 = time.perf_counter()
    seconds = {}
    t = time.perf_counter()
    dg = _run_d_gamma(cfg, rngs[0], bar, n_threads)
    seconds["figure1"] = time.perf_counter() - t
    datasets = {}
    lam_grid = 10.0 ** np.asarray(cfg["sp_lambda_exponents"])
    for i, (margin, lam) in enumerate(cfg["sp_margins"]):
        t = time.perf_counter()
        X, y, _ = sample_sphere_margin(cfg["sp_n"], cfg["sp_d"], margin, random_state=rngs[1 + i])
        datasets[f"margin {margin:g}"] = _run_dataset(
            f"margin {margin:g}", X, y, lam, cfg, rngs[3 + i], bar, n_threads, cfg["sp_sizes"],
            lam_grid=lam_grid)
        seconds[f"sphere margin {margin:g}"] = time.perf_counter() - t
    for i, name in enumerate(("pima", "breast_cancer")):
        if name not in raw:
            continue
        t = time.perf_counter()
        X, y = raw[name]
        datasets[name] = _run_dataset(name, preprocess_uci(X), y, cfg["uci_lambda"], cfg,
                                      rngs[5 + i], bar, n_threads,
                                      cfg["pima_sizes" if name == "pima" else "bc_sizes"])
        seconds[name] = time.perf_counter() - t
    bar.close()
    t = time.perf_counter()
    prep = _run_preprocessing(raw, cfg, rngs[7], n_threads)
    seconds["uci preprocessing"] = time.perf_counter() - t
    t = time.perf_counter()
    earlier = early.run_early(quick=quick, random_state=random_state, progress=progress,
                              n_threads=n_threads)
    seconds["earlier version"] = time.perf_counter() - t
    result = {"quick": bool(quick), "random_state": random_state, "config": cfg,
              "figure1": dg, "datasets": datasets, "preprocessing": prep,
              "pima_status": pima_status, "early": earlier, "paper": PAPER,
              "seconds": time.perf_counter() - t0, "section_seconds": seconds}
    result["equivalent_epsilon"] = _equivalent_epsilons(result)
    return result


def _paper_of(name, key):
    col = cm.PAPER_COLUMN[key.partition(":")[0]]
    return None if col is None or name not in PAPER else PAPER[name][col]


def verdicts(result):
    """{(data set, key): True/False} for every table cell with a paper value."""
    out = {}
    for name, ds in result["datasets"].items():
        for key in KEYS:
            paper = _paper_of(name, key)
            if paper is not None:
                out[(name, key)] = cm.within_two_sd(cm.fold_mean_std(ds["table"]["errors"][key]),
                                                    paper)
    return out


def format_nips2008(result):
    """Every table of both versions next to the paper's numbers."""
    return "\n".join(
        _intro_lines(result) + _figure1_lines(result["figure1"]) + _figure2_lines(result)
        + _verdict_lines(result) + _equivalent_epsilon_lines(result["equivalent_epsilon"])
        + _preprocessing_lines(result) + _figure3_lines(result) + _figure4_lines(result)
        + ["", early.format_early(result["early"])] + _solver_lines(result))


def _intro_lines(result):
    mode = "quick" if result["quick"] else "full"
    return [f"NIPS 2008 (Chaudhuri & Monteleoni), logistic regression: {mode} run, "
            f"seed {result['random_state']}, {result['seconds']:.1f}s",
            "Noise readings: " + "; ".join(f"[{r}] {READING_LABELS[r]}" for r in READINGS)
            + ". 'JMLR 2011' = dperm's Algorithm 2 (gamma law, 2011 calibration, eps-DP).",
            "'≤2σ': |ours - paper| <= 2 sqrt(sd_paper^2 + sd_ours^2), sd = standard deviation "
            "over folds of the per-fold mean error (what the paper prints)."]


def _figure1_lines(dg):
    L = ["", f"Figure 1: D_d(γ), d = {dg['d']}, γ = {dg['gamma']:g}, eps = {dg['epsilon']:g}; "
             f"exact error over the 2^d points, mean ± sd over {plural(dg['n_datasets'], 'data set')}"
             f" x {plural(dg['n_draws'], 'draw')}; the paper prints no numbers (a plot)"]
    for lam in dg["lambdas"]:
        L.append(f" Λ = {lam:g}")
        L.extend(cm.curve_lines("n", dg["sizes"], {k: dg["errors"][(k, lam)] for k in KEYS},
                                stat=cm.mean_std))
    return L


def _figure2_lines(result):
    cfg = result["config"]
    L = ["", f"Figure 2 (table): test error, 5-fold cross-validation ({plural(cfg['folds_run'], 'fold')}"
             f" run), {plural(cfg['runs'], 'restart')} per fold, eps = {cfg['eps']:g}"]
    for name, ds in result["datasets"].items():
        tb = ds["table"]
        L.append(f" {DATASET_LABELS[name]} (N = {tb['n_train']}, paper N = {PAPER_N[name]}; "
                 f"d = {ds['d']}; Λ = {tb['lambda']:g}; majority error {ds['majority_error']:.4f})")
        L.extend(cm.table_lines([_table_row(name, tb, k) for k in KEYS]))
    if "pima" not in result["datasets"]:
        L.append(f" UCI Pima Diabetes: {result['pima_status']}")
    return L


def _table_row(name, tb, key):
    bound = tb["epsilon_bound"]
    return (cm.column_label(key), cm.fold_mean_std(tb["errors"][key]), _paper_of(name, key),
            ("eps bound " + cm.fmt_bound(bound[key])) if key in bound else "")


def _verdict_lines(result):
    v = verdicts(result)
    npv = [c for c in v if c[1] == "nonprivate"]
    return [_reading_line(v, reading) for reading in READINGS] + [
        f" non-private column: {sum(v[c] for c in npv)} of {len(npv)} within 2σ"]


def _reading_line(v, reading):
    keys = [k for k in KEYS if k.endswith(":" + reading)]
    hit = [c for c in v if c[1] in keys and v[c]]
    return (f" reading [{reading}]: {len(hit)} of {sum(c[1] in keys for c in v)} private "
            "cells within 2σ of the paper")


def _equivalent_epsilon_lines(eq):
    if not eq:
        return []
    return ["", " eps at which our curve (Figure 3 protocol) meets the paper's number "
                "(the paper's table: eps = 0.2 assumed):"] + [
        f"  {DATASET_LABELS[name]:<22} {cm.column_label(key):<52} "
        + ("outside the eps range run" if e is None else f"{e:.3g}")
        for (name, key), e in eq.items()]


def _preprocessing_lines(result):
    L = ["", "UCI preprocessing readings, non-private error (5 folds, Λ = "
             f"{result['config']['uci_lambda']:g}); used: {UCI_PREPROCESSING}"]
    for (name, how), e in result["preprocessing"].items():
        ms = cm.fold_mean_std(e)
        p, dtxt, w = cm.compare(ms, PAPER[name]["standard"])
        L.append(f"  {DATASET_LABELS[name]:<20} {how:<22} {ms[0]:.4f} ± {ms[1]:.4f}   paper {p}  "
                 f"diff {dtxt}  ≤2σ {w}")
    return L


def _figure3_lines(result):
    L = ["", f"Figure 3: error against eps, mean ± sd over folds "
             f"({plural(result['config']['runs'], 'restart')} "
             "per fold); the paper plots margin 0.1, eps <= 0.2"]
    for name, ds in result["datasets"].items():
        if "epsilon_curve" in ds:
            ec = ds["epsilon_curve"]
            L.append(f" {DATASET_LABELS[name]}, Λ = {ds['lambda']:g}")
            L.extend(cm.curve_lines("eps", ec["epsilons"], ec["errors"]))
    return L


def _figure4_lines(result):
    L = ["", f"Figure 4: learning curves (eps = {result['config']['eps']:g}, the first N rows "
             "of each training fold), mean ± sd over folds"]
    for name, ds in result["datasets"].items():
        lc = ds["learning_curve"]
        L.append(f" {DATASET_LABELS[name]}, Λ = {ds['lambda']:g}")
        L.extend(cm.curve_lines("N", lc["sizes"], lc["errors"]))
    return L


def _solver_lines(result):
    unconv = (result["figure1"]["n_unconverged"]
              + sum(ds["n_unconverged"] for ds in result["datasets"].values())
              + result["early"]["n_unconverged"])
    return ["", f"Solver: {plural(unconv, 'problem')} stopped before the gradient tolerance "
                "(1e-10); times: " + ", ".join(f"{k} {v:.1f}s"
                                              for k, v in result["section_seconds"].items())]


# ------------------------------------------------------------------ files
def _method_reading(key):
    method, _, reading = key.partition(":")
    return method, reading


def _figure1_rows(dg):
    rows = []
    for lam in dg["lambdas"]:
        for k in KEYS:
            m, reading = _method_reading(k)
            for si, n in enumerate(dg["sizes"]):
                mu, sd = cm.mean_std(dg["errors"][(k, lam)][si])
                b = dg["epsilon_bound"].get((k, lam))
                rows.append([dg["d"], dg["gamma"], dg["epsilon"], f"{lam:g}", m, n, f"{mu:.5f}",
                             f"{sd:.5f}", dg["errors"][(k, lam)][si].size,
                             "" if b is None else f"{b[si]:.5g}", reading])
    return rows


def _lambda_grid_rows(name, ds, k, ms):
    """Figure 2's Lambda grid rows of one method (the grid, then the table's Lambda)."""
    m, reading = _method_reading(k)
    grid = []
    lg = ds["lambda_grid"]
    for j, a in enumerate(lg["lambdas"]):
        gm = cm.fold_mean_std(lg["errors"][k][j])
        grid.append([name.split()[1], m, f"{np.log10(a):g}", f"{gm[0]:.5f}",
                     f"{gm[1]:.5f}", "", reading])
    grid.append([name.split()[1], m, f"{np.log10(ds['table']['lambda']):g}", f"{ms[0]:.5f}",
                 f"{ms[1]:.5f}", "yes", reading])
    return grid


def _table_rows(result):
    """(Figure 2's table rows, the real data sets' rows, Figure 2's Lambda grid rows)."""
    cfg = result["config"]
    rows, real, grid = [], [], []
    for name, ds in result["datasets"].items():
        tb = ds["table"]
        for k in KEYS:
            m, reading = _method_reading(k)
            e = tb["errors"][k]
            ms = cm.fold_mean_std(e)
            b = tb["epsilon_bound"].get(k)
            cells = [f"{tb['lambda']:g}", cfg["eps"], f"{ms[0]:.5f}", f"{cm.mean_std(e)[1]:.5f}",
                     f"{ms[1]:.5f}", e.shape[0], e.shape[1], "" if b is None else f"{b:.5g}"]
            paper = cm.paper_cells(_paper_of(name, k), ms)
            if name.startswith("margin"):
                rows.append([name.split()[1], m] + cells + paper + [reading])
            else:
                real.append([name, m, f"{tb['lambda']:g}", cfg["eps"], f"{ms[0]:.5f}",
                             f"{ms[1]:.5f}", "yes", "" if b is None else f"{b:.5g}", "run"]
                            + paper + [reading, e.shape[0], e.shape[1]])
            if "lambda_grid" in ds:
                grid.extend(_lambda_grid_rows(name, ds, k, ms))
    if "pima" not in result["datasets"]:
        real.append(["pima", "", "", "", "", "", "", "", result["pima_status"], "", "", "", "",
                     "", "", ""])
    return rows, real, grid


def _figure3_rows(result):
    rows = []
    for name, ds in result["datasets"].items():
        if "epsilon_curve" not in ds:
            continue
        ec = ds["epsilon_curve"]
        for k in KEYS:
            m, reading = _method_reading(k)
            for i, e in enumerate(ec["epsilons"]):
                mu, sd = cm.fold_mean_std(ec["errors"][k][i])
                rows.append([name.split()[1], m, f"{ds['lambda']:g}", e, f"{mu:.5f}", f"{sd:.5f}",
                             reading])
    return rows


def _figure4_rows(result):
    cfg = result["config"]
    rows = []
    for name, ds in result["datasets"].items():
        lc = ds["learning_curve"]
        for k in KEYS:
            m, reading = _method_reading(k)
            for i, n in enumerate(lc["sizes"]):
                mu, sd = cm.fold_mean_std(lc["errors"][k][i])
                rows.append([name.split()[1] if name.startswith("margin") else "", m,
                             f"{ds['lambda']:g}", cfg["eps"], n, f"{mu:.5f}", f"{sd:.5f}",
                             lc["errors"][k][i].size, reading, name])
    return rows


def _preprocessing_rows(result):
    rows = []
    for (name, how), e in result["preprocessing"].items():
        ms = cm.fold_mean_std(e)
        rows.append([name, how, f"{ms[0]:.5f}", f"{ms[1]:.5f}"]
                    + cm.paper_cells(PAPER[name]["standard"], ms)
                    + ["yes" if how == UCI_PREPROCESSING else ""])
    return rows


def write_nips2008(result, out_dir):
    """CSV files (always) and PNG figures (when matplotlib is importable); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_figure1.csv"),
                               ["d", "gamma", "epsilon", "lambda", "method", "n", "error_mean",
                                "error_std", "runs", "epsilon_bound", "reading"],
                               _figure1_rows(result["figure1"])))
    head = ["margin", "method", "lambda", "epsilon", "error_mean", "error_std", "error_fold_std",
            "folds", "runs_per_fold", "epsilon_bound", "paper_mean", "paper_std", "difference",
            "within_paper_std", "reading"]
    rows, real, grid = _table_rows(result)
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_figure2_table.csv"), head, rows))
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_figure2_lambda_grid.csv"),
                               ["margin", "method", "log10_lambda", "error_mean", "error_std",
                                "best", "reading"], grid))
    paths.append(cm.write_rows(
        os.path.join(out_dir, "nips2008_real_data.csv"),
        ["dataset", "method", "lambda", "epsilon", "error_mean", "error_std", "paper_setting",
         "epsilon_bound", "status", "paper_mean", "paper_std", "difference", "within_paper_std",
         "reading", "folds", "runs_per_fold"], real))
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_figure3.csv"),
                               ["margin", "method", "lambda", "epsilon", "error_mean",
                                "error_std", "reading"], _figure3_rows(result)))
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_figure4.csv"),
                               ["margin", "method", "lambda", "epsilon", "n", "error_mean",
                                "error_std", "runs", "reading", "dataset"], _figure4_rows(result)))
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_uci_preprocessing.csv"),
                               ["dataset", "preprocessing", "error_mean", "error_fold_std",
                                "paper_mean", "paper_std", "difference", "within_paper_std",
                                "used"], _preprocessing_rows(result)))
    paths.extend(early.write_early(result["early"], out_dir))
    try:
        paths.extend(_plot_all(result, out_dir))
        paths.extend(early.plot_early(result["early"], out_dir))
    except ImportError:
        pass
    return paths


def _plot_all(result, out_dir):
    plt = cm.pyplot()
    paths = []
    dg = result["figure1"]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6), sharey=True)
    for ax, lam in zip(axes, dg["lambdas"]):
        for k in KEYS:
            cm.curve(ax, dg["sizes"], [a for a in dg["errors"][(k, lam)]], k)
        ax.set_xlabel("training set size N")
        ax.set_title(f"Λ = {lam:g}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error (exact)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(f"Figure 1: D_d(γ), d = {dg['d']}, γ = {dg['gamma']:g}, ε = {dg['epsilon']:g}",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    p = os.path.join(out_dir, "nips2008_figure1.png")
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)

    ds = result["datasets"]
    for fig_name, field, xlab in (("figure3", "epsilon_curve", "privacy parameter ε"),
                                  ("figure4", "learning_curve", "training set size N")):
        names = [n for n in ds if field in ds[n]]
        fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 4.2), squeeze=False)
        for ax, name in zip(axes[0], names):
            c = ds[name][field]
            x = c["epsilons"] if field == "epsilon_curve" else c["sizes"]
            for k in KEYS:
                cm.curve(ax, x, list(c["errors"][k]), k)
            if field == "epsilon_curve":
                ax.set_xscale("log")
                for col, colour in (("sensitivity", "tab:red"), ("new", "tab:green")):
                    ax.axhline(PAPER[name][col][0], color=colour, lw=0.8, ls="-.")
            ax.set_xlabel(xlab)
            ax.set_title(DATASET_LABELS[name], fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("test error")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
        title = ("Figure 3: error against ε (dash-dot: the paper's table values)"
                 if fig_name == "figure3" else "Figure 4: learning curves, ε = 0.2")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout(rect=(0, 0.15, 1, 1))
        p = os.path.join(out_dir, f"nips2008_{fig_name}.png")
        fig.savefig(p, dpi=120)
        plt.close(fig)
        paths.append(p)
    return paths


def reproduce_nips2008(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0,
                       pima=None):
    """Run, format and write the NIPS 2008 experiments. Returns (result, text, paths)."""
    result = run_nips2008(quick=quick, random_state=seed, progress=progress, n_threads=n_threads,
                          pima=pima)
    text = format_nips2008(result)
    paths = write_nips2008(result, out)
    return result, text, paths
