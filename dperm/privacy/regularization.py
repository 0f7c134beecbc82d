"""Choosing the regularization strength Lambda without spending privacy.

`auto_alpha` is the rule behind ``PrivateLinearClassifier(alpha="auto")``: a
function of public quantities only (n, d, epsilon, the row-norm bound R, the
loss and the mechanism; for K > 2 classes fitted one-vs-rest the estimator passes
each model's epsilon / K), so it costs nothing beyond the fit's own epsilon.

The rule.  Lambda trades the bias of regularization (it shrinks the model) against
the harm the noise does (which falls as 1 / Lambda for both mechanisms: output
perturbation adds b with E||b|| = 2 d R / (n Lambda epsilon), and objective
perturbation's term b.f / n moves the minimizer by about ||b|| / (n Lambda)), so the
best Lambda falls with n epsilon.  Measured (issue 21: six calibration data sets at 12
(data set, n) settings, n from 379 to 250,000, d from 17 to 401, each at epsilon 0.1, 1
and 10), it falls a little faster than 1 / (n epsilon) for objective perturbation and
grows slowly with d::

    Lambda = C R^2 (d / 100)^a / (n epsilon)^b

    logistic loss, objective perturbation:  C = 35, a = 0.25, b = 1.2, S = 1.5
    logistic loss, output perturbation:     C = 32, a = 0.25, b = 1,   S = 1
    huber and smooth_hinge (not re-fitted): C = 15 (objective), 35 (output), a = 0,
                                            b = 1, S = 1 (the earlier rule)
    no noise (baseline):                    Lambda = 0.002 R^2 / sqrt(n)

(R^2 because Lambda multiplies ||f||^2 and f scales as 1/R.)  Two public safeguards
then raise it where needed:

- objective perturbation: at least twice the Lambda at which epsilon' of Algorithm 2
  reaches 0 (there the noise scale explodes; at twice it, epsilon' is about epsilon / 2);
- both: at least the smallest Lambda at which the expected noise shift is below S times
  the largest norm the noise-free coefficients can have (`noise_dominates`), so that
  with many features (random Fourier features, one-hot encodings) or small n epsilon
  the model is not mostly noise.  (S = 1.5 for objective perturbation: the shift bound
  ignores the data's curvature, and S = 1 cost up to 0.09 accuracy on KDD Cup 99.)

The constants were fitted with `benchmarks/alpha_auto.py --calibrate` on the curves of
the calibration data sets only (Adult, KDD Cup 99, breast cancer, digits, letter,
synthetic one-hot; docs/alpha_auto_calibration.json): among the rules of this form, the
smallest mean accuracy gap to the best Lambda in hindsight whose worst gap is no larger
than the earlier rule's (C / (n epsilon), C = 8 and 25).  The table of docs/alpha_auto_study.md measures
them again, with held-out data sets apart: cases within 0.005 of the best Lambda of a
half-decade grid, objective 25 of 36 (calibration) and 8 of 21 (held out), output 27 of
36 and 13 of 21; largest gap 0.070 (held out, KDD Cup 99 five classes at epsilon 0.1,
objective perturbation).  The best Lambda depends on the data, not
only on public quantities (at n epsilon = 4000 KDD Cup 99 wants C = 2 and Adult
C = 13), so no such rule is within 0.005 of the best everywhere; `dperm.private_tuning`
(Algorithm 4) selects Lambda privately when the budget and n allow splitting the data.
"""
from __future__ import annotations

import math
import sys

from dperm.data.validation import check_choice, check_epsilon, check_positive
from dperm.losses import Loss, get_loss

__all__ = ["auto_alpha", "expected_noise_shift", "coefficient_bound", "noise_dominates"]

