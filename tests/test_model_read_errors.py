"""read_model's refusals, message by message (pinned: the branches of read_model and its
steps _model_schema / _raw_feature_names / _check_row_norm_bound / _model_classes)."""
import json

import numpy as np
import pytest

from dperm import PrivateLinearClassifier, PrivateLinearRegression, save_model
from dperm.model_io import ModelFormatError, read_model

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")]


@pytest.fixture(scope="module")
def raw_models(tmp_path_factory):
    """A version 4 (no schema) classifier and regression model file, as dicts."""
    folder = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 2
    out = {}
    for kind, est in [("clf", PrivateLinearClassifier(classes=[0, 1], random_state=0)
                       .fit(X, (X[:, 0] > 0).astype(int))),
                      ("reg", PrivateLinearRegression(random_state=0)
                       .fit(X, np.clip(X[:, 0], -1, 1)))]:
        save_model(est, folder / f"{kind}.json")
        out[kind] = json.loads((folder / f"{kind}.json").read_text())
    return out


def _refused(tmp_path, obj):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(ModelFormatError) as err:
        read_model(path)
    prefix = f"model {path}: not a valid dperm model: "
    assert str(err.value).startswith(prefix), str(err.value)
    return str(err.value)[len(prefix):]


@pytest.mark.parametrize("kind, change, message", [
    ("clf", {"task": "ranking"}, "'task' must be 'classification' or 'regression'"),
    ("clf", {"schema": {"numeric": {}}}, "a format_version 4 model has no schema"),
    ("clf", {"feature_names": []}, "'feature_names' must be a list of column names"),
    ("reg", {"feature_names": ["x0", 1, "x2"]},
     "'feature_names' must be a list of column names"),
    ("clf", {"preprocessing": {"row_norm_bound": 0}},
     "'preprocessing.row_norm_bound' must be a positive number"),
    ("clf", {"preprocessing": {"row_norm_bound": True}},
     "'preprocessing.row_norm_bound' must be a positive number"),
    ("reg", {"preprocessing": None},
     "'preprocessing.row_norm_bound' must be a positive number"),
    ("reg", {"format_version": 2}, "a regression model has format_version 3"),
    ("clf", {"format_version": 3},
     "'task' must be 'classification' or (format version 3) 'regression'"),
])
def test_read_model_names_what_is_wrong(tmp_path, raw_models, kind, change, message):
    assert _refused(tmp_path, dict(raw_models[kind], **change)) == message


def test_read_model_accepts_the_raw_files(tmp_path, raw_models):
    for obj in raw_models.values():
        (tmp_path / "m.json").write_text(json.dumps(obj))
        assert read_model(tmp_path / "m.json")["schema"] is None
