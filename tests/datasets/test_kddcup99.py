import math
import os
import shutil
import warnings

import numpy as np
import pytest

from dperm.datasets import (
    KDDCUP99_COLUMNS,
    KDDCUP99_DOS_LABELS,
    KDDCUP99_NUMERIC_COLUMNS,
    KDDCUP99_PUBLIC_BOUNDS,
    KDDCUP99_PUBLIC_CATEGORIES,
    KDDCUP99_SYMBOLIC_COLUMNS,
    Bunch,
    DataChecksumError,
    _kddcup99,
    encode_public,
    load_kddcup99,
)
from dperm.exceptions import PrivacyLeakWarning
from dperm.optim.erm import minimize

N = 494021
N_POS = 102563  # not a DoS attack


def _norms(X):
    return np.linalg.norm(X, axis=1)


@pytest.fixture(scope="module")
def public():
    return load_kddcup99(return_feature_names=True)


@pytest.fixture(scope="module")
def paper():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load_kddcup99("paper", return_feature_names=True)


def test_constants():
    assert len(KDDCUP99_COLUMNS) == 41
    assert KDDCUP99_SYMBOLIC_COLUMNS == ("protocol_type", "service", "flag")
    assert len(KDDCUP99_NUMERIC_COLUMNS) == 38
    assert set(KDDCUP99_NUMERIC_COLUMNS) | set(KDDCUP99_SYMBOLIC_COLUMNS) == set(KDDCUP99_COLUMNS)
    assert tuple(KDDCUP99_PUBLIC_BOUNDS) == KDDCUP99_NUMERIC_COLUMNS
    assert all(b > 0 and math.isfinite(b) for b in KDDCUP99_PUBLIC_BOUNDS.values())
    assert KDDCUP99_PUBLIC_BOUNDS["count"] == 511
    assert KDDCUP99_PUBLIC_BOUNDS["dst_host_count"] == 255
    assert KDDCUP99_PUBLIC_BOUNDS["serror_rate"] == 1 and KDDCUP99_PUBLIC_BOUNDS["land"] == 1
    assert [len(KDDCUP99_PUBLIC_CATEGORIES[c]) for c in KDDCUP99_SYMBOLIC_COLUMNS] == [3, 70, 11]
    assert set(KDDCUP99_DOS_LABELS) == {"back", "land", "neptune", "pod", "smurf", "teardrop"}
    with pytest.raises(TypeError):
        KDDCUP99_PUBLIC_BOUNDS["count"] = 1.0


def test_public_shape_labels_and_dtypes(public):
    X, y, names = public
    assert X.shape == (N, 122)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert len(names) == 122 and len(set(names)) == 122
    assert names[:38] == list(KDDCUP99_NUMERIC_COLUMNS)
    assert names[38:41] == ["protocol_type=tcp", "protocol_type=udp", "protocol_type=icmp"]
    assert y.dtype == np.int64 and set(np.unique(y)) == {-1, 1}
    assert (y == 1).sum() == N_POS
    assert abs((y == 1).mean() - 0.2076) < 0.001


def test_public_row_norms_and_range(public):
    X, _, _ = public
    assert _norms(X).max() <= 1.0
    assert X.min() >= 0.0
    # Every coordinate is at most 1 / sqrt(41) (38 numeric columns + 3 groups).
    assert X.max() <= 1 / math.sqrt(41) * (1 + 1e-12)
    # One 1 per one-hot group: every value of the file is in the public lists.
    np.testing.assert_allclose(X[:, 38:].sum(axis=1) * math.sqrt(41), 3.0, rtol=1e-12)


