"""dperm.schema: the one public schema (PublicSchema); and its scikit-learn face
(PublicBoundsTransformer, dperm/sklearn/transformer.py)."""
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import dperm
from dperm import PrivateLinearClassifier, PublicBoundsTransformer, PublicSchema
from dperm.exceptions import ClippingWarning

pd = pytest.importorskip("pandas")

NUMERIC = {"age": (17, 90), "hours": (0, 99)}
CATEGORICAL = {"sex": ["Female", "Male"], "color": ["red", "green", "blue"]}


def people(n=400, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.uniform(10, 100, n).round(1),   # some outside the public range
        "hours": rng.uniform(0, 99, n).round(1),
        "sex": rng.choice(["Female", "Male"], n),
        "color": rng.choice(["red", "green", "blue"], n),
        "id": np.arange(n),                          # not used
    })
    y = ((frame["age"] - 50) / 40 + 0.5 * (frame["color"] == "red") > 0).astype(int).to_numpy()
    return frame, y


def expected_encoding(frame):
    """The encoding written out independently: clip, map to [0, 1], one-hot, / sqrt(k)."""
    cols = []
    for c, (lo, hi) in NUMERIC.items():
        v = frame[c].to_numpy(dtype=float)
        cols.append(np.clip(v - lo, 0.0, hi - lo) / (hi - lo))
    for c, cats in CATEGORICAL.items():
        for cat in cats:
            cols.append((frame[c].to_numpy() == cat).astype(float))
    return np.column_stack(cols) / math.sqrt(4)


def row_norms(X):
    return np.linalg.norm(X, axis=1)


# ----------------------------------------------------------------------------- PublicSchema
def test_schema_encoding_is_the_documented_map():
    frame, _ = people()
    schema = PublicSchema(NUMERIC, CATEGORICAL, label="y", classes=[0, 1])
    assert schema.columns == ("age", "hours", "sex", "color")
    assert schema.feature_names() == ["age", "hours", "sex=Female", "sex=Male", "color=red",
                                      "color=green", "color=blue"]
    assert schema.n_features == 7 and schema.row_divisor == 2.0
    assert schema.numeric["age"] == (17.0, 90.0) and schema.categorical["sex"] == ("Female", "Male")
    X = schema.encode(frame)
    assert X.dtype == np.float64 and X.flags.c_contiguous and X.shape == (400, 7)
    np.testing.assert_array_equal(X, expected_encoding(frame))
    assert row_norms(X).max() <= 1.0
    # the same from a dict of lists, and scaled by a public data_norm
    cols = {c: frame[c].tolist() for c in frame.columns}
    np.testing.assert_array_equal(schema.encode(cols), X)
    X3 = schema.encode(cols, data_norm=3.0)
    np.testing.assert_allclose(X3, 3 * X, rtol=1e-15)
    assert row_norms(X3).max() <= 3.0


def test_schema_rows_are_encoded_on_their_own():
    frame, _ = people()
    schema = PublicSchema(NUMERIC, CATEGORICAL)
    X = schema.encode(frame)
    for rows in ([5], [3, 1, 4, 1, 5], list(range(0, 400, 7))):
        np.testing.assert_array_equal(schema.encode(frame.iloc[rows]), X[rows])


def test_schema_unknown_categories_and_fill():
    schema = PublicSchema({"x": (0, 10)}, {"c": ["a", "b"]}, fill={"x": 5, "c": "b"})
    cols = {"x": np.array([1.0, np.nan, 20.0]), "c": np.array(["a", None, "zzz"], dtype=object)}
    before = {k: v.copy() for k, v in cols.items()}
    X = schema.encode(cols, unknown="ignore")
    np.testing.assert_allclose(X * math.sqrt(2), [[0.1, 1, 0], [0.5, 0, 1], [1, 0, 0]])
    for k in cols:  # the input is not modified (NaN stays NaN)
        np.testing.assert_array_equal(cols[k].astype(str), before[k].astype(str))
    with pytest.raises(ValueError, match=r"unknown category 'zzz' in column 'c' \(row index 2\)"):
        schema.encode(cols)
    no_fill = schema.replace(fill=None)
    with pytest.raises(ValueError, match=r"missing value in column 'x' \(row index 1\)"):
        no_fill.encode(cols, unknown="ignore")
    assert no_fill.missing_mask(cols).tolist() == [False, True, False]
    assert set(no_fill.missing_mask(cols, by_column=True)) == {"x", "c"}
    assert not schema.missing_mask(cols).any()
    # pandas' NA and None are missing values too
    s = pd.Series([1.0, None, 3.0], dtype="Float64")
    with pytest.raises(ValueError, match=r"missing value in column 'x' \(row index 1\)"):
        no_fill.encode({"x": s, "c": ["a", "a", "a"]})
    with pytest.raises(ValueError, match=r"non-numeric value 'abc' in numeric column 'x' "
                                         r"\(row index 1\)"):
        schema.encode({"x": ["1", "abc"], "c": ["a", "a"]})


