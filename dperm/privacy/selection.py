"""Private selection of Lambda with every candidate trained on ALL rows (issue 28, item 3).

Algorithm 4 (dperm/privacy/tuning.py) trains candidate i on its own n / (m + 1) rows;
``alpha="auto"`` spends nothing on Lambda but cannot see the data.  This module spends a
share of the budget on choosing Lambda while every model sees every row: repeat a private
run a random number of times and release the best run (Liu & Talwar 2019, "Private
selection from private candidates"; Papernot & Steinke 2022, "Hyperparameter tuning with
Renyi differential privacy").

One run Q(D), at epsilon_run:

1. pick a Lambda uniformly from the public grid (the run's own randomness);
2. fit the estimator on all rows with that Lambda at epsilon_model = (1 - f) epsilon_run
   (a pure epsilon_model-DP release: the estimator's mechanism);
3. score the released model by its mistakes on all rows plus Laplace noise of scale
   1 / (f epsilon_run): for a fixed model one row changes the count by at most 1 (replace,
   add or remove), so the noisy score is f epsilon_run-DP given the model.

Q is epsilon_run-DP by adaptive composition (so (lambda, epsilon_run)-RDP at every order
lambda).  The number of runs K is drawn before any data is read, and the run with the
lowest noisy score is released (model and Lambda):

* ``runs="logarithmic"`` (default): K ~ Logarithmic(1 - gamma), P(K = k) = (1 - gamma)^k /
  (k log(1 / gamma)), the truncated negative binomial with eta = 0 of Papernot & Steinke
  (2022), Theorem 2: the release is (lambda, eps')-RDP with eps' = eps_Q(lambda) +
  (1 - 1/lambda^) eps_Q(lambda^) + log(1/gamma) / lambda^ + log(E K) / (lambda - 1) for all
  lambda, lambda^ > 1.  With eps_Q <= epsilon_run at every order and lambda, lambda^ ->
  infinity, eps' -> 2 epsilon_run: the release is 2 epsilon_run-DP, so epsilon_run =
  epsilon / 2;
* ``runs="geometric"``: after each run stop with probability gamma (eta = 1; Liu & Talwar
  2019, Theorem 3.4): 3 epsilon_run-DP, so epsilon_run = epsilon / 3.

Both hold under the neighbouring relation under which Q is private, and gamma is chosen
(publicly) so that E K = ``expected_runs``.  K is independent of the data and is released.

Randomness: as every private computation (dperm/privacy/noise.py), a fresh generator from
OS entropy unless ``random_state`` is given (for tests and benchmarks only).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data import oracle as _oracle
from dperm.data.validation import check_epsilon, check_random_state, spawn_generator
from dperm.privacy.accountant import BudgetAccountant, PureEvent
from dperm.privacy.noise import warn_if_seeded

__all__ = ["select_alpha", "SelectionResult", "alpha_grid", "DEFAULT_FACTORS",
           "fit_with_selection", "fit_selected", "check_selection", "SELECT_FACTORS"]

#: the default grid: auto's Lambda times these factors (public)
DEFAULT_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
# epsilon_run = epsilon / factor: 2 for the logarithmic number of runs (Papernot & Steinke
# 2022, Theorem 2, eta = 0), 3 for the geometric one (Liu & Talwar 2019, Theorem 3.4)
_RUN_FACTORS = {"logarithmic": 2.0, "geometric": 3.0}
# the share f of a run's epsilon spent on its noisy score
DEFAULT_SCORE_FRACTION = 0.1
MECHANISM = "best of a random number of private runs on all rows (Papernot & Steinke 2022)"


def alpha_grid(center: float, factors: Sequence[float] = DEFAULT_FACTORS) -> list[float]:
    """Lambda values center x factor (a public grid, e.g. around alpha="auto"'s value)."""
    c = check_epsilon(center, "center")          # a positive finite number
    out: list[float] = []
    for f in factors:
        if isinstance(f, (bool, np.bool_)) or not isinstance(f, numbers.Real) \
                or not (math.isfinite(float(f)) and float(f) > 0):
            raise ValueError(f"factors: must be positive finite numbers, got {f!r}")
        out.append(c * float(f))
    return out


@dataclass
class SelectionResult:
    """What :func:`select_alpha` returns.

    Safe to release (covered by the epsilon guarantee): `best_estimator_`, `best_alpha_`,
    and the public inputs and data-independent values `alphas`, `epsilon`,
    `epsilon_model`, `epsilon_score`, `runs`, `expected_runs` and `n_runs` (the number
    of runs is drawn before the data are read).  NOT releasable: `fit_diagnostics_` (every run's
    Lambda and noisy score: only the best run is covered).
    """

    best_estimator_: object
    best_alpha_: float
    alphas: list
    epsilon: float
    epsilon_model: float
    epsilon_score: float
    expected_runs: float
    n_runs: int
    runs: str = "logarithmic"
    mechanism: str = MECHANISM
    fit_diagnostics_: dict = field(default_factory=dict, repr=False)


def _logarithmic_gamma(expected_runs):
    """gamma with E K = (1/gamma - 1) / log(1/gamma) = expected_runs (None: K = 1)."""
    if expected_runs <= 1.0 + 1e-9:
        return None
    lo, hi = 1e-300, 1.0 - 1e-12            # E K decreases from infinity to 1 on (0, 1)
    for _ in range(200):
        mid = math.sqrt(lo * hi) if hi < 0.5 else (lo + hi) / 2
        mean = (1.0 / mid - 1.0) / math.log(1.0 / mid)
        lo, hi = (mid, hi) if mean > expected_runs else (lo, mid)
    return (lo + hi) / 2


def _check_estimator(estimator):
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "set_params"):
        raise TypeError(f"estimator: expected a scikit-learn estimator, got "
                        f"{type(estimator).__name__}")
    params = estimator.get_params(deep=False)
    for k in ("epsilon", "alpha", "random_state"):
        if k not in params:
            raise ValueError(f"estimator: select_alpha needs a private estimator with an "
                             f"{k!r} parameter, e.g. dperm.PrivateLinearClassifier")
    if params.get("perturbation") == "none":
        raise ValueError("estimator: perturbation='none' is not private")
    if float(params.get("delta", 0.0) or 0.0) != 0.0:
        raise ValueError("estimator: select_alpha's guarantee (private selection from pure runs) "
                         "is for pure-epsilon models; set delta=0")
    if "classes" in params and params["classes"] is None and not _is_regressor(estimator):
        raise ValueError("estimator: classes=None would read the label set from the private "
                         "data; pass the public label set, e.g. classes=[-1, 1]")
    return params


