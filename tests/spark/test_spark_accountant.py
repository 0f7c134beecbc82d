"""dperm.spark's estimators with an accountant, against the local estimators with the
same parameters: the same events and labels in the accountant's history (binary,
one-vs-rest, Gaussian, labelBounds, AdaSSP), the same refusal (type and message) when the
fit would overspend -- raised before any row is read (no SparkRows built; no Spark job at
all for a pure-epsilon fit) -- and MLlib's Param conventions (getter, setter, copies share
the ledger, never saved).  estimate_bounds: the local function's charge and label."""
import warnings

import numpy as np
import pytest

import dperm
from dperm import BudgetAccountant, BudgetExceededError

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def frame(spark_frame, spark_data):
    X, y, t = spark_data
    y3 = np.digitize(X @ np.array([1.0, -0.5, 0.3, 0.2]), [-0.15, 0.15]).astype(np.float64)
    df = spark_frame(X, y, t, y3, partitions=2)
    df.y3 = y3
    yield df
    df.unpersist()


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


def _local_twin(est, accountant):
    """The local estimator with the Spark estimator's parameters and `accountant`."""
    return est._local_class(**{**est._local_params(), "accountant": accountant})


def _history(acc):
    return [(label, ev) for label, ev in acc.history]


CASES = {
    "binary-pure": ("clf", dict(epsilon=0.5), "label"),
    "binary-output-gauss": ("clf", dict(epsilon=0.5, delta=1e-6, perturbation="output"),
                            "label"),
    "ovr-pure": ("clf", dict(epsilon=0.9, classes=[0.0, 1.0, 2.0]), "cls"),
    "ovr-gauss-huber": ("clf", dict(epsilon=0.9, delta=1e-6, loss="huber",
                                    classes=[0.0, 1.0, 2.0]), "cls"),
    "regression-gauss-labelbounds": ("reg", dict(epsilon=0.5, delta=1e-6,
                                                 labelBounds=[-1.0, 1.0]), "target"),
    "adassp": ("reg", dict(epsilon=0.5, delta=1e-6, method="adassp", labelBound=1.0),
               "target"),
}


def _spark_est(kind, kw, label, **extra):
    from dperm.spark import PrivateLinearClassifier, PrivateLinearRegression

    cls = PrivateLinearClassifier if kind == "clf" else PrivateLinearRegression
    return cls(labelCol=label, **kw, **extra)


@pytest.mark.parametrize("case", list(CASES))
def test_charged_as_the_local_estimator(frame, spark_data, case):
    """Each release is charged once, with the events and labels the local estimator
    with the same parameters records (K events for K one-vs-rest models); the model
    carries no accountant."""
    kind, kw, label = CASES[case]
    X, y, t = spark_data
    ys = {"label": y, "target": t, "cls": frame.y3}[label]
    budget = (2.0, 1e-4)
    spark_acc, local_acc = BudgetAccountant(*budget), BudgetAccountant(*budget)
    est = _spark_est(kind, kw, label, accountant=spark_acc)
    assert est.getAccountant() is spark_acc
    model = _quiet(lambda: est.fit(frame))
    _quiet(lambda: _local_twin(est, local_acc).fit(X, ys))
    assert _history(spark_acc) == _history(local_acc)
    assert len(spark_acc.history) == (3 if "ovr" in case else 1)
    assert spark_acc.spent_epsilon_delta() == local_acc.spent_epsilon_delta()
    assert not model.hasParam("accountant")
    # a second fit is charged again, once
    _quiet(lambda: est.fit(frame))
    assert len(spark_acc.history) == 2 * (3 if "ovr" in case else 1)


