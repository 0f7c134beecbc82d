"""Private parameter tuning: Algorithm 4 of Chaudhuri, Monteleoni & Sarwate (2011).

Choosing Lambda (or any other parameter) by looking at held-out private data
leaks through the choice.  Algorithm 4 makes the whole procedure, training and
selection together, epsilon-differentially private:

1. split the data uniformly at random (a permutation that does not depend on
   the data values) into m + 1 disjoint parts of (nearly) equal size;
2. train model i on part i with the i-th parameter setting and privacy
   parameter epsilon (its constants use ITS part's size);
3. count z_i, the mistakes of model i on part m + 1;
4. release model i with probability exp(-epsilon z_i / 2) / sum_k exp(-epsilon z_k / 2)
   (the exponential mechanism of McSherry & Talwar, 2007).

Privacy (the paper's Theorem 8): a changed row lies in exactly one part.  In a
training part it affects one model, which is epsilon-DP, and nothing else; in
the validation part it changes every z_i by at most 1, and the exponential
mechanism with weights exp(-epsilon z / 2) is then epsilon-DP.  The parts are
disjoint and the randomness of every step independent, so releasing all the
models and the chosen index is epsilon-DP (parallel composition), and so is
releasing the chosen model alone.

Utility (Theorem 9): with probability at least 1 - beta the chosen model makes
at most z_min + 2 log(m / beta) / epsilon mistakes on the validation part (beta a
failure probability of the utility bound, not a privacy parameter).
"""
from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data import oracle as _oracle
from dperm.data.validation import check_epsilon, check_positive, check_random_state, spawn_generator
from dperm.exceptions import PrivacyLeakWarning
from dperm.privacy.accountant import ApproxEvent
from dperm.privacy.noise import warn_if_seeded
from dperm.privacy.record import ReleaseRecord, record_to_dict

__all__ = ["private_tuning", "PrivateTuningResult", "exponential_mechanism", "random_split"]

# parameters that private_tuning controls itself and a grid may not set
_RESERVED = ("epsilon", "perturbation", "random_state", "accountant")
# public bounds and label sets: fixed before seeing the data, so a grid may not vary them
# (a grid entry would also bypass the checks that they are set)
_PUBLIC_BOUNDS = ("classes", "data_norm", "norm_policy")


def exponential_mechanism(scores: ArrayLike, epsilon: float, sensitivity: float = 1.0,
                          random_state: Any = None) -> tuple[int, np.ndarray]:
    """Pick an index with probability proportional to exp(-epsilon * score / (2 * sensitivity)).

    Scores are costs (lower is better), such as mistake counts.  If changing one
    row of the private data changes every score by at most `sensitivity`, the
    chosen index is epsilon-differentially private (McSherry & Talwar 2007).

    The probabilities are computed stably: the smallest score is subtracted
    before exponentiating (the weights are shift-invariant), so the best index
    has weight exactly 1 and nothing overflows or divides 0 by 0, however
    large the scores.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Finite real numbers, m >= 1.
    epsilon : float > 0
    sensitivity : float > 0
        Bound on how much one row can change any single score (1 for a count
        of mistakes).
    random_state : None, int or numpy Generator
        None draws fresh OS entropy; set it only for reproducible experiments.

    Returns
    -------
    index : int
        The chosen index, in range(m).
    probabilities : ndarray of shape (m,)
        The selection probabilities q_i (they sum to 1).
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    sensitivity = check_positive(sensitivity, "sensitivity")
    probabilities = selection_probabilities(scores, epsilon, sensitivity)
    rng = check_random_state(random_state)
    index = int(rng.choice(probabilities.size, p=probabilities))
    return index, probabilities


def selection_probabilities(scores: ArrayLike, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """The exponential mechanism's probabilities q_i, shape (m,); see exponential_mechanism."""
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"scores: must be real numbers, got {scores!r}") from None
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores: expected a non-empty 1-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores: contains NaN or infinity")
    w = np.exp(-(epsilon / (2.0 * sensitivity)) * (s - s.min()))
    return w / w.sum()


