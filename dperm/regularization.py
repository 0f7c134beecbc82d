"""Choosing the regularization strength Lambda without spending privacy.

`auto_alpha` is the rule behind ``PrivateLinearClassifier(alpha="auto")``: a
function of public quantities only (n, d, epsilon, the row-norm bound R, the
loss and the mechanism), so it costs nothing beyond the fit's own epsilon.

Why these shapes.  Lambda trades the bias of regularization, about
Lambda ||f0||^2 / 2 for a good predictor f0, against the harm the noise does,
which shrinks as Lambda grows:

- objective perturbation adds b.f / n with E||b|| = 2 d R / epsilon', which moves
  the minimizer by about ||b|| / (n Lambda); the excess risk ||b||^2 / (n^2 Lambda)
  balances the bias at Lambda proportional to d R^2 / (n epsilon);
- output perturbation adds b with E||b|| = 2 d R / (n Lambda epsilon) to the
  coefficients; the excess risk, about the Lipschitz constant R times the size of
  b along a row (||b|| R / sqrt(d)), balances the bias at Lambda proportional to
  R^2 (sqrt(d) / (n epsilon))^(1/2);
- without noise, Lambda proportional to R^2 / sqrt(n) is the usual rate for a
  Lipschitz loss with no margin assumption.

The constants in front were calibrated on public data sets (see
`benchmarks/alpha_auto.py` and the table in the README): UCI Adult,
KDD Cup 99 and scikit-learn's breast-cancer data, whose best Lambda differs by
orders of magnitude.  R enters as R^2 because Lambda multiplies ||f||^2 and f
scales as 1/R.
"""
import math

from dperm._validation import check_choice, check_epsilon, check_positive
from dperm.losses import get_loss

__all__ = ["auto_alpha", "expected_noise_shift", "coefficient_bound", "noise_dominates"]

# calibrated constants (benchmarks/alpha_auto.py); see the module docstring for the shapes
_K_OBJECTIVE = 0.5
_K_OUTPUT = 1.0
_K_NONE = 0.01
# the rule never goes outside this range (times R^2): below it the solve is slow and
# the model noise-dominated, above it every coefficient is shrunk to nothing
_ALPHA_MIN, _ALPHA_MAX = 1e-8, 1.0


def _check(n_samples, n_features, epsilon, perturbation, data_norm):
    for v, name in ((n_samples, "n_samples"), (n_features, "n_features")):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
    check_choice(perturbation, "perturbation", {"objective", "output", "none"})
    if perturbation != "none":
        check_epsilon(epsilon)
    return int(n_samples), int(n_features), check_positive(data_norm, "data_norm")


def auto_alpha(n_samples, n_features, epsilon, *, perturbation="objective", loss="logistic",
               data_norm=1.0, h=0.5):
    """Lambda from public quantities only (no privacy cost).

    Parameters
    ----------
    n_samples : int, n (public).
    n_features : int, d of the problem solved (with the intercept column, if any).
    epsilon : float > 0, the fit's privacy parameter (ignored for perturbation="none").
    perturbation : {"objective", "output", "none"}
    loss : loss name (checked; the rule is the same for the three losses).
    data_norm : float > 0, the public row-norm bound R.
    h : float > 0, Huber / smoothed-hinge width (checked only).

    Returns
    -------
    float, Lambda > 0:
        objective: 0.5 d R^2 / (n epsilon)
        output:    1.0 R^2 sqrt(sqrt(d) / (n epsilon))
        none:      0.01 R^2 / sqrt(n)
    each kept within [1e-8, 1] R^2.
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    get_loss(loss)
    check_positive(h, "h")
    if perturbation == "objective":
        a = _K_OBJECTIVE * d / (n * epsilon)
    elif perturbation == "output":
        a = _K_OUTPUT * math.sqrt(math.sqrt(d) / (n * epsilon))
    else:
        a = _K_NONE / math.sqrt(n)
    return R * R * min(max(a, _ALPHA_MIN), _ALPHA_MAX)


def coefficient_bound(alpha, *, loss="logistic", h=0.5):
    """An upper bound on ||f*|| for any data: J(f*) <= J(0) gives ||f*||^2 <= 2 loss(0) / Lambda."""
    lo = get_loss(loss)
    return math.sqrt(2.0 * lo.value_at_zero(h) / alpha)


def expected_noise_shift(n_samples, n_features, epsilon, alpha, *, perturbation="objective",
                         loss="logistic", data_norm=1.0, h=0.5):
    """The expected distance between the private and the non-private coefficients.

    Output perturbation: E||b|| = d / beta = 2 d R / (n Lambda epsilon), exactly.
    Objective perturbation: ||b|| / (n (Lambda + Delta)) with E||b|| = 2 d R / epsilon',
    the first-order shift of the minimizer (exact for a quadratic loss).
    Public quantities only.
    """
    from dperm.mechanisms import objective_perturbation_constants

    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    if perturbation == "none":
        return 0.0
    if perturbation == "output":
        return 2.0 * d * R / (n * alpha * epsilon)
    c = get_loss(loss).curvature(h, R)
    eps_p, delta, _ = objective_perturbation_constants(n, alpha, epsilon, c, R)
    return float(2.0 * d * R / eps_p[0] / (n * (alpha + delta[0])))


def noise_dominates(n_samples, n_features, epsilon, alpha, *, perturbation="objective",
                    loss="logistic", data_norm=1.0, h=0.5):
    """True when the expected noise shift exceeds the largest norm the non-private
    coefficients can have (so the released model is mostly noise).  Public inputs only."""
    shift = expected_noise_shift(n_samples, n_features, epsilon, alpha,
                                 perturbation=perturbation, loss=loss, data_norm=data_norm, h=h)
    return shift > coefficient_bound(alpha, loss=loss, h=h)
