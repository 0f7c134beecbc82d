"""Every input check shared by dperm's entry points.

Each check raises ValueError (or TypeError for a wrong kind of object) whose
message starts with the parameter's name, and returns a clean copy or view;
nothing here mutates its input.
"""
import functools
import inspect
import math
import numbers
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from dperm.data import _arrays
from dperm.data._arrays import _is_sparse
from dperm.data.design import DesignRows
from dperm.data.norms import FACTOR_MARGIN, check_row_norms, pull_below

__all__ = [
    "check_X", "check_pm1_labels", "check_positive", "check_alpha", "check_epsilon",
    "check_random_state", "check_n_threads", "apply_norm_bound", "check_choice",
    "fresh_generator", "is_fixed_seed", "spawn_generator", "row_norms", "bound_rows",
    "check_class_labels", "free_cores", "team_limit",
    "Constraint", "Interval", "Options", "InstanceOf", "Satisfies", "Each", "NONE",
    "BOOLEAN", "POSITIVE", "DATA_NORM", "NORM_POLICIES", "RANDOM_STATE", "N_THREADS",
    "ParameterTable", "check_param", "check_params", "validate_params", "resolve_n_threads",
]





def check_X(X: Any, *, name: str = "X", min_samples: int = 1, accept_sparse: bool = False) -> Any:
    """2-D finite data of float32 or float64: a C-contiguous array or a CSR matrix.

    Dense: float32 input stays float32 (the kernels read it directly and
    accumulate in float64); every other numeric dtype is converted to float64.
    A numpy.memmap (or np.load(..., mmap_mode="r")) of float32/float64 in C order
    is returned as a view of the file, never copied (a map of another dtype or
    order is refused: converting it would load it into memory).

    Sparse (accept_sparse=True): a scipy.sparse CSR matrix or array comes back
    as CSR with float32/float64 values and int32/int64 indices (indices and
    indptr of one dtype).  It is used in place when it already is that, in
    canonical form (sorted indices, no duplicates); otherwise a converted copy
    is made (CSC, COO and the other formats: one conversion, O(nnz) memory).
    The user's matrix is never modified.

    A `dperm.data.design.DesignRows` comes back as one over the checked X.
    """
    if getattr(X, "_dperm_distributed", False):
        return X   # rows on a Dask cluster, validated there (dperm.data.dask_rows)
    _refuse_dask(X, name)
    if isinstance(X, DesignRows):
        return _check_design_rows(X, name, min_samples, accept_sparse)
    if _is_sparse(X):
        if not accept_sparse:
            raise TypeError(f"{name}: sparse input is not supported here; pass a dense array "
                            f"(e.g. {name}.toarray())")
        return _check_csr(X, name, min_samples)
    if isinstance(X, np.memmap) or _is_mapped(X):
        return _check_mapped(X, name, min_samples)
    arr = _numeric_array(X, name)
    _check_2d(arr, name)
    _check_shape(arr.shape, name, min_samples)
    dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    _check_finite(arr, name)
    return arr


def _refuse_dask(X, name):
    if type(X).__module__.startswith("dask."):
        raise TypeError(f"{name}: a Dask collection is accepted by dperm.optim.erm.minimize, the "
                        f"mechanisms, private_tuning and PrivateLinearClassifier (fit, "
                        f"predict, score, ...: they run on the workers); here it would be "
                        f"loaded into this process. Elsewhere apply the function per block: "
                        f"{name}.map_blocks(f, ...)")


def _check_design_rows(X, name, min_samples, accept_sparse):
    """check_X of a DesignRows: itself when validated already, else one over the checked X."""
    if X.checked and (accept_sparse or not _is_sparse(X.X)) and X.shape[0] >= min_samples:
        return X   # validated once already (the estimator hands its rows down)
    return X.with_X(check_X(X.X, name=name, min_samples=min_samples,
                            accept_sparse=accept_sparse), checked=True)


def _numeric_array(X, name):
    """X as a numpy array of numbers or booleans (an object array of numbers converted)."""
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: could not be converted to an array ({exc})") from None
    if np.iscomplexobj(arr):
        raise ValueError(f"{name}: Complex data not supported (complex values are not supported)")
    if arr.dtype == object:
        # an object array of numbers is numeric data in disguise (e.g. from pandas)
        try:
            arr = arr.astype(np.float64)
        except TypeError as exc:
            raise TypeError(f"{name}: must be numeric ({exc})") from None
        except ValueError as exc:
            raise ValueError(f"{name}: must be numeric ({exc})") from None
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name}: must be numeric, got dtype {arr.dtype}")
    return arr


