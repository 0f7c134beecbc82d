"""Private bounds: ties, point masses and small epsilon (issue 28, item 1).

Measures ``dperm.estimate_bounds`` (one exponential mechanism over pairs of grid points,
dperm/privacy/quantiles.py) against two candidates, all at the same epsilon:

* ``old``: the mechanism of dperm 0.1 (one exponential mechanism per quantile over the
  continuous pieces of a +-1e9 log grid with 10 points per decade, epsilon / (2 m) each;
  copied below, so the comparison survives its removal from the package);
* ``above-threshold``: AboveThreshold on a geometric grid (Durfee, NeurIPS 2023,
  "Unbounded differentially private quantile and maximum estimation"): scan the grid
  upwards from a public lower limit (0 here: every column below is nonnegative, the
  setting of the paper) and release the first point whose noisy count #{x <= g} reaches
  the noisy threshold q n (threshold noise Lap(2 / eps), query noise Lap(4 / eps), each
  quantile at epsilon / (2 m); n treated as public).

Tables:

1. Ties: four integer, bounded and top-coded columns of 30,000 rows (ages 21-35 with 10 %
   at 35, weeks worked 0-52 with 47 % zeros, years of education 0-18 with 8 % at 18, a
   month 1-12) at eps = 1 and 0.1 per column, over `--draws` draws: the fraction of draws
   that are sane (both bounds within half the data's range outside [min, max] and the
   interval covering at least half the 1 %-99 % range), the fraction with a bound beyond
   10 x the range, and the largest distance outside [min, max] in units of the range.
   For the new mechanism also the exact probability (from its law) of an insane draw.
2. Adult's six numeric columns (the 45,222 kept rows of adult.data + adult.test) at total
   eps 0.1, 0.5 and 1: the fraction of released bounds within 5 % of the true 1 %-99 %
   width (the new mechanism: also the exact expectation from its law).

    python benchmarks/private_bounds.py                 # 200 draws
    python benchmarks/private_bounds.py --draws 20      # quicker
"""
import argparse
import time
import warnings

import numpy as np

import dperm
from dperm.privacy import quantiles as Q


# ----------------------------------------------------------------------------- candidates
def _old_grid():
    k = np.arange(-30, 91)
    pos = 10.0 ** (k / 10)
    return np.concatenate([-pos[::-1], [0.0], pos])


def _old_quantile(x, q, epsilon, grid, rng, size):
    """dperm 0.1's sampler (continuous pieces of the grid cut at the data), `size` draws."""
    x = np.sort(x)
    n = x.size
    target = q * n
    scale = epsilon / 2.0
    lo_rank = np.searchsorted(x, grid, side="left")
    hi_rank = np.searchsorted(x, grid, side="right")
    logw_atom = -scale * np.maximum(0.0, np.maximum(lo_rank - target, target - hi_rank))
    cuts = np.union1d(grid, x)
    a, b = cuts[:-1], cuts[1:]
    cell = np.searchsorted(grid, a, side="right") - 1
    rank = np.searchsorted(x, a, side="right")
    logw_piece = np.log(b - a) - np.log(grid[cell + 1] - grid[cell]) - scale * np.abs(rank - target)
    lo = np.concatenate([grid, a])
    hi = np.concatenate([grid, b])
    logw = np.concatenate([logw_atom, logw_piece])
    cdf = np.cumsum(np.exp(logw - logw.max()))
    i = np.minimum(np.searchsorted(cdf, rng.uniform(0, cdf[-1], size), side="right"), cdf.size - 1)
    return lo[i] + (hi[i] - lo[i]) * rng.uniform(size=size)


def old_bounds(x, eps_col, rng, size):
    """dperm 0.1: each quantile at eps_col / 2; swapped when low > high."""
    g = _old_grid()
    lo, hi = (_old_quantile(x, q, eps_col / 2, g, rng, size) for q in (0.01, 0.99))
    return np.minimum(lo, hi), np.maximum(lo, hi)


def above_threshold_bounds(x, eps_col, rng, size):
    g = Q.default_grid()
    g = g[g >= 0.0]
    eps_q = eps_col / 2
    counts = np.searchsorted(np.sort(x), g, side="right")      # #{x <= g}
    res = []
    for q in (0.01, 0.99):
        rho = rng.laplace(0.0, 2.0 / eps_q, (size, 1))
        nu = rng.laplace(0.0, 4.0 / eps_q, (size, g.size))
        hit = counts + nu >= q * x.size + rho
        first = np.where(hit.any(axis=1), hit.argmax(axis=1), g.size - 1)
        res.append(g[first])
    return np.minimum(*res), np.maximum(*res)


def new_bounds(x, eps_col, rng, size):
    """estimate_bounds' law for one column (eps_col = epsilon / m), `size` draws from it:
    the sampler estimate_bounds calls (tests/privacy/test_quantiles.py checks this)."""
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    law = Q.pair_law(atoms, cells, (0.01, 0.99), eps_col)
    return Q.sample_pair(atoms, cells, (0.01, 0.99), eps_col, g, size=size, random_state=rng,
                         law=law)


