"""What a fit releases: only public inputs and the noisy model (docs/specification.md,
"Setting": what a fit releases).

Every test here compares two data sets that differ in one row (replace-one, n public): the
releasable fields must be identical, while the analyst-only diagnostics do differ (which
shows the data sets are distinguishable, so a leak would be caught)."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin, clone

import dperm
from dperm import (
    PrivacyLeakWarning,
    PrivateLinearClassifier,
    PrivateLinearRegression,
    private_tuning,
    save_model,
)
from dperm.cli import main as cli_main

# neighbouring data sets with rows beyond data_norm and small alphas on purpose (both warnings are
# asserted in tests/sklearn/test_estimators.py)
pytestmark = [
    pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
    pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
]


def neighbours(n=300, d=5, seed=0):
    """(X, y) and (X', y') with row 0 replaced by a far-away row of the opposite label."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.where(X @ np.linspace(1, -1, d) + 0.2 > 0, 1, -1)
    X2, y2 = X.copy(), y.copy()
    X2[0] = -X[0] / np.linalg.norm(X[0])
    y2[0] = -y[0]
    return (X, y), (X2, y2)


def released_attributes(est):
    """Every public fitted attribute except the coefficients, plus the parameters."""
    out = {k: v for k, v in vars(est).items()
           if k.endswith("_") and not k.startswith("_") and k not in ("coef_", "intercept_",
                                                                    "fit_diagnostics_")}
    out["params"] = est.get_params()
    return out


def assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


@pytest.mark.parametrize("perturbation", ["objective", "output"])
@pytest.mark.parametrize("loss", ["logistic", "huber"])
@pytest.mark.parametrize("alpha", ["auto", 1e-2])
@pytest.mark.parametrize("fmt", ["dense", "csr float32"])
def test_neighbouring_fits_release_identical_metadata(perturbation, loss, alpha, fmt):
    (X, y), (X2, y2) = neighbours()
    if fmt != "dense":     # the sparse, float32 path releases the same public values only
        import scipy.sparse as sp

        X, X2 = sp.csr_array(X.astype(np.float32)), sp.csr_array(X2.astype(np.float32))
    kw = dict(loss=loss, perturbation=perturbation, epsilon=0.5, alpha=alpha, classes=[-1, 1])
    a = PrivateLinearClassifier(**kw).fit(X, y)     # fresh randomness each (different seeds)
    b = PrivateLinearClassifier(**kw).fit(X2, y2)
    assert_same(released_attributes(a), released_attributes(b))
    assert a.privacy_ == b.privacy_
    assert not np.array_equal(a.coef_, b.coef_)
    # power: the diagnostics tell the two data sets apart, so had any of them been in
    # privacy_ (as grad_norm, converged and n_iter_ once were) the comparison above fails
    assert a.fit_diagnostics_ != b.fit_diagnostics_
    for key in ("grad_norm", "converged", "n_iter", "seed", "seconds", "rows_clipped"):
        assert key not in a.privacy_


def test_the_comparison_catches_a_leaked_diagnostic():
    (X, y), (X2, y2) = neighbours()
    kw = dict(perturbation="output", epsilon=0.5, alpha=1e-2, classes=[-1, 1])
    a = PrivateLinearClassifier(**kw).fit(X, y)
    b = PrivateLinearClassifier(**kw).fit(X2, y2)
    # the old release: the noise-free minimizer's gradient norm in privacy_
    # (a ReleaseRecord has no field for it, so the leak is put beside the record)
    ra, rb = released_attributes(a), released_attributes(b)
    ra["grad_norm"], rb["grad_norm"] = (a.fit_diagnostics_["grad_norm"],
                                        b.fit_diagnostics_["grad_norm"])
    with pytest.raises(AssertionError):
        assert_same(ra, rb)


