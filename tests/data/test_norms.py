"""dperm.data.norms: row norms without overflow, and the one rounding guard (issue 29,
item 5; issue 27, item 4)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dperm.data import norms
from dperm.data.design import INTERCEPT_SCALE
from dperm.data.validation import apply_norm_bound, bound_rows, row_norms

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning")]


def base_rows(n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1).max()


@pytest.mark.parametrize("big", [1e154, 1e155, 1e200, 1e300])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_row_norms_do_not_overflow(big, kind):
    """A cell of about 1e155 made the sum of squares overflow: the norm was inf and the
    clipping factor R / inf = 0 (issue 29, item 5)."""
    X = base_rows()
    X[3, 1] = big
    X[7, :] = [big, -big, 0.5 * big, 0.0, 1.0]
    A = sp.csr_array(X) if kind == "csr" else X
    got = row_norms(A)
    assert np.all(np.isfinite(got))
    assert got[3] == pytest.approx(big, rel=1e-15)
    assert got[7] == pytest.approx(big * 1.5, rel=1e-15)
    # the other rows: bit for bit as before (the plain sum of squares of that storage)
    rest = np.setdiff1d(np.arange(X.shape[0]), [3, 7])
    small = X[rest]
    assert np.array_equal(got[rest], row_norms(sp.csr_array(small) if kind == "csr" else small))
    np.testing.assert_allclose(got[rest], np.linalg.norm(small, axis=1), rtol=1e-15)
    assert np.isfinite(norms.strict_row_norms(X)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_huge_cells_are_clipped_onto_the_sphere(dtype, kind):
    big = 3e38 if dtype == np.float32 else 1e155
    X = base_rows().astype(dtype)
    X[3, :] = [0, big, 0, 0, 0]
    X[5, :] = [big, big, 0, 0, 0]
    A = sp.csr_array(X) if kind == "csr" else X
    R = 0.5
    for out in (apply_norm_bound(A, R, "clip"), bound_rows(A, R, "clip")):
        n2 = row_norms(out)
        assert n2.max() <= R
        assert n2[3] == pytest.approx(R, rel=1e-6) and n2[5] == pytest.approx(R, rel=1e-6)
    with pytest.raises(ValueError, match="norm above data_norm"):
        bound_rows(A, R, "error")


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_a_row_too_large_to_clip_is_refused_naming_row_column_and_value(kind):
    X = base_rows()
    X[6, 2] = 1.7e308
    A = sp.csr_array(X) if kind == "csr" else X
    for f in (apply_norm_bound, bound_rows):
        with pytest.raises(ValueError, match=r"X: row 6 .*column 2 holds 1\.7e\+308"):
            f(A, 1.0, "clip")


def fit(X, y, **kw):
    from dperm import PrivateLinearClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateLinearClassifier(epsilon=1.0, alpha=0.01, classes=[0, 1],
                                       random_state=0, **kw).fit(X, y)


@pytest.mark.parametrize("kind", ["dense", "csr", "float32"])
def test_fit_with_a_huge_cell_clips_that_row(kind):
    """Issue 29, item 5: a cell >= ~1e155 gave coefficients and intercept exactly 0.0
    with a normal privacy_ record; now the row is clipped as a cell of 1e150 is (both
    rows become the unit vector times R)."""
    X = base_rows(300, 4)
    y = (X[:, 0] > 0).astype(int)
    big = 1e30 if kind == "float32" else 1e155
    ref, bad = X.copy(), X.copy()
    ref[5] = [0.0, 1e20 if kind == "float32" else 1e150, 0.0, 0.0]
    bad[5] = [0.0, big, 0.0, 0.0]
    conv = {"dense": np.asarray, "csr": sp.csr_array,
            "float32": lambda a: a.astype(np.float32)}[kind]
    m_ref, m_bad = fit(conv(ref), y), fit(conv(bad), y)
    assert np.any(m_bad.coef_ != 0.0)
    np.testing.assert_allclose(m_bad.coef_, m_ref.coef_, rtol=1e-6)
    np.testing.assert_allclose(m_bad.intercept_, m_ref.intercept_, rtol=1e-6)


def test_regression_with_a_huge_cell_clips_that_row():
    from dperm import PrivateLinearRegression

    X = base_rows(300, 4)
    t = X[:, 0].copy()
    ref, bad = X.copy(), X.copy()
    ref[5] = [0.0, 1e150, 0.0, 0.0]
    bad[5] = [0.0, 1e200, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = [PrivateLinearRegression(epsilon=1.0, alpha=0.01, label_bound=1.0,
                                     random_state=0).fit(A, t) for A in (ref, bad)]
    assert np.any(m[1].coef_ != 0.0)
    np.testing.assert_allclose(m[1].coef_, m[0].coef_, rtol=1e-6)


def test_the_guard_has_one_home():
    """Issue 27, item 4: the margins are the module's constants (the values pinned fits
    were recorded with), and the encoders import the guard from it."""
    import inspect

    import dperm.datasets._adult as adult
    import dperm.datasets._kddcup99 as kdd
    import dperm.schema as schema

    assert norms.SHRINK == 1.0 - 8 * np.finfo(np.float64).eps
    assert norms.FACTOR_MARGIN == 1.0 - 2.0**-40
    assert INTERCEPT_SCALE == (1.0 / np.sqrt(2.0)) * (1.0 - 2.0**-40)
    assert schema.shrink_to is norms.shrink_to
    assert adult.project_rows is kdd.project_rows is norms.project_rows
    for mod in (schema, adult, kdd):
        src = inspect.getsource(mod)
        assert "finfo" not in src and "2.0**-40" not in src and "_row_norms" not in src


@pytest.mark.parametrize("mode", ["each", "global", "none"])
def test_project_rows_keeps_every_norm_within_the_bound(mode):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 23))
    X[:500] /= np.linalg.norm(X[:500], axis=1, keepdims=True)   # at the bound, rounding either way
    if mode == "none":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
    else:
        X[3, 4] = 1e200                                        # and one that would overflow
    norms.project_rows(X, mode)
    assert norms.strict_row_norms(X).max() <= 1.0
    assert row_norms(X).max() <= 1.0
    assert np.isfinite(X).all()
