"""Warnings and errors of dperm."""


class PrivacyLeakWarning(UserWarning):
    """Something public (a bound, a label set, a scale) was read from private data."""


class BudgetExceededError(RuntimeError):
    """A fit would spend more privacy budget than a BudgetAccountant has left."""


class ConvergenceWarning(UserWarning):
    """The solver stopped before the gradient norm reached the tolerance.

    The privacy proofs of both mechanisms assume the exact minimizer, so an
    unconverged private fit is reported, never silently accepted.
    """


class ClippingWarning(UserWarning):
    """Rows above the public norm bound were clipped onto it.

    Clipping keeps the guarantee (it maps each row on its own), but a model fitted
    on mostly clipped rows has lost their scale: choose a larger public
    `data_norm`, or scale the data by public bounds first
    (:class:`dperm.PublicBoundsTransformer`).  The warning's count is a statistic
    of the private data, for the analyst only.
    """


class NoiseDominatedWarning(UserWarning):
    """A given alpha lets the expected noise exceed the largest norm the noise-free
    coefficients can have: the released model is mostly noise.  A check of public
    quantities only (n, d, epsilon, alpha, R); alpha="auto" avoids it."""


class DataNormWarning(UserWarning):
    """The public bound `data_norm` is far above every row's norm: the regularization and
    the noise are calibrated to data_norm, so the rows' signal is lost and the model is
    mostly regularization or noise. The check reads the private rows' norms: for the
    analyst only, never for publication."""