def _check_2d(arr, name):
    if arr.ndim != 2:
        hint = (" Reshape your data either using array.reshape(-1, 1) if your data has a "
                "single feature or array.reshape(1, -1) if it contains a single sample."
                if arr.ndim == 1 else "")
        raise ValueError(f"{name}: expected a 2-D array (n_samples, n_features), "
                         f"got shape {arr.shape}.{hint}")


def _check_shape(shape, name, min_samples):
    n, d = shape
    if n < min_samples:
        raise ValueError(f"{name}: needs at least {min_samples} samples; found array with "
                         f"{n} sample(s) (shape={shape}) while a minimum of "
                         f"{min_samples} is required.")
    if d < 1:
        raise ValueError(f"{name}: needs at least 1 feature; found array with 0 feature(s) "
                         f"(shape={shape}) while a minimum of 1 is required.")


def _check_finite(arr, name):
    """Finite values, without an O(size) temporary: a finite sum (accumulated in
    float64, one streaming read) proves every entry finite; only a non-finite sum
    (NaN/inf, or an overflow) needs the entry-wise check, done in row blocks."""
    if arr.size == 0 or np.isfinite(arr.sum(dtype=np.float64)):
        return
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim > 1 else arr.reshape(-1, 1)
    step = max(1, (1 << 22) // max(1, flat.shape[1]))
    for i in range(0, flat.shape[0], step):
        ok = np.isfinite(flat[i:i + step])
        if not ok.all():
            r, c = np.argwhere(~ok)[0]
            _nonfinite_error(name, i + int(r), int(c) if arr.ndim > 1 else None,
                             flat[i + r, c])


def _nonfinite_error(name, row, column, value):
    """The one message for a NaN or infinite cell (dense, CSR; a DataFrame's numeric
    column says the same through PublicSchema): its row and column, and the fix."""
    where = f"row {row}" if column is None else f"row {row}, column {column}"
    raise ValueError(f"{name}: contains NaN or infinity ({where}: {float(value)!r}); remove "
                     f"or replace the value")


def _is_mapped(X):
    """An ndarray view whose memory is a file mapping (np.load(mmap_mode=...) slices)."""
    import mmap
    base = X
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, mmap.mmap)


def _check_mapped(X, name, min_samples):
    arr = X
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D memory map (n_samples, n_features), "
                         f"got shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name}: a memory-mapped array must be float32 or float64 to be read "
                         f"in place, got {arr.dtype}; converting it would load it into memory "
                         f"(write the file as float32 or float64)")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name}: a memory-mapped array must be C-contiguous (row-major) to be "
                         f"read in place; this one is not (Fortran order or a strided view). "
                         f"Write the file in C order")
    _check_shape(arr.shape, name, min_samples)
    # a plain ndarray view of the same mapped memory: no copy, never written
    arr = arr.view(np.ndarray)
    _check_finite(arr, name)
    return arr


def _check_csr(X, name, min_samples):
    if X.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D sparse matrix, got {X.ndim} dimensions")
    if X.format != "csr":
        X = X.tocsr()          # one conversion (a copy) for CSC, COO, ...
    _check_shape(X.shape, name, min_samples)
    _check_csr_values(X.data, name)
    nnz = _check_csr_structure(X, name)
    if _csr_needs_copy(X, nnz):
        X = _csr_copy(X, nnz, name)
    return _scan_csr(X, name)


def _check_csr_values(data, name):
    if np.iscomplexobj(data):
        raise ValueError(f"{name}: Complex data not supported (complex values are not supported)")
    if not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise ValueError(f"{name}: must be numeric, got dtype {data.dtype}")


def _check_csr_structure(X, name):
    """The stored-entry count nnz, after checking indptr against the shape and the
    lengths of indices and data."""
    n = X.shape[0]
    data, indices, indptr = X.data, X.indices, X.indptr
    if indptr.ndim != 1 or indptr.shape[0] != n + 1:
        raise ValueError(f"{name}: malformed CSR: indptr has {indptr.shape[0]} entries for {n} rows")
    if n > 0 and (indptr[0] != 0 or np.any(np.diff(indptr) < 0)):
        raise ValueError(f"{name}: malformed CSR: indptr must start at 0 and never decrease")
    nnz = int(indptr[-1])
    if indices.shape[0] < nnz or data.shape[0] < nnz:
        raise ValueError(f"{name}: malformed CSR: indptr says {nnz} stored entries but indices "
                         f"has {indices.shape[0]} and data {data.shape[0]}")
    return nnz


def _csr_dtypes(X):
    """(value dtype, index dtype) the kernels read: float32/float64 values kept (others
    float64), int32/int64 indices kept when indptr has the same dtype (else int64)."""
    data, indices, indptr = X.data, X.indices, X.indptr
    vdtype = data.dtype if data.dtype in (np.float32, np.float64) else np.float64
    idtype = (indices.dtype if indices.dtype == indptr.dtype and indices.dtype in (np.int32, np.int64)
              else np.int64)
    return vdtype, idtype


