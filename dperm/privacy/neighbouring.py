"""The neighbouring relations: which data sets a guarantee tells apart.

"replace_one" (the paper's): one row replaced by another; n is public and the same for
both data sets, so the summed gradients differ by two rows' gradients.
"add_remove" (the relation of DP-SGD libraries): one row added or removed; the data
set's size is itself private (a public count ``n_public`` normalises the objective), and
the summed gradients differ by one row's gradient.
"""
__all__ = ["NEIGHBOURING", "check_neighbouring", "sensitivity_factor", "RANK_SENSITIVITY"]

NEIGHBOURING = ("replace_one", "add_remove")


def check_neighbouring(value: object) -> str:
    """`value` if it names a relation; ValueError otherwise."""
    if value not in NEIGHBOURING:
        raise ValueError(f"neighbouring: must be one of {NEIGHBOURING}, got {value!r}")
    return value


def sensitivity_factor(neighbouring: str) -> float:
    """How many rows' gradients two neighbours' sums differ by: 2.0 (replace_one), 1.0
    (add_remove).  Every sensitivity is this factor times a one-row bound."""
    return 2.0 if neighbouring == "replace_one" else 1.0


#: How much one row can change a rank utility -|#{x_i < t} - q n| (or its distance to
#: an interval of ranks), under either relation: replacing a row moves each count
#: #{x_i < t} by at most 1 with n fixed; adding or removing one moves it by 0 or 1 and
#: q n by q, so the difference moves by at most max(q, 1 - q) <= 1 (n, the count of
#: non-missing values, is then private and enters only through the utility).  Used by
#: dperm/privacy/quantiles.py; docs/privacy_analysis.md, "Private bounds".
RANK_SENSITIVITY = 1.0
