"""The experiments of the earlier version of Chaudhuri & Monteleoni's NIPS 2008 paper, whose
results table (its Figure 1) the talk slides print.

From the text: uniform data on the unit sphere in 10 dimensions with no mass within margin
0.03 of a separator through the origin; "unseparable" data, uniform on the sphere, labelled
by a separator through the origin, with labels flipped with probability 0.2 within margin
0.1 of it; 17,500 points, 5-fold cross-validation (training sets of 14,000), Lambda = 0.01
(tuned by the authors on a separate holdout), 200 random restarts of each private method,
learning curves in increments of 1000 points, and curves against eps.

Not in the text: eps. The earlier version prints no value for its table or its learning
curves; we use eps = 0.2, the value of the final version's captions, and report the eps
curve so that the reader sees which eps the paper's numbers correspond to. The noise law:
this version's Theorem 3 draws the norm from Gamma(d, 2/eps) (the ``gamma`` reading); its
Algorithms are lost in the extracted text, so both readings are run as in the final version.
To keep the full run within minutes, the learning and eps curves use fewer restarts
(``curve_runs``) than the table's 200.
"""
import os

import numpy as np

from dperm.experiments import _nips2008_common as cm
from dperm.experiments._progress import Progress, plural

__all__ = ["PAPER_EARLY", "sample_sphere_unseparable", "run_early", "format_early",
           "write_early", "plot_early"]

#: the slides' table: (mean, standard deviation over five folds), N = 17,500
PAPER_EARLY = {
    "margin 0.03": {"sensitivity": (0.2962, 0.0617), "new": (0.1426, 0.1284),
                    "standard": (0.0, 0.0016)},
    "unseparable": {"sensitivity": (0.3257, 0.0536), "new": (0.1903, 0.1105),
                    "standard": (0.0530, 0.1105)},
}
LABELS = {"margin 0.03": "Uniform, margin 0.03",
          "unseparable": "Unseparable (noise 0.2 in margin 0.1)"}

FULL = dict(d=10, n=17500, margin=0.03, noise_margin=0.1, flip=0.2, lam=0.01, eps=0.2,
            folds=5, folds_run=5, runs=200, curve_runs=200,
            sizes=tuple(range(1000, 14001, 1000)),
            epsilons=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0))
QUICK = dict(FULL, folds_run=2, runs=6, curve_runs=3, sizes=(1000, 14000),
             epsilons=(0.005, 0.05, 0.2, 2.0))


def sample_sphere_unseparable(n, d=10, margin=0.1, flip=0.2, w=None, random_state=None):
    """n points uniform on the unit sphere of R^d, y = sign(w.x), and within |w.x| < margin
    each label flipped with probability `flip`. Returns (X, y, w)."""
    n, d = int(n), int(d)
    if n < 1 or d < 2 or not 0.0 <= margin < 1.0 or not 0.0 <= flip <= 1.0:
        raise ValueError("sample_sphere_unseparable: need n >= 1, d >= 2, 0 <= margin < 1, "
                         f"0 <= flip <= 1, got {n}, {d}, {margin}, {flip}")
    rng = cm.rng_of(random_state)
    if w is None:
        w = rng.standard_normal(d)
    w = np.asarray(w, dtype=np.float64) / np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    z = X @ w
    y = np.where(z > 0, 1.0, -1.0)
    y[(np.abs(z) < margin) & (rng.random(n) < flip)] *= -1.0
    return X, y, w


def run_early(quick=False, random_state=0, progress=True, n_threads=None):
    """The earlier version's table, learning curves and eps curves (see the module doc)."""
    sample_sphere_margin = cm.sample_sphere_margin
    cfg = dict(QUICK if quick else FULL)
    seeds = np.random.SeedSequence([0 if random_state is None else random_state, 2008]).spawn(4)
    rngs = [np.random.default_rng(s) for s in seeds]
    data = {
        "margin 0.03": sample_sphere_margin(cfg["n"], cfg["d"], cfg["margin"], random_state=rngs[0]),
        "unseparable": sample_sphere_unseparable(cfg["n"], cfg["d"], cfg["noise_margin"],
                                                 cfg["flip"], random_state=rngs[1]),
    }
    nf = min(cfg["folds_run"], cfg["folds"])
    bar = Progress(len(data) * 3 * nf, "nips2008 earlier version", enabled=progress)
    out = {"config": cfg, "quick": bool(quick), "datasets": {}, "n_unconverged": 0}
    lam, eps = cfg["lam"], cfg["eps"]
    for i, (name, (X, y, _)) in enumerate(data.items()):
        rng = rngs[2 + i]

        def tick(f, what, name=name):
            bar.update(1, note=f"{name} {what} fold {f + 1}")
        err, u1, n_train = cm.cv_errors(X, y, [(lam, eps)], cfg["folds"], nf, cfg["runs"], rng,
                                        n_threads, tick=lambda f: tick(f, "table"))
        ec, u2, _ = cm.cv_errors(X, y, [(lam, e) for e in cfg["epsilons"]], cfg["folds"], nf,
                                 cfg["curve_runs"], rng, n_threads,
                                 tick=lambda f: tick(f, "eps curve"))
        lc, u3, _ = cm.cv_errors(X, y, [(lam, eps)], cfg["folds"], nf, cfg["curve_runs"], rng,
                                 n_threads, sizes=cfg["sizes"],
                                 tick=lambda f: tick(f, "learning curve"))
        out["n_unconverged"] += u1 + u2 + u3
        out["datasets"][name] = {
            "n": X.shape[0], "d": X.shape[1], "n_train": n_train,
            "errors": {k: v[0, 0] for k, v in err.items()},
            "epsilon_bound": {k: cm.column_epsilon_bound(k, n_train, lam, eps)
                              for k in cm.PRIVATE_KEYS},
            "epsilon_curve": {"epsilons": tuple(cfg["epsilons"]),
                              "errors": {k: v[:, 0] for k, v in ec.items()}},
            "learning_curve": {"sizes": tuple(cfg["sizes"]),
                               "errors": {k: v[0] for k, v in lc.items()}},
        }
    bar.close()
    out["equivalent_epsilon"] = {
        (name, k): cm.equivalent_epsilon(ds["epsilon_curve"]["epsilons"],
                                         [a.mean() for a in ds["epsilon_curve"]["errors"][k]],
                                         PAPER_EARLY[name][cm.PAPER_COLUMN[k.partition(":")[0]]][0])
        for name, ds in out["datasets"].items() for k in cm.PRIVATE_KEYS
        if cm.PAPER_COLUMN[k.partition(":")[0]] is not None}
    return out


