"""RandomFourierFeatures (Algorithm 3): the norm bound, data independence, kernel approximation,
scikit-learn integration, and a demonstration that the private kernel classifier beats the
private linear one where a linear classifier is poor."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from dperm import PrivateLinearClassifier
from dperm.sklearn.features import RandomFourierFeatures

# seeded pipelines for reproducible comparisons (the seed's warning is asserted in
# tests/privacy/test_release.py)
pytestmark = [pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]


def _ball(n, d, rng, radius=1.0):
    """n points uniform in the d-ball of the given radius."""
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u * radius * rng.random((n, 1)) ** (1.0 / d)


def _gauss_kernel(X, gamma):
    sq = np.sum(X * X, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
    return np.exp(-gamma * d2)


@pytest.mark.parametrize("d,D,gamma", [(1, 1, 1.0), (2, 7, 0.3), (5, 500, 4.0), (30, 64, 50.0)])
def test_output_norm_at_most_one(d, D, gamma):
    rng = np.random.default_rng(d * 1000 + D)
    rff = RandomFourierFeatures(gamma=gamma, n_components=D, random_state=1).fit(np.zeros((1, d)))
    inside = _ball(2000, d, rng)
    outside = rng.standard_normal((500, d)) * 100.0  # far outside the unit ball
    for X in (inside, outside, np.zeros((3, d))):
        V = rff.transform(X)
        assert V.shape == (X.shape[0], D)
        assert np.all(np.linalg.norm(V, axis=1) <= 1.0 + 1e-12)


def test_paper_scale_would_break_the_bound():
    # the reason for the 1/sqrt(D) scale: with the paper's sqrt(2/D) some rows exceed norm 1
    rng = np.random.default_rng(3)
    rff = RandomFourierFeatures(gamma=2.0, n_components=10, random_state=0).fit(np.zeros((1, 2)))
    V = rff.transform(_ball(2000, 2, rng))
    assert np.max(np.linalg.norm(np.sqrt(2.0) * V, axis=1)) > 1.05


def test_parameters_do_not_depend_on_the_data():
    rng = np.random.default_rng(0)
    X1 = rng.standard_normal((50, 4))
    X2 = rng.standard_normal((7, 4)) * 1e3
    a = RandomFourierFeatures(gamma=0.7, n_components=40, random_state=123).fit(X1)
    b = RandomFourierFeatures(gamma=0.7, n_components=40, random_state=123).fit(X2)
    np.testing.assert_array_equal(a.omega_, b.omega_)
    np.testing.assert_array_equal(a.psi_, b.psi_)
    assert a.omega_.shape == (4, 40) and a.psi_.shape == (40,)
    assert np.all(np.abs(a.psi_) <= np.pi)
    # a different seed gives different draws; None gives fresh entropy per fit
    c = RandomFourierFeatures(gamma=0.7, n_components=40, random_state=124).fit(X1)
    assert not np.array_equal(a.omega_, c.omega_)
    e = RandomFourierFeatures(gamma=0.7, n_components=40)
    w1 = e.fit(X1).omega_.copy()
    w2 = e.fit(X1).omega_.copy()
    assert not np.array_equal(w1, w2)


def test_frequency_distribution():
    # omega entries ~ N(0, 2 gamma): check the variance and the phases' range/mean
    gamma = 3.0
    rff = RandomFourierFeatures(gamma=gamma, n_components=20000, random_state=5).fit(np.zeros((1, 3)))
    var = rff.omega_.var()
    assert abs(var / (2 * gamma) - 1) < 0.03
    assert abs(rff.psi_.mean()) < 0.05 and rff.psi_.min() >= -np.pi and rff.psi_.max() <= np.pi


def test_kernel_approximation_improves_with_n_components():
    rng = np.random.default_rng(11)
    X = _ball(80, 3, rng)
    gamma = 2.0
    K = _gauss_kernel(X, gamma)
    errs = {}
    for D in (50, 5000):
        e = []
        for seed in range(3):
            V = RandomFourierFeatures(gamma=gamma, n_components=D, random_state=seed).fit_transform(X)
            e.append(np.max(np.abs(2.0 * V @ V.T - K)))
        errs[D] = np.mean(e)
    # error ~ 1/sqrt(D): a factor ~10 expected, ask for 4
    assert errs[5000] < errs[50] / 4.0, errs
    assert errs[5000] < 0.1, errs


def test_fit_transform_equals_fit_then_transform_and_shapes():
    X = np.random.default_rng(0).standard_normal((10, 3))
    a = RandomFourierFeatures(n_components=9, random_state=2)
    np.testing.assert_array_equal(a.fit_transform(X), a.transform(X))
    assert a.n_features_in_ == 3
    names = a.get_feature_names_out()
    assert len(names) == 9 and names[0] == "randomfourierfeatures0"
    with pytest.raises(ValueError, match="X has 4 features"):
        a.transform(np.zeros((2, 4)))


def test_unfitted_transform_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RandomFourierFeatures().transform(np.zeros((2, 2)))


@pytest.mark.parametrize("kwargs,name", [
    ({"gamma": 0.0}, "gamma"), ({"gamma": -1.0}, "gamma"), ({"gamma": float("nan")}, "gamma"),
    ({"gamma": "1"}, "gamma"), ({"n_components": 0}, "n_components"),
    ({"n_components": 2.5}, "n_components"), ({"n_components": True}, "n_components"),
    ({"n_components": "10"}, "n_components"), ({"random_state": -3}, "random_state"),
    ({"random_state": "seed"}, "random_state"),
])
def test_bad_params_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        RandomFourierFeatures(**kwargs).fit(np.zeros((3, 2)))


def test_bad_input_raises():
    with pytest.raises(ValueError, match="X"):
        RandomFourierFeatures().fit(np.zeros(3))
    with pytest.raises(ValueError, match="X"):
        RandomFourierFeatures().fit(np.array([[np.nan, 1.0]]))


def test_pipeline_clone_get_params():
    rng = np.random.default_rng(0)
    X = _ball(200, 2, rng)
    y = np.where(np.linalg.norm(X, axis=1) > 0.6, 1, -1)
    pipe = Pipeline([("rff", RandomFourierFeatures(gamma=5.0, n_components=30, random_state=0)),
                     ("clf", PrivateLinearClassifier(data_norm=1.0, epsilon=1.0, classes=[-1, 1],
                                                     random_state=0, n_threads=1))])
    params = pipe.get_params()
    assert params["rff__gamma"] == 5.0 and params["rff__n_components"] == 30
    pipe2 = clone(pipe).set_params(rff__n_components=20)
    assert pipe2.get_params()["rff__n_components"] == 20
    assert not hasattr(pipe2.named_steps["rff"], "omega_")
    pipe2.fit(X, y)
    assert pipe2.named_steps["clf"].coef_.shape == (1, 20)
    assert pipe2.predict(X).shape == (200,)
    assert set(np.unique(pipe2.predict(X))) <= {-1, 1}
    r = repr(RandomFourierFeatures(gamma=2.0))
    assert "gamma=2.0" in r


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(RandomFourierFeatures(n_components=20, random_state=0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


def _rings(n, rng):
    """Two concentric rings in 2-D (radii 0.35 and 0.85), rows inside the unit ball, labels +-1."""
    y = np.where(rng.random(n) < 0.5, 1, -1)
    r = np.where(y == 1, 0.35, 0.85) + rng.normal(0.0, 0.05, n)
    t = rng.uniform(0.0, 2 * np.pi, n)
    X = np.column_stack([r * np.cos(t), r * np.sin(t)])
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0), y


def test_private_kernel_beats_private_linear_on_rings():
    # the demonstration asked for by Algorithm 3: same epsilon, same Lambda, same mechanism
    eps, alpha = 1.0, 1e-2
    lin_err, ker_err = [], []
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        X, y = _rings(3000, rng)
        Xt, yt = _rings(2000, rng)
        lin = PrivateLinearClassifier(perturbation="objective", epsilon=eps, alpha=alpha,
                                      data_norm=1.0, classes=[-1, 1], random_state=seed,
                                      n_threads=1)
        ker = Pipeline([("rff", RandomFourierFeatures(gamma=5.0, n_components=50, random_state=seed)),
                        ("clf", clone(lin))])
        lin_err.append(np.mean(lin.fit(X, y).predict(Xt) != yt))
        ker_err.append(np.mean(ker.fit(X, y).predict(Xt) != yt))
    lin_err, ker_err = np.mean(lin_err), np.mean(ker_err)
    print(f"rings, eps={eps}: private linear error {lin_err:.4f}, private kernel error {ker_err:.4f}")
    assert lin_err > 0.3  # a linear classifier cannot separate the rings
    assert ker_err < 0.1
    assert ker_err < lin_err - 0.25
