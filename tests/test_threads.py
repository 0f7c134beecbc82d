"""Threads on a busy machine (issue 29, item 7): each pass runs its parts with at most
the free cores, and the result never depends on that team (only on n_threads)."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

import dperm
from dperm.data import validation


@pytest.mark.parametrize("cores, load, own, free", [
    (2, 7.0, 0.0, 1),      # the machine: load 7 on 2 cores -> one thread
    (2, 0.2, 0.0, 2),      # idle: every core
    (16, 4.0, 0.0, 12),    # four busy processes beside
    (2, 2.1, 2.0, 2),      # the load is this process's own work: still every core
    (4, 3.4, 0.0, 1),
    (4, 50.0, 0.0, 1),     # never below 1
])
def test_free_cores(cores, load, own, free):
    assert validation.free_cores(cores, load, own) == free


def test_own_share_of_the_load_is_measured():
    validation._OWN.update(prev=None, cur=None)
    assert validation._own_load(100.0, 5.0) == 0.0          # first sample: no window yet
    assert validation._own_load(110.0, 25.0) == pytest.approx(2.0)   # two cores busy
    assert validation._own_load(135.0, 75.0) == pytest.approx(2.0)   # a new window starts
    # measured from the previous window's start (100 s, 5 s of CPU): 70 s of CPU in 50 s
    assert validation._own_load(150.0, 75.0) == pytest.approx(1.4)
    validation._OWN.update(prev=None, cur=None)


def test_load_aware_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv(validation.LOAD_AWARE_ENV, raising=False)
    assert validation.team_limit() == 0
    monkeypatch.setenv(validation.LOAD_AWARE_ENV, "0")
    assert validation.team_limit() == 0
    monkeypatch.setenv(validation.LOAD_AWARE_ENV, "1")
    assert 1 <= validation.team_limit() <= validation.default_threads()
    assert "team_limit" in dperm.get_config()


def test_the_limit_is_refreshed_at_most_every_half_second(monkeypatch):
    calls = []
    monkeypatch.setattr(validation, "team_limit", lambda: calls.append(1) or 1)
    monkeypatch.setitem(validation._TEAM, "t", -np.inf)
    for _ in range(50):
        validation.check_n_threads(None)
    assert len(calls) == 1
    monkeypatch.setitem(validation._TEAM, "t", -np.inf)


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_the_team_never_changes_the_result(monkeypatch, kind):
    """Parts are set by n_threads and the data's shape and summed in order: a fit run by
    a team of one (a busy machine) is bit for bit the fit run by a full team."""
    rng = np.random.default_rng(0)
    n, d = 40_000, 12                       # n d / 65536 >= 4 parts for n_threads=4
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    A = sp.csr_array(np.where(np.abs(X) > 0.3, X, 0.0)) if kind == "csr" else X
    if kind == "csr":
        A = sp.csr_array(sp.vstack([A] * 6))      # enough non-zeros for 4 parts
        y = np.tile(y, 6)
    out = []
    for limit in (0, 1, 3):
        monkeypatch.setattr(validation, "team_limit", lambda limit=limit: limit)
        monkeypatch.setitem(validation._TEAM, "t", -np.inf)     # refresh now
        res = dperm.erm.minimize(A, y, alpha=1e-3, n_threads=4)
        out.append(np.asarray(res.coef))
    from dperm._core._objective import set_team_limit
    set_team_limit(0)
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


@pytest.mark.parametrize("environ, requested, described", [
    ({}, "PASSIVE", "passive"),
    ({"DPERM_OMP_WAIT_POLICY": "active"}, "ACTIVE", "active"),
    ({"DPERM_OMP_WAIT_POLICY": " Default "}, None, "the OpenMP runtime's default"),
    ({"OMP_WAIT_POLICY": "active"}, None, "OMP_WAIT_POLICY=active (yours)"),
    ({"GOMP_SPINCOUNT": "1000", "DPERM_OMP_WAIT_POLICY": "passive"}, None,
     "GOMP_SPINCOUNT=1000 (yours)"),
])
def test_the_wait_policy_the_runtime_starts_with(environ, requested, described):
    from dperm import _core
    assert _core._wait_policy_to_request(environ) == requested
    assert _core._describe_wait_policy(environ, requested) == described


def test_an_unknown_wait_policy_is_refused():
    from dperm import _core
    with pytest.raises(ImportError, match="DPERM_OMP_WAIT_POLICY='sleepy'"):
        _core._wait_policy_to_request({"DPERM_OMP_WAIT_POLICY": "sleepy"})


@pytest.mark.parametrize("setting, spins", [(None, "0"), ("default", "300000")])
def test_the_wait_policy_reaches_the_runtime_and_leaves_the_environment(tmp_path, setting,
                                                                         spins):
    """libgomp reads OMP_WAIT_POLICY when it loads: dperm sets it for that moment only.
    OMP_DISPLAY_ENV=verbose makes the runtime print what it read; a passive policy shows
    as a spin count of 0 (the runtime's own default, the second case, spins 300000 times:
    the check would fail if dperm's setting did not reach the runtime)."""
    import subprocess
    import sys

    code = ("import os, dperm, dperm._core as c; "
            "print('LEFT', os.environ.get('OMP_WAIT_POLICY')); print('CONF', c.wait_policy)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "DPERM_OMP_WAIT_POLICY")}
    env["OMP_DISPLAY_ENV"] = "verbose"
    if setting is not None:
        env["DPERM_OMP_WAIT_POLICY"] = setting
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "LEFT None" in text
    assert ("CONF passive" if setting is None else "CONF the OpenMP runtime's default") in text
    if "GOMP_SPINCOUNT = '" not in text:
        pytest.skip("the OpenMP runtime does not display its spin count (not libgomp)")
    # several runtimes may display (e.g. scikit-learn's own copy): one of them is dperm's
    assert f"GOMP_SPINCOUNT = '{spins}'" in text, text