@pytest.mark.parametrize("kwargs, words", [
    (dict(numeric={"age": (90, 17)}), ["numeric['age']", "low < high"]),
    (dict(numeric={"age": (0, float("inf"))}), ["numeric['age']", "finite"]),
    (dict(numeric={"age": "old"}), ["numeric['age']", "two numbers"]),
    (dict(numeric={"age": (1, 2, 3)}), ["numeric['age']"]),
    (dict(categorical={"sex": []}), ["categorical['sex']", "non-empty"]),
    (dict(categorical={"sex": "Male"}), ["categorical['sex']"]),
    (dict(categorical={"sex": ["M", "M"]}), ["categorical['sex']", "'M'", "more than once"]),
    (dict(categorical={"sex": ["M", None]}), ["categorical['sex']", "None"]),
    (dict(numeric={"a": (0, 1)}, categorical={"a": ["x"]}), ["'a'", "both numeric and categorical"]),
    (dict(), ["no feature columns"]),
    (dict(numeric={"": (0, 1)}), ["column names"]),
    (dict(numeric={"a": (0, 1)}, label="a"), ["label column 'a'", "feature"]),
    (dict(numeric={"a": (0, 1)}, classes=["x"]), ["classes", "two"]),
    (dict(numeric={"a": (0, 1)}, classes=["x", "x"]), ["classes", "different"]),
    (dict(numeric={"a": (0, 1)}, classes=[]), ["classes", "at least two"]),
    (dict(numeric={"a": (0, 1)}, classes="xy"), ["classes", "at least two"]),
    (dict(numeric={"a": (0, 1)}, classes=["x", "y", "x"]), ["classes", "['x']", "more than once"]),
    (dict(numeric={"a": (0, 1)}, classes=[0, 1, 2, 1.0]), ["classes", "[1.0]", "more than once"]),
    (dict(numeric={"a": (0, 1)}, classes=["x", None, "y"]), ["classes", "None"]),
    (dict(numeric={"a": (0, 1)}, fill={"b": 1}), ["fill", "'b'", "not a feature"]),
    (dict(numeric={"a": (0, 1)}, fill={"a": "x"}), ["fill['a']", "number"]),
    (dict(numeric={"a": (0, 1)}, fill={"a": float("nan")}), ["fill['a']", "finite"]),
    (dict(categorical={"c": ["x"]}, fill={"c": "y"}), ["fill['c']", "'y'", "categories"]),
])
def test_schema_validation_names_the_column(kwargs, words):
    with pytest.raises(ValueError) as info:
        PublicSchema(**kwargs)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_schema_json_round_trip():
    schema = PublicSchema(NUMERIC, CATEGORICAL, label="y", classes=["no", "yes"],
                          fill={"hours": 40, "color": "green"})
    d = schema.to_dict()
    assert d == {
        "numeric": {"age": [17.0, 90.0], "hours": [0.0, 99.0]},
        "categorical": {"sex": ["Female", "Male"], "color": ["red", "green", "blue"]},
        "label": {"column": "y", "classes": ["no", "yes"]},
        "fill": {"hours": 40.0, "color": "green"},
    }
    assert PublicSchema.from_dict(json.loads(json.dumps(d))) == schema
    assert PublicSchema.from_json(schema.to_json()) == schema
    assert hash(PublicSchema.from_json(schema.to_json())) == hash(schema)
    # integer categories and classes survive the trip
    ints = PublicSchema(categorical={"k": [1, 2, 3]}, classes=[0, 1])
    assert PublicSchema.from_json(ints.to_json()) == ints
    # no fill, no "fill" key: the format of existing schema files and models
    plain = schema.replace(fill=None)
    assert "fill" not in plain.to_dict()
    assert PublicSchema.from_dict(plain.to_dict()) == plain


CLASSES3 = ["lo", "mid", "hi"]