def _is_regressor(estimator):
    from sklearn.base import is_regressor

    return bool(is_regressor(estimator))


def _score(est, X, y):
    """(score, sensitivity) of a released model on all rows, lower is better.

    Classifier: the number of mistakes; one row (replaced, added or removed) changes it
    by at most 1.  Regression: sum_i |clip(f(x_i)) - clip(y_i)|, both clipped to the
    PUBLIC label interval [c - B, c + B] of the fit's record (``label_bound`` B,
    ``label_centre`` c, 0 without); each term lies in [0, 2 B], so one row changes the
    sum by at most 2 B (docs/privacy_analysis.md, "Lambda selection")."""
    if not _is_regressor(est):
        return _oracle.count_mistakes(est, X, y), 1.0
    rec = est.privacy_
    B = float(rec["label_bound"])
    c = float(rec.get("label_centre") or 0.0)
    # two values of [c - B, c + B]: each term in [0, 2 B]
    return _oracle.clipped_abs_error(est, X, y, c - B, c + B), 2.0 * B


def _check_alphas(alphas):
    if isinstance(alphas, (str, bytes)) or not isinstance(alphas, (Sequence, np.ndarray)):
        raise ValueError(f"alphas: must be a list of positive numbers (a public grid), got "
                         f"{alphas!r}")
    out = []
    for a in alphas:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Real) \
                or not (math.isfinite(float(a)) and float(a) > 0):
            raise ValueError(f"alphas: must be positive finite numbers, got {a!r}")
        out.append(float(a))
    if not out:
        raise ValueError("alphas: the grid is empty")
    return out


