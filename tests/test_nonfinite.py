"""One rule for an infinite cell (issue 29, item 9): refused, naming its column and row,
for a DataFrame through the schema and the transformer, numpy and CSR input, and the
command line (tests/cli/test_cli_csv.py checks the CSV reader's message)."""
import numpy as np
import pytest
import scipy.sparse as sp

from dperm import PrivateLinearClassifier, PublicBoundsTransformer, PublicSchema

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("cell", [np.inf, -np.inf, "inf", "-Infinity"])
def test_dataframe_infinite_cell_is_refused_not_clipped(cell):
    """It was clipped to the public range's end, silently."""
    schema = PublicSchema({"a": [0, 10], "b": [-1, 1]}, {"c": ["x", "y"]})
    a = [1.0, 2.0, 3.0, 4.0] if not isinstance(cell, str) else ["1", "2", "3", "4"]
    a[2] = cell
    df = pd.DataFrame({"a": a, "b": [0.0] * 4, "c": ["x", "y", "x", "y"]})
    with pytest.raises(ValueError, match=r"non-finite value -?inf in numeric column 'a' "
                                         r"\(row index 2\)"):
        schema.encode(df)
    with pytest.raises(ValueError, match=r"column 'a' \(row index 2\)"):
        PublicBoundsTransformer({"a": [0, 10], "b": [-1, 1]}, {"c": ["x", "y"]}).fit_transform(df)


def test_a_missing_cell_is_still_a_missing_value():
    schema = PublicSchema({"a": [0, 10]}, {}, fill={"a": 5.0})
    X = schema.encode(pd.DataFrame({"a": [1.0, np.nan, 10.0]}))
    assert X[1, 0] == pytest.approx(0.5)


@pytest.mark.parametrize("kind", ["dense", "csr", "float32"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_numpy_and_csr_name_the_row_and_column(kind, bad):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (30, 4))
    X[17, 2] = bad
    y = np.arange(30) % 2
    A = {"dense": X, "csr": sp.csr_array(X), "float32": X.astype(np.float32)}[kind]
    with pytest.raises(ValueError, match=r"^X: contains NaN or infinity \(row 17, column 2"):
        PrivateLinearClassifier(classes=[0, 1]).fit(A, y)