def test_schema_with_k_classes_json_round_trip():
    schema = PublicSchema(NUMERIC, CATEGORICAL, label="y", classes=CLASSES3,
                          fill={"hours": 40})
    assert schema.classes == ("lo", "mid", "hi")
    d = schema.to_dict()
    assert d["label"] == {"column": "y", "classes": ["lo", "mid", "hi"]}
    assert PublicSchema.from_dict(json.loads(json.dumps(d))) == schema
    back = PublicSchema.from_json(schema.to_json())
    assert back == schema and hash(back) == hash(schema) and back.classes == schema.classes
    assert "classes=['lo', 'mid', 'hi']" in repr(schema)
    # the order is kept (it is the order of the model's scores), and replace keeps K
    other = schema.replace(classes=["hi", "lo", "mid"])
    assert other.classes == ("hi", "lo", "mid") and other != schema
    assert schema.replace(label="z").classes == schema.classes
    # integer classes survive the trip; the command line's reading turns them into text
    ints = PublicSchema(categorical={"k": [1, 2, 3]}, classes=[0, 1, 2, 3])
    assert PublicSchema.from_json(ints.to_json()) == ints
    text = PublicSchema.from_dict(ints.to_dict(), categories_as_text=True)
    assert text.classes == ("0", "1", "2", "3")
    # two classes stay [negative, positive]
    assert schema.replace(classes=["no", "yes"]).to_dict()["label"]["classes"] == ["no", "yes"]


@pytest.mark.parametrize("classes, words", [
    (["lo"], ["label.classes", "at least two"]),
    ([], ["label.classes", "at least two"]),
    ("lo", ["label.classes", "at least two"]),
    (["lo", "lo"], ["label.classes", "['lo']", "more than once"]),
    (["lo", "mid", "lo", "hi", "mid"], ["label.classes", "['lo', 'mid']", "more than once"]),
    (["lo", None, "hi"], ["label.classes", "None"]),
])
@pytest.mark.parametrize("as_text", [False, True])
def test_schema_json_refuses_bad_classes_naming_them(classes, words, as_text):
    obj = {"numeric": {"a": [0, 1]}, "label": {"column": "y", "classes": classes}}
    with pytest.raises(ValueError) as info:
        PublicSchema.from_dict(obj, where="s.json", categories_as_text=as_text)
    msg = str(info.value)
    assert msg.startswith("s.json: ")
    for w in words:
        assert w in msg, (w, msg)


def three_class_people(n=600, seed=1):
    frame, _ = people(n, seed)
    score = (frame["age"] - 17) / 73 + 0.4 * (frame["color"] == "red")
    y = np.where(score < 0.45, "lo", np.where(score < 0.85, "mid", "hi")).astype(object)
    return frame, y


@pytest.mark.parametrize("kw, mode", [
    (dict(epsilon=50.0, delta=1e-6), "multinomial"),
    (dict(epsilon=50.0), "ovr"),
    (dict(perturbation="none"), "multinomial"),
])
def test_pipeline_with_a_three_class_schema(kw, mode):
    schema = PublicSchema(NUMERIC, CATEGORICAL, label="y", classes=CLASSES3,
                          fill={"hours": 40})
    frame, y = three_class_people()
    before, y_before = frame.copy(), y.copy()
    model = make_pipeline(
        PublicBoundsTransformer.from_schema(schema),
        PrivateLinearClassifier(classes=list(schema.classes), random_state=0, **kw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)   # the seeded fit
        warnings.simplefilter("error", ClippingWarning)             # public bounds clip nothing
        model.fit(frame, y)
    pd.testing.assert_frame_equal(frame, before)
    np.testing.assert_array_equal(y, y_before)            # the labels are handed on as they are
    clf = model[-1]
    assert list(clf.classes_) == CLASSES3                   # the schema's order
    assert clf.privacy_["n_classes"] == 3 and clf.privacy_["multiclass"] == mode
    assert clf.coef_.shape == (3, schema.n_features)
    pred = model.predict(frame)
    assert set(pred) <= set(CLASSES3)
    assert np.mean(pred == y) > 0.6, np.mean(pred == y)
    proba = model.predict_proba(frame)
    assert proba.shape == (len(frame), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.asarray(CLASSES3, dtype=object)[proba.argmax(axis=1)], pred)
    # the transformer's output is the schema's encoding, whatever the label's classes
    np.testing.assert_array_equal(model[0].transform(frame),
                                  schema.encode(frame, unknown="ignore"))


def test_schema_json_format_is_backward_compatible():
    old = {"numeric": {"a": [0, 10], "b": 5}, "categorical": {"c": ["x", 7]},
           "label": {"column": "y"}}
    s = PublicSchema.from_dict(old)
    assert s.numeric == {"a": (0.0, 10.0), "b": (0.0, 5.0)} and s.classes is None
    assert s.label == "y" and s.categorical["c"] == ("x", 7)
    text = PublicSchema.from_dict(old, categories_as_text=True)  # the command line's reading
    assert text.categorical["c"] == ("x", "7")
    with pytest.raises(ValueError, match=r"^my schema: unknown key\(s\) \['colour'\]"):
        PublicSchema.from_dict(dict(old, colour={}), where="my schema")
    with pytest.raises(ValueError, match=r"^schema: numeric\['a'\]"):
        PublicSchema.from_dict({"numeric": {"a": [10, 0]}})
    with pytest.raises(ValueError, match="must be a string"):
        PublicSchema.from_dict({"categorical": {"c": [1.5]}}, categories_as_text=True)
    with pytest.raises(ValueError, match="invalid JSON"):
        PublicSchema.from_json('{"numeric": ')


def test_schema_is_immutable_and_replace_copies():
    s = PublicSchema({"a": (0, 1)})
    with pytest.raises(TypeError):
        s.numeric["b"] = (0, 1)
    with pytest.raises(AttributeError):
        s.label = "y"
    t = s.replace(label="y", classes=["n", "p"])
    assert s.label is None and t.label == "y" and t.classes == ("n", "p")
    assert t != s and t == PublicSchema({"a": [0, 1]}, label="y", classes=("n", "p"))
    assert "label='y'" in repr(t)


# ----------------------------------------------------------------------------- transformer
def private_pipeline(data_norm=1.0, **kw):
    return make_pipeline(
        PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL, data_norm=data_norm, **kw),
        PrivateLinearClassifier(epsilon=5.0, data_norm=data_norm, classes=[0, 1]))