def _write_csv(path, X, y):
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(X.shape[1])) + ",label\n")
        for row, label in zip(X, y):
            fh.write(",".join(repr(float(v)) for v in row) + f",{'yes' if label > 0 else 'no'}\n")


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_neighbouring_cli_models_identical_except_coefficients(tmp_path, capsys, perturbation):
    (X, y), (X2, y2) = neighbours(n=200, d=3)
    schema = {"numeric": {f"x{j}": [-1, 1] for j in range(3)},
              "label": {"column": "label", "classes": ["no", "yes"]}}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    models, outputs = [], []
    for k, (A, b) in enumerate(((X, y), (X2, y2))):
        d = tmp_path / f"set{k}"
        d.mkdir()
        _write_csv(d / "data.csv", A, b)      # same file name: the name is written to the model
        assert cli_main(["fit", str(d / "data.csv"), "--schema", str(tmp_path / "schema.json"),
                         "--perturbation", perturbation, "--epsilon", "0.5", "--alpha", "0.01",
                         "-o", str(d / "model.json")]) == 0
        outputs.append(capsys.readouterr().out)
        models.append(json.loads((d / "model.json").read_text()))
    coefs = [(m.pop("coef"), m.pop("intercept")) for m in models]
    assert models[0] == models[1]
    assert coefs[0] != coefs[1]
    text = json.dumps(models[0])
    for word in ("grad_norm", "converged", "n_iter", "seed", "seconds", "created"):
        assert word not in text
    # power: what the analyst sees on the terminal differs between the two data sets
    diag = [o[o.index("analyst-only diagnostics"):] for o in outputs]
    assert diag[0] != diag[1]


def test_cli_seed_is_not_written(tmp_path, capsys):
    (X, y), _ = neighbours(n=100, d=3)
    _write_csv(tmp_path / "data.csv", X, y)
    assert cli_main(["fit", str(tmp_path / "data.csv"), "--label", "label", "--seed", "12345",
                     "-o", str(tmp_path / "m.json")]) == 0
    assert "PrivacyLeakWarning: random_state is a fixed seed" in capsys.readouterr().err
    text = (tmp_path / "m.json").read_text()
    assert "12345" not in text and "seed" not in text


# ---------------------------------------------------------------------------- seeds
def _leak_warnings(record):
    return [w for w in record if issubclass(w.category, PrivacyLeakWarning)
            and "fixed seed" in str(w.message)]


@pytest.mark.parametrize("call", ["estimator", "objective", "output", "tuning"])
def test_seeded_fit_warns_once_per_call(call):
    (X, y), _ = neighbours()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        if call == "estimator":
            PrivateLinearClassifier(classes=[-1, 1], random_state=3).fit(X, y)
        elif call == "tuning":
            private_tuning(PrivateLinearClassifier(classes=[-1, 1]), X, y,
                           [{"alpha": 1e-2}, {"alpha": 1e-1}], epsilon=1.0, random_state=3)
        else:
            getattr(dperm, f"{call}_perturbation")(X, y, alpha=[1e-2, 1e-1], epsilon=1.0,
                                                   n_draws=3, random_state=3)
    assert len(_leak_warnings(rec)) == 1


def test_unseeded_and_generator_fits_do_not_warn():
    (X, y), _ = neighbours()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PrivateLinearClassifier(classes=[-1, 1]).fit(X, y)
        PrivateLinearClassifier(classes=[-1, 1], random_state=np.random.default_rng()).fit(X, y)
        private_tuning(PrivateLinearClassifier(classes=[-1, 1]), X, y, [{"alpha": 1e-2}],
                       epsilon=1.0)


def test_seeded_fit_with_accountant_is_refused_and_changes_nothing():
    (X, y), _ = neighbours()
    acc = dperm.BudgetAccountant(1.0)
    est = PrivateLinearClassifier(classes=[-1, 1], random_state=3, accountant=acc)
    with pytest.raises(ValueError, match="^random_state: a fixed seed"):
        est.fit(X, y)
    assert acc.spent == 0 and not hasattr(est, "coef_")
    with pytest.raises(ValueError, match="^random_state: a fixed seed"):
        private_tuning(PrivateLinearClassifier(classes=[-1, 1], accountant=acc), X, y,
                       [{"alpha": 1e-2}], epsilon=0.5, random_state=3)
    assert acc.spent == 0


