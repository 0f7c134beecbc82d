"""A local Spark session for tests/spark (pyspark from PyPI and a Java runtime).

Without pyspark or without `java` on PATH the Spark tests are skipped with the reason;
.ci/run installs Debian's openjdk-17-jre-headless where java is missing, so CI runs them.
"""
import os
import shutil
import sys

import numpy as np
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/spark/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """local[2,3]: two task threads, a failed task tried up to 3 times (local mode's
    spark.task.maxFailures); small memory, no UI, few shuffle partitions."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'dperm[spark]')")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH (Spark needs one: apt-get install "
                    "openjdk-17-jre-headless)")
    old = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable   # the executors run this Python (dperm)
    from pyspark.sql import SparkSession

    # The JVM, and the Python workers it starts, run in the folder the session is created
    # from; a worker puts that folder first on sys.path. From the checkout's root (the
    # README's `pytest`) that would import the source tree instead of the installed build.
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("spark-cwd"))
    try:
        session = (SparkSession.builder.master("local[2,3]").appName("dperm-tests")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.default.parallelism", "2")
                   .config("spark.driver.memory", "1g")
                   .getOrCreate())
    finally:
        os.chdir(here)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if old is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = old


@pytest.fixture(scope="session")
def spark_data():
    """(X (600, 4) with row norms <= 1, binary labels 0/1, real targets)."""
    rng = np.random.default_rng(7)
    n, d = 600, 4
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    w = rng.standard_normal(d)
    y = (X @ w + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    t = np.clip(X @ w + 0.1 * rng.standard_normal(n), -1, 1)
    return X, y, t


@pytest.fixture(scope="session")
def spark_frame(spark):
    """Factory (X, *label columns, partitions=2) -> a cached DataFrame with a features
    vector column and the columns "label", "target", "cls" in `partitions` partitions."""
    return lambda X, *cols, partitions=2: _frame(spark, X, *cols, partitions=partitions)


@pytest.fixture(scope="module")
def frames(spark_frame, spark_data):
    """partitions -> a cached DataFrame (features, label, target, cls), made once per test
    module; `get.y3` is the three-class label column (cls)."""
    X, y, t = spark_data
    y3 = np.digitize(X @ np.array([1.0, -0.5, 0.3, 0.2]), [-0.15, 0.15]).astype(np.float64)
    made = {}

    def get(partitions):
        if partitions not in made:
            made[partitions] = spark_frame(X, y, t, y3, partitions=partitions)
        return made[partitions]
    get.y3 = y3
    yield get
    for df in made.values():
        df.unpersist()


def _frame(spark, X, *cols, partitions=2, names=("label", "target", "cls")):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(X[i]),) + tuple(float(c[i]) for c in cols) for i in range(X.shape[0])]
    df = spark.createDataFrame(rows, ["features", *names[:len(cols)]])
    df = df.coalesce(1) if partitions == 1 else df.repartition(partitions)
    df = df.cache()
    df.count()
    return df