def test_public_first_row_by_hand(public):
    # 0,tcp,http,SF,181,5450,0,0,0,0,0,1,...,8,8,0.00,...,1.00,...,9,9,1.00,0.00,0.11,...
    X, _, names = public
    col = {n: k for k, n in enumerate(names)}
    s = math.sqrt(41)
    x = X[0] * s
    assert x[col["src_bytes"]] == pytest.approx(math.log1p(181) / math.log1p(1e9), rel=1e-12)
    assert x[col["dst_bytes"]] == pytest.approx(math.log1p(5450) / math.log1p(1e9), rel=1e-12)
    assert x[col["count"]] == pytest.approx(8 / 511, rel=1e-12)
    assert x[col["dst_host_count"]] == pytest.approx(9 / 255, rel=1e-12)
    assert x[col["dst_host_same_src_port_rate"]] == pytest.approx(0.11, rel=1e-12)
    assert x[col["logged_in"]] == pytest.approx(1.0, rel=1e-12)
    for name in ("protocol_type=tcp", "service=http", "flag=SF"):
        assert x[col[name]] == pytest.approx(1.0, rel=1e-12)
    # src/dst bytes, logged_in, count, srv_count, same_srv_rate, four dst_host_* values
    # and the three one-hot ones.
    assert np.count_nonzero(x) == 13


def test_dos_labels_and_frame():
    b = load_kddcup99(return_frame=True, n_samples=30000, random_state=3)
    assert isinstance(b, Bunch)
    assert b.data.shape == (30000, 122) and b.frame.shape == (30000,)
    assert b.frame.dtype.names == KDDCUP99_COLUMNS + ("label",)
    dos = np.isin(b.frame["label"], KDDCUP99_DOS_LABELS)
    np.testing.assert_array_equal(b.target, np.where(dos, -1, 1))
    assert {"smurf", "neptune"} <= set(b.frame["label"][dos]) <= set(KDDCUP99_DOS_LABELS)
    assert "normal" in set(b.frame["label"])
    assert not any(s.endswith(".") for s in b.frame["label"])
    # Every DoS label occurs in the file and is the only source of y = -1.
    tab = _kddcup99._table(_kddcup99.DATA_DIR)
    assert set(KDDCUP99_DOS_LABELS) <= set(tab.label_levels)
    assert {s for s, v in zip(tab.label_levels, tab.sign) if v == -1} == set(KDDCUP99_DOS_LABELS)
    assert len(tab.label_levels) == 23
    # Symbolic values of the file are all in the public lists (66 of the 70 services).
    assert len(tab.levels[1]) == 66
    for j, c in enumerate(KDDCUP99_SYMBOLIC_COLUMNS):
        assert set(tab.levels[j]) <= set(KDDCUP99_PUBLIC_CATEGORIES[c])


def test_public_mode_reads_nothing_from_the_data(public):
    X, y, names = public
    b = load_kddcup99(return_frame=True, n_samples=2000, random_state=7)
    # A subset's encoding is the full encoding restricted to those rows ...
    np.testing.assert_array_equal(b.data, X[b.row_indices])
    np.testing.assert_array_equal(b.target, y[b.row_indices])
    assert b.feature_names == names
    # ... and the encoding of those rows alone by encode_public with the public spec.
    cols, bounds = {}, {}
    for c in KDDCUP99_NUMERIC_COLUMNS:
        B = KDDCUP99_PUBLIC_BOUNDS[c]
        if c in _kddcup99._LOG_SCALED:
            cols[c], bounds[c] = np.log1p(b.frame[c]), math.log1p(B)
        else:
            cols[c], bounds[c] = b.frame[c], B
    for c in KDDCUP99_SYMBOLIC_COLUMNS:
        cols[c] = b.frame[c]
    Z, znames = encode_public(cols, bounds, KDDCUP99_PUBLIC_CATEGORIES)
    assert znames == names
    np.testing.assert_allclose(Z, b.data, rtol=0, atol=1e-15)


def test_paper_warns():
    with pytest.warns(PrivacyLeakWarning, match="public"):
        load_kddcup99("paper", n_samples=10, random_state=0)