@pytest.mark.parametrize("data_norm", [1.0, 2.5])
def test_pipeline_on_a_dataframe_clips_nothing(data_norm):
    frame, y = people()
    before = frame.copy()
    model = private_pipeline(data_norm)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        model.fit(frame, y)
        Xt = model[0].transform(frame)
        pred = model.predict(frame)
    assert row_norms(Xt).max() <= data_norm
    np.testing.assert_allclose(Xt, data_norm * expected_encoding(frame), rtol=1e-15)
    assert model[-1].fit_diagnostics_["rows_clipped"] == 0
    assert pred.shape == (400,) and set(pred) <= {0, 1}
    pd.testing.assert_frame_equal(frame, before)  # the user's data is untouched
    # the scaler this replaces reads the data and puts rows outside the bound: all clipped
    scaled = make_pipeline(StandardScaler(), PrivateLinearClassifier(epsilon=5.0, classes=[0, 1]))
    with pytest.warns(ClippingWarning):
        scaled.fit(frame[["age", "hours"]], y)


def test_pipeline_in_cross_validation():
    frame, y = people(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        scores = cross_val_score(private_pipeline(), frame, y, cv=2)
    assert scores.shape == (2,)


def test_transformer_clone_and_params():
    t = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL, fill={"hours": 40},
                                data_norm=2.0, unknown="error")
    params = t.get_params()
    assert params == dict(numeric=NUMERIC, categorical=CATEGORICAL, fill={"hours": 40},
                          data_norm=2.0, unknown="error", sparse_output=False)
    frame, _ = people(20)
    t.fit(frame)
    c = clone(t)
    assert c.get_params() == params and not hasattr(c, "schema_")
    c.set_params(data_norm=1.0)
    assert t.data_norm == 2.0
    np.testing.assert_allclose(c.fit_transform(frame) * 2.0, t.transform(frame), rtol=1e-15)
    assert "PublicBoundsTransformer" in repr(t)
    tags = t.__sklearn_tags__()
    assert tags.input_tags.allow_nan and tags.input_tags.string


@pytest.mark.parametrize("data_norm", [1.0, 2.5])
def test_sparse_output_is_the_dense_encoding_built_as_csr(data_norm):
    import scipy.sparse as sp

    frame, y = people()
    frame.loc[3, "color"] = "purple"                  # unknown: an empty group
    frame.loc[5, "hours"] = np.nan                    # filled
    kw = dict(numeric=NUMERIC, categorical=CATEGORICAL, fill={"hours": 40}, data_norm=data_norm,
              unknown="ignore")
    dense = PublicBoundsTransformer(**kw).fit_transform(frame)
    t = PublicBoundsTransformer(sparse_output=True, **kw)
    S = t.fit_transform(frame)
    assert sp.issparse(S) and S.format == "csr" and S.dtype == np.float64
    assert S.shape == dense.shape and S.has_canonical_format
    np.testing.assert_array_equal(S.toarray(), dense)
    # numeric columns are stored (zeros too), one entry per known category
    assert t.schema_.stored_per_row == 4 and t.schema_.density == 4 / 7
    counts = np.diff(S.indptr)
    assert counts.max() == 4 and counts[3] == 3
    assert row_norms(S.toarray()).max() <= data_norm
    # the schema on its own, and a pipeline fitted on the CSR output
    np.testing.assert_array_equal(
        PublicSchema(NUMERIC, CATEGORICAL, fill={"hours": 40}).encode(
            frame, unknown="ignore", sparse=True, data_norm=data_norm).toarray(), dense)
    kw.pop("data_norm")
    a = make_pipeline(PublicBoundsTransformer(sparse_output=True, **kw),
                      PrivateLinearClassifier(perturbation="none", classes=[0, 1])).fit(frame, y)
    b = make_pipeline(PublicBoundsTransformer(**kw),
                      PrivateLinearClassifier(perturbation="none", classes=[0, 1])).fit(frame, y)
    np.testing.assert_allclose(a[-1].coef_, b[-1].coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="^sparse_output: must be True or False"):
        PublicBoundsTransformer(numeric=NUMERIC, sparse_output="yes").fit(frame)


