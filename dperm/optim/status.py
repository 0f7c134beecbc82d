"""The solvers' status codes and their messages: one table per solver, read by every
front end (binary losses and the softmax model alike)."""

__all__ = ["LBFGS_STATUS", "NEWTON_STATUS"]

#: dperm._core._lbfgs: 1 converged, 2 max_iter, 3 line search failed
LBFGS_STATUS = {1: "converged", 2: "max_iter reached",
                3: "line search failed (rounding error dominates)"}
#: dperm.optim.newton.trust_region_newton: 1 converged, 2 max_iter, 3 failure
NEWTON_STATUS = {1: "converged", 2: "max_iter reached",
                 3: "trust region collapsed (rounding error dominates)"}