def _paper_of(name, key):
    col = cm.PAPER_COLUMN[key.partition(":")[0]]
    return None if col is None else PAPER_EARLY[name][col]


def format_early(res):
    cfg = res["config"]
    L = [f"Earlier version (the slides' table): d = {cfg['d']}, N = {cfg['n']:,} (5-fold: "
         f"{plural(min(cfg['folds_run'], cfg['folds']), 'fold')} run), Λ = {cfg['lam']:g}, "
         f"{plural(cfg['runs'], 'restart')} per fold, eps = {cfg['eps']:g} (not printed by "
         "the paper: assumed)"]
    for name, ds in res["datasets"].items():
        L.append(f" {LABELS[name]} (N = {ds['n_train']:,} per training fold)")
        L.extend(cm.table_lines([(cm.column_label(k), cm.fold_mean_std(ds["errors"][k]),
                                  _paper_of(name, k),
                                  ("eps bound " + cm.fmt_bound(ds["epsilon_bound"][k]))
                                  if k in ds["epsilon_bound"] else "") for k in cm.KEYS]))
    L.append(" eps at which our eps curve meets the paper's number:")
    for (name, k), e in res["equivalent_epsilon"].items():
        L.append(f"  {LABELS[name]:<40} {cm.column_label(k):<52} "
                 + ("outside the eps range run" if e is None else f"{e:.3g}"))
    for field, xname, title in (("epsilon_curve", "epsilons", "eps curve"),
                                ("learning_curve", "sizes", "learning curve")):
        for name, ds in res["datasets"].items():
            c = ds[field]
            L.append(f" {title}, {LABELS[name]} ({plural(cfg['curve_runs'], 'restart')} per fold)")
            L.extend(cm.curve_lines("N" if field == "learning_curve" else "eps", c[xname],
                                    c["errors"]))
    return "\n".join(L)


def write_early(res, out_dir):
    cfg = res["config"]
    rows = []
    for name, ds in res["datasets"].items():
        for k in cm.KEYS:
            m, _, reading = k.partition(":")
            e = ds["errors"][k]
            ms = cm.fold_mean_std(e)
            b = ds["epsilon_bound"].get(k)
            rows.append([name, m, f"{cfg['lam']:g}", cfg["eps"], f"{ms[0]:.5f}",
                         f"{cm.mean_std(e)[1]:.5f}", f"{ms[1]:.5f}", e.shape[0], e.shape[1],
                         "" if b is None else f"{b:.5g}"]
                        + cm.paper_cells(_paper_of(name, k), ms) + [reading])
    paths = [cm.write_rows(os.path.join(out_dir, "nips2008_early_table.csv"),
                           ["margin", "method", "lambda", "epsilon", "error_mean", "error_std",
                            "error_fold_std", "folds", "runs_per_fold", "epsilon_bound",
                            "paper_mean", "paper_std", "difference", "within_paper_std",
                            "reading"], rows)]
    rows = []
    for field, xcol in (("learning_curve", "sizes"), ("epsilon_curve", "epsilons")):
        for name, ds in res["datasets"].items():
            c = ds[field]
            for k in cm.KEYS:
                m, _, reading = k.partition(":")
                for i, x in enumerate(c[xcol]):
                    mu, sd = cm.fold_mean_std(c["errors"][k][i])
                    n = x if field == "learning_curve" else ds["n_train"]
                    e = cfg["eps"] if field == "learning_curve" else x
                    rows.append([field.replace("_curve", ""), name, m, reading, f"{cfg['lam']:g}",
                                 e, n, f"{mu:.5f}", f"{sd:.5f}", c["errors"][k][i].size])
    paths.append(cm.write_rows(os.path.join(out_dir, "nips2008_early_curves.csv"),
                               ["curve", "data", "method", "reading", "lambda", "epsilon", "n",
                                "error_mean", "error_std", "runs"], rows))
    return paths


def plot_early(res, out_dir):
    plt = cm.pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    for row, (field, xname, xlab) in enumerate((("learning_curve", "sizes", "training set size N"),
                                                ("epsilon_curve", "epsilons", "privacy parameter ε"))):
        for col, (name, ds) in enumerate(res["datasets"].items()):
            ax = axes[row][col]
            c = ds[field]
            for k in cm.KEYS:
                cm.curve(ax, c[xname], list(c["errors"][k]), k)
            if field == "epsilon_curve":
                ax.set_xscale("log")
            ax.set_xlabel(xlab)
            ax.set_title(f"{'abcd'[2 * row + col]}) {LABELS[name]}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.set_ylabel("test error")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    cfg = res["config"]
    fig.suptitle(f"Earlier version: d = {cfg['d']}, Λ = {cfg['lam']:g}, ε = {cfg['eps']:g} on the "
                 "learning curves (assumed)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    p = os.path.join(out_dir, "nips2008_early_curves.png")
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return [p]
