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


#: the DistributedFitError message of each injected chunk fault
FAULT_MESSAGE = {"missing": "partial sum", "twice": "contributed twice",
                 "rows": "contributed 199 rows"}


def inject_chunk_fault(monkeypatch, shard, fault, mode, only_class=None):
    """Break the workers' per-chunk sums (`shard` is dask_rows._Shard) with `fault`
    ("missing": chunk 0's sums never arrive; "twice": a shard also sends its first chunk's
    sums as chunk 1's; "rows": chunk 2 reports a row short), for every pass or only the
    passes of one class (`only_class`), under the reduction `mode` ("tree" or "flat")."""
    from dperm.data import dask_rows

    real = shard._per_chunk

    def broken(self, ops, W, fn, sums=False):
        out = real(self, ops, W, fn, sums)
        if only_class is not None and ("class", only_class) not in tuple(ops):
            return out
        if fault == "missing":
            return [o for o in out if o[0] != 0]
        if fault == "twice":
            return out + [(1,) + tuple(o[1:]) for o in out[:1] if o[0] != 1]
        return [(ci, nr - (ci == 2), f, g) for ci, nr, f, g in out]
    monkeypatch.setattr(shard, "_per_chunk", broken)
    monkeypatch.setattr(dask_rows, "REDUCTION", mode)
