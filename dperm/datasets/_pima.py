"""The Pima Indians Diabetes data set, read from a file the user provides (not shipped).

Why it is not shipped: the UCI Machine Learning Repository no longer distributes this data set,
and the copy the project has (converted from the R package mlbench, GPL-2) carries a licence
that dperm's own does not; so :func:`load_pima` reads a CSV from a path the caller gives (or
the environment variable ``DPERM_PIMA``) and checks it against the known SHA-256.

Source: National Institute of Diabetes and Digestive and Kidney Diseases; Smith, Everhart,
Dickson, Knowler & Johannes (1988), "Using the ADAP learning algorithm to forecast the onset of
diabetes mellitus"; UCI Machine Learning Repository. 768 rows, 8 numeric attributes and the
label ``diabetes`` (pos / neg, 268 positive). Zeros in glucose, pressure, triceps, insulin and
mass are missing values coded as 0, as in the original file.
"""
import csv
import hashlib
import os
import warnings
from typing import Any, Literal, overload

import numpy as np

from ..exceptions import PrivacyLeakWarning
from ._adult import Bunch, DataChecksumError

__all__ = ["PIMA_COLUMNS", "PIMA_PUBLIC_BOUNDS", "PIMA_SHA256", "PIMA_ENV", "load_pima"]

PIMA_COLUMNS = ("pregnant", "glucose", "pressure", "triceps", "insulin", "mass", "pedigree",
                "age")
#: SHA-256 of the CSV (header line 'pregnant,...,age,diabetes'; label column pos / neg)
PIMA_SHA256 = "9b19a3fd00c036bfcf59c18312b6df1ee9e650840cbfa825fa0ea9967e4cbd86"
#: environment variable naming the CSV when no path is passed
PIMA_ENV = "DPERM_PIMA"
#: Public upper bounds (lower bound 0) from the attributes' physical ranges, not from the data:
#: pregnancies, plasma glucose (mg/dl, 2 h test), diastolic pressure (mm Hg), triceps skin fold
#: (mm), 2-hour serum insulin (mu U/ml), body mass index (kg/m^2), diabetes pedigree function,
#: age (years). Values above a bound are clipped.
PIMA_PUBLIC_BOUNDS = {"pregnant": 20.0, "glucose": 250.0, "pressure": 150.0, "triceps": 100.0,
                      "insulin": 1000.0, "mass": 80.0, "pedigree": 3.0, "age": 100.0}

_HOW_TO_GET = (
    "dperm does not ship the Pima Indians Diabetes data (its UCI page was withdrawn and the "
    "copy we know is GPL-2): pass load_pima(path=...) or set the environment variable "
    f"{PIMA_ENV} to a CSV with the header 'pregnant,glucose,pressure,triceps,insulin,mass,"
    "pedigree,age,diabetes' (labels pos/neg), e.g. the one converted from the R package "
    "mlbench's PimaIndiansDiabetes (Debian: r-cran-mlbench)")


def _resolve(path: str | os.PathLike[str] | None) -> str:
    if path is None:
        path = os.environ.get(PIMA_ENV) or None
    if path is None:
        raise FileNotFoundError("load_pima: no file given. " + _HOW_TO_GET)
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_pima: {path!r} is not a file. " + _HOW_TO_GET)
    return path


def _read(path: str, check: bool) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as fh:
        raw = fh.read()
    if check and hashlib.sha256(raw).hexdigest() != PIMA_SHA256:
        raise DataChecksumError(
            f"load_pima: {path!r} is not the known Pima file (SHA-256 "
            f"{hashlib.sha256(raw).hexdigest()[:16]}..., expected {PIMA_SHA256[:16]}...); pass "
            "check=False to read another copy with the same columns")
    rows = list(csv.reader(raw.decode("utf-8").splitlines()))
    header = [h.strip().strip('"') for h in rows[0]]
    want = list(PIMA_COLUMNS) + ["diabetes"]
    if header != want:
        raise ValueError(f"load_pima: {path!r} has columns {header}, expected {want}")
    body = [r for r in rows[1:] if r]
    try:
        X = np.array([[float(v) for v in r[:8]] for r in body], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"load_pima: {path!r}: a non-numeric attribute ({exc})") from None
    labels = [r[8].strip().strip('"').lower() for r in body]
    bad = sorted(set(labels) - {"pos", "neg"})
    if bad:
        raise ValueError(f"load_pima: {path!r}: labels must be pos/neg, found {bad[:5]}")
    y = np.where(np.array(labels) == "pos", 1.0, -1.0)
    return X, y


@overload
def load_pima(path: str | os.PathLike[str] | None = ..., preprocess: str = ..., *,
              return_frame: Literal[False] = ..., check: bool = ...
              ) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def load_pima(path: str | os.PathLike[str] | None = ..., preprocess: str = ..., *,
              return_frame: Literal[True], check: bool = ...) -> Bunch: ...


@overload
def load_pima(path: str | os.PathLike[str] | None = ..., preprocess: str = ..., *,
              return_frame: bool = ..., check: bool = ...) -> tuple[Any, ...] | Bunch: ...


def load_pima(path: str | os.PathLike[str] | None = None, preprocess: str = "raw", *,
              return_frame: bool = False, check: bool = True) -> tuple[Any, ...] | Bunch:
    """Load the Pima Indians Diabetes data (768 rows, 8 attributes) from a CSV as X, y.

    Parameters
    ----------
    path : str or path-like, optional
        The CSV (see the module docstring for its columns). Default: the file named by the
        environment variable ``DPERM_PIMA``. Missing: FileNotFoundError saying how to get it.
    preprocess : {"raw", "nips2008", "public"}
        ``"raw"``: the attributes as in the file (units above). ``"nips2008"``: the reading
        of Chaudhuri & Monteleoni (NIPS 2008) that reproduces its non-private column: raw
        attributes, every row divided by the largest row norm of the data set (so the
        largest norm is 1). That maximum is READ FROM THE DATA (a
        :class:`~dperm.exceptions.PrivacyLeakWarning` says so): fine for a reproduction,
        not for a release. ``"public"``: each attribute clipped to ``[0, bound]`` of
        :data:`PIMA_PUBLIC_BOUNDS` and divided by the bound, rows divided by sqrt(8), so
        every norm is <= 1 from public numbers only.
    return_frame : bool
        Return a Bunch with ``data``, ``target``, ``feature_names`` and ``path`` instead.
    check : bool
        Verify the file's SHA-256 against :data:`PIMA_SHA256` (DataChecksumError if not).

    Returns
    -------
    X : ndarray (768, 8) float64, y : ndarray (768,) with +1 = diabetes (pos), -1 = neg.
    """
    if preprocess not in ("raw", "nips2008", "public"):
        raise ValueError(f"preprocess: expected 'raw', 'nips2008' or 'public', got {preprocess!r}")
    path = _resolve(path)
    X, y = _read(path, check)
    if preprocess == "nips2008":
        warnings.warn("load_pima(preprocess='nips2008') divides by the largest row norm READ "
                      "FROM THE DATA: not differentially private (reproduction only)",
                      PrivacyLeakWarning, stacklevel=2)
        X = X / np.linalg.norm(X, axis=1).max()
    elif preprocess == "public":
        bounds = np.array([PIMA_PUBLIC_BOUNDS[c] for c in PIMA_COLUMNS])
        X = np.clip(X, 0.0, bounds) / bounds / np.sqrt(len(PIMA_COLUMNS))
    if return_frame:
        return Bunch(data=X, target=y, feature_names=list(PIMA_COLUMNS), path=path)
    return X, y
