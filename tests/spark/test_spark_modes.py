"""dperm.spark's estimators against the local ones, every fit mode on 1, 2 and 8
partitions: the coefficients and intercept (<= 1e-9) and the release record (identical)
of dperm.PrivateLinearClassifier / PrivateLinearRegression on the same rows with the
same seed -- objective and output perturbation, pure and (epsilon, delta), the
non-private fit; AdaSSP and label_bounds for regression; K > 2 classes one-vs-rest (the
multinomial model: test_spark_softmax.py)."""
import warnings

import numpy as np
import pytest

import dperm

pytest.importorskip("pyspark")

PARTITIONS = [1, 2, 8]
PURE, GAUSS = dict(epsilon=1.0), dict(epsilon=1.0, delta=1e-5)
CLASSIFIER_MODES = {
    "objective-pure": dict(perturbation="objective", **PURE),
    "objective-gauss": dict(perturbation="objective", **GAUSS),
    "output-pure": dict(perturbation="output", **PURE),
    "output-gauss": dict(perturbation="output", **GAUSS),
    "none": dict(perturbation="none"),
}
REGRESSION_MODES = {
    "objective-pure": dict(method="objective", **PURE),
    "objective-gauss": dict(method="objective", **GAUSS),
    "output-pure": dict(method="output", **PURE),
    "output-gauss": dict(method="output", **GAUSS),
    "adassp": dict(method="adassp", **GAUSS),
    "none": dict(method="none"),
}
TOL = 1e-9


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the seeded-noise PrivacyLeakWarning, on purpose
        return fit()


def _same(model, local, multi=False):
    if multi:
        np.testing.assert_allclose(model.coefficientMatrix.toArray(), local.coef_, rtol=0,
                                   atol=TOL)
        np.testing.assert_allclose(model.interceptVector.toArray(), local.intercept_, rtol=0,
                                   atol=TOL)
    else:
        coef = local.coef_.reshape(-1)
        np.testing.assert_allclose(model.coefficients.toArray(), coef, rtol=0, atol=TOL)
        assert abs(model.intercept - float(np.reshape(local.intercept_, -1)[0])) <= TOL
    assert model.privacy == local.privacy_


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("mode", list(CLASSIFIER_MODES))
def test_classifier_mode_equals_the_local_fit(frames, spark_data, mode, partitions):
    from dperm.spark import PrivateLinearClassifier

    X, y, _ = spark_data
    kw = CLASSIFIER_MODES[mode]
    local = _quiet(lambda: dperm.PrivateLinearClassifier(classes=[0.0, 1.0], random_state=11,
                                                         **kw).fit(X, y))
    model = _quiet(lambda: PrivateLinearClassifier(randomState=11, **kw).fit(frames(partitions)))
    _same(model, local)
    assert model.privacy["delta"] == kw.get("delta", 0.0)


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("mode", list(REGRESSION_MODES))
def test_regression_mode_equals_the_local_fit(frames, spark_data, mode, partitions):
    from dperm.spark import PrivateLinearRegression

    X, _, t = spark_data
    kw = REGRESSION_MODES[mode]
    local = _quiet(lambda: dperm.PrivateLinearRegression(random_state=5, **kw).fit(X, t))
    model = _quiet(lambda: PrivateLinearRegression(randomState=5, labelCol="target", **kw)
                   .fit(frames(partitions)))
    _same(model, local)
    assert model.privacy["task"] == "regression"
    assert model.privacy["method"] == kw["method"]


