"""What the two NIPS 2008 experiment modules share: the noise laws of the two readings of the
paper, the calibrations of the new method, one batched solve of every column, errors over
cross-validation folds, and the comparison with the paper's printed numbers.

The noise law: two readings (experiment variants, never library mechanisms)
--------------------------------------------------------------------------
Both algorithms add a vector b = r u, u uniform on the unit sphere of R^d. Its norm r is

* ``"laplace_norm"`` -- the NIPS 2008 text (Algorithms 1 and 2): "a number X from the Laplace
  distribution with mean 0 and standard deviation 2/eps" (2/(n Lambda eps) for Algorithm 1),
  then b = X u. The sign of X is absorbed by the uniform direction, so r = |X|, exponential
  with mean s. We take s = 2/eps as the Laplace *scale* (the density prop. to
  exp(-eps |x| / 2) of the sensitivity method the text cites); the literal standard deviation
  2/eps would be a scale of sqrt(2)/eps, i.e. even less noise. The density of b in R^d is
  then f(r) / (S_{d-1} r^{d-1}): it is infinite at b = 0 for d > 1, so the output density
  ratio of two neighbouring data sets is unbounded and the mechanism is NOT eps-DP for any
  eps when d > 1 (tests/test_nips2008.py computes the exact ratio).
* ``"gamma"`` -- the talk slides, the earlier version's Theorem 3 and the 2011 paper:
  r ~ Gamma(shape d, scale s), which makes the density of b proportional to exp(-||b|| / s),
  the law the privacy proofs need. Its mean norm is d s, d times the other reading's.

The new method has a third column, ``new_jmlr2011``: dperm's Algorithm 2 (the gamma law with
the 2011 calibration: eps' = eps - log(1 + 2c/(n Lambda) + (c/(n Lambda))^2), and the Delta
branch), which is eps-DP. The 2008 calibration (beta = eps/2, no slack) under the gamma law
guarantees only eps + 2 log(1 + c/(n Lambda)) by the 2011 analysis (:func:`epsilon_bound`).

Noise is shared where the laws allow: all columns of one (problem, run) use the same
direction, and the gamma column and the JMLR 2011 column the same Gamma(d) variate (each
scaled by its own beta), so their difference is the calibration, not the draw.
"""
import csv
import os

import numpy as np

from dperm.losses import get_loss
from dperm.optim import erm
from dperm.privacy.mechanisms import objective_perturbation_constants

#: curvature bound c of the logistic loss (l'' <= 1/4), from its one home in dperm.losses
LOGISTIC_C = get_loss("logistic").curvature()

READINGS = ("laplace_norm", "gamma")
READING_LABELS = {
    "laplace_norm": "2008 text: ||b|| = |Laplace(2/eps)|",
    "gamma": "slides/2011: ||b|| ~ Gamma(d, 2/eps)",
}

#: the columns of every table: (method, reading); reading "" where the noise law is fixed
COLUMNS = (
    ("nonprivate", ""),
    ("sensitivity", "laplace_norm"),
    ("sensitivity", "gamma"),
    ("new_nips2008", "laplace_norm"),
    ("new_nips2008", "gamma"),
    ("new_jmlr2011", ""),
)
METHODS = ("nonprivate", "sensitivity", "new_nips2008", "new_jmlr2011")
METHOD_LABELS = {
    "nonprivate": "standard LR (non-private)",
    "sensitivity": "sensitivity method",
    "new_nips2008": "new method (2008 calibration)",
    "new_jmlr2011": "new method, JMLR 2011 (eps-DP)",
}
#: which of the paper's columns each method is compared with (None: not in the paper)
PAPER_COLUMN = {"nonprivate": "standard", "sensitivity": "sensitivity",
                "new_nips2008": "new", "new_jmlr2011": None}

# the solver's tolerance is tight (1e-10); a tiny Lambda with large noise puts the minimiser
# far out where the loss is flat, so allow more iterations and count who did not converge
MAX_ITER = 5000


def column_key(method, reading):
    return f"{method}:{reading}" if reading else method


KEYS = tuple(column_key(m, r) for m, r in COLUMNS)
PRIVATE_KEYS = KEYS[1:]


SHORT = {"nonprivate": "standard", "sensitivity:laplace_norm": "sens [lap]",
         "sensitivity:gamma": "sens [gam]", "new_nips2008:laplace_norm": "new [lap]",
         "new_nips2008:gamma": "new [gam]", "new_jmlr2011": "new JMLR11"}


def column_label(key):
    method, _, reading = key.partition(":")
    return METHOD_LABELS[method] + (f" [{reading}]" if reading else "")


