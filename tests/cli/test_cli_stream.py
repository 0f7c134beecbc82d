"""`dperm fit` on CSV files larger than memory: --memory-budget streams the file in
chunks into an on-disk binary (dense .npy or CSR) that the solver reads in place;
--keep-binary / --from-binary; --sparse (one-hot columns built as CSR)."""
import csv
import hashlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dperm import cli
from dperm.cli import _stream as _cli_stream
from dperm.cli._io import CSVReader, load_schema

N_CATS = 40
SCHEMA = {
    "numeric": {"a": [0, 10], "b": [-5, 5]},
    "categorical": {"color": [f"c{i}" for i in range(N_CATS)]},
    "label": {"column": "y", "classes": ["no", "yes"]},
}


def toy_rows(n=1500, seed=0, n_cats=N_CATS):
    """label yes iff (a - 5)/5 + 0.5 [c0] - 0.5 [c1] + noise > 0; a column outside the schema."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 11, n)                       # some outside the public range
    b = rng.uniform(-5, 5, n)
    color = rng.choice([f"c{i}" for i in range(n_cats)], n)
    s = (a - 5) / 5 + 0.5 * (color == "c0") - 0.5 * (color == "c1") + rng.normal(0, 0.3, n)
    y = np.where(s > 0, "yes", "no")
    return [[f"{a[i]:.4f}", f"{b[i]:.4f}", color[i], y[i], "x"] for i in range(n)]


def write_csv(path, rows, header=("a", "b", "color", "y", "note")):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture
def toy(tmp_path, monkeypatch):
    write_csv(tmp_path / "train.csv", toy_rows())
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fit(capsys, *args):
    """`dperm fit` in process: (exit status, stdout, stderr)."""
    code = cli.main(["fit", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


BASE = ("train.csv", "--schema", "schema.json", "--seed", "3", "--epsilon", "5")
SMALL = ("--memory-budget", "100K")   # chunks of about a hundred rows: many chunks


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- equality
@pytest.mark.parametrize("opts", [
    ("--sparse", "yes"),
    ("--sparse", "no"),
    ("--sparse", "no", "--perturbation", "output", "--no-intercept"),
    ("--sparse", "yes", "--dtype", "float32", "--loss", "huber"),
])
def test_streamed_fit_writes_the_in_memory_model(toy, capsys, opts):
    code, _, err = fit(capsys, *BASE, *opts, "-o", "mem.json")
    assert code == 0, err
    code, out, err = fit(capsys, *BASE, *opts, *SMALL, "-o", "stream.json")
    assert code == 0, err
    assert "streaming train.csv in chunks of" in err
    layout = "CSR" if "yes" in opts else "dense"
    assert f"{layout} {'float32' if 'float32' in opts else 'float64'} binary" in err
    # the same model file, byte for byte: the rows are encoded one by one
    assert (toy / "stream.json").read_bytes() == (toy / "mem.json").read_bytes()
    assert "model written to stream.json" in out
    assert not list(toy.glob(".stream.json*"))        # no temporary model file left


def test_sparse_and_dense_encodings_give_the_same_model(toy, capsys):
    assert fit(capsys, *BASE, "--sparse", "yes", "-o", "csr.json")[0] == 0
    assert fit(capsys, *BASE, "--sparse", "no", "-o", "dense.json")[0] == 0
    a, b = (json.loads((toy / f).read_text()) for f in ("csr.json", "dense.json"))
    np.testing.assert_allclose(a["coef"], b["coef"], rtol=1e-9, atol=1e-12)
    assert abs(a["intercept"] - b["intercept"]) < 1e-9
    for key in set(a) - {"coef", "intercept"}:
        assert a[key] == b[key], key
    # auto: CSR for this schema (3 stored entries of 42), dense for two categories
    assert _cli_stream.SPARSE_DENSITY == 0.3
    code, _, err = fit(capsys, *BASE, *SMALL, "-o", "auto.json")
    assert code == 0 and "CSR float64 binary" in err
    narrow = dict(SCHEMA, categorical={"color": ["c0", "c1"]})
    write_csv(toy / "narrow.csv", toy_rows(n_cats=2))
    (toy / "narrow.json").write_text(json.dumps(narrow))
    code, _, err = fit(capsys, "narrow.csv", "--schema", "narrow.json", *SMALL, "-o", "n.json")
    assert code == 0 and "dense float64 binary" in err


def test_missing_drop_streamed_equals_in_memory(toy, capsys):
    rows = toy_rows()
    for i in (3, 250, 251, 1499):
        rows[i][i % 2] = "NA"
    write_csv(toy / "holes.csv", rows)
    args = ("holes.csv", "--schema", "schema.json", "--seed", "1", "--missing", "drop")
    code, _, err_mem = fit(capsys, *args, "-o", "mem.json")
    assert code == 0, err_mem
    code, _, err = fit(capsys, *args, *SMALL, "-o", "stream.json")
    assert code == 0, err
    assert (toy / "stream.json").read_bytes() == (toy / "mem.json").read_bytes()
    note = "dropped 4 of 1500 training rows of holes.csv"
    assert err.count(note) == 1 and err_mem.count(note) == 1


# ----------------------------------------------------------------------------- memory
def test_chunks_respect_the_budget(toy, capsys, monkeypatch):
    seen = []
    chunks = CSVReader.chunks

    def spy(self, n=None, usecols=None):
        for table in chunks(self, n, usecols):
            seen.append((n, table.n_rows, sorted(table.columns)))
            yield table

    monkeypatch.setattr(CSVReader, "chunks", spy)
    budget = 100 * 1024
    code, _, err = fit(capsys, *BASE, "--memory-budget", "100K", "-o", "m.json")
    assert code == 0, err
    rows, per_row = _cli_stream.chunk_rows(budget, load_schema("schema.json"), "csr",
                                           "float64", True)
    assert rows * per_row <= budget and f"chunks of {rows} rows" in err
    assert len(seen) == -(-1500 // rows) > 5
    assert all(n == rows and k <= rows for n, k, _ in seen)
    # only the used columns are kept (not "note")
    assert all(cols == ["a", "b", "color", "y"] for *_, cols in seen)
    # a budget too small for a single chunk of rows is refused, naming what it needs
    code, _, err = fit(capsys, *BASE, "--memory-budget", "2K", "-o", "m2.json")
    assert code == 2 and "--memory-budget 2 KiB is too small" in err and "at least" in err
    assert not (toy / "m2.json").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_streamed_fit_peak_memory_is_bounded(tmp_path):
    """200,000 rows with a 1000-category column: the dense in-memory matrix would be
    1.7 GB; the streamed fit (16 MiB budget) stays within a few tens of MiB of its
    baseline (anonymous memory; the memory-mapped binary is page cache)."""
    n = 200_000
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 10, n)
    k1, k2 = rng.integers(0, 50, n), rng.integers(0, 1000, n)
    y = np.where((a - 5) / 5 + 0.5 * (k1 < 25) + rng.normal(0, 0.5, n) > 0, "yes", "no")
    with open(tmp_path / "big.csv", "w") as fh:
        fh.write("a,b,k1,k2,y\n")
        fh.writelines(f"{a[i]:.3f},{i % 97},s{k1[i]},t{k2[i]},{y[i]}\n" for i in range(n))
    schema = {"numeric": {"a": [0, 10], "b": [0, 96]},
              "categorical": {"k1": [f"s{i}" for i in range(50)],
                              "k2": [f"t{i}" for i in range(1000)]},
              "label": {"column": "y", "classes": ["no", "yes"]}}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    dense_bytes = n * (2 + 50 + 1000 + 1) * 8
    driver = textwrap.dedent("""
        import sys, threading
        import dperm.cli, dperm.cli._stream, scipy.sparse, sklearn
        def anon():
            with open("/proc/self/status") as fh:
                return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("RssAnon:"))
        base = anon(); peak = [base]; stop = threading.Event()
        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], anon()); stop.wait(0.005)
        t = threading.Thread(target=sample, daemon=True); t.start()
        code = dperm.cli.main(sys.argv[1:])
        stop.set(); t.join(); peak[0] = max(peak[0], anon())
        print("PEAK", code, peak[0] - base)
    """)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("DPERM_DEBUG", None)
    res = subprocess.run([sys.executable, "-c", driver, "fit", "big.csv", "--schema",
                          "schema.json", "--memory-budget", "16M", "--seed", "0",
                          "--threads", "1", "-o", "m.json"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    code, growth = map(int, res.stdout.split("PEAK")[1].split())
    assert code == 0 and (tmp_path / "m.json").exists()
    assert "CSR float64 binary" in res.stderr
    assert growth < 64 * 2**20, growth / 2**20
    assert growth < dense_bytes / 25
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["training"]["n_samples"] == n and len(model["coef"]) == 1052


# ----------------------------------------------------------------------------- errors
def _corrupt(rows, kind, i):
    if kind == "number":
        rows[i][1] = "abc"
    elif kind == "category":
        rows[i][2] = "purple"
    elif kind == "missing":
        rows[i][0] = ""
    elif kind == "label":
        rows[i][3] = "maybe"
    elif kind == "fields":
        rows[i].append("extra")
    return rows


@pytest.mark.parametrize("kind,words", [
    ("number", ["non-numeric value 'abc' in numeric column 'b' (row 1234, line 1235)"]),
    ("category", ["unknown category 'purple' in column 'color' (row 1234, line 1235)"]),
    ("missing", ["missing value in column 'a' (row 1234, line 1235)", "--missing drop"]),
    ("label", ["label 'maybe' in column 'y' (row 1234, line 1235)"]),
    ("fields", ["row 1234 (line 1235) has 6 fields, the header has 5"]),
])
def test_a_bad_row_mid_file_is_the_in_memory_error(toy, capsys, kind, words):
    write_csv(toy / "bad.csv", _corrupt(toy_rows(), kind, 1233))
    before = sha(toy / "bad.csv")
    work = toy / "work"
    work.mkdir()
    args = ("bad.csv", "--schema", "schema.json")
    code, _, err_mem = fit(capsys, *args, "-o", "mem.json")
    code2, out, err = fit(capsys, *args, *SMALL, "--work-dir", work, "-o", "stream.json")
    assert code == code2 == 2 and "Traceback" not in err
    line = [ln for ln in err.splitlines() if "error" in ln]
    assert line == [ln for ln in err_mem.splitlines() if "error" in ln], (err, err_mem)
    for w in words:
        assert w in err
    # no model (nor a temporary one), no binary left, the user's file untouched
    assert not (toy / "stream.json").exists() and not (toy / "mem.json").exists()
    assert not list(toy.glob(".*.tmp")) and os.listdir(work) == []
    assert sha(toy / "bad.csv") == before
    assert "model written" not in out


def test_failure_with_keep_binary_removes_the_unfinished_binary(toy, capsys):
    write_csv(toy / "bad.csv", _corrupt(toy_rows(), "category", 1400))
    code, _, err = fit(capsys, "bad.csv", "--schema", "schema.json", *SMALL,
                       "--keep-binary", "kept", "-o", "m.json")
    assert code == 2 and "row 1401" in err
    assert not (toy / "kept").exists() and not (toy / "m.json").exists()
    (toy / "empty").mkdir()   # a directory the user made stays, empty
    code, _, err = fit(capsys, "bad.csv", "--schema", "schema.json", *SMALL,
                       "--keep-binary", "empty", "-o", "m.json")
    assert code == 2 and os.listdir(toy / "empty") == []


def test_a_failed_model_write_leaves_no_file(toy, capsys, monkeypatch):
    replace = os.replace

    def fail(src, dst):
        if str(dst).endswith("m.json"):
            raise OSError(28, "No space left on device")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", fail)
    code, _, err = fit(capsys, *BASE, *SMALL, "-o", "m.json")
    assert code == 2 and "cannot write the model to 'm.json': No space left on device" in err
    assert not (toy / "m.json").exists() and not list(toy.glob(".m.json*"))


def test_a_full_disk_while_writing_the_binary_is_named(toy, capsys, monkeypatch):
    append = _cli_stream._NpyAppender.append
    calls = []

    def full(self, arr):
        calls.append(1)
        if len(calls) > 12:
            raise OSError(28, "No space left on device")
        append(self, arr)

    monkeypatch.setattr(_cli_stream._NpyAppender, "append", full)
    (toy / "work").mkdir()
    code, _, err = fit(capsys, *BASE, *SMALL, "--work-dir", "work", "-o", "m.json")
    assert code == 2 and "cannot write the binary in" in err and "No space left" in err
    assert "--work-dir" in err and os.listdir(toy / "work") == []
    assert not (toy / "m.json").exists()


def test_streaming_needs_a_public_schema_with_classes(toy, capsys):
    code, _, err = fit(capsys, "train.csv", "--label", "y", *SMALL, "-o", "m.json")
    assert code == 2 and "--memory-budget: streaming needs --schema" in err
    (toy / "noclass.json").write_text(json.dumps(dict(SCHEMA, label={"column": "y"})))
    code, _, err = fit(capsys, "train.csv", "--schema", "noclass.json", "--work-dir", ".",
                       "-o", "m.json")
    assert code == 2 and "--work-dir: the schema must give the classes" in err
    code, _, err = fit(capsys, "--memory-budget", "1M", "-o", "m.json")
    assert code == 2 and "give DATA.csv" in err
    code, _, err = fit(capsys, *BASE, "--memory-budget", "lots", "-o", "m.json")
    assert code == 2 and "'lots' is not a size" in err
    code, _, err = fit(capsys, *BASE, "--keep-binary", "k", "--work-dir", ".", "-o", "m.json")
    assert code == 2 and "not both" in err
    code, _, err = fit(capsys, *BASE, "--work-dir", "nowhere", "-o", "m.json")
    assert code == 2 and "--work-dir 'nowhere' is not an existing directory" in err
    assert not (toy / "m.json").exists()


@pytest.mark.parametrize("opts", [
    ("--delta", "1e-6", "--neighbouring", "add_remove", "--n-public", "2000"),
    ("--delta", "1e-6", "--perturbation", "output", "--sparse", "yes"),
    ("--delta", "1e-5", "--perturbation", "amp"),
])
def test_streamed_gaussian_fit_writes_the_in_memory_model(toy, capsys, opts):
    code, _, err = fit(capsys, *BASE, *opts, "-o", "mem.json")
    assert code == 0, err
    code, _, err = fit(capsys, *BASE, *opts, *SMALL, "-o", "stream.json")
    assert code == 0, err
    assert (toy / "stream.json").read_bytes() == (toy / "mem.json").read_bytes()
    model = json.loads((toy / "stream.json").read_text())
    assert model["format_version"] == 2 and model["privacy"]["noise"] == "gaussian"
    assert model["estimator"]["delta"] == float(opts[1])


def test_streamed_three_class_fit_and_refit_from_the_binary(toy, capsys):
    rows = toy_rows()
    for r in rows:                       # a third class: a > 8
        if float(r[0]) > 8:
            r[3] = "top"
    write_csv(toy / "train3.csv", rows)
    schema = dict(SCHEMA, label={"column": "y", "classes": ["no", "yes", "top"]})
    (toy / "schema3.json").write_text(json.dumps(schema))
    base = ("train3.csv", "--schema", "schema3.json", "--seed", "3", "--epsilon", "5")
    for opts in (("--delta", "1e-6"), ()):
        code, _, err = fit(capsys, *base, *opts, "-o", "mem.json")
        assert code == 0, err
        code, out, err = fit(capsys, *base, *opts, *SMALL, "--keep-binary", "bin3",
                             "--holdout", "train3.csv", "-o", "stream.json")
        assert code == 0, err
        assert "holdout accuracy" in out
        assert (toy / "stream.json").read_bytes() == (toy / "mem.json").read_bytes()
        model = json.loads((toy / "stream.json").read_text())
        assert model["classes"] == ["no", "yes", "top"] and len(model["coef"]) == 3
        assert model["privacy"]["multiclass"] == ("multinomial" if opts else "ovr")
        assert set(np.unique(np.load(toy / "bin3" / "y.npy"))) == {0, 1, 2}
        code, _, err = fit(capsys, "--from-binary", "bin3", "--seed", "3", "--epsilon", "5",
                           *opts, "-o", "bin.json")
        assert code == 0, err
        assert (toy / "bin.json").read_bytes() == (toy / "mem.json").read_bytes()
        _cli_stream.remove_binary(str(toy / "bin3"), True)
        code, _, err = fit(capsys, *base, "--positive", "top", *SMALL, "-o", "x.json")
        assert code == 2 and "--positive is for two classes" in err


# ----------------------------------------------------------------------------- binaries
def test_keep_binary_then_fit_from_it(toy, capsys):
    code, _, err = fit(capsys, *BASE, *SMALL, "--keep-binary", "bin", "-o", "a.json")
    assert code == 0 and "binary kept in bin" in err
    assert sorted(os.listdir(toy / "bin")) == ["data.npy", "design.json", "indices.npy",
                                               "indptr.npy", "y.npy"]
    man = json.loads((toy / "bin" / "design.json").read_text())
    assert man["format"] == "dperm.design-binary" and man["layout"] == "csr"
    assert man["n_samples"] == 1500 and man["n_columns"] == 43 and man["nnz"] == 1500 * 4
    assert man["classes"] == ["no", "yes"] and man["source"] == "train.csv"
    # plain .npy files, memory-mapped back in place
    X, y, _ = _cli_stream.open_design(str(toy / "bin"))
    assert isinstance(X.data, np.memmap) and isinstance(y, np.memmap) and X.shape == (1500, 43)
    assert np.load(toy / "bin" / "indptr.npy")[-1] == 1500 * 4
    assert set(np.unique(np.load(toy / "bin" / "y.npy"))) == {0, 1}
    # the same model from the binary; other privacy parameters need no new pass
    code, out, err = fit(capsys, "--from-binary", "bin", "--seed", "3", "--epsilon", "5",
                         "-o", "b.json")
    assert code == 0, err
    assert (toy / "b.json").read_bytes() == (toy / "a.json").read_bytes()
    code, _, err = fit(capsys, "--from-binary", "bin", "--epsilon", "0.5", "--holdout",
                       "train.csv", "-o", "c.json")
    assert code == 0, err
    assert json.loads((toy / "c.json").read_text())["privacy"]["epsilon"] == 0.5
    # options fixed by the binary, and a mismatched intercept, are refused
    code, _, err = fit(capsys, "--from-binary", "bin", "--schema", "schema.json", "-o", "d.json")
    assert code == 2 and "--from-binary: --schema cannot be given" in err
    code, _, err = fit(capsys, "--from-binary", "bin", "--no-intercept", "-o", "d.json")
    assert code == 2 and "written with the intercept column" in err
    code, _, err = fit(capsys, *BASE, "--keep-binary", "bin", "-o", "d.json")
    assert code == 2 and "is not empty" in err
    (toy / "bin" / "design.json").unlink()           # as if the writing had not finished
    code, _, err = fit(capsys, "--from-binary", "bin", "-o", "d.json")
    assert code == 2 and "no design.json" in err
    assert not (toy / "d.json").exists()


def test_dense_binary_is_a_plain_npy(toy, capsys):
    code, _, err = fit(capsys, *BASE, *SMALL, "--sparse", "no", "--keep-binary", "bin",
                       "-o", "a.json")
    assert code == 0, err
    X = np.load(toy / "bin" / "X.npy", mmap_mode="r")
    assert X.shape == (1500, 43) and X.dtype == np.float64 and X.flags.c_contiguous
    # the rows the solver reads: with the intercept, [x, 1] * INTERCEPT_SCALE (~1/sqrt(2))
    from dperm.data.design import INTERCEPT_SCALE
    np.testing.assert_allclose(X[:, -1], INTERCEPT_SCALE, rtol=1e-15)
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    with open(toy / "bin" / "X.npy", "rb") as fh:
        assert np.lib.format.read_magic(fh) == (1, 0)
        assert np.lib.format.read_array_header_1_0(fh) == ((1500, 43), False, np.float64)
        assert fh.tell() % 64 == 0


@pytest.mark.parametrize("schema_obj, csv_text", [
    ({"numeric": {f"x{i}": [0, 1] for i in range(20)},
      "categorical": {f"c{i}": ["a", "b", "c"] for i in range(3)},
      "label": {"column": "y", "classes": ["n", "p"]}},
     "".join(",".join(["1"] * 20 + ["c", "b", "a", "p"]) + "\n" for _ in range(40))
     + "".join(",".join(["0.5"] * 20 + ["a", "c", "c", "n"]) + "\n" for _ in range(40))),
    ({"numeric": {"u": [0, 10], "v": [-1, 1]}, "categorical": {"w": ["x", "y"]},
      "label": {"column": "y", "classes": ["n", "p"]}},
     "".join(f"{i % 13},{(i % 5) / 2 - 1},{'xy'[i % 2]},{'np'[i % 3 == 0]}\n"
             for i in range(20_000))),
])
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("sparse", [False, True])
def test_encoded_design_rows_are_design_rows_of_the_encoding(tmp_path, schema_obj, csv_text,
                                                            intercept, dtype, sparse):
    """The streamed (and in-memory) fit's one-array rows equal design_rows(encode_rows)
    bit for bit, norms <= 1 included (rows at the bounds: k = 23 columns at 1)."""
    from dperm.cli._io import encode_rows, label_codes, missing_masks, read_csv
    from dperm.data.validation import row_norms

    head = ",".join(list(schema_obj["numeric"]) + list(schema_obj["categorical"]) + ["y"])
    path = tmp_path / "t.csv"
    path.write_text(head + "\n" + csv_text)
    (tmp_path / "s.json").write_text(json.dumps(schema_obj))
    schema = load_schema(str(tmp_path / "s.json"))
    table = read_csv(str(path))
    assert not missing_masks(table, schema, "y", schema.classes)
    want = _cli_stream.design_rows(encode_rows(table, schema, sparse=sparse)[0], intercept, dtype)
    buf = np.empty((table.n_rows + 3, schema.n_features + 1))
    for out in (None, buf):
        got = _cli_stream.encoded_design_rows(table, schema, intercept, dtype, sparse=sparse,
                                              out=out)
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        if sparse:
            got, want_ = got.toarray(), want.toarray()
        else:
            want_ = want
        assert np.array_equal(got.view(np.uint8), want_.view(np.uint8))
        assert row_norms(got).max() <= 1.0
    y = label_codes(table, "y", schema.classes)      # reused from missing_masks' matching
    assert np.array_equal(y, label_codes(read_csv(str(path)), "y", schema.classes))


# ----------------------------------------------------------------------------- regression
REG_SCHEMA = {"numeric": {"a": [0, 10], "b": [-5, 5]},
              "categorical": {"color": [f"c{i}" for i in range(N_CATS)]},
              "label": {"column": "t"}}


def reg_rows(n=1500, seed=2):
    """t = 0.3 a - 0.4 b + [c0] - 1.5 + noise (some |t| over the label bound 3)."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-1, 11, n), rng.uniform(-5, 5, n)
    color = rng.choice([f"c{i}" for i in range(N_CATS)], n)
    t = 0.3 * a - 0.4 * b + 1.0 * (color == "c0") - 1.5 + 0.3 * rng.normal(size=n)
    return [[f"{a[i]:.4f}", f"{b[i]:.4f}", color[i], f"{t[i]:.4f}", "x"] for i in range(n)]