class _NoRows:
    """Stands in for SparkRows: reading the rows is a test failure."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the rows were read")


def _jobs_run(spark, fn):
    sc = spark.sparkContext
    sc.setJobGroup("dperm-accountant-test", "jobs of one call")
    try:
        fn()
    finally:
        jobs = list(sc.statusTracker().getJobIdsForGroup("dperm-accountant-test"))
        sc.setLocalProperty("spark.jobGroup.id", None)
    return jobs


@pytest.mark.parametrize("case", ["binary-pure", "ovr-pure", "ovr-gauss-huber",
                                  "regression-gauss-labelbounds", "adassp"])
def test_an_overspending_fit_reads_nothing(spark, frame, spark_data, case, monkeypatch):
    """Refused before the rows are read, with the local estimator's error and message;
    nothing spent; not one Spark job.  delta > 0: the events need the public count
    (nPublic here) and the features' width (here from the column's ML attributes, as
    VectorAssembler writes them)."""
    import dperm.spark._estimators as E

    kind, kw, label = CASES[case]
    X, y, t = spark_data
    ys = {"label": y, "target": t, "cls": frame.y3}[label]
    df = frame
    if "delta" in kw:
        kw = dict(kw, nPublic=len(ys))
        df = frame.withMetadata("features", {"ml_attr": {"num_attrs": X.shape[1]}})
    spark_acc = BudgetAccountant(0.6, 1e-4)
    local_acc = BudgetAccountant(0.6, 1e-4)
    for acc in (spark_acc, local_acc):
        acc.spend(0.3, label="earlier")
    est = _spark_est(kind, kw, label, accountant=spark_acc)
    with pytest.raises(BudgetExceededError) as local_err:
        _quiet(lambda: _local_twin(est, local_acc).fit(X, ys))
    monkeypatch.setattr(E, "SparkRows", _NoRows)
    errors = []

    def fit():
        with pytest.raises(BudgetExceededError) as err:
            _quiet(lambda: est.fit(df))
        errors.append(err)
    jobs = _jobs_run(spark, fit)
    assert str(errors[0].value) == str(local_err.value)
    assert _history(spark_acc) == _history(local_acc) and len(spark_acc.history) == 1
    assert jobs == []


def test_overspending_gaussian_fit_without_npublic(spark, frame, spark_data, monkeypatch):
    """delta > 0, replace_one without nPublic: the events need the row count, read by a
    count job (and the width) -- never the rows themselves; the local refusal's message."""
    import dperm.spark._estimators as E

    X, _, t = spark_data
    kind, kw, label = CASES["regression-gauss-labelbounds"]
    spark_acc, local_acc = BudgetAccountant(0.4, 1e-4), BudgetAccountant(0.4, 1e-4)
    est = _spark_est(kind, kw, label, accountant=spark_acc)
    with pytest.raises(BudgetExceededError) as local_err:
        _quiet(lambda: _local_twin(est, local_acc).fit(X, t))
    monkeypatch.setattr(E, "SparkRows", _NoRows)
    with pytest.raises(BudgetExceededError) as err:
        _quiet(lambda: est.fit(frame))
    assert str(err.value) == str(local_err.value)
    assert spark_acc.history == []


def test_refusals_of_the_local_estimator_before_reading(frame, spark_data, monkeypatch):
    """A non-private fit with an accountant, a seed with an accountant: the local
    estimator's errors, before any row is read."""
    import dperm.spark._estimators as E
    from dperm.spark import PrivateLinearClassifier

    X, y, _ = spark_data
    acc = BudgetAccountant(5.0)
    monkeypatch.setattr(E, "SparkRows", _NoRows)
    for kw, error in ((dict(perturbation="none"), BudgetExceededError),
                      (dict(randomState=3), ValueError)):
        est = PrivateLinearClassifier(accountant=acc, **kw)
        with pytest.raises(error) as local_err:
            _local_twin(est, acc).fit(X, y)
        with pytest.raises(error) as err:
            est.fit(frame)
        assert str(err.value) == str(local_err.value)
    assert acc.history == []


def test_accountant_param_conventions(spark, frame, tmp_path):
    """getAccountant / setAccountant, a type check naming the parameter; copy(), a fit
    with a param map and a Pipeline share the one ledger (never a copy of it); save()
    leaves it out (runtime state), load() gives an estimator without one and every
    other parameter back."""
    from pyspark.ml import Pipeline
    from pyspark.ml.util import DefaultParamsReader

    from dperm.spark import PrivateLinearClassifier, PrivateLinearRegression

    acc = BudgetAccountant(3.0)
    est = PrivateLinearClassifier(epsilon=0.5)
    assert est.getAccountant() is None
    assert est.setAccountant(acc) is est and est.getAccountant() is acc
    with pytest.raises(TypeError, match="accountant"):
        PrivateLinearRegression(accountant=1.0)
    with pytest.raises(TypeError, match="accountant"):
        est.setAccountant("budget")
    assert est.copy().getAccountant() is acc
    _quiet(lambda: est.fit(frame, {est.epsilon: 0.25}))
    assert acc.spent == pytest.approx(0.25)
    _quiet(lambda: Pipeline(stages=[est]).fit(frame))
    assert acc.spent == pytest.approx(0.75) and len(acc.history) == 2

    path = str(tmp_path / "estimator")
    est.setDataNorm(2.0)
    est.write().save(path)
    meta = DefaultParamsReader.loadMetadata(path, spark.sparkContext)
    assert "accountant" not in meta["paramMap"] and meta["paramMap"]["epsilon"] == 0.5
    back = PrivateLinearClassifier.load(path)
    assert back.getAccountant() is None
    assert back.getEpsilon() == 0.5 and back.getDataNorm() == 2.0
    pipe_path = str(tmp_path / "pipeline")
    Pipeline(stages=[est]).write().save(pipe_path)
    assert Pipeline.load(pipe_path).getStages()[0].getAccountant() is None