def _check_expected_runs(expected_runs: Any, n_alphas: int) -> float:
    if expected_runs is None:
        expected_runs = 2.0 * n_alphas
    if isinstance(expected_runs, (bool, np.bool_)) or not isinstance(expected_runs, numbers.Real) \
            or not (math.isfinite(float(expected_runs)) and float(expected_runs) >= 1.0):
        raise ValueError(f"expected_runs: must be a number >= 1, got {expected_runs!r}")
    return float(expected_runs)


def _check_selection_args(epsilon: Any, alphas: Any, runs: Any, expected_runs: Any,
                          score_fraction: Any,
                          accountant: Any) -> tuple[float, list[float], float]:
    """select_alpha's public arguments, checked in this order: (epsilon, the grid, the
    mean number of runs)."""
    epsilon = check_epsilon(epsilon, "epsilon")
    grid = _check_alphas(alphas)
    expected_runs = _check_expected_runs(expected_runs, len(grid))
    if runs not in _RUN_FACTORS:
        raise ValueError(f"runs: must be one of {sorted(_RUN_FACTORS)}, got {runs!r}")
    if isinstance(score_fraction, (bool, np.bool_)) or not isinstance(score_fraction, numbers.Real) \
            or not 0.0 < float(score_fraction) < 1.0:
        raise ValueError(f"score_fraction: must be in (0, 1), got {score_fraction!r}")
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                        f"{type(accountant).__name__}")
    return epsilon, grid, expected_runs


def _draw_n_runs(runs: str, expected_runs: float, rng: np.random.Generator) -> int | None:
    """The number of runs K, drawn first (runs="logarithmic"); None: runs="geometric"
    (no draw here; each run ends with a coin, :func:`_stop`)."""
    if runs != "logarithmic":
        return None
    gamma = _logarithmic_gamma(expected_runs)
    return 1 if gamma is None else int(rng.logseries(1.0 - gamma))


def _one_run(estimator: Any, params: Any, grid: list[float], rng: np.random.Generator,
             eps_model: float, eps_score: float, X: Any, y: Any,
             fit: Callable[[Any], Any] | None) -> tuple[Any, float, float]:
    """One run: a Lambda drawn from the grid, a clone fitted at eps_model, its noisy
    score; (the fitted clone, its Lambda, the noisy score).  The draws in this order:
    the Lambda, the fit's child stream, the score's noise."""
    from sklearn.base import clone

    alpha = grid[int(rng.integers(len(grid)))]
    est = clone(estimator)
    settings = {"epsilon": eps_model, "alpha": alpha, "random_state": spawn_generator(rng)}
    if "accountant" in params:
        settings["accountant"] = None           # charged once, by select_alpha
    est.set_params(**settings)
    if fit is None:
        est.fit(X, y)
    else:
        fit(est)
    est.set_params(random_state=None)           # no generator left in a released model
    # a count of mistakes moves by at most 1 with one row: Laplace(1 / eps_score);
    # a regression's clipped absolute error by at most 2 B: Laplace(2 B / eps_score)
    raw, sensitivity = _score(est, X, y)
    score = raw + rng.laplace(0.0, sensitivity / eps_score)
    return est, alpha, score


def _stop(done: int, n_runs: int | None, expected_runs: float,
          rng: np.random.Generator) -> bool:
    """Whether the selection stops after `done` runs: K = n_runs reached (logarithmic), or
    (n_runs None: geometric) a coin with probability 1 / expected_runs, one uniform draw
    per run."""
    if n_runs is not None:
        return done >= n_runs
    return rng.uniform() < 1.0 / expected_runs   # geometric: stop with probability gamma


