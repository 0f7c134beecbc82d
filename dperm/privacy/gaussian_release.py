"""The (epsilon, delta) steps of the mechanisms: what dperm.privacy.mechanisms calls when
``delta > 0`` (it keeps the pure-epsilon steps, the checks and the dispatch).

- `gaussian_calibrations`: one calibration per Lambda from dperm.privacy.calibration, for
  Gaussian objective perturbation (ObjectiveGaussianCalibration) or approximate minima
  perturbation (AMPCalibration, which adds the output noise's share of epsilon and delta);
- `gaussian_objective_noise`: the objective's Gaussian linear term b ~ N(0, sigma^2 I) and
  the constants it records;
- `amp_release`: AMP's output step, exact Gaussian noise on the public grid around the
  approximate minimisers, released only when every gradient norm is within the tolerance
  the noise was calibrated for;
- `gaussian_output_on_grid`: output perturbation's Gaussian draw, exact on the grid, sigma
  the analytic Gaussian scale (Balle & Wang 2018) for the sensitivity plus the rounding's
  sqrt(d) g.

The derivations are in docs/privacy_analysis.md (sections 3, 6 and 8; section 10 for the grid).
Inputs are the mechanisms' checked values (no validation here).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from dperm.exceptions import NotConvergedError
from dperm.losses import Loss
from dperm.privacy import exact_noise
from dperm.privacy.exact_noise import GRID_BITS, warn_if_grid_clamps

__all__ = ["gaussian_calibrations", "gaussian_objective_noise", "amp_release",
           "gaussian_output_on_grid"]


def gaussian_calibrations(alphas: np.ndarray, epsilon: float, delta: float, *,
                          perturbation: str, tol: float, amp_output_fraction: float,
                          n_norm: float, L: float, c: float, nb: str, K: int,
                          lo: Loss | None) -> list[Any]:
    """One calibration per alpha: ObjectiveGaussianCalibration, or for AMP an
    AMPCalibration (which adds the output noise's share)."""
    from dperm.privacy import calibration

    cals: list[Any] = []
    for a in alphas:
        # the margin losses all have loss' <= 0: the tighter one-signed bound applies
        # (not to a regression loss, whose rho' takes both signs); the calibration's
        # data_norm is one row's gradient bound L
        kw: dict[str, Any] = dict(n=n_norm, alpha=float(a), data_norm=L, curvature=c,
                                  neighbouring=nb, n_classes=K,
                                  nonincreasing_loss=lo is not None and lo.nonincreasing)
        if perturbation == "amp":
            cals.append(calibration.amp_calibration(
                epsilon, delta, grad_tol=tol, output_fraction=amp_output_fraction, **kw))
        else:
            cals.append(calibration.objective_gaussian_calibration(epsilon, delta, **kw))
    return cals


def gaussian_objective_noise(cals: list[Any], alphas: np.ndarray, epsilon: float,
                             n_draws: int, dim: int, rng: np.random.Generator
                             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(b of shape (alphas, draws, dim), the constants to record: epsilon_prime, extra_l2,
    sigma): the objective's Gaussian linear term, sigma (SUM units) and Delta from each
    alpha's calibration (AMP's objective part for an AMPCalibration)."""
    sig = np.array([getattr(cc, "sigma_objective", None) or cc.sigma for cc in cals])
    extra = np.array([cc.extra_l2 for cc in cals])
    b = rng.standard_normal((alphas.size, n_draws, dim)) * sig[:, None, None]
    eps_noise = np.array([getattr(cc, "epsilon_objective", epsilon) - cc.epsilon_det
                          for cc in cals])
    return b, {"epsilon_prime": eps_noise, "extra_l2": extra, "sigma": sig}


def amp_release(W: np.ndarray, res: Any, cals: list[Any], alphas: np.ndarray, *, tol: float,
                n: int, n_norm: float, L: float, dim: int, rng: np.random.Generator,
                consts: dict[str, np.ndarray]) -> np.ndarray:
    """AMP's output step: the approximate minimisers W (alphas, draws, ...) plus exact
    Gaussian noise on the grid, released only when every gradient norm is <= tol (the
    grids and output scales go into ``consts``)."""
    from dperm.privacy import calibration

    gn = np.asarray(res.grad_norm).reshape(W.shape[:2]) * (n / n_norm)
    if not np.all(gn <= tol):          # (a NaN norm is refused too)
        raise NotConvergedError(
            f"perturbation='amp': the solver stopped above the gradient tolerance "
            f"tol={tol:g} that the output noise was calibrated for; nothing is "
            "released. Raise max_iter (or tol, which raises the output noise).")
    coef = np.empty_like(W)
    grids, sig_out = np.empty(alphas.size), np.empty(alphas.size)
    for a, cc in enumerate(cals):
        shift = tol / (alphas[a] + cc.extra_l2)

        def sigma_for(s: float, cc: Any = cc) -> float:
            return float(calibration.analytic_gaussian_sigma(cc.epsilon_output,
                                                             cc.delta_output, s))

        s_out, g = exact_noise.calibrate_on_grid(sigma_for, shift, dim, bits=GRID_BITS)
        coef[a], g = exact_noise.gaussian_on_grid(W[a], s_out, rng, bits=GRID_BITS)
        warn_if_grid_clamps(g, (L + cc.sigma_objective * math.sqrt(dim) / n_norm)
                            / (alphas[a] + cc.extra_l2))
        grids[a], sig_out[a] = g, s_out
    consts.update(grid=grids, sigma_output=sig_out)
    return coef


def gaussian_output_on_grid(center: np.ndarray, sensitivity: float, epsilon: float,
                            delta: float, dim: int, rng: np.random.Generator
                            ) -> tuple[np.ndarray, float, float]:
    """(released, sigma, g): output perturbation's Gaussian noise around ``center`` (one
    alpha's minimiser, broadcast over the draws), sampled exactly on the grid g, sigma
    calibrated for ``sensitivity`` plus the rounding's sqrt(d) g."""
    from dperm.privacy import calibration

    sigma, g = exact_noise.calibrate_on_grid(
        lambda s: calibration.analytic_gaussian_sigma(epsilon, delta, s),
        sensitivity, dim, bits=GRID_BITS)
    released, g = exact_noise.gaussian_on_grid(center, sigma, rng, bits=GRID_BITS)
    return released, sigma, g
