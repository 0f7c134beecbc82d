"""Figures 4 and 5 of the paper: learning curves on KDDCup99 with private tuning (Algorithm 4).

Paper protocol (Section 7.3): epsilon in {0.01, 0.05}; logistic regression
(Figure 4) and the Huber SVM, h = 0.5 (Figure 5).  For the private methods
(output perturbation, the "sensitivity method", and objective perturbation
with Delta = 0, i.e. only Lambda values with epsilon' > 0), Algorithm 4
chooses among 5 values of Lambda, each trained on its own part of n rows,
with a validation part and a test set of 25,000 rows each; every value is an
average over 5 random permutations of the data and 50 runs of the randomized
procedure.  Non-private ERM is tuned by comparing the same 5 Lambda on the
same training set (n = 300,000 to 600,000), test set 25,000, 5 permutations.

What we run, and where it differs:

* Data: ``load_kddcup99(preprocess="paper")``, the 10% sample shipped with
  dperm (494,021 rows, d = 118).  The paper used the full file, with parts of
  n = 60,000 to 120,000 and non-private training sets up to 600,000; here 5
  parts + validation + test must fit in 494,021 rows, so the largest part is
  (494,021 - 50,000) / 5 = 88,804: private sizes 60,000, 74,000 and 88,000
  (PRIVATE_SIZES), non-private sizes 300,000, 400,000 and all 469,021 rows
  left after the test set (NONPRIVATE_SIZES).
* Lambda grids (public: functions of epsilon, the losses' curvature bounds and
  the smallest part size only, fixed before seeing the data; `lambda_grid`):
  five values half a decade apart, starting at the smallest quarter-decade
  power of ten at which objective perturbation has epsilon' > 0 (Delta = 0)
  for both losses at the smallest part size.  With n = 60,000 that is
  1e-3 ... 1e-1 at epsilon = 0.05 (Table 2's grid restricted to epsilon' > 0
  for the Huber loss, 1e-3 ... 1e-1.5, plus 1e-1) and 1e-2.25 ... 1e-0.25 at
  epsilon = 0.01 (only 1e-2 and 1e-1.5 of Table 2's grid qualify there).
  Output perturbation uses the same grid as objective perturbation at each
  epsilon (the paper's footnote 5: both had access to only 5 values).
  Non-private ERM uses the grid of the largest epsilon (the smallest Lambda).
* Splits: per permutation, a test set (first 25,000 rows of the permutation),
  a validation part (next 25,000) and, for part size n, the 5 training parts
  (next 5 n rows, n each): disjoint.  Algorithm 4 draws a fresh split for
  every run; we use one split per permutation and draw the 50 runs' noise and
  exponential-mechanism selections independently on it (5 permutations x 50
  runs), which lets the 50 runs of each part be solved as one batch: one
  ``objective_perturbation(part_i, alpha=Lambda_i, n_draws=50)`` call per
  part, and for output perturbation one non-private solve per part plus
  ``add_output_noise`` for the 50 draws.  Each run then selects among ITS 5
  models with ``dperm.privacy.tuning.exponential_mechanism`` on their validation
  mistakes, and the test error of the selected model is recorded.
* Non-private: the 5 Lambda are fitted on the training set (the 25,000 test
  rows excluded) and the one with the fewest mistakes on that same training
  set is chosen ("comparing ... on the same training set"); its test error is
  recorded.  These non-private solves (300,000 rows and more) stop at a
  gradient norm of NONPRIVATE_TOL = 1e-7 instead of the private default 1e-10,
  and each size is warm-started from the previous size's minimizers: no
  privacy proof depends on them, the test errors are the same to all printed
  digits, and at 469,021 rows the 1e-10 target is below the solver's rounding
  floor (its line search then fails after some 80 extra passes over the data,
  12 s instead of 2 s per solve).  The private solves (objective perturbation,
  and the exact minimizers that output perturbation perturbs) keep the default
  tolerance.

Quick mode (QUICK): private sizes 10,000 and 20,000, non-private 50,000 and
100,000, 1 permutation x 20 runs, test and validation 25,000 (the grid rule
then gives larger Lambda: 1e-2.25 ... 1e-0.25 at epsilon = 0.05).

Seeded runs (every experiment here) void the privacy guarantee; they are for
reproducible numbers only.
"""
import csv
import math
import os
import time
import warnings