# The rule's constants (C, a, b, S) per loss and mechanism:
#     Lambda = C R^2 (d / 100)^a / (n epsilon)^b,
# then raised until the expected noise shift is at most S times the coefficient bound.
# logistic: fitted by benchmarks/alpha_auto.py --calibrate on the calibration data sets
# (issue 21; docs/alpha_auto_calibration.json: C = 10^1.55 and 10^1.5 there, rounded).
# huber and smooth_hinge: the earlier rule (C / (n epsilon), C = 15 and 35), not re-fitted.
# pseudo_huber (regression): measured by benchmarks/regression_alpha.py on a synthetic
# linear model (d = 20) and Adult's hours-per-week (d = 105) at epsilon 0.1, 1, 10
# (BENCHMARKS.md, "Private linear regression"): the best Lambda in hindsight grows about
# linearly with d under objective perturbation, as sqrt(d) under output perturbation
_PH_OBJECTIVE = (550.0, 1.0, 1.2, 1.5)
_PH_OUTPUT = (700.0, 0.5, 1.0, 1.0)
_RULE = {
    "logistic": {"objective": (35.0, 0.25, 1.2, 1.5), "output": (32.0, 0.25, 1.0, 1.0)},
    "huber": {"objective": (15.0, 0.0, 1.0, 1.0), "output": (35.0, 0.0, 1.0, 1.0)},
    "smooth_hinge": {"objective": (15.0, 0.0, 1.0, 1.0), "output": (35.0, 0.0, 1.0, 1.0)},
    # regression (PrivateLinearRegression): Lambda = C R^2 (h / B) (d / 100)^a / (n eps)^b,
    # B the label bound (the coefficients scale as B / R, the noise as h R); measured by
    # benchmarks/regression_alpha.py (docs/privacy_analysis.md, section 12)
    "pseudo_huber": {"objective": _PH_OBJECTIVE, "output": _PH_OUTPUT},
}
_K_NONE = 0.002
# the rule never goes outside this range (times R^2): below it the solve is slow and
# the model noise-dominated, above it every coefficient is shrunk to nothing
_ALPHA_MIN, _ALPHA_MAX = 1e-8, 1.0
# log of the largest float (about 709.78): exp / expm1 / pow above it overflow
_LOG_FLOAT_MAX = math.log(sys.float_info.max)


def _check(n_samples: int, n_features: int, epsilon: float, perturbation: str,
           data_norm: float) -> tuple[int, int, float]:
    for v, name in ((n_samples, "n_samples"), (n_features, "n_features")):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
    check_choice(perturbation, "perturbation", {"objective", "output", "none"})
    if perturbation != "none":
        check_epsilon(epsilon)
    return int(n_samples), int(n_features), check_positive(data_norm, "data_norm")