def test_transform_never_reads_other_rows():
    frame, _ = people()
    frame.loc[7, "hours"] = np.nan
    t = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL, fill={"hours": 40})
    X = t.fit_transform(frame)
    for rows in ([7], [0, 7, 399], list(range(1, 400, 3))):
        np.testing.assert_array_equal(t.transform(frame.iloc[rows]), X[rows])
    # fit reads no value: fitted on garbage with the same columns, it gives the same map
    garbage = pd.DataFrame({c: [None] for c in frame.columns})
    np.testing.assert_array_equal(clone(t).fit(garbage).transform(frame), X)
    np.testing.assert_allclose(X[7, 1] * 2, 40 / 99)


def test_transformer_dataframe_attributes_and_names():
    frame, _ = people(10)
    t = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit(frame)
    assert t.n_features_in_ == 5
    assert list(t.feature_names_in_) == list(frame.columns)
    assert list(t.get_feature_names_out()) == PublicSchema(NUMERIC, CATEGORICAL).feature_names()
    assert t.schema_ == PublicSchema(NUMERIC, CATEGORICAL)
    # columns selected by name: order and extra columns do not matter
    np.testing.assert_array_equal(t.transform(frame[["color", "sex", "hours", "age"]]),
                                  t.transform(frame))
    out = t.set_output(transform="pandas").transform(frame)
    assert list(out.columns) == list(t.get_feature_names_out())
    t2 = PublicBoundsTransformer.from_schema(t.schema_, data_norm=2.0)
    np.testing.assert_allclose(t2.fit_transform(frame), 2 * out.to_numpy(), rtol=1e-15)


def test_transformer_on_numpy_arrays():
    rng = np.random.default_rng(1)
    X = rng.uniform(-5, 15, size=(50, 3))
    before = X.copy()
    t = PublicBoundsTransformer(numeric=(0, 10))
    Z = t.fit_transform(X)
    np.testing.assert_array_equal(Z, np.clip(X, 0, 10) / 10 / math.sqrt(3))
    assert not hasattr(t, "feature_names_in_") and t.n_features_in_ == 3
    assert list(t.get_feature_names_out()) == ["x0", "x1", "x2"]
    assert list(t.get_feature_names_out(["p", "q", "r"])) == ["p", "q", "r"]
    # integer indices pick (and order) columns; the others are dropped
    t = PublicBoundsTransformer(numeric={2: (0, 20), 0: (-5, 15)}, fill={2: 0.0})
    X[3, 2] = np.nan
    before[3, 2] = np.nan
    Z = t.fit_transform(X)
    assert list(t.get_feature_names_out()) == ["x2", "x0"]
    np.testing.assert_allclose(Z[3] * math.sqrt(2), [0.0, (X[3, 0] + 5) / 20])
    np.testing.assert_array_equal(X, before)
    with pytest.raises(ValueError, match="3 features"):
        t.transform(X[:, :2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        make_pipeline(PublicBoundsTransformer(numeric=(-5, 15)),
                      PrivateLinearClassifier(classes=[0, 1])).fit(X[:, :2], X[:, 1] > 5)


def test_transformer_missing_values_name_the_column_and_row():
    frame, _ = people(10)
    frame.index = [f"p{i}" for i in range(10)]
    frame.loc["p4", "age"] = np.nan
    frame.loc["p6", "sex"] = None
    t = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit(frame)
    with pytest.raises(ValueError, match=r"missing value in column 'age' \(row index 4, index "
                                         r"label 'p4'\).*fill"):
        t.transform(frame)
    t.set_params(fill={"age": 50}).fit(frame)
    with pytest.raises(ValueError, match=r"missing value in column 'sex' \(row index 6"):
        t.transform(frame)
    X = t.set_params(fill={"age": 50, "sex": "Male"}).fit_transform(frame)
    np.testing.assert_allclose(X[4, 0] * 2, (50 - 17) / 73)
    np.testing.assert_array_equal(X[6, 2:4] * 2, [0, 1])
    with pytest.raises(ValueError, match=r"missing value in column 'x1' \(row index 2\)"):
        PublicBoundsTransformer(numeric=(0, 1)).fit_transform(np.array([[0, 0], [0, 0],
                                                                        [0, np.nan]]))


def test_transformer_unknown_categories():
    """An unknown category is an error by default (it used to vanish as an all-zero group),
    with the column and the count; unknown='ignore' zeroes it only when asked."""
    frame, _ = people(10)
    frame.loc[3, "color"] = "purple"
    frame.loc[6, "color"] = "teal"
    X = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL,
                                unknown="ignore").fit_transform(frame)
    np.testing.assert_array_equal(X[3, 4:], 0.0)
    for t in (PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL),
              PublicBoundsTransformer.from_schema(PublicSchema(numeric=NUMERIC,
                                                               categorical=CATEGORICAL))):
        with pytest.raises(ValueError, match=r"unknown category 'purple' in column 'color' "
                                             r"\(row index 3\).*case matters"):
            t.fit_transform(frame)


