"""check_X's sparse path, branch by branch: every refusal with its whole message (the
texts users see, kept word for word), and what comes back for each kind of accepted input
(used in place, converted, made canonical), the user's matrix never modified."""
import re

import numpy as np
import pytest
import scipy.sparse as sp

from dperm.data.validation import check_X


def raw_csr(data, indices, indptr, shape):
    """A csr_matrix holding exactly these arrays (no scipy check or conversion)."""
    m = sp.csr_matrix((shape[0] if shape[0] else 1, shape[1] if shape[1] else 1))
    m.data, m.indices, m.indptr = data, indices, indptr
    m._shape = shape
    return m


def good():
    # 3 x 4: row 0 = (0:1, 2:2), row 1 empty, row 2 = (1:3, 3:4)
    return (np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 2, 1, 3], dtype=np.int32),
            np.array([0, 2, 2, 4], dtype=np.int32))


def refuses(X, message, exc=ValueError, min_samples=1):
    kept = [np.array(a, copy=True) for a in (X.data, X.indices, X.indptr)] \
        if hasattr(X, "indptr") else None
    with pytest.raises(exc, match="^" + re.escape(message) + "$"):
        check_X(X, accept_sparse=True, min_samples=min_samples)
    if kept is not None:
        for a, b in zip(kept, (X.data, X.indices, X.indptr)):
            np.testing.assert_array_equal(a, b)


def test_one_dimensional_sparse():
    refuses(sp.coo_array(np.array([1.0, 0.0, 2.0])),
            "X: expected a 2-D sparse matrix, got 1 dimensions")


def test_too_few_rows_and_no_columns():
    refuses(sp.csr_matrix(np.ones((2, 3))),
            "X: needs at least 3 samples; found array with 2 sample(s) (shape=(2, 3)) while a "
            "minimum of 3 is required.", min_samples=3)
    refuses(sp.csr_matrix((3, 0)),
            "X: needs at least 1 feature; found array with 0 feature(s) (shape=(3, 0)) while "
            "a minimum of 1 is required.")


def test_complex_and_non_numeric_values():
    d, i, p = good()
    refuses(raw_csr(d + 1j, i, p, (3, 4)),
            "X: Complex data not supported (complex values are not supported)")
    refuses(raw_csr(np.array(["a", "b", "c", "d"]), i, p, (3, 4)),
            "X: must be numeric, got dtype <U1")


def test_malformed_indptr():
    d, i, p = good()
    refuses(raw_csr(d, i, p[:-1], (3, 4)), "X: malformed CSR: indptr has 3 entries for 3 rows")
    refuses(raw_csr(d, i, p.reshape(2, 2), (3, 4)),
            "X: malformed CSR: indptr has 2 entries for 3 rows")
    refuses(raw_csr(d, i, np.array([1, 2, 2, 4], dtype=np.int32), (3, 4)),
            "X: malformed CSR: indptr must start at 0 and never decrease")
    refuses(raw_csr(d, i, np.array([0, 3, 2, 4], dtype=np.int32), (3, 4)),
            "X: malformed CSR: indptr must start at 0 and never decrease")
    refuses(raw_csr(d[:3], i, p, (3, 4)),
            "X: malformed CSR: indptr says 4 stored entries but indices has 4 and data 3")
    refuses(raw_csr(d, i[:2], p, (3, 4)),
            "X: malformed CSR: indptr says 4 stored entries but indices has 2 and data 4")


def test_column_index_out_of_range():
    d, i, p = good()
    for bad, lo, hi in ((-1, -1, 3), (4, 0, 4), (7, 0, 7)):
        j = i.copy()
        j[1] = bad
        refuses(raw_csr(d, j, p, (3, 4)), f"X: column indices must lie in [0, 4); found {lo} to {hi}")
    # unsigned indices: the range is checked before the cast to a signed type could wrap
    j = i.astype(np.uint64)
    j[1] = np.uint64(2 ** 64 - 1)
    refuses(raw_csr(d, j, p.astype(np.uint64), (3, 4)),
            f"X: column indices must lie in [0, 4); found 0 to {2 ** 64 - 1}")
    # after a conversion (int64 values): the checked copy's indices are reported
    j = i.astype(np.int64)
    j[3] = 9
    refuses(raw_csr(d.astype(np.int64), j, p, (3, 4)),
            "X: column indices must lie in [0, 4); found 0 to 9")


