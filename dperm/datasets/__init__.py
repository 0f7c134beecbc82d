"""Data sets shipped with dperm.

:func:`load_adult` loads the UCI Adult data (Becker & Kohavi 1996, UCI Machine
Learning Repository, CC BY 4.0; attribution and checksums in
``dperm/datasets/data/README.txt``) with the paper's preprocessing or with
public bounds and category lists.
"""

from ._adult import (
    ADULT_CATEGORICAL_COLUMNS,
    ADULT_COLUMNS,
    ADULT_NUMERIC_COLUMNS,
    ADULT_PUBLIC_BOUNDS,
    ADULT_PUBLIC_CATEGORIES,
    Bunch,
    DataChecksumError,
    encode_public,
    load_adult,
)

__all__ = [
    "ADULT_CATEGORICAL_COLUMNS",
    "ADULT_COLUMNS",
    "ADULT_NUMERIC_COLUMNS",
    "ADULT_PUBLIC_BOUNDS",
    "ADULT_PUBLIC_CATEGORIES",
    "Bunch",
    "DataChecksumError",
    "encode_public",
    "load_adult",
]
