"""The multinomial (softmax) model on Spark: the softmax pass per partition on the executors
(dperm.data.spark_rows, added on the driver in the fixed tree order) equals the local pass;
dperm.spark's PrivateLinearClassifier with K = 3 classes routes as the local estimator
(one multinomial model for the logistic loss with delta > 0 or no noise) and gives its
coefficients (<= 1e-9, same seed) and the identical record, on 1, 2 and 8 partitions;
multiClass="ovr" keeps one-vs-rest; a partition dropped or counted twice is never turned
into a model."""
import os
import shutil
import warnings

import numpy as np
import pytest

import dperm

pytest.importorskip("pyspark")

PARTITIONS = [1, 2, 8]
MODES = {
    "objective": dict(perturbation="objective", epsilon=1.0, delta=1e-5),
    "output": dict(perturbation="output", epsilon=1.0, delta=1e-5),
    "amp": dict(perturbation="amp", epsilon=1.0, delta=1e-5),
    "none": dict(perturbation="none"),
}
CLASSES = [0.0, 1.0, 2.0]
TOL = 1e-9


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the seeded-noise PrivacyLeakWarning, on purpose
        return fit()


def _rows(df):
    from dperm.data.spark_rows import SparkRows

    return SparkRows(df, "features", "cls", task="multiclass", classes=CLASSES)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_the_softmax_sums_equal_the_local_pass(frames, spark_data, partitions):
    """The data term and its gradient at random W (rows clipped, an intercept column)
    equal the local pass's on the same rows: a partition dropped or counted twice would
    be off by its share."""
    from dperm.data.design import WithInterceptColumn
    from dperm.data.oracle import softmax_oracle
    from dperm.data.validation import bound_rows

    X = spark_data[0]
    y3 = frames.y3.astype(np.int64)
    rows = _rows(frames(partitions))
    assert rows.n_partitions == partitions
    S = WithInterceptColumn(bound_rows(rows, 0.8, "clip"), 0.8)
    L = WithInterceptColumn(bound_rows(X, 0.8, "clip"), 0.8)
    W = np.random.default_rng(partitions).standard_normal((2, 3, X.shape[1] + 1))
    F, G = softmax_oracle(S, None, 3).sums(W)
    Fl, Gl = softmax_oracle(L, y3, 3).sums(W)
    np.testing.assert_allclose(F, Fl, rtol=1e-13)
    np.testing.assert_allclose(G, Gl, rtol=1e-12, atol=1e-13)
    # the tolerance sees one partition's share (of 8: about 75 of the 600 rows); here
    # 60 rows fewer, or 60 twice, move the sums far more
    for idx in (np.r_[0:540], np.r_[0:600, 0:60]):
        Li = WithInterceptColumn(bound_rows(X[idx], 0.8, "clip"), 0.8)
        Fi = softmax_oracle(Li, y3[idx], 3).sums(W)[0]
        assert np.all(np.abs(Fi - Fl) > 1e-9 * np.abs(Fl))
    rows.close()


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("mode", list(MODES))
def test_multinomial_fit_equals_the_local_fit(frames, spark_data, mode, partitions):
    from dperm.spark import PrivateLinearClassifier

    X = spark_data[0]
    kw = MODES[mode]
    local = _quiet(lambda: dperm.PrivateLinearClassifier(classes=CLASSES, random_state=8,
                                                         **kw).fit(X, frames.y3))
    assert local.privacy_["multiclass"] == "multinomial"
    model = _quiet(lambda: PrivateLinearClassifier(labelCol="cls", classes=CLASSES,
                                                   randomState=8, **kw).fit(frames(partitions)))
    np.testing.assert_allclose(model.coefficientMatrix.toArray(), local.coef_, rtol=0, atol=TOL)
    np.testing.assert_allclose(model.interceptVector.toArray(), local.intercept_, rtol=0,
                               atol=TOL)
    assert model.privacy == local.privacy_
    assert model.numClasses == 3
    if partitions == 2 and mode == "objective":
        # transform: the local model's predictions and predict_proba (the softmax)
        out = model.transform(frames(partitions)).toPandas()
        Xo = np.stack([v.toArray() for v in out["features"]])
        np.testing.assert_array_equal(out["prediction"].to_numpy(), local.predict(Xo))
        raw = np.stack([v.toArray() for v in out["rawPrediction"]])
        np.testing.assert_allclose(raw, local.decision_function(Xo), rtol=1e-12, atol=1e-14)
        proba = np.stack([v.toArray() for v in out["probability"]])
        np.testing.assert_allclose(proba, local.predict_proba(Xo), rtol=1e-12, atol=1e-15)
        with pytest.raises(ValueError, match="multinomial model.*coefficientMatrix"):
            _ = model.coefficients


