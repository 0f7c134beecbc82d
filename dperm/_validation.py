"""Every input check shared by dperm's entry points.

Each check raises ValueError (or TypeError for a wrong kind of object) whose
message starts with the parameter's name, and returns a clean copy or view;
nothing here mutates its input.
"""
import numbers
import os

import numpy as np

__all__ = [
    "check_X", "check_pm1_labels", "check_positive", "check_alpha", "check_epsilon",
    "check_random_state", "check_n_threads", "apply_norm_bound", "check_choice",
    "fresh_generator", "is_fixed_seed", "spawn_generator",
]


def _is_sparse(X):
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        return False
    return sp.issparse(X)


def check_X(X, *, name="X", min_samples=1):
    """2-D finite array of float32 or float64, C-contiguous.

    float32 input stays float32 (the kernels read it directly and accumulate
    in float64); every other numeric dtype is converted to float64.  Sparse
    matrices are refused for now.
    """
    if _is_sparse(X):
        raise TypeError(f"{name}: sparse input is not supported yet; pass a dense array "
                        f"(e.g. {name}.toarray())")
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
    if arr.ndim != 2:
        hint = (" Reshape your data either using array.reshape(-1, 1) if your data has a "
                "single feature or array.reshape(1, -1) if it contains a single sample."
                if arr.ndim == 1 else "")
        raise ValueError(f"{name}: expected a 2-D array (n_samples, n_features), "
                         f"got shape {arr.shape}.{hint}")
    n, d = arr.shape
    if n < min_samples:
        raise ValueError(f"{name}: needs at least {min_samples} samples; found array with "
                         f"{n} sample(s) (shape={arr.shape}) while a minimum of "
                         f"{min_samples} is required.")
    if d < 1:
        raise ValueError(f"{name}: needs at least 1 feature; found array with 0 feature(s) "
                         f"(shape={arr.shape}) while a minimum of 1 is required.")
    dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: contains NaN or infinity")
    return arr


def check_pm1_labels(y, n, *, name="y"):
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


def check_positive(value, name, *, allow_inf=False):
    """A real number > 0 (finite unless allow_inf)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: must be a positive number, got {value!r}")
    value = float(value)
    if np.isnan(value) or value <= 0 or (np.isinf(value) and not allow_inf):
        raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
    return value


def check_epsilon(epsilon, name="epsilon"):
    """Privacy parameter: a finite number > 0."""
    return check_positive(epsilon, name)


def check_alpha(alpha, name="alpha"):
    """Regularization strength(s): a scalar or a 1-D sequence of positive numbers.

    Returns (values as a 1-D float64 array, whether alpha was a scalar).
    """
    if np.ndim(alpha) == 0:
        return np.array([check_positive(alpha if not isinstance(alpha, np.ndarray) else alpha.item(), name)]), True
    arr = np.asarray(alpha)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: must be a positive number or a non-empty 1-D sequence, got shape {arr.shape}")
    vals = np.array([check_positive(a.item() if hasattr(a, "item") else a, name) for a in arr])
    return vals, False


def check_random_state(random_state, name="random_state"):
    """A numpy Generator.

    None gives a fresh generator seeded from OS entropy (the default for every
    private fit); an int seeds a reproducible one; a Generator is used as is.
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


def fresh_generator():
    """The randomness policy, in one place: a new generator seeded from OS entropy.

    Never derived from numpy's global state (which a script may have seeded), so
    two processes, or two fits in one process, never share noise.
    """
    return np.random.default_rng()


def is_fixed_seed(random_state):
    """True for an int seed or a legacy RandomState: whoever knows it can regenerate the noise."""
    return (isinstance(random_state, (numbers.Integral, np.integer, np.random.RandomState))
            and not isinstance(random_state, bool))


def spawn_generator(rng):
    """An independent child stream of a numpy Generator (advances the parent).

    Clones and repeated fits that hold the same Generator each draw from their
    own child, never from copies of one state.
    """
    try:
        return rng.spawn(1)[0]
    except (TypeError, AttributeError):  # a bit generator without a SeedSequence
        return np.random.default_rng(rng.integers(0, 2**63 - 1, size=4))


def default_threads():
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_n_threads(n_threads, name="n_threads"):
    """None (all available cores), or an int >= 1; -1 also means all cores."""
    if n_threads is None or n_threads == -1:
        return default_threads()
    if isinstance(n_threads, bool) or not isinstance(n_threads, (numbers.Integral, np.integer)) or n_threads < 1:
        raise ValueError(f"{name}: must be None, -1 or an integer >= 1, got {n_threads!r}")
    return int(n_threads)


def check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; choose one of {sorted(choices)}")
    return value


def apply_norm_bound(X, data_norm, norm_policy, *, name="X", return_clipped=False):
    """Enforce the public row-norm bound ||x_i|| <= data_norm.

    "clip" rescales rows over the bound onto the sphere of radius data_norm (a
    map that does not depend on the other rows, so privacy holds); "error"
    refuses such rows.  Returns a new array only when something changed (and,
    with return_clipped, the number of rows clipped: a statistic of the data,
    for the analyst only).
    """
    check_choice(norm_policy, "norm_policy", {"clip", "error"})
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
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
    out = X.copy()
    out[over] *= (data_norm / norms[over])[:, None].astype(X.dtype)
    # rounding in float32 can leave a row a hair above R; shrink it by one ulp
    n2 = np.sqrt(np.einsum("ij,ij->i", out[over], out[over], dtype=np.float64))
    fix = n2 > data_norm
    if fix.any():
        rows = np.flatnonzero(over)[fix]
        out[rows] *= np.asarray(data_norm / n2[fix] * (1 - 4 * np.finfo(X.dtype).eps), dtype=X.dtype)[:, None]
    return (out, int(bad.sum())) if return_clipped else out
