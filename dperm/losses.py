"""Registry of the losses and their constants: the one home of every bound the privacy
calibration reads.

Margin losses phi(z), z = y f.x: each has abs(phi'(z)) <= 1 (the gradient bound, times R
for rows of norm <= R) and 0 <= phi''(z) <= c (the curvature bound, times R^2).

Regression losses rho(r) of the residual r = f.x - y (labels real, abs(y) <= B public):
the pseudo-Huber loss rho_h(r) = h^2 (sqrt(1 + (r/h)^2) - 1) has abs(rho') <= h (gradient
bound h R) and 0 <= rho'' <= 1 (curvature bound R^2), both attained (rho' -> +-h as
abs(r) -> infinity, rho''(0) = 1); docs/privacy_analysis.md, section "Private linear
regression".  Each loss is one subclass of Loss that declares its name, kernel id and
bounds once (`lipschitz`, `unit_curvature`); every mechanism reads them from here.

The softmax (multinomial logistic) model over K classes: one row's gradient, all K
blocks together, has norm <= sqrt(2) R (`SOFTMAX_GRADIENT_FACTOR`), and the trace of one
row's Hessian block is <= (1 - 1/K) R^2 (`softmax_curvature`).  Its mechanisms are
derived for K >= 3 (`MULTINOMIAL_MIN_CLASSES`): a 2-class softmax row gradient reaches
sqrt(2) R, which the binary calibration does not cover, so two classes are a binary
loss's job.

This module sits below both the solvers and the privacy code (both read it).
"""
import abc
import math
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Loss", "Logistic", "Huber", "SmoothHinge", "PseudoHuber", "get_loss", "LOSSES",
           "REGRESSION_LOSSES", "MULTINOMIAL", "MULTINOMIAL_MIN_CLASSES",
           "SOFTMAX_GRADIENT_FACTOR", "softmax_curvature", "check_n_classes"]

#: the loss name of the softmax (multinomial logistic) model, labels 0..K-1
MULTINOMIAL = "multinomial"
#: the smallest number of classes the multinomial mechanisms are calibrated for
MULTINOMIAL_MIN_CLASSES = 3
#: ||grad of one row's softmax loss|| <= SOFTMAX_GRADIENT_FACTOR * R (all K blocks)
SOFTMAX_GRADIENT_FACTOR = math.sqrt(2.0)


def softmax_curvature(n_classes: int, data_norm: float = 1.0) -> float:
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


def check_n_classes(n_classes: Any, *, mechanism: bool = False) -> int:
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