@pytest.fixture
def reg(tmp_path, monkeypatch):
    write_csv(tmp_path / "reg.csv", reg_rows(), header=("a", "b", "color", "t", "note"))
    (tmp_path / "reg_schema.json").write_text(json.dumps(REG_SCHEMA))
    monkeypatch.chdir(tmp_path)
    return tmp_path


REG = ("reg.csv", "--task", "regression", "--schema", "reg_schema.json", "--label-bound", "3",
       "--seed", "3", "--epsilon", "5")


@pytest.mark.parametrize("opts", [
    ("--sparse", "yes"),
    ("--sparse", "no"),
    ("--sparse", "no", "--perturbation", "output", "--no-intercept"),
    ("--sparse", "yes", "--dtype", "float32", "--delta", "1e-6"),
    ("--sparse", "no", "--perturbation", "adassp", "--delta", "1e-6"),
    ("--sparse", "no", "--perturbation", "none"),
])
def test_streamed_regression_writes_the_in_memory_model(reg, capsys, opts):
    """--task regression with --memory-budget (chunks of about a hundred rows) streams
    the CSV and writes the in-memory fit's model file, byte for byte."""
    code, _, err = fit(capsys, *REG, *opts, "-o", "mem.json")
    assert code == 0, err
    work = reg / "work"
    work.mkdir()
    code, out, err = fit(capsys, *REG, *opts, *SMALL, "--work-dir", work, "-o", "stream.json")
    assert code == 0, err
    assert "streaming reg.csv in chunks of" in err
    rows = int(err.split("in chunks of ")[1].split()[0])
    assert rows < 300                                 # several chunks
    layout = "CSR" if "yes" in opts else "dense"
    assert f"{layout} {'float32' if 'float32' in opts else 'float64'} binary" in err
    assert (reg / "stream.json").read_bytes() == (reg / "mem.json").read_bytes()
    assert "model written to stream.json" in out and "label bound" in out
    assert os.listdir(work) == []                     # the temporary binary is gone
    model = json.loads((reg / "stream.json").read_text())
    assert model["task"] == "regression" and model["training"]["n_samples"] == 1500