import numpy as np

from dperm.data.validation import check_random_state
from dperm.exceptions import ConvergenceWarning
from dperm.experiments._progress import Progress, plural
from dperm.losses import get_loss
from dperm.optim import erm
from dperm.privacy.mechanisms import (
    add_output_noise,
    objective_perturbation,
    objective_perturbation_constants,
)
from dperm.privacy.tuning import exponential_mechanism

__all__ = ["PRIVATE_SIZES", "NONPRIVATE_SIZES", "EPSILONS", "QUICK", "lambda_grid",
           "learning_curve_splits", "run_learning_curves", "write_learning_curves",
           "plot_learning_curves", "format_learning_curves", "reproduce_learning_curves"]

#: size of each of the 5 training parts (the paper: 60,000 to 120,000 on the full file); three
#: points, because objective perturbation's 50-draw solves take 80% of the run and every
#: further size adds about a third (the full protocol took 15.5 min of one core's CPU time)
PRIVATE_SIZES = (60000, 74000, 88000)
#: non-private training-set sizes; None = every row left after the test set (469,021 here;
#: the paper: 300,000 to 600,000 on the full file)
NONPRIVATE_SIZES = (300000, 400000, None)
EPSILONS = (0.01, 0.05)
#: gradient-norm tolerance of the large non-private baseline solves (see the module docstring)
NONPRIVATE_TOL = 1e-7
LOSSES = ("logistic", "huber")
PAPER_PRIVATE_SIZES = (60000, 120000)
PAPER_NONPRIVATE_SIZES = (300000, 600000)
FIGURE = {"logistic": 4, "huber": 5}
METHODS = ("output", "objective")
METHOD_NAMES = {"none": "non-private", "output": "output", "objective": "objective"}
#: the reduced protocol of quick mode
#: the reduced protocol of quick mode: 1 permutation x 20 runs, test and validation sets of
#: 25,000 as in the paper (with 5 runs and 5,000 validation rows the comparison of the methods
#: is decided by the noise: objective lost to output on logistic at seed 0)
QUICK = dict(private_sizes=(10000, 20000), nonprivate_sizes=(50000, 100000), n_permutations=1,
             n_runs=20, test_size=25000, validation_size=25000)
_STAGES = ("data", "objective_solves", "output_solves", "output_noise", "scoring", "selection",
           "nonprivate_solves")


def lambda_grid(epsilon, n_min, *, losses=LOSSES, h=0.5, n_lambdas=5, step=0.5, lattice=0.25,
                data_norm=1.0):
    """The public Lambda grid for one epsilon: `n_lambdas` values `step` decades apart.

    The first value is the smallest power 10^(k * lattice) at which objective
    perturbation runs with Delta = 0 (epsilon' > 0, Algorithm 2) for every loss
    in `losses` at the smallest part size `n_min`; epsilon' grows with n, so the
    whole grid has Delta = 0 at every larger size too.  Depends on public
    values only (epsilon, n, the curvature bounds).
    """
    c = max(get_loss(lo).curvature(h, data_norm) for lo in losses)
    # epsilon' > 0  <=>  (1 + c/(n Lambda))^2 < e^eps  <=>  Lambda > c / (n (e^{eps/2} - 1))
    k = math.floor(math.log10(c / (n_min * math.expm1(epsilon / 2.0))) / lattice)
    while True:
        lam = 10.0 ** (k * lattice)
        eps_p, delta, _ = objective_perturbation_constants(n_min, lam, epsilon, c, data_norm)
        if eps_p[0] > 0 and delta[0] == 0:
            break
        k += 1
    return tuple(10.0 ** (k * lattice + i * step) for i in range(n_lambdas))