@pytest.mark.parametrize("method, partitions", [("objective", 2), ("adassp", 8)])
def test_regression_label_bounds_equal_the_local_fit(frames, spark_data, method, partitions):
    """labelBounds = [low, high]: the targets centred on the public midpoint on the
    executors, the centre added back to the intercept and recorded, as locally; targets
    beyond the bounds are clipped (and warned about) alike."""
    from dperm.exceptions import ClippingWarning
    from dperm.spark import PrivateLinearRegression

    X, _, t = spark_data
    t = t + 2.0                               # the frame's "target" column, shifted below
    kw = dict(method=method, epsilon=1.0, delta=1e-5)
    local = _quiet(lambda: dperm.PrivateLinearRegression(random_state=4, label_bounds=(1.6, 2.8),
                                                         **kw).fit(X, t))
    from pyspark.sql import functions as F

    df = frames(partitions).withColumn("target", F.col("target") + 2.0)
    est = PrivateLinearRegression(randomState=4, labelCol="target", labelBounds=[1.6, 2.8], **kw)
    with pytest.warns(ClippingWarning, match=r"label_bounds = \[1.6, 2.8\]"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)
            model = est.fit(df)
    _same(model, local)
    assert model.privacy["label_centre"] == 2.2 and model.privacy["label_bound"] == \
        pytest.approx(0.6)
    with pytest.raises(ValueError, match="give one of them"):
        PrivateLinearRegression(labelBound=1.0, labelBounds=[0.0, 1.0]).fit(df)


@pytest.mark.parametrize("partitions, kw", [(1, dict(epsilon=1.0)),
                                            (3, dict(epsilon=1.0, delta=1e-5, loss="huber")),
                                            (2, dict(perturbation="none", loss="huber"))])
def test_multiclass_one_vs_rest_equals_the_local_fit(frames, spark_data, partitions, kw):
    """K = 3 classes: one-vs-rest, epsilon / 3 (and delta / 3) per model, as locally;
    the model's transform predicts as the local model (argmax of the K scores) and
    gives its predict_proba (the logistic loss)."""
    from dperm.spark import PrivateLinearClassifier

    X = spark_data[0]
    y3 = frames.y3
    classes = [0.0, 1.0, 2.0]
    local = _quiet(lambda: dperm.PrivateLinearClassifier(classes=classes, random_state=8,
                                                         **kw).fit(X, y3))
    model = _quiet(lambda: PrivateLinearClassifier(labelCol="cls", classes=classes,
                                                   randomState=8, **kw).fit(frames(partitions)))
    _same(model, local, multi=True)
    assert model.privacy["multiclass"] == "ovr" and model.numClasses == 3
    with pytest.raises(ValueError, match="one-vs-rest models; use coefficientMatrix"):
        _ = model.coefficients
    out = model.transform(frames(partitions)).toPandas()
    Xo = np.stack([v.toArray() for v in out["features"]])
    np.testing.assert_array_equal(out["prediction"].to_numpy(), local.predict(Xo))
    raw = np.stack([v.toArray() for v in out["rawPrediction"]])
    np.testing.assert_allclose(raw, local.decision_function(Xo), rtol=1e-12, atol=1e-14)
    if local.loss == "logistic":
        proba = np.stack([v.toArray() for v in out["probability"]])
        np.testing.assert_allclose(proba, local.predict_proba(Xo), rtol=1e-12, atol=1e-15)


def test_adassp_statistics_are_one_pass(spark, frames, spark_data, monkeypatch):
    """AdaSSP's X^T X and X^T y: one pass over the executors (no rows on the driver),
    equal to the local sums; bounds violated on the executors are refused."""
    from dperm.data import spark_rows
    from dperm.data.spark_rows import SparkRows
    from dperm.spark import PrivateLinearRegression

    X, _, t = spark_data
    passes = []
    real = spark_rows._Source.reduce

    def reduce(self, method, *args):
        passes.append(method)
        return real(self, method, *args)
    monkeypatch.setattr(spark_rows._Source, "reduce", reduce)
    _quiet(lambda: PrivateLinearRegression(method="adassp", delta=1e-5, labelCol="target",
                                           randomState=1).fit(frames(8)))
    assert passes == ["gram"]
    monkeypatch.undo()
    rows = SparkRows(frames(8), "features", "target", task="regression", label_bound=1.0)
    gram, xty = rows.sufficient_statistics(1.0, 1.0)
    np.testing.assert_allclose(gram, X.T @ X, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(xty, X.T @ np.clip(t, -1, 1), rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match=r"X, partition \d+: row \d+ has norm above data_norm=0.5"):
        rows.sufficient_statistics(0.5, 1.0)
    with pytest.raises(ValueError, match=r"y, partition \d+: .*label_bound=0.1"):
        rows.sufficient_statistics(1.0, 0.1)
    rows.close()
