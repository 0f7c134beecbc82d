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
    with pytest.raises(ValueError, match=r"featuresCol: row 2 of partition 0, feature 1 is "
                                         r"not finite"):
        est.fit(df(good[:2] + [([0.1, float("nan")], 1)]))
    with pytest.raises(ValueError, match=r"norm above data_norm.*partition 0"):
        PrivateLinearClassifier(normPolicy="error").fit(df(good + [([3.0, 0.0], 0)]))
    with pytest.raises(ValueError, match=r"featuresCol: the DataFrame has no column 'x'"):
        PrivateLinearClassifier(featuresCol="x").fit(df(good))
    with pytest.raises(TypeError, match="unknown parameter"):
        PrivateLinearClassifier(epsilom=1.0)