def test_streamed_regression_missing_values(reg, capsys):
    """--missing drop: the in-memory model; --missing error: the in-memory error (a row
    in a later chunk), no model and no binary left."""
    rows = reg_rows()
    for i in (3, 250, 251, 1499):
        rows[i][i % 2] = "NA"
    rows[700][3] = ""                                 # a missing target
    write_csv(reg / "holes.csv", rows, header=("a", "b", "color", "t", "note"))
    args = ("holes.csv", *REG[1:], "--missing", "drop")
    code, _, err_mem = fit(capsys, *args, "-o", "mem.json")
    assert code == 0, err_mem
    code, _, err = fit(capsys, *args, *SMALL, "-o", "stream.json")
    assert code == 0, err
    assert (reg / "stream.json").read_bytes() == (reg / "mem.json").read_bytes()
    note = "dropped 5 of 1500 training rows of holes.csv"
    assert err.count(note) == 1 and err_mem.count(note) == 1
    args = ("holes.csv", *REG[1:])
    code, _, err_mem = fit(capsys, *args, "-o", "e1.json")
    work = reg / "work"
    work.mkdir()
    code2, _, err = fit(capsys, *args, *SMALL, "--work-dir", work, "-o", "e2.json")
    assert code == code2 == 2 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if "error" in ln] == \
        [ln for ln in err_mem.splitlines() if "error" in ln]
    assert "missing value in column 'b' (row 4, line 5)" in err
    assert not (reg / "e2.json").exists() and os.listdir(work) == []
    bad = reg_rows()
    bad[900][3] = "abc"                               # a non-numeric target mid-file
    write_csv(reg / "bad.csv", bad, header=("a", "b", "color", "t", "note"))
    code, _, err_mem = fit(capsys, "bad.csv", *REG[1:], "-o", "e3.json")
    code2, _, err = fit(capsys, "bad.csv", *REG[1:], *SMALL, "-o", "e4.json")
    assert code == code2 == 2
    assert "'abc' (row 901, line 902)" in err and \
        [ln for ln in err.splitlines() if "error" in ln] == \
        [ln for ln in err_mem.splitlines() if "error" in ln]


