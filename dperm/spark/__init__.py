"""dperm on Apache Spark: `pyspark.ml` estimators for differentially private linear models.

    from dperm.spark import PrivateLinearClassifier
    model = PrivateLinearClassifier(epsilon=1.0, dataNorm=1.0).fit(df)   # featuresCol, labelCol
    model.transform(df)        # prediction, rawPrediction, probability columns
    model.coefficients, model.intercept, model.privacy

    from dperm.spark import estimate_bounds
    bounds = estimate_bounds(df, epsilon=0.5, columns=["age", "income"])   # one pass

`PrivateLinearClassifier` and `PrivateLinearRegression` are MLlib estimators (Params in
MLlib's style, usable in a `pyspark.ml.Pipeline`); `fit(DataFrame)` runs the same
mechanism as dperm.PrivateLinearClassifier / PrivateLinearRegression on the same rows,
with the passes over the rows on the executors (dperm.data.spark_rows): the same
coefficients, to the solver's tolerance, as the local fit with the same seed, whatever
the partitioning.  `estimate_bounds(df, epsilon, columns=...)` is dperm.estimate_bounds
on a DataFrame: one pass that counts each column's histogram over the public grid on the
executors; the same PrivateBounds as the local function on the same rows.  Each takes
an ``accountant`` (a dperm.BudgetAccountant), checked before any row is read and charged
as the local estimator or function is.

This package needs pyspark (and a Java runtime): ``pip install 'dperm[spark]'``.
``import dperm`` never imports it.
"""
try:
    import pyspark  # noqa: F401
    import pyspark.ml  # noqa: F401
except ImportError as exc:   # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "dperm.spark needs pyspark (and a Java 17 runtime): pip install 'dperm[spark]'; "
        "the local estimators (dperm.PrivateLinearClassifier, dperm.PrivateLinearRegression) "
        f"do not ({exc})") from exc

from dperm.spark._bounds import estimate_bounds
from dperm.spark._estimators import (
    PrivateLinearClassificationModel,
    PrivateLinearClassifier,
    PrivateLinearRegression,
    PrivateLinearRegressionModel,
)

__all__ = ["estimate_bounds", "PrivateLinearClassifier", "PrivateLinearClassificationModel",
           "PrivateLinearRegression", "PrivateLinearRegressionModel"]