def test_cells_and_schema_categories_are_normalised_alike():
    """The trailing or leading space pandas keeps (read_csv without skipinitialspace), in
    the cells or in the schema's strings, does not make a category unknown; case does."""
    frame, _ = people(10)
    spaced = frame.copy()
    spaced["color"] = [" " + v + " " for v in frame["color"]]
    want = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit_transform(frame)
    got = PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit_transform(spaced)
    np.testing.assert_array_equal(got, want)
    padded = {c: [v + " " for v in cats] for c, cats in CATEGORICAL.items()}
    got = PublicBoundsTransformer(numeric=NUMERIC, categorical=padded).fit_transform(frame)
    np.testing.assert_array_equal(got, want)
    assert PublicSchema(numeric=NUMERIC, categorical=padded) == \
        PublicSchema(numeric=NUMERIC, categorical=CATEGORICAL)
    upper = frame.copy()
    upper["color"] = [v.upper() for v in frame["color"]]
    with pytest.raises(ValueError, match="unknown category.*case matters"):
        PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit_transform(upper)
    before = spaced.copy()
    PublicBoundsTransformer(numeric=NUMERIC, categorical=CATEGORICAL).fit_transform(spaced)
    pd.testing.assert_frame_equal(spaced, before)          # the user's frame is untouched


@pytest.mark.parametrize("kwargs, X, match", [
    (dict(numeric={"weight": (0, 1)}), "frame", "'weight' is not in X"),
    (dict(numeric={"age": (0, 1)}), "array", "pass a DataFrame or use integer column indices"),
    (dict(numeric={5: (0, 1)}), "array", "index 5 is out of range"),
    (dict(numeric={"age": (1, 0)}), "frame", r"numeric\['age'\]"),
    (dict(numeric={"age": (0, 1)}, fill={"hours": 3}), "frame", "fill"),
    (dict(numeric={"age": (0, 1)}, categorical={"age": ["x"]}), "frame", "listed twice"),
    (dict(numeric={"age": (0, 1)}, data_norm=0), "frame", "data_norm"),
    (dict(numeric={"age": (0, 1)}, unknown="zero"), "frame", "unknown"),
    (dict(numeric="wide"), "frame", "numeric must map"),
])
def test_transformer_bad_parameters(kwargs, X, match):
    frame, _ = people(5)
    X = frame if X == "frame" else frame[["age", "hours"]].to_numpy()
    with pytest.raises(ValueError, match=match):
        PublicBoundsTransformer(**kwargs).fit(X)


def test_transformer_checks_columns_at_transform():
    frame, _ = people(5)
    t = PublicBoundsTransformer(numeric=NUMERIC).fit(frame)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['hours'\]"):
        t.transform(frame.drop(columns="hours"))
    with pytest.raises(ValueError, match="selects columns by name"):
        t.transform(frame[["age", "hours"]].to_numpy())


