"""Registry of the losses and their constants: the one home of every bound the privacy
calibration reads.

Margin losses phi(z), z = y f.x: each has abs(phi'(z)) <= 1 (the gradient bound, times R
for rows of norm <= R) and 0 <= phi''(z) <= c (the curvature bound, times R^2).

Regression losses rho(r) of the residual r = f.x - y (labels real, abs(y) <= B public):
the pseudo-Huber loss rho_h(r) = h^2 (sqrt(1 + (r/h)^2) - 1) has abs(rho') <= h (gradient
bound h R) and 0 <= rho'' <= 1 (curvature bound R^2), both attained (rho' -> +-h as
abs(r) -> infinity, rho''(0) = 1); docs/privacy_analysis.md, section "Private linear
regression".  Each Loss declares its bounds once (`lipschitz`, `curvature`); every
mechanism reads them from here.

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

__all__ = ["Loss", "get_loss", "LOSSES", "REGRESSION_LOSSES", "MULTINOMIAL", "MULTINOMIAL_MIN_CLASSES",
           "SOFTMAX_GRADIENT_FACTOR", "softmax_curvature", "check_n_classes"]

#: the loss name of the softmax (multinomial logistic) model, labels 0..K-1
MULTINOMIAL = "multinomial"
#: the smallest number of classes the multinomial mechanisms are calibrated for
MULTINOMIAL_MIN_CLASSES = 3
#: ||grad of one row's softmax loss|| <= SOFTMAX_GRADIENT_FACTOR * R (all K blocks)
SOFTMAX_GRADIENT_FACTOR = math.sqrt(2.0)


def softmax_curvature(n_classes, data_norm=1.0):
    """(1 - 1/K) R^2: the bound on the trace of one row's softmax Hessian block.

    Parameters
    ----------
    n_classes : int
        K >= 2.
    data_norm : float, default 1.0
        R, the public bound on every row's L2 norm.

    Returns
    -------
    float
    """
    return (1.0 - 1.0 / n_classes) * data_norm * data_norm


def check_n_classes(n_classes, *, mechanism=False):
    """The number of classes K as an int.

    An integer >= 2 (the softmax objective), or, with ``mechanism=True``,
    >= MULTINOMIAL_MIN_CLASSES (a private multinomial fit).

    Parameters
    ----------
    n_classes : int
        The number to check.
    mechanism : bool, default False
        Whether it is for a private multinomial fit.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Not an integer, or too small.
    """
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
    """A margin loss phi(y f.x), or (``regression``) a loss rho(f.x - y) of the residual.

    Parameters
    ----------
    name : str
        The public name (``"logistic"``, ``"huber"``, ...).
    kernel_id : int
        The index the compiled kernels understand.
    uses_h : bool
        Whether the smoothing width h matters.
    regression : bool, default False
        A loss of the residual (real labels) rather than of the margin (labels +-1).
    nonincreasing : bool, default True
        phi' <= 0 everywhere (the one-signed gradient the tighter Gaussian calibration uses).
    """

    name: str
    kernel_id: int
    uses_h: bool
    regression: bool = False
    nonincreasing: bool = True

    def lipschitz(self, h=0.5):
        """Upper bound on abs(phi') (abs(rho') for a regression loss): 1, or h (pseudo-Huber).

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0.

        Returns
        -------
        float
        """
        return float(h) if self.name == "pseudo_huber" else 1.0

    def curvature(self, h=0.5, data_norm=1.0):
        """Upper bound c on phi'' for rows of norm <= data_norm (scales as R^2).

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width, > 0.
        data_norm : float, default 1.0
            R, the public bound on every row's L2 norm.

        Returns
        -------
        float
        """
        if self.name == "logistic":
            c = 0.25
        elif self.name == "huber":
            c = 1.0 / (2.0 * h)
        elif self.name == "pseudo_huber":
            c = 1.0
        else:
            c = 3.0 / (4.0 * h)
        return c * data_norm**2

    def gradient_bound(self, data_norm=1.0, h=0.5):
        """Upper bound on one row's gradient norm: abs(phi') ||x|| <= lipschitz(h) R.

        Parameters
        ----------
        data_norm : float, default 1.0
            R, the public bound on every row's L2 norm.
        h : float, default 0.5
            The smoothing width, > 0.

        Returns
        -------
        float
        """
        return self.lipschitz(h) * data_norm

    def value_at_zero(self, h=0.5, label_bound=None):
        """The loss at f = 0, bounded over the data.

        phi(0) for a margin loss, and rho(B) (B = label_bound, abs(y) <= B) for a regression
        loss; then ||f*||^2 <= 2 value_at_zero / Lambda for any data.

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width, > 0.
        label_bound : float, optional
            B, the public bound on abs(y); required for a regression loss.

        Returns
        -------
        float
        """
        z = 0.0
        if self.regression:
            if label_bound is None:
                raise ValueError(f"label_bound: needed for the regression loss {self.name!r}")
            z = float(label_bound)
        return float(self.per_sample(np.array([z]), h)[0][0])

    def per_sample(self, z, h=0.5):
        """phi(z), phi'(z), phi''(z) for an array of margins z.

        Parameters
        ----------
        z : array_like
            Margins y f.x (float64); for a regression loss, the residuals f.x - y.
        h : float, default 0.5
            The smoothing width, > 0.

        Returns
        -------
        value, first, second : ndarray
            Each of the shape of ``z``.
        """
        from dperm._core._objective import per_sample

        z = np.ascontiguousarray(z, dtype=np.float64).ravel()
        return per_sample(self.kernel_id, z, float(h))


LOSSES = {
    "logistic": Loss("logistic", 0, False),
    "huber": Loss("huber", 1, True),
    "smooth_hinge": Loss("smooth_hinge", 2, True),
    "pseudo_huber": Loss("pseudo_huber", 3, True, regression=True, nonincreasing=False),
}
#: the losses of real-valued labels (PrivateLinearRegression)
REGRESSION_LOSSES = tuple(k for k, v in LOSSES.items() if v.regression)


def get_loss(loss, *, regression=None):
    """The Loss registered under ``loss``; ValueError naming ``loss`` otherwise.

    Parameters
    ----------
    loss : str or Loss
        A loss name (``"logistic"``, ``"huber"``, ``"smoothed_hinge"``, ``"pseudo_huber"``,
        ...) or a Loss.
    regression : bool, optional
        None (any loss), False (margin losses only: a classifier) or True (regression
        losses only).

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        An unknown name, or a loss of the other kind than ``regression`` asks for.

    Examples
    --------
    >>> from dperm.losses import get_loss
    >>> get_loss("logistic").lipschitz()
    1.0
    """
    names = sorted(k for k, v in LOSSES.items()
                   if regression is None or v.regression == bool(regression))
    if isinstance(loss, Loss):
        if regression is not None and loss.regression != bool(regression):
            raise ValueError(f"loss={loss.name!r} is not valid here; choose one of {names}")
        return loss
    if not isinstance(loss, str) or loss not in names:
        raise ValueError(
            f"loss={loss!r} is not a known loss; choose one of {names}"
        )
    return LOSSES[loss]