def _csr_needs_copy(X, nnz):
    """Whether the kernels can read X's arrays as they are (dtypes, lengths, C order)."""
    data, indices, indptr = X.data, X.indices, X.indptr
    vdtype, idtype = _csr_dtypes(X)
    return (vdtype != data.dtype or idtype != indices.dtype or idtype != indptr.dtype
            or data.shape[0] != nnz or indices.shape[0] != nnz
            or not (data.flags.c_contiguous and indices.flags.c_contiguous
                    and indptr.flags.c_contiguous))


def _csr_copy(X, nnz, name):
    """X's first nnz entries in the kernels' dtypes, C-contiguous (a copy)."""
    indices, d = X.indices, X.shape[1]
    if nnz and not np.issubdtype(indices.dtype, np.signedinteger) and (
            int(indices[:nnz].max()) >= d):   # before a cast could wrap it negative
        _index_range_error(indices[:nnz], d, name)
    vdtype, idtype = _csr_dtypes(X)
    return _csr_from_parts(np.array(X.data[:nnz], dtype=vdtype),
                           np.array(indices[:nnz], dtype=idtype),
                           np.array(X.indptr, dtype=idtype), X.shape)


def _scan_csr(X, name):
    """Finiteness, the column range and canonical order in one read of the entries; a
    canonical copy (sorted indices, duplicates summed) when X is not, never the user's."""
    import scipy.sparse as sp

    from dperm._core._objective import csr_scan

    n, d = X.shape
    nonfinite, out_of_range, unsorted = csr_scan(X.data, X.indices, X.indptr, d)
    if out_of_range:
        _index_range_error(X.indices, d, name)
    if nonfinite:
        p = int(np.flatnonzero(~np.isfinite(X.data))[0])
        row = int(np.searchsorted(X.indptr, p, side="right")) - 1
        _nonfinite_error(name, row, int(X.indices[p]), X.data[p])
    if unsorted:
        X = sp.csr_array((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=(n, d))
        X.has_canonical_format = False   # make scipy look again, not trust a cached flag
        X.sum_duplicates()
        X.sort_indices()
    return X


def _index_range_error(indices, d, name):
    raise ValueError(f"{name}: column indices must lie in [0, {d}); found "
                     f"{int(indices.min())} to {int(indices.max())}")


def _csr_from_parts(data, indices, indptr, shape):
    """A csr_array over these arrays, without scipy re-choosing the index dtype."""
    import scipy.sparse as sp

    out = sp.csr_array((np.zeros(0, data.dtype), np.zeros(0, np.int32), np.zeros(shape[0] + 1, np.int32)),
                       shape=shape)
    out.data, out.indices, out.indptr = data, indices, indptr
    for flag in ("_has_sorted_indices", "_has_canonical_format"):
        if hasattr(out, flag):
            delattr(out, flag)   # the cached flags described the empty matrix
    return out





def row_norms(X: Any) -> np.ndarray:
    """Euclidean norm of every row (float64, (n,)); dense, mapped, CSR or DesignRows, with
    no temporary larger than a block of rows."""
    if isinstance(X, DesignRows):
        nx = X.x_norms() if X.factor is None else X.x_norms() * X.factor
        c = X.constant or 0.0
        with np.errstate(over="ignore"):
            r = np.sqrt(nx**2 + c**2)
        big = np.isinf(r)
        if big.any():   # nx**2 overflowed: hypot does not
            r[big] = np.hypot(nx[big], c)
        return X.scale * r
    return _arrays.array_row_norms(X)


def check_pm1_labels(y: Any, n: int, *, name: str = "y") -> np.ndarray:
    """Labels as float64 in {-1, +1}, one per row."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name}: has {y.shape[0]} labels but X has {n} rows")
    try:
        yf = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: labels must be -1 or +1") from None
    if not np.all((yf == 1.0) | (yf == -1.0)):
        bad = np.unique(y[~((yf == 1.0) | (yf == -1.0))])[:5]
        raise ValueError(f"{name}: labels must be -1 or +1, found {bad.tolist()}")
    return np.ascontiguousarray(yf)


def check_real_labels(y: Any, n: int, *, name: str = "y") -> np.ndarray:
    """Real-valued labels (a regression target) as float64, one per row, finite."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of targets, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name}: has {y.shape[0]} targets but X has {n} rows")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name}: a regression target must be numeric, got dtype {y.dtype}")
    yf = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(yf)):
        raise ValueError(f"{name}: contains NaN or infinity")
    return np.ascontiguousarray(yf)


