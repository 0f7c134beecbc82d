"""Choosing the regularization strength Lambda without spending privacy.

`auto_alpha` is the rule behind ``PrivateLinearClassifier(alpha="auto")``: a
function of public quantities only (n, d, epsilon, the row-norm bound R, the
loss and the mechanism), so it costs nothing beyond the fit's own epsilon.

The rule.  Both mechanisms' noise moves the coefficients by an amount that
falls as 1 / Lambda: output perturbation adds b with E||b|| = 2 d R / (n Lambda epsilon),
and objective perturbation's term b.f / n (E||b|| = 2 d R / epsilon') moves the
minimizer by about ||b|| / (n Lambda).  `auto_alpha` takes the Lambda at which that
expected shift equals a fixed size kappa / R, i.e.

    objective perturbation:  Lambda = (2 / kappa_obj) d R^2 / (n epsilon),  kappa_obj = 10
    output perturbation:     Lambda = (2 / kappa_out) d R^2 / (n epsilon),  kappa_out = 2.5
    no noise (baseline):     Lambda = 0.002 R^2 / sqrt(n)

(R^2 because Lambda multiplies ||f||^2 and f scales as 1/R.)  Less regularization
lets the noise swamp the model; more shrinks the model toward 0.  The constants were
calibrated on public data sets whose best Lambda differs by orders of magnitude
(UCI Adult at epsilon = 0.1 and 1, KDD Cup 99, scikit-learn's breast-cancer data):
`benchmarks/alpha_auto.py` measures the rule against the best Lambda of the grid
10^-6 ... 10^0, and the README has the table.  The rule is a starting point, not an
optimum: for a better Lambda at no extra privacy cost on top of a budget, use
`dperm.private_tuning` (Algorithm 4).
"""
import math

from dperm._validation import check_choice, check_epsilon, check_positive
from dperm.losses import get_loss

__all__ = ["auto_alpha", "expected_noise_shift", "coefficient_bound", "noise_dominates"]

# calibrated constants (benchmarks/alpha_auto.py); see the module docstring
_SHIFT_OBJECTIVE = 10.0    # kappa_obj: expected shift of the minimizer, in units of 1/R
_SHIFT_OUTPUT = 2.5        # kappa_out
_K_NONE = 0.002
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
    float, Lambda > 0 (see the module docstring):
        objective: 0.2 d R^2 / (n epsilon)
        output:    0.8 d R^2 / (n epsilon)
        none:      0.002 R^2 / sqrt(n)
    each kept within [1e-8, 1] R^2.
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    get_loss(loss)
    check_positive(h, "h")
    if perturbation == "objective":
        a = 2.0 / _SHIFT_OBJECTIVE * d / (n * epsilon)
    elif perturbation == "output":
        a = 2.0 / _SHIFT_OUTPUT * d / (n * epsilon)
    else:
        a = _K_NONE / math.sqrt(n)
    return R * R * min(max(a, _ALPHA_MIN), _ALPHA_MAX)


def coefficient_bound(alpha, *, loss="logistic", h=0.5):
    """An upper bound on ||f*|| for any data: J(f*) <= J(0) gives ||f*||^2 <= 2 loss(0) / Lambda."""
    lo = get_loss(loss)
    return math.sqrt(2.0 * lo.value_at_zero(h) / alpha)


def _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h):
    """(expected noise shift, bound on the noise-free coefficients' norm) for one alpha."""
    from dperm.mechanisms import objective_perturbation_constants

    l0 = get_loss(loss).value_at_zero(h)
    if perturbation == "none":
        return 0.0, math.sqrt(2.0 * l0 / alpha)
    if perturbation == "output":
        return 2.0 * d * R / (n * alpha * epsilon), math.sqrt(2.0 * l0 / alpha)
    c = get_loss(loss).curvature(h, R)
    eps_p, delta, _ = objective_perturbation_constants(n, alpha, epsilon, c, R)
    reg = alpha + float(delta[0])       # the perturbed objective's regularizer: Lambda + Delta
    return 2.0 * d * R / float(eps_p[0]) / (n * reg), math.sqrt(2.0 * l0 / reg)


def expected_noise_shift(n_samples, n_features, epsilon, alpha, *, perturbation="objective",
                         loss="logistic", data_norm=1.0, h=0.5):
    """The expected distance between the private and the non-private coefficients.

    Output perturbation: E||b|| = d / beta = 2 d R / (n Lambda epsilon), exactly.
    Objective perturbation: ||b|| / (n (Lambda + Delta)) with E||b|| = 2 d R / epsilon',
    the first-order shift of the minimizer (exact for a quadratic loss).
    Public quantities only.
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    alpha = check_positive(alpha, "alpha")
    return _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h)[0]


def coefficient_bound(alpha, *, loss="logistic", h=0.5):
    """An upper bound on ||f*|| for any data: J(f*) <= J(0) gives ||f*||^2 <= 2 loss(0) / Lambda."""
    return math.sqrt(2.0 * get_loss(loss).value_at_zero(h) / check_positive(alpha, "alpha"))


def noise_dominates(n_samples, n_features, epsilon, alpha, *, perturbation="objective",
                    loss="logistic", data_norm=1.0, h=0.5):
    """True when the expected noise shift exceeds the largest norm the noise-free
    coefficients can have (so the released model is mostly noise).  Public inputs only.

    For objective perturbation the regularizer is Lambda + Delta (the Delta branch of
    Algorithm 2), which the bound uses.
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    alpha = check_positive(alpha, "alpha")
    shift, bound = _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h)
    return shift > bound
