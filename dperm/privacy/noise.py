"""Noise samplers and the randomness policy.

Policy: every private computation draws from a fresh generator seeded from OS
entropy (`dperm.data.validation.fresh_generator`, never numpy's global state) unless
the caller passes `random_state` (an int seed or a numpy Generator) for a
reproducible experiment or test.

A fixed seed voids the guarantee: whoever knows it regenerates the noise and
subtracts it, and two fits with one seed on neighbouring data sets differ by
exactly the non-private difference.  Entry points that fit call
`warn_if_seeded`, which warns once per call and refuses a seeded fit that would
be charged to a BudgetAccountant.
"""
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data.validation import check_random_state, is_fixed_seed
from dperm.exceptions import PrivacyLeakWarning

__all__ = ["sample_l2_laplace", "check_random_state", "warn_if_seeded"]


def warn_if_seeded(random_state: Any, *, accountant: Any = None, name: str = "random_state",
                   stacklevel: int = 3) -> bool:
    """Warn (PrivacyLeakWarning) when ``random_state`` is a fixed seed; returns whether it is.

    With an accountant attached a seeded fit is refused (ValueError): charging
    epsilon for a release whose noise can be regenerated would be a false record.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        The fit's source of randomness.
    accountant : BudgetAccountant, optional
        The accountant the fit spends from, if any.
    name : str, default "random_state"
        The parameter's name in messages.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn`.

    Returns
    -------
    bool
        True for a fixed seed.

    Raises
    ------
    ValueError
        A fixed seed with an accountant attached.
    """
    if not is_fixed_seed(random_state):
        return False
    if accountant is not None:
        raise ValueError(
            f"{name}: a fixed seed ({type(random_state).__name__}) cannot be used with a "
            "BudgetAccountant: the noise of a seeded fit can be regenerated, so the epsilon-DP "
            f"guarantee does not hold and accounting it would be wrong; use {name}=None")
    warnings.warn(
        f"{name} is a fixed seed: the epsilon-DP guarantee does not hold for seeded runs "
        "(whoever knows the seed can regenerate and subtract the noise, and two fits with one "
        f"seed on neighbouring data differ by the non-private difference). Use {name}=None "
        "for anything you release.", PrivacyLeakWarning, stacklevel=stacklevel)
    return True


def sample_l2_laplace(beta: ArrayLike, d: int, size: Any = (),
                      random_state: Any = None) -> np.ndarray:
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
