"""estimate_bounds when its two draws coincide (issue 29, item 8): the released pair must
be public grid points, low < high, never a data value.  Written against the public
behaviour only (estimate_bounds and its documented default grid), so that it holds for
any implementation (the pair mechanism releases two grid points, low < high, by
construction; the old one separated coinciding draws with a post-processing step)."""
import warnings

import numpy as np
import pytest

from dperm import estimate_bounds
from dperm.privacy.quantiles import default_grid

#: the documented default grid (dperm.privacy.quantiles.default_grid: 0 and
#: +-10^(k/100) for magnitudes 1e-3 .. 1e9; the grid was 10 points per decade before the
#: pair mechanism of issue 28)
GRID = default_grid()


def on_grid(v):
    return bool(np.any(np.isclose(GRID, v, rtol=1e-12, atol=0.0)))


def bounds(X, epsilon, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the seeded-noise warning
        return estimate_bounds(X, epsilon, random_state=seed)


@pytest.mark.parametrize("seed", range(5))
def test_coinciding_draws_release_two_distinct_grid_points(seed):
    # every value on one grid point, many rows, a large epsilon: both quantile draws
    # land on that atom (with probability ~ 1 - e^-100), the case the separation handles;
    # at the lowest inner point, an inner point, 0 and the grid's top end
    values = [1.0, 10.0 ** -3, 0.0, 1e9, -1e9, 10.0 ** 0.5]
    X = np.column_stack([np.full(4000, v) for v in values])
    out = bounds(X, 400.0, seed)
    for j, v in enumerate(values):
        lo, hi = out[j]
        assert lo < hi, (v, lo, hi)
        assert on_grid(lo) and on_grid(hi), (v, lo, hi)
        assert lo <= v <= hi, (v, lo, hi)


@pytest.mark.parametrize("seed", range(3))
def test_a_value_off_the_grid_is_never_released(seed):
    """Data values that are not grid points: the draws are continuous there, and the
    separation never substitutes a data value for a draw."""
    v = 1.1
    X = np.full((4000, 1), v)
    X[::2] = 3.3
    lo, hi = bounds(X, 400.0, seed)[0]
    assert lo < hi
    assert lo not in (1.1, 3.3) and hi not in (1.1, 3.3)
