"""Compiled kernels of dperm: arithmetic only, no validation or policy.

The kernel modules ``_objective`` and ``_lbfgs`` are built once per instruction-set
level, each level in its own subpackage (``_baseline``, ``_avx2``, ``_avx512``; or
``_native`` in a -Dnative_arch=true build).  Importing this package picks the best
level that was built and that this CPU supports, and installs its modules as
``dperm._core._objective`` and ``dperm._core._lbfgs``: the rest of the package, and
the Cython cimport between the two modules, never name a level.

``DPERM_SIMD=baseline|avx2|avx512`` (environment, read once at import) forces a
level, for testing the paths against each other; a level this CPU cannot run or the
build lacks is refused with ImportError rather than crashing on an illegal instruction.
"""
import importlib
import os
import sys

try:
    from dperm._core import _build_info
    from dperm._core._cpu import supported_levels
except ImportError as exc:   # the meson build writes _build_info.py and compiles _cpu
    raise ImportError(
        f"dperm: the compiled core is missing from {os.path.dirname(__file__)}: this is "
        "dperm's source tree, not a build. Install it (pip install .) and import it from "
        "another directory.") from exc

__all__ = ["LEVELS", "SIMD_ENV", "WAIT_POLICY_ENV", "choose_level", "level", "built_levels",
           "cpu_levels", "wait_policy"]

#: every level name, lowest first ("native" is a build of its own and outranks none)
LEVELS = ("baseline", "avx2", "avx512")
SIMD_ENV = "DPERM_SIMD"
#: environment variable: the OpenMP wait policy the kernels' runtime starts with when the
#: user has set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT: "passive" (the default),
#: "active", or "default" (leave the runtime's own: spin a while, then sleep)
WAIT_POLICY_ENV = "DPERM_OMP_WAIT_POLICY"


def choose_level(built, supported, forced=None):
    """The kernel level to load: `forced` if given (validated), else the highest level
    in both `built` and `supported`.  A native build (`built` == ("native",)) is taken
    as it is: it was compiled for this machine's CPU."""
    built = tuple(built)
    if forced is not None and forced != "":
        if forced not in LEVELS + ("native",):
            raise ImportError(f"{SIMD_ENV}={forced!r}: unknown kernel level; use one of "
                              f"{', '.join(LEVELS)} (or unset it for the best available)")
        if forced not in built:
            raise ImportError(f"{SIMD_ENV}={forced!r}: this build of dperm has no such kernel "
                              f"level (built: {', '.join(built)})")
        if forced != "native" and forced not in supported:
            raise ImportError(f"{SIMD_ENV}={forced!r}: this CPU does not support it "
                              f"(supported: {', '.join(supported)})")
        return forced
    if built == ("native",):
        return "native"
    usable = [lv for lv in LEVELS if lv in built and lv in supported]
    if not usable:
        raise ImportError(f"dperm: no kernel level of this build runs on this CPU "
                          f"(built: {', '.join(built)}; CPU: {', '.join(supported)})")
    return usable[-1]


built_levels = tuple(_build_info.KERNEL_LEVELS)
cpu_levels = supported_levels()
#: the kernel level in use in this process
level = choose_level(built_levels, cpu_levels, os.environ.get(SIMD_ENV))



def _wait_policy_to_request(environ):
    """The OMP_WAIT_POLICY to give the OpenMP runtime while it loads, or None to leave it.

    Team mates that finished their part of a pass wait at the barrier.  By default
    libgomp spins there first; on a machine whose cores are taken by other work a spinning
    thread steals the core that a descheduled team mate needs, and every pass waits for
    the slowest.  Sleeping ("passive") costs about 5 % on an idle 16-core machine and
    makes fits 3-6x faster on a loaded one (BENCHMARKS.md, "Threads on a busy machine";
    benchmarks/under_load.py).  A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return None
    wanted = environ.get(WAIT_POLICY_ENV, "passive").strip().lower()
    if wanted == "default":
        return None
    if wanted not in ("passive", "active"):
        raise ImportError(f"{WAIT_POLICY_ENV}={wanted!r}: use passive, active or default "
                          "(or unset it for passive)")
    return wanted.upper()


def _describe_wait_policy(environ, requested):
    if requested is not None:
        return requested.lower()
    if "OMP_WAIT_POLICY" in environ:
        return f"OMP_WAIT_POLICY={environ['OMP_WAIT_POLICY']} (yours)"
    if "GOMP_SPINCOUNT" in environ:
        return f"GOMP_SPINCOUNT={environ['GOMP_SPINCOUNT']} (yours)"
    return "the OpenMP runtime's default"


# The OpenMP runtime reads its environment once, when the first kernel module loads it:
# set the wait policy for that moment only, so that nothing else in the process (nor a
# child process) inherits dperm's choice.  (A runtime some other package loaded earlier
# under the same name keeps its own setting.)
_requested = _wait_policy_to_request(os.environ)
#: the OpenMP wait policy requested for the kernels' runtime (dperm.get_config)
wait_policy = _describe_wait_policy(os.environ, _requested)
if _requested is not None:
    os.environ["OMP_WAIT_POLICY"] = _requested
try:
    for _name in ("_objective", "_lbfgs"):   # _lbfgs cimports _objective: that one first
        _module = importlib.import_module(f"{__name__}._{level}.{_name}")
        sys.modules[f"{__name__}.{_name}"] = _module
        globals()[_name] = _module
finally:
    if _requested is not None:
        os.environ.pop("OMP_WAIT_POLICY", None)
del _name, _module, _requested
