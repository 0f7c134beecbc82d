"""dperm.spark.estimate_bounds against dperm.estimate_bounds: the same counts, the same
released bounds with the same seed (missing values, values outside the range, a point
mass, integer columns), whatever the partitioning; one Spark job; the accountant; the
record of neighbouring DataFrames is identical."""
import warnings

import numpy as np
import pytest

import dperm
from dperm.exceptions import ClippingWarning

pytest.importorskip("pyspark")


def _columns(n=800, seed=3):
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, size=n).astype(float)
    income = np.where(rng.random(n) < 0.3, 0.0, np.round(rng.lognormal(10, 1, n), 2))
    score = rng.standard_normal(n) * 50
    score[rng.random(n) < 0.05] = np.nan              # missing values
    score[:3] = [5e3, -7e3, 2e3]                       # outside bounds_range below
    return {"age": age, "income": income, "score": score}


def _frame(spark, cols, partitions):
    # age an integer column; score with nulls (Spark's missing value) where NaN
    names = list(cols)
    rows = [tuple(None if np.isnan(cols[c][i]) else (int(cols[c][i]) if c == "age"
                                                     else float(cols[c][i])) for c in names)
            for i in range(len(cols[names[0]]))]
    schema = ", ".join(f"{c} {'int' if c == 'age' else 'double'}" for c in names)
    df = spark.createDataFrame(rows, schema)
    df = (df.coalesce(1) if partitions == 1 else df.repartition(partitions)).cache()
    df.count()
    return df


@pytest.mark.parametrize("partitions", [1, 3])
def test_spark_bounds_equal_the_local_ones(spark, partitions):
    from dperm.spark import estimate_bounds

    cols = _columns()
    df = _frame(spark, cols, partitions)
    kw = dict(epsilon=2.0, bounds_range=(-1e3, 1e6), random_state=4)
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        local = dperm.estimate_bounds(cols, **kw)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        got = estimate_bounds(df, **kw)
    assert got == local                       # bounds and record
    assert got.privacy_ == local.privacy_
    assert list(got) == ["age", "income", "score"]
    clip = [str(w.message) for w in ws if issubclass(w.category, ClippingWarning)]
    assert clip == [str(w.message) for w in wl if issubclass(w.category, ClippingWarning)]
    assert any("'score': 1 value(s)" in m for m in clip)
    # a column subset, a custom grid: the same as locally
    grid = np.linspace(-200.0, 200.0, 81)
    sub = {"score": cols["score"]}
    a = dperm.estimate_bounds(sub, 1.0, grid=grid, quantiles=(0.05, 0.95), random_state=9)
    b = estimate_bounds(df, 1.0, columns=["score"], grid=grid, quantiles=(0.05, 0.95),
                        random_state=9)
    assert a == b
    df.unpersist()


def test_spark_bounds_counts_are_the_local_histogram(spark):
    """The counts the driver adds are the local column_histogram of the non-missing,
    clipped values; the pass is one Spark job."""
    from dperm.privacy.quantiles import column_histogram, default_grid
    from dperm.spark._bounds import column_counts

    cols = _columns(seed=5)
    df = _frame(spark, cols, 4)
    g = default_grid((-1e3, 1e6))
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("dperm-bounds-test", "counts")
    try:
        counts = column_counts(df, ["income", "score"], g)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert len(tracker.getJobIdsForGroup("dperm-bounds-test")) == 1
    for (key, atoms, cells, outside), name in zip(counts, ["income", "score"]):
        assert key == name
        v = cols[name][~np.isnan(cols[name])]
        a, c = column_histogram(np.clip(v, g[0], g[-1]), g)
        assert np.array_equal(atoms, a) and np.array_equal(cells, c)
        assert outside == np.count_nonzero((v < g[0]) | (v > g[-1]))
    df.unpersist()


def test_spark_bounds_accountant_and_neighbours(spark):
    """Charged epsilon once (checked before the job); neighbouring DataFrames (one row
    replaced, one removed) give identical records; a non-numeric column is refused."""
    from dperm.spark import estimate_bounds

    cols = _columns(n=400, seed=8)
    df = _frame(spark, cols, 2)
    acc = dperm.BudgetAccountant(epsilon=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = estimate_bounds(df, 1.0, columns=["age", "income"], accountant=acc)
    assert acc.spent == pytest.approx(1.0)
    with pytest.raises(dperm.BudgetExceededError):
        estimate_bounds(df, 1.0, columns=["age"], accountant=acc)
    assert acc.spent == pytest.approx(1.0)
    replaced = {k: v.copy() for k, v in cols.items()}
    replaced["income"][0] = 1e7
    replaced["age"][0] = 18.0
    removed = {k: v[1:] for k, v in cols.items()}
    records = []
    for c in (cols, replaced, removed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records.append(estimate_bounds(_frame(spark, c, 2), 1.0, columns=["age", "income"],
                                           bounds_range=(0, 1e6)).privacy_)
    assert records[0] == records[1] == records[2]
    assert records[0]["columns"] == ["age", "income"] == list(b)
    with pytest.raises(ValueError, match=r"columns: \['name \(string\)'\] are not numeric"):
        estimate_bounds(df.withColumn("name", df["age"].cast("string")), 1.0)
    with pytest.raises(ValueError, match=r"columns: \['nope'\] not in the DataFrame"):
        estimate_bounds(df, 1.0, columns=["nope"])
    with pytest.raises(TypeError, match="df: expected a pyspark.sql DataFrame"):
        estimate_bounds(cols, 1.0)
    df.unpersist()
