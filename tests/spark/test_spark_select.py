"""dperm.spark's estimators with alpha="select" (Lambda chosen privately, every run on all
rows): the local rule (dperm.privacy.selection.fit_selected) with each run and the final
model fitted by the Spark steps and scored on the executors.  For the same seed, the
release equals the local fit's -- coefficients (<= 1e-9), ``alpha_`` and the record --
over one partition and two; the accountant is checked for the whole epsilon before any
row is read and charged the local fit's events; the executors' scores (SparkRows.block_sum)
equal the local scores."""
import re
import warnings

import numpy as np
import pytest

import dperm
from dperm import BudgetAccountant, BudgetExceededError
from dperm.data import oracle as _oracle

pytest.importorskip("pyspark")

TOL = 1e-9
#: a seed whose selection draws 3 runs (tests/data/test_dask_select.py checks it)
SEED = 5


@pytest.fixture(scope="module")
def frames(spark_frame, spark_data):
    X, y, t = spark_data
    y3 = np.digitize(X @ np.array([1.0, -0.5, 0.3, 0.2]), [-0.15, 0.15]).astype(np.float64)
    out = {P: spark_frame(X, y, t, y3, partitions=P) for P in (1, 2)}
    yield out, y3
    for df in out.values():
        df.unpersist()


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


def _history(acc):
    """(label, event) of each charge; the final fit's labels name its Lambda, chosen by
    the (unseeded) selection: replaced by a placeholder."""
    return [(re.sub(r"alpha=[-+.0-9e]+", "alpha=<chosen>", lab), ev) for lab, ev in acc.history]


CASES = {
    "binary": ("clf", dict(epsilon=1.0), "label"),
    "ovr": ("clf", dict(epsilon=2.0, classes=[0.0, 1.0, 2.0]), "cls"),
    "regression": ("reg", dict(epsilon=1.0, labelBounds=[-0.5, 1.5]), "target"),
}


def _spark_est(kind, kw, label, **extra):
    from dperm.spark import PrivateLinearClassifier, PrivateLinearRegression

    cls = PrivateLinearClassifier if kind == "clf" else PrivateLinearRegression
    return cls(labelCol=label, alpha="select", **kw, **extra)


def _local_twin(est, **extra):
    return est._local_class(**{**est._local_params(), **extra})


def _labels(case, spark_data, y3):
    X, y, t = spark_data
    return {"label": y, "target": t, "cls": y3}[CASES[case][2]]


@pytest.mark.parametrize("case,P", [("binary", 1), ("binary", 2), ("ovr", 2),
                                    ("regression", 1), ("regression", 2)])
def test_select_equals_the_local_fit(frames, spark_data, case, P):
    dfs, y3 = frames
    kind, kw, label = CASES[case]
    est = _spark_est(kind, kw, label, randomState=SEED)
    model = _quiet(lambda: est.fit(dfs[P]))
    local = _quiet(lambda: _local_twin(est).fit(spark_data[0], _labels(case, spark_data, y3)))
    got = model.localModel
    np.testing.assert_allclose(got.coef_, local.coef_, rtol=0, atol=TOL)
    np.testing.assert_allclose(got.intercept_, local.intercept_, rtol=0, atol=TOL)
    assert got.alpha_ == local.alpha_
    assert model.privacy == local.privacy_
    assert model.privacy["epsilon_total"] == kw["epsilon"]
    assert model.getAlpha() == "select"


def test_select_charged_as_the_local_fit(frames, spark_data, monkeypatch):
    """The accountant: the selection's share then the final fit's events, with the local
    fit's labels (the chosen Lambda aside); the model carries no accountant.  (The
    events do not depend on the number of runs, drawn afresh without a seed: one run
    here, on both sides, to bound the test's time.)"""
    from dperm.privacy import selection as S

    monkeypatch.setattr(S, "SELECT_EXPECTED_RUNS", 1.0)
    dfs, y3 = frames
    kind, kw, label = CASES["ovr"]
    spark_acc, local_acc = BudgetAccountant(5.0), BudgetAccountant(5.0)
    model = _quiet(lambda: _spark_est(kind, kw, label, accountant=spark_acc).fit(dfs[2]))
    _quiet(lambda: _local_twin(_spark_est(kind, kw, label), accountant=local_acc).fit(
        spark_data[0], y3))
    assert _history(spark_acc) == _history(local_acc)
    assert len(spark_acc.history) == 1 + 3 and spark_acc.spent == pytest.approx(2.0)
    assert not model.hasParam("accountant")


