"""dperm.data.columns: the one place that asks what holds a table's columns (issue 27,
item 5) for the public schema and PublicBoundsTransformer."""
import numpy as np
import pytest

from dperm.data.columns import (
    column_array,
    frame_columns,
    frame_info,
    is_dask_frame,
    plain_list,
)


def test_plain_list_converts_arrays_only():
    assert plain_list(np.array([1.0, 2.0])) == [1.0, 2.0]
    assert type(plain_list(np.array([1, 2]))[0]) is int
    t = (0, 1)
    assert plain_list(t) is t and plain_list("ab") == "ab"


def test_column_array_names_the_column():
    assert column_array([1, 2, 3], "a").tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match=r"column 'a' must be 1-D"):
        column_array(np.zeros((2, 2)), "a")
    with pytest.raises(ValueError, match=r"column 'b' has 2 values, the other columns have 3"):
        column_array([1, 2], "b", 3)


def test_frame_info_and_columns_of_an_array_and_a_frame():
    pd = pytest.importorskip("pandas")
    X = np.arange(6.0).reshape(3, 2)
    assert frame_info(X) == (None, 2)
    assert frame_info([[1, 2, 3]]) == (None, 3)
    with pytest.raises(ValueError, match="expected a 2-D array or DataFrame"):
        frame_info(np.zeros(3))
    cols, index = frame_columns(X, [("x1", 1)], None)
    assert index is None and cols["x1"].tolist() == [1.0, 3.0, 5.0]
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}, index=[10, 11])
    labels, k = frame_info(df)
    assert (labels, k) == (["a", "b"], 2)
    cols, index = frame_columns(df, [("a", "a"), ("second", 1)], labels)
    assert list(index) == [10, 11]
    assert cols["a"].tolist() == [1, 2] and cols["second"].tolist() == ["x", "y"]
    assert not is_dask_frame(df) and not is_dask_frame(X)


def test_is_dask_frame():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0]}), npartitions=1)
    assert is_dask_frame(frame)
    assert not is_dask_frame(frame["a"].to_dask_array())
