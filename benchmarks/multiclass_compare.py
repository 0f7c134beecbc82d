"""Multi-class accuracy of dperm.PrivateLinearClassifier against diffprivlib (issue 12).

Data sets (both with public feature bounds, rows of norm <= 1, data_norm = 1):

* KDD Cup 99 five-class (``load_kddcup99(target="five_class", preprocess="public")``):
  a uniformly random subset of ``--kdd-rows`` rows (70,000, seed 0), y in
  {0 normal, 1 DoS, 2 probe, 3 R2L, 4 U2R}, d = 122.
* scikit-learn's digits (1,797 8x8 images, 10 classes, d = 64): pixel values are
  in [0, 16] by the data set's definition, so X / 16 is in [0, 1]^64; each row is
  then projected onto the unit ball (a map of the row alone, no statistic of the
  data: rows of norm > 1 are divided by their norm).

Each is split 80/20 once (``train_test_split(random_state=0)``). Methods, at each
epsilon of ``--epsilons``:

* dperm one-vs-rest, pure epsilon (delta = 0; each of the K binary models gets
  epsilon / K), objective perturbation;
* dperm multinomial (softmax), (epsilon, delta = 1 / n_train^2), Gaussian
  objective perturbation;
  both at alpha="auto" (a public rule: a valid private result) and at the best
  alpha of the grid 10^-6, 10^-5.5, ..., 10^-1 (11 values) by mean TEST accuracy:
  OPTIMISTIC, the choice looks at the test set and is not private;
* the non-private multinomial model (perturbation="none", alpha="auto");
* diffprivlib's LogisticRegression(epsilon, data_norm=1) (one-vs-rest, epsilon / K
  per class, its own objective perturbation), default C = 1 and, likewise
  optimistic, the best C = 1 / (n_train alpha) over the same alpha grid (its
  objective is mean loss + l2 / (2 C n) ||w||^2). diffprivlib 0.6.6 does not import
  with scikit-learn >= 1.6, so it runs in another interpreter
  (``--diffprivlib-python``), fed the split through a temporary .npz and answering
  in JSON.

Every private method is averaged over ``--draws`` noise draws with
random_state = 0 .. draws-1 (seeded noise: fine for a benchmark, no guarantee; the
PrivacyLeakWarning this draws is silenced, as are NoiseDominatedWarning at the
small alphas of the grid). The label sets are passed as public (classes=range(K))
to dperm; diffprivlib reads them from y.

    python benchmarks/multiclass_compare.py --diffprivlib-python /tmp/dpl-venv/bin/python \\
        --out multiclass.json
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ALPHA_GRID = tuple(10.0 ** (-6 + 0.5 * k) for k in range(11))   # 1e-6 ... 1e-1


# --------------------------------------------------------------------------- data
def load_data(name, kdd_rows):
    from sklearn.model_selection import train_test_split

    if name == "kddcup99":
        from dperm.datasets import load_kddcup99

        X, y = load_kddcup99("public", n_samples=kdd_rows, random_state=0, target="five_class")
        K = 5
        label = f"KDDCup99 5-class (n={kdd_rows})"
    elif name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X = X / 16.0                       # public per-pixel bound
        nrm = np.linalg.norm(X, axis=1)
        big = nrm > 1.0
        X[big] /= nrm[big, None] * (1 + 1e-12)
        y = y.astype(np.int64)
        K = 10
        label = "digits (n=1797)"
    else:
        raise ValueError(name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    assert np.linalg.norm(Xtr, axis=1).max() <= 1.0
    return dict(name=name, label=label, K=K, Xtr=np.ascontiguousarray(Xtr),
                Xte=np.ascontiguousarray(Xte), ytr=ytr, yte=yte)


# --------------------------------------------------------------------------- dperm
def dperm_draws(data, seeds, **params):
    """(accuracies, fit seconds, alpha_) over the seeds."""
    from dperm import PrivateLinearClassifier

    accs, secs, alpha = [], [], None
    for s in seeds:
        clf = PrivateLinearClassifier(loss="logistic", data_norm=1.0,
                                      classes=list(range(data["K"])), random_state=s,
                                      **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            clf.fit(data["Xtr"], data["ytr"])
            secs.append(time.perf_counter() - t)
        accs.append(float(np.mean(clf.predict(data["Xte"]) == data["yte"])))
        alpha = float(clf.alpha_)
        mode = clf.privacy_.get("multiclass")
    return accs, secs, alpha, mode


def summarize(dataset, method, eps, delta, accs, secs, alpha, note=""):
    return dict(dataset=dataset, method=method, epsilon=eps, delta=delta, alpha=alpha,
                acc_mean=float(np.mean(accs)), acc_sd=float(np.std(accs, ddof=1)) if
                len(accs) > 1 else 0.0, n_draws=len(accs), fit_s=float(np.mean(secs)),
                accs=[float(a) for a in accs], note=note)


def best_of_grid(per_alpha):
    """The entry with the highest mean accuracy (ties: the larger alpha)."""
    return max(per_alpha, key=lambda e: (np.mean(e["accs"]), e["alpha"]))


def run_dperm(data, eps_list, seeds, grid, log):
    rows = []
    n = data["Xtr"].shape[0]
    ds = data["label"]
    for eps in eps_list:
        for method, delta, expect in (("dperm OvR, pure eps", 0.0, "ovr"),
                                      ("dperm multinomial, Gaussian", 1.0 / n ** 2,
                                       "multinomial")):
            accs, secs, a, mode = dperm_draws(data, seeds, epsilon=eps, delta=delta,
                                              alpha="auto")
            assert mode == expect, (mode, expect)
            rows.append(summarize(ds, method + ' [alpha="auto"]', eps, delta, accs, secs, a))
            log(rows[-1])
            if grid:
                per = []
                for alpha in ALPHA_GRID:
                    accs, secs, a, _ = dperm_draws(data, seeds, epsilon=eps, delta=delta,
                                                   alpha=alpha)
                    per.append(dict(alpha=a, accs=accs, secs=secs))
                    print(f"    {ds} {method} eps={eps:g} alpha={a:.3g}: "
                          f"{np.mean(accs):.4f} +- {np.std(accs, ddof=1):.4f} "
                          f"({np.mean(secs):.2f} s)", flush=True)
                b = best_of_grid(per)
                rows.append(summarize(ds, method + " [best alpha of grid, optimistic]", eps,
                                      delta, b["accs"], b["secs"], b["alpha"],
                                      note="alpha chosen on the test set"))
                rows[-1]["grid"] = [dict(alpha=e["alpha"], acc_mean=float(np.mean(e["accs"])),
                                         acc_sd=float(np.std(e["accs"], ddof=1)),
                                         fit_s=float(np.mean(e["secs"]))) for e in per]
                log(rows[-1])
    accs, secs, a, mode = dperm_draws(data, [0], perturbation="none", alpha="auto")
    assert mode == "multinomial"
    rows.append(summarize(ds, 'non-private multinomial [alpha="auto"]', math.inf, 0.0,
                          accs, secs, a))
    log(rows[-1])
    return rows


# --------------------------------------------------------------------------- diffprivlib
def _diffprivlib_worker(npz_path, json_path):
    """Runs inside the diffprivlib interpreter: no dperm import here."""
    warnings.simplefilter("ignore")
    from diffprivlib.models import LogisticRegression

    z = np.load(npz_path)
    cfg = json.loads(str(z["config"]))
    Xtr, ytr, Xte, yte = z["Xtr"], z["ytr"], z["Xte"], z["yte"]
    out = []
    for eps in cfg["epsilons"]:
        for C in cfg["Cs"]:
            accs, secs = [], []
            for s in cfg["seeds"]:
                clf = LogisticRegression(epsilon=eps, data_norm=cfg["data_norm"], C=C,
                                         random_state=s)
                t = time.perf_counter()
                clf.fit(Xtr, ytr)
                secs.append(time.perf_counter() - t)
                accs.append(float(np.mean(clf.predict(Xte) == yte)))
            out.append(dict(epsilon=eps, C=C, accs=accs, secs=secs))
    import diffprivlib
    import sklearn
    with open(json_path, "w") as f:
        json.dump(dict(results=out, versions=dict(diffprivlib=diffprivlib.__version__,
                                                  sklearn=sklearn.__version__)), f)


def run_diffprivlib(python, data, eps_list, seeds, grid, log):
    n = data["Xtr"].shape[0]
    Cs = [1.0] + ([1.0 / (n * a) for a in ALPHA_GRID] if grid else [])
    cfg = dict(epsilons=list(eps_list), seeds=list(seeds), Cs=Cs, data_norm=1.0)
    with tempfile.TemporaryDirectory() as tmp:
        npz, js = os.path.join(tmp, "split.npz"), os.path.join(tmp, "out.json")
        np.savez(npz, Xtr=data["Xtr"], ytr=data["ytr"], Xte=data["Xte"], yte=data["yte"],
                 config=np.array(json.dumps(cfg)))
        subprocess.run([python, os.path.abspath(__file__), "--_diffprivlib-worker", npz, js],
                       check=True)
        with open(js) as f:
            got = json.load(f)
    ver = got["versions"]
    tag = f"diffprivlib {ver['diffprivlib']} (sklearn {ver['sklearn']}) OvR"
    rows = []
    for eps in eps_list:
        res = [r for r in got["results"] if r["epsilon"] == eps]
        d = res[0]
        rows.append(summarize(data["label"], tag + " [C=1 default]", eps, 0.0, d["accs"],
                              d["secs"], 1.0 / n, note="alpha = 1/(C n)"))
        log(rows[-1])
        if grid:
            per = [dict(alpha=1.0 / (n * r["C"]), accs=r["accs"], secs=r["secs"])
                   for r in res[1:]]
            b = best_of_grid(per)
            rows.append(summarize(data["label"], tag + " [best C of grid, optimistic]", eps,
                                  0.0, b["accs"], b["secs"], b["alpha"],
                                  note="C = 1/(n alpha) chosen on the test set"))
            rows[-1]["grid"] = [dict(alpha=e["alpha"], acc_mean=float(np.mean(e["accs"])),
                                     acc_sd=float(np.std(e["accs"], ddof=1)),
                                     fit_s=float(np.mean(e["secs"]))) for e in per]
            log(rows[-1])
    return rows


# --------------------------------------------------------------------------- output
def fmt_row(r):
    eps = "inf" if math.isinf(r["epsilon"]) else f"{r['epsilon']:g}"
    delta = "0" if r["delta"] == 0 else f"{r['delta']:.2g}"
    alpha = "" if r["alpha"] is None else f"{r['alpha']:.3g}"
    acc = f"{r['acc_mean']:.4f} ± {r['acc_sd']:.4f}" if r["n_draws"] > 1 else \
        f"{r['acc_mean']:.4f}"
    fit = "" if r["fit_s"] is None else f"{r['fit_s']:.2f}"
    return f"| {r['dataset']} | {r['method']} | {eps} | {delta} | {alpha} | {acc} | {fit} |"


HEADER = ("| data set | method | epsilon | delta | alpha | test accuracy (mean ± sd) | fit s |\n"
          "|---|---|---:|---:|---:|---:|---:|")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="kddcup99,digits")
    p.add_argument("--epsilons", default="1", help="comma-separated, e.g. 1,0.1")
    p.add_argument("--draws", type=int, default=5)
    p.add_argument("--kdd-rows", type=int, default=70000)
    p.add_argument("--no-grid", action="store_true", help="alpha='auto' (and C=1) only")
    p.add_argument("--diffprivlib-python", default=None,
                   help="interpreter with diffprivlib installed (default: skip diffprivlib)")
    p.add_argument("--out", default=None, help="write the rows to this .json or .csv")
    p.add_argument("--_diffprivlib-worker", nargs=2, metavar=("NPZ", "JSON"),
                   help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._diffprivlib_worker:
        _diffprivlib_worker(*a._diffprivlib_worker)
        return
    eps_list = [float(e) for e in a.epsilons.split(",")]
    seeds = list(range(a.draws))
    grid = not a.no_grid
    if a.diffprivlib_python is None:
        print("note: diffprivlib skipped (give --diffprivlib-python PATH, an interpreter "
              "where `import diffprivlib` works)", flush=True)

    def log(r):
        print(fmt_row(r), flush=True)

    rows = []
    for name in a.datasets.split(","):
        data = load_data(name, a.kdd_rows)
        counts = np.bincount(data["ytr"], minlength=data["K"]).tolist()
        tcounts = np.bincount(data["yte"], minlength=data["K"]).tolist()
        print(f"## {data['label']}: train {len(data['ytr'])} rows, class counts {counts}; "
              f"test {len(data['yte'])}, {tcounts}", flush=True)
        maj = int(np.argmax(counts))
        rows.append(dict(dataset=data["label"], method=f"majority class ({maj}) of train",
                         epsilon=math.inf, delta=0.0, alpha=None,
                         acc_mean=float(np.mean(data["yte"] == maj)), acc_sd=0.0, n_draws=1,
                         fit_s=None, accs=None, note=""))
        log(rows[-1])
        rows += run_dperm(data, eps_list, seeds, grid, log)
        if a.diffprivlib_python:
            rows += run_diffprivlib(a.diffprivlib_python, data, eps_list, seeds, grid, log)

    print()
    print(f"Test accuracy, mean ± sd over {a.draws} noise draws (random_state 0..{a.draws - 1}); "
          "'best ... of grid' rows pick alpha on the test set (optimistic, not private).")
    print()
    print(HEADER)
    for r in rows:
        print(fmt_row(r))
    if a.out:
        if a.out.endswith(".csv"):
            keys = ["dataset", "method", "epsilon", "delta", "alpha", "acc_mean", "acc_sd",
                    "n_draws", "fit_s", "note"]
            with open(a.out, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
        else:
            with open(a.out, "w") as f:
                json.dump(dict(argv=sys.argv, rows=rows), f, indent=1,
                          default=lambda o: None if o is None else str(o))
        print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