class _NoRows:
    """Stands in for SparkRows: reading the rows is a test failure."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the rows were read")


def test_select_refusals_before_reading(spark, frames, spark_data, monkeypatch):
    """An overspending select fit, delta > 0, perturbation "none", a seed with an
    accountant: the local estimator's error and message, not one Spark job, nothing
    spent."""
    import dperm.spark._estimators as E

    dfs, y3 = frames
    X, y, t = spark_data
    kind, kw, label = CASES["binary"]
    acc = BudgetAccountant(1.0)
    acc.spend(0.5, label="earlier")
    refusals = [(dict(accountant=acc), BudgetExceededError),
                (dict(delta=1e-6), ValueError),
                (dict(perturbation="none"), ValueError),
                (dict(accountant=BudgetAccountant(5.0), randomState=1), ValueError)]
    monkeypatch.setattr(E, "SparkRows", _NoRows)
    sc = spark.sparkContext
    for extra, error in refusals:
        est = _spark_est(kind, kw, label, **extra)
        with pytest.raises(error) as local_err:
            _quiet(lambda est=est: _local_twin(est).fit(X, y))
        sc.setJobGroup("dperm-select-test", "jobs of one call")
        try:
            with pytest.raises(error) as err:
                _quiet(lambda est=est: est.fit(dfs[2]))
        finally:
            jobs = list(sc.statusTracker().getJobIdsForGroup("dperm-select-test"))
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert str(err.value) == str(local_err.value)
        assert jobs == []
    assert len(acc.history) == 1


def test_alpha_param_accepts_select_only_among_words():
    from dperm.spark import PrivateLinearRegression

    assert PrivateLinearRegression(alpha="select").getAlpha() == "select"
    with pytest.raises(TypeError, match="'auto', 'select'"):
        PrivateLinearRegression(alpha="best")


def test_executor_scores_equal_the_local_scores(frames, spark_data):
    """SparkRows.block_sum as the selection scores runs: the mistakes of a classifier
    (two classes and three, the labels mapped back from their stored form) and a
    regression's clipped absolute error (labelBounds' centre put back) on the executors
    equal the local scores."""
    from dperm.data.spark_rows import SparkRows

    dfs, y3 = frames
    X, y, t = spark_data
    df = dfs[2]
    clf = _quiet(lambda: dperm.PrivateLinearClassifier(classes=[0.0, 1.0], alpha=0.05,
                                                       random_state=0).fit(X, y))
    ovr = _quiet(lambda: dperm.PrivateLinearClassifier(classes=[0.0, 1.0, 2.0], alpha=0.05,
                                                       random_state=0).fit(X, y3))
    reg = _quiet(lambda: dperm.PrivateLinearRegression(label_bounds=(-0.5, 1.5), alpha=0.05,
                                                       random_state=0).fit(X, t))
    for est, labels, kw in ((clf, y, dict(labelCol="label", task="binary", classes=(0.0, 1.0))),
                            (ovr, y3, dict(labelCol="cls", task="multiclass",
                                           classes=(0.0, 1.0, 2.0)))):
        kw = dict(kw)
        rows = SparkRows(df, "features", kw.pop("labelCol"), **kw)
        try:
            want = int(np.count_nonzero(est.predict(X) != labels))
            assert 0 < want < len(labels)
            assert _oracle.count_mistakes(est, rows, None) == want
        finally:
            rows.close()
    rows = SparkRows(df, "features", "target", task="regression", label_bound=1.0,
                     label_centre=0.5)
    try:
        lo, hi = -0.5, 1.5
        want = _oracle.clipped_abs_error(reg, X, t, lo, hi)
        assert _oracle.clipped_abs_error(reg, rows, None, lo, hi) == pytest.approx(want,
                                                                                  rel=1e-12)
    finally:
        rows.close()