def bound_labels(y: Any, label_bound: float) -> tuple[np.ndarray, int]:
    """(labels clipped to [-B, B], how many were clipped): the public, row-by-row map
    of a regression fit (B = label_bound).  A new array: the user's y is unchanged.
    The count is a statistic of the private data, for the analyst only."""
    yf = np.asarray(y, dtype=np.float64)
    over = np.abs(yf) > label_bound
    return np.ascontiguousarray(np.clip(yf, -label_bound, label_bound)), int(over.sum())


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real number > 0 (finite unless allow_inf)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: must be a positive number, got {value!r}")
    value = float(value)
    if np.isnan(value) or value <= 0 or (np.isinf(value) and not allow_inf):
        raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
    return value


#: the largest data_norm dperm computes with: the privacy constants hold c R^2 / (n Lambda)
#: and R^2 products, which must stay far inside float64's range (about 1.8e308)
MAX_DATA_NORM = 1e100
#: rows whose largest norm is below data_norm / this get a DataNormWarning
DATA_NORM_SLACK_WARN = 100.0


def check_data_norm(value: Any, name: str = "data_norm") -> float:
    """The public row-norm bound R: a finite number in (0, MAX_DATA_NORM]."""
    value = check_positive(value, name)
    if value > MAX_DATA_NORM:
        raise ValueError(
            f"{name}: {value:g} is too large to compute with (the privacy constants hold its "
            f"square: above {MAX_DATA_NORM:g} they overflow). Rows are clipped onto this "
            f"radius and the noise is calibrated to it: scale X by public bounds so that row "
            f"norms are about 1, and use {name}=1")
    return value


def warn_if_rows_far_inside(max_row_norm: float, data_norm: float, name: str = "data_norm",
                            stacklevel: int = 3) -> None:
    """DataNormWarning when every row is far inside the ball of radius data_norm (the model
    would be mostly regularization or noise). Reads the private rows: analyst only."""
    import warnings

    from dperm.exceptions import DataNormWarning

    if max_row_norm < data_norm / DATA_NORM_SLACK_WARN:
        warnings.warn(
            f"{name}={data_norm:g} is more than {DATA_NORM_SLACK_WARN:g} times every row's "
            "norm: Lambda and the noise are calibrated to it, so the rows' signal is lost and "
            "the model will be mostly regularization or noise (or the solver will not reach "
            f"its tolerance). Scale X by public bounds so that rows fill the ball "
            f"(dperm.PublicBoundsTransformer), or choose a smaller public {name}. (This "
            "compares with the private rows' norms: for your eyes, not for publication.)",
            DataNormWarning, stacklevel=stacklevel)


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Privacy parameter: a finite number > 0."""
    return check_positive(epsilon, name)


def check_alpha(alpha: Any, name: str = "alpha") -> tuple[np.ndarray, bool]:
    """Regularization strength(s): a scalar or a 1-D sequence of positive numbers.

    Returns (values as a 1-D float64 array, whether alpha was a scalar).
    """
    if np.ndim(alpha) == 0:
        a = alpha if not isinstance(alpha, np.ndarray) else alpha.item()
        return np.array([check_positive(a, name)]), True
    arr = np.asarray(alpha)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: must be a positive number or a non-empty 1-D sequence, "
                         f"got shape {arr.shape}")
    vals = np.array([check_positive(a.item() if hasattr(a, "item") else a, name) for a in arr])
    return vals, False


def check_random_state(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """A numpy Generator.

    None gives a fresh generator seeded from OS entropy (the default for every
    private fit); an int seeds a reproducible one; a Generator is used as is (a
    legacy RandomState gives a Generator derived from it).

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        The source of randomness; an int must be >= 0.
    name : str, default "random_state"
        The parameter's name in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ValueError
        A negative seed, or anything else.
    """
    if random_state is None:
        return fresh_generator()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name}: a seed must be >= 0, got {random_state}")
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        # legacy generators: derive a Generator from it (reproducible for a fixed state)
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise ValueError(f"{name}: expected None, an int seed or a numpy Generator, got {random_state!r}")


def fresh_generator() -> np.random.Generator:
    """The randomness policy, in one place: a new generator seeded from OS entropy.

    Never derived from numpy's global state (which a script may have seeded), so
    two processes, or two fits in one process, never share noise.
    """
    return np.random.default_rng()


def is_fixed_seed(random_state: Any) -> bool:
    """True for an int seed or a legacy RandomState: whoever knows it can regenerate the noise."""
    return (isinstance(random_state, (numbers.Integral, np.integer, np.random.RandomState))
            and not isinstance(random_state, bool))


def spawn_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent child stream of a numpy Generator (advances the parent).

    Clones and repeated fits that hold the same Generator each draw from their
    own child, never from copies of one state.
    """
    try:
        return rng.spawn(1)[0]
    except (TypeError, AttributeError):  # a bit generator without a SeedSequence
        return np.random.default_rng(rng.integers(0, 2**63 - 1, size=4))


