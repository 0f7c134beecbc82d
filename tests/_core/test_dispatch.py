"""Runtime SIMD dispatch (dperm._core): level choice, DPERM_SIMD, and equal results on
every kernel level this CPU can run (each forced in its own process)."""
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dperm
import dperm._core as core

HERE = Path(__file__).resolve().parent
# float64 lanes of each level's kernels (AArch64's baseline is NEON: 2 lanes)
WIDTH = {"baseline": 2 if platform.machine() in ("aarch64", "arm64") else 1, "avx2": 4,
         "avx512": 8}


def _env(level):
    env = dict(os.environ)
    env.pop(core.SIMD_ENV, None)
    if level is not None:
        env[core.SIMD_ENV] = level
    return env


def _python(code, level):
    # run in tests/ (not the checkout's root, where `import dperm` would find the source tree)
    return subprocess.run([sys.executable, "-c", code], env=_env(level), cwd=HERE,
                          capture_output=True, text=True, timeout=300)


def test_choose_level_picks_the_best_built_and_supported():
    all3 = ("baseline", "avx2", "avx512")
    assert core.choose_level(all3, all3) == "avx512"
    assert core.choose_level(all3, ("baseline", "avx2")) == "avx2"
    assert core.choose_level(all3, ("baseline",)) == "baseline"
    assert core.choose_level(("baseline",), all3) == "baseline"
    assert core.choose_level(("native",), ("baseline",)) == "native"
    assert core.choose_level(all3, all3, forced="avx2") == "avx2"
    assert core.choose_level(all3, all3, forced="") == "avx512"


@pytest.mark.parametrize("forced, built, cpu, words", [
    ("avx1024", ("baseline",), ("baseline",), "unknown kernel level"),
    ("avx512", ("baseline", "avx2", "avx512"), ("baseline", "avx2"), "does not support"),
    ("avx2", ("native",), ("baseline", "avx2"), "no such kernel level"),
])
def test_choose_level_refuses_what_cannot_run(forced, built, cpu, words):
    with pytest.raises(ImportError, match=words) as err:
        core.choose_level(built, cpu, forced=forced)
    assert "DPERM_SIMD" in str(err.value)


def test_the_level_in_use_is_reported():
    cfg = dperm.get_config()
    assert cfg["simd"] == core.level
    assert cfg["simd_built"] == list(core.built_levels)
    assert cfg["simd_cpu"] == list(core.cpu_levels)
    assert "baseline" in core.cpu_levels
    if core.level in WIDTH:
        assert cfg["simd_vector_width"] == WIDTH[core.level]
    if not os.environ.get(core.SIMD_ENV) and core.built_levels != ("native",):
        usable = [lv for lv in core.LEVELS if lv in core.built_levels and lv in core.cpu_levels]
        assert core.level == usable[-1]


def test_a_bad_environment_value_fails_import_clearly():
    r = _python("import dperm", "sse9")
    assert r.returncode != 0
    assert "DPERM_SIMD='sse9': unknown kernel level" in r.stderr


def _runnable_levels():
    return [lv for lv in core.LEVELS if lv in core.built_levels and lv in core.cpu_levels]


@pytest.mark.skipif(len(_runnable_levels()) < 2, reason="one kernel level runs here")
def test_every_level_gives_the_same_results(tmp_path):
    """Value, gradient, Hessian-vector products (dense/CSR, float32/64, 1 and 2 threads,
    three losses, the intercept column), batched fits and a multinomial fit: every
    level equal to the baseline within 1e-12 relative (of the array's largest entry)."""
    out = {}
    for lv in _runnable_levels():
        path = tmp_path / f"{lv}.npz"
        r = subprocess.run([sys.executable, str(HERE / "_dispatch_probe.py"), str(path)],
                           env=_env(lv), cwd=HERE, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        out[lv] = dict(np.load(path))
        # the forced level really ran: a dispatcher that ignored DPERM_SIMD fails here
        assert str(out[lv]["level"]) == lv
        assert int(out[lv]["width"]) == WIDTH[lv]
    ref = out["baseline"]
    keys = [k for k in ref if k not in ("level", "width")]
    assert len(keys) > 100
    for lv, res in out.items():
        assert sorted(res) == sorted(ref)
        for k in keys:
            scale = max(np.abs(ref[k]).max(), 1e-300)
            rel = np.abs(res[k] - ref[k]).max() / scale
            assert rel <= 1e-12, f"{lv} vs baseline, {k}: {rel:.2e}"


def test_the_version_has_one_source():
    """meson.build's project() version is the package's (pyproject reads it as dynamic)."""
    import re
    from importlib.metadata import version

    assert dperm.__version__ == version("dperm")
    meson = HERE.parents[1] / "meson.build"
    if meson.exists():   # a source checkout (not a test run against an installed wheel)
        declared = re.search(r"version:\s*'([^']+)'", meson.read_text()).group(1)
        assert dperm.__version__ == declared
        assert "version =" not in (HERE.parents[1] / "pyproject.toml").read_text().split(
            "[project]")[1].split("[")[0]