def test_saved_multinomial_model_loads_with_its_record(frames, tmp_path):
    from dperm.spark import PrivateLinearClassificationModel, PrivateLinearClassifier

    df = frames(2)
    model = _quiet(lambda: PrivateLinearClassifier(labelCol="cls", classes=CLASSES, delta=1e-5,
                                                   randomState=3).fit(df))
    path = str(tmp_path / "softmax_model")
    model.write().save(path)
    back = PrivateLinearClassificationModel.load(path)
    assert back.privacy == model.privacy and back.privacy["multiclass"] == "multinomial"
    np.testing.assert_array_equal(back.coefficientMatrix.toArray(),
                                  model.coefficientMatrix.toArray())
    a = model.transform(df).select("probability").toPandas()["probability"]
    b = back.transform(df).select("probability").toPandas()["probability"]
    assert all(np.array_equal(u.toArray(), v.toArray()) for u, v in zip(a, b))


def test_one_vs_rest_when_asked_for(frames):
    """multiClass="ovr": one-vs-rest with epsilon / K and delta / K per model, where
    "auto" (the default, as the local estimator) fits the multinomial model; with
    delta = 0 both are one-vs-rest, the same bits."""
    from dperm.spark import PrivateLinearClassifier

    df = frames(2)
    kw = dict(labelCol="cls", classes=CLASSES, randomState=4, epsilon=1.0)
    ovr = _quiet(lambda: PrivateLinearClassifier(delta=1e-5, multiClass="ovr", **kw).fit(df))
    auto = _quiet(lambda: PrivateLinearClassifier(delta=1e-5, **kw).fit(df))
    assert auto.privacy["multiclass"] == "multinomial"
    assert ovr.privacy["multiclass"] == "ovr"
    assert ovr.privacy["epsilon"] == pytest.approx(1.0 / 3)
    assert ovr.privacy["delta"] == pytest.approx(1e-5 / 3)
    assert ovr.privacy["epsilon_total"] == 1.0 and ovr.privacy["loss"] == "logistic"
    assert ovr.coefficientMatrix.toArray().shape == (3, 4)
    pure = [_quiet(lambda m=m: PrivateLinearClassifier(multiClass=m, **kw).fit(df))
            for m in ("auto", "ovr")]
    assert pure[0].privacy == pure[1].privacy and pure[0].privacy["multiclass"] == "ovr"
    assert np.array_equal(pure[0].coefficientMatrix.toArray(), pure[1].coefficientMatrix.toArray())
    with pytest.raises(ValueError, match="multiClass: 'softmax' is not valid"):
        PrivateLinearClassifier(multiClass="softmax", **kw).fit(df)


def test_a_partition_dropped_or_counted_twice_is_refused(frames, monkeypatch):
    from dperm.data import spark_rows

    df = frames(8)
    real_take = spark_rows._Source._take

    def twice(self, got, r):
        real_take(self, got, r)
        real_take(self, got, r)
    monkeypatch.setattr(spark_rows._Source, "_take", twice)
    from dperm.spark import PrivateLinearClassifier

    fit = PrivateLinearClassifier(labelCol="cls", classes=CLASSES, delta=1e-5, randomState=1)
    with pytest.raises(spark_rows.SparkFitError, match="contributed twice"):
        _quiet(lambda: fit.fit(df))

    def dropped(self, got, r):
        if int(r[0]) != self.parts[3]:
            real_take(self, got, r)
    monkeypatch.setattr(spark_rows._Source, "_take", dropped)
    with pytest.raises(spark_rows.SparkFitError, match="did not answer"):
        _quiet(lambda: fit.fit(df))


def test_a_lost_block_is_rebuilt_for_the_softmax_pass(spark, frames):
    """Blocks removed from the executor host are read again from the DataFrame by the
    softmax pass: the same sums, the same bits."""
    from pyspark import SparkFiles

    from dperm.data.oracle import softmax_oracle

    rows = _rows(frames(3)).bound_rows(1.0, "clip")
    W = np.random.default_rng(0).standard_normal((2, 3, 4))
    oracle = softmax_oracle(rows, None, 3)
    F1, G1 = oracle.sums(W)
    shutil.rmtree(os.path.join(SparkFiles.getRootDirectory(), f"dperm-{rows._source.key}"))
    F2, G2 = oracle.sums(W)
    assert np.array_equal(F1, F2) and np.array_equal(G1, G2)
    rows.close()


def test_rows_carry_the_labels_of_their_task(frames):
    """Multiclass rows without a class are the softmax model's, not a binary problem;
    a class picked (one-vs-rest's) is not the softmax model's."""
    from dperm.data.oracle import softmax_oracle
    from dperm.optim import erm

    rows = _rows(frames(2))
    with pytest.raises(TypeError, match="binary loss needs one class"):
        erm.minimize(rows, None, alpha=0.1)
    with pytest.raises(TypeError, match="all classes"):
        softmax_oracle(rows.for_class(1), None, 3)
    with pytest.raises(ValueError, match="n_classes: 4 classes asked for"):
        softmax_oracle(rows, None, 4)
    rows.close()