CANDIDATES = {"new (pairs, width prior)": new_bounds, "old (dperm 0.1)": old_bounds,
              "above-threshold (Durfee)": above_threshold_bounds}


# ----------------------------------------------------------------------------- data
def tie_columns(n=30_000, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(3, n))
    return {"age 21-35, 10% at 35": np.where(u[0] < 0.10, 35, rng.integers(21, 35, n)).astype(float),
            "weeks 0-52, 47% zeros": np.where(u[1] < 0.47, 0, rng.integers(1, 53, n)).astype(float),
            "educ 0-18, 8% at 18": np.where(u[2] < 0.08, 18, rng.integers(0, 18, n)).astype(float),
            "month 1-12": rng.integers(1, 13, n).astype(float)}


def adult_columns():
    try:
        from dperm.datasets._adult import ADULT_NUMERIC_COLUMNS
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = dperm.datasets.load_adult("public", return_frame=True).frame
    except (OSError, ValueError, ImportError) as exc:
        print(f"(Adult skipped: {exc})")
        return None
    return {c: np.asarray(f[c], dtype=float) for c in ADULT_NUMERIC_COLUMNS}


# ----------------------------------------------------------------------------- tables
def exact_pair_law(x, eps_col):
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    return np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), eps_col)), g[:-1], g[1:]


def ties_table(draws, seed):
    cols = tie_columns()
    rng = np.random.default_rng(seed)
    print(f"\n1. ties ({draws} draws per cell, 30,000 rows, eps per column; sane = within half "
          "the range outside [min, max] and covering half the 1%-99% range)")
    print(f"{'eps':>4}  {'column':24} {'candidate':26} {'sane':>6} {'>10x':>6} {'worst out/range':>16}"
          f" {'exact P(insane)':>16}")
    for eps in (1.0, 0.1):
        for name, x in cols.items():
            mn, mx = x.min(), x.max()
            r = mx - mn
            q1, q99 = np.quantile(x, [0.01, 0.99])
            for cand, fn in CANDIDATES.items():
                lo, hi = fn(x, eps, rng, draws)
                ok = (lo >= mn - r / 2) & (hi <= mx + r / 2) & \
                    (np.minimum(hi, q99) - np.maximum(lo, q1) >= 0.5 * (q99 - q1))
                sane = ok.sum()
                far = np.sum((lo < mn - 10 * r) | (hi > mx + 10 * r))
                worst = max(np.max((mn - lo) / r), np.max((hi - mx) / r))
                exact = ""
                if cand.startswith("new"):
                    p, lo, hi = exact_pair_law(x, eps)
                    ok = (lo[:, None] >= mn - r / 2) & (hi[None, :] <= mx + r / 2) & \
                        (np.minimum(hi[None, :], q99) - np.maximum(lo[:, None], q1) >= 0.5 * (q99 - q1))
                    exact = f"{p[~ok].sum():.1e}"
                print(f"{eps:4g}  {name:24} {cand:26} {sane / draws:6.2f} {far / draws:6.2f} "
                      f"{worst:16.3g} {exact:>16}", flush=True)


def adult_table(draws, seed, epsilons=(0.1, 0.5, 1.0)):
    cols = adult_columns()
    if cols is None:
        return
    rng = np.random.default_rng(seed)
    true = {c: np.quantile(x, [0.01, 0.99]) for c, x in cols.items()}
    print(f"\n2. Adult, six numeric columns, {next(iter(cols.values())).size} rows: fraction of "
          f"released bounds within 5 % of the 1%-99% width ({draws} draws)")
    for eps in epsilons:
        for cand, fn in CANDIDATES.items():
            hits = np.zeros((len(cols), 2))
            for k, (c, x) in enumerate(cols.items()):
                lo, hi = fn(x, eps / len(cols), rng, draws)
                w = true[c][1] - true[c][0]
                hits[k] = [np.sum(np.abs(lo - true[c][0]) <= 0.05 * w),
                           np.sum(np.abs(hi - true[c][1]) <= 0.05 * w)]
            per = " ".join(f"{v:.2f}" for v in (hits / draws).ravel())
            exact = ""
            if cand.startswith("new"):
                e = []
                for c, x in cols.items():
                    p, lo, hi = exact_pair_law(x, eps / len(cols))
                    w = true[c][1] - true[c][0]
                    e += [p.sum(1)[np.abs(lo - true[c][0]) <= 0.05 * w].sum(),
                          p.sum(0)[np.abs(hi - true[c][1]) <= 0.05 * w].sum()]
                exact = f" (exact {np.mean(e):.3f})"
            print(f"  eps {eps:4g}  {cand:26} {hits.sum() / (2 * len(cols) * draws):.3f}{exact}"
                  f"   per bound (low, high by column): {per}", flush=True)
    print("  columns: " + ", ".join(cols))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    t = time.perf_counter()
    ties_table(a.draws, a.seed)
    adult_table(a.draws, a.seed)
    print(f"\n({time.perf_counter() - t:.0f} s; seeded: a benchmark, not a release)")


if __name__ == "__main__":
    main()