def default_threads() -> int:
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_n_threads(n_threads: Any, name: str = "n_threads") -> int:
    """None (all available cores), or an int >= 1; -1 also means all cores.

    The number returned sets how each pass splits its rows (and so the result, bit for
    bit); the OpenMP team that runs the parts is at most `free_cores()`, refreshed here
    (see `team_limit`), which changes the speed on a busy machine, never the result."""
    if not (n_threads is None or n_threads == -1):
        if isinstance(n_threads, bool) or not isinstance(n_threads, (numbers.Integral, np.integer)) \
                or n_threads < 1:
            raise ValueError(f"{name}: must be None, -1 or an integer >= 1, got {n_threads!r}")
    return resolve_n_threads(n_threads)


def resolve_n_threads(n_threads: int | None) -> int:
    """`check_n_threads` on a checked value: the cores for None or -1, else the count
    (and the team limit refreshed)."""
    update_team_limit()
    if n_threads is None or n_threads == -1:
        return default_threads()
    return int(n_threads)


#: environment variable: "1" turns the load-aware team on (a pass runs its parts on at
#: most `free_cores()` threads).  Off by default: on an idle 16-core machine the 1-minute
#: load average still counts the work of processes that just ended, the team shrank to
#: 12-14 of 16 threads and the 16 parts ran in two waves (fits 1.58x slower), while the
#: passive OpenMP wait policy (dperm._core) gives the speed on a loaded machine that the
#: smaller team was for (benchmarks/under_load.py; BENCHMARKS.md)
LOAD_AWARE_ENV = "DPERM_LOAD_AWARE"
#: (wall, process CPU time) at the start of the previous and the current window over
#: which this process's own share of the load average is measured
_OWN = {"prev": None, "cur": None}
_WINDOW = 30.0


def _own_load(now, cpu):
    """This process's CPU rate (cores busy) over the last 30-60 s: its own share of the
    1-minute load average, which must not count as other processes' work."""
    if _OWN["cur"] is None:
        _OWN["prev"] = _OWN["cur"] = (now, cpu)
    elif now - _OWN["cur"][0] > _WINDOW:
        _OWN["prev"], _OWN["cur"] = _OWN["cur"], (now, cpu)
    t0, c0 = _OWN["prev"]
    return (cpu - c0) / (now - t0) if now - t0 >= 1.0 else 0.0


def free_cores(cores: int | None = None, load: float | None = None,
               own: float | None = None) -> int:
    """Cores not taken by other processes: the cores this process may run on minus the
    1-minute load average, less this process's own recent CPU rate, rounded; at least 1.

    On a machine with 2 cores and a load of 7 it is 1: a pass split in two parts then
    runs them one after the other on one thread instead of waiting at each barrier for
    a descheduled team mate (issue 29, item 7: 48-50 s against 13 s for
    ``dperm reproduce table1 --quick``).  An idle machine gives every core."""
    import time

    n = default_threads() if cores is None else int(cores)
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):   # pragma: no cover - no load average here
            return n
    if own is None:
        own = _own_load(time.monotonic(), time.process_time())
    others = max(0.0, float(load) - float(own))
    return max(1, min(n, n - int(others + 0.5)))


def team_limit() -> int:
    """The largest OpenMP team a pass may start now: 0 (no limit, the default), or
    `free_cores()` when ``DPERM_LOAD_AWARE=1``."""
    if os.environ.get(LOAD_AWARE_ENV, "0").strip() != "1":
        return 0
    return free_cores()


#: when the kernels' team limit was last refreshed (time.monotonic): at most every
#: _TEAM_REFRESH seconds, so that a solver calling check_n_threads per pass pays nothing
_TEAM = {"t": -math.inf}
_TEAM_REFRESH = 0.5


def update_team_limit() -> None:
    """Give the kernels the current `team_limit()` (dperm._core: set_team_limit), at most
    every half second."""
    import time

    now = time.monotonic()
    if now - _TEAM["t"] < _TEAM_REFRESH:
        return
    _TEAM["t"] = now
    try:
        from dperm._core._objective import set_team_limit
    except ImportError:   # pragma: no cover - a build without the compiled core
        return
    set_team_limit(team_limit())


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; choose one of {sorted(choices)}")
    return value


