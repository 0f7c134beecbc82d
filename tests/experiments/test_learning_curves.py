"""Figures 4 and 5 (learning curves with private tuning on KDDCup99): the protocol on
synthetic data, and the quick reproduction on the shipped KDDCup99 sample."""
import csv
import math
import os
from pathlib import Path

import numpy as np
import pytest

from dperm.experiments.learning_curves import (
    QUICK,
    _mistakes,
    format_learning_curves,
    lambda_grid,
    learning_curve_splits,
    reproduce_learning_curves,
    run_learning_curves,
    write_learning_curves,
)
from dperm.losses import get_loss
from dperm.privacy.mechanisms import objective_perturbation_constants


def _synthetic(n=6000, d=8, seed=0):
    """Rows of norm <= 1 with a constant feature (an intercept); about 20% positives,
    linearly separable up to 2% label noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None] * 1.5
    X[:, -1] = 0.5
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    w = np.zeros(d)
    w[0], w[-1] = 1.0, -0.3
    y = np.where(X @ w > 0, 1.0, -1.0)
    flip = rng.random(n) < 0.02
    y[flip] = -y[flip]
    return X, y


SMALL = dict(private_sizes=(400, 800), nonprivate_sizes=(2000, None), n_permutations=2, n_runs=4,
             test_size=500, validation_size=500, epsilons=(1.0, 5.0), progress=False)


@pytest.fixture(scope="module")
def small_run():
    X, y = _synthetic()
    return X, y, run_learning_curves(X, y, random_state=3, **SMALL)


def test_lambda_grid_is_the_first_delta_free_half_decades():
    # the grids stated in the module docstring for the full protocol
    np.testing.assert_allclose(np.log10(lambda_grid(0.05, 60000)), [-3, -2.5, -2, -1.5, -1])
    np.testing.assert_allclose(np.log10(lambda_grid(0.01, 60000)), [-2.25, -1.75, -1.25, -0.75, -0.25])
    for eps in (0.01, 0.05, 0.5):
        for n in (10000, 60000, 88000):
            grid = lambda_grid(eps, n)
            assert len(grid) == 5
            np.testing.assert_allclose(np.diff(np.log10(grid)), 0.5)
            for lo in ("logistic", "huber"):
                c = get_loss(lo).curvature(0.5, 1.0)
                eps_p, delta, _ = objective_perturbation_constants(n, grid, eps, c)
                assert np.all(delta == 0) and np.all(eps_p > 0)
            # minimal: a quarter decade lower, the Huber loss would need Delta
            eps_p, delta, _ = objective_perturbation_constants(n, grid[0] / 10**0.25, eps, 1.0)
            assert delta[0] > 0


def test_splits_are_disjoint_and_sized():
    s = learning_curve_splits(10000, (1000, 1500), (4000, None), test_size=1200,
                              validation_size=800, random_state=0)
    assert sorted(s["permutation"].tolist()) == list(range(10000))
    test, val = set(s["test"].tolist()), set(s["validation"].tolist())
    assert len(test) == 1200 and len(val) == 800 and not test & val
    for n, parts in s["parts"].items():
        assert len(parts) == 5
        seen = test | val
        for p in parts:
            assert p.size == n and len(set(p.tolist())) == n
            assert not seen & set(p.tolist())
            seen |= set(p.tolist())
    assert set(s["nonprivate"]) == {4000, 8800}  # None: every row left after the test set
    for n, rows in s["nonprivate"].items():
        assert rows.size == n and not test & set(rows.tolist())
    with pytest.raises(ValueError, match="private_sizes"):
        learning_curve_splits(10000, (1700,), (), test_size=1200, validation_size=800)
    with pytest.raises(ValueError, match="nonprivate_sizes"):
        learning_curve_splits(10000, (), (9000,), test_size=1200, validation_size=800)


def test_mistakes_count_zero_scores():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    W = np.array([[[1.0, -1.0], [-1.0, 1.0]]])
    np.testing.assert_array_equal(_mistakes(W, X, y), [[1, 3]])


def test_small_run_shapes_and_sanity(small_run):
    X, y, res = small_run
    S, P, R = 2, 2, 4
    assert res["private_sizes"] == (400, 800)
    assert res["nonprivate_sizes"] == (2000, X.shape[0] - 500)
    for lo in ("logistic", "huber"):
        for m in ("output", "objective"):
            for e in (1.0, 5.0):
                errs, ch = res["errors"][(lo, m, e)], res["chosen"][(lo, m, e)]
                assert errs.shape == ch.shape == (S, P, R)
                assert np.all((errs >= 0) & (errs <= 1)) and np.all((ch >= 0) & (ch < 5))
                assert res["errors_per_lambda"][(lo, m, e)].shape == (S, P, 5)
                # the selected model's test error is one of its run's candidates' errors
                assert np.all(errs * 500 == np.round(errs * 500))
        none = res["errors"][(lo, "none", None)]
        assert none.shape == (2, P)
        assert none.mean() < res["constant_error"] / 2
        # private at large epsilon learns something too
        assert res["errors"][(lo, "objective", 5.0)].mean() < res["constant_error"]
    assert set(res["lambdas"]) == {1.0, 5.0}
    assert res["nonprivate_lambdas"] == res["lambdas"][5.0]
    assert all(res["solver"][k]["problems"] > 0 for k in ("private", "nonprivate"))
    assert set(res["timings"]) >= {"objective_solves", "output_solves", "nonprivate_solves"}


def test_seed_reproduces(small_run):
    X, y, a = small_run
    b = run_learning_curves(X, y, random_state=3, **SMALL)
    c = run_learning_curves(X, y, random_state=4, **SMALL)
    for k in a["errors"]:
        np.testing.assert_array_equal(a["errors"][k], b["errors"][k])
        np.testing.assert_array_equal(a["chosen"][k], b["chosen"][k])
    assert any(not np.array_equal(a["errors"][k], c["errors"][k]) for k in a["errors"])


def test_sizes_must_fit():
    X, y = _synthetic(n=3000)
    with pytest.raises(ValueError, match="private_sizes"):
        run_learning_curves(X, y, **dict(SMALL, private_sizes=(500,)))


def test_write_and_format(small_run, tmp_path):
    _, _, res = small_run
    csv_path, pngs = write_learning_curves(res, str(tmp_path))
    rows = list(csv.DictReader(Path(csv_path).read_text().splitlines()))
    # per loss: non-private at 2 sizes, 2 methods x 2 epsilons at 2 sizes
    assert len(rows) == 2 * (2 + 2 * 2 * 2)
    assert {r["method"] for r in rows} == {"non-private", "output", "objective"}
    assert all(sum(int(c) for c in r["chosen_counts"].split(";")) ==
               (8 if r["method"] != "non-private" else 2) for r in rows)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert pngs == []
    else:
        assert len(pngs) == 2 and all(os.path.getsize(p) > 1000 for p in pngs)
    text = format_learning_curves(res)
    assert "Figure 4" in text and "Figure 5" in text and "Lambda grid" in text
    assert "2 permutations x 4 runs" in text


@pytest.fixture(scope="module")
def quick_kdd(tmp_path_factory):
    out = tmp_path_factory.mktemp("learning")
    return reproduce_learning_curves(out=str(out), quick=True, progress=False, seed=0)


def test_quick_kddcup99(quick_kdd):
    res, text, csv_path, pngs = quick_kdd
    assert res["quick"] and res["n_total"] == 494021 and res["d"] == 118
    assert res["private_sizes"] == QUICK["private_sizes"]
    assert res["n_runs"] == QUICK["n_runs"] and res["n_permutations"] == 1
    assert abs(res["constant_error"] - 0.2076) < 1e-3
    for lo in ("logistic", "huber"):
        # non-private is far below the constant classifier (about 0.21)
        assert res["errors"][(lo, "none", None)].mean() < 0.05
        for e in (0.01, 0.05):
            for m in ("output", "objective"):
                assert res["errors"][(lo, m, e)].mean() < 0.3
    # objective perturbation beats output perturbation at epsilon = 0.05 (mean over losses
    # and sizes)
    obj = np.mean([res["errors"][(lo, "objective", 0.05)].mean() for lo in res["losses"]])
    out = np.mean([res["errors"][(lo, "output", 0.05)].mean() for lo in res["losses"]])
    assert obj <= out
    assert os.path.exists(csv_path) and "quick protocol" in text
    assert math.isclose(np.log10(res["lambdas"][0.05][0]), -2.25)