def select_alpha(estimator: Any, X: ArrayLike, y: ArrayLike, epsilon: float, *,
                 alphas: Sequence[float], runs: str = "logarithmic",
                 expected_runs: float | None = None,
                 score_fraction: float = DEFAULT_SCORE_FRACTION,
                 accountant: BudgetAccountant | None = None,
                 random_state: Any = None,
                 fit: Callable[[Any], Any] | None = None) -> SelectionResult:
    """Choose Lambda (the estimator's ``alpha``) with epsilon-DP, every model on all rows.

    Parameters
    ----------
    estimator : a private scikit-learn classifier with pure-epsilon noise (delta = 0),
        e.g. ``PrivateLinearClassifier(classes=[...])``: parameters ``epsilon``, ``alpha``
        and ``random_state``; a public label set (``classes``).  Its own accountant, if
        any, is not charged (pass ``accountant`` here).
    X, y : the private training data (every run fits and scores on all of it).
    epsilon : float > 0, the budget of the whole procedure: each run gets epsilon / 2
        (epsilon / 3 with runs="geometric"), the model (1 - score_fraction) of it, the
        noisy score the rest.
    alphas : list of positive floats, the public grid (see :func:`alpha_grid`; e.g.
        around alpha="auto"'s Lambda at the model's epsilon).
    runs : {"logarithmic", "geometric"}, default "logarithmic"
        The law of the number of runs (see the module docstring).
    expected_runs : float >= 1, optional
        The mean number of runs; default 2 x len(alphas).
    score_fraction : float in (0, 1), default 0.1
    accountant : BudgetAccountant, optional; checked before and charged PureEvent(epsilon)
        after (only on success).
    random_state : None, int or numpy Generator; a seed voids the guarantee (warns; refused
        with an accountant).
    fit : callable, optional
        ``fit(est)`` fits a clone ``est`` of the estimator on the data (default
        ``est.fit(X, y)``): the seam for an engine whose fit is not the estimator's own,
        e.g. dperm.spark, whose X is its rows on the executors (labels there, y None).
        Each run's model is scored on X by dperm.data.oracle (on the workers or the
        executors for rows held there).
    """
    epsilon, grid, expected_runs = _check_selection_args(epsilon, alphas, runs, expected_runs,
                                                         score_fraction, accountant)
    params = _check_estimator(estimator)
    # a Dask array's rows and labels stay on the workers, Spark rows on the executors
    X, y = _oracle.scored_rows(X, y)
    warn_if_seeded(random_state, accountant=accountant)
    event = PureEvent(epsilon)
    if accountant is not None:
        accountant.check(event)

    rng = check_random_state(random_state)
    eps_run = epsilon / _RUN_FACTORS[runs]
    eps_model = (1.0 - float(score_fraction)) * eps_run
    eps_score = float(score_fraction) * eps_run
    n_runs = _draw_n_runs(runs, expected_runs, rng)     # K drawn before any data is read
    best = None
    tried = []
    while True:
        est, alpha, score = _one_run(estimator, params, grid, rng, eps_model, eps_score,
                                     X, y, fit)
        tried.append((alpha, float(score)))
        if best is None or score < best[1]:
            best = (est, score, alpha)
        if _stop(len(tried), n_runs, expected_runs, rng):
            break
    if accountant is not None:
        accountant.spend(event, label=f"select_alpha({type(estimator).__name__}, "
                                      f"{len(grid)} alphas)")
    return SelectionResult(best_estimator_=best[0], best_alpha_=best[2], alphas=grid,
                           epsilon=epsilon, epsilon_model=eps_model, epsilon_score=eps_score,
                           expected_runs=expected_runs, n_runs=len(tried), runs=runs,
                           fit_diagnostics_={"runs": tried})


