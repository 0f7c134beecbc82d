"""Private linear regression: held-out R^2 of AdaSSP, diffprivlib and dperm's estimator (issue 22).

Data sets (every map from raw values to the model's inputs uses PUBLIC bounds only, each
row mapped on its own; the labels are mapped to [-1, 1] by public bounds and clipped, so
label_bound B = 1 for every data set; the rows satisfy ||x|| <= 1 and every method gets
an intercept):

* ``diabetes``: scikit-learn's load_diabetes(scaled=False) (442 rows, 10 columns): each
  column mapped from the public range in DIABETES_BOUNDS (chosen from the variables'
  meaning, wide enough for the data) to [-1, 1], rows divided by sqrt(10); the target
  (disease progression) from [0, 400].
* ``adult-hours``: UCI Adult (dperm.datasets.load_adult, preprocess="public": numeric
  columns clipped to [0, public bound] and divided by it, one-hot groups against the
  public category lists, rows divided by sqrt(13)), every column but hours-per-week;
  target hours-per-week from [0, 100] (its public bound, ADULT_PUBLIC_BOUNDS).
* ``kdd-dsthostsrv``: KDD Cup 99 10% (dperm.datasets.load_kddcup99, preprocess="public",
  rows already of norm <= 1), the column dst_host_srv_count removed from the features
  and predicted: target from [0, 255] (its public cap).  A uniformly random subset of
  ``--kdd-rows`` rows (default 200,000 of 494,021) keeps the run short.
* ``synthetic-n``: n training rows, d = 10, x uniform in [-1, 1]^10 / sqrt(10),
  y = x.theta + heavy-tailed noise (0.1 t_3), and a fraction 5 % of gross outliers
  (y = +-U(2, 10)), then clipped to [-1, 1]; theta fixed (||theta|| about 1.6).  R^2 on
  10,000 clean held-out rows (y = x.theta + 0.1 t_3, clipped): the recovery of the linear
  signal.

Real data: a fixed 80/20 train/test split.  R^2 is computed on the held-out labels on
the model's scale (mapped and clipped as above, the scale every method fits).

Methods, at epsilon in ``--epsilons`` (default 1 and 0.1), delta = 1/n_train^2:

* non-private ridge: sklearn.linear_model.Ridge(alpha=1.0, fit_intercept=True);
* dperm AdaSSP: dperm.privacy.adassp.adassp with the default split, on the rows with a
  constant column 1 appended (data_norm R = sqrt(2), label_bound 1); (epsilon, delta)-DP
  under replace-one;
* diffprivlib's LinearRegression(epsilon, bounds_X, bounds_y, fit_intercept=True): the
  per-column ranges the public maps give (the same information), bounds_y = (-1, 1);
  pure epsilon-DP (delta = 0).  diffprivlib 0.6.6 does not import with
  scikit-learn >= 1.6, so it runs in another interpreter (``--diffprivlib-python``);
* dperm.PrivateLinearRegression(method="objective" / "output" / "auto", data_norm=1,
  label_bound=1, fit_intercept=True) if it can be imported (otherwise skipped, said so).

Each private method: mean and sd of the held-out R^2 over ``--draws`` noise draws
(random_state = 0 .. draws-1: seeded noise, fine for a benchmark, no guarantee).

    python benchmarks/regression_compare.py --diffprivlib-python /path/to/python \\
        --draws 10 --out regression.json

``--sweep-split`` instead prints AdaSSP's mean R^2 for a grid of budget splits (how
dperm.privacy.adassp.DEFAULT_SPLIT was chosen; BENCHMARKS.md).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

DIABETES_BOUNDS = {   # column: (low, high), public ranges of the raw variables
    "age": (0.0, 100.0), "sex": (1.0, 2.0), "bmi": (10.0, 50.0), "bp": (40.0, 160.0),
    "s1": (80.0, 320.0), "s2": (20.0, 250.0), "s3": (10.0, 120.0), "s4": (1.0, 10.0),
    "s5": (3.0, 6.5), "s6": (50.0, 150.0),
}
DIABETES_TARGET = (0.0, 400.0)
SYNTH_D = 10
SYNTH_OUTLIERS = 0.05
SYNTH_TEST = 10_000


def _to_unit(v, lo, hi):
    """Public affine map [lo, hi] -> [-1, 1], clipped."""
    return np.clip(2.0 * (np.asarray(v, dtype=np.float64) - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def _split(X, y, rng, frac=0.8):
    perm = rng.permutation(X.shape[0])
    k = int(frac * X.shape[0])
    return X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]]


def load_diabetes_data(rng):
    from sklearn.datasets import load_diabetes

    b = load_diabetes(scaled=False)
    cols = [_to_unit(b.data[:, j], *DIABETES_BOUNDS[name]) for j, name in
            enumerate(b.feature_names)]
    d = len(cols)
    X = np.column_stack(cols) / math.sqrt(d)
    lo = np.full(d, -1.0 / math.sqrt(d))
    y = _to_unit(b.target, *DIABETES_TARGET)
    return (*_split(X, y, rng), (lo, -lo))


def load_adult_hours(rng):
    from dperm.datasets import ADULT_PUBLIC_BOUNDS, load_adult

    bounds = {k: v for k, v in ADULT_PUBLIC_BOUNDS.items() if k != "hours-per-week"}
    bunch = load_adult(preprocess="public", return_frame=True, bounds=bounds)
    X = np.ascontiguousarray(bunch.data, dtype=np.float64)
    y = _to_unit(bunch.frame["hours-per-week"], 0.0, ADULT_PUBLIC_BOUNDS["hours-per-week"])
    k = 13    # numeric + categorical columns kept: rows were divided by sqrt(k)
    return (*_split(X, y, rng), (np.zeros(X.shape[1]), np.full(X.shape[1], 1 / math.sqrt(k))))


def load_kdd_target(rng, n_rows):
    from dperm.datasets import load_kddcup99

    bunch = load_kddcup99(preprocess="public", return_frame=True, n_samples=n_rows,
                          random_state=int(rng.integers(2**31)))
    names = list(bunch.feature_names)
    j = names.index("dst_host_srv_count")
    X = np.delete(np.asarray(bunch.data, dtype=np.float64), j, axis=1)
    y = _to_unit(bunch.frame["dst_host_srv_count"], 0.0, 255.0)
    hi = np.full(X.shape[1], 1 / math.sqrt(41))
    return (*_split(X, y, rng), (np.zeros(X.shape[1]), hi))


def synthetic(n, rng):
    d = SYNTH_D
    theta = np.linspace(1.0, -1.0, d) * 0.9
    hi = 1.0 / math.sqrt(d)

    def draw(m, outliers):
        X = rng.uniform(-hi, hi, (m, d))
        y = X @ theta + 0.1 * rng.standard_t(3, m)
        if outliers:
            bad = rng.random(m) < SYNTH_OUTLIERS
            y[bad] = rng.choice([-1.0, 1.0], bad.sum()) * rng.uniform(2.0, 10.0, bad.sum())
        return X, np.clip(y, -1.0, 1.0)

    Xtr, ytr = draw(n, True)
    Xte, yte = draw(SYNTH_TEST, False)
    return Xtr, ytr, Xte, yte, (np.full(d, -hi), np.full(d, hi))


def load(name, rng, kdd_rows):
    if name == "diabetes":
        return load_diabetes_data(rng)
    if name == "adult-hours":
        return load_adult_hours(rng)
    if name == "kdd-dsthostsrv":
        return load_kdd_target(rng, kdd_rows)
    if name.startswith("synthetic-"):
        return synthetic(int(float(name.split("-", 1)[1])), rng)
    raise SystemExit(f"unknown data set {name!r}")


def r2(y, pred):
    return 1.0 - float(np.sum((y - pred) ** 2)) / float(np.sum((y - y.mean()) ** 2))


# --------------------------------------------------------------------------- methods
def run_ridge(data):
    from sklearn.linear_model import Ridge

    Xtr, ytr, Xte, yte, _ = data
    t = time.perf_counter()
    m = Ridge(alpha=1.0).fit(Xtr, ytr)
    return [r2(yte, m.predict(Xte))], [time.perf_counter() - t]


def run_adassp(data, eps, delta, seeds, split=None):
    from dperm.privacy.adassp import DEFAULT_SPLIT, adassp

    Xtr, ytr, Xte, yte, _ = data
    A = np.column_stack([Xtr, np.ones(Xtr.shape[0])])
    Ate = np.column_stack([Xte, np.ones(Xte.shape[0])])
    scores, secs = [], []
    for s in seeds:
        t = time.perf_counter()
        coef, _ = adassp(A, ytr, epsilon=eps, delta=delta, data_norm=math.sqrt(2.0),
                         label_bound=1.0, split=split or DEFAULT_SPLIT, random_state=s)
        secs.append(time.perf_counter() - t)
        scores.append(r2(yte, Ate @ coef))
    return scores, secs


def estimator_class():
    try:
        import dperm
        return dperm.PrivateLinearRegression
    except (ImportError, AttributeError):
        return None


def run_estimator(cls, data, method, eps, delta, seeds):
    Xtr, ytr, Xte, yte, _ = data
    scores, secs = [], []
    for s in seeds:
        m = cls(method=method, epsilon=eps, delta=delta, data_norm=1.0, label_bound=1.0,
                fit_intercept=True, random_state=s)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(Xtr, ytr)
        secs.append(time.perf_counter() - t)
        scores.append(r2(yte, m.predict(Xte)))
    return scores, secs


def _diffprivlib_worker(npz_path, json_path):
    """Runs inside the diffprivlib interpreter: no dperm import here."""
    warnings.simplefilter("ignore")
    import diffprivlib
    import sklearn
    from diffprivlib.models import LinearRegression

    z = np.load(npz_path)
    cfg = json.loads(str(z["config"]))
    Xtr, ytr, Xte, yte = z["Xtr"], z["ytr"], z["Xte"], z["yte"]
    bounds_X = (z["lo"], z["hi"])
    out = []
    for eps in cfg["epsilons"]:
        scores, secs = [], []
        for s in cfg["seeds"]:
            m = LinearRegression(epsilon=eps, bounds_X=bounds_X, bounds_y=(-1.0, 1.0),
                                 fit_intercept=True, random_state=s)
            t = time.perf_counter()
            m.fit(Xtr, ytr)
            secs.append(time.perf_counter() - t)
            pred = m.predict(Xte)
            scores.append(1.0 - float(np.sum((yte - pred) ** 2))
                          / float(np.sum((yte - yte.mean()) ** 2)))
        out.append(dict(epsilon=eps, scores=scores, secs=secs))
    with open(json_path, "w") as f:
        json.dump(dict(results=out, versions=dict(diffprivlib=diffprivlib.__version__,
                                                  sklearn=sklearn.__version__)), f)


def run_diffprivlib(python, data, eps_list, seeds):
    Xtr, ytr, Xte, yte, (lo, hi) = data
    cfg = dict(epsilons=list(eps_list), seeds=list(seeds))
    with tempfile.TemporaryDirectory() as tmp:
        npz, js = os.path.join(tmp, "split.npz"), os.path.join(tmp, "out.json")
        np.savez(npz, Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, lo=lo, hi=hi,
                 config=np.array(json.dumps(cfg)))
        subprocess.run([python, os.path.abspath(__file__), "--_diffprivlib-worker", npz, js],
                       check=True)
        with open(js) as f:
            got = json.load(f)
    v = got["versions"]
    return {r["epsilon"]: (r["scores"], r["secs"]) for r in got["results"]}, \
        f"diffprivlib {v['diffprivlib']} LinearRegression (sklearn {v['sklearn']})"


# --------------------------------------------------------------------------- output
def row(dataset, n, method, eps, delta, scores, secs):
    return dict(dataset=dataset, n_train=n, method=method, epsilon=eps, delta=delta,
                r2_mean=float(np.mean(scores)),
                r2_sd=float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0,
                r2_min=float(np.min(scores)), n_draws=len(scores),
                fit_s=float(np.mean(secs)))


def fmt(r):
    eps = "inf" if math.isinf(r["epsilon"]) else f"{r['epsilon']:g}"
    delta = "0" if r["delta"] == 0 else f"{r['delta']:.2g}"
    def num(x):   # diffprivlib's R^2 reaches -1e17: those in scientific notation
        return f"{x:.4f}" if abs(x) < 1e3 else f"{x:.2e}"

    score = (f"{num(r['r2_mean'])} ± {num(r['r2_sd'])} (min {num(r['r2_min'])})"
             if r["n_draws"] > 1 else num(r["r2_mean"]))
    return (f"| {r['dataset']} | {r['n_train']} | {r['method']} | {eps} | {delta} | "
            f"{score} | {r['fit_s']:.3f} |")


HEADER = ("| data set | n train | method | epsilon | delta | held-out R^2 (mean ± sd, min) "
          "| fit s |\n|---|---:|---|---:|---:|---:|---:|")

DEFAULT_DATASETS = ("diabetes,adult-hours,kdd-dsthostsrv,synthetic-1e3,synthetic-1e4,"
                    "synthetic-1e5,synthetic-1e6")
SWEEP = [(0.1, 0.45, 0.45), (0.1, 0.3, 0.6), (0.05, 0.3, 0.65),
         (0.2, 0.3, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.1, 0.6, 0.3)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=DEFAULT_DATASETS)
    p.add_argument("--epsilons", default="1,0.1")
    p.add_argument("--draws", type=int, default=10)
    p.add_argument("--kdd-rows", type=int, default=200_000)
    p.add_argument("--diffprivlib-python", default=None,
                   help="interpreter with diffprivlib installed (default: skip diffprivlib)")
    p.add_argument("--sweep-split", action="store_true",
                   help="AdaSSP only, for a grid of budget splits")
    p.add_argument("--out", default=None, help="write the rows to this .json")
    p.add_argument("--_diffprivlib-worker", nargs=2, metavar=("NPZ", "JSON"),
                   help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._diffprivlib_worker:
        _diffprivlib_worker(*a._diffprivlib_worker)
        return
    eps_list = [float(e) for e in a.epsilons.split(",")]
    seeds = list(range(a.draws))
    est = None if a.sweep_split else estimator_class()
    if not a.sweep_split:
        if a.diffprivlib_python is None:
            print("note: diffprivlib skipped (give --diffprivlib-python PATH, an interpreter "
                  "where `import diffprivlib` works)", flush=True)
        if est is None:
            print("note: dperm.PrivateLinearRegression is not importable: its rows are "
                  "skipped", flush=True)
    rows = []
    print(HEADER, flush=True)
    for name in a.datasets.split(","):
        rng = np.random.default_rng(12345)
        t0 = time.perf_counter()
        data = load(name, rng, a.kdd_rows)
        n = data[0].shape[0]
        delta = 1.0 / n ** 2
        if a.sweep_split:
            for eps in eps_list:
                for split in SWEEP:
                    sc, _ = run_adassp(data, eps, delta, seeds, split)
                    print(f"{name} eps={eps:g} split={tuple(round(w, 3) for w in split)} "
                          f"R2 mean={np.mean(sc):.4f} sd={np.std(sc, ddof=1):.4f}", flush=True)
            continue

        def emit(r):
            rows.append(r)
            print(fmt(r), flush=True)

        emit(row(name, n, "non-private ridge (sklearn, alpha=1)", math.inf, 0.0,
                 *run_ridge(data)))
        dpl = None
        if a.diffprivlib_python:
            dpl, tag = run_diffprivlib(a.diffprivlib_python, data, eps_list, seeds)
        for eps in eps_list:
            emit(row(name, n, "dperm AdaSSP", eps, delta, *run_adassp(data, eps, delta, seeds)))
            if dpl is not None:
                emit(row(name, n, tag, eps, 0.0, *dpl[eps]))
            if est is not None:
                for method in ("objective", "output", "auto"):
                    emit(row(name, n, f'dperm PrivateLinearRegression("{method}")', eps,
                             delta, *run_estimator(est, data, method, eps, delta, seeds)))
        print(f"<!-- {name}: {time.perf_counter() - t0:.1f} s -->", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(rows=rows, argv=sys.argv[1:]), f, indent=1)


if __name__ == "__main__":
    main()
