"""dperm.spark against the local code: the same objective over 1, 2 and 8 partitions; a
task that fails and is retried, and a block rebuilt from the source, change nothing; a
source whose rows change stops the fit.  (The estimators against the local fits, every
mode on 1, 2 and 8 partitions: test_spark_modes.py.)"""
import os
import warnings

import numpy as np
import pytest

import dperm

pytest.importorskip("pyspark")

@pytest.mark.parametrize("partitions", [1, 2, 8])
def test_the_spark_objective_equals_the_local_one(spark_frame, spark_data, partitions):
    """Values, gradients and Hessian-vector products over the partitions (rows clipped,
    an intercept column) equal the local pass's on the same rows."""
    from dperm.data.design import WithInterceptColumn
    from dperm.data.spark_rows import SparkRows
    from dperm.data.validation import bound_rows
    from dperm.losses import get_loss
    from dperm.optim import erm

    X, y, _ = spark_data
    df = spark_frame(X, y, partitions=partitions)
    assert df.rdd.getNumPartitions() == partitions
    rows = SparkRows(df, "features", "label")
    assert rows.shape == X.shape and rows.n_partitions == partitions
    S = WithInterceptColumn(bound_rows(rows, 0.8, "clip"), 0.8)
    L = WithInterceptColumn(bound_rows(X, 0.8, "clip"), 0.8)
    ypm = np.where(y == 1, 1.0, -1.0)
    rng = np.random.default_rng(partitions)
    W, V = rng.standard_normal((2, 3, X.shape[1] + 1))
    l2 = np.array([0.1, 0.01, 1.0])
    for loss in ("logistic", "huber"):
        kid = get_loss(loss).kernel_id
        F, G = S.value_grad(W, l2, None, kid, 0.5)
        Fl, Gl = erm.objective(L, ypm, W, loss=loss, alpha=l2)
        np.testing.assert_allclose(F, Fl, rtol=1e-13)
        np.testing.assert_allclose(G, Gl, rtol=1e-12, atol=1e-15)
        HV = S.hess_vec(W, V, l2, kid, 0.5)
        np.testing.assert_allclose(HV, erm.hessian_vector(L, ypm, W, V, loss=loss, alpha=l2),
                                   rtol=1e-12, atol=1e-15)
    rows.close()
    df.unpersist()


def test_a_retried_task_changes_nothing(spark, spark_frame, spark_data, tmp_path):
    """A pass task that fails once (on its first attempt) is retried by Spark
    (local[2,3]); the fit gives the same bits as a fit without the failure."""
    from dperm.data import spark_rows
    from dperm.spark import PrivateLinearClassifier

    X, y, _ = spark_data
    df = spark_frame(X, y, partitions=2)
    est = PrivateLinearClassifier(randomState=2, epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = est.fit(df)
        local = dperm.PrivateLinearClassifier(classes=[0.0, 1.0], random_state=2, epsilon=1.0,
                                              delta=1e-5).fit(X, y)
    np.testing.assert_allclose(clean.coefficients.toArray(), local.coef_[0], rtol=0, atol=1e-9)
    marker = str(tmp_path / "failed")

    def fail_once(p, method):       # runs on the executor; shipped with each pass
        if p == 1 and method == "value_grad":
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
            raise RuntimeError("injected task failure")

    old, spark_rows._TASK_HOOK = spark_rows._TASK_HOOK, fail_once
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            retried = est.fit(df)
    finally:
        spark_rows._TASK_HOOK = old
    assert os.path.exists(marker)            # the failure did happen
    assert np.array_equal(retried.coefficients.toArray(), clean.coefficients.toArray())
    assert retried.intercept == clean.intercept
    assert retried.privacy == clean.privacy


def test_a_lost_block_is_rebuilt_from_the_source(spark, spark_frame, spark_data):
    """Blocks removed from the executor host are read again from the DataFrame (and
    checked against their digest): the same sums, the same bits."""
    import shutil

    from pyspark import SparkFiles

    from dperm.data.spark_rows import SparkRows
    from dperm.losses import get_loss

    X, y, _ = spark_data
    df = spark_frame(X, y, partitions=3)
    rows = SparkRows(df, "features", "label")
    W = np.random.default_rng(0).standard_normal((2, X.shape[1]))
    kid = get_loss("logistic").kernel_id
    a = rows.bound_rows(1.0, "clip")
    F1, G1 = a.value_grad(W, np.full(2, 0.1), None, kid, 0.5)
    shutil.rmtree(os.path.join(SparkFiles.getRootDirectory(), f"dperm-{rows._source.key}"))
    b = rows.bound_rows(0.9, "clip").bound_rows(1.0, "clip")   # new row maps: no worker has them
    F2, G2 = b.value_grad(W, np.full(2, 0.1), None, kid, 0.5)
    F3, G3 = a.value_grad(W, np.full(2, 0.1), None, kid, 0.5)
    assert np.array_equal(F1, F3) and np.array_equal(G1, G3)
    # the rebuilt rows (clipped to 0.9) against the local objective on the same rows
    from dperm.optim import erm

    Xc = X * np.minimum(1.0, 0.9 / np.linalg.norm(X, axis=1))[:, None]
    Fl, Gl = erm.objective(Xc, np.where(y == 1, 1.0, -1.0), W, alpha=0.1)
    np.testing.assert_allclose(F2, Fl, rtol=1e-12)
    np.testing.assert_allclose(G2, Gl, rtol=1e-11, atol=1e-14)
    rows.close()


def test_a_changed_source_stops_the_fit(spark):
    """A source whose rows differ when read again (a non-deterministic column of an
    uncached DataFrame) raises SparkFitError instead of fitting on other rows."""
    import shutil

    from pyspark import SparkFiles
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    from dperm.data.spark_rows import SparkFitError, SparkRows

    noise = F.udf(lambda i: float(np.random.default_rng().random()), "double").asNondeterministic()
    df = spark.range(0, 40, numPartitions=2).select(
        array_to_vector(F.array(noise("id") * 0.5, F.lit(0.1))).alias("features"),
        (F.col("id") % 2).cast("double").alias("label"))
    rows = SparkRows(df, "features", "label")
    shutil.rmtree(os.path.join(SparkFiles.getRootDirectory(), f"dperm-{rows._source.key}"))
    with pytest.raises(SparkFitError, match="changed between passes"):
        rows.bound_rows(0.7, "clip", return_clipped=True)
    rows.close()
