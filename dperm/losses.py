"""Registry of the margin losses phi(z), z = y f.x, and their constants.

Each loss has |phi'(z)| <= 1 (the gradient bound, times R for rows of norm
<= R) and 0 <= phi''(z) <= c (the curvature bound, times R^2).  The constants
here are the single source the mechanisms use.
"""
from dataclasses import dataclass

import numpy as np

__all__ = ["Loss", "get_loss", "LOSSES"]


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