def auto_alpha(n_samples: int, n_features: int, epsilon: float, *,
               perturbation: str = "objective", loss: str | Loss = "logistic",
               data_norm: float = 1.0, h: float = 0.5,
               label_bound: float | None = None) -> float:
    """Lambda from public quantities only (no privacy cost).

    Parameters
    ----------
    n_samples : int
        n, the public normalisation count.
    n_features : int
        d of the problem solved (with the intercept column, if any).
    epsilon : float
        The fit's privacy parameter, > 0 (ignored for perturbation="none").
    perturbation : {"objective", "output", "none"}, default "objective"
        The mechanism.
    loss : str or Loss, default "logistic"
        The loss (checked; selects the constants).
    data_norm : float, default 1.0
        R > 0, the public row-norm bound.
    h : float, default 0.5
        Huber / smoothed-hinge / pseudo-Huber width, > 0.
    label_bound : float, optional
        B > 0, the public bound on abs(y) (regression losses only, where it is required).

    Returns
    -------
    float
        Lambda > 0 (mean units; see the module docstring).
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    lo = get_loss(loss)
    h = check_positive(h, "h")
    B = _label_bound(lo, label_bound)
    return _rule(n, d, epsilon, perturbation, lo.name, R, h, label_bound=B)


def _label_bound(lo: Loss, label_bound: float | None) -> float | None:
    if not lo.regression:
        return None
    return check_positive(label_bound, "label_bound")


def _rule(n: int, d: int, epsilon: float, perturbation: str, loss: str | Loss, R: float,
          h: float, constants: tuple[float, float, float, float] | None = None,
          label_bound: float | None = None) -> float:
    """The rule for checked inputs; `constants` (C, a, b, S) replaces the calibrated
    ones of (loss, perturbation) (benchmarks/alpha_auto.py --calibrate searches them)."""
    lo = get_loss(loss)
    R2 = R * R
    if perturbation == "none":
        return R2 * min(max(_K_NONE / math.sqrt(n), _ALPHA_MIN), _ALPHA_MAX)
    C, a, b, S = _RULE[lo.name][perturbation] if constants is None else constants
    ne = n * epsilon
    # a large epsilon (about 1420 and above for b = 1.2) overflows (n eps)^b: the rule's
    # value is then far below the floor _ALPHA_MIN R^2 it is clipped to, so use 0
    log_ne_b = b * math.log(ne)
    alpha = C * R2 * (d / 100.0) ** a / ne ** b if log_ne_b < _LOG_FLOAT_MAX else 0.0
    if lo.regression:
        assert label_bound is not None, "a regression loss's rule needs label_bound"
        alpha *= h / label_bound
    if perturbation == "objective":
        # epsilon' = 0 where 2q + q^2 = e^eps - 1, q = c R^2 / (n Lambda)
        alpha = max(alpha, 2.0 * lo.curvature(h, R) / (n * _expm1_or_inf(epsilon / 2.0)))
    alpha = min(max(alpha, _ALPHA_MIN * R2), _ALPHA_MAX * R2)
    # raise it until the expected noise shift is below S times the largest norm the
    # noise-free coefficients can have (monotone above the epsilon' = 0 point, so a
    # geometric walk finds the first such Lambda)
    while alpha < _ALPHA_MAX * R2 and math.isfinite(S):
        shift, bound = _shift_and_bound(n, d, epsilon, alpha, perturbation, lo.name, R, h,
                                        label_bound)
        if shift <= S * bound:
            break
        alpha = min(alpha * 1.1, _ALPHA_MAX * R2)
    return alpha


def _expm1_or_inf(x: float) -> float:
    """e^x - 1, or inf where it overflows a float (x above about 709.78): math.expm1
    raises OverflowError there (epsilon above about 1420 in the epsilon' = 0 floor)."""
    return math.expm1(x) if x < _LOG_FLOAT_MAX else math.inf


def _shift_and_bound(n: int, d: int, epsilon: float, alpha: float, perturbation: str,
                     loss: str | Loss, R: float, h: float,
                     label_bound: float | None = None) -> tuple[float, float]:
    """(expected noise shift, bound on the noise-free coefficients' norm) for one alpha.
    The noise scales with one row's gradient bound L (Loss.gradient_bound: R for the
    margin losses, h R for the pseudo-Huber loss)."""
    from dperm.privacy.mechanisms import objective_perturbation_constants

    lo = get_loss(loss)
    l0 = lo.value_at_zero(h, label_bound)
    L = lo.gradient_bound(R, h)
    if perturbation == "none":
        return 0.0, math.sqrt(2.0 * l0 / alpha)
    if perturbation == "output":
        return 2.0 * d * L / (n * alpha * epsilon), math.sqrt(2.0 * l0 / alpha)
    c = lo.curvature(h, R)
    eps_p, delta, _ = objective_perturbation_constants(n, alpha, epsilon, c, L)
    reg = alpha + float(delta[0])       # the perturbed objective's regularizer: Lambda + Delta
    return 2.0 * d * L / float(eps_p[0]) / (n * reg), math.sqrt(2.0 * l0 / reg)


def expected_noise_shift(n_samples: int, n_features: int, epsilon: float, alpha: float, *,
                         perturbation: str = "objective", loss: str | Loss = "logistic",
                         data_norm: float = 1.0, h: float = 0.5,
                         label_bound: float | None = None) -> float:
    """The expected distance between the private and the non-private coefficients.

    Output perturbation: E||b|| = d / beta = 2 d L / (n Lambda epsilon), exactly.
    Objective perturbation: ||b|| / (n (Lambda + Delta)) with E||b|| = 2 d L / epsilon',
    the first-order shift of the minimizer (exact for a quadratic loss); L the loss's
    gradient bound (R, or h R for the pseudo-Huber loss).  Public quantities only.

    Parameters
    ----------
    n_samples : int
        n, the public normalisation count.
    n_features : int
        d of the problem solved (with the intercept column, if any).
    epsilon : float
        The fit's epsilon, > 0.
    alpha : float
        Lambda > 0 (mean units).
    perturbation : {"objective", "output"}, default "objective"
        The mechanism.
    loss : str, default "logistic"
        The loss's name.
    data_norm : float, default 1.0
        R, the public row-norm bound.
    h : float, default 0.5
        Huber / smoothed-hinge / pseudo-Huber width.
    label_bound : float, optional
        B, the public bound on abs(y) (regression losses only).

    Returns
    -------
    float
        The expected L2 shift, coefficient units (inf where epsilon' <= 0 has no Delta).

    Examples
    --------
    >>> from dperm.privacy.regularization import expected_noise_shift
    >>> round(expected_noise_shift(10_000, 10, 1.0, 1e-2, perturbation="output"), 6)
    0.2
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    alpha = check_positive(alpha, "alpha")
    B = _label_bound(get_loss(loss), label_bound)
    return _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h, B)[0]


def coefficient_bound(alpha: float, *, loss: str | Loss = "logistic", h: float = 0.5,
                      label_bound: float | None = None) -> float:
    """An upper bound on ||f*|| for any data.

    J(f*) <= J(0) gives ||f*||^2 <= 2 loss(0) / Lambda (loss(0) <= rho(B) for a regression
    loss, B = label_bound).

    Parameters
    ----------
    alpha : float
        Lambda > 0.
    loss : str, default "logistic"
        The loss's name.
    h : float, default 0.5
        The loss's width.
    label_bound : float, optional
        B (regression losses only).

    Returns
    -------
    float
    """
    lo = get_loss(loss)
    return math.sqrt(2.0 * lo.value_at_zero(h, _label_bound(lo, label_bound))
                     / check_positive(alpha, "alpha"))


def noise_dominates(n_samples: int, n_features: int, epsilon: float, alpha: float, *,
                    perturbation: str = "objective", loss: str | Loss = "logistic",
                    data_norm: float = 1.0, h: float = 0.5,
                    label_bound: float | None = None) -> bool:
    """True when the expected noise shift exceeds S times the largest norm the noise-free
    coefficients can have (so the released model is mostly noise).

    S is the rule's safeguard factor (1.5 for the logistic loss under objective
    perturbation, else 1): the same test ``alpha="auto"`` applies.  Public inputs only.
    For objective perturbation the regularizer is Lambda + Delta (the Delta branch of
    Algorithm 2), which the bound uses.

    Parameters
    ----------
    n_samples : int
        n, the public normalisation count.
    n_features : int
        d of the problem solved (with the intercept column, if any).
    epsilon : float
        The fit's epsilon, > 0.
    alpha : float
        Lambda > 0 (mean units).
    perturbation : {"objective", "output"}, default "objective"
        The mechanism.
    loss : str, default "logistic"
        The loss's name.
    data_norm : float, default 1.0
        R, the public row-norm bound.
    h : float, default 0.5
        Huber / smoothed-hinge / pseudo-Huber width.
    label_bound : float, optional
        B, the public bound on abs(y) (regression losses only).

    Returns
    -------
    bool
    """
    n, d, R = _check(n_samples, n_features, epsilon, perturbation, data_norm)
    alpha = check_positive(alpha, "alpha")
    B = _label_bound(get_loss(loss), label_bound)
    shift, bound = _shift_and_bound(n, d, epsilon, alpha, perturbation, loss, R, h, B)
    S = 1.0 if perturbation == "none" else _RULE[get_loss(loss).name][perturbation][3]
    return shift > S * bound