def test_estimate_bounds_charges_as_the_local_function(spark, monkeypatch):
    """dperm.spark.estimate_bounds: the local function's event and label; a seed with an
    accountant refused, as locally, before the job."""
    import dperm.spark._bounds as Bm
    from dperm.spark import estimate_bounds

    rng = np.random.default_rng(1)
    cols = {"a": rng.normal(size=300) * 10, "b": rng.uniform(0, 50, size=300)}
    df = spark.createDataFrame([(float(a), float(b)) for a, b in zip(cols["a"], cols["b"])],
                               "a double, b double")
    spark_acc, local_acc = BudgetAccountant(2.0), BudgetAccountant(2.0)
    kw = dict(bounds_range=(-100, 100))
    _quiet(lambda: estimate_bounds(df, 0.7, columns=["a", "b"], accountant=spark_acc, **kw))
    _quiet(lambda: dperm.estimate_bounds(cols, 0.7, columns=["a", "b"], accountant=local_acc,
                                         **kw))
    assert _history(spark_acc) == _history(local_acc) and len(spark_acc.history) == 1

    def no_job(*args, **kwargs):
        raise AssertionError("the rows were read")
    monkeypatch.setattr(Bm, "column_counts", no_job)
    with pytest.raises(ValueError, match="random_state") as err:
        estimate_bounds(df, 0.7, columns=["a"], accountant=spark_acc, random_state=0)
    with pytest.raises(ValueError) as local_err:
        dperm.estimate_bounds(cols, 0.7, columns=["a"], accountant=local_acc, random_state=0)
    assert str(err.value) == str(local_err.value)
    with pytest.raises(BudgetExceededError):
        estimate_bounds(df, 1.5, columns=["a"], accountant=spark_acc)
    assert len(spark_acc.history) == 1


def test_multinomial_and_forced_one_vs_rest_charged_as_planned(frame, spark_data, monkeypatch):
    """K > 2 with the logistic loss and delta > 0 (where dperm.spark fits the multinomial
    model, with the multiClass parameter): charged the local estimator's one event; with
    multiClass='ovr' the K one-vs-rest events, and the check before reading plans the
    same events as the fit itself."""
    from dperm.spark import PrivateLinearClassifier

    if not PrivateLinearClassifier().hasParam("multiClass"):
        pytest.skip("this dperm.spark fits no multinomial model (no multiClass parameter)")
    X = spark_data[0]
    a1, a2 = BudgetAccountant(3.0, 1e-4), BudgetAccountant(3.0, 1e-4)
    kw = dict(epsilon=1.0, delta=1e-6, classes=[0.0, 1.0, 2.0], labelCol="cls")
    est = PrivateLinearClassifier(accountant=a1, **kw)
    model = _quiet(lambda: est.fit(frame))
    assert model.privacy["multiclass"] == "multinomial"
    _quiet(lambda: _local_twin(est, a2).fit(X, frame.y3))
    assert _history(a1) == _history(a2) and len(a1.history) == 1

    checked = []
    check_all = BudgetAccountant.check_all

    def spy(self, events):
        checked.append(list(events))
        return check_all(self, events)
    monkeypatch.setattr(BudgetAccountant, "check_all", spy)
    a3 = BudgetAccountant(3.0, 1e-4)
    model = _quiet(lambda: PrivateLinearClassifier(accountant=a3, multiClass="ovr", **kw)
                   .fit(frame))
    assert model.privacy["multiclass"] == "ovr" and len(a3.history) == 3
    assert len(checked) == 2 and checked[0] == checked[1] == [ev for _, ev in a3.history]
