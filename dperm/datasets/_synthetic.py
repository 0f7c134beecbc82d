"""Synthetic one-hot encoded tabular data (scipy.sparse CSR) for benchmarks and tests."""
import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from dperm.data.validation import check_random_state

__all__ = ["make_onehot_classification"]

# zero-inflated numeric columns (capital gains, dividends, ...): P(non-zero) cycles through these
_SPARSE_NUMERIC_P = (0.1, 0.2, 0.3)


def _check_int(value: Any, name: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)) or value < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {value!r}")
    return int(value)


def _check_fraction(value: Any, name: str, lo: float, hi: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a number in ({lo}, {hi}), got {value!r}") from None
    if not lo < v < hi:
        raise ValueError(f"{name}: must be in ({lo}, {hi}), got {value!r}")
    return v


def _sigmoid(z: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def make_onehot_classification(
    n_samples: int = 200_000,
    n_features: int = 400,
    nnz_per_row: float = 30,
    n_numeric: int = 6,
    dtype: npt.DTypeLike = np.float64,
    index_dtype: npt.DTypeLike = np.int32,
    random_state: int | np.random.Generator | None = None,
    *,
    bayes_error: float = 0.2,
    label_noise: float = 0.05,
    positive_fraction: float = 0.35,
    return_coef: bool = False,
) -> tuple[Any, ...]:
    """A sparse binary classification problem shaped like one-hot encoded census data.

    Mimics real tabular data after one-hot encoding (e.g. a 199,523 x 408
    census extract with 33 non-zeros per row): a few numeric columns followed
    by ``n_fields`` categorical fields, each one-hot encoded into its own block
    of columns, so every row has exactly one non-zero per field.

    Layout (columns, left to right):

    * ``n_numeric`` numeric columns. The first ``ceil(n_numeric / 2)`` are
      dense (non-zero in every row, Beta(2, 4)-distributed, like age or hours
      worked); the rest are zero-inflated (non-zero in 10%, 20%, 30%, ... of
      the rows, cycling, with a heavy-tailed log-scaled magnitude, like
      capital gains or dividends). Raw values lie in (0, 1].
    * ``n_fields = round(nnz_per_row - E[numeric non-zeros])`` categorical
      fields sharing the remaining ``n_features - n_numeric`` columns. Block
      sizes are skewed (at least 2 categories each; a few fields with many
      categories, many with few). Within a field the category frequencies
      follow a Zipf law p_j proportional to 1 / j^s with s drawn from
      [0.8, 1.6] per field, assigned to the block's columns in random order,
      so rare categories (and, for small ``n_samples``, all-zero columns)
      occur as in real data.

    Every entry is then multiplied by one public constant
    c = (1 - 1e-6) / sqrt(n_numeric + n_fields), so every row has Euclidean
    norm <= 1 (dperm's ``data_norm = 1`` convention) whatever the values, in
    either dtype; one-hot entries equal c, numeric entries lie in (0, c].

    Labels come from a logistic model with a planted weight vector w*
    (per-field effect sizes drawn from an exponential law, so a few fields
    dominate, plus Gaussian per-category effects; Gaussian numeric weights):
    with margin m = s (x.w* - t), P(y = +1 | x) = label_noise + (1 - 2
    label_noise) sigmoid(m), where t is the (1 - positive_fraction) quantile
    of x.w* and s is calibrated on the sample so that the Bayes error
    E[min(P, 1 - P)] equals ``bayes_error``. There is no intercept column;
    the one-hot blocks span the constant vector, so a model without
    intercept can still represent the offset t.

    Parameters
    ----------
    n_samples : int
        Number of rows n (>= 1).
    n_features : int
        Number of columns d; needs d - n_numeric >= 2 n_fields.
    nnz_per_row : int or float
        Target mean number of stored non-zeros per row (numeric non-zeros
        plus one per categorical field); the realised mean is within 0.5 of it.
    n_numeric : int
        Number of numeric columns (>= 0).
    dtype : {numpy.float64, numpy.float32}
        dtype of X's values.
    index_dtype : {numpy.int32, numpy.int64}
        dtype of X's ``indices`` and ``indptr``.
    random_state : None, int or numpy.random.Generator
        Seed (reproducible output) or generator; None draws fresh entropy.
    bayes_error : float
        Error rate of the Bayes-optimal classifier, in (label_noise, 0.5).
    label_noise : float
        Probability floor of either label for every x (irreducible flips), in [0, 0.5).
    positive_fraction : float
        Approximate fraction of y = +1, in (0, 1).
    return_coef : bool
        Also return the planted weight vector.

    Returns
    -------
    X : scipy.sparse.csr_array of shape (n_samples, n_features)
        Canonical format (sorted indices, no duplicates, no explicit zeros),
        values of ``dtype`` (unitless, in (0, c]), indices and indptr of
        ``index_dtype``. Every row norm <= 1.
    y : ndarray of shape (n_samples,), float64
        Labels in {-1.0, +1.0}.
    coef : ndarray of shape (n_features,), float64
        Only with ``return_coef``: the planted w*, scaled to X's units so that
        the Bayes-optimal decision is sign(X @ coef - offset) for an offset
        absorbed by the one-hot blocks; its sign pattern, not its norm, is
        comparable with a fitted model.
    """
    import scipy.sparse as sp

    n = _check_int(n_samples, "n_samples", 1)
    d = _check_int(n_features, "n_features", 1)
    n_num = _check_int(n_numeric, "n_numeric", 0)
    try:
        target = float(nnz_per_row)
    except (TypeError, ValueError):
        raise ValueError(f"nnz_per_row: must be a number, got {nnz_per_row!r}") from None
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype: must be float32 or float64, got {dtype}")
    index_dtype = np.dtype(index_dtype)
    if index_dtype not in (np.int32, np.int64):
        raise ValueError(f"index_dtype: must be int32 or int64, got {index_dtype}")
    noise = float(label_noise)
    if not 0.0 <= noise < 0.5:
        raise ValueError(f"label_noise: must be in [0, 0.5), got {label_noise!r}")
    bayes = _check_fraction(bayes_error, "bayes_error", noise, 0.5)
    pos = _check_fraction(positive_fraction, "positive_fraction", 0.0, 1.0)
    if n_num > d:
        raise ValueError(f"n_numeric: must be <= n_features={d}, got {n_num}")
    n_dense = (n_num + 1) // 2
    p_nz = np.ones(n_num)
    p_nz[n_dense:] = [_SPARSE_NUMERIC_P[j % len(_SPARSE_NUMERIC_P)] for j in range(n_num - n_dense)]
    n_fields = int(round(target - p_nz.sum()))
    d_cat = d - n_num
    if n_fields < 1 or 2 * n_fields > d_cat:
        raise ValueError(
            f"nnz_per_row={nnz_per_row!r} with n_numeric={n_num} asks for {n_fields} categorical "
            f"field(s); needs 1 <= n_fields and 2 * n_fields <= n_features - n_numeric = {d_cat}")
    if n * (n_num + n_fields) > np.iinfo(index_dtype).max:
        raise ValueError(f"index_dtype: {index_dtype} cannot index {n * (n_num + n_fields)} non-zeros")
    rng = check_random_state(random_state, "random_state")

    # --- structure: block sizes (>= 2 each, skewed), Zipf frequencies per field
    weights = rng.lognormal(0.0, 1.0, size=n_fields)
    sizes = 2 + rng.multinomial(d_cat - 2 * n_fields, weights / weights.sum())
    offsets = n_num + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    zipf_s = rng.uniform(0.8, 1.6, size=n_fields)

    # --- planted model (raw units: one-hot 1, numeric in (0, 1])
    field_scale = rng.exponential(1.0, size=n_fields)
    w = np.empty(d)
    w[:n_num] = rng.standard_normal(n_num)
    for f in range(n_fields):
        w[offsets[f]:offsets[f] + sizes[f]] = field_scale[f] * rng.standard_normal(sizes[f])

    # --- rows: values (n, n_num + n_fields) and their columns
    F = n_num + n_fields
    vals = np.empty((n, F))
    cols = np.empty((n, F), dtype=np.int64)
    cols[:, :n_num] = np.arange(n_num)
    for j in range(n_num):
        if j < n_dense:
            v = rng.beta(2.0, 4.0, size=n)
        else:
            # heavy-tailed amount, log-scaled into (0, 1] by a fixed public cap
            v = np.minimum(np.log1p(rng.lognormal(6.0, 2.0, size=n)) / np.log1p(1e6), 1.0)
            v = np.where(rng.random(n) < p_nz[j], np.maximum(v, 1e-6), 0.0)
        vals[:, j] = v
    vals[:, n_num:] = 1.0
    for f in range(n_fields):
        p = 1.0 / np.arange(1, sizes[f] + 1) ** zipf_s[f]
        cdf = np.cumsum(p / p.sum())
        cdf[-1] = 1.0
        cat = np.searchsorted(cdf, rng.random(n), side="right")
        perm = rng.permutation(sizes[f])  # which column gets the j-th most frequent category
        cols[:, n_num + f] = offsets[f] + perm[np.minimum(cat, sizes[f] - 1)]

    # --- labels
    score = np.einsum("ij,ij->i", vals, w[cols])
    centered = score - np.quantile(score, 1.0 - pos)
    a = np.abs(centered)

    def err(s: float) -> float:
        return noise + (1.0 - 2.0 * noise) * _sigmoid(-s * a).mean()

    lo, hi = 0.0, 1.0
    while err(hi) > bayes and hi < 1e12:
        lo, hi = hi, hi * 2.0
    for _ in range(60):  # bisection on a decreasing function of s
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if err(mid) > bayes else (lo, mid)
    s = 0.5 * (lo + hi)
    prob = noise + (1.0 - 2.0 * noise) * _sigmoid(s * centered)
    y = np.where(rng.random(n) < prob, 1.0, -1.0)

    # --- CSR (rows already have increasing columns: numeric first, blocks in order)
    c = (1.0 - 1e-6) / np.sqrt(F)
    keep = vals != 0.0
    data = (vals[keep] * c).astype(dtype)
    indices = cols[keep].astype(index_dtype)
    indptr = np.zeros(n + 1, dtype=index_dtype)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    X = sp.csr_array((data, indices, indptr), shape=(n, d))
    # scipy may narrow int64 indices whose values fit in int32: honour the request
    X.indices = X.indices.astype(index_dtype, copy=False)
    X.indptr = X.indptr.astype(index_dtype, copy=False)
    X.has_sorted_indices = True
    X.has_canonical_format = True
    if return_coef:
        return X, y, w * (s / c)
    return X, y
