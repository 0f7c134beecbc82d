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
