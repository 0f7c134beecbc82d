import hashlib
import lzma
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from dperm.datasets import (
    ADULT_CATEGORICAL_COLUMNS,
    ADULT_NUMERIC_COLUMNS,
    ADULT_PUBLIC_BOUNDS,
    ADULT_PUBLIC_CATEGORIES,
    DataChecksumError,
    _adult,
    encode_public,
    load_adult,
)
from dperm.exceptions import PrivacyLeakWarning

pytestmark = pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")


def _norms(X):
    return np.linalg.norm(X, axis=1)


def test_paper_shape_labels_and_dtypes():
    X, y, names = load_adult(return_feature_names=True)
    assert X.shape == (45222, 104)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert len(names) == 104 and len(set(names)) == 104
    assert names[:6] == list(ADULT_NUMERIC_COLUMNS)
    assert set(np.unique(y)) == {-1, 1}
    assert np.issubdtype(y.dtype, np.integer)
    assert (y == 1).sum() == 11208
    assert abs((y == 1).mean() - 0.248) < 0.001


def test_paper_warns_privacy_leak():
    with pytest.warns(PrivacyLeakWarning, match="public"):
        load_adult()


@pytest.mark.parametrize("row_scaling", ["each", "global"])
def test_paper_row_norms(row_scaling):
    X, _ = load_adult(row_scaling=row_scaling)
    n = _norms(X)
    assert n.max() <= 1.0
    assert np.all(X >= 0)
    if row_scaling == "each":
        # One-hot groups alone give norm sqrt(8) > 1: every row is projected.
        np.testing.assert_allclose(n, 1.0, atol=1e-12)
    else:
        assert n.max() == pytest.approx(1.0, abs=1e-12)
        assert n.min() < 0.9


