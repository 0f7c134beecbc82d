"""select_alpha's refusals of its public arguments: the whole messages and the order of
the checks (epsilon, alphas, expected_runs, runs, score_fraction, accountant), all before
the estimator or the data are looked at (estimator None here)."""
import re

import numpy as np
import pytest

from dperm.privacy import selection as S

OK = dict(alphas=[1.0, 2.0])


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(alphas=[]), ValueError, "alphas: the grid is empty"),
    (dict(alphas="auto"), ValueError,
     "alphas: must be a list of positive numbers (a public grid), got 'auto'"),
    (dict(alphas=[1.0, True]), ValueError, "alphas: must be positive finite numbers, got True"),
    (dict(OK, expected_runs=0.5), ValueError, "expected_runs: must be a number >= 1, got 0.5"),
    (dict(OK, expected_runs=np.bool_(True)), ValueError,
     "expected_runs: must be a number >= 1, got np.True_"),
    (dict(OK, expected_runs=float("inf")), ValueError,
     "expected_runs: must be a number >= 1, got inf"),
    (dict(OK, runs="poisson"), ValueError,
     "runs: must be one of ['geometric', 'logarithmic'], got 'poisson'"),
    (dict(OK, score_fraction=1.0), ValueError, "score_fraction: must be in (0, 1), got 1.0"),
    (dict(OK, score_fraction=False), ValueError,
     "score_fraction: must be in (0, 1), got False"),
    (dict(OK, accountant=object()), TypeError,
     "accountant: expected a dperm.BudgetAccountant, got object"),
    # the order: each earlier check wins over every later one
    (dict(alphas=[], expected_runs=0.5, runs="poisson"), ValueError,
     "alphas: the grid is empty"),
    (dict(OK, expected_runs=0.5, runs="poisson", score_fraction=2.0, accountant=1), ValueError,
     "expected_runs: must be a number >= 1, got 0.5"),
    (dict(OK, runs="poisson", score_fraction=2.0, accountant=1), ValueError,
     "runs: must be one of ['geometric', 'logarithmic'], got 'poisson'"),
    (dict(OK, score_fraction=2.0, accountant=1), ValueError,
     "score_fraction: must be in (0, 1), got 2.0"),
])
def test_select_alpha_refusals_are_whole_and_in_order(kwargs, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        S.select_alpha(None, None, None, 1.0, **kwargs)


def test_epsilon_is_checked_first():
    with pytest.raises(ValueError, match="^epsilon"):
        S.select_alpha(None, None, None, -1.0, alphas=[], runs="poisson")
