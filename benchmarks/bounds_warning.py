"""The accuracy warning of the default from-nothing path (issue 28 leftovers, item 3).

``dperm fit DATA.csv --bounds-share 0.1`` and ``dperm.private_pipeline`` spend 0.1 x epsilon
on the numeric columns' bounds, split evenly over them.  On Adult (adult.data, the rows
without a missing value, the six numeric columns) at total epsilon 1 that is 0.1 / 6 per
column.  For each column this prints

* n and the column's epsilon;
* what the NoiseDominatedWarning promises: the exact probability (from the mechanism's law)
  that the worse end's RANK error exceeds the tail (1 % of n for the 1 %-99 % bounds) --
  estimate_bounds' warning fires when it is above 5 % -- and the same probability at the
  pipeline's tolerance, the tail + ``--slack`` (dperm.pipeline.BOUNDS_WARN_SLACK, 2 % of
  the rows: its warning fires when that is above 5 %);
* the released bounds' accuracy over ``--draws`` seeded draws of ``dperm.estimate_bounds``:
  the worse end's rank error (in % of n) and its distance to the true quantile in % of
  the true 1 %-99 % width (mean and largest), and the fraction of bounds within 5 % of the
  width (the measure of issue 28's targets);
* the same within-5 % fraction under the exact law (``--law-draws`` draws of PairLaw.sample).

    python benchmarks/bounds_warning.py --draws 20
    python benchmarks/bounds_warning.py --draws 20 --share 0.2 --columns age,education-num,hours-per-week
"""
import argparse
import warnings

import numpy as np

import dperm
from dperm.privacy import quantiles as Q


def adult_columns(names=None):
    from dperm.datasets import ADULT_NUMERIC_COLUMNS

    b = dperm.datasets.load_adult("public", return_frame=True)
    train = ~np.asarray(b.is_test, dtype=bool)
    names = list(ADULT_NUMERIC_COLUMNS) if names is None else names
    return {c: np.asarray(b.frame[c], dtype=np.float64)[train] for c in names}


def rank_error(x_sorted, value, q):
    """|rank of value - q n| in ranks: 0 when q n lies in [#{x < v}, #{x <= v}]."""
    n = x_sorted.size
    a = np.searchsorted(x_sorted, value, side="left")
    b = np.searchsorted(x_sorted, value, side="right")
    t = q * n
    return np.maximum(0.0, np.maximum(a - t, t - b))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--law-draws", type=int, default=20000)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--share", type=float, default=0.1)
    p.add_argument("--columns", default=None)
    p.add_argument("--slack", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    cols = adult_columns(None if a.columns is None else a.columns.split(","))
    eps_col = a.share * a.epsilon / len(cols)
    g = Q.default_grid()
    rng = np.random.default_rng(a.seed)
    draws = {c: [] for c in cols}
    for _ in range(a.draws):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = dperm.estimate_bounds(cols, a.share * a.epsilon, random_state=rng)
        for c in cols:
            draws[c].append(b[c])
    print(f"Adult (adult.data rows kept), total epsilon {a.epsilon:g}, bounds share {a.share:g}, "
          f"{len(cols)} columns: epsilon {eps_col:.4g} per column; {a.draws} draws, law "
          f"{a.law_draws} draws")
    print(f"{'column':16} {'n':>6} {'n eps':>6} {'P(rank>tail)':>12} "
          f"{'P(rank>' + format(100 * (0.01 + a.slack), 'g') + '%)':>13} {'rank err % n':>13} "
          f"{'max':>5} {'dist % width':>12} {'max':>6} {'within 5%':>9} {'law':>6}")
    all_hits, all_law = [], []
    for c, x in cols.items():
        xs = np.sort(x)
        n = xs.size
        true = np.quantile(x, [0.01, 0.99])
        width = true[1] - true[0]
        atoms, cells = Q.column_histogram(x, g)
        law = Q.pair_law(atoms, cells, (0.01, 0.99), eps_col)
        p_warn, _ = law.inaccuracy()
        p_wide, _ = law.inaccuracy(0.01 + a.slack)
        d = np.asarray(draws[c])
        rk = np.maximum(rank_error(xs, d[:, 0], 0.01), rank_error(xs, d[:, 1], 0.99)) / n
        dist = np.maximum(np.abs(d[:, 0] - true[0]), np.abs(d[:, 1] - true[1])) / width
        hits = np.concatenate([np.abs(d[:, 0] - true[0]) <= 0.05 * width,
                               np.abs(d[:, 1] - true[1]) <= 0.05 * width])
        i, j = law.sample(a.law_draws, np.random.default_rng(a.seed + 1))
        lh = np.concatenate([np.abs(g[i] - true[0]) <= 0.05 * width,
                             np.abs(g[j] - true[1]) <= 0.05 * width])
        all_hits.append(hits)
        all_law.append(lh)
        print(f"{c:16} {n:6d} {n * eps_col:6.0f} {p_warn:12.3f} {p_wide:13.2e} "
              f"{100 * rk.mean():13.2f} {100 * rk.max():5.2f} {100 * dist.mean():12.2f} "
              f"{100 * dist.max():6.2f} {hits.mean():9.2f} {lh.mean():6.3f}")
    print(f"all bounds within 5 % of the width: draws {np.concatenate(all_hits).mean():.3f}, "
          f"law {np.concatenate(all_law).mean():.4f}")


if __name__ == "__main__":
    main()