def test_streamed_regression_options(reg, capsys):
    code, _, err = fit(capsys, *REG, *SMALL, "--keep-binary", "kept", "-o", "m.json")
    assert code == 2 and "--keep-binary and --from-binary are for classification" in err
    code, _, err = fit(capsys, "reg.csv", "--task", "regression", "--label-bound", "3",
                       *SMALL, "-o", "m.json")
    assert code == 2 and "--memory-budget: streaming needs --schema" in err
    assert not (reg / "m.json").exists()


@pytest.mark.parametrize("sparse", ["no", "yes"])
def test_streamed_adassp_reads_the_binary_by_blocks(reg, capsys, monkeypatch, sparse):
    """AdaSSP's X^T X and X^T y are sums over blocks of rows (a number fixed by the column
    count): with blocks of a few rows, the streamed fit never materializes the design
    (DesignRows.toarray would: it raises here) and writes the in-memory fit's model file
    byte for byte, itself read by the same blocks."""
    from dperm.data import design, oracle

    monkeypatch.setattr(oracle, "STATISTICS_BLOCK_ENTRIES", 64)     # blocks of 5-6 rows

    def refuse(self):
        raise AssertionError("the design was materialized")

    monkeypatch.setattr(design.DesignRows, "toarray", refuse)
    opts = ("--sparse", sparse, "--perturbation", "adassp", "--delta", "1e-6")
    code, _, err = fit(capsys, *REG, *opts, "-o", "mem.json")
    assert code == 0, err
    work = reg / "work"
    work.mkdir()
    code, _, err = fit(capsys, *REG, *opts, *SMALL, "--work-dir", work, "-o", "stream.json")
    assert code == 0, err and "streaming reg.csv in chunks of" in err
    assert (reg / "stream.json").read_bytes() == (reg / "mem.json").read_bytes()
