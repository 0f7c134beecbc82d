"""What a regression fit releases: public inputs and the noisy model only.  Neighbouring
data sets (one row and its target replaced) release identical records and metadata;
the analyst-only diagnostics do differ (so a leak would be caught)."""
import numpy as np
import pytest

from dperm import PrivateLinearRegression
from dperm.privacy.mechanisms import privacy_events

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]


def neighbours(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.clip(X @ np.linspace(1, -1, d) + 0.1 * rng.normal(size=n), -1, 1)
    X2, y2 = X.copy(), y.copy()
    X2[0] = -3 * X[0] / np.linalg.norm(X[0])   # beyond data_norm: clipped
    y2[0] = 5.0                                 # beyond label_bound: clipped
    return (X, y), (X2, y2)


#: AdaSSP's record holds two values of its release itself (the noisy smallest eigenvalue
#: and the ridge chosen from it: post-processing of the noisy statistics, like coef_)
RELEASED_VALUES = ("lambda_min_noisy", "ridge")


def released(est):
    out = {k: v for k, v in vars(est).items()
           if k.endswith("_") and not k.startswith("_")
           and k not in ("coef_", "intercept_", "fit_diagnostics_")}
    del out["release_record_"]     # serialised as privacy_, compared below
    out["privacy_"] = {k: v for k, v in est.privacy_.items() if k not in RELEASED_VALUES}
    out["params"] = est.get_params()
    return out


@pytest.mark.parametrize("method", ["objective", "output", "adassp", "auto"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("alpha", ["auto", 0.05])
def test_neighbouring_fits_release_identical_records(method, delta, alpha):
    if method == "adassp" and delta == 0:
        pytest.skip("AdaSSP is an (epsilon, delta) mechanism")
    (X, y), (X2, y2) = neighbours()
    a = PrivateLinearRegression(method=method, delta=delta, alpha=alpha, random_state=0).fit(X, y)
    b = PrivateLinearRegression(method=method, delta=delta, alpha=alpha, random_state=0).fit(X2, y2)
    ra, rb = released(a), released(b)
    assert ra.keys() == rb.keys()
    for k in ra:
        assert ra[k] == rb[k], k
    # the record is public: nothing data-dependent, no seed, no solver diagnostic
    for key in ("grad_norm", "converged", "n_iter", "rows_clipped", "labels_clipped",
                "random_state", "seed"):
        assert key not in a.privacy_
    assert a.privacy_["task"] == "regression"
    assert a.privacy_["loss"] == (None if a.privacy_["method"] == "adassp" else "pseudo_huber")
    # the diagnostics (analyst-only) differ: the data sets are distinguishable
    assert a.fit_diagnostics_ != b.fit_diagnostics_
    # the method "auto" chose is a function of public values: the same for both
    assert a.privacy_["method"] == b.privacy_["method"]
    assert a.fit_diagnostics_["labels_clipped"] == 0 and b.fit_diagnostics_["labels_clipped"] == 1
    # the accountant reads the record alone
    assert privacy_events(a.privacy_) == privacy_events(b.privacy_)


def test_comparison_catches_a_leak():
    (X, y), (X2, y2) = neighbours()
    a = PrivateLinearRegression(random_state=0).fit(X, y)
    b = PrivateLinearRegression(random_state=0).fit(X2, y2)
    ra, rb = released(a), released(b)
    ra["privacy_"]["leak"] = a.fit_diagnostics_["n_iter"]
    rb["privacy_"]["leak"] = b.fit_diagnostics_["labels_clipped"]
    assert ra != rb
