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
"""
import argparse
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
}


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


def clf(eps, alpha="auto", rng=None):
    return dperm.PrivateLinearClassifier(epsilon=eps, alpha=alpha, classes=CLASSES,
                                         random_state=rng)


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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--epsilons", default="0.3,1")
    p.add_argument("--only", default=None, help="comma-separated data set names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baselines", default="auto,algorithm 4,random stopping",
                   help="comma-separated: auto, algorithm 4, random stopping ('auto' always)")
    p.add_argument("--variants", default=",".join(SELECT_VARIANTS),
                   help="alpha='select' variants to run (comma-separated; '' for none)")
    a = p.parse_args(argv)
    VARIANTS[:] = [v for v in a.variants.split(",") if v]
    BASELINES[:] = [v for v in a.baselines.split(",") if v]
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