def test_paper_column_scaling_step():
    tab = _adult._table()
    keep = np.flatnonzero(~tab.missing)
    Z, names = _adult._paper_matrix(tab, keep)
    assert Z.shape == (45222, 104)
    np.testing.assert_array_equal(Z.max(axis=0), 1.0)
    # Categorical part: exactly one 1 per group (8 groups), no missing values.
    assert np.all(Z[:, 6:].sum(axis=1) == 8)
    # "global" scaling is the same matrix divided by one constant.
    X, _ = load_adult(row_scaling="global")
    ratio = Z[:, 0] / X[:, 0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_paper_categories_are_present_subset_of_public():
    _, _, paper = load_adult(return_feature_names=True)
    _, _, public = load_adult("public", return_feature_names=True)
    assert set(public) - set(paper) == {"workclass=Never-worked"}
    assert [n for n in public if n in set(paper)] == paper


def test_splits():
    Xa, ya = load_adult()
    Xtr, ytr = load_adult(split="train")
    Xte, yte = load_adult(split="test")
    assert Xtr.shape == (30162, 104) and Xte.shape == (15060, 104)
    np.testing.assert_array_equal(np.vstack([Xtr, Xte]), Xa)
    np.testing.assert_array_equal(np.concatenate([ytr, yte]), ya)


def test_returns_copies():
    X1, y1 = load_adult("public")
    X1[:] = 7.0
    y1[:] = 0
    X2, y2 = load_adult("public")
    assert np.all(X2 <= 1.0) and set(np.unique(y2)) == {-1, 1}


def test_return_frame():
    b = load_adult("public", return_frame=True)
    assert b.data.shape == (45222, 105)
    assert b.frame.shape == (45222,)
    assert b.frame["age"][0] == 39 and b.frame["workclass"][0] == "State-gov"
    np.testing.assert_array_equal(b.frame["income"], b.target)
    assert b.is_test.sum() == 15060
    assert b.preprocess == "public" and b.row_scaling == "constant"


def test_public_mode_defaults():
    X, y, names = load_adult("public", return_feature_names=True)
    d = len(ADULT_PUBLIC_BOUNDS) + sum(len(v) for v in ADULT_PUBLIC_CATEGORIES.values())
    assert X.shape == (45222, d) == (45222, 105)
    assert _norms(X).max() <= 1.0
    assert np.all(X >= 0)
    # Undo the public constant: numeric columns are value / bound.
    raw = load_adult("public", return_frame=True).frame
    k = math.sqrt(14)
    np.testing.assert_allclose(X[:, 0] * k, raw["age"] / 100.0, rtol=1e-12)
    np.testing.assert_allclose(X[:, 1] * k, raw["fnlwgt"] / 1.5e6, rtol=1e-12)
    np.testing.assert_allclose(X[:, 6:].sum(axis=1) * k, 8.0, rtol=1e-12)


def test_public_clipping_and_custom_bounds():
    X, _, names = load_adult(
        "public", bounds={"age": 30.0}, categories={"sex": ["Male", "Female"]},
        return_feature_names=True,
    )
    assert names == ["age", "sex=Male", "sex=Female"]
    k = math.sqrt(2)
    assert X[:, 0].max() * k == pytest.approx(1.0)  # ages over 30 clipped
    assert _norms(X).max() <= 1.0


def test_public_unknown_categories_give_zeros():
    X, _, names = load_adult(
        "public", bounds={}, categories={"workclass": ["Private", "Not-a-real-one"]},
        return_feature_names=True,
    )
    raw = load_adult("public", return_frame=True).frame
    private = raw["workclass"] == "Private"
    assert names == ["workclass=Private", "workclass=Not-a-real-one"]
    np.testing.assert_array_equal(X[:, 0] > 0, private)
    np.testing.assert_array_equal(X[:, 1], 0.0)


def test_public_missing_zero():
    X, y = load_adult("public", missing="zero")
    assert X.shape == (48842, 105)
    b = load_adult("public", missing="zero", return_frame=True)
    miss = b.frame["occupation"] == "?"
    assert miss.sum() > 0
    occ = [i for i, n in enumerate(b.feature_names) if n.startswith("occupation=")]
    np.testing.assert_array_equal(X[miss][:, occ], 0.0)
    assert _norms(X).max() <= 1.0


def test_public_row_scaling_each():
    X, _ = load_adult("public", row_scaling="each")
    assert _norms(X).max() <= 1.0
    np.testing.assert_allclose(_norms(X), 1.0, atol=1e-12)


def test_encode_public_unknown_and_clip():
    cols = {
        "x": np.array([-5.0, 5.0, 50.0]),
        "c": np.array(["a", "b", "zzz"]),
    }
    X, names = encode_public(cols, {"x": 10.0}, {"c": ["a", "b"]})
    assert names == ["x", "c=a", "c=b"]
    k = math.sqrt(2)
    np.testing.assert_allclose(X * k, [[0, 1, 0], [0.5, 0, 1], [1, 0, 0]])
    assert _norms(X).max() <= 1.0
    with pytest.raises(ValueError, match="non-numeric"):
        encode_public({"x": np.array(["a"])}, {"x": 1.0}, {})


def test_checksums_verified():
    for name, digest in _adult._SHA256.items():
        raw = _adult._read_verified(name)
        assert hashlib.sha256(raw).hexdigest() == digest
    readme = Path(_adult.DATA_DIR, "README.txt").read_text()
    for name, digest in _adult._SHA256.items():
        assert re.search(rf"{re.escape(name)}\s+{digest}", readme)
    assert "CC BY 4.0" in readme and "Becker" in readme and "Kohavi" in readme


def test_corrupted_data_raises(tmp_path):
    src = os.path.join(_adult.DATA_DIR, "adult.names.xz")
    raw = lzma.decompress(Path(src).read_bytes())
    (tmp_path / "adult.names.xz").write_bytes(lzma.compress(raw[:-1] + b"!"))
    with pytest.raises(DataChecksumError, match="SHA-256"):
        _adult._read_verified("adult.names", str(tmp_path))
    (tmp_path / "adult.names.xz").write_bytes(Path(src).read_bytes()[:100])
    with pytest.raises(DataChecksumError):
        _adult._read_verified("adult.names", str(tmp_path))
    shutil.rmtree(tmp_path)
    with pytest.raises(DataChecksumError):
        _adult._read_verified("adult.names", str(tmp_path))


def test_public_categories_match_adult_names():
    text = _adult._read_verified("adult.names").decode("ascii")
    for col in ADULT_CATEGORICAL_COLUMNS:
        m = re.search(rf"^{re.escape(col)}: (.*)\.$", text, flags=re.M)
        listed = tuple(s.strip() for s in m.group(1).split(","))
        assert listed == ADULT_PUBLIC_CATEGORIES[col]
    for col in ADULT_NUMERIC_COLUMNS:
        assert re.search(rf"^{re.escape(col)}: continuous\.$", text, flags=re.M)


def test_public_bounds_cover_data():
    # The public bounds are not derived from the data, but should not clip it.
    raw = load_adult("public", return_frame=True).frame
    for col, bound in ADULT_PUBLIC_BOUNDS.items():
        assert raw[col].max() <= bound


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"preprocess": "raw"}, "preprocess"),
        ({"split": "validation"}, "split"),
        ({"row_scaling": "max"}, "row_scaling"),
        ({"row_scaling": "constant"}, "row_scaling"),
        ({"preprocess": "public", "row_scaling": "global"}, "row_scaling"),
        ({"missing": "impute"}, "missing"),
        ({"missing": "zero"}, "missing"),
        ({"return_frame": "yes"}, "return_frame"),
        ({"return_feature_names": 1}, "return_feature_names"),
        ({"bounds": {"age": 100}}, "bounds"),
        ({"preprocess": "public", "bounds": {"height": 2.0}}, "bounds"),
        ({"preprocess": "public", "bounds": {"age": -1}}, "bounds"),
        ({"preprocess": "public", "bounds": {"age": float("inf")}}, "bounds"),
        ({"preprocess": "public", "bounds": [100]}, "bounds"),
        ({"preprocess": "public", "categories": {"sex": []}}, "categories"),
        ({"preprocess": "public", "categories": {"sex": "Male"}}, "categories"),
        ({"preprocess": "public", "categories": {"sex": ["Male", "Male"]}}, "categories"),
        ({"preprocess": "public", "categories": {"eye-colour": ["blue"]}}, "categories"),
    ],
)
def test_bad_arguments(kwargs, param):
    with pytest.raises(ValueError, match=param):
        load_adult(**kwargs)