def _resolve_sizes(n_total, private_sizes, nonprivate_sizes, n_parts, test_size, validation_size):
    private = tuple(int(s) for s in private_sizes)
    nonprivate = tuple(n_total - test_size if s is None else int(s) for s in nonprivate_sizes)
    if any(s < 2 for s in private + nonprivate):
        raise ValueError("sizes: every training size must be at least 2 rows")
    if private and n_parts * max(private) + test_size + validation_size > n_total:
        raise ValueError(
            f"private_sizes: {n_parts} parts of {max(private)} rows plus test ({test_size}) and "
            f"validation ({validation_size}) need "
            f"{n_parts * max(private) + test_size + validation_size} rows; X has {n_total}")
    if nonprivate and max(nonprivate) + test_size > n_total:
        raise ValueError(f"nonprivate_sizes: {max(nonprivate)} training rows plus test "
                         f"({test_size}) exceed the {n_total} rows of X")
    return private, nonprivate


def learning_curve_splits(n_total, private_sizes, nonprivate_sizes, *, n_parts=5, test_size=25000,
                          validation_size=25000, random_state=None):
    """Row indices of one permutation's splits, as `run_learning_curves` uses them.

    Returns a dict: "permutation" (the order of the rows), "test", "validation",
    "parts" {n: [n_parts arrays of n rows]} and "nonprivate" {n: array}.  In the
    run, the rows are reordered by the permutation once and every set is a
    contiguous slice: test, then validation, then the training parts; a
    non-private training set is the n rows after the test set.
    """
    private, nonprivate = _resolve_sizes(n_total, private_sizes, nonprivate_sizes, n_parts,
                                         test_size, validation_size)
    perm = check_random_state(random_state).permutation(n_total)
    T, V = test_size, validation_size
    return {"permutation": perm, "test": perm[_test_rows(T)],
            "validation": perm[_validation_rows(T, V)],
            "parts": {n: [perm[_part_rows(T, V, n, i)] for i in range(n_parts)] for n in private},
            "nonprivate": {n: perm[_nonprivate_rows(T, n)] for n in nonprivate}}


# The layout of one permutation (positions in the permuted order), shared by the run and
# learning_curve_splits: test | validation | part 0 | part 1 | ... ; non-private: after test.
def _test_rows(T):
    return slice(0, T)


def _validation_rows(T, V):
    return slice(T, T + V)


def _part_rows(T, V, n, i):
    return slice(T + V + i * n, T + V + (i + 1) * n)


def _nonprivate_rows(T, n):
    return slice(T, T + n)


def _mistakes(W, X, y):
    """Mistakes of each coefficient vector W (..., d) on (X, y) -> int array (...)."""
    shape = W.shape[:-1]
    margins = (X @ W.reshape(-1, W.shape[-1]).T) * y[:, None]
    # a score of exactly 0 counts as a mistake (sign undefined)
    return np.count_nonzero(margins <= 0, axis=0).reshape(shape)


