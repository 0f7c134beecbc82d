"""alpha="select" pinned bit for bit: seeded fits (an int random_state) recorded before
fit_with_selection stopped reading auto's Lambda from throw-away fits (the estimators'
``_auto_alpha_at`` computes it from public values).  The released model, ``alpha_`` and
``privacy_`` must not change by a bit.

Recorded in tests/pinned_select.npz on an x86-64 CPU at the SIMD level named in the file
(another level gives other last bits: the test is then skipped).  The selection's
constants are fixed here to the values they had when recorded, so that tuning them does
not touch this test.  To record again (only for a change MEANT to change results):

    DPERM_PIN_RECORD=1 pytest tests/privacy/test_selection_pinned.py
"""
import json
import os
import warnings

import numpy as np
import pytest

import dperm
from dperm import PrivateLinearClassifier, PrivateLinearRegression
from dperm.privacy import selection as S

_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "pinned_select.npz")
_RECORD = os.environ.get("DPERM_PIN_RECORD") == "1"

# the constants of the rule when the values were recorded
_CONSTANTS = {"SELECT_FACTORS": (0.5, 1.0, 2.0), "SELECT_EXPECTED_RUNS": 6.0,
              "SELECT_REFIT_SHARE": 0.1, "DEFAULT_SCORE_FRACTION": 0.1}


def _data(n=700, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(2 * d)
    s = X @ np.array([1.5, -1.0, 0.5, 0.0])
    y2 = np.where(s + 0.1 * rng.normal(size=n) > 0, 1, -1)
    y3 = np.digitize(s + 0.1 * rng.normal(size=n), [-0.2, 0.2])      # 0, 1, 2
    yr = 3.0 + 2.0 * s + 0.1 * rng.normal(size=n)
    return X, y2, y3, yr


def _cases():
    X, y2, y3, yr = _data()
    out = {}
    for how in ("objective", "output"):
        out[f"binary_{how}"] = (PrivateLinearClassifier(
            epsilon=2.0, alpha="select", perturbation=how, classes=[-1, 1], n_threads=1,
            random_state=5), X, y2)
        out[f"ovr_{how}"] = (PrivateLinearClassifier(
            epsilon=3.0, alpha="select", perturbation=how, classes=[0, 1, 2], n_threads=1,
            random_state=6), X, y3)
        out[f"regression_{how}"] = (PrivateLinearRegression(
            epsilon=2.0, alpha="select", method=how, label_bounds=(0.0, 6.0), n_threads=1,
            random_state=7), X, yr)
    # the public count rule: n_public (not the rows' count) normalises the objective
    out["binary_addremove_npublic"] = (PrivateLinearClassifier(
        epsilon=2.0, alpha="select", classes=[-1, 1], neighbouring="add_remove",
        n_public=900, fit_intercept=False, n_threads=1, random_state=8), X, y2)
    out["regression_npublic"] = (PrivateLinearRegression(
        epsilon=2.0, alpha="select", label_bound=8.0, n_public=1000, n_threads=1,
        random_state=9), X, yr)
    # a Generator random_state: each clone and fit takes a child stream of it
    out["binary_generator"] = (PrivateLinearClassifier(
        epsilon=2.0, alpha="select", classes=[-1, 1], n_threads=1,
        random_state=np.random.default_rng(10)), X, y2)
    out["regression_output_generator"] = (PrivateLinearRegression(
        epsilon=2.0, alpha="select", method="output", label_bounds=(0.0, 6.0), n_threads=1,
        random_state=np.random.default_rng(11)), X, yr)
    return out


def _released(est):
    return {"coef": np.ravel(est.coef_).astype(np.float64),
            "intercept": np.ravel(est.intercept_).astype(np.float64),
            "alpha": np.asarray(float(est.alpha_)),
            "privacy": np.asarray(json.dumps(est.privacy_, sort_keys=True))}


@pytest.fixture
def recorded_constants(monkeypatch):
    for k, v in _CONSTANTS.items():
        monkeypatch.setattr(S, k, v)


@pytest.mark.parametrize("case", sorted(_cases()))
def test_alpha_select_release_bit_identical(case, recorded_constants):
    est, X, y = _cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _released(est.fit(X, y))
    if _RECORD:
        old = dict(np.load(_FILE)) if os.path.exists(_FILE) else {}
        old.update({f"{case}/{k}": v for k, v in got.items()})
        old["simd"] = np.asarray(dperm.get_config()["simd"])
        np.savez(_FILE, **old)
        return
    ref = np.load(_FILE)
    if dperm.get_config()["simd"] != str(ref["simd"]):
        pytest.skip(f"pinned at SIMD level {ref['simd']}, this run uses "
                    f"{dperm.get_config()['simd']}")
    for k, v in got.items():
        want = ref[f"{case}/{k}"]
        if k == "privacy":
            assert json.loads(str(v)) == json.loads(str(want)), case
        else:
            assert v.dtype == want.dtype and v.shape == want.shape, (case, k)
            assert v.tobytes() == want.tobytes(), (case, k, v, want)