# ----------------------------------------------------------------- alpha="select"
#: alpha="select": the grid is auto's Lambda (at the runs' model epsilon) times these
SELECT_FACTORS = (0.5, 1.0, 2.0)
#: alpha="select": the mean number of runs (the pure guarantee does not depend on it)
SELECT_EXPECTED_RUNS = 6.0
#: alpha="select": the share of epsilon spent on the selection, the chosen factor being
#: refitted at the rest; None: the best run's model is released itself (the whole epsilon
#: goes to the selection).  0.1 by measurement (benchmarks/lambda_selection.py, mean gap
#: to the best Lambda in hindsight over 6 cases: 0.0078 with 0.1, 0.0109 with 0.2, 0.0200
#: releasing the best run's model with E K = 20; alpha="auto" 0.0046)
SELECT_REFIT_SHARE: float | None = 0.1


def _take_clone_stream(estimator: Any) -> None:
    """Take, and drop, the child stream that a clone of ``estimator`` takes from a numpy
    Generator ``random_state`` (``dperm.sklearn._base.PrivateLinearBase.__sklearn_clone__``).

    Until auto's Lambda was planned (the estimators' ``_auto_alpha``), fit_with_selection
    cloned the estimator at two points for fits whose models it discarded; taking the
    same child streams there keeps the release of a Generator-seeded fit what it was
    (tests/privacy/test_selection_pinned.py).  An int seed or None: nothing to take."""
    if isinstance(estimator.random_state, np.random.Generator):
        spawn_generator(estimator.random_state)


def check_selection(estimator: Any, fit_params: dict[str, Any] | None = None) -> float:
    """What an ``alpha="select"`` fit checks before it reads any data, in this order:
    epsilon; delta = 0; a mechanism with a Lambda (not 'none' or 'adassp'); the
    estimator (:func:`select_alpha`'s conditions, e.g. a public ``classes``); no fit
    parameters (refused as a fit refuses ``sample_weight``); the accountant's type and
    its budget for the whole ``epsilon``; and with an accountant, no seed.  Returns
    epsilon.  Nothing is spent.  :func:`fit_selected` calls it first; an engine that
    reads its rows before calling that (dperm.spark) calls it before reading them."""
    eps = check_epsilon(estimator.epsilon, "epsilon")
    params = estimator.get_params(deep=False)
    if float(params.get("delta", 0.0) or 0.0) != 0.0:
        raise ValueError("alpha='select': the selection's guarantee is for pure epsilon; set "
                         "delta=0 (or choose alpha='auto' or a number)")
    how = params.get("perturbation", params.get("method"))
    if how in ("none", "adassp"):
        raise ValueError(f"alpha='select' needs a private ERM fit with a Lambda; "
                         f"{'perturbation' if 'perturbation' in params else 'method'}={how!r} "
                         "has none to choose (use 'objective' or 'output')")
    _check_estimator(estimator)          # e.g. classes=None, before anything is read
    if fit_params:                       # refused as a fit refuses them (sample_weight)
        estimator._start_fit(fit_params, estimator._privacy_param)
    accountant = estimator.accountant
    if accountant is not None:
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                            f"{type(accountant).__name__}")
        accountant.check(PureEvent(eps))
        # a seed with an accountant is refused (select_alpha's check, made before reading)
        warn_if_seeded(estimator.random_state, accountant=accountant)
    return eps