def test_generator_clones_draw_independent_noise():
    (X, y), _ = neighbours()
    base = PrivateLinearClassifier(classes=[-1, 1], epsilon=0.5,
                                   random_state=np.random.default_rng(7))
    a, b = clone(base).fit(X, y), clone(base).fit(X, y)
    assert not np.array_equal(a.coef_, b.coef_)
    # two fits of one estimator, too
    c1 = base.fit(X, y).coef_.copy()
    c2 = base.fit(X, y).coef_.copy()
    assert not np.array_equal(c1, c2)
    # and it stays reproducible: the same construction gives the same sequence
    again = PrivateLinearClassifier(classes=[-1, 1], epsilon=0.5,
                                    random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(clone(again).fit(X, y).coef_, a.coef_)


def test_grid_search_folds_draw_independent_noise():
    from sklearn.model_selection import GridSearchCV

    (X, y), _ = neighbours()
    gs = GridSearchCV(PrivateLinearClassifier(classes=[-1, 1], epsilon=0.5,
                                              random_state=np.random.default_rng(1)),
                      {"alpha": [1e-2]}, cv=[(np.arange(300), np.arange(300))] * 2,
                      return_train_score=False)
    gs.fit(X, y)
    s = gs.cv_results_
    # the same training rows in both "folds": equal scores would mean equal noise
    assert s["split0_test_score"][0] != s["split1_test_score"][0]


# Runs in a fresh interpreter that seeds numpy's global state first, as many scripts do.
_FRESH_SCRIPT = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    np.random.seed(0)
    import dperm, dperm.data.validation
    if sys.argv[1] == "broken":   # a policy that derives the noise from the global state
        dperm.data.validation.fresh_generator = lambda: np.random.default_rng(np.random.randint(2**31))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] > 0, 1, -1)
    est = dperm.PrivateLinearClassifier(classes=[-1, 1], alpha=0.1, n_threads=1).fit(X, y)
    print(repr(est.coef_.tolist()))
""")


def _noise_differs_across_processes(policy, cwd):
    out = []
    for _ in range(2):
        # cwd away from the source tree, so the child imports the installed package
        r = subprocess.run([sys.executable, "-c", _FRESH_SCRIPT, policy], capture_output=True,
                           text=True, timeout=120, cwd=cwd,
                           env={**os.environ, "PYTHONWARNINGS": "ignore"})
        assert r.returncode == 0, r.stderr
        out.append(r.stdout.strip())
    return out[0] != out[1]


def test_fresh_randomness_across_processes_with_global_seed(tmp_path):
    assert _noise_differs_across_processes("real", tmp_path)


def test_fresh_randomness_check_catches_a_global_state_policy(tmp_path):
    assert not _noise_differs_across_processes("broken", tmp_path)


# ---------------------------------------------------------------------------- tuning
class ConstantClassifier(ClassifierMixin, BaseEstimator):
    """Predicts `label` for every row: mistakes on the validation part are a known count."""

    def __init__(self, label=1, epsilon=1.0, classes=(-1, 1)):
        self.label = label
        self.epsilon = epsilon
        self.classes = classes

    def fit(self, X, y):
        self.classes_ = np.asarray(self.classes)
        return self

    def predict(self, X):
        return np.full(len(X), self.label)


def _selection_pvalue(n_runs=1500, eps=0.1):
    """Select between a perfect and an always-wrong constant model on all-positive data.

    Exact: z = (0, |V|), so P(index 0) = 1 / (1 + exp(-eps |V| / 2)). Returns the
    two-sided binomial p-value of the observed count of index 0.
    """
    n, grid = 30, [{"label": 1}, {"label": -1}]
    X, y = np.zeros((n, 1)), np.ones(n, dtype=int)
    V = n // 3
    q0 = 1.0 / (1.0 + np.exp(-eps * V / 2))
    hits = sum(private_tuning(ConstantClassifier(), X, y, grid, epsilon=eps).best_index_ == 0
               for _ in range(n_runs))
    return stats.binomtest(hits, n_runs, q0).pvalue


def test_tuning_selects_by_the_exponential_mechanism():
    assert _selection_pvalue() > 1e-4


def test_tuning_test_catches_a_nonprivate_argmax(monkeypatch):
    import dperm.privacy.tuning as tuning

    real = tuning.exponential_mechanism

    def argmax_after(scores, epsilon, sensitivity=1.0, random_state=None):
        _, q = real(scores, epsilon, sensitivity, random_state)
        return int(np.argmin(scores)), q      # the best score, chosen without noise

    monkeypatch.setattr(tuning, "exponential_mechanism", argmax_after)
    assert _selection_pvalue() < 1e-6


def test_tuning_releases_no_scores_or_seeds():
    (X, y), _ = neighbours(n=600)
    res = private_tuning(PrivateLinearClassifier(classes=[-1, 1], random_state=5), X, y,
                         [{"alpha": a} for a in (1e-3, 1e-2, 1e-1)], epsilon=1.0)
    text = repr(res)
    assert "mistakes" not in text and "probabilities" not in text
    for est in res.estimators_:
        assert est.get_params()["random_state"] is None
    assert set(res.fit_diagnostics_) == {"mistakes", "probabilities"}


@pytest.mark.parametrize("key,value", [("classes", None), ("classes", [1, -1]),
                                       ("data_norm", 5.0), ("norm_policy", "error")])
def test_tuning_grid_may_not_set_public_bounds(key, value):
    (X, y), _ = neighbours()
    with pytest.raises(ValueError, match=f"param_grid: entry 0 sets '{key}'"):
        private_tuning(PrivateLinearClassifier(classes=[-1, 1]), X, y, [{key: value}],
                       epsilon=1.0)


@pytest.mark.parametrize("perturbation", ["output", "objective"])
def test_unconverged_output_perturbation_refusal_is_the_same_for_neighbours(perturbation):
    """Output and objective perturbation release nothing when the solver misses tol (their
    guarantees cover the exact minimiser only; objective perturbation released it with a
    warning until issue 29, item 5); the refusal's text names no private number."""
    (X, y), (X2, y2) = neighbours()
    texts = []
    for A, b in ((X, y), (X2, y2)):
        clf = PrivateLinearClassifier(perturbation=perturbation, classes=[-1, 1], max_iter=2,
                                      alpha=1e-2)
        with pytest.warns(dperm.ConvergenceWarning), pytest.raises(RuntimeError) as err:
            clf.fit(A, b)
        assert not hasattr(clf, "coef_") and not hasattr(clf, "privacy_")
        texts.append(str(err.value))
    assert texts[0] == texts[1] and "nothing is released" in texts[0]
    assert not any(ch.isdigit() for ch in texts[0].replace("tol=1e-10", ""))