def run_learning_curves(X, y, *, quick=False, random_state=0, progress=True, n_threads=None,
                        private_sizes=None, nonprivate_sizes=None, epsilons=EPSILONS,
                        losses=LOSSES, h=0.5, lambdas=None, nonprivate_lambdas=None,
                        n_permutations=None, n_runs=None, test_size=None, validation_size=None):
    """Test error against training size for non-private, output and objective perturbation.

    Parameters
    ----------
    X, y : the data (rows with norm <= 1, labels in {-1, +1}); the paper's
        KDDCup99 preprocessing for the reproduction.
    quick : bool
        The reduced protocol QUICK (private sizes 10,000 and 20,000, 1
        permutation x 20 runs, test and validation 25,000, non-private sizes
        50,000 and 100,000); explicit keyword arguments override it.
    random_state : int, Generator or None
        Drives the permutations, the noise and the selections (a seed makes the
        numbers reproducible and voids the privacy guarantee).
    private_sizes : rows per training part (default PRIVATE_SIZES).
    nonprivate_sizes : non-private training sizes; None entries mean every row
        left after the test set (default NONPRIVATE_SIZES).
    lambdas : None or {epsilon: 5 values}.  None: `lambda_grid` at the
        smallest private size.
    nonprivate_lambdas : None (the grid of the largest epsilon) or 5 values.

    Returns
    -------
    dict with "errors" {(loss, method, epsilon): array}: for the private methods
    (n_private_sizes, n_permutations, n_runs), test error of each run's selected
    model; for ("loss", "none", None) (n_nonprivate_sizes, n_permutations).
    "chosen" holds the selected grid indices (same shapes), "errors_per_lambda"
    {(loss, method, epsilon): (n_sizes, n_permutations, 5)} the mean test error
    of every candidate, plus the protocol, "seconds", "timings" (seconds per
    stage) and "solver" (convergence diagnostics).
    """
    cfg = _protocol(quick, private_sizes=private_sizes, nonprivate_sizes=nonprivate_sizes,
                    n_permutations=n_permutations, n_runs=n_runs, test_size=test_size,
                    validation_size=validation_size)
    t_start = time.perf_counter()
    X, y = _check_data(X, y)
    n_total, d = X.shape
    n_parts = 5
    T, V = int(cfg["test_size"]), int(cfg["validation_size"])
    P, R = int(cfg["n_permutations"]), int(cfg["n_runs"])
    private, nonprivate = _resolve_sizes(n_total, cfg["private_sizes"], cfg["nonprivate_sizes"],
                                         n_parts, T, V)
    private = tuple(sorted(private))
    nonprivate = tuple(sorted(nonprivate))
    eps = tuple(float(e) for e in epsilons)
    losses = tuple(losses)
    grids = _grids(lambdas, eps, private, losses, h, n_parts)
    np_grid = tuple(float(v) for v in (grids[max(eps)] if nonprivate_lambdas is None
                                       else nonprivate_lambdas))
    run = _Run(X, y, T=T, V=V, R=R, n_parts=n_parts, h=h, n_threads=n_threads, eps=eps,
               losses=losses, grids=grids, np_grid=np_grid, rng=check_random_state(random_state),
               shape=(len(private), len(nonprivate), P))
    bar = Progress(P * (len(private) + len(nonprivate)), "learning curves", enabled=progress)
    with warnings.catch_warnings():
        # the solver's convergence is recorded in result["solver"] instead
        warnings.simplefilter("ignore", ConvergenceWarning)
        for p in range(P):
            run.permutation(p, private, nonprivate, bar)
    bar.close()
    positive = float(np.mean(y > 0))
    return {"errors": run.errors, "chosen": run.chosen, "errors_per_lambda": run.per_lambda,
            "private_sizes": private, "nonprivate_sizes": nonprivate, "epsilons": eps,
            "losses": losses, "h": h, "lambdas": grids, "nonprivate_lambdas": np_grid,
            "n_parts": n_parts, "n_permutations": P, "n_runs": R, "test_size": T,
            "validation_size": V, "n_total": n_total, "d": d, "quick": bool(quick),
            "constant_error": min(positive, 1.0 - positive),
            "seconds": time.perf_counter() - t_start, "timings": run.timings,
            "solver": run.solver}


def _protocol(quick, **given):
    """The protocol's sizes and counts: QUICK or the full one, overridden by what is given."""
    cfg = dict(QUICK) if quick else dict(
        private_sizes=PRIVATE_SIZES, nonprivate_sizes=NONPRIVATE_SIZES, n_permutations=5,
        n_runs=50, test_size=25000, validation_size=25000)
    cfg.update((k, v) for k, v in given.items() if v is not None)
    return cfg


def _check_data(X, y):
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    if X.ndim != 2 or y.shape[0] != X.shape[0]:
        raise ValueError(f"X, y: expected (n, d) and (n,), got {X.shape} and {y.shape}")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y: labels must be -1 or +1")
    return X, y


def _grids(lambdas, eps, private, losses, h, n_parts):
    """{epsilon: n_parts Lambdas}: the given ones, or `lambda_grid` at the smallest size."""
    if lambdas is None:
        n_min = min(private) if private else PRIVATE_SIZES[0]
        grids = {e: lambda_grid(e, n_min, losses=losses, h=h) for e in eps}
    else:
        grids = {float(e): tuple(float(v) for v in lambdas[e]) for e in lambdas}
    if any(len(grids.get(e, ())) != n_parts for e in eps):
        raise ValueError(f"lambdas: need {n_parts} values for each epsilon in {eps}")
    return grids


