"""The label's public range and centre (issue 28 item 2): PrivateLinearRegression(
label_bounds=(low, high)) fits y - c with label_bound (high - low) / 2 and predicts on the
original scale; the schema's label.bounds (dperm bounds --task regression --label) feed
dperm fit --task regression; model files carry the centre."""
import csv
import json
import warnings

import numpy as np
import pytest
from sklearn.metrics import r2_score

import dperm
from dperm.cli.main import main
from dperm.exceptions import ClippingWarning, PrivacyLeakWarning
from dperm.schema import PublicSchema

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore:random_state is a fixed seed"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")]

METHODS = [("objective", 0.0), ("objective", 1e-6), ("output", 0.0), ("none", 0.0),
           ("auto", 0.0), ("adassp", 1e-6)]


def _problem(n=20000, d=5, seed=0, centre=50.0, half=10.0, w_scale=1.0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    y = np.clip(centre + X @ (w_scale * rng.normal(size=d)) + noise * rng.normal(size=n),
                centre - half, centre + half)
    return X, y


def _fit(X, y, **kw):
    return dperm.PrivateLinearRegression(epsilon=1.0, **kw).fit(X, y)


def test_centring_beats_the_uncentred_bound():
    """Targets of mean 50 in [40, 60] at epsilon 1, n = 20000: label_bounds=(40, 60)
    (B = 10 around 50) against label_bound=60 (B = 60 around 0).  Measured (seeds 0-2):
    centred 0.59 each (non-private 0.60), uncentred 0.10-0.25."""
    X, y = _problem()
    for seed in range(3):
        centred = r2_score(y, _fit(X, y, label_bounds=(40, 60), random_state=seed).predict(X))
        plain = r2_score(y, _fit(X, y, label_bound=60, random_state=seed).predict(X))
        assert centred > 0.5, (seed, centred)
        assert centred > plain + 0.2, (seed, centred, plain)


@pytest.mark.parametrize("method,delta", METHODS)
@pytest.mark.parametrize("intercept", [True, False])
def test_centred_fit_is_the_shifted_fit_on_the_original_scale(method, delta, intercept):
    """label_bounds=(40, 60) on y is label_bound=10 on y - 50 (same seed: the same noise,
    bit for bit), with 50 added to the intercept: predictions on y's scale."""
    X, y = _problem(n=3000)
    kw = dict(method=method, delta=delta, fit_intercept=intercept, random_state=3)
    a = _fit(X, y, label_bounds=(40, 60), **kw)
    b = _fit(X, y - 50.0, label_bound=10.0, **kw)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_ + 50.0
    np.testing.assert_allclose(a.predict(X), b.predict(X) + 50.0, rtol=0, atol=1e-9)
    assert abs(np.mean(a.predict(X)) - np.mean(y)) < 2.0      # the original scale
    ra, rb = dict(a.privacy_), dict(b.privacy_)
    assert ra.pop("label_centre") == 50.0 and rb.pop("label_centre") is None
    assert ra == rb           # the privacy constants are label_bound=B's
    assert a.privacy_["label_bound"] == 10.0


def test_label_bounds_clip_around_the_centre():
    X, y = _problem(n=500)
    y = y.copy()
    y[0] = 1e6
    with pytest.warns(ClippingWarning, match=r"label_bounds = \[40, 60\]"):
        dperm.PrivateLinearRegression(method="none", label_bounds=(40, 60)).fit(X, y)


@pytest.mark.parametrize("kw,match", [
    (dict(label_bound=10.0, label_bounds=(40, 60)), "label_bound=10.0 and label_bounds"),
    (dict(label_bounds=(60, 40)), "finite low < high"),
    (dict(label_bounds=(40, np.inf)), "finite low < high"),
    (dict(label_bounds=(40, 40)), "finite low < high"),
    (dict(label_bounds=(1, 2, 3)), "label_bounds must be"),
    (dict(label_bounds="ab"), "label_bounds must be"),
    (dict(label_bound=-1.0), "label_bound"),
])
def test_label_parameters_are_checked_before_the_data(kw, match):
    X, y = _problem(n=100)
    est = dperm.PrivateLinearRegression(**kw)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_default_is_label_bound_one():
    X, y = _problem(n=500, centre=0.0, half=1.0)
    a = dperm.PrivateLinearRegression(random_state=0).fit(X, y)
    b = dperm.PrivateLinearRegression(label_bound=1.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.privacy_ == b.privacy_ and a.privacy_["label_centre"] is None


@pytest.mark.parametrize("method,delta", [("objective", 0.0), ("adassp", 1e-6), ("none", 0.0)])
@pytest.mark.parametrize("transformer", [False, True])
def test_model_file_round_trip_is_bit_for_bit(tmp_path, method, delta, transformer):
    from sklearn.pipeline import make_pipeline

    X, y = _problem(n=2000)
    est = dperm.PrivateLinearRegression(method=method, delta=delta, epsilon=1.0,
                                        label_bounds=(40, 60), random_state=1)
    if transformer:
        cols = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        import pandas as pd

        Xf = pd.DataFrame(cols)
        model = make_pipeline(dperm.PublicBoundsTransformer(numeric={c: (-1, 1) for c in cols}),
                              est).fit(Xf, y)
        pred, data = model.predict(Xf), Xf
    else:
        model = est.fit(X, y)
        pred, data = model.predict(X), X
    dperm.save_model(model, tmp_path / "m.json")
    obj = json.loads((tmp_path / "m.json").read_text())
    assert obj["privacy"]["label_centre"] == 50.0
    assert obj["preprocessing"]["label_centre"] == 50.0
    assert obj["estimator"]["label_bounds"] == [40, 60]
    loaded = dperm.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(data), pred)
    # a file without the centre (an older dperm's) still loads and predicts by its intercept
    for part in ("privacy", "preprocessing"):
        del obj[part]["label_centre"]
    del obj["estimator"]["label_bounds"]
    (tmp_path / "old.json").write_text(json.dumps(obj))
    old = dperm.load_model(tmp_path / "old.json")
    np.testing.assert_array_equal(old.predict(data), pred)


def test_neighbouring_fits_release_the_same_record():
    """One row (and its target, beyond the bounds) replaced: the same privacy_ and public
    attributes; the check catches a centre read from the data."""
    # tests/ is no package (pytest puts each test's folder on sys.path): load the helpers
    # of tests/privacy/test_release_regression.py by path
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent / "privacy" / "test_release_regression.py"
    spec = importlib.util.spec_from_file_location("_release_regression_helpers", path)
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    neighbours, released = helpers.neighbours, helpers.released

    (X, y), (X2, y2) = neighbours()
    y, y2 = y + 50.0, y2 + 50.0
    for method, delta in METHODS:
        kw = dict(method=method, delta=delta, label_bounds=(49, 51), random_state=0)
        a, b = _fit(X, y, **kw), _fit(X2, y2, **kw)
        ra, rb = released(a), released(b)
        assert ra == rb, method
        assert a.privacy_["label_centre"] == 50.0
        # a deliberately broken variant: bounds (so the centre) taken from the data
        bad_a = _fit(X, y, method=method, delta=delta, random_state=0,
                     label_bounds=(y.min(), y.max()))
        bad_b = _fit(X2, y2, method=method, delta=delta, random_state=0,
                     label_bounds=(y2.min(), y2.max()))
        assert released(bad_a)["privacy_"] != released(bad_b)["privacy_"], method


def test_dask_targets_are_shifted_on_the_workers(dask_client):
    da = pytest.importorskip("dask.array")
    X, y = _problem(n=2400)
    for method, delta in [("objective", 0.0), ("adassp", 1e-6), ("none", 0.0)]:
        kw = dict(method=method, delta=delta, label_bounds=(45, 55), random_state=7)
        if method != "adassp":
            kw["alpha"] = 1e-2
        local = _fit(X, y, **kw)
        dist = _fit(da.from_array(X, chunks=(600, -1)), y, **kw)
        np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-9, atol=1e-12)
        assert abs(dist.intercept_ - local.intercept_) < 1e-9
        assert dist.privacy_ == local.privacy_
        assert abs(np.mean(local.predict(X)) - np.mean(y)) < 2.0


