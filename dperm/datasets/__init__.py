"""Data sets shipped with dperm.

:func:`load_adult` loads the UCI Adult data (Becker & Kohavi 1996, UCI Machine
Learning Repository, CC BY 4.0; attribution and checksums in
``dperm/datasets/data/README.txt``) with the paper's preprocessing or with
public bounds and category lists. :func:`load_kddcup99` loads the 10% sample
of the KDD Cup 1999 data (Stolfo et al. 1999, UCI KDD Archive / UCI Machine
Learning Repository, CC BY 4.0), the paper's second data set, with public
bounds (the default) or the paper's preprocessing.
:func:`load_pima` reads the Pima Indians Diabetes data (Smith et al. 1988; not shipped:
from a path or ``$DPERM_PIMA``), one of the NIPS 2008 paper's two UCI data sets.
:func:`make_onehot_classification` generates synthetic one-hot encoded
tabular data (scipy.sparse CSR) shaped like a census extract.
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
from ._kddcup99 import (
    KDDCUP99_COLUMNS,
    KDDCUP99_DOS_LABELS,
    KDDCUP99_NUMERIC_COLUMNS,
    KDDCUP99_PUBLIC_BOUNDS,
    KDDCUP99_PUBLIC_CATEGORIES,
    KDDCUP99_SYMBOLIC_COLUMNS,
    load_kddcup99,
)
from ._pima import PIMA_COLUMNS, PIMA_PUBLIC_BOUNDS, load_pima
from ._synthetic import make_onehot_classification

__all__ = [
    "ADULT_CATEGORICAL_COLUMNS",
    "ADULT_COLUMNS",
    "ADULT_NUMERIC_COLUMNS",
    "ADULT_PUBLIC_BOUNDS",
    "ADULT_PUBLIC_CATEGORIES",
    "Bunch",
    "DataChecksumError",
    "KDDCUP99_COLUMNS",
    "KDDCUP99_DOS_LABELS",
    "KDDCUP99_NUMERIC_COLUMNS",
    "KDDCUP99_PUBLIC_BOUNDS",
    "KDDCUP99_PUBLIC_CATEGORIES",
    "KDDCUP99_SYMBOLIC_COLUMNS",
    "PIMA_COLUMNS",
    "PIMA_PUBLIC_BOUNDS",
    "encode_public",
    "load_adult",
    "load_kddcup99",
    "load_pima",
    "make_onehot_classification",
]