def random_split(n_samples: int, n_parts: int, random_state: Any = None) -> list[np.ndarray]:
    """Split range(n_samples) uniformly at random into n_parts disjoint parts.

    The split is a uniformly random permutation cut into consecutive blocks, so
    it depends on nothing but n (public) and the randomness.  Part sizes differ
    by at most one (the first n_samples % n_parts parts have one more row).

    Returns
    -------
    list of n_parts int64 arrays of row indices, together a permutation of
    range(n_samples).
    """
    for value, name in ((n_samples, "n_samples"), (n_parts, "n_parts")):
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)) or value < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")
    if n_parts > n_samples:
        raise ValueError(f"n_parts: cannot split {n_samples} rows into {n_parts} non-empty parts")
    rng = check_random_state(random_state)
    perm = rng.permutation(int(n_samples))
    return [np.asarray(p, dtype=np.int64) for p in np.array_split(perm, int(n_parts))]


@dataclass
class PrivateTuningResult:
    """What :func:`private_tuning` returns.

    Safe to release (covered by the epsilon guarantee): ``best_estimator_``,
    ``best_params_``, ``best_index_``, ``estimators_`` (every model was trained on
    its own part, so releasing all of them is covered too), and the public
    inputs ``params``, ``epsilon``, ``train_sizes`` and ``validation_size`` (functions
    of n and m).  No random_state, seed or generator is left in any released
    estimator's parameters.

    NOT releasable: ``fit_diagnostics_`` holds the mistake counts z_i and the
    selection probabilities q_i, computed from the private validation part
    without noise.  They are for the analyst's eyes and for tests; they are not
    shown in the repr.

    Parameters
    ----------
    best_estimator_ : estimator
        The chosen fitted estimator (trained on its part only).
    best_params_ : dict
        The chosen parameter setting.
    best_index_ : int
        Its position in ``params``.
    params : list of dict
        The m settings of the grid, in the order used.
    train_sizes : ndarray of shape (m,)
        The size of the part each model was trained on.
    validation_size : int
        The size of part m + 1.
    epsilon : float
        The privacy parameter of the whole procedure.
    estimators_ : list
        The m fitted estimators.
    delta : float, default 0.0
        0 for pure-epsilon models, else the largest delta of the models' settings (the
        procedure is (epsilon, delta)-DP).
    fit_diagnostics_ : dict
        ``"mistakes"`` (ndarray (m,), z_i) and ``"probabilities"`` (ndarray (m,), q_i).
        Not releasable.
    release_record_ : ReleaseRecord
        The record of the procedure (dperm.privacy.record); ``privacy_`` is its
        serialised dict (epsilon, delta, neighbouring, n_candidates, train_sizes,
        validation_size).

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 5))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)      # every row has norm 1 (public)
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=4000) > 0, 1, -1)
    >>> res = dperm.private_tuning(dperm.PrivateLinearClassifier(classes=[-1, 1]), X, y,
    ...                            param_grid={"alpha": [1e-3, 1e-2]}, epsilon=1.0)
    >>> res.best_params_["alpha"] in (1e-3, 1e-2), len(res.estimators_)
    (True, 2)
    >>> sorted(res.fit_diagnostics_)                        # for the analyst only
    ['mistakes', 'probabilities']
    """

    best_estimator_: Any          # a fitted scikit-learn estimator
    best_params_: dict
    best_index_: int
    params: list
    train_sizes: np.ndarray
    validation_size: int
    epsilon: float
    estimators_: list = field(default_factory=list, repr=False)
    delta: float = 0.0
    fit_diagnostics_: dict = field(default_factory=dict, repr=False)
    release_record_: ReleaseRecord | None = field(default=None, repr=False)

    @property
    def n_candidates(self) -> int:
        return len(self.params)

    @property
    def privacy_(self) -> dict[str, Any] | None:
        """The procedure's release record (dperm.privacy.record, layout "tuning")
        serialised: its epsilon and delta, the relation (replace_one), the number of
        candidates and the parts' sizes (functions of the public n).  Each released
        model carries its own ``privacy_``."""
        return None if self.release_record_ is None else record_to_dict(self.release_record_)