@pytest.mark.parametrize("perturbation", ["none"])
def test_convergence_warning_text_is_the_same_for_neighbours(perturbation):
    (X, y), (X2, y2) = neighbours()
    texts = []
    for A, b in ((X, y), (X2, y2)):
        with pytest.warns(dperm.ConvergenceWarning) as rec:
            PrivateLinearClassifier(perturbation=perturbation, classes=[-1, 1], max_iter=2,
                                    alpha=1e-2).fit(A, b)
        texts.append([str(w.message) for w in rec if issubclass(w.category, dperm.ConvergenceWarning)])
    assert texts[0] == texts[1] and texts[0]
    assert not any(ch.isdigit() for ch in texts[0][0].replace("tol=1e-10", ""))


# ---------------------------------------------------------------------------- issue 29, item 3
def _records_equal(a, b):
    assert a.release_record_ == b.release_record_
    assert a.privacy_ == b.privacy_ and a.alpha_ == b.alpha_


def test_adassp_add_remove_without_n_public_records_no_count():
    """AdaSSP's sums need no count: under add/remove it records n_public or None, never
    the row count (it recorded the true n before)."""
    from dperm import PrivateLinearRegression

    (X, y), _ = neighbours()
    y = np.clip(X @ np.linspace(1, -1, X.shape[1]), -1, 1)
    kw = dict(method="adassp", delta=1e-6, neighbouring="add_remove")
    a = PrivateLinearRegression(**kw).fit(X, y)
    b = PrivateLinearRegression(**kw).fit(X[1:], y[1:])          # a row removed
    assert a.privacy_["n_samples"] is None
    strip = ("lambda_min_noisy", "ridge")                          # released noisy values
    assert {k: v for k, v in a.privacy_.items() if k not in strip} == \
        {k: v for k, v in b.privacy_.items() if k not in strip}
    c = PrivateLinearRegression(n_public=1000, **kw).fit(X, y)
    assert c.privacy_["n_samples"] == 1000


