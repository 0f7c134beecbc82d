"""alpha="auto": the public rule of dperm.privacy.regularization (issue 21's re-derivation)."""
import math

import numpy as np
import pytest

from dperm.privacy.regularization import _RULE, auto_alpha, noise_dominates


def test_rule_is_the_documented_formula_where_no_safeguard_binds():
    # Lambda = C R^2 (d / 100)^a / (n eps)^b, logistic loss
    n, d, eps = 250_000, 60, 1.0
    assert auto_alpha(n, d, eps) == pytest.approx(35.0 * 0.6 ** 0.25 / (n * eps) ** 1.2)
    assert auto_alpha(n, d, eps, perturbation="output") == pytest.approx(
        32.0 * 0.6 ** 0.25 / (n * eps))
    assert _RULE["logistic"] == {"objective": (35.0, 0.25, 1.2, 1.5),
                                 "output": (32.0, 0.25, 1.0, 1.0)}
    # huber and smooth_hinge keep the earlier rule (not re-fitted): C / (n eps)
    for loss in ("huber", "smooth_hinge"):
        assert auto_alpha(n, d, eps, loss=loss) == pytest.approx(15.0 / (n * eps))
        assert auto_alpha(n, d, eps, loss=loss, perturbation="output") == pytest.approx(
            35.0 / (n * eps))
    assert auto_alpha(n, d, eps, perturbation="none") == pytest.approx(0.002 / math.sqrt(n))


def test_large_n_gets_a_smaller_lambda_than_before():
    """Issue 21, item 3: on 250,000 rows at eps = 1 the earlier rule chose 3.2e-5
    (8 / (n eps)) where 4e-6 reached the non-private accuracy."""
    assert auto_alpha(250_000, 60, 1.0) < 1.1e-5
    # and the gain grows with n eps (b = 1.2): at n eps = 1e4 the two rules agree within 2x
    for ne in (1e4, 1e5, 1e6, 1e7):
        ratio = auto_alpha(int(ne), 100, 1.0) / (8.0 / ne)
        assert ratio < 4.4 * ne ** -0.2 * 1.01


def test_scales_as_R_squared_and_falls_with_n_and_epsilon():
    for mech in ("objective", "output"):
        for n, d, eps in ((400, 5, 0.7), (4000, 123, 0.1), (200_000, 401, 10.0)):
            a1 = auto_alpha(n, d, eps, perturbation=mech)
            a3 = auto_alpha(n, d, eps, perturbation=mech, data_norm=3.0)
            assert a3 == pytest.approx(9.0 * a1, rel=1e-9)
        ns = [10 ** k for k in range(2, 8)]
        assert np.all(np.diff([auto_alpha(n, 50, 1.0, perturbation=mech) for n in ns]) < 0)
        es = [0.01, 0.1, 1.0, 10.0, 100.0]
        assert np.all(np.diff([auto_alpha(5000, 50, e, perturbation=mech) for e in es]) < 0)


@pytest.mark.parametrize("mech", ["objective", "output"])
def test_auto_never_chooses_what_the_warning_calls_mostly_noise(mech):
    # the estimator warns (NoiseDominatedWarning) for a user's alpha exactly when
    # noise_dominates: the rule's own choice never triggers it
    for n in (50, 400, 4000, 40_000, 400_000):
        for d in (3, 30, 300, 3000):
            for eps in (0.05, 0.5, 5.0):
                a = auto_alpha(n, d, eps, perturbation=mech)
                if a < 1.0:      # (at the upper clamp nothing more can be done)
                    assert not noise_dominates(n, d, eps, a, perturbation=mech)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning")   # rows of any norm
def test_rule_reads_no_data():
    """Two data sets of the same shape (one mostly clipped) get the same alpha."""
    import dperm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) / 3
    fits = [dperm.PrivateLinearClassifier(classes=[0, 1], epsilon=0.5, random_state=1)
            for _ in range(2)]
    with pytest.warns(dperm.PrivacyLeakWarning):
        fits[0].fit(X, (X[:, 0] > 0).astype(int))
    with pytest.warns(dperm.PrivacyLeakWarning):
        fits[1].fit(rng.normal(size=(300, 4)), rng.integers(0, 2, 300))
    assert fits[0].alpha_ == fits[1].alpha_ == auto_alpha(300, 5, 0.5)


@pytest.mark.parametrize("eps", [1e3, 1e4, 1e6])
def test_large_epsilon_gives_a_finite_lambda(eps):
    """Issue 29, item 5: epsilon above about 1420 raised OverflowError from the
    epsilon' = 0 floor (math.expm1(eps / 2)) and (n eps)^b; the rule now reaches its
    floor _ALPHA_MIN R^2 instead."""
    from dperm.privacy.regularization import expected_noise_shift

    for mech in ("objective", "output"):
        for loss, kw in (("logistic", {}), ("pseudo_huber", {"label_bound": 1.0})):
            a = auto_alpha(1000, 10, eps, perturbation=mech, loss=loss, data_norm=2.0, **kw)
            assert math.isfinite(a) and 4e-8 <= a <= 4.0
            assert math.isfinite(expected_noise_shift(1000, 10, eps, a, perturbation=mech,
                                                      loss=loss, data_norm=2.0, **kw))
            assert not noise_dominates(1000, 10, eps, a, perturbation=mech, loss=loss,
                                       data_norm=2.0, **kw)
    # the rule still falls with epsilon up to its floor
    assert auto_alpha(1000, 10, 1e6) <= auto_alpha(1000, 10, 1e4) <= auto_alpha(1000, 10, 1e3)


def test_infinite_epsilon_is_refused():
    with pytest.raises(ValueError, match="epsilon"):
        auto_alpha(1000, 10, math.inf)


@pytest.mark.parametrize("eps", [1e4, 1e6])
def test_estimators_fit_at_a_large_epsilon(eps):
    from dperm import PrivateLinearClassifier, PrivateLinearRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X /= np.linalg.norm(X, axis=1).max()
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(Warning):   # the seeded-noise warning
        clf = PrivateLinearClassifier(epsilon=eps, alpha="auto", classes=[0, 1],
                                      random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and clf.score(X, y) > 0.9
    with pytest.warns(Warning):
        reg = PrivateLinearRegression(epsilon=eps, alpha="auto", label_bound=1.0,
                                      random_state=0).fit(X, X[:, 0])
    assert np.all(np.isfinite(reg.coef_))
    with pytest.raises(ValueError, match="epsilon"):
        PrivateLinearClassifier(epsilon=math.inf, alpha="auto", classes=[0, 1]).fit(X, y)