def _check_grid(param_grid: Any) -> list[dict[str, Any]]:
    """The grid as a list of dicts; refuse anything that is not a fixed, finite collection."""
    from sklearn.model_selection import ParameterGrid

    if isinstance(param_grid, Mapping):
        try:
            grid = list(ParameterGrid(dict(param_grid)))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"param_grid: a dict must map parameter names to non-empty lists of "
                            f"values ({exc})") from None
    elif isinstance(param_grid, ParameterGrid):
        grid = list(param_grid)
    elif isinstance(param_grid, (list, tuple)):
        grid = list(param_grid)
    elif isinstance(param_grid, Iterator) or callable(param_grid) or hasattr(param_grid, "__next__"):
        raise TypeError(
            f"param_grid: must be a fixed, finite list of dicts (or a dict of lists) chosen before "
            f"seeing the data; got a {type(param_grid).__name__} (generators, iterators and "
            f"callables are refused: pass list(...) of settings fixed in advance)")
    else:
        raise TypeError(f"param_grid: must be a list of dicts or a dict of lists, got "
                        f"{type(param_grid).__name__}")
    if len(grid) == 0:
        raise ValueError("param_grid: is empty; give at least one parameter setting")
    for i, p in enumerate(grid):
        if not isinstance(p, Mapping):
            raise TypeError(f"param_grid: entry {i} must be a dict of parameter values, got "
                            f"{type(p).__name__}")
        for k in p:
            if not isinstance(k, str):
                raise TypeError(f"param_grid: entry {i} has a non-string key {k!r}")
    return [dict(p) for p in grid]


def _keys(params: Mapping[str, Any], name: str) -> list[str]:
    """Parameter names of a (possibly nested) estimator that end in `name`."""
    return [k for k in params if k == name or k.endswith("__" + name)]


def _procedure_delta(base: Any, grid: list[dict[str, Any]]) -> float:
    """delta of the whole procedure: the largest delta any model is fitted with (0 for
    pure-epsilon models).  Refuses add/remove models: the guarantee of the split into
    m + 1 equal parts is argued for replace-one neighbours (n public)."""
    for k in _keys(base, "neighbouring"):
        values = {base[k]} | {p[k] for p in grid if k in p}
        if values != {"replace_one"}:
            raise ValueError(f"estimator: {k}={sorted(values)!r}; private_tuning splits the rows "
                             "into m + 1 parts of public sizes, a guarantee argued for "
                             "neighbouring='replace_one' (n public) only")
    deltas = [float(p.get(k, base[k]) or 0.0) for k in _keys(base, "delta") for p in grid]
    return max(deltas, default=0.0)


