"""Warnings and errors of dperm."""


class PrivacyLeakWarning(UserWarning):
    """Something public (a bound, a label set, a scale) was read from private data.

    The fit goes on, but its guarantee no longer covers what was read: fix the cause the
    message names (give the public value), rather than silencing the warning.
    Examples
    --------
    Turn it into an error (or silence it) with the standard warnings filters:

    >>> import warnings
    >>> import dperm
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", dperm.PrivacyLeakWarning)
    ...     # a fit here that draws the warning now raises it
    """


class BudgetExceededError(RuntimeError):
    """A fit would spend more privacy budget than a BudgetAccountant has left.

    Raised before the fit touches the data; nothing is spent.

    Examples
    --------
    >>> import dperm
    >>> budget = dperm.BudgetAccountant(epsilon=1.0)
    >>> budget.spend(0.8)
    >>> try:
    ...     budget.check(0.5)
    ... except dperm.BudgetExceededError:
    ...     print("refused")
    refused
    """


class NotConvergedError(RuntimeError):
    """A private fit stopped before the solver's tolerance, so nothing is released.

    The noise of output perturbation, objective perturbation and AMP is calibrated to
    the exact (or, for AMP, tolerance-approximate) minimiser; a point the solver stopped
    at is covered by none of them (docs/privacy_analysis.md, 11.1). The message names
    what to change (``max_iter``, ``tol``, ``solver``, ``alpha``). A RuntimeError, so
    existing handlers still catch it.

    Examples
    --------
    >>> import dperm
    >>> issubclass(dperm.NotConvergedError, RuntimeError)
    True
    """


class ConvergenceWarning(UserWarning):
    """The solver stopped before the gradient norm reached the tolerance.

    The privacy proofs of both mechanisms assume the exact minimizer, so an
    unconverged private fit is reported, never silently accepted.


    Examples
    --------
    Turn it into an error (or silence it) with the standard warnings filters:

    >>> import warnings
    >>> import dperm
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", dperm.ConvergenceWarning)
    ...     # a fit here that draws the warning now raises it
    """


class ClippingWarning(UserWarning):
    """Rows above the public norm bound were clipped onto it.

    Clipping keeps the guarantee (it maps each row on its own), but a model fitted
    on mostly clipped rows has lost their scale: choose a larger public
    `data_norm`, or scale the data by public bounds first
    (:class:`dperm.PublicBoundsTransformer`).  The warning's count is a statistic
    of the private data, for the analyst only.


    Examples
    --------
    Turn it into an error (or silence it) with the standard warnings filters:

    >>> import warnings
    >>> import dperm
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", dperm.ClippingWarning)
    ...     # a fit here that draws the warning now raises it
    """


class NoiseDominatedWarning(UserWarning):
    """A given alpha lets the expected noise exceed the largest norm the noise-free
    coefficients can have: the released model is mostly noise.  A check of public
    quantities only (n, d, epsilon, alpha, R); alpha="auto" avoids it.


    Examples
    --------
    Turn it into an error (or silence it) with the standard warnings filters:

    >>> import warnings
    >>> import dperm
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", dperm.NoiseDominatedWarning)
    ...     # a fit here that draws the warning now raises it
    """


class DataNormWarning(UserWarning):
    """The public bound `data_norm` is far above every row's norm: the regularization and
    the noise are calibrated to data_norm, so the rows' signal is lost and the model is
    mostly regularization or noise. The check reads the private rows' norms: for the
    analyst only, never for publication.


    Examples
    --------
    Turn it into an error (or silence it) with the standard warnings filters:

    >>> import warnings
    >>> import dperm
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", dperm.DataNormWarning)
    ...     # a fit here that draws the warning now raises it
    """