# ---------------------------------------------------------------------- schema and CLI
def test_schema_label_bounds_round_trip():
    s = PublicSchema(numeric={"a": (0, 1)}, label="t", label_bounds=(40, 60))
    assert s.label_bounds == (40.0, 60.0)
    d = s.to_dict()
    assert d["label"] == {"column": "t", "classes": None, "bounds": [40.0, 60.0]}
    assert PublicSchema.from_dict(json.loads(json.dumps(d))) == s
    import pickle

    assert pickle.loads(pickle.dumps(s)) == s
    assert s.replace(label="u").label_bounds is None     # bounds of another column
    assert "bounds" not in PublicSchema(numeric={"a": (0, 1)}, label="t").to_dict()["label"]
    with pytest.raises(ValueError, match="label_bounds need a label"):
        PublicSchema(numeric={"a": (0, 1)}, label_bounds=(0, 1))
    with pytest.raises(ValueError, match="low < high"):
        PublicSchema(numeric={"a": (0, 1)}, label="t", label_bounds=(1, 0))
    with pytest.raises(ValueError, match="label.bounds must be"):
        PublicSchema.from_dict({"numeric": {"a": [0, 1]},
                                "label": {"column": "t", "bounds": [0, "x"]}})


def _wage_csv(path, n=6000, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 10, n), rng.uniform(-5, 5, n)
    t = 50.0 + 0.8 * a - 0.6 * b + 0.5 * rng.normal(size=n)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "t"])
        w.writerows([[f"{a[i]:.4f}", f"{b[i]:.4f}", f"{t[i]:.4f}"] for i in range(n)])
    return t