class _Run:
    """One run of the protocol: the data, the grids, the random source, and the arrays the
    result is made of (errors, chosen, per_lambda, timings, solver), filled permutation by
    permutation.  Every draw from ``rng`` happens in the order of the original loop: the
    permutation; per size, part, loss and epsilon the output noise then the objective
    fits; then the selections, key by key."""

    def __init__(self, X, y, *, T, V, R, n_parts, h, n_threads, eps, losses, grids, np_grid,
                 rng, shape):
        self.X, self.y, self.T, self.V, self.R, self.n_parts = X, y, T, V, R, n_parts
        self.h, self.n_threads, self.eps, self.losses = h, n_threads, eps, losses
        self.grids, self.np_grid, self.rng = grids, np_grid, rng
        S, Snp, P = shape
        self.errors, self.chosen, self.per_lambda = {}, {}, {}
        for lo in losses:
            for m in METHODS:
                for e in eps:
                    self.errors[(lo, m, e)] = np.zeros((S, P, R))
                    self.chosen[(lo, m, e)] = np.zeros((S, P, R), dtype=np.int64)
                    self.per_lambda[(lo, m, e)] = np.zeros((S, P, n_parts))
            self.errors[(lo, "none", None)] = np.zeros((Snp, P))
            self.chosen[(lo, "none", None)] = np.zeros((Snp, P), dtype=np.int64)
            self.per_lambda[(lo, "none", None)] = np.zeros((Snp, P, len(np_grid)))
        self.timings = dict.fromkeys(_STAGES, 0.0)
        # convergence of the private solves (tolerance 1e-10) and of the non-private baseline
        self.solver = {k: {"problems": 0, "not_converged": 0, "max_grad_norm": 0.0}
                       for k in ("private", "nonprivate")}

    def _track(self, converged, grad_norm, kind="private"):
        s = self.solver[kind]
        s["problems"] += int(np.size(converged))
        s["not_converged"] += int(np.size(converged) - np.count_nonzero(converged))
        s["max_grad_norm"] = max(s["max_grad_norm"], float(np.max(grad_norm)))

    def _time(self, stage, t):
        now = time.perf_counter()
        self.timings[stage] += now - t
        return now

    def permutation(self, p, private, nonprivate, bar):
        t = time.perf_counter()
        T, V = self.T, self.V
        perm = self.rng.permutation(self.X.shape[0])
        Xp, yp = self.X[perm], self.y[perm]  # every set below is a contiguous slice (a view)
        test = Xp[_test_rows(T)], yp[_test_rows(T)]
        validation = Xp[_validation_rows(T, V)], yp[_validation_rows(T, V)]
        self._time("data", t)
        for si, n in enumerate(private):
            coefs = self._private_fits(Xp, yp, n)
            for key, W in coefs.items():
                self._select(key, W, si, p, test, validation)
            bar.update(1, note=f"permutation {p + 1}, parts of {n:,}")
        for lo in self.losses:
            self._nonprivate(lo, p, Xp, yp, nonprivate, test)
        bar.update(len(nonprivate), note=f"permutation {p + 1}, non-private")

    def _private_fits(self, Xp, yp, n):
        """coef[(lo, method, eps)]: (n_parts, R, d), model i trained on part i with grid[i]."""
        coefs = {k: np.empty((self.n_parts, self.R, self.X.shape[1]))
                 for k in self.errors if k[1] != "none"}
        for i in range(self.n_parts):
            rows = _part_rows(self.T, self.V, n, i)
            for lo in self.losses:
                self._fit_part(Xp[rows], yp[rows], lo, n, i, coefs)
        return coefs

    def _fit_part(self, Xi, yi, lo, n, i, coefs):
        t = time.perf_counter()
        lam_i = np.array([self.grids[e][i] for e in self.eps])
        exact = erm.minimize(Xi, yi, loss=lo, alpha=lam_i, h=self.h, n_threads=self.n_threads,
                             warn=False)
        self._track(exact.converged, exact.grad_norm)
        self._time("output_solves", t)
        for ei, e in enumerate(self.eps):
            t = time.perf_counter()
            _, c = add_output_noise(exact.coef[ei], n, lam_i[ei], e, 1.0, self.R, self.rng)
            coefs[(lo, "output", e)][i] = c[0]
            t2 = self._time("output_noise", t)
            obj = objective_perturbation(Xi, yi, loss=lo, alpha=float(lam_i[ei]), epsilon=e,
                                         h=self.h, n_draws=self.R, random_state=self.rng,
                                         n_threads=self.n_threads)
            self._track(obj.converged, obj.grad_norm)
            coefs[(lo, "objective", e)][i] = obj.coef
            self._time("objective_solves", t2)

    def _select(self, key, W, si, p, test, validation):
        """Each run's model chosen on the validation set (exponential mechanism), scored
        on the test set."""
        R, e = self.R, key[2]
        t = time.perf_counter()
        z = _mistakes(W, *validation)                     # (n_parts, R) validation
        test_err = _mistakes(W, *test) / self.T          # (n_parts, R) test
        t2 = self._time("scoring", t)
        pick = np.array([exponential_mechanism(z[:, j], e, 1.0, self.rng)[0]
                         for j in range(R)], dtype=np.int64)
        self._time("selection", t2)
        self.chosen[key][si, p] = pick
        self.errors[key][si, p] = test_err[pick, np.arange(R)]
        self.per_lambda[key][si, p] = test_err.mean(axis=1)

    def _nonprivate(self, lo, p, Xp, yp, nonprivate, test):
        """The non-private baseline at each size, warm-started from the previous size;
        Lambda chosen by training error."""
        W0 = None
        key = (lo, "none", None)
        for si, n in enumerate(nonprivate):
            t = time.perf_counter()
            Xtr, ytr = Xp[_nonprivate_rows(self.T, n)], yp[_nonprivate_rows(self.T, n)]
            res = erm.minimize(Xtr, ytr, loss=lo, alpha=np.array(self.np_grid), h=self.h,
                               n_threads=self.n_threads, coef_init=W0, tol=NONPRIVATE_TOL,
                               warn=False)
            self._track(res.converged, res.grad_norm, "nonprivate")
            W0 = res.coef
            t = self._time("nonprivate_solves", t)
            train_mistakes = _mistakes(res.coef, Xtr, ytr)
            best = int(np.argmin(train_mistakes))  # ties: the smallest Lambda
            test_err = _mistakes(res.coef, *test) / self.T
            self._time("scoring", t)
            self.chosen[key][si, p] = best
            self.errors[key][si, p] = test_err[best]
            self.per_lambda[key][si, p] = test_err