class Loss(abc.ABC):
    """A margin loss phi(y f.x), or (`regression`) a loss rho(f.x - y) of the residual.

    Each loss is ONE subclass, its one declaration: the class attributes ``name`` (the
    public name), ``kernel_id`` (the id of its code in the compiled kernels, checked
    against ``dperm._core._objective.KERNEL_LOSS_IDS`` by tests/test_losses.py),
    ``uses_h`` (whether the smoothing width h matters), ``regression`` (a loss of the
    residual, real labels, rather than of the margin, labels +-1) and ``nonincreasing``
    (phi' <= 0 everywhere: the one-signed gradient the tighter Gaussian calibration
    uses); and the methods ``lipschitz`` and ``unit_curvature`` (its bounds).  The base
    class declares nothing: a subclass that leaves out a bound cannot be instantiated
    (abstract), and one that leaves out an attribute is refused when it is defined.
    """

    name: ClassVar[str]
    kernel_id: ClassVar[int]
    uses_h: ClassVar[bool]
    regression: ClassVar[bool] = False
    nonincreasing: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [a for a in ("name", "kernel_id", "uses_h") if not hasattr(cls, a)]
        if missing:
            raise TypeError(f"{cls.__name__}: a Loss declares {', '.join(missing)} "
                            "(class attributes)")
        # an override of a declared bound documents itself with the base's docstring
        # (Parameters, Returns), which its class docstring specialises
        for attr in ("lipschitz", "unit_curvature"):
            method = cls.__dict__.get(attr)
            if method is not None and method.__doc__ is None:
                method.__doc__ = getattr(Loss, attr).__doc__

    def __setattr__(self, attr: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__}: a loss is immutable")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @abc.abstractmethod
    def lipschitz(self, h: float = 0.5) -> float:
        """Upper bound on abs(phi') (abs(rho') for a regression loss).

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.

        Returns
        -------
        float
        """

    @abc.abstractmethod
    def unit_curvature(self, h: float = 0.5) -> float:
        """Upper bound c on phi'' for rows of norm <= 1.

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.

        Returns
        -------
        float
        """

    def curvature(self, h: float = 0.5, data_norm: float = 1.0) -> float:
        """Upper bound c on phi'' for rows of norm <= data_norm (scales as R^2).

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.
        data_norm : float, default 1.0
            R, the public bound on every row's L2 norm.

        Returns
        -------
        float

        Examples
        --------
        >>> from dperm.losses import get_loss
        >>> get_loss("logistic").curvature(data_norm=2.0)     # 1/4 R^2
        1.0
        """
        return self.unit_curvature(h) * data_norm**2

    def gradient_bound(self, data_norm: float = 1.0, h: float = 0.5) -> float:
        """Upper bound on one row's gradient norm: abs(phi') ||x|| <= lipschitz(h) R.

        Parameters
        ----------
        data_norm : float, default 1.0
            R, the public bound on every row's L2 norm.
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.

        Returns
        -------
        float
        """
        return self.lipschitz(h) * data_norm

    def value_at_zero(self, h: float = 0.5, label_bound: float | None = None) -> float:
        """The loss at f = 0, bounded over the data.

        phi(0) for a margin loss, and rho(B) (B = label_bound, abs(y) <= B) for a regression
        loss; then ||f*||^2 <= 2 value_at_zero / Lambda for any data.

        Parameters
        ----------
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.
        label_bound : float, optional
            B, the public bound on abs(y); required for a regression loss.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            A regression loss without ``label_bound``.
        """
        z = 0.0
        if self.regression:
            if label_bound is None:
                raise ValueError(f"label_bound: needed for the regression loss {self.name!r}")
            z = float(label_bound)
        return float(self.per_sample(np.array([z]), h)[0][0])

    def per_sample(self, z: ArrayLike, h: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """phi(z), phi'(z), phi''(z) for an array of margins z.

        Parameters
        ----------
        z : array_like
            Margins y f.x (read as float64, flattened); for a regression loss, the residuals
            f.x - y.
        h : float, default 0.5
            The smoothing width (Huber, smoothed hinge, pseudo-Huber), > 0; ignored by the
            logistic loss.

        Returns
        -------
        value, first, second : ndarray of shape (z.size,)
        """
        from dperm._core._objective import per_sample

        z = np.ascontiguousarray(z, dtype=np.float64).ravel()
        return per_sample(self.kernel_id, z, float(h))


class Logistic(Loss):
    """phi(z) = log(1 + e^-z): abs(phi') <= 1, phi'' <= 1/4."""

    name = "logistic"
    kernel_id = 0
    uses_h = False

    def lipschitz(self, h: float = 0.5) -> float:
        return 1.0

    def unit_curvature(self, h: float = 0.5) -> float:
        return 0.25


class Huber(Loss):
    """The Huber loss of the margin (paper eq. 41), width h: abs(phi') <= 1, phi'' <= 1/(2h)."""

    name = "huber"
    kernel_id = 1
    uses_h = True

    def lipschitz(self, h: float = 0.5) -> float:
        return 1.0

    def unit_curvature(self, h: float = 0.5) -> float:
        return 1.0 / (2.0 * h)


class SmoothHinge(Loss):
    """The smoothed hinge loss (paper eq. 38), width h: abs(phi') <= 1, phi'' <= 3/(4h)."""

    name = "smooth_hinge"
    kernel_id = 2
    uses_h = True

    def lipschitz(self, h: float = 0.5) -> float:
        return 1.0

    def unit_curvature(self, h: float = 0.5) -> float:
        return 3.0 / (4.0 * h)


class PseudoHuber(Loss):
    """rho(r) = h^2 (sqrt(1 + (r/h)^2) - 1) of the residual: abs(rho') <= h, rho'' <= 1."""

    name = "pseudo_huber"
    kernel_id = 3
    uses_h = True
    regression = True
    nonincreasing = False

    def lipschitz(self, h: float = 0.5) -> float:
        return float(h)

    def unit_curvature(self, h: float = 0.5) -> float:
        return 1.0


def _registry(*classes: type[Loss]) -> dict[str, Loss]:
    """name -> instance, refusing a name or a kernel id declared twice."""
    out, ids = {}, {}
    for cls in classes:
        if cls.name in out or cls.kernel_id in ids:
            raise TypeError(f"{cls.__name__}: loss name {cls.name!r} or kernel id "
                            f"{cls.kernel_id} is declared twice")
        out[cls.name] = cls()
        ids[cls.kernel_id] = cls.name
    return out


LOSSES = _registry(Logistic, Huber, SmoothHinge, PseudoHuber)
#: the losses of real-valued labels (PrivateLinearRegression)
REGRESSION_LOSSES = tuple(k for k, v in LOSSES.items() if v.regression)


def get_loss(loss: "str | Loss", *, regression: bool | None = None) -> Loss:
    """The Loss registered under ``loss``; ValueError naming ``loss`` otherwise.

    Parameters
    ----------
    loss : str or Loss
        A loss name (``"logistic"``, ``"huber"``, ``"smooth_hinge"``, ``"pseudo_huber"``)
        or a Loss.
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
    >>> loss = get_loss("logistic")
    >>> loss.lipschitz(), loss.unit_curvature()
    (1.0, 0.25)
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