def test_public_names_and_no_pandas_needed():
    assert "PublicSchema" in dperm.__all__ and "PublicBoundsTransformer" in dperm.__all__
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import numpy as np, dperm\n"
            "t = dperm.PublicBoundsTransformer(numeric=(0, 10))\n"
            "X = t.fit_transform(np.full((3, 4), 5.0))\n"
            "assert abs(X[0, 0] - 0.25) < 1e-15\n"
            "print('ok')\n")
    # run in tests/: in the checkout's root `import dperm` would find the source tree
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_transformer_lives_with_the_estimators_and_the_schema_needs_no_sklearn():
    """Issue 27, item 5: PublicBoundsTransformer's home is dperm.sklearn (exported there and
    from dperm), with no alias left at the old path; the encoder, dperm.schema, imports
    neither scikit-learn nor pandas nor dask (the command line's fits and the Adult loader
    use it without them)."""
    import dperm.schema
    import dperm.sklearn
    from dperm.sklearn.transformer import PublicBoundsTransformer as T

    assert dperm.PublicBoundsTransformer is dperm.sklearn.PublicBoundsTransformer is T
    assert T.__module__ == "dperm.sklearn.transformer"
    assert not hasattr(dperm.schema, "PublicBoundsTransformer")
    assert "PublicBoundsTransformer" not in dperm.schema.__all__
    code = ("import sys\n"
            "import dperm.schema\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('sklearn', 'pandas', 'dask', 'distributed'))\n"
            "assert not bad, bad\n"
            "s = dperm.schema.PublicSchema({'a': (0, 10)}, {'c': ['x', 'y']})\n"
            "X = s.encode({'a': [5.0], 'c': ['y']})\n"
            "assert abs(X[0, 0] - 0.5 / 2 ** 0.5) < 1e-15\n"
            "print('ok')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_predict_on_the_command_line_imports_no_sklearn(tmp_path):
    """`dperm predict` encodes through dperm.schema: since the transformer left it, a
    prediction imports no scikit-learn (it did through dperm.schema before)."""
    from dperm.cli.main import main

    rng = np.random.default_rng(0)
    rows = ["a,color,y"] + [f"{v:.3f},{c},{'yes' if v > 5 else 'no'}"
                            for v, c in zip(rng.uniform(0, 10, 200), rng.choice(["r", "b"], 200))]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "schema.json").write_text(json.dumps({
        "numeric": {"a": [0, 10]}, "categorical": {"color": ["r", "b"]},
        "label": {"column": "y", "classes": ["no", "yes"]}}))
    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert main(["fit", "train.csv", "--schema", "schema.json", "--epsilon", "5",
                     "-o", "model.json"]) == 0
    finally:
        os.chdir(here)
    code = ("import sys\nfrom dperm.cli.main import main\n"
            "assert main(['predict', 'model.json', 'train.csv', '-o', 'pred.csv']) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "pred.csv").read_text().count("\n") == 201


def test_category_codes_encode_as_the_values_they_stand_for():
    """A reader that matched cells against the public list in bulk (the command line's)
    hands PublicSchema the codes: the encoding, the missing mask and the unknown-category
    message are those of the values; codes against another list are refused."""
    from dperm.schema import CategoryCodes

    s = PublicSchema(numeric={"age": (17, 90)}, categorical=CATEGORICAL,
                     fill={"color": "green"})
    sex = np.array(["Male", "Female", None, "Male"], dtype=object)
    color = np.array(["blue", None, "red", "green"], dtype=object)
    age = np.array([20.0, 30.0, 40.0, np.nan])
    plain = {"age": age, "sex": sex, "color": color}
    coded = {"age": age,
             "sex": CategoryCodes([1, 0, -2, 1], CATEGORICAL["sex"], lambda i: sex[i]),
             "color": CategoryCodes([2, -2, 0, 1], CATEGORICAL["color"], lambda i: color[i])}
    for by_column in (False, True):
        a = s.missing_mask(plain, by_column=by_column)
        b = s.missing_mask(coded, by_column=by_column)
        if by_column:
            assert sorted(a) == sorted(b) == ["age", "sex"]
            assert all(np.array_equal(a[c], b[c]) for c in a)
        else:
            assert np.array_equal(a, b) and a.tolist() == [False, False, True, True]
    rows = [0, 1]
    X = s.encode({c: v[rows] for c, v in plain.items()})
    codes = {"age": age[rows],
             "sex": CategoryCodes([1, 0], CATEGORICAL["sex"], None),
             "color": CategoryCodes([2, -2], CATEGORICAL["color"], None)}
    assert np.array_equal(s.encode(codes), X)
    assert np.array_equal(s.encode(codes, sparse=True).toarray(), s.encode(
        {c: v[rows] for c, v in plain.items()}, sparse=True).toarray())
    unknown = {"age": age[:1], "sex": CategoryCodes([-1], CATEGORICAL["sex"], lambda i: "X"),
               "color": CategoryCodes([0], CATEGORICAL["color"], None)}
    with pytest.raises(ValueError, match=r"unknown category 'X' in column 'sex'"):
        s.encode(unknown)
    assert s.encode(unknown, unknown="ignore")[0, 1:3].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match=r"column 'sex': codes matched against"):
        s.encode(dict(codes, sex=CategoryCodes([1, 0], ["Male", "Female"], None)))
    with pytest.raises(ValueError, match=r"column 'age': codes matched against"):
        s.encode(dict(codes, age=CategoryCodes([0, 0], ["x"], None)))
    with pytest.raises(ValueError, match=r"column 'color' has 1 values"):
        s.encode(dict(codes, color=CategoryCodes([0], CATEGORICAL["color"], None)))
    with pytest.raises(ValueError, match=r"codes must lie in \[-2, 1\]"):
        CategoryCodes([0, 2], CATEGORICAL["sex"], None)