def _keys(result):
    """(loss, method, epsilon) in display order: non-private, then output/objective per epsilon."""
    for lo in result["losses"]:
        yield lo, "none", None
        for e in result["epsilons"]:
            for m in METHODS:
                yield lo, m, e


def _sizes(result, method):
    return result["nonprivate_sizes"] if method == "none" else result["private_sizes"]


def _lam_text(grid):
    return ", ".join(f"1e{math.log10(v):.4g}" for v in grid)


def write_learning_curves_csv(result, path):
    """One row per (loss, method, epsilon, training size)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["loss", "method", "epsilon", "train_size", "error_mean",
                    "error_permutation_std", "error_run_std", "permutations",
                    "runs_per_permutation", "validation_size", "test_size", "log10_lambda_grid",
                    "chosen_counts", "mean_log10_lambda_chosen"])
        for lo, m, e in _keys(result):
            errs = result["errors"][(lo, m, e)]
            grid = result["nonprivate_lambdas"] if m == "none" else result["lambdas"][e]
            logs = np.log10(grid)
            for si, n in enumerate(_sizes(result, m)):
                er = errs[si]
                ch = result["chosen"][(lo, m, e)][si].ravel()
                counts = np.bincount(ch, minlength=len(grid))
                perm_means = er.mean(axis=-1) if er.ndim == 2 else er
                w.writerow([lo, METHOD_NAMES[m], "inf" if e is None else f"{e:g}", n,
                            f"{er.mean():.5f}", f"{perm_means.std():.5f}",
                            f"{er.std():.5f}" if er.ndim == 2 else "",
                            result["n_permutations"],
                            result["n_runs"] if m != "none" else 1,
                            result["validation_size"] if m != "none" else 0, result["test_size"],
                            ";".join(f"{v:.4g}" for v in logs),
                            ";".join(str(int(c)) for c in counts),
                            f"{logs[ch].mean():.3f}"])


def plot_learning_curves(result, loss, path):
    """Test error against training size for one loss, like the paper's Figure 4 / 5 (matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'dperm[plot]'") from exc
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    colors = {"output": ("tab:red", "tab:orange"), "objective": ("tab:blue", "tab:cyan")}
    markers = ("o", "s", "^", "v")
    P = result["n_permutations"]
    top = 0.0
    for lo, m, e in _keys(result):
        if lo != loss:
            continue
        errs = result["errors"][(lo, m, e)]
        sizes = np.asarray(_sizes(result, m))
        perm_means = errs.mean(axis=-1) if errs.ndim == 3 else errs
        mean, std = perm_means.mean(axis=1), perm_means.std(axis=1)
        top = max(top, float(np.max(mean + std)))
        if m == "none":
            style, label = dict(color="k", ls="--", marker="D"), "non-private (tuned)"
        else:
            k = result["epsilons"].index(e)
            style = dict(color=colors[m][k % 2], ls="-", marker=markers[k % len(markers)])
            label = f"{METHOD_NAMES[m]} perturbation, ε={e:g}"
        ax.errorbar(sizes, mean, yerr=std if P > 1 else None, ms=4, capsize=2, label=label,
                    **style)
    # the constant classifier (about 0.21 here) is drawn only when it is near the curves
    const = result["constant_error"]
    top = 1.2 * top if top > 0 else const
    label = f"constant classifier (≈{const:.2f}{', off the scale' if const > top else ''})"
    if const <= top:
        ax.axhline(const, color="0.6", lw=0.8, ls=":", label=label)
    else:
        ax.plot([], [], color="0.6", lw=0.8, ls=":", label=label)
    ax.set_ylim(0, max(top, const * 1.05) if const <= top else top)
    ax.set_xscale("log")
    ax.set_xlabel("training-set size (private: per Λ value; non-private: whole set)")
    ax.set_ylabel("test error")
    name = "logistic regression" if loss == "logistic" else f"Huber SVM (h={result['h']:g})"
    fig_no = FIGURE.get(loss)
    ax.set_title(f"{'Figure ' + str(fig_no) + ': ' if fig_no else ''}KDDCup99, {name}\n"
                 f"private tuning of Λ (Algorithm 4), {plural(P, 'permutation')} × "
                 f"{plural(result['n_runs'], 'run')}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_learning_curves(result, out_dir):
    """learning_curves.csv, and one PNG per loss when matplotlib is importable.

    Returns (csv_path, [png paths]) (an empty list without matplotlib).
    """
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, "learning_curves.csv")
    write_learning_curves_csv(result, csv_path)
    pngs = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return csv_path, pngs
    for lo in result["losses"]:
        fig_no = FIGURE.get(lo)
        name = f"figure{fig_no}_learning_curves_{lo}.png" if fig_no else f"learning_curves_{lo}.png"
        pngs.append(plot_learning_curves(result, lo, os.path.join(out_dir, name)))
    return csv_path, pngs


