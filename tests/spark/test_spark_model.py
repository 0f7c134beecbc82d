"""dperm.spark's models: transform() as the local model predicts, in an MLlib Pipeline,
saved and loaded (public values only); neighbouring data give identical releases
records; bad input is refused with the row, partition and column named."""
import json
import os
import warnings

import numpy as np
import pytest

pytest.importorskip("pyspark")


def test_pipeline_transform_save_and_load(spark, spark_data, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import VectorAssembler

    from dperm.spark import PrivateLinearClassifier

    X, y, _ = spark_data
    X = X * 1.5   # some rows over dataNorm=1: clipped in training and prediction alike
    cols = [f"x{j}" for j in range(X.shape[1])]
    df = spark.createDataFrame([tuple(map(float, X[i])) + (float(y[i]),)
                                for i in range(X.shape[0])], cols + ["label"]).repartition(2)
    pipe = Pipeline(stages=[VectorAssembler(inputCols=cols, outputCol="features"),
                            PrivateLinearClassifier(epsilon=2.0, randomState=1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pipe.fit(df)
    clf = model.stages[-1]
    assert clf.numFeatures == X.shape[1] and clf.getEpsilon() == 2.0
    out = model.transform(df).select(*cols, "prediction", "probability", "rawPrediction")
    pdf = out.toPandas()
    Xo = pdf[cols].to_numpy()
    local = clf.localModel
    np.testing.assert_array_equal(pdf["prediction"].to_numpy(), local.predict(Xo))
    proba = np.stack([v.toArray() for v in pdf["probability"]])
    np.testing.assert_allclose(proba, local.predict_proba(Xo), rtol=1e-12, atol=1e-15)
    raw = np.stack([v.toArray() for v in pdf["rawPrediction"]])
    np.testing.assert_allclose(raw[:, 1], local.decision_function(Xo), rtol=1e-12, atol=1e-14)

    path = str(tmp_path / "pipeline")
    model.write().save(path)
    loaded = PipelineModel.load(path)
    lclf = loaded.stages[-1]
    assert lclf.privacy == clf.privacy
    np.testing.assert_array_equal(lclf.coefficients.toArray(), clf.coefficients.toArray())
    assert lclf.intercept == clf.intercept
    again = loaded.transform(df).select("prediction").toPandas()["prediction"].to_numpy()
    np.testing.assert_array_equal(np.sort(again), np.sort(pdf["prediction"].to_numpy()))
    # the model file holds public values only: no seed, no time of saving, no diagnostics
    meta = _metadata(os.path.join(path, "stages"))
    assert "randomState" not in meta["paramMap"] and "timestamp" not in meta
    assert "fit_diagnostics" not in json.dumps(meta) and "grad_norm" not in json.dumps(meta)
    # "model" is dperm's model file (dperm.save_model's format): dperm.load_model reads it
    import dperm
    from dperm.model_io import model_to_dict

    assert meta["model"] == json.loads(json.dumps(model_to_dict(local)))
    file = tmp_path / "model.json"
    file.write_text(json.dumps(meta["model"]))
    np.testing.assert_array_equal(dperm.load_model(file).predict(Xo), local.predict(Xo))


def _metadata(folder):
    """The dperm model's metadata JSON under a saved pipeline's stages folder."""
    for root, _, files in os.walk(folder):
        for f in files:
            if f.startswith("part-"):
                with open(os.path.join(root, f)) as fh:
                    text = fh.read().strip()
                if '"format":"dperm.spark"' in text:
                    return json.loads(text)
    raise AssertionError("no dperm model metadata found")


def test_neighbouring_data_give_identical_records(spark, spark_frame, spark_data, tmp_path):
    """One row replaced: the release records and the saved files' public fields agree
    (they differ in the noisy coefficients only); transform() predicts as the local model."""
    from dperm.spark import PrivateLinearRegression

    X, _, t = spark_data
    X2, t2 = X.copy(), t.copy()
    X2[5], t2[5] = -X[5] * 0.5, -0.9
    metas = []
    for i, (Xi, ti) in enumerate([(X, t), (X2, t2)]):
        df = spark_frame(Xi, ti, partitions=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = PrivateLinearRegression(epsilon=1.0, delta=1e-6, randomState=3).fit(df)
        path = str(tmp_path / f"m{i}")
        model.write().save(path)
        metas.append(_metadata(path))
        pred = model.transform(df).select("prediction").toPandas()["prediction"].to_numpy()
        np.testing.assert_allclose(np.sort(pred), np.sort(model.localModel.predict(Xi)),
                                   rtol=1e-12, atol=1e-14)
        df.unpersist()
    for m in metas:
        m.pop("uid")
        for k in ("coef", "intercept"):
            m["model"].pop(k)
    assert metas[0] == metas[1]
    assert metas[0]["model"]["privacy"]["n_samples"] == X.shape[0]


def test_multiclass_and_label_bounds_models(spark, spark_frame, spark_data, tmp_path):
    """A one-vs-rest model (K = 3) and a regression with labelBounds: saved and loaded
    (the same coefficients, intercepts, record and predictions); one row replaced gives
    files that differ in the noisy coefficients only."""
    from dperm.spark import (
        PrivateLinearClassificationModel,
        PrivateLinearClassifier,
        PrivateLinearRegression,
        PrivateLinearRegressionModel,
    )

    X, _, t = spark_data
    y3 = np.digitize(X[:, 0] - X[:, 1], [-0.1, 0.1]).astype(np.float64)
    X2, t2, y32 = X.copy(), t.copy(), y3.copy()
    X2[5], t2[5], y32[5] = -X[5] * 0.5, -0.9, 2.0 - y3[5]
    metas = {"clf": [], "reg": []}
    for i, (Xi, yi, ti) in enumerate([(X, y3, t + 2.0), (X2, y32, t2 + 2.0)]):
        df = spark_frame(Xi, yi, ti, partitions=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = PrivateLinearClassifier(classes=[0.0, 1.0, 2.0], epsilon=3.0,
                                          randomState=3).fit(df)
            reg = PrivateLinearRegression(labelCol="target", labelBounds=[1.5, 3.0], delta=1e-6,
                                          randomState=3).fit(df)
        for name, model, cls in (("clf", clf, PrivateLinearClassificationModel),
                                 ("reg", reg, PrivateLinearRegressionModel)):
            path = str(tmp_path / f"{name}{i}")
            model.write().save(path)
            metas[name].append(_metadata(path))
            back = cls.load(path)
            assert back.privacy == model.privacy
            if name == "clf":
                assert back.numClasses == 3
                np.testing.assert_array_equal(back.coefficientMatrix.toArray(),
                                              model.coefficientMatrix.toArray())
                np.testing.assert_array_equal(back.interceptVector.toArray(),
                                              model.interceptVector.toArray())
            else:
                assert back.intercept == model.intercept and back.getLabelBounds() == [1.5, 3.0]
            out = model.transform(back.transform(df).withColumnRenamed(
                "prediction", "loaded")).select("features", "prediction", "loaded").toPandas()
            np.testing.assert_array_equal(out["prediction"], out["loaded"])
            Xo = np.stack([v.toArray() for v in out["features"]])
            np.testing.assert_allclose(out["prediction"], model.localModel.predict(Xo),
                                       rtol=1e-12, atol=1e-14)
        assert reg.privacy["label_centre"] == 2.25
        df.unpersist()
    for name in metas:
        for m in metas[name]:
            m.pop("uid")
            for k in ("coef", "intercept"):
                m["model"].pop(k)
        assert metas[name][0] == metas[name][1]
    assert metas["clf"][0]["model"]["privacy"]["multiclass"] == "ovr"


def test_bad_input_is_refused_naming_the_row(spark):
    from pyspark.ml.linalg import Vectors

    from dperm.spark import PrivateLinearClassifier

    def df(rows):
        return spark.createDataFrame([(Vectors.dense(x), float(lab)) for x, lab in rows],
                                     ["features", "label"]).coalesce(1)

    good = [([0.1, 0.2], 0), ([0.3, -0.1], 1), ([0.0, 0.5], 1)]
    est = PrivateLinearClassifier(epsilon=1.0)
    with pytest.raises(ValueError, match=r"labelCol: row 1 of partition 0 has label 2\.0"):
        est.fit(df([good[0], ([0.1, 0.1], 2), good[2]]))
    with pytest.raises(ValueError, match=r"labelCol: row 1 of partition 0 has label 2\.0, not "
                                         r"one of classes=\[0\.0, 1\.0, 3\.0\]"):
        PrivateLinearClassifier(classes=[0, 1, 3]).fit(df([good[0], ([0.1, 0.1], 2), good[2]]))
    with pytest.raises(ValueError, match=r"featuresCol: row 2 of partition 0, feature 1 is "
                                         r"not finite"):
        est.fit(df(good[:2] + [([0.1, float("nan")], 1)]))
    with pytest.raises(ValueError, match=r"norm above data_norm.*partition 0"):
        PrivateLinearClassifier(normPolicy="error").fit(df(good + [([3.0, 0.0], 0)]))
    with pytest.raises(ValueError, match=r"featuresCol: the DataFrame has no column 'x'"):
        PrivateLinearClassifier(featuresCol="x").fit(df(good))
    with pytest.raises(TypeError, match="unknown parameter"):
        PrivateLinearClassifier(epsilom=1.0)