def private_tuning(estimator: Any, X: ArrayLike, y: ArrayLike, param_grid: Any,
                   epsilon: float, random_state: Any = None) -> PrivateTuningResult:
    """Choose among parameter settings with epsilon-differential privacy (Algorithm 4).

    The data are split uniformly at random into m + 1 disjoint parts of (nearly)
    equal size, m = len(grid).  A clone of `estimator` with the i-th setting and
    privacy parameter `epsilon` is trained on part i (a private estimator's
    constants then use that part's size, since it sees nothing else); z_i is
    the number of its mistakes on part m + 1; index i is chosen with
    probability exp(-epsilon z_i / 2) / sum_k exp(-epsilon z_k / 2).

    The whole procedure is epsilon-DP (the paper's Theorem 8: disjoint parts
    and the exponential mechanism) -- (epsilon, delta)-DP when the models are
    (epsilon, delta)-DP (delta > 0; delta the largest of the grid's), since each row
    reaches one model or the selection -- provided that the grid, the label set and
    every bound the estimator uses are public, i.e. fixed before seeing the
    data.  By Theorem 9, with probability >= 1 - beta the chosen model makes
    at most min_i z_i + 2 log(m / beta) / epsilon mistakes on part m + 1 (beta:
    the utility bound's failure probability, not the privacy delta).
    Each model sees only about n / (m + 1) rows, so keep the grid small.

    Parameters
    ----------
    estimator : a private scikit-learn classifier, e.g. PrivateLinearClassifier
        or a Pipeline ending in one.  It must have exactly one `epsilon`
        parameter (set to `epsilon` in every clone), perturbation != "none",
        and a public label set (`classes`, not None: reading labels from a
        part would leak).  If it has a BudgetAccountant, `epsilon` is checked
        and charged to it once for the whole procedure.
    X : array of shape (n_samples, n_features), a DataFrame, or a dask.array or
        dask.dataframe
        A Dask array (rows chunked, see dperm.data.dask_rows) is split on the workers:
        each model is fitted there on its part and the validation mistakes are
        counted there (only the counts come back).  Each part is cut from X's
        blocks, so persist X first if its blocks are costly to compute.  A pandas
        or dask DataFrame is passed to the estimator as a DataFrame (a Pipeline
        whose PublicBoundsTransformer reads its columns); a dask DataFrame's
        parts are cut from its partitions on the workers, like a Dask array's.
    y : array of shape (n_samples,)
        Labels, all in the estimator's `classes` (with a Dask X, a numpy array
        or a Dask array, read on the client like the estimator's fit does).
    param_grid : list of dicts, or dict of lists
        A fixed, finite list of parameter settings chosen BEFORE seeing the
        data (a list or tuple of dicts, each one setting; or a dict of lists,
        expanded by sklearn.model_selection.ParameterGrid; for scikit-learn's
        list-of-dicts-of-lists form pass ParameterGrid(that_list)).  Generators,
        iterators, callables and empty grids are refused.  It may not set
        epsilon, perturbation, random_state or accountant (private_tuning sets
        them), nor classes, data_norm or norm_policy (public choices, fixed on
        the estimator).
    epsilon : float > 0
        Privacy parameter of the whole procedure (and of each model).
    random_state : None, int or numpy Generator
        One generator drives the split, the models' noise and the selection;
        each model draws from its own spawned child stream (overriding the
        estimator's random_state, so that no two models share noise), and the
        released estimators' random_state is reset to None.  None (the
        default) uses fresh OS entropy.  An int makes the run reproducible and
        voids the guarantee (PrivacyLeakWarning; refused with an accountant).

    Returns
    -------
    PrivateTuningResult
        `best_estimator_` is the released model; `fit_diagnostics_` (mistake
        counts and probabilities) is NOT covered by the guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 5))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)      # every row has norm 1 (public)
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=4000) > 0, 1, -1)
    >>> res = dperm.private_tuning(dperm.PrivateLinearClassifier(classes=[-1, 1]), X, y,
    ...                            param_grid={"alpha": [1e-3, 1e-2]}, epsilon=1.0)
    >>> res.best_params_["alpha"] in (1e-3, 1e-2), len(res.estimators_)
    (True, 2)
    >>> model = res.best_estimator_                         # publish this, and res.params
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "set_params"):
        raise TypeError(f"estimator: expected a scikit-learn estimator, got {type(estimator).__name__}")
    grid = _check_grid(param_grid)
    base = estimator.get_params(deep=True)
    eps_keys, class_keys = _check_private_estimator(base)
    delta = _procedure_delta(base, grid)
    _check_grid_keys(grid, base, type(estimator).__name__)

    # a Dask array: rows stay on the workers; the labels (n values, needed to check them
    # against the public label set and to score the validation part) are read here, as
    # in PrivateLinearClassifier.fit
    X, y, n = _labelled_rows(X, y, base, class_keys, len(grid))
    m = len(grid)

    accountants = _accountants(base)
    warn_if_seeded(random_state, accountant=accountants[0] if accountants else None)
    event = ApproxEvent(epsilon, delta) if delta > 0 else epsilon
    for a in accountants:
        a.check(event)

    rng = check_random_state(random_state)
    parts = random_split(n, m + 1, rng)
    val = parts[-1]
    # a Dask array's parts are cut out of its chunks on the workers
    part = _oracle.row_parts(X, y, parts)
    X_val, y_val = part(m)
    estimators, mistakes = _fit_candidates(estimator, grid, base, eps_keys[0], epsilon, rng,
                                           part, X_val, y_val)

    # mistakes change by at most 1 when one validation row changes: sensitivity 1
    best, probabilities = exponential_mechanism(mistakes, epsilon, 1.0, rng)
    for a in accountants:
        a.spend(event, label=f"private_tuning({type(estimator).__name__}, m={m})")
    sizes = [len(p) for p in parts[:-1]]
    record = ReleaseRecord(layout="tuning", mechanism="private_tuning", epsilon=epsilon,
                           delta=delta, neighbouring="replace_one", n_candidates=m,
                           train_sizes=tuple(sizes), validation_size=len(val))
    return PrivateTuningResult(
        best_estimator_=estimators[best], best_params_=dict(grid[best]), best_index_=best,
        params=grid, train_sizes=np.array(sizes),
        validation_size=len(val), epsilon=epsilon, delta=delta, estimators_=estimators,
        fit_diagnostics_={"mistakes": mistakes, "probabilities": probabilities},
        release_record_=record)


def _check_private_estimator(base: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The estimator's (nested) parameters: exactly one epsilon, a private perturbation,
    public label sets.  Returns the epsilon and classes parameter names."""
    eps_keys = _keys(base, "epsilon")
    if len(eps_keys) != 1:
        raise ValueError(
            "estimator: private_tuning needs an estimator with exactly one 'epsilon' parameter "
            f"(a private estimator such as dperm.PrivateLinearClassifier); found {eps_keys or 'none'}")
    for k in _keys(base, "perturbation"):
        if base[k] == "none":
            raise ValueError(f"estimator: {k}='none' is not private; private_tuning needs a private "
                             "estimator (perturbation='objective' or 'output')")
    class_keys = _keys(base, "classes")
    for k in class_keys:
        if base[k] is None:
            raise ValueError(
                f"estimator: {k}=None would read the label set from the private data of one part; "
                "pass the public label set, e.g. classes=[-1, 1]")
    if not class_keys:
        # stacklevel 3: the caller of private_tuning
        warnings.warn("estimator: has no 'classes' parameter, so private_tuning cannot check that "
                      "its label set is public", PrivacyLeakWarning, stacklevel=3)
    return eps_keys, class_keys