def fit_with_selection(estimator: Any, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Any:
    """Fit ``estimator`` (a PrivateLinearClassifier or PrivateLinearRegression with
    ``alpha="select"``) with its Lambda chosen privately on all rows; returns it fitted.

    The documented rule (docs/user_guide/choosing_lambda.md, "Lambda chosen with the
    data"): the grid is ``alpha="auto"``'s Lambda for the runs' model epsilon times
    SELECT_FACTORS (public: it depends on n, d, epsilon and the public bounds only);
    :func:`select_alpha` with a logarithmic number of runs of mean SELECT_EXPECTED_RUNS
    spends s = SELECT_REFIT_SHARE (0.1) of the estimator's ``epsilon`` and releases only
    the chosen factor; the final model is fitted on all rows at (1 - s) epsilon with
    ``alpha="auto"``'s Lambda at (1 - s) epsilon times that factor.  (With the share None
    the best run's model is released itself and the selection spends all of epsilon.)

    Released: the model, its ``alpha_`` (the chosen Lambda) and ``privacy_``, the fit's
    record with ``epsilon`` the released model's own epsilon (per one-vs-rest model) and
    ``epsilon_total`` the estimator's epsilon (selection and fit).  The estimator's
    accountant is charged ``epsilon`` in all (checked before any data are read).

    X may be a Dask array (y numpy, or a Dask array kept on the workers): every run and
    the final model are fitted on the workers and each run's score is computed there
    (dperm.data.oracle), as for local rows.
    """
    return fit_selected(estimator, X, y, fit_params=fit_params)


def fit_selected(estimator: Any, X: Any, y: Any, *, fit: Callable[[Any], Any] | None = None,
                 fit_params: dict[str, Any] | None = None) -> Any:
    """:func:`fit_with_selection`'s rule, with the fit step given: ``fit(est)`` fits an
    estimator ``est`` (a clone of ``estimator`` with a numeric ``alpha``) on the data
    (default ``est.fit(X, y, **fit_params)``).  The seam of an engine whose fit is not
    the estimator's own: dperm.spark passes its rows on the executors as X (y None) and
    its fit of those rows; the runs' scores are computed where the rows are
    (dperm.data.oracle).  Returns ``estimator``, fitted."""
    import warnings

    from sklearn.base import clone

    from dperm.exceptions import NoiseDominatedWarning

    fit_params = fit_params or {}
    eps = check_selection(estimator, fit_params)
    base = clone(estimator).set_params(alpha="auto", accountant=None)
    accountant = estimator.accountant
    share = SELECT_REFIT_SHARE
    eps_select = eps if share is None else share * eps
    eps_model = (1.0 - DEFAULT_SCORE_FRACTION) * eps_select / _RUN_FACTORS["logarithmic"]
    # auto's Lambda at the runs' epsilon: a public function of (n, d, epsilon, bounds),
    # planned as a fit plans it (the estimator's _auto_alpha: nothing minimized)
    n_rows, n_features = _oracle.rows_shape(X)      # no label is read
    center = base._auto_alpha(eps_model, n_rows, n_features)
    _take_clone_stream(base)
    with warnings.catch_warnings():
        # the grid is the rule's (public): no NoiseDominatedWarning for a Lambda the user
        # did not give (the runs' small epsilon is by design)
        warnings.simplefilter("ignore", NoiseDominatedWarning)
        res = select_alpha(base, X, y, eps_select, alphas=alpha_grid(center, SELECT_FACTORS),
                           expected_runs=SELECT_EXPECTED_RUNS, accountant=accountant,
                           random_state=estimator.random_state, fit=fit)
    final: Any
    if share is None:
        final = res.best_estimator_
    else:
        # the chosen factor carried to auto's Lambda at the final fit's epsilon (the
        # runs' models are noisier than the final one: their best Lambda is larger)
        final = clone(base).set_params(epsilon=eps - eps_select, accountant=None)
        final_center = base._auto_alpha(eps - eps_select, n_rows, n_features)
        _take_clone_stream(final)
        final.set_params(alpha=final_center * res.best_alpha_ / center, accountant=accountant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoiseDominatedWarning)
            if fit is None:
                final.fit(X, y, **fit_params)
            else:
                fit(final)
    fitted = {k: v for k, v in vars(final).items()      # names ending in "_"
              if k.endswith("_") and not k.startswith("_")}
    for k in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")
              and k not in fitted]:
        delattr(estimator, k)                # an earlier fit's (e.g. feature_names_in_)
    for k, v in fitted.items():
        setattr(estimator, k, v)
    estimator.release_record_ = final.release_record_.replace(epsilon_total=eps)
    return estimator