@pytest.mark.parametrize("method", ["objective", "output", "none"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_regressor_auto_alpha_under_add_remove_reads_n_public_only(method, delta):
    """Issue 29 item 8: alpha="auto" under add/remove is a function of n_public, not of
    the private row count: neighbours by removing a row release the same alpha_."""
    from dperm import PrivateLinearRegression

    (X, y), _ = neighbours()
    y = np.clip(X @ np.linspace(1, -1, X.shape[1]), -1, 1)
    kw = dict(method=method, delta=delta, neighbouring="add_remove", n_public=250)
    a = PrivateLinearRegression(**kw).fit(X, y)
    b = PrivateLinearRegression(**kw).fit(X[:-1], y[:-1])
    assert a.alpha_ == b.alpha_
    _records_equal(a, b)
    assert a.privacy_["n_samples"] == 250


@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_replace_one_n_public_covers_a_dropped_row(estimator):
    """Under replace-one, n_public (the public size before rows with a missing value
    were dropped) normalises the fit: the data set with a row dropped releases the same
    record and alpha_ as the full one."""
    from dperm import PrivateLinearRegression

    (X, y), _ = neighbours()
    if estimator == "classifier":
        make = lambda: PrivateLinearClassifier(classes=[-1, 1], n_public=len(X))  # noqa: E731
    else:
        y = np.clip(X @ np.linspace(1, -1, X.shape[1]), -1, 1)
        make = lambda: PrivateLinearRegression(n_public=len(X))  # noqa: E731
    a, b = make().fit(X, y), make().fit(X[1:], y[1:])
    _records_equal(a, b)
    assert a.privacy_["neighbouring"] == "replace_one" and a.privacy_["n_samples"] == len(X)


def test_release_record_is_immutable_and_holds_plain_values():
    from dperm.privacy.record import ReleaseRecord, record_to_dict

    (X, y), _ = neighbours()
    est = PrivateLinearClassifier(classes=[-1, 1]).fit(X, y)
    rec = est.release_record_
    with pytest.raises(TypeError):
        rec["epsilon"] = 2.0
    with pytest.raises(AttributeError):
        rec.epsilon = 2.0
    est.privacy_["epsilon"] = 99.0                 # a copy: the release is unchanged
    assert est.privacy_["epsilon"] == 1.0
    assert record_to_dict(rec) == est.privacy_ == dict(rec)
    json.dumps(est.privacy_)
    with pytest.raises(TypeError, match="plain public value"):
        rec.replace(alpha=np.ones(3))              # an array of anything is refused
    with pytest.raises(ValueError, match="not part of"):
        ReleaseRecord(layout="classifier", ridge=1.0)


def _cli_set(tmp_path, name, rows, header):
    d = tmp_path / name
    d.mkdir()
    (d / "data.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    return d


def _cli_fit(d, schema_path, *extra):
    assert cli_main(["fit", str(d / "data.csv"), "--schema", str(schema_path),
                     "-o", str(d / "model.json"), *extra]) == 0
    m = json.loads((d / "model.json").read_text())
    m.pop("coef"), m.pop("intercept")
    return m


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cli_missing_drop_releases_nothing_about_the_dropped_row(tmp_path, capsys, task):
    """--missing drop under replace-one: a row replaced by one with a missing cell (so
    dropped) changes nothing in the model file but the coefficients."""
    (X, y), _ = neighbours(n=120, d=3)
    label = (["no", "yes"] if task == "classification" else ["-0.5", "0.5"])
    rows = [",".join(repr(float(v)) for v in x) + "," + label[int(t > 0)] for x, t in zip(X, y)]
    schema = {"numeric": {f"x{j}": [-1, 1] for j in range(3)},
              "label": {"column": "label", **({"classes": ["no", "yes"]}
                                              if task == "classification" else {})}}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    other = list(rows)
    other[0] = "?," + rows[0].split(",", 1)[1]
    extra = ["--missing", "drop", "--epsilon", "0.5"]
    if task == "regression":
        extra += ["--task", "regression", "--label-bound", "1"]
    a = _cli_fit(_cli_set(tmp_path, "a", rows, "x0,x1,x2,label"), tmp_path / "s.json", *extra)
    b = _cli_fit(_cli_set(tmp_path, "b", other, "x0,x1,x2,label"), tmp_path / "s.json", *extra)
    capsys.readouterr()
    assert a == b
    assert a["privacy"]["n_samples"] == a["training"]["n_samples"] == 120


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cli_add_remove_model_holds_n_public_not_the_row_count(tmp_path, capsys, task):
    (X, y), _ = neighbours(n=120, d=3)
    label = (["no", "yes"] if task == "classification" else ["-0.5", "0.5"])
    rows = [",".join(repr(float(v)) for v in x) + "," + label[int(t > 0)] for x, t in zip(X, y)]
    schema = {"numeric": {f"x{j}": [-1, 1] for j in range(3)},
              "label": {"column": "label", **({"classes": ["no", "yes"]}
                                              if task == "classification" else {})}}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    extra = ["--neighbouring", "add_remove", "--n-public", "500"]
    if task == "regression":
        extra += ["--task", "regression", "--label-bound", "1"]
    a = _cli_fit(_cli_set(tmp_path, "a", rows, "x0,x1,x2,label"), tmp_path / "s.json", *extra)
    b = _cli_fit(_cli_set(tmp_path, "b", rows[1:], "x0,x1,x2,label"), tmp_path / "s.json",
                 *extra)
    capsys.readouterr()
    assert a == b
    assert a["training"]["n_samples"] == a["privacy"]["n_samples"] == 500


# ---------------------------------------------------------------------------- every relation
# Issue 29, item 3: fit neighbouring data sets under every relation the guarantee covers
# (a row replaced, added, removed, or given a missing cell) through both estimators (every
# method), private_tuning, estimate_bounds and the command line, and compare EVERYTHING
# released except the noisy output itself: privacy_, the record's repr, alpha_, classes_,
# the parameters and the estimator's repr, the model file (dperm.save_model; dperm fit's)
# without its coefficients, and the accountant's events and labels.
#
# Which relations a configuration covers (docs/privacy_analysis.md, section 15):
#   replace_one              : a row replaced (n public: a row added or removed changes n)
#   replace_one + n_public N : also a row dropped for a missing cell, added or removed
#                              (N fixed: a dropped row is the zero row)
#   add_remove + n_public N  : all four
#   AdaSSP, add_remove       : all four without n_public (its sums need no count)
RELATIONS = ("replace", "add", "remove", "missing")
COVERED = {"replace_one": ("replace",), "replace_one+N": RELATIONS, "add_remove+N": RELATIONS,
           "adassp_add_remove": RELATIONS}
#: AdaSSP's record holds two values of its noisy release itself (like coef_)
NOISY_VALUES = ("lambda_min_noisy", "ridge")


def _base_data(regression, n=240, d=4, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / 2
    s = X @ np.linspace(1, -1, d) + 0.1
    if regression:
        y = np.clip(s, -1, 1)
    elif classes == 2:
        y = np.where(s > 0, 1, -1)
    else:
        y = np.digitize(s, [-0.3, 0.3])
    return X, y


def _neighbour(X, y, relation, regression):
    """(X', y'): (X, y) with row 0 replaced by a far-away row with another label, a row
    added, row 0 removed, or a missing cell put in row 0 (NaN)."""
    far = -3 * X[0] / np.linalg.norm(X[0])
    other = (5.0 if regression else (y[0] + 1) % 3 if y.min() >= 0 and y.max() > 1
             else -y[0])
    if relation == "replace":
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = far, other
    elif relation == "add":
        X2, y2 = np.vstack([X, far]), np.append(y, other)
    elif relation == "remove":
        X2, y2 = X[1:], y[1:]
    else:
        X2, y2 = X.copy(), y.copy()
        X2[0, 1] = np.nan
    return X2, y2


def _drop_missing(X, y):
    """What a user does before fitting: drop the rows with a missing cell."""
    keep = ~np.isnan(X).any(axis=1)
    return X[keep], y[keep]


def _released(est, accountant, path):
    """Everything a fit releases, except the noisy coefficients (and AdaSSP's noisy
    lambda_min and ridge)."""
    rec = est.release_record_
    if rec.mechanism == "adassp":
        rec = rec.replace(**dict.fromkeys(NOISY_VALUES))
    save_model(est, path)
    model = json.loads(path.read_text())
    model.pop("coef"), model.pop("intercept")
    for k in NOISY_VALUES:
        model["privacy"].pop(k, None)
    out = {"privacy_": {k: v for k, v in est.privacy_.items() if k not in NOISY_VALUES},
           "record repr": repr(rec), "model file": model, "repr": repr(est),
           "params": {k: v for k, v in est.get_params().items() if k != "accountant"},
           "events": list(accountant.history), "spent": accountant.spent_epsilon_delta()}
    for k, v in vars(est).items():
        if k.endswith("_") and not k.startswith("_") and k not in (
                "coef_", "intercept_", "fit_diagnostics_", "release_record_"):
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
    return out


def _fit_release(make, X, y, n_read, tmp_path, name):
    """Fit (dropping rows with a missing cell, as a user would) and what it releases."""
    from dperm import BudgetAccountant

    acc = BudgetAccountant(1e6, 0.5)
    Xf, yf = _drop_missing(X, y)
    est = make(n_read).set_params(accountant=acc).fit(Xf, yf)
    return _released(est, acc, tmp_path / f"{name}.json"), est


CLASSIFIER_METHODS = [dict(perturbation="objective"), dict(perturbation="output"),
                      dict(perturbation="objective", delta=1e-6),
                      dict(perturbation="output", delta=1e-6),
                      dict(perturbation="amp", delta=1e-6),
                      dict(perturbation="objective", delta=1e-6, K=3),        # multinomial
                      dict(perturbation="output", loss="huber", K=3)]         # one-vs-rest
REGRESSOR_METHODS = [dict(method="objective"), dict(method="output"), dict(method="auto"),
                     dict(method="objective", delta=1e-6), dict(method="output", delta=1e-6),
                     dict(method="adassp", delta=1e-6)]


def _configs(kw, regression):
    out = ["replace_one", "replace_one+N", "add_remove+N"]
    if kw.get("method") == "adassp":
        out.append("adassp_add_remove")
    return out


def _maker(kw, config, regression):
    kw = dict(kw)
    K = kw.pop("K", 2)

    def make(n_read):
        nb = {"replace_one": dict(), "replace_one+N": dict(n_public=n_read),
              "add_remove+N": dict(neighbouring="add_remove", n_public=n_read),
              "adassp_add_remove": dict(neighbouring="add_remove")}[config]
        if regression:
            return PrivateLinearRegression(epsilon=0.5, **nb, **kw)
        return PrivateLinearClassifier(epsilon=0.5, classes=[-1, 1] if K == 2 else [0, 1, 2],
                                       **nb, **kw)
    return make, K


@pytest.mark.parametrize("regression, kw", [(False, m) for m in CLASSIFIER_METHODS]
                         + [(True, m) for m in REGRESSOR_METHODS],
                         ids=lambda v: str(v) if not isinstance(v, bool) else
                         ("regressor" if v else "classifier"))
def test_every_relation_releases_the_same_through_the_estimators(tmp_path, regression, kw):
    checked = 0
    for config in _configs(kw, regression):
        make, K = _maker(kw, config, regression)
        X, y = _base_data(regression, classes=K)
        n_read = len(X)          # the public count: the rows read, before any drop
        a, est_a = _fit_release(make, X, y, n_read, tmp_path, "a")
        for relation in COVERED[config]:
            X2, y2 = _neighbour(X, y, relation, regression)
            b, est_b = _fit_release(make, X2, y2, n_read, tmp_path, "b")
            assert a.keys() == b.keys()
            for k in a:
                assert a[k] == b[k], (config, relation, k, a[k], b[k])
            # power: the two fits are of different data (the diagnostics tell them apart)
            assert not np.array_equal(est_a.coef_, est_b.coef_)
            checked += 1
    assert checked >= 9


def test_every_relation_check_catches_a_recorded_row_count(tmp_path, monkeypatch):
    """A deliberately broken variant (the record's count read from the rows, as AdaSSP's
    was under add/remove) fails the comparison above."""
    import dperm.sklearn.regressor as reg

    monkeypatch.setattr(reg, "public_count", lambda nb, n_public, n, needs_count=True: n)
    make, _ = _maker(dict(method="adassp", delta=1e-6), "adassp_add_remove", True)
    X, y = _base_data(True)
    a, _ = _fit_release(make, X, y, len(X), tmp_path, "a")
    b, _ = _fit_release(make, *_neighbour(X, y, "remove", True), len(X), tmp_path, "b")
    assert a["privacy_"] != b["privacy_"] and a["model file"] != b["model file"]


def test_every_relation_private_tuning(tmp_path):
    """private_tuning is argued for replace-one (its parts have sizes computed from n):
    neighbours by replacement release the same, and an add/remove estimator is refused
    before the data are read, with the same words for both data sets."""
    X, y = _base_data(False, n=300)
    X2, y2 = _neighbour(X, y, "replace", False)
    grid = [{"alpha": 1e-2}, {"alpha": 1e-1}]
    out = []
    for A, b in ((X, y), (X2, y2)):
        acc = dperm.BudgetAccountant(10.0)
        res = private_tuning(PrivateLinearClassifier(classes=[-1, 1], accountant=acc), A, b,
                             grid, epsilon=1.0)
        out.append({"params": res.params, "train_sizes": res.train_sizes.tolist(),
                    "validation_size": res.validation_size, "epsilon": res.epsilon,
                    "delta": res.delta, "events": acc.history, "privacy_": res.privacy_,
                    "record repr": repr(res.release_record_),
                    "models": [(e.privacy_, repr(e), e.alpha_) for e in res.estimators_]})
    assert out[0] == out[1]
    texts = []
    for A, b in ((X, y), _neighbour(X, y, "remove", False)):
        with pytest.raises(ValueError) as err:
            private_tuning(PrivateLinearClassifier(classes=[-1, 1], neighbouring="add_remove",
                                                   n_public=300), A, b, grid, epsilon=1.0)
        texts.append(str(err.value))
    assert texts[0] == texts[1]


@pytest.mark.parametrize("relation", RELATIONS)
def test_every_relation_estimate_bounds(relation):
    X, y = _base_data(True, n=400)
    X = X * 10 + 50
    X2, _ = _neighbour(X, y, relation, True)
    a = _quiet_bounds(X, 1.0)
    b = _quiet_bounds(X2, 1.0)
    assert a.privacy_ == b.privacy_
    assert repr(a.release_record_) == repr(b.release_record_)
    assert list(a) == list(b)


def test_every_relation_estimate_bounds_frame_with_a_missing_marker():
    """One cell changed to "?" must never silently drop its column from the release
    (issue 29, item 3): without `columns` the frame with the marker is refused, naming
    `columns`; with the public list of columns both release the same record."""
    X, y = _base_data(True, n=400)
    frame = pd.DataFrame(X * 10 + 50, columns=list("abcd"))
    other = frame.astype(object)
    other.iloc[0, 1] = "?"
    with pytest.raises(ValueError, match="columns"):
        _quiet_bounds(other, 1.0)
    cols = list("abcd")
    other = other.replace("?", np.nan).astype(float)
    a = _quiet_bounds_cols(frame, 1.0, cols)
    b = _quiet_bounds_cols(other, 1.0, cols)
    assert a.privacy_ == b.privacy_
    assert list(a) == list(b) == cols


def _quiet_bounds_cols(X, eps, columns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dperm.estimate_bounds(X, eps, columns=columns)


def _quiet_bounds(X, eps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dperm.estimate_bounds(X, eps)


def _csv_rows(X, y, regression):
    rows = []
    for x, t in zip(X, y):
        cells = ["?" if np.isnan(v) else repr(float(v)) for v in x]
        rows.append(",".join(cells) + "," + (repr(float(t)) if regression
                                             else ("yes" if t > 0 else "no")))
    return rows


CLI_CASES = [
    # (relations covered, options)
    (("replace",), ()),
    (("replace", "missing"), ("--missing", "drop")),
    (RELATIONS, ("--missing", "drop", "--neighbouring", "add_remove", "--n-public", "500")),
    (("replace", "missing"), ("--missing", "drop", "--perturbation", "output", "--delta",
                              "1e-6")),
]


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("relations, opts", CLI_CASES)
def test_every_relation_releases_the_same_through_dperm_fit(tmp_path, capsys, task,
                                                           relations, opts):
    regression = task == "regression"
    X, y = _base_data(regression, n=150, d=3)
    schema = {"numeric": {f"x{j}": [-1, 1] for j in range(3)},
              "label": {"column": "label", **({} if regression
                                              else {"classes": ["no", "yes"]})}}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    extra = ["--task", "regression", "--label-bound", "1"] if regression else []

    def fit(name, A, b, more=()):
        d = _cli_set(tmp_path, name, _csv_rows(A, b, regression), "x0,x1,x2,label")
        return _cli_fit(d, tmp_path / "s.json", "--epsilon", "0.5", *opts, *extra, *more)

    a = fit("base", X, y)
    for relation in relations:
        b = fit(relation, *_neighbour(X, y, relation, regression))
        assert a == b, (relation, a, b)
    if not regression and "--missing" in opts:
        # the streamed fit (and a refit from its binary) counts the rows read alike
        more = ["--memory-budget", "64KiB"]
        s = fit("stream", X, y, more)
        t = fit("stream-missing", *_neighbour(X, y, "missing", False), more)
        assert s == t and s["privacy"] == a["privacy"]
    capsys.readouterr()


@pytest.mark.parametrize("relation", RELATIONS)
def test_every_relation_releases_the_same_through_dperm_bounds(tmp_path, capsys, relation):
    X, y = _base_data(True, n=300, d=3)
    X = X * 10 + 50
    out = []
    for name, (A, b) in (("a", (X, y)), ("b", _neighbour(X, y, relation, True))):
        d = _cli_set(tmp_path, name, _csv_rows(A, b, True), "x0,x1,x2,label")
        assert cli_main(["bounds", str(d / "data.csv"), "--epsilon", "1", "--columns",
                         "x0,x1,x2", "--label", "label", "-o", str(d / "s.json")]) == 0
        schema = json.loads((d / "s.json").read_text())
        # the bounds themselves are the noisy release; everything else must agree
        schema["numeric"] = sorted(schema["numeric"])
        text = capsys.readouterr().out
        out.append((schema, text.splitlines()[0]))
    assert out[0] == out[1]