def test_paper_shape_scaling_and_norms(paper, public):
    X, y, names = paper
    assert X.shape == (N, 118) and len(set(names)) == 118
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert names[:38] == list(KDDCUP99_NUMERIC_COLUMNS)
    assert set(names) <= set(public[2])
    assert sum(n.startswith("service=") for n in names) == 66
    np.testing.assert_array_equal(y, public[1])
    n = _norms(X)
    assert n.max() <= 1.0
    # Three one-hot ones give norm >= sqrt(3) before the last step: every row is projected.
    np.testing.assert_allclose(n, 1.0, atol=1e-12)
    # Undo the projection with the protocol group (a 1 before it): column maxima are 1,
    # except the two columns that are zero throughout this sample.
    pre = X / X[:, 38:41].sum(axis=1, keepdims=True)
    colmax = pre.max(axis=0)
    zero = [names[k] for k in np.flatnonzero(colmax == 0)]
    assert zero == ["num_outbound_cmds", "is_host_login"]
    np.testing.assert_allclose(np.delete(colmax, np.flatnonzero(colmax == 0)), 1.0, rtol=1e-12)


def test_n_samples_reproducible(public):
    X1, y1 = load_kddcup99(n_samples=5000, random_state=11)
    X2, y2 = load_kddcup99(n_samples=5000, random_state=11)
    X3, _ = load_kddcup99(n_samples=5000, random_state=12)
    assert X1.shape == (5000, 122) and y1.shape == (5000,)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)
    b = load_kddcup99(return_frame=True, n_samples=5000, random_state=np.random.default_rng(11))
    np.testing.assert_array_equal(b.data, X1)
    r = b.row_indices
    assert r.size == np.unique(r).size == 5000 and r.min() >= 0 and r.max() < N
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        Xp, yp = load_kddcup99("paper", n_samples=5000, random_state=11)
    assert Xp.shape == (5000, 118)
    np.testing.assert_array_equal(yp, y1)


def test_returns_writable_copies():
    X, y, names = load_kddcup99(n_samples=100, random_state=0, return_feature_names=True)
    assert X.flags.writeable and y.flags.writeable
    X0, y0 = X.copy(), y.copy()
    X[:] = 7.0
    y[:] = 0
    names.append("junk")
    X1, y1, names1 = load_kddcup99(n_samples=100, random_state=0, return_feature_names=True)
    np.testing.assert_array_equal(X1, X0)
    np.testing.assert_array_equal(y1, y0)
    assert "junk" not in names1
    b = load_kddcup99(return_frame=True, n_samples=100, random_state=0)
    b.frame["duration"][:] = -1
    b.row_indices[:] = 0
    b2 = load_kddcup99(return_frame=True, n_samples=100, random_state=0)
    assert b2.frame["duration"].min() >= 0 and b2.row_indices.max() > 0


def _copy_data(tmp_path):
    src = os.path.join(_kddcup99.DATA_DIR, _kddcup99._FILE)
    dst = tmp_path / _kddcup99._FILE
    shutil.copyfile(src, dst)
    return dst