def _check_grid_keys(grid: list[dict[str, Any]], base: Mapping[str, Any], name: str) -> None:
    """Every key of every setting is a parameter of the estimator (named ``name``) that
    the grid may choose: neither one private_tuning sets nor a public bound."""
    valid = set(base)
    for i, p in enumerate(grid):
        for k in p:
            if k not in valid:
                raise ValueError(f"param_grid: entry {i} sets {k!r}, which is not a parameter of "
                                 f"{name} (valid: {sorted(valid)[:20]})")
            if k.split("__")[-1] in _RESERVED:
                raise ValueError(f"param_grid: entry {i} sets {k!r}; private_tuning controls "
                                 f"{', '.join(_RESERVED)} itself")
            if k.split("__")[-1] in _PUBLIC_BOUNDS:
                raise ValueError(f"param_grid: entry {i} sets {k!r}; public bounds and label sets "
                                 f"({', '.join(_PUBLIC_BOUNDS)}) must be fixed on the estimator "
                                 "before seeing the data, not chosen by a grid")


def _labelled_rows(X: Any, y: Any, base: Mapping[str, Any], class_keys: list[str],
                   m: int) -> tuple[Any, np.ndarray, int]:
    """X (rows kept where they are), the labels as a 1-D array and the row count n:
    one label per row, enough rows for m + 1 parts of 2, every label in the public
    label sets."""
    X, y, _ = _oracle.labelled_rows(X, y, accept_worker_rows=False, frames=True)
    n = _oracle.n_rows(X)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected {n} labels (one per row of X), got shape {y.shape}")
    if n // (m + 1) < 2:
        raise ValueError(f"param_grid: {m} settings need m + 1 = {m + 1} parts of at least 2 rows, "
                         f"but X has only {n} rows; use a smaller grid")
    for k in class_keys:
        classes = np.asarray(base[k])
        bad = ~np.isin(y, classes)
        if bad.any():
            raise ValueError(f"y: values {np.unique(y[bad])[:5].tolist()} are not in {k}="
                             f"{classes.tolist()}")
    return X, y, n


def _accountants(base: Mapping[str, Any]) -> list[Any]:
    """The distinct BudgetAccountants among the estimator's parameters, in order."""
    accountants: list[Any] = []
    for k in _keys(base, "accountant"):
        a = base[k]
        if a is not None and all(a is not b for b in accountants):
            accountants.append(a)
    return accountants


def _fit_candidates(estimator: Any, grid: list[dict[str, Any]], base: Mapping[str, Any],
                    eps_key: str, epsilon: float, rng: np.random.Generator, part: Any,
                    X_val: Any, y_val: Any) -> tuple[list[Any], np.ndarray]:
    """Fit a clone per setting on its part (epsilon, its own child stream, no
    accountant) and count its mistakes on the validation part."""
    from sklearn.base import clone

    rs_keys = _keys(base, "random_state")
    estimators, mistakes = [], np.empty(len(grid), dtype=np.int64)
    for i, p in enumerate(grid):
        est = clone(estimator)
        settings = dict(p)
        settings[eps_key] = epsilon
        for k in rs_keys:
            # an independent child stream per model: fresh entropy when random_state is
            # None, reproducible children of the seed otherwise
            settings[k] = spawn_generator(rng)
        for k in _keys(base, "accountant"):
            settings[k] = None  # charged once for the whole procedure
        est.set_params(**settings)
        est.fit(*part(i))
        # a generator (or any seed) left in a released estimator's parameters would
        # let its holder regenerate the noise
        est.set_params(**{k: None for k in rs_keys})
        mistakes[i] = _oracle.count_mistakes(est, X_val, y_val)
        estimators.append(est)
    return estimators, mistakes
