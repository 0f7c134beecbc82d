"""Shared by the multiclass Dask tests (test_dask_ovr.py, test_dask_softmax.py): the
chunkings, a K-class problem, and the model file compared apart from its coefficients."""
import json
import warnings

import numpy as np

from dperm.model_io import model_to_dict, model_to_json

#: 1 chunk, 3 equal chunks, uneven chunks (n = 1200)
CHUNKINGS = {"one": (1200,), "three": (400, 400, 400), "uneven": (700, 13, 250, 237)}


def problem(K, n=1200, d=6, seed=0):
    """Rows (some over norm 0.9: clipping on the workers) and K class indices."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (1.1 / np.sqrt(d))
    W = rng.normal(size=(K, d)) * 2.0
    codes = np.argmax(X @ W.T + 0.5 * rng.normal(size=(n, K)), axis=1)
    return X, codes


def quiet(fit):
    """fit() with its warnings silenced (the seeded-noise PrivacyLeakWarning, clipping)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


def model_file(est):
    """The model file's content without the coefficients (compared apart, to TOL)."""
    obj = json.loads(model_to_json(model_to_dict(est)))
    return {k: v for k, v in obj.items() if k not in ("coef", "intercept")}
