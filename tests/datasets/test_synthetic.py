"""dperm.datasets.make_onehot_classification: synthetic one-hot CSR data."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from dperm.datasets import make_onehot_classification  # noqa: E402

N = 20_000


@pytest.fixture(scope="module")
def default():
    return make_onehot_classification(N, random_state=0, return_coef=True)


def _row_norms(X):
    return np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())


def test_shape_type_and_labels(default):
    X, y, coef = default
    assert isinstance(X, sp.csr_array)
    assert X.shape == (N, 400)
    assert y.shape == (N,) and y.dtype == np.float64
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert coef.shape == (400,)
    assert 0.25 <= (y > 0).mean() <= 0.45  # positive_fraction=0.35, plus label noise


def test_nnz_per_row_near_target(default):
    X = default[0]
    per_row = np.diff(X.indptr)
    assert abs(per_row.mean() - 30) <= 0.5
    # one non-zero per categorical field and per dense numeric column (3 of the 6) in
    # every row; only the 3 zero-inflated numeric columns vary
    assert per_row.max() - per_row.min() <= 3
    for target in (10, 50):
        Xt, _ = make_onehot_classification(2_000, n_features=300, nnz_per_row=target,
                                           random_state=1)
        assert abs(np.diff(Xt.indptr).mean() - target) <= 0.5


def test_row_norms_at_most_one(default):
    X = default[0]
    norms = _row_norms(X)
    assert norms.max() <= 1.0
    assert norms.min() > 0.5  # not degenerate: one-hot entries carry most of the norm
    assert np.all(X.data > 0)
    X32, _ = make_onehot_classification(5_000, dtype=np.float32, random_state=0)
    assert _row_norms(X32).max() <= 1.0


def test_canonical_csr(default):
    X = default[0]
    assert X.has_canonical_format
    X.check_format(full_check=True)
    for i0, i1 in zip(X.indptr[:-1], X.indptr[1:]):
        cols = X.indices[i0:i1]
        assert np.all(np.diff(cols) > 0)
        if i0 > 200 * 30:
            break
    # the flags are honest: re-sorting and summing duplicates changes nothing
    Y = X.copy()
    Y.has_canonical_format = False
    Y.sum_duplicates()
    assert Y.nnz == X.nnz
    assert np.array_equal(Y.indices, X.indices) and np.array_equal(Y.data, X.data)


def test_onehot_blocks(default):
    """Past the numeric columns, each row holds one entry per field and all equal values."""
    X = default[0]
    dense = X[:500].toarray()
    onehot = dense[:, 6:]
    vals = onehot[onehot != 0]
    assert np.allclose(vals, vals[0])
    # every column is used, and category frequencies are skewed (Zipf-like)
    counts = np.diff(X.tocsc().indptr)[6:]
    assert counts.min() > 0
    assert counts.max() / np.median(counts) > 5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_dtypes_honoured(dtype, index_dtype):
    X, y = make_onehot_classification(1_000, n_features=120, nnz_per_row=12, n_numeric=2,
                                      dtype=dtype, index_dtype=index_dtype, random_state=3)
    assert X.dtype == dtype
    assert X.indices.dtype == index_dtype and X.indptr.dtype == index_dtype
    assert X.shape == (1_000, 120)
    assert _row_norms(X).max() <= 1.0


def test_float32_matches_float64():
    X64, y64 = make_onehot_classification(2_000, random_state=5)
    X32, y32 = make_onehot_classification(2_000, dtype=np.float32, random_state=5)
    assert np.array_equal(y64, y32)
    assert np.array_equal(X64.indices, X32.indices)
    assert np.allclose(X64.data, X32.data, rtol=1e-6)


def test_seeded_reproducibility():
    a = make_onehot_classification(3_000, random_state=42)
    b = make_onehot_classification(3_000, random_state=np.random.default_rng(42))
    c = make_onehot_classification(3_000, random_state=43)
    for A, B in ((a, b),):
        assert np.array_equal(A[0].indptr, B[0].indptr)
        assert np.array_equal(A[0].indices, B[0].indices)
        assert np.array_equal(A[0].data, B[0].data)
        assert np.array_equal(A[1], B[1])
    assert not np.array_equal(a[1], c[1])


def test_bayes_error_realistic(default):
    """The planted model's decision rule errs on about bayes_error (0.2) of the rows."""
    X, y, coef = default
    score = X @ coef
    t = np.quantile(score, 1 - 0.35)
    err = np.mean(np.where(score > t, 1.0, -1.0) != y)
    assert 0.15 <= err <= 0.25


def test_zero_numeric_and_invalid_arguments():
    X, _ = make_onehot_classification(500, n_features=100, nnz_per_row=10, n_numeric=0,
                                      random_state=0)
    assert np.all(np.diff(X.indptr) == 10)
    with pytest.raises(ValueError, match="n_fields"):
        make_onehot_classification(100, n_features=40, nnz_per_row=30)
    with pytest.raises(ValueError, match="dtype"):
        make_onehot_classification(100, dtype=np.int32)
    with pytest.raises(ValueError, match="index_dtype"):
        make_onehot_classification(100, index_dtype=np.int16)
    with pytest.raises(ValueError, match="n_samples"):
        make_onehot_classification(0)
    with pytest.raises(ValueError, match="bayes_error"):
        make_onehot_classification(100, bayes_error=0.6)
