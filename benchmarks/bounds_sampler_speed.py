"""Private bounds: the factored sampler against the K x K pair matrix (issue 28, item 1's cost).

Both draw from the same law (tests/privacy/test_quantiles_sampler.py).  ``matrix`` is
what estimate_bounds did before the factored sampler, step for step: per column the
histogram, the (K, K) log-probability matrix (``pair_log_probabilities``, kept in the
module as the tests' reference), the warning's mass read from the matrix, and one index
drawn from its flattened CDF.  ``factored`` is ``estimate_bounds`` itself.  Interleaved
A, B, A, B in one process; the minimum and the median of the repeats.

    python benchmarks/bounds_sampler_speed.py [--repeats 4]
"""
import argparse
import time
import warnings

import numpy as np

import dperm
from dperm.privacy import quantiles as Q


def matrix_bounds(X, epsilon, rng):
    """The K x K path: one column at a time, epsilon / m each (no record: its cost is nil)."""
    g = Q.default_grid()
    eps_col = epsilon / len(X)
    out = {}
    for key, v in X.items():
        v = np.clip(v[~np.isnan(v)], g[0], g[-1])
        atoms, cells = Q.column_histogram(v, g)
        logp = Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), eps_col)
        e_lo, e_hi = Q.pair_errors(atoms, cells, (0.01, 0.99))
        tolerated = 0.01 * v.size
        float(np.sum(np.exp(logp[np.maximum.outer(e_lo, e_hi) > tolerated])))
        flat = logp.ravel()
        cdf = np.cumsum(np.exp(flat - flat.max()))
        idx = min(int(np.searchsorted(cdf, rng.uniform(0.0, cdf[-1]), side="right")), cdf.size - 1)
        K = logp.shape[0]
        out[key] = (g[idx // K], g[idx % K + 1])
    return out


def factored_bounds(X, epsilon, rng):
    return dperm.estimate_bounds(X, epsilon, random_state=rng)


def adult():
    try:
        from dperm.datasets._adult import ADULT_NUMERIC_COLUMNS
        f = dperm.datasets.load_adult("public", return_frame=True).frame
    except (OSError, ValueError, ImportError) as exc:
        print(f"(Adult skipped: {exc})")
        return None
    return {c: np.asarray(f[c], dtype=float) for c in ADULT_NUMERIC_COLUMNS}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=4)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cols = adult()
    if cols is not None:
        cases += [("Adult, six numeric columns, eps 0.1", cols, 0.1),
                  ("Adult, six numeric columns, eps 1", cols, 1.0)]
    cases.append(("one column of 1e6 log-normal rows, eps 0.1",
                  {"x": rng.lognormal(8, 1.5, 1_000_000)}, 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # seeded (a benchmark) and the n x eps warning
        for name, X, eps in cases:
            factored_bounds(X, eps, rng)        # warm-up
            t = {"matrix": [], "factored": []}
            for _ in range(a.repeats):
                for label, fn in (("matrix", matrix_bounds), ("factored", factored_bounds)):
                    t0 = time.perf_counter()
                    fn(X, eps, rng)
                    t[label].append(time.perf_counter() - t0)
            m, f = np.array(t["matrix"]), np.array(t["factored"])
            print(f"{name}: K x K matrix min {m.min():.3f} s (median {np.median(m):.3f}), "
                  f"factored min {f.min():.4f} s (median {np.median(f):.4f}); ratio "
                  f"{m.min() / f.min():.1f}x (min), {np.median(m) / np.median(f):.1f}x (median)",
                  flush=True)


if __name__ == "__main__":
    main()
