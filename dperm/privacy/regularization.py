"""Choosing the regularization strength Lambda without spending privacy.

`auto_alpha` is the rule behind ``PrivateLinearClassifier(alpha="auto")``: a
function of public quantities only (n, d, epsilon, the row-norm bound R, the
loss and the mechanism), so it costs nothing beyond the fit's own epsilon.

The rule.  Lambda trades the bias of regularization (it shrinks the model) against
the harm the noise does (which falls as 1 / Lambda for both mechanisms: output
perturbation adds b with E||b|| = 2 d R / (n Lambda epsilon), and objective
perturbation's term b.f / n moves the minimizer by about ||b|| / (n Lambda)).  The
measured best Lambda, on public data sets whose best Lambda differs by two orders of
magnitude, scaled as 1 / (n epsilon) across epsilon and data sets (the dimension d
mattered less than the data), so:

    objective perturbation:  Lambda = C_obj R^2 / (n epsilon)
    output perturbation:     Lambda = C_out R^2 / (n epsilon)
    no noise (baseline):     Lambda = 0.002 R^2 / sqrt(n)

with (C_obj, C_out) = (8, 25) for the logistic loss and (15, 35) for the Huber loss
(and the smoothed hinge, which was not calibrated separately)

(R^2 because Lambda multiplies ||f||^2 and f scales as 1/R.)  Two public safeguards
then raise it where needed:

- objective perturbation: at least twice the Lambda at which epsilon' of Algorithm 2
  reaches 0 (there the noise scale explodes; at twice it, epsilon' is about epsilon / 2);
- both: at least the smallest Lambda at which the expected noise shift is below the
  largest norm the noise-free coefficients can have (`noise_dominates`), so that
  with many features (random Fourier features, one-hot encodings) the model is not
  mostly noise.

The constants were calibrated with `benchmarks/alpha_auto.py --calibrate` on UCI
Adult (epsilon = 0.1 and 1), KDD Cup 99 (epsilon = 0.1 and 1) and scikit-learn's
breast-cancer data (epsilon = 1), logistic and Huber losses: every case within 0.03
accuracy of the best Lambda of the grid 10^-6 ... 10^0 (the README has the table).
The rule is a starting point, not an optimum; `dperm.private_tuning` (Algorithm 4)
selects Lambda privately when the budget and n allow splitting the data.
"""
import math

from dperm.data.validation import check_choice, check_epsilon, check_positive
from dperm.losses import get_loss

__all__ = ["auto_alpha", "expected_noise_shift", "coefficient_bound", "noise_dominates"]

# calibrated constants C (Lambda = C R^2 / (n epsilon)) per loss: objective, output
# (benchmarks/alpha_auto.py --calibrate); the smoothed hinge, not calibrated, takes the
# Huber loss's (both are hinge-like with a quadratic joint)
_C = {"logistic": (8.0, 25.0), "huber": (15.0, 35.0), "smooth_hinge": (15.0, 35.0)}
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
        objective: C_obj R^2 / (n epsilon), at least twice the Lambda where epsilon' = 0
        output:    C_out R^2 / (n epsilon)
        with (C_obj, C_out) = (8, 25) for logistic, (15, 35) for huber and smooth_hinge
        none:      0.002 R^2 / sqrt(n)
    raised, for the private mechanisms, until the noise does not dominate; kept
    within [1e-8, 1] R^2.
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    lo = get_loss(loss)
    h = check_positive(h, "h")
    R2 = R * R
    if perturbation == "none":
        return R2 * min(max(_K_NONE / math.sqrt(n), _ALPHA_MIN), _ALPHA_MAX)
    if perturbation == "objective":
        alpha = _C[lo.name][0] * R2 / (n * epsilon)
        # epsilon' = 0 where 2q + q^2 = e^eps - 1, q = c R^2 / (n Lambda)
        q_zero = math.expm1(epsilon / 2.0)
        alpha = max(alpha, 2.0 * lo.curvature(h, R) / (n * q_zero))
    else:
        alpha = _C[lo.name][1] * R2 / (n * epsilon)
    alpha = min(max(alpha, _ALPHA_MIN * R2), _ALPHA_MAX * R2)
    # raise it until the expected noise no longer swamps the model (monotone above the
    # epsilon' = 0 point, so a geometric walk finds the first such Lambda)
    while alpha < _ALPHA_MAX * R2:
        shift, bound = _shift_and_bound(n, d, epsilon, alpha, perturbation, lo.name, R, h)
        if shift <= bound:
            break
        alpha = min(alpha * 1.1, _ALPHA_MAX * R2)
    return alpha


def _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h):
    """(expected noise shift, bound on the noise-free coefficients' norm) for one alpha."""
    from dperm.privacy.mechanisms import objective_perturbation_constants

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
