"""Build and runtime configuration (dperm.show_config)."""
from __future__ import annotations

import platform

from dperm.data.validation import default_threads, team_limit

__all__ = ["get_config", "show_config"]


def get_config() -> dict:
    """The build and runtime configuration.

    Returns
    -------
    dict
        version, whether the kernels were built with OpenMP, threads a fit uses, and the
        SIMD kernel level in use (with the levels built and those this CPU runs).

    Examples
    --------
    >>> import dperm
    >>> config = dperm.get_config()
    >>> config["version"] == dperm.__version__
    True
    >>> config["simd"] in config["simd_built"]
    True
    """
    import numpy as np

    from dperm import _core
    from dperm._core import _build_info
    from dperm._core._objective import max_threads, openmp_enabled, vector_width

    omp = openmp_enabled()
    return {
        "version": __import__("dperm").__version__,
        "openmp": omp,
        "openmp_built": bool(_build_info.OPENMP_BUILT),
        "openmp_max_threads": max_threads(),
        # a fit with n_threads=None splits each pass into one part per core the process
        # may run on (the result depends on this number only) ...
        "default_n_threads": default_threads() if omp else 1,
        # ... and runs the parts with at most this many threads now (0: all at once, the
        # default; DPERM_LOAD_AWARE=1: the cores other processes leave free)
        "team_limit": team_limit() if omp else 1,
        # how idle team mates wait at a pass's barrier (DPERM_OMP_WAIT_POLICY)
        "omp_wait_policy": _core.wait_policy if omp else None,
        # the kernel level chosen at import (DPERM_SIMD forces a lower one)
        "simd": _core.level,
        "simd_vector_width": vector_width(),
        "simd_built": list(_core.built_levels),
        "simd_cpu": list(_core.cpu_levels),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def show_config() -> None:
    """Print the configuration returned by `get_config`, one ``key: value`` per line.

    Returns
    -------
    None

    Examples
    --------
    >>> import dperm
    >>> dperm.show_config()  # doctest: +ELLIPSIS
                 version: ...
    """
    for key, value in get_config().items():
        print(f"{key:>20}: {value}")