def format_learning_curves(result):
    """The curves as a text table (one block per loss), with the protocol and the timings."""
    P, R = result["n_permutations"], result["n_runs"]
    quick = ", quick protocol" if result["quick"] else ""
    lines = [
        f"Learning curves on KDDCup99 (the paper's Figures 4 and 5{quick}): "
        f"n={result['n_total']:,}, d={result['d']}; test {result['test_size']:,}, validation "
        f"{result['validation_size']:,}; {plural(P, 'permutation')} x {plural(R, 'run')}; "
        f"{result['seconds']:.1f} s",
        f"Private: Algorithm 4 over 5 Lambda, each model on its own part of n rows (the paper: "
        f"n = {PAPER_PRIVATE_SIZES[0]:,} to {PAPER_PRIVATE_SIZES[1]:,} on the full file; this 10% "
        f"sample allows at most (rows - test - validation) / 5). Non-private: the same kind of "
        f"grid on the whole training set (the paper: {PAPER_NONPRIVATE_SIZES[0]:,} to "
        f"{PAPER_NONPRIVATE_SIZES[1]:,}), chosen by training mistakes.",
    ]
    for e in result["epsilons"]:
        lines.append(f"Lambda grid, eps={e:g} (output and objective, Delta = 0 throughout): "
                     f"{_lam_text(result['lambdas'][e])}")
    lines.append(f"Lambda grid, non-private: {_lam_text(result['nonprivate_lambdas'])}")
    for lo in result["losses"]:
        fig_no = FIGURE.get(lo)
        name = "logistic regression" if lo == "logistic" else f"Huber SVM, h={result['h']:g}"
        lines.append("")
        spread = "std over permutations" if P > 1 else "std over runs"
        lines.append(f"{name}{' (Figure ' + str(fig_no) + ')' if fig_no else ''}: mean test error "
                     f"({spread}); below it, the Lambda chosen most often")
        for m_is_none in (False, True):
            sizes = result["nonprivate_sizes"] if m_is_none else result["private_sizes"]
            lines.append(f"  {'method':<12}{'eps':>6}" + "".join(f"{n:>18,}" for n in sizes))
            for key in _keys(result):
                if key[0] != lo or (key[1] == "none") != m_is_none:
                    continue
                _, m, e = key
                errs = result["errors"][key]
                grid = result["nonprivate_lambdas"] if m == "none" else result["lambdas"][e]
                cells, lams = "", ""
                for si in range(len(sizes)):
                    pm = errs[si].mean(axis=-1) if errs.ndim == 3 and P > 1 else errs[si]
                    cells += f"{errs[si].mean():>10.4f} ({pm.std():.4f})"
                    ch = np.bincount(result["chosen"][key][si].ravel(), minlength=len(grid))
                    lams += f"{'1e' + format(math.log10(grid[int(np.argmax(ch))]), '.3g'):>18}"
                lines.append(f"  {METHOD_NAMES[m]:<12}{'-' if e is None else format(e, 'g'):>6}{cells}")
                lines.append(f"  {'':<12}{'':>6}{lams}")
    lines.append("")
    lines.append(f"Constant classifier: {result['constant_error']:.4f}.  One split per permutation; "
                 "each run draws its own noise and its own exponential-mechanism selection "
                 "(Algorithm 4 would also redraw the split per run).")
    for kind, tol in (("private", erm.DEFAULT_TOL), ("nonprivate", NONPRIVATE_TOL)):
        s = result["solver"][kind]
        lines.append(f"Solver, {kind.replace('nonp', 'non-p')} solves (tol {tol:g}): "
                     f"{s['problems']:,} problems, {s['not_converged']:,} stopped above the "
                     f"tolerance (largest final gradient norm {s['max_grad_norm']:.1e}).")
    tm = result["timings"]
    lines.append("Time per stage: " + ", ".join(f"{k.replace('_', ' ')} {v:.1f} s"
                                                 for k, v in tm.items()))
    return "\n".join(lines)


def reproduce_learning_curves(out="dperm-results", quick=False, progress=True, n_threads=None,
                              seed=0):
    """Figures 4 and 5 on the shipped KDDCup99 sample.  Returns (result, text, csv_path, pngs)."""
    from dperm.datasets import load_kddcup99
    from dperm.exceptions import PrivacyLeakWarning

    with warnings.catch_warnings():
        # the paper's preprocessing reads scales from the data; this is reproduction
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        X, y = load_kddcup99(preprocess="paper")
    res = run_learning_curves(X, y, quick=quick, random_state=seed, progress=progress,
                              n_threads=n_threads)
    text = format_learning_curves(res)
    csv_path, pngs = write_learning_curves(res, out)
    return res, text, csv_path, pngs