def test_checksum_mismatch_raises(tmp_path, monkeypatch):
    dst = _copy_data(tmp_path)
    data = bytearray(dst.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dst.write_bytes(bytes(data))
    monkeypatch.setattr(_kddcup99, "DATA_DIR", str(tmp_path))
    with pytest.raises(DataChecksumError, match="SHA-256"):
        load_kddcup99()


def test_expected_hash_mismatch_raises(tmp_path, monkeypatch):
    _copy_data(tmp_path)
    monkeypatch.setitem(_kddcup99._SHA256, _kddcup99._FILE, "0" * 64)
    with pytest.raises(DataChecksumError, match="corrupted"):
        _kddcup99._table(str(tmp_path))


def test_missing_file_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(_kddcup99, "DATA_DIR", str(tmp_path))
    with pytest.raises(DataChecksumError, match="cannot read"):
        load_kddcup99(n_samples=10, random_state=0)


@pytest.mark.parametrize("kwargs, name", [
    ({"preprocess": "raw"}, "preprocess"),
    ({"preprocess": None}, "preprocess"),
    ({"return_frame": 1}, "return_frame"),
    ({"return_feature_names": "yes"}, "return_feature_names"),
    ({"n_samples": 0}, "n_samples"),
    ({"n_samples": -5}, "n_samples"),
    ({"n_samples": N + 1}, "n_samples"),
    ({"n_samples": 10.0}, "n_samples"),
    ({"n_samples": True}, "n_samples"),
    ({"n_samples": 10, "random_state": "seed"}, "random_state"),
    ({"n_samples": 10, "random_state": -1}, "random_state"),
    ({"random_state": 0}, "random_state"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        load_kddcup99(**kwargs)


def test_nonprivate_logistic_fit_beats_constant():
    X, y = load_kddcup99(n_samples=20000, random_state=0)
    Xi = np.hstack([X, np.ones((X.shape[0], 1))])
    res = minimize(Xi, y.astype(np.float64), alpha=1e-6)
    err = np.mean(np.where(Xi @ res.coef >= 0, 1, -1) != y)
    const = min(np.mean(y == 1), np.mean(y == -1))
    assert abs(const - 0.208) < 0.01
    assert err < 0.02


# ---------------------------------------------------------------- target="five_class"
N_FIVE = {0: 97278, 1: 391458, 2: 4107, 3: 1126, 4: 52}  # normal, DoS, probe, R2L, U2R


def test_attack_categories_constant():
    cats = _kddcup99.KDDCUP99_ATTACK_CATEGORIES
    names = _kddcup99.KDDCUP99_FIVE_CLASS_NAMES
    assert names == ("normal", "dos", "probe", "r2l", "u2r")
    assert len(cats) == 23 and cats["normal"] == "normal"
    assert {s for s, c in cats.items() if c == "dos"} == set(KDDCUP99_DOS_LABELS)
    assert {s for s, c in cats.items() if c == "probe"} == {"ipsweep", "nmap", "portsweep", "satan"}
    assert {s for s, c in cats.items() if c == "u2r"} == {
        "buffer_overflow", "loadmodule", "perl", "rootkit"}
    assert sum(c == "r2l" for c in cats.values()) == 8
    # every label of the file is mapped
    tab = _kddcup99._table(_kddcup99.DATA_DIR)
    assert set(tab.label_levels) == set(cats)
    with pytest.raises(TypeError):
        cats["normal"] = "dos"


def test_five_class_counts(public):
    X, y = load_kddcup99(target="five_class")
    assert y.dtype == np.int64 and y.shape == (N,)
    counts = np.bincount(y, minlength=5)
    assert counts.size == 5 and counts.sum() == N
    assert dict(enumerate(counts.tolist())) == N_FIVE
    assert (counts > 0).all()
    # the rows are the default's; the binary task is the DoS class against the rest
    np.testing.assert_array_equal(X, public[0])
    np.testing.assert_array_equal(y == 1, public[1] == -1)


def test_five_class_frame_and_subset():
    b = load_kddcup99(return_frame=True, n_samples=30000, random_state=3, target="five_class")
    assert b.target_names == ["normal", "dos", "probe", "r2l", "u2r"]
    cats = _kddcup99.KDDCUP99_ATTACK_CATEGORIES
    expect = [b.target_names.index(cats[s]) for s in b.frame["label"]]
    np.testing.assert_array_equal(b.target, expect)
    assert set(np.unique(b.target)) >= {0, 1, 2, 3}
    d = load_kddcup99(return_frame=True, n_samples=30000, random_state=3)
    np.testing.assert_array_equal(b.data, d.data)
    np.testing.assert_array_equal(b.row_indices, d.row_indices)


def test_default_target_unchanged(public):
    X, y, names = load_kddcup99(target="dos", return_feature_names=True)
    np.testing.assert_array_equal(X, public[0])
    np.testing.assert_array_equal(y, public[1])
    assert (y == 1).sum() == N_POS
    assert "target_names" not in load_kddcup99(return_frame=True, n_samples=10, random_state=0)


def test_five_class_unknown_label_raises():
    with pytest.raises(DataChecksumError, match="teleport"):
        _kddcup99._five_class_codes(("normal", "smurf", "teleport"))
    np.testing.assert_array_equal(
        _kddcup99._five_class_codes(("normal", "smurf", "satan", "phf", "perl")), [0, 1, 2, 3, 4])


@pytest.mark.parametrize("bad", ["binary", "five", None, 5])
def test_bad_target(bad):
    with pytest.raises(ValueError, match="target"):
        load_kddcup99(target=bad, n_samples=10, random_state=0)
