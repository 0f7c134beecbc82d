"""The neighbouring relations: which data sets a guarantee tells apart.

"replace_one" (the paper's): one row replaced by another; n is public and the same for
both data sets, so the summed gradients differ by two rows' gradients.
"add_remove" (the relation of DP-SGD libraries): one row added or removed; the data
set's size is itself private (a public count ``n_public`` normalises the objective), and
the summed gradients differ by one row's gradient.
"""
__all__ = ["NEIGHBOURING", "check_neighbouring", "sensitivity_factor"]

NEIGHBOURING = ("replace_one", "add_remove")


def check_neighbouring(value):
    """`value` if it names a relation; ValueError otherwise."""
    if value not in NEIGHBOURING:
        raise ValueError(f"neighbouring: must be one of {NEIGHBOURING}, got {value!r}")
    return value


def sensitivity_factor(neighbouring):
    """How many rows' gradients two neighbours' sums differ by: 2.0 (replace_one), 1.0
    (add_remove).  Every sensitivity is this factor times a one-row bound."""
    return 2.0 if neighbouring == "replace_one" else 1.0
