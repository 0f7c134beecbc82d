"""The multinomial solver's per-problem parameters (softmax._batch_params and its steps
_alpha_array, _extra_l2_array, _linear_array, _problem_count): whole refusal messages, in
the order they are checked, and the broadcast to m problems."""
import re

import numpy as np
import pytest

from dperm.optim.softmax import _batch_params, multinomial_value_grad

K, D = 3, 2


@pytest.mark.parametrize("args, m, message", [
    (("1.0", None, None), None,
     "alpha: must be a positive number or a 1-D sequence of them, got '1.0'"),
    (([], None, None), None, "alpha: must be a positive number or a 1-D sequence of them, got []"),
    (([[1.0]], None, None), None,
     "alpha: must be a positive number or a 1-D sequence of them, got [[1.0]]"),
    (([1.0, 0.0], None, None), None,
     "alpha: every value must be positive and finite, got [1.0, 0.0]"),
    ((np.inf, None, None), None, "alpha: every value must be positive and finite, got inf"),
    ((1.0, -1.0, None), None,
     "extra_l2: must be >= 0 and finite (scalar or one per problem), got -1.0"),
    ((1.0, [], None), None,
     "extra_l2: must be >= 0 and finite (scalar or one per problem), got []"),
    ((1.0, None, np.zeros((K, D + 1))), None,
     "linear: expected shape (3, 2) or (m, 3, 2), got (3, 3)"),
    ((1.0, None, np.zeros(D)), None, "linear: expected shape (3, 2) or (m, 3, 2), got (2,)"),
    ((1.0, None, np.full((K, D), np.nan)), None, "linear: contains NaN or infinity"),
    (([1.0, 2.0], [0.0, 0.0, 0.0], None), None,
     "alpha: has 2 entries for 3 problems (give 1 or 3)"),
    (([1.0, 2.0], 0.0, np.zeros((3, K, D))), None,
     "alpha: has 2 entries for 3 problems (give 1 or 3)"),
    ((1.0, [0.0, 0.0], None), 3, "extra_l2: has 2 entries for 3 problems (give 1 or 3)"),
    ((1.0, 0.0, np.zeros((2, K, D))), 3, "linear: has 2 entries for 3 problems (give 1 or 3)"),
    # the order: alpha before extra_l2 before linear before the counts
    (("x", -1.0, np.zeros(D)), None,
     "alpha: must be a positive number or a 1-D sequence of them, got 'x'"),
    ((1.0, -1.0, np.zeros(D)), None,
     "extra_l2: must be >= 0 and finite (scalar or one per problem), got -1.0"),
])
def test_batch_params_refusals(args, m, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _batch_params(*args, K, D, m)


def test_batch_params_broadcast():
    l2, B = _batch_params([1.0, 2.0], 0.5, None, K, D)
    assert l2.tolist() == [1.5, 2.5] and B is None
    lin = np.arange(K * D, dtype=float).reshape(K, D)
    l2, B = _batch_params(1.0, None, lin, K, D, 4)
    assert l2.tolist() == [1.0] * 4 and B.shape == (4, K, D) and B.flags.c_contiguous
    assert all(np.array_equal(B[j], lin) for j in range(4))


def test_public_entry_point_says_the_same():
    X = np.eye(D)[[0, 1, 0]] * 0.5
    with pytest.raises(ValueError, match=r"^alpha: every value must be positive and finite"):
        multinomial_value_grad(X, np.array([0, 1, 2]), np.zeros((K, D)), 0.0)