# ----------------------------------------------------------------------------- rows with a constant
def wide_schema(k_num, k_cat):
    """k_num numeric columns on [0, 1] and k_cat categorical ones with three categories
    (k = k_num + k_cat columns: k = 23, 25, 31 are counts where k values of 1/sqrt(k)
    have a computed norm above 1, so encode's norm check shrinks such rows)."""
    num = {f"x{i}": (0.0, 1.0) for i in range(k_num)}
    cat = {f"c{i}": ["a", "b", "c"] for i in range(k_cat)}
    fill = {"x0": 0.5, "c0": "b"} if k_cat else {"x0": 0.5}
    return PublicSchema(numeric=num, categorical=cat, fill=fill)


def wide_columns(schema, n, seed=0):
    """Cells at the bounds (rows of norm 1 before rounding), inside, outside, missing."""
    rng = np.random.default_rng(seed)
    cols = {}
    for c in schema.numeric:
        v = rng.choice([0.0, 1.0, 1.0, 1.0, 2.0, -1.0, 0.3], n)
        inside = rng.random(n) < 0.3
        v[inside] = rng.random(int(inside.sum()))
        if c == "x0":
            v[::7] = np.nan
        cols[c] = v
    for c in schema.categorical:
        v = rng.choice(np.array(["a", "b", "c", "zz"], dtype=object), n, p=[0.6, 0.2, 0.1, 0.1])
        if c == "c0":
            v[::5] = None
        cols[c] = v
    return cols


@pytest.mark.parametrize("k_num, k_cat", [(20, 3), (2, 23), (25, 0), (3, 2), (1, 30)])
def test_encode_with_constant_is_the_augmented_encoding_bit_for_bit(k_num, k_cat):
    from dperm.data.design import INTERCEPT_SCALE, augment_intercept

    schema = wide_schema(k_num, k_cat)
    cols = wide_columns(schema, 20_000)          # more rows than one block of 8192
    want = augment_intercept(schema.encode(cols, unknown="ignore"), 1.0)
    got = schema.encode_with_constant(cols, scale=INTERCEPT_SCALE, unknown="ignore")
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert got.shape == (20_000, schema.n_features + 1)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    buf = np.full((25_000, schema.n_features + 1), np.nan)
    into = schema.encode_with_constant(cols, scale=INTERCEPT_SCALE, unknown="ignore", out=buf)
    assert np.shares_memory(into, buf)
    assert np.array_equal(into.view(np.uint64), want.view(np.uint64))
    with pytest.raises(ValueError, match="out must be"):
        schema.encode_with_constant(cols, scale=1.0, unknown="ignore", out=buf[:10])
    if k_cat:
        with pytest.raises(ValueError, match="unknown category"):
            schema.encode_with_constant(cols, scale=1.0)


def test_encode_with_constant_keeps_the_norm_check_of_rows_at_the_bound(monkeypatch):
    """k = 23 columns at their maxima: values 1/sqrt(23) whose computed norm is above 1;
    encode shrinks them, and so must the rows written with the constant. The same test
    run with the shrinking removed finds the rows above 1 (it has the power to fail)."""
    import dperm.schema as schema_mod
    from dperm.data.norms import strict_row_norms
    from dperm.data.validation import row_norms as solver_norms

    schema = wide_schema(20, 3)
    n, d = 50, schema.n_features
    cols = {c: np.ones(n) for c in schema.numeric}
    cols.update({c: np.array(["c"] * n, dtype=object) for c in schema.categorical})

    def worst_norm():
        X = schema.encode_with_constant(cols, scale=1.0)[:, :d]
        return max(strict_row_norms(X).max(), solver_norms(X).max())

    unshrunk = np.full((1, d), 0.0)
    unshrunk[0, :20] = 1.0 / schema.row_divisor
    unshrunk[0, [22, 25, 28]] = 1.0 / schema.row_divisor
    assert strict_row_norms(unshrunk)[0] > 1.0      # the case the check exists for
    assert worst_norm() <= 1.0
    monkeypatch.setattr(schema_mod, "shrink_to", lambda X, bound: None)
    assert worst_norm() > 1.0
