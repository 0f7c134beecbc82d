"""estimate_bounds' column checks (quantiles._columns and its steps), message by message:
each refusal comes before any budget is checked or spent, so epsilon and the data's values
do not matter here."""
import re

import numpy as np
import pandas as pd
import pytest

from dperm.privacy.quantiles import estimate_bounds


def _refused(X, columns, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        estimate_bounds(X, 1.0, columns=columns)


FRAME = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "s": ["x", "y"]})


@pytest.mark.parametrize("X, columns, message", [
    (FRAME, None,
     "columns: X is a DataFrame with columns of non-numeric dtype ['s']; name the numeric "
     "columns to release with columns=[...] (which columns are numeric must be public, not "
     "read from the data)"),
    (FRAME[[]], None, "X: has no columns"),
    ({}, None, "X: has no columns"),
    (FRAME, ["a", "z"], "columns: ['z'] not in X (X has columns: ['a', 'b', 's'])"),
    ({"a": [1.0]}, ["q"], "columns: ['q'] not in X (X has columns: ['a'])"),
    (FRAME, [], "columns: must name at least one column"),
    (FRAME, ["a", "a"], "columns: a column is listed twice in ['a', 'a']"),
    (np.zeros(3), None, "X: expected a 2-D array or DataFrame, got shape (3,)"),
    (np.zeros((3, 0)), None, "X: has no columns"),
    (np.zeros((3, 2)), ["a"], "columns: X is an array; name columns by integer index, got 'a'"),
    (np.zeros((3, 2)), [True], "columns: X is an array; name columns by integer index, got True"),
    (np.zeros((3, 2)), [0, 2], "columns: index 2 is out of range; X has 2 column(s)"),
    (np.zeros((3, 2)), [-1], "columns: index -1 is out of range; X has 2 column(s)"),
    (np.zeros((3, 2)), [1, 1], "columns: a column is listed twice in [1, 1]"),
])
def test_column_refusals_name_the_problem(X, columns, message):
    _refused(X, columns, message)


@pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")
def test_chosen_columns_in_their_order_as_ints():
    out = estimate_bounds(np.column_stack([np.arange(50.0), -np.arange(50.0)]), 50.0,
                          columns=[np.int64(1), 0], bounds_range=(-100, 100), random_state=0)
    assert list(out.bounds) == [1, 0]
    assert all(type(k) is int for k in out.bounds)
    assert out.bounds[1][1] < 0 < out.bounds[0][1]      # column 1 is the negative one