def bound_rows(X: Any, data_norm: float, norm_policy: str, *, name: str = "X",
               return_clipped: bool = False, stats: dict[str, float] | None = None) -> Any:
    """apply_norm_bound without a copy: rows over the bound get a clipping factor.

    Returns X itself when every row is within data_norm, else a
    dperm.data.design.DesignRows whose factor t_i = data_norm / ||x_i|| (shrunk by
    2^-40, so rounding cannot lift a norm above the bound) scales the rows over
    it -- the same public, row-by-row map as "clip", applied by the kernels as
    they read each row.  "error" refuses rows over the bound, as before.
    `stats`, a dict, receives "max_norm": the largest ||t_i x_i|| before clipping (a
    statistic of the private rows, for the analyst's warnings only).
    """
    if getattr(X, "_dperm_distributed", False):   # on the workers, by this same code
        return X.bound_rows(data_norm, norm_policy, name=name, return_clipped=return_clipped)
    check_choice(norm_policy, "norm_policy", {"clip", "error"})
    D = X if isinstance(X, DesignRows) else DesignRows(X)
    base = D.x_norms()
    check_row_norms(base, D.X, name)
    nx = base if D.factor is None else base * D.factor
    rx = D.x_radius(data_norm)
    over = nx > rx
    if stats is not None:
        stats["max_norm"] = float(nx.max()) if nx.size else 0.0
    bad = nx > rx * (1.0 + 1e-9)
    if norm_policy == "error" and bad.any():
        big = D.scale * float(np.hypot(nx.max(), D.constant or 0.0))
        raise ValueError(
            f"{name}: {int(bad.sum())} row(s) have norm above data_norm={data_norm} "
            f"(largest {big:.6g}); scale the data by a public bound, raise "
            f"data_norm, or use norm_policy='clip'")
    if not over.any():
        return (X, 0) if return_clipped else X
    factor = np.ones(base.shape[0]) if D.factor is None else D.factor.copy()
    factor[over] = rx / base[over] * FACTOR_MARGIN
    out = D.with_factor(factor)
    return (out, int(bad.sum())) if return_clipped else out


def apply_norm_bound(X: Any, data_norm: float, norm_policy: str, *, name: str = "X",
                     return_clipped: bool = False) -> Any:
    """Enforce the public row-norm bound ||x_i|| <= data_norm.

    "clip" rescales rows over the bound onto the sphere of radius data_norm (a
    map that does not depend on the other rows, so privacy holds); "error"
    refuses such rows.  Returns a new array only when something changed (and,
    with return_clipped, the number of rows clipped: a statistic of the data,
    for the analyst only).
    """
    check_choice(norm_policy, "norm_policy", {"clip", "error"})
    if isinstance(X, DesignRows):
        return bound_rows(X, data_norm, norm_policy, name=name, return_clipped=return_clipped)
    norms = row_norms(X)
    check_row_norms(norms, X, name)
    over = norms > data_norm
    if not over.any():
        return (X, 0) if return_clipped else X
    # "error" forgives rounding-sized excess (rows scaled to exactly R); such rows
    # are still pulled back onto the sphere below, so the bound holds exactly
    bad = norms > data_norm * (1.0 + 1e-9)
    if norm_policy == "error" and bad.any():
        raise ValueError(
            f"{name}: {int(bad.sum())} row(s) have norm above data_norm={data_norm} "
            f"(largest {norms.max():.6g}); scale the data by a public bound, raise "
            f"data_norm, or use norm_policy='clip'")
    scale = np.ones(X.shape[0])
    scale[over] = data_norm / norms[over]
    if _is_sparse(X):
        out = X.copy()
        out.data = out.data * scale.astype(X.dtype)[np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))]
        # rounding in float32 can leave a row a hair above R; shrink it by one ulp
        n2 = row_norms(out)
        fix = n2 > data_norm
        if fix.any():
            f = np.ones(X.shape[0])
            f[fix] = pull_below(n2[fix], data_norm, X.dtype)
            out.data = out.data * f.astype(X.dtype)[np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))]
        return (out, int(bad.sum())) if return_clipped else out
    out = np.array(X)  # a copy in memory (for a memory map: only when rows need clipping)
    out[over] *= scale[over][:, None].astype(X.dtype)
    n2 = row_norms(out[over])
    fix = n2 > data_norm
    if fix.any():
        rows = np.flatnonzero(over)[fix]
        out[rows] *= np.asarray(pull_below(n2[fix], data_norm, X.dtype), dtype=X.dtype)[:, None]
    return (out, int(bad.sum())) if return_clipped else out