# ----------------------------------------------------------------------------- one public schema
def _adult_schema():
    from dperm import PublicSchema

    return PublicSchema(
        numeric={c: (0, ADULT_PUBLIC_BOUNDS[c]) for c in ADULT_NUMERIC_COLUMNS},
        categorical=dict(ADULT_PUBLIC_CATEGORIES),
        label="income", classes=[-1, 1],
    )


def test_public_mode_is_the_public_schema_encoding():
    b = load_adult("public", missing="zero", return_frame=True)
    schema = _adult_schema()
    X = schema.encode({c: b.frame[c] for c in schema.columns}, unknown="ignore")
    np.testing.assert_array_equal(X, b.data)  # bit for bit: one implementation
    assert schema.feature_names() == b.feature_names
    assert schema.row_divisor == math.sqrt(14)
    with pytest.raises(ValueError, match=r"unknown category '\?' in column 'workclass'"):
        schema.encode({c: b.frame[c] for c in schema.columns}, unknown="error")


def test_public_mode_equals_the_pipeline_transformer():
    pd = pytest.importorskip("pandas")
    from dperm import PublicBoundsTransformer

    b = load_adult("public", return_frame=True, split="test")
    frame = pd.DataFrame({c: b.frame[c] for c in b.frame.dtype.names})
    before = frame.copy()
    t = PublicBoundsTransformer.from_schema(_adult_schema())
    X = t.fit_transform(frame)
    np.testing.assert_array_equal(X, b.data)
    assert list(t.get_feature_names_out()) == b.feature_names
    pd.testing.assert_frame_equal(frame, before)


def test_encode_public_is_a_thin_schema_user():
    cols = {"x": np.array([-5.0, 5.0, 50.0]), "c": np.array(["a", "b", "zzz"])}
    copy = {k: v.copy() for k, v in cols.items()}
    X, names = encode_public(cols, {"x": 10.0}, {"c": ["a", "b"]})
    from dperm import PublicSchema

    Y = PublicSchema({"x": (0, 10)}, {"c": ["a", "b"]}).encode(cols, unknown="ignore")
    np.testing.assert_array_equal(X, Y)
    for k in cols:
        np.testing.assert_array_equal(cols[k], copy[k])  # the input is not modified
    with pytest.raises(ValueError, match="missing value in column 'x'"):
        encode_public({"x": np.array([1.0, np.nan])}, {"x": 1.0}, {})
    with pytest.raises(ValueError, match="categories"):
        encode_public(cols, {"x": 10.0}, {"c": ["a", 1]})
