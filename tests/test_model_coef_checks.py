"""dperm.model_io._check_coef, the coefficient checks of a model file: every refusal with
its exact message (one model: two classes or a regression; K > 2 classes), the order of
the checks, and what a valid file gives back."""
import numpy as np
import pytest

from dperm.model_io import ModelFormatError, _check_coef


def _bad(msg):
    return ModelFormatError(f"model m.json: not a valid dperm model: {msg}")


def _obj(coef, intercept, estimator=None):
    return {"coef": coef, "intercept": intercept,
            "estimator": {"loss": "logistic"} if estimator is None else estimator}


BINARY = [
    (_obj("x", 0.0), "'coef' must be a list of numbers"),
    (_obj([1.0, "a", 2.0], 0.0), "'coef' must be a list of numbers"),
    (_obj([1.0, True, 2.0], 0.0), "'coef' must be a list of numbers"),
    (_obj([1.0, 2.0], 0.0), "'coef' has 2 entries but there are 3 features"),
    (_obj([1.0, 2.0, 3.0], [0.0]), "'intercept' must be a number"),
    (_obj([1.0, 2.0, 3.0], 0.0, estimator=[]), "'estimator' must be an object with the 'loss'"),
    (_obj([1.0, 2.0, 3.0], 0.0, estimator={"loss": 1}),
     "'estimator' must be an object with the 'loss'"),
    (_obj([1.0, float("nan"), 3.0], 0.0), "coefficients must be finite"),
    (_obj([1.0, 2.0, 3.0], float("inf")), "coefficients must be finite"),
    # the order: the shape before the intercept, both before the estimator
    (_obj([1.0], "b", estimator=[]), "'coef' has 1 entries but there are 3 features"),
    (_obj([1.0, 2.0, 3.0], "b", estimator=[]), "'intercept' must be a number"),
]

MULTI = [
    (_obj([[1.0, 2.0, 3.0]] * 2, [0.0] * 3),
     "'coef' must be a list of 3 lists of numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 5.0], [0.0] * 3),
     "'coef' must be a list of 3 lists of numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0], [1.0, None, 3.0], [1.0, 2.0, 3.0]], [0.0] * 3),
     "'coef' must be a list of 3 lists of numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0], [1.0, 2.0], [1.0, 2.0, 3.0]], [0.0] * 3),
     "each row of 'coef' must have 3 entries (one per feature)"),
    (_obj([[1.0, 2.0, 3.0]] * 3, 0.0), "'intercept' must be a list of 3 numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0]] * 3, [0.0] * 2),
     "'intercept' must be a list of 3 numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0]] * 3, [0.0, "a", 1.0]),
     "'intercept' must be a list of 3 numbers (one per class)"),
    (_obj([[1.0, 2.0, 3.0]] * 3, [0.0] * 3, estimator={}),
     "'estimator' must be an object with the 'loss'"),
    (_obj([[1.0, 2.0, 3.0]] * 2 + [[1.0, 2.0, float("-inf")]], [0.0] * 3),
     "coefficients must be finite"),
]


@pytest.mark.parametrize("K", [None, 2])
@pytest.mark.parametrize("obj, message", BINARY)
def test_one_model_refusals(obj, message, K):
    with pytest.raises(ModelFormatError) as err:
        _check_coef(obj, _bad, 3, K)
    assert str(err.value) == f"model m.json: not a valid dperm model: {message}"


@pytest.mark.parametrize("obj, message", MULTI)
def test_multiclass_refusals(obj, message):
    with pytest.raises(ModelFormatError) as err:
        _check_coef(obj, _bad, 3, 3)
    assert str(err.value) == f"model m.json: not a valid dperm model: {message}"


def test_valid_coefficients_come_back_as_arrays():
    coef, b = _check_coef(_obj([1, 2.5, -3], 2), _bad, 3, None)
    assert coef.dtype == np.float64 and coef.tolist() == [1.0, 2.5, -3.0]
    assert isinstance(b, float) and b == 2.0
    coef, b = _check_coef(_obj([[1, 2, 3], [4, 5, 6], [7, 8, 9]], [0, 1, 2]), _bad, 3, 3)
    assert coef.shape == (3, 3) and b.dtype == np.float64 and b.tolist() == [0.0, 1.0, 2.0]