def check_class_labels(y: Any, n: int, n_classes: int, *, name: str = "y") -> np.ndarray:
    """Labels as an intp array (n,) with values in {0, ..., n_classes - 1}.

    Integer arrays, and float arrays whose values are whole numbers, are
    accepted; booleans, strings, fractions, NaN and values out of range raise
    a ValueError naming `name`.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of class labels, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name}: has {arr.shape[0]} labels but X has {n} rows")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name}: class labels must be integers 0..{n_classes - 1}, "
                         f"got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        whole = np.isfinite(arr) & (arr == np.round(arr))
        if not whole.all():
            bad = np.unique(arr[~whole])[:5]
            raise ValueError(f"{name}: class labels must be integers 0..{n_classes - 1}, "
                             f"found non-integer values {bad.tolist()}")
    bad = (arr < 0) | (arr >= n_classes)
    if bad.any():
        vals = np.unique(arr[bad])[:5]
        raise ValueError(f"{name}: class labels must lie in 0..{n_classes - 1} "
                         f"(n_classes={n_classes}), found {vals.tolist()}")
    return np.ascontiguousarray(arr, dtype=np.int64)


# ----------------------------------------------------------------------------- declared
# parameter constraints (after scikit-learn's ``_parameter_constraints`` and
# ``validate_params``, sklearn/utils/_param_validation.py): every public entry point
# declares, in one table, what each of its parameters may be; `check_params` checks a
# call against its table once, at the boundary, and the functions it calls take the
# values as checked.
class Constraint:
    """One form a parameter's value may take; a parameter's constraints are a list, and
    a value is valid when one of them accepts it."""

    #: what an error message says the value must be ("a positive finite number")
    description = ""

    def accepts(self, value: object) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.description!r})"


class Interval(Constraint):
    """A real number (or, with ``integer``, an integer) in a range; never a bool, NaN or
    an infinity.

    Parameters
    ----------
    low, high : float or None
        The ends (None: unbounded).
    closed : {"neither", "left", "right", "both"}
        Which ends belong to the range.
    integer : bool
        Integers only (``numbers.Integral``).  ``"valued"``: any real number with an
        integer value (a count that arrives as 1e6).
    description : str, optional
        The error message's wording (default: built from the range).
    """

    def __init__(self, low: float | None = None, high: float | None = None, *,
                 closed: str = "neither", integer: bool | str = False,
                 description: str | None = None) -> None:
        self.low, self.high, self.closed, self.integer = low, high, closed, integer
        self.description = description or self._describe()

    def _describe(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        if self.low == 0 and self.high is None and self.closed in ("neither", "right"):
            return "a positive integer" if self.integer else "a positive finite number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>=' if self.closed in ('left', 'both') else '>'} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<=' if self.closed in ('right', 'both') else '<'} {self.high:g}")
        return f"{kind} {' and '.join(parts)}".rstrip()

    def accepts(self, value: object) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        if self.integer is True and not isinstance(value, numbers.Integral):
            return False
        v = float(value)
        if not math.isfinite(v) or (self.integer == "valued" and not v.is_integer()):
            return False
        return self._above_low(v) and self._below_high(v)

    def _above_low(self, v: float) -> bool:
        return self.low is None or v > self.low or (
            v == self.low and self.closed in ("left", "both"))

    def _below_high(self, v: float) -> bool:
        return self.high is None or v < self.high or (
            v == self.high and self.closed in ("right", "both"))


class Options(Constraint):
    """One of a set of strings."""

    def __init__(self, options: "set[str] | frozenset[str] | tuple[str, ...]") -> None:
        self.options = frozenset(options)
        self.description = " or ".join(repr(o) for o in sorted(self.options))

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.options


class InstanceOf(Constraint):
    """An instance of a class (a wrong type raises TypeError)."""

    def __init__(self, cls: type, description: str | None = None) -> None:
        self.cls = cls
        self.description = description or f"a {cls.__module__}.{cls.__qualname__}"

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.cls)


class Satisfies(Constraint):
    """A value that a check function accepts: it raises its own error (naming the
    parameter) for a value of the right kind but out of range; a `kind` predicate says
    which values are of that kind (the others fall through to the next constraint)."""

    def __init__(self, check: "Callable[[Any, str], object]", description: str,
                 kind: "Callable[[object], bool] | None" = None) -> None:
        self.check, self.description, self.kind = check, description, kind

    def accepts(self, value: object) -> bool:
        return self.kind is None or self.kind(value)


class Each(Constraint):
    """A scalar that ``inner`` accepts, or a non-empty 1-D sequence of such values (a
    batch of problems: one alpha per fit)."""

    def __init__(self, inner: Constraint) -> None:
        self.inner = inner
        self.description = f"{inner.description} or a non-empty 1-D sequence of them"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (str, bytes)):
            return False
        if np.ndim(value) == 0:
            return self.inner.accepts(value.item() if isinstance(value, np.ndarray) else value)
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):
            return False
        return arr.ndim == 1 and arr.size > 0 and all(
            self.inner.accepts(v.item() if hasattr(v, "item") else v) for v in arr)


class _NoneConstraint(Constraint):
    description = "None"

    def accepts(self, value: object) -> bool:
        return value is None


class _Boolean(Constraint):
    description = "True or False"

    def accepts(self, value: object) -> bool:
        return isinstance(value, (bool, np.bool_))


#: the constraints for ``None`` and for a bool
NONE: Constraint = _NoneConstraint()
BOOLEAN: Constraint = _Boolean()
#: > 0 and finite (epsilon, h, tol, a bound)
POSITIVE = Interval(0, None)
#: ``random_state``: fresh entropy, a seed, or a generator
RANDOM_STATE = [NONE, Interval(0, None, closed="left", integer=True,
                               description="an int seed >= 0"),
                InstanceOf(np.random.Generator, "a numpy Generator"),
                InstanceOf(np.random.RandomState, "a numpy RandomState")]
#: ``data_norm``: a positive number small enough to compute with (`check_data_norm`)
DATA_NORM = [Satisfies(lambda v, name: check_data_norm(v, name), "a positive finite number",
                       kind=POSITIVE.accepts)]
#: ``norm_policy``: what a row above data_norm gets
NORM_POLICIES = ("clip", "error")
#: ``n_threads``: None or -1 (every core), or a count
N_THREADS = [NONE, Interval(-1, -1, closed="both", integer=True, description="-1"),
             Interval(1, None, closed="left", integer=True, description="an integer >= 1")]

#: name -> the list of forms the parameter may take
ParameterTable = Mapping[str, Sequence[Constraint]]


def check_param(name: str, value: Any, constraints: Sequence[Constraint]) -> None:
    """Raise the error that names ``name`` and what it may be unless one of ``constraints``
    accepts ``value``: a ``Satisfies`` constraint runs its check (which may raise its own,
    more specific message); options only give ``name=value is not valid; choose one of
    [...]``; a wrong type where only instances fit, TypeError."""
    for c in constraints:
        if c.accepts(value):
            if isinstance(c, Satisfies):
                c.check(value, name)
            return
    raise _invalid(name, value, constraints)


def _invalid(name: str, value: Any, constraints: Sequence[Constraint]) -> Exception:
    """The error for a value no constraint accepts."""
    if constraints and all(isinstance(c, Options) for c in constraints):
        choices = sorted(set().union(*(c.options for c in constraints)))    # type: ignore[attr-defined]
        return ValueError(f"{name}={value!r} is not valid; choose one of {choices}")
    kinds = [c for c in constraints if c is not NONE]
    wanted = " or ".join(c.description for c in constraints)
    if kinds and all(isinstance(c, InstanceOf) for c in kinds):
        return TypeError(f"{name}: expected {wanted}, got {type(value).__name__}")
    return ValueError(f"{name}: must be {wanted}, got {value!r}")


def check_params(table: ParameterTable, values: Mapping[str, Any]) -> None:
    """Check every parameter of ``table`` found in ``values`` (a call's arguments, an
    estimator's ``get_params()``) against its declared constraints, in the table's order:
    the one place an entry point's parameters are validated.

    Parameters
    ----------
    table : mapping of str to list of Constraint
        The entry point's declaration (e.g. ``PrivateLinearClassifier._parameter_constraints``).
    values : mapping of str to object
        The values; names missing from it are not checked (a parameter that does not
        apply to this call).

    Raises
    ------
    ValueError or TypeError
        The first invalid parameter, named, with what it may be.

    Examples
    --------
    >>> from dperm.data.validation import NONE, POSITIVE, check_params
    >>> check_params({"tol": [NONE, POSITIVE]}, {"tol": 1e-8})
    >>> check_params({"tol": [NONE, POSITIVE]}, {"tol": -1})
    Traceback (most recent call last):
    ...
    ValueError: tol: must be None or a positive finite number, got -1
    """
    for name, constraints in table.items():
        if name in values:
            check_param(name, values[name], constraints)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def validate_params(table: ParameterTable) -> "Callable[[Callable[_P, _R]], Callable[_P, _R]]":
    """Decorator: check a public function's arguments against ``table`` on every call
    (`check_params`), before its body runs; the body and what it calls trust them."""
    def decorate(fn: "Callable[_P, _R]") -> "Callable[_P, _R]":
        sig = inspect.signature(fn)
        missing = set(table) - set(sig.parameters)
        if missing:
            raise TypeError(f"{fn.__qualname__}: constraints for unknown parameters "
                            f"{sorted(missing)}")

        @functools.wraps(fn)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            check_params(table, bound.arguments)
            return fn(*args, **kwargs)

        checked.parameter_constraints = table   # type: ignore[attr-defined]
        return checked
    return decorate