def rng_of(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


# ------------------------------------------------------------------ data
def sample_sphere_margin(n, d=20, margin=0.1, w=None, random_state=None):
    """n points uniform on the unit sphere of R^d, labelled by a hyperplane, margin removed.

    w: the unit normal of the hyperplane through the origin (drawn uniformly when None).
    Points with |w.x| < margin are discarded and replaced (rejection sampling), so exactly
    n points remain; y = sign(w.x). Returns (X (n, d), y (n,), w (d,)).
    """
    n, d = int(n), int(d)
    if n < 1 or d < 2 or not 0.0 <= margin < 1.0:
        raise ValueError("sample_sphere_margin: need n >= 1, d >= 2, 0 <= margin < 1, "
                         f"got {n}, {d}, {margin}")
    rng = rng_of(random_state)
    if w is None:
        w = rng.standard_normal(d)
    w = np.asarray(w, dtype=np.float64)
    w = w / np.linalg.norm(w)
    parts, kept = [], 0
    while kept < n:
        Z = rng.standard_normal((max(2 * (n - kept), 64), d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z[np.abs(Z @ w) >= margin]
        parts.append(Z)
        kept += Z.shape[0]
    X = np.concatenate(parts)[:n]
    return X, np.where(X @ w > 0, 1.0, -1.0), w



# ------------------------------------------------------------------ noise and calibrations
def sample_noise(reading, scale, d, size, rng, direction=None, gamma_d=None):
    """Noise vectors b = r u of the given reading, shape size + (d,).

    scale : array broadcastable to `size` (s above); direction : optional (size + (d,)) unit
    vectors to reuse; gamma_d : optional Gamma(d, 1) variates (shape `size`) to reuse.
    """
    size = (int(size),) if np.ndim(size) == 0 else tuple(int(v) for v in size)
    if direction is None:
        direction = rng.standard_normal(size + (d,))
        direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    if reading == "laplace_norm":
        r = np.abs(rng.laplace(0.0, 1.0, size=size))
    elif reading == "gamma":
        r = gamma_d if gamma_d is not None else rng.gamma(d, 1.0, size=size)
    else:
        raise ValueError(f"reading: expected one of {READINGS}, got {reading!r}")
    return direction * (r * np.broadcast_to(scale, size))[..., None]


def nips2008_objective_constants(n, alpha, epsilon, data_norm=1.0):
    """(eps', Delta, beta) of the NIPS 2008 calibration: eps' = eps, Delta = 0, beta = eps/(2R).

    Same layout as dperm.privacy.mechanisms.objective_perturbation_constants; n is unused (the 2008
    noise does not depend on n Lambda, which is exactly its flaw).
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    eps = np.full(alpha.shape, float(epsilon))
    return eps, np.zeros_like(alpha), eps / (2.0 * data_norm)


CALIBRATIONS = ("nips2008", "jmlr2011")
CALIBRATION_LABELS = {"nips2008": "NIPS 2008 calibration", "jmlr2011": "JMLR 2011 calibration"}


def calibration_constants(calibration, n, alpha, epsilon, c=LOGISTIC_C):
    """(eps', Delta, beta) arrays for `calibration` in CALIBRATIONS."""
    if calibration == "nips2008":
        return nips2008_objective_constants(n, alpha, epsilon)
    if calibration == "jmlr2011":
        return objective_perturbation_constants(n, alpha, epsilon, c)
    raise ValueError(f"calibration: expected one of {CALIBRATIONS}, got {calibration!r}")


def epsilon_bound(calibration, n, alpha, epsilon, c=LOGISTIC_C):
    """The privacy loss the JMLR 2011 analysis guarantees for the new method under the gamma law.

    2 beta (noise term: ||b_D - b_D'|| <= 2) + 2 log(1 + c/(n(Lambda + Delta))) (the Jacobian
    determinant). Equals epsilon for "jmlr2011"; eps + 2 log(1 + c/(n Lambda)) for "nips2008".
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    _, delta, beta = calibration_constants(calibration, n, alpha, epsilon, c)
    return 2.0 * beta + 2.0 * np.log1p(c / (n * (alpha + delta)))


def column_epsilon_bound(key, n, alpha, epsilon):
    """The guarantee of a column: eps, the 2008 calibration's bound, or inf (laplace_norm)."""
    method, _, reading = key.partition(":")
    if method == "nonprivate":
        return None
    if reading == "laplace_norm":
        return float("inf")
    if method == "sensitivity":
        return float(epsilon)
    return float(epsilon_bound("nips2008" if method == "new_nips2008" else "jmlr2011",
                               n, alpha, epsilon)[0])


# ------------------------------------------------------------------ one batched solve
def solve_columns(X, y, specs, n_draws, rng, n_threads=None):
    """Every column on one training set, in two calls to the batched solver.

    specs : list of (Lambda, eps). Returns {key: array (len(specs), R, d)} for the private
    columns and {"nonprivate": (len(specs), d)}, plus "n_unconverged".
    """
    n, d = X.shape
    lams = np.array([a for a, _ in specs], dtype=np.float64)
    epss = np.array([e for _, e in specs], dtype=np.float64)
    k, R = lams.size, int(n_draws)
    uniq, inv = np.unique(lams, return_inverse=True)
    exact = erm.minimize(X, y, alpha=uniq, max_iter=MAX_ITER, n_threads=n_threads, warn=False)
    W0 = np.atleast_2d(exact.coef)[inv]
    out = {"nonprivate": W0, "n_unconverged": int(np.sum(~np.atleast_1d(exact.converged)))}
    if R == 0:
        return out
    # the Gamma variates first, then the directions: the order of
    # dperm.privacy.noise.sample_l2_laplace, so the JMLR 2011 column reproduces
    # dperm.objective_perturbation draw for draw under the same seed
    g = rng.gamma(d, 1.0, size=(k, R))
    u = rng.standard_normal((k, R, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    sens_scale = (2.0 / (n * lams * epss))[:, None]
    for reading in READINGS:
        out["sensitivity:" + reading] = W0[:, None, :] + sample_noise(
            reading, sens_scale, d, (k, R), rng, direction=u, gamma_d=g)
    # the new method: three problems per (spec, run)
    B, alphas, extra = [], [], []
    for reading in READINGS:
        B.append(sample_noise(reading, (2.0 / epss)[:, None], d, (k, R), rng, direction=u,
                              gamma_d=g))
        alphas.append(np.repeat(lams, R))
        extra.append(np.zeros(k * R))
    beta, delta = np.empty(k), np.empty(k)
    for i, (a, e) in enumerate(specs):
        _, dl, be = calibration_constants("jmlr2011", n, a, e)
        beta[i], delta[i] = be[0], dl[0]
    B.append(u * (g / beta[:, None])[..., None])
    alphas.append(np.repeat(lams, R))
    extra.append(np.repeat(delta, R))
    res = erm.minimize(X, y, alpha=np.concatenate(alphas),
                       linear=np.concatenate([b.reshape(k * R, d) for b in B]),
                       extra_l2=np.concatenate(extra), max_iter=MAX_ITER, n_threads=n_threads,
                       warn=False)
    W = res.coef.reshape(3, k, R, d)
    out["n_unconverged"] += int(np.sum(~res.converged))
    out["new_nips2008:laplace_norm"], out["new_nips2008:gamma"], out["new_jmlr2011"] = W
    return out


def test_errors(coef, X, y):
    """Test error of each coefficient vector; coef (..., d) -> (...); a score of 0 is a mistake."""
    shape = coef.shape[:-1]
    return ((coef.reshape(-1, coef.shape[-1]) @ X.T) * y <= 0).mean(axis=1).reshape(shape)


def folds_of(n, k, rng):
    return np.array_split(rng.permutation(n), k)


def train_test(folds, f):
    return np.concatenate([folds[h] for h in range(len(folds)) if h != f]), folds[f]


def cv_errors(X, y, specs, folds, folds_run, runs, rng, n_threads=None, sizes=None, tick=None):
    """Every column over cross-validation folds: {key: (len(specs), len(sizes) or 1,
    folds_run, runs)} (1 run for the non-private column), the unconverged count, and the
    training size. sizes: train on the first N rows of each training fold (learning curves).
    tick(f) is called after each fold."""
    fold_idx = folds_of(X.shape[0], folds, rng)
    nf = min(folds_run, folds)
    ns = [None] if sizes is None else list(sizes)
    err = {k: np.zeros((len(specs), len(ns), nf, 1 if k == "nonprivate" else runs))
           for k in KEYS}
    unconv = 0
    for f in range(nf):
        tr, te = train_test(fold_idx, f)
        for si, n in enumerate(ns):
            rows = tr if n is None else tr[:n]
            sol = solve_columns(X[rows], y[rows], specs, runs, rng, n_threads)
            unconv += sol["n_unconverged"]
            err["nonprivate"][:, si, f, 0] = test_errors(sol["nonprivate"], X[te], y[te])
            for k in PRIVATE_KEYS:
                err[k][:, si, f] = test_errors(sol[k], X[te], y[te])
        if tick is not None:
            tick(f)
    return err, unconv, X.shape[0] - len(fold_idx[0])


# ------------------------------------------------------------------ statistics and the paper
def mean_std(a):
    """Mean and sample standard deviation (ddof 1) of all entries."""
    a = np.asarray(a, dtype=np.float64).ravel()
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def fold_mean_std(a):
    """a (folds, runs): mean over everything, and the standard deviation over folds of the
    per-fold mean (what the paper's tables print: 'mean +- standard deviation over five
    folds', each fold averaged over the random restarts)."""
    a = np.asarray(a, dtype=np.float64)
    per_fold = a.reshape(a.shape[0], -1).mean(axis=1)
    return float(a.mean()), float(per_fold.std(ddof=1)) if per_fold.size > 1 else 0.0


def within_two_sd(ours, paper):
    """|ours - paper| <= 2 sqrt(sd_paper^2 + sd_ours^2): the agreement criterion of the issue."""
    return abs(ours[0] - paper[0]) <= 2.0 * np.hypot(ours[1], paper[1]) + 1e-12


def compare(ours, paper):
    """(paper text, difference text, verdict) for our (mean, fold sd) and the paper's."""
    if paper is None:
        return "n/a", "-", "-"
    return (f"{paper[0]:.4f} ± {paper[1]:.4f}", f"{ours[0] - paper[0]:+.4f}",
            "yes" if within_two_sd(ours, paper) else "no")


def paper_cells(paper, ours):
    """CSV cells paper_mean, paper_std, difference, within_paper_std ('' when no paper value)."""
    if paper is None:
        return ["", "", "", ""]
    _, dtxt, w = compare(ours, paper)
    return [f"{paper[0]:.4f}", f"{paper[1]:.4f}", dtxt, w]


def table_lines(rows):
    """rows: (label, (mean, fold sd), paper or None, notes) -> aligned text lines."""
    out = [f"  {'column':<52} {'ours (mean ± sd)':>17}  {'paper':>17}  {'diff':>7}  "
           f"{'≤2σ':>4}  notes"]
    for label, ms, paper, notes in rows:
        p, dtxt, w = compare(ms, paper)
        out.append(f"  {label:<52} {ms[0]:>8.4f} ± {ms[1]:<6.4f}  {p:>17}  {dtxt:>7}  {w:>4}  "
                   f"{notes}")
    return out


def curve_lines(xname, xs, errors, stat=None):
    """A curve as text: one line per x (xs), mean ± sd of errors[key][i] for every column.
    stat: (mean, sd) of an array; default fold_mean_std (sd over folds)."""
    stat = fold_mean_std if stat is None else stat
    out = [f"  {xname:>6}  " + "  ".join(f"{SHORT[k]:>15}" for k in KEYS)]
    for i, x in enumerate(xs):
        out.append(f"  {x:>6g}  " + "  ".join("{:>7.4f}±{:<7.4f}".format(*stat(errors[k][i]))
                                              for k in KEYS))
    return out


def fmt_bound(b):
    if b is None:
        return ""
    return "not eps-DP (d > 1)" if np.isinf(b) else f"{b:.4g}"


def write_rows(path, header, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def equivalent_epsilon(epsilons, errors, target):
    """The eps at which a decreasing error curve crosses `target` (log-linear interpolation),
    or None when the target is outside the curve's range."""
    e = np.asarray(epsilons, dtype=np.float64)
    v = np.asarray(errors, dtype=np.float64)
    order = np.argsort(e)
    e, v = e[order], v[order]
    for i in range(e.size - 1):
        lo, hi = v[i + 1], v[i]
        if min(lo, hi) <= target <= max(lo, hi) and hi != lo:
            t = (target - v[i]) / (v[i + 1] - v[i])
            return float(np.exp(np.log(e[i]) + t * (np.log(e[i + 1]) - np.log(e[i]))))
    return None


STYLE = {"nonprivate": ("k", "--", "o"), "sensitivity:laplace_norm": ("tab:red", "-", "s"),
         "sensitivity:gamma": ("tab:red", ":", "s"), "new_nips2008:laplace_norm":
         ("tab:green", "-", "^"), "new_nips2008:gamma": ("tab:green", ":", "^"),
         "new_jmlr2011": ("tab:blue", "-", "v")}


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'dperm[plot]'") from exc
    return plt


def curve(ax, x, errs, key, label=None):
    """One error curve: errs is a list of arrays (one per x), drawn as mean with sd bars."""
    mu = np.array([np.mean(a) for a in errs])
    sd = np.array([fold_mean_std(np.atleast_2d(a))[1] for a in errs])
    c, ls, mk = STYLE[key]
    ax.errorbar(x, mu, yerr=sd, color=c, linestyle=ls, marker=mk, ms=3, capsize=2,
                label=label or column_label(key))
