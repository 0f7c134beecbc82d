"""check_X's refusals, whole message by message (check_X and its steps _refuse_dask,
_check_design_rows, _numeric_array, _check_2d, _check_shape)."""
import re

import numpy as np
import pytest
import scipy.sparse as sp

from dperm.data.validation import check_X


class FakeDask:
    """Looks like a Dask collection to check_X (its type's module is dask's)."""


FakeDask.__module__ = "dask.array.core"


def _refused(error, message, X, **kw):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        check_X(X, **kw)


@pytest.mark.parametrize("X, kw, error, message", [
    (FakeDask(), dict(name="Z"), TypeError,
     "Z: a Dask collection is accepted by dperm.optim.erm.minimize, the mechanisms, "
     "private_tuning and PrivateLinearClassifier (fit, predict, score, ...: they run on the "
     "workers); here it would be loaded into this process. Elsewhere apply the function per "
     "block: Z.map_blocks(f, ...)"),
    (sp.csr_matrix(np.eye(2)), {}, TypeError,
     "X: sparse input is not supported here; pass a dense array (e.g. X.toarray())"),
    (np.ones((2, 2), dtype=complex), {}, ValueError,
     "X: Complex data not supported (complex values are not supported)"),
    (np.array([[1.0, "a"]], dtype=object), {}, ValueError,
     "X: must be numeric (could not convert string to float: 'a')"),
    (np.array([["a", "b"]]), {}, ValueError, "X: must be numeric, got dtype <U1"),
    (np.ones(3), {}, ValueError,
     "X: expected a 2-D array (n_samples, n_features), got shape (3,). Reshape your data "
     "either using array.reshape(-1, 1) if your data has a single feature or "
     "array.reshape(1, -1) if it contains a single sample."),
    (np.ones((2, 2, 2)), {}, ValueError,
     "X: expected a 2-D array (n_samples, n_features), got shape (2, 2, 2)."),
    (np.ones((1, 2)), dict(min_samples=2), ValueError,
     "X: needs at least 2 samples; found array with 1 sample(s) (shape=(1, 2)) while a "
     "minimum of 2 is required."),
    (np.ones((2, 2)) * np.array([1.0, np.nan]), {}, ValueError,
     "X: contains NaN or infinity (row 0, column 1: nan); remove or replace the value"),
])
def test_check_X_refusals(X, kw, error, message):
    _refused(error, message, X, **kw)


def test_an_object_cell_that_is_no_number():
    X = np.empty((1, 2), dtype=object)
    X[0, 0], X[0, 1] = 1.0, object()
    with pytest.raises(TypeError, match=r"^X: must be numeric \(.*'object'.*\)$"):
        check_X(X)


def test_ragged_rows_name_the_conversion():
    with pytest.raises(ValueError, match=r"^X: could not be converted to an array \(.+\)$"):
        check_X([[1.0, 2.0], [3.0]])


def test_dtypes_kept_or_converted():
    assert check_X(np.ones((2, 2), dtype=np.float32)).dtype == np.float32
    out = check_X(np.array([[1, 2]], dtype=object))
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert check_X(np.ones((2, 2), dtype=bool)).dtype == np.float64
