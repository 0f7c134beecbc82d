"""From nothing at a total epsilon (issue 28's targets): dperm.private_pipeline, which
spends 0.1 epsilon on private bounds and 0.9 epsilon on the fit, against the same
pipeline with codebook bounds (the whole epsilon on the fit).

* classification: UCI Adult (adult.data to train, adult.test to test, rows with a
  missing value dropped), the label ``income``, the public category lists
  ADULT_PUBLIC_CATEGORIES; codebook bounds (0, ADULT_PUBLIC_BOUNDS[c]).  Test accuracy.
* regression: a wage-like target on Adult's rows, log wage = 2.3 + 0.035 (age - 40)
  - 0.0009 (age - 40)^2 + 0.09 (education-num - 10) + 0.006 (hours - 40) + 0.15 male
  + 0.2 married + noise N(0, 0.45^2) (seeded, the same for every method); features
  the other columns.  Codebook: the features' codebook bounds and a hand-centred label,
  label_bounds = (3 - 3.5, 3 + 3.5).  Test R^2 (and the non-private ridge's).

Each method is run ``--draws`` times with new noise; the table gives the mean, its
standard error, and the paired difference's mean and standard error (draw i of both
methods shares nothing but the data).

    python benchmarks/from_nothing.py                       # 30 draws, epsilon 1
    python benchmarks/from_nothing.py --draws 10 --epsilon 1 --task classification
    python benchmarks/from_nothing.py --alpha select        # the fit's Lambda selected
"""
import argparse
import time
import warnings

import numpy as np
import pandas as pd

import dperm
from dperm.datasets import ADULT_NUMERIC_COLUMNS, ADULT_PUBLIC_BOUNDS, ADULT_PUBLIC_CATEGORIES


def adult_frames():
    b = dperm.datasets.load_adult("public", return_frame=True)
    f = pd.DataFrame({k: b.frame[k] for k in b.frame.dtype.names})
    f["income"] = np.where(np.asarray(b.target) == 1, ">50K", "<=50K")
    test = np.asarray(b.is_test, dtype=bool)
    return f[~test].reset_index(drop=True), f[test].reset_index(drop=True)


def wage(f, rng):
    a = f["age"].to_numpy(float) - 40
    return (2.3 + 0.035 * a - 0.0009 * a ** 2
            + 0.09 * (f["education-num"].to_numpy(float) - 10)
            + 0.006 * (f["hours-per-week"].to_numpy(float) - 40)
            + 0.15 * (f["sex"].to_numpy() == "Male")
            + 0.2 * (f["marital-status"].to_numpy() == "Married-civ-spouse")
            + 0.45 * rng.normal(size=len(f)))


def codebook(frame, label, eps, task, alpha, rng):
    from sklearn.pipeline import Pipeline

    cats = {c: list(v) for c, v in ADULT_PUBLIC_CATEGORIES.items()}
    schema = dperm.PublicSchema(numeric={c: (0.0, ADULT_PUBLIC_BOUNDS[c])
                                         for c in ADULT_NUMERIC_COLUMNS}, categorical=cats)
    if task == "classification":
        est = dperm.PrivateLinearClassifier(epsilon=eps, alpha=alpha, classes=["<=50K", ">50K"],
                                            random_state=rng)
    else:
        est = dperm.PrivateLinearRegression(epsilon=eps, alpha=alpha,
                                            label_bounds=(3 - 3.5, 3 + 3.5), random_state=rng)
    model = Pipeline([("bounds", dperm.PublicBoundsTransformer.from_schema(schema)),
                      ("model", est)])
    return model.fit(frame.drop(columns=[label]), frame[label].to_numpy())


def from_nothing(frame, label, eps, task, alpha, rng):
    cats = {c: list(v) for c, v in ADULT_PUBLIC_CATEGORIES.items()}
    if task == "classification":
        cats[label] = ["<=50K", ">50K"]
    return dperm.private_pipeline(frame, label=label, epsilon=eps, categories=cats, task=task,
                                  alpha=alpha, random_state=rng)


def score(model, test, label, task):
    X = test.drop(columns=[label])
    y = test[label].to_numpy()
    if task == "classification":
        return float(np.mean(model.predict(X) == y))
    from sklearn.metrics import r2_score

    return float(r2_score(y, model.predict(X)))


def run(task, eps, draws, alpha, seed):
    train, test = adult_frames()
    label = "income"
    if task == "regression":
        label = "log_wage"
        rng = np.random.default_rng(12345)
        train = train.drop(columns=["income"]).assign(log_wage=wage(train, rng))
        test = test.drop(columns=["income"]).assign(log_wage=wage(test, rng))
    rng = np.random.default_rng(seed)
    res = {"codebook": [], "from nothing": []}
    t0 = time.perf_counter()
    for _ in range(draws):
        res["codebook"].append(score(codebook(train, label, eps, task, alpha, rng), test,
                                     label, task))
        res["from nothing"].append(score(from_nothing(train, label, eps, task, alpha, rng),
                                         test, label, task))
    what = "accuracy" if task == "classification" else "R^2"
    print(f"{task}: n train {len(train)}, test {len(test)}, epsilon {eps:g} total, alpha "
          f"{alpha!r}, {draws} draws ({time.perf_counter() - t0:.0f} s)")
    if task == "classification":
        maj = max(np.mean(test[label] == c) for c in ("<=50K", ">50K"))
        print(f"  majority class {maj:.4f}")
    else:
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline

        cats = {c: list(v) for c, v in ADULT_PUBLIC_CATEGORIES.items()}
        schema = dperm.PublicSchema(numeric={c: (0.0, ADULT_PUBLIC_BOUNDS[c])
                                             for c in ADULT_NUMERIC_COLUMNS}, categorical=cats)
        ridge = make_pipeline(dperm.PublicBoundsTransformer.from_schema(schema),
                              Ridge(alpha=1e-3)).fit(train.drop(columns=[label]), train[label])
        print(f"  non-private ridge (codebook encoding) {score(ridge, test, label, task):.4f}")
    for k, v in res.items():
        v = np.asarray(v)
        print(f"  {k:13} {what} {v.mean():.4f} (se {v.std(ddof=1) / np.sqrt(len(v)):.4f}, "
              f"sd {v.std(ddof=1):.4f})")
    d = np.asarray(res["from nothing"]) - np.asarray(res["codebook"])
    print(f"  from nothing - codebook: {d.mean():+.4f} (se {d.std(ddof=1) / np.sqrt(len(d)):.4f})",
          flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=30)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--task", default="classification,regression")
    p.add_argument("--alpha", default="auto")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    alpha = a.alpha if a.alpha in ("auto", "select") else float(a.alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # seeded runs (a benchmark, not a release)
        for task in a.task.split(","):
            run(task, a.epsilon, a.draws, alpha, a.seed)


if __name__ == "__main__":
    main()
