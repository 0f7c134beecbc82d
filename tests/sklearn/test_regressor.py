"""PrivateLinearRegression: the scikit-learn contract, the methods, storage formats,
label clipping, bad input and the accountant."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import dperm
from dperm import BudgetAccountant, PrivateLinearRegression
from dperm.exceptions import BudgetExceededError, ClippingWarning, PrivacyLeakWarning

pytestmark = [pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]


def data(n=4000, d=6, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d) / 2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.001
    w = np.linspace(1.0, -1.0, d)
    y = np.clip(X @ w + 0.2 + noise * rng.normal(size=n), -1, 1)
    return X, y


def test_exported_and_sklearn_basics():
    assert dperm.PrivateLinearRegression is PrivateLinearRegression
    est = PrivateLinearRegression(epsilon=2.0, label_bound=1.0)
    assert clone(est).get_params() == est.get_params()
    assert est._get_tags()["requires_y"] if hasattr(est, "_get_tags") else True
    X, y = data()
    est.set_params(random_state=0).fit(X, y)
    assert est.coef_.shape == (X.shape[1],) and isinstance(est.intercept_, float)
    assert est.predict(X).shape == (X.shape[0],)
    pred = est.predict(X)
    r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
    assert est.score(X, y) == pytest.approx(r2)
    assert est.n_features_in_ == X.shape[1]


def test_nonprivate_baseline_is_accurate_and_private_fits_are_useful():
    X, y = data(n=20000)
    base = PrivateLinearRegression(method="none").fit(X, y)
    assert base.score(X, y) > 0.9
    assert base.intercept_ == pytest.approx(0.2, abs=0.02)
    for method in ("objective", "output"):
        for delta in (0.0, 1e-6):
            est = PrivateLinearRegression(method=method, epsilon=1.0, delta=delta,
                                          random_state=1).fit(X, y)
            assert est.privacy_["mechanism"] == method
            assert est.privacy_["noise"] == ("gaussian" if delta else "l2_laplace")
            assert est.score(X, y) > (0.7 if method == "objective" else 0.3), (method, delta)


def test_auto_method_is_documented_rule_and_recorded():
    from dperm.sklearn.regressor import resolve_method

    X, y = data()
    for delta in (0.0, 1e-6):
        est = PrivateLinearRegression(delta=delta, random_state=0).fit(X, y)
        assert est.method == "auto" and est.privacy_["method"] == "objective"
        assert est.privacy_["noise"] == ("gaussian" if delta else "l2_laplace")
    for n in (10, 10**4, 10**9):
        for eps in (0.01, 1.0, 100.0):
            assert resolve_method("auto", n=n, d=7, epsilon=eps, delta=1e-6) == "objective"
    assert resolve_method("output", n=10, d=7, epsilon=1.0, delta=0.0) == "output"


def test_adassp_method():
    X, y = data(n=20000)
    est = PrivateLinearRegression(method="adassp", epsilon=1.0, delta=1e-8,
                                  random_state=0).fit(X, y)
    assert est.privacy_["mechanism"] == "adassp" and est.alpha_ is None
    assert est.score(X, y) > 0.8
    with pytest.raises(ValueError, match="delta"):
        PrivateLinearRegression(method="adassp").fit(X, y)


def test_pipeline_and_grid_search():
    X, y = data()
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z * 1.0),
                         PrivateLinearRegression(epsilon=5.0, random_state=np.random.default_rng(0)))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.5
    gs = GridSearchCV(PrivateLinearRegression(epsilon=5.0, random_state=np.random.default_rng(1)),
                      {"method": ["objective", "output"]}, cv=3)
    gs.fit(X, y)
    assert gs.best_params_["method"] in ("objective", "output")
    assert np.isfinite(gs.best_score_)


@pytest.mark.parametrize("fmt", ["csr", "float32", "fortran", "dataframe"])
def test_storage_formats_give_the_same_model(fmt):
    X, y = data(n=2000)
    ref = PrivateLinearRegression(epsilon=1.0, random_state=3, n_threads=1).fit(X, y)
    if fmt == "csr":
        Xf = sp.csr_matrix(X)
    elif fmt == "float32":
        Xf, X = X.astype(np.float32), X.astype(np.float32).astype(np.float64)
        ref = PrivateLinearRegression(epsilon=1.0, random_state=3, n_threads=1).fit(X, y)
    elif fmt == "fortran":
        Xf = np.asfortranarray(X)
    else:
        pd = pytest.importorskip("pandas")
        Xf = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    est = PrivateLinearRegression(epsilon=1.0, random_state=3, n_threads=1).fit(Xf, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-9)
    assert est.intercept_ == pytest.approx(ref.intercept_, rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(est.predict(Xf), ref.predict(X), rtol=1e-5, atol=1e-8)


def test_labels_and_rows_clipped_with_a_warning_inputs_unchanged():
    X, y = data()
    y = y * 3.0
    X = X * 3.0
    X0, y0 = X.copy(), y.copy()
    with pytest.warns(ClippingWarning) as rec:
        est = PrivateLinearRegression(label_bound=1.0, random_state=0).fit(X, y)
    texts = " ".join(str(w.message) for w in rec)
    assert "label_bound" in texts and "data_norm" in texts
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert est.fit_diagnostics_["labels_clipped"] == int(np.sum(np.abs(y) > 1.0)) > 0
    assert est.fit_diagnostics_["rows_clipped"] > 0
    # clipping is the public map: the fit equals one on the clipped data
    ref = PrivateLinearRegression(label_bound=1.0, random_state=0, norm_policy="clip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        ref.fit(X, np.clip(y, -1, 1))
    np.testing.assert_array_equal(ref.coef_, est.coef_)


def test_default_h_is_label_bound_and_recorded():
    X, y = data()
    est = PrivateLinearRegression(label_bound=2.0, random_state=0).fit(X, y)
    assert est.privacy_["h"] == 2.0 and est.privacy_["label_bound"] == 2.0
    assert est.privacy_["gradient_bound"] == 2.0 * est.privacy_["data_norm"]
    est = PrivateLinearRegression(label_bound=2.0, h=0.5, random_state=0).fit(X, y)
    assert est.privacy_["h"] == 0.5 and est.privacy_["gradient_bound"] == 0.5


@pytest.mark.parametrize("params,match", [
    ({"label_bound": 0}, "label_bound"),
    ({"label_bound": -1.0}, "label_bound"),
    ({"label_bound": np.inf}, "label_bound"),
    ({"label_bound": np.nan}, "label_bound"),
    ({"label_bound": "1"}, "label_bound"),
    ({"h": 0.0}, "h"),
    ({"h": -2.0}, "h"),
    ({"method": "adam"}, "method"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"neighbouring": "swap"}, "neighbouring"),
    ({"n_public": 2.5}, "n_public"),
    ({"alpha": -1.0}, "alpha"),
    ({"alpha": [0.1, 1.0]}, "alpha"),
    ({"data_norm": 0.0}, "data_norm"),
    ({"norm_policy": "drop"}, "norm_policy"),
    ({"fit_intercept": "yes"}, "fit_intercept"),
])
def test_bad_parameters_name_the_parameter_and_change_nothing(params, match):
    X, y = data(n=200)
    est = PrivateLinearRegression(random_state=0).fit(X, y)
    before = (est.coef_.copy(), est.intercept_, dict(est.privacy_))
    est.set_params(**params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    np.testing.assert_array_equal(est.coef_, before[0])
    assert est.intercept_ == before[1] and est.privacy_ == before[2]


@pytest.mark.parametrize("bad,match", [
    (np.nan, "y: contains NaN"), (np.inf, "y: contains NaN"), (-np.inf, "y: contains NaN")])
def test_non_finite_targets_refused(bad, match):
    X, y = data(n=200)
    y = y.copy()
    y[5] = bad
    y0 = y.copy()
    with pytest.raises(ValueError, match=match):
        PrivateLinearRegression().fit(X, y)
    np.testing.assert_array_equal(y, y0)


def test_bad_targets_and_rows():
    X, y = data(n=200)
    with pytest.raises(ValueError, match="y: has 199 targets"):
        PrivateLinearRegression().fit(X, y[:-1])
    with pytest.raises(ValueError, match="numeric"):
        PrivateLinearRegression().fit(X, np.array(["a"] * 200))
    with pytest.raises(ValueError, match="y"):
        PrivateLinearRegression().fit(X, None)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        PrivateLinearRegression().fit(Xn, y)
    with pytest.raises(TypeError, match="sample_weight"):
        PrivateLinearRegression().fit(X, y, sample_weight=np.ones(200))
    with pytest.raises(ValueError, match="data_norm"):
        PrivateLinearRegression(norm_policy="error", data_norm=0.01).fit(X, y)


def test_dask_without_a_client_is_a_clear_error():
    # a Dask array is fitted on its workers (tests/data/test_dask_regression.py); with no
    # distributed client running the error says how to start one
    da = pytest.importorskip("dask.array")
    pytest.importorskip("distributed")
    X, y = data(n=200)
    with pytest.raises(RuntimeError, match="no distributed client is running"):
        PrivateLinearRegression().fit(da.from_array(X, chunks=(50, X.shape[1])), y)


def test_predict_checks():
    X, y = data(n=300)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PrivateLinearRegression().predict(X)
    est = PrivateLinearRegression(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :-1])


def test_accountant_spends_and_refuses():
    X, y = data(n=500)
    acc = BudgetAccountant(epsilon=1.5)
    PrivateLinearRegression(epsilon=1.0, accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx(1.0)
    est = PrivateLinearRegression(epsilon=1.0, accountant=acc)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    with pytest.raises(BudgetExceededError):
        PrivateLinearRegression(method="none", accountant=BudgetAccountant(epsilon=1.0)).fit(X, y)
    # Gaussian objective perturbation: its RDP event, read from the public record
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = PrivateLinearRegression(epsilon=1.0, delta=1e-6, method="objective",
                                  accountant=acc).fit(X, y)
    assert 0 < acc.spent <= 10.0


def test_add_remove_needs_a_public_count():
    X, y = data(n=500)
    with pytest.warns(PrivacyLeakWarning, match="n_public"):
        PrivateLinearRegression(neighbouring="add_remove", random_state=0).fit(X, y)
    est = PrivateLinearRegression(neighbouring="add_remove", n_public=500, random_state=0)
    est.fit(X, y)
    assert est.privacy_["neighbouring"] == "add_remove" and est.privacy_["n_samples"] == 500


def test_targets_are_clipped_to_the_bound_before_adassp():
    """AdaSSP's sensitivity needs |y| <= label_bound: the estimator clips (to exactly B)
    before the mechanism, which itself refuses targets beyond its bound."""
    X, y = data(n=3000)
    y = 4.0 * y
    with pytest.warns(ClippingWarning, match="label_bound"):
        est = PrivateLinearRegression(method="adassp", delta=1e-6, label_bound=1.0,
                                      random_state=0).fit(X, y)
    assert est.privacy_["label_bound"] == 1.0
    from dperm.data.validation import bound_labels

    yc, k = bound_labels(y, 1.0)
    assert np.max(np.abs(yc)) == 1.0 and k == int(np.sum(np.abs(y) > 1.0))
