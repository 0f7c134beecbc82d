"""DesignRows: the rows the kernels build must stay inside the public norm bound."""
import numpy as np
import pytest

from dperm.data.design import DesignRows, WithInterceptColumn
from dperm.data.validation import bound_rows, row_norms

# rows beyond the bound on purpose: the clipping itself is what is tested
pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning")]


def kernel_rows(D, y):
    """The rows exactly as the kernels form them: entries times the signed row weight,
    the constant column as constant_column() times the same weight (float64)."""
    s = D.signed_weights(y)
    X = np.asarray(D.X, dtype=np.float64) * s[:, None]
    c = D.constant_column()
    return X if c is None else np.hstack([X, (c * s)[:, None]])


def unit_rows(n=20_000, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)     # norms 1 up to rounding, both sides
    X[: n // 4] *= 3.0                                 # and a quarter far outside
    return X, np.where(rng.random(n) < 0.5, -1.0, 1.0)


@pytest.mark.parametrize("R", [1.0, 0.37, 5.0])
def test_intercept_rows_never_exceed_the_bound(R):
    X, y = unit_rows()
    X = X * R
    D = WithInterceptColumn(bound_rows(X, R, "clip"), R)
    D = bound_rows(D, R, "clip")
    norms = row_norms(kernel_rows(D, y))     # the norm the bound is checked with
    assert norms.max() <= R
    np.testing.assert_allclose(row_norms(D), norms, rtol=1e-12)


def test_the_check_has_power():
    """Rows divided by their own norm land a rounding above 1 in about 2% of cases: fed to
    the kernels without bound_rows, the check above fails; through bound_rows it holds.
    (Norms as row_norms computes them; how an exact real norm relates to a computed one
    is floating-point business of its own.)"""
    X, y = unit_rows()
    Xr = X / row_norms(X)[:, None]
    raw = row_norms(kernel_rows(DesignRows(Xr), y))
    assert (raw > 1.0).any() and raw.max() - 1.0 < 1e-15
    assert row_norms(kernel_rows(bound_rows(Xr, 1.0, "clip"), y)).max() <= 1.0


def test_clipping_factor_is_public_rowwise_map():
    X, y = unit_rows()
    D = bound_rows(X, 1.0, "clip")
    assert isinstance(D, DesignRows) and np.all(D.factor <= 1.0)
    # a row's factor depends on that row only
    D2 = bound_rows(X[::-1].copy(), 1.0, "clip")
    np.testing.assert_array_equal(D.factor, D2.factor[::-1])
    with pytest.raises(ValueError, match="norm above data_norm"):
        bound_rows(X, 1.0, "error")


def test_estimator_reads_the_data_once_for_checks_and_norms(monkeypatch):
    """Validation and row norms are passes over X (a memory map of gigabytes, say): the
    estimator, the mechanism and the solver below it share one of each."""
    import dperm
    from dperm.data import _arrays
    from dperm.data import validation as _validation

    X, y = unit_rows(n=3000)
    calls = {"finite": 0, "norms": 0}
    finite, norms = _validation._check_finite, _arrays.array_row_norms   # the passes over X

    def count(key, fn):
        def wrapped(*a, **k):
            calls[key] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(_validation, "_check_finite", count("finite", finite))
    monkeypatch.setattr(_arrays, "array_row_norms", count("norms", norms))
    for perturbation in ("objective", "output", "none"):
        calls.update(finite=0, norms=0)
        dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1,
                                      perturbation=perturbation).fit(X, y)
        assert calls == {"finite": 1, "norms": 1}, (perturbation, calls)
