"""Registry of the losses and their constants: the one home of every bound the privacy
calibration reads.

Margin losses phi(z), z = y f.x: each has |phi'(z)| <= 1 (the gradient bound, times R
for rows of norm <= R) and 0 <= phi''(z) <= c (the curvature bound, times R^2).

The softmax (multinomial logistic) model over K classes: one row's gradient, all K
blocks together, has norm <= sqrt(2) R (`SOFTMAX_GRADIENT_FACTOR`), and the trace of one
row's Hessian block is <= (1 - 1/K) R^2 (`softmax_curvature`).  Its mechanisms are
derived for K >= 3 (`MULTINOMIAL_MIN_CLASSES`): a 2-class softmax row gradient reaches
sqrt(2) R, which the binary calibration does not cover, so two classes are a binary
loss's job.

This module sits below both the solvers and the privacy code (both read it).
"""
import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["Loss", "get_loss", "LOSSES", "MULTINOMIAL", "MULTINOMIAL_MIN_CLASSES",
           "SOFTMAX_GRADIENT_FACTOR", "softmax_curvature", "check_n_classes"]

#: the loss name of the softmax (multinomial logistic) model, labels 0..K-1
MULTINOMIAL = "multinomial"
#: the smallest number of classes the multinomial mechanisms are calibrated for
MULTINOMIAL_MIN_CLASSES = 3
#: ||grad of one row's softmax loss|| <= SOFTMAX_GRADIENT_FACTOR * R (all K blocks)
SOFTMAX_GRADIENT_FACTOR = math.sqrt(2.0)


def softmax_curvature(n_classes, data_norm=1.0):
    """(1 - 1/K) R^2: the bound on the trace of one row's softmax Hessian block."""
    return (1.0 - 1.0 / n_classes) * data_norm * data_norm


def check_n_classes(n_classes, *, mechanism=False):
    """The number of classes K as an int: an integer >= 2 (the softmax objective), or,
    with ``mechanism=True``, >= MULTINOMIAL_MIN_CLASSES (a private multinomial fit)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, (numbers.Integral, np.integer)) \
            or n_classes < (MULTINOMIAL_MIN_CLASSES if mechanism else 2):
        if mechanism:
            raise ValueError(f"n_classes: loss='multinomial' needs the public number of "
                             f"classes, an integer >= {MULTINOMIAL_MIN_CLASSES} (for two "
                             f"classes use a binary loss such as 'logistic'), got {n_classes!r}")
        raise ValueError(f"n_classes: must be an integer >= 2, got {n_classes!r}")
    return int(n_classes)


@dataclass(frozen=True)
class Loss:
    """A margin loss.

    name: public name; kernel_id: index understood by the compiled kernels;
    uses_h: whether the smoothing width h matters.
    """

    name: str
    kernel_id: int
    uses_h: bool

    def curvature(self, h=0.5, data_norm=1.0):
        """Upper bound c on phi'' for rows of norm <= data_norm (scales as R^2)."""
        if self.name == "logistic":
            c = 0.25
        elif self.name == "huber":
            c = 1.0 / (2.0 * h)
        else:
            c = 3.0 / (4.0 * h)
        return c * data_norm**2

    def gradient_bound(self, data_norm=1.0):
        """Upper bound on ||d/df phi(y f.x)|| = |phi'| ||x|| <= R."""
        return 1.0 * data_norm

    def value_at_zero(self, h=0.5):
        """phi(0): the objective at f = 0, so ||f*||^2 <= 2 phi(0) / Lambda for any data."""
        return float(self.per_sample(np.zeros(1), h)[0][0])

    def per_sample(self, z, h=0.5):
        """phi(z), phi'(z), phi''(z) for an array of margins z (float64)."""
        from dperm._core._objective import per_sample

        z = np.ascontiguousarray(z, dtype=np.float64).ravel()
        return per_sample(self.kernel_id, z, float(h))


LOSSES = {
    "logistic": Loss("logistic", 0, False),
    "huber": Loss("huber", 1, True),
    "smooth_hinge": Loss("smooth_hinge", 2, True),
}


def get_loss(loss):
    """The Loss registered under `loss`; ValueError naming `loss` otherwise."""
    if isinstance(loss, Loss):
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(
            f"loss={loss!r} is not a known loss; choose one of {sorted(LOSSES)}"
        )
    return LOSSES[loss]