def test_nonfinite_value_names_row_and_column():
    d, i, p = good()
    d[3] = np.inf
    refuses(raw_csr(d, i, p, (3, 4)),
            "X: contains NaN or infinity (row 2, column 3: inf); remove or replace the value")
    d[3], d[1] = 4.0, np.nan
    refuses(raw_csr(d.astype(np.float32), i, p, (3, 4)),
            "X: contains NaN or infinity (row 0, column 2: nan); remove or replace the value")


def test_canonical_csr_is_used_in_place():
    for vt in (np.float32, np.float64):
        for it in (np.int32, np.int64):
            d, i, p = good()
            X = raw_csr(d.astype(vt), i.astype(it), p.astype(it), (3, 4))
            out = check_X(X, accept_sparse=True)
            assert out is X
            assert out.data.dtype == vt and out.indices.dtype == it and out.indptr.dtype == it


@pytest.mark.parametrize("case", ["int values", "bool values", "mixed index dtypes",
                                  "uint16 indices", "data longer than nnz",
                                  "strided data", "csc", "coo"])
def test_converted_copies(case):
    d, i, p = good()
    dense = np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 4]])
    vt, it = np.float64, np.int32
    if case == "int values":
        X = raw_csr(d.astype(np.int64), i, p, (3, 4))
    elif case == "bool values":
        X = raw_csr(np.ones(4, dtype=bool), i, p, (3, 4))
        dense = (dense != 0).astype(np.float64)
    elif case == "mixed index dtypes":
        X, it = raw_csr(d, i, p.astype(np.int64), (3, 4)), np.int64
    elif case == "uint16 indices":
        X, it = raw_csr(d, i.astype(np.uint16), p, (3, 4)), np.int64
    elif case == "data longer than nnz":
        X = raw_csr(np.append(d, 99.0), np.append(i, 0).astype(np.int32), p, (3, 4))
    elif case == "strided data":
        X = raw_csr(np.repeat(d, 2)[::2], i, p, (3, 4))
    elif case == "csc":
        X = sp.csc_matrix(dense)
    else:
        X = sp.coo_array(dense)
    kept = X.toarray()
    out = check_X(X, accept_sparse=True)
    assert out is not X and out.format == "csr"
    if case not in ("csc", "coo"):
        assert out.data.dtype == vt and out.indices.dtype == it and out.indptr.dtype == it
        assert out.data.shape[0] == 4 and out.indices.shape[0] == 4
    assert out.data.flags.c_contiguous and out.indices.flags.c_contiguous
    np.testing.assert_array_equal(out.toarray(), dense)
    np.testing.assert_array_equal(X.toarray(), kept)


def test_unsorted_and_duplicate_indices_are_made_canonical_on_a_copy():
    data = np.array([2.0, 1.0, 0.5, 3.0, 4.0])
    ind = np.array([2, 0, 2, 3, 1], dtype=np.int32)     # row 0 unsorted, column 2 twice
    ptr = np.array([0, 3, 3, 5], dtype=np.int32)
    X = raw_csr(data, ind, ptr, (3, 4))
    kept = (data.copy(), ind.copy(), ptr.copy())
    out = check_X(X, accept_sparse=True)
    assert out is not X
    np.testing.assert_array_equal(out.indices, [0, 2, 1, 3])
    np.testing.assert_array_equal(out.data, [1.0, 2.5, 4.0, 3.0])
    np.testing.assert_array_equal(out.indptr, [0, 2, 2, 4])
    for a, b in zip(kept, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(a, b)


def test_empty_rows_and_empty_matrix():
    X = sp.csr_matrix((5, 3))
    out = check_X(X, accept_sparse=True)
    assert out.shape == (5, 3) and out.nnz == 0
    with pytest.raises(ValueError, match=r"^X: needs at least 1 samples; found array with 0 "):
        check_X(sp.csr_matrix((0, 3)), accept_sparse=True)
    assert check_X(sp.csr_matrix((0, 3)), accept_sparse=True, min_samples=0).shape == (0, 3)