def test_bounds_label_then_fit_without_label_bound(tmp_path, capsys):
    t = _wage_csv(tmp_path / "d.csv")
    rc = main(["bounds", str(tmp_path / "d.csv"), "--epsilon", "3", "--columns", "a,b",
               "--label", "t", "--task", "regression", "--range=-1000,1000", "--seed", "0",
               "-o", str(tmp_path / "s.json")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "3 column(s)" in out and "t (label)" in out
    schema = json.loads((tmp_path / "s.json").read_text())
    lo, hi = schema["label"]["bounds"]
    assert schema["label"]["column"] == "t" and set(schema["numeric"]) == {"a", "b"}
    q = np.quantile(t, [0.01, 0.99])
    assert abs(lo - q[0]) < 2.0 and abs(hi - q[1]) < 2.0, (lo, hi, q)
    rc = main(["fit", str(tmp_path / "d.csv"), "--task", "regression", "--schema",
               str(tmp_path / "s.json"), "--epsilon", "1", "--seed", "1",
               "-o", str(tmp_path / "m.json")])
    assert rc == 0
    assert "around the centre" in capsys.readouterr().out
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["privacy"]["label_centre"] == pytest.approx((lo + hi) / 2)
    assert model["privacy"]["label_bound"] == pytest.approx((hi - lo) / 2)
    assert model["schema"]["label"]["bounds"] == [lo, hi]
    rc = main(["predict", str(tmp_path / "m.json"), str(tmp_path / "d.csv"),
               "-o", str(tmp_path / "p.csv")])
    assert rc == 0
    pred = np.loadtxt(tmp_path / "p.csv", skiprows=1, delimiter=",", usecols=0)
    assert r2_score(t, pred) > 0.8
    loaded = dperm.load_model(tmp_path / "m.json")
    import pandas as pd

    df = pd.read_csv(tmp_path / "d.csv", dtype=str)
    np.testing.assert_array_equal(loaded.predict(
        {"a": df["a"].astype(float).to_numpy(), "b": df["b"].astype(float).to_numpy()}), pred)
    # --label-bound still works, overrides the schema's bounds, with a note
    rc = main(["fit", str(tmp_path / "d.csv"), "--task", "regression", "--schema",
               str(tmp_path / "s.json"), "--epsilon", "1", "--label-bound", "80",
               "-o", str(tmp_path / "m2.json")])
    assert rc == 0
    assert "overrides the schema's label bounds" in capsys.readouterr().err
    m2 = json.loads((tmp_path / "m2.json").read_text())
    assert m2["privacy"]["label_centre"] is None and m2["privacy"]["label_bound"] == 80


def test_fit_without_label_bound_or_schema_bounds_is_refused(tmp_path, capsys):
    _wage_csv(tmp_path / "d.csv", n=200)
    (tmp_path / "s.json").write_text(json.dumps(
        {"numeric": {"a": [0, 10], "b": [-5, 5]}, "label": {"column": "t"}}))
    rc = main(["fit", str(tmp_path / "d.csv"), "--task", "regression", "--schema",
               str(tmp_path / "s.json"), "--epsilon", "1", "-o", str(tmp_path / "m.json")])
    assert rc != 0
    assert "--label-bound" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_bounds_task_regression_needs_a_label(tmp_path, capsys):
    _wage_csv(tmp_path / "d.csv", n=200)
    rc = main(["bounds", str(tmp_path / "d.csv"), "--epsilon", "1", "--columns", "a,b",
               "--task", "regression", "-o", str(tmp_path / "s.json")])
    assert rc != 0 and "--label" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_no_warning_filters_hide_the_shift():
    """The centred fit warns exactly as the shifted one (no new data-dependent message)."""
    X, y = _problem(n=500)
    with warnings.catch_warnings(record=True) as wa:
        warnings.simplefilter("always")
        dperm.PrivateLinearRegression(label_bounds=(40, 60)).fit(X, y)
    with warnings.catch_warnings(record=True) as wb:
        warnings.simplefilter("always")
        dperm.PrivateLinearRegression(label_bound=10.0).fit(X, y - 50.0)
    assert [str(w.message) for w in wa] == [str(w.message) for w in wb]
    assert not any(issubclass(w.category, PrivacyLeakWarning) for w in wa)
