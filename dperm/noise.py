"""Noise samplers and the randomness policy.

Policy: every private computation draws from a fresh generator seeded from OS
entropy unless the caller passes `random_state` (an int seed or a numpy
Generator) for a reproducible experiment or test.
"""
import numpy as np

from dperm._validation import check_random_state

__all__ = ["sample_l2_laplace", "check_random_state"]


def sample_l2_laplace(beta, d, size=(), random_state=None):
    """Draw b in R^d with density proportional to exp(-beta ||b||_2).

    The norm is Gamma(shape=d, scale=1/beta) and the direction is uniform on
    the unit sphere (a normalized standard normal vector), independently.

    Parameters
    ----------
    beta : float or array broadcastable to `size`
        Rate (1 / length units of the coefficients); larger beta, less noise.
    d : int
        Dimension.
    size : int or tuple
        Batch shape; the result has shape size + (d,).
    random_state : None, int or numpy Generator
        See the module docstring.

    Returns
    -------
    array of shape size + (d,), float64.
    """
    rng = check_random_state(random_state)
    size = (size,) if np.ndim(size) == 0 else tuple(size)
    beta = np.asarray(beta, dtype=np.float64)
    if not (np.all(np.isfinite(beta)) and np.all(beta > 0)):
        raise ValueError(f"beta: must be positive and finite, got {beta}")
    if int(d) != d or d < 1:
        raise ValueError(f"d: must be a positive integer, got {d!r}")
    d = int(d)
    radius = rng.gamma(shape=d, scale=1.0, size=size) / np.broadcast_to(beta, size)
    direction = rng.standard_normal(size + (d,))
    nrm = np.linalg.norm(direction, axis=-1, keepdims=True)
    # a zero normal vector has probability zero; guard anyway (redraw would bias nothing)
    nrm[nrm == 0] = 1.0
    return direction / nrm * radius[..., None]
