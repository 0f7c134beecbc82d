"""What the command line writes: never over one of its own inputs (same file, hard or
symbolic link: refused before any work, exit 2, naming both options), and always
through a temporary file renamed into place, so that a failed or interrupted run leaves
the old file as it was and no temporary file behind (dperm._files)."""
import json
import os

import pytest

from dperm import _files, cli

SCHEMA = {"numeric": {"a": [0, 10], "b": [0, 10]},
          "label": {"column": "y", "classes": ["no", "yes"]}}


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = "".join(f"{i % 10},{(3 * i) % 10},{'yes' if i % 10 > 4 else 'no'}\n" for i in range(40))
    (tmp_path / "train.csv").write_text("a,b,y\n" + rows)
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    assert cli.main(["fit", "train.csv", "--schema", "s.json", "--seed", "0", "-o", "m.json"]) == 0
    os.link(tmp_path / "train.csv", tmp_path / "hard.csv")
    os.symlink("train.csv", tmp_path / "soft.csv")
    return tmp_path


def _snapshot(folder):
    return {p: (folder / p).read_bytes() for p in sorted(os.listdir(folder))
            if (folder / p).is_file()}


FIT = ["fit", "train.csv", "--schema", "s.json", "--seed", "0"]


@pytest.mark.parametrize("argv, words", [
    (FIT + ["-o", "train.csv"], ("-o/--output 'train.csv'", "DATA.csv 'train.csv'")),
    (FIT + ["-o", "s.json"], ("-o/--output 's.json'", "--schema 's.json'")),
    (FIT + ["-o", "hard.csv"], ("-o/--output 'hard.csv'", "DATA.csv")),
    (FIT + ["-o", "soft.csv"], ("-o/--output 'soft.csv'", "DATA.csv")),
    (FIT + ["-o", "./sub/../train.csv"], ("DATA.csv",)),
    (FIT + ["-o", "new.json", "--save-schema", "s.json"], ("--save-schema 's.json'", "--schema")),
    (FIT + ["-o", "new.json", "--save-schema", "train.csv"], ("--save-schema", "DATA.csv")),
    (FIT + ["-o", "new.json", "--save-schema", "new.json"], ("--save-schema", "-o/--output",
                                                               "same file")),
    (FIT + ["-o", "new.json", "--holdout", "hard.csv", "--save-schema", "soft.csv"],
     ("--save-schema 'soft.csv'",)),
    (["predict", "m.json", "train.csv", "-o", "train.csv"], ("-o/--output", "DATA.csv")),
    (["predict", "m.json", "train.csv", "-o", "m.json"], ("-o/--output 'm.json'", "MODEL.json")),
    (["predict", "m.json", "train.csv", "-o", "soft.csv"], ("DATA.csv",)),
    (["bounds", "train.csv", "--epsilon", "1", "--columns", "a", "-o", "train.csv"],
     ("-o/--output", "DATA.csv")),
    (["bounds", "train.csv", "--epsilon", "1", "--schema", "s.json", "-o", "s.json"],
     ("-o/--output 's.json'", "--schema 's.json'")),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(files, capsys, monkeypatch,
                                                               argv, words):
    before = _snapshot(files)
    from dperm.cli import _io

    def no_reading(*a, **k):  # pragma: no cover - the check must come first
        raise AssertionError("an input was read before the output check")
    monkeypatch.setattr(_io, "read_csv", no_reading)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err
    assert "write over an input" in err or "same file" in err
    assert _snapshot(files) == before          # nothing read, nothing written


def test_from_binary_folder_files_are_inputs(files, capsys):
    d = files / "bin"
    assert cli.main(FIT + ["--keep-binary", str(d), "-o", "m2.json"]) == 0
    capsys.readouterr()
    before = (d / "design.json").read_bytes()
    assert cli.main(["fit", "--from-binary", str(d), "-o", str(d / "design.json")]) == 2
    err = capsys.readouterr().err
    assert "--from-binary" in err and "design.json" in err
    assert (d / "design.json").read_bytes() == before


def test_outputs_that_are_not_inputs_still_work(files, capsys):
    assert cli.main(FIT + ["-o", "m.json", "--save-schema", "s2.json"]) == 0   # replace an output
    assert cli.main(["predict", "m.json", "train.csv", "-o", "p.csv"]) == 0
    assert cli.main(["predict", "m.json", "train.csv", "-o", "p.csv"]) == 0
    assert (files / "p.csv").read_text().startswith("prediction,")


# ----------------------------------------------------------------------------- atomic writes
def _no_temp_files(folder):
    return [p for p in os.listdir(folder) if p.endswith(".tmp")] == []


@pytest.mark.parametrize("failure", ["write", "fsync", "replace", "interrupt"])
def test_atomic_write_failure_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch,
                                                                   failure):
    target = tmp_path / "out.json"
    target.write_text("old\n")
    real_fsync, real_replace = os.fsync, os.replace
    exc = KeyboardInterrupt() if failure == "interrupt" else OSError(28, "No space left on device")

    class Half:
        """A file object that writes half of the text, then fails."""
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()

        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            raise exc

        def __getattr__(self, name):
            return getattr(self.fh, name)

    if failure in ("write", "interrupt"):
        real_fdopen = os.fdopen
        monkeypatch.setattr(_files.os, "fdopen", lambda *a, **k: Half(real_fdopen(*a, **k)))
    elif failure == "fsync":
        def bad_fsync(fd):
            real_fsync(fd)
            raise exc
        monkeypatch.setattr(_files.os, "fsync", bad_fsync)
    else:
        def bad_replace(a, b):
            assert os.path.getsize(a) > 0    # the new text was complete in the temp file
            raise OSError(13, "Permission denied")
        monkeypatch.setattr(_files.os, "replace", bad_replace)
    with pytest.raises(type(exc) if failure != "replace" else OSError):
        _files.atomic_write_text(target, "new text, long enough to be cut in half\n" * 100)
    monkeypatch.setattr(_files.os, "replace", real_replace)
    assert target.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.json"]


def test_atomic_write_into_a_missing_folder_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        _files.atomic_write_text(tmp_path / "nowhere" / "x.json", "x")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", ["fit", "predict", "bounds"])
def test_a_failed_cli_write_leaves_the_old_output(files, capsys, monkeypatch, command):
    """The write itself fails (e.g. a read-only folder or a full disk: os.replace or the
    write raises): exit 2 naming the file, the previous output untouched, no temp file."""
    (files / "out.txt").write_text("previous\n")
    argv = {"fit": FIT + ["-o", "out.txt"],
            "predict": ["predict", "m.json", "train.csv", "-o", "out.txt"],
            "bounds": ["bounds", "train.csv", "--epsilon", "1", "--columns", "a", "-o",
                       "out.txt"]}[command]

    def read_only(a, b):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(_files.os, "replace", read_only)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "out.txt" in err and "Permission denied" in err
    assert (files / "out.txt").read_text() == "previous\n"
    assert _no_temp_files(files)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into a read-only folder")
def test_a_read_only_folder_leaves_the_old_output(files, capsys):
    sub = files / "ro"
    sub.mkdir()
    (sub / "p.csv").write_text("previous\n")
    sub.chmod(0o555)
    try:
        assert cli.main(["predict", "m.json", "train.csv", "-o", str(sub / "p.csv")]) == 2
        assert "cannot write" in capsys.readouterr().err
        assert os.listdir(sub) == ["p.csv"] and (sub / "p.csv").read_text() == "previous\n"
    finally:
        sub.chmod(0o755)


def test_a_failed_predict_leaves_the_old_predictions(files, capsys):
    (files / "p.csv").write_text("previous\n")
    (files / "bad.csv").write_text("a,b\n1,2\nx,3\n")
    assert cli.main(["predict", "m.json", "bad.csv", "-o", "p.csv"]) == 2
    assert (files / "p.csv").read_text() == "previous\n" and _no_temp_files(files)


# ----------------------------------------------------------------------------- reproduce
@pytest.mark.parametrize("failure", [ValueError, KeyboardInterrupt])
def test_a_failed_reproduce_leaves_out_as_it_was(tmp_path, capsys, monkeypatch, failure):
    from dperm import experiments

    out = tmp_path / "res"
    out.mkdir()
    (out / "table1.csv").write_text("the previous run\n")

    def failing(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
        with open(os.path.join(out, "table1.csv"), "w") as fh:
            fh.write("half a tab")
        raise failure("the runner failed half-way")
    monkeypatch.setattr(experiments, "reproduce_table1", failing)
    code = cli.main(["reproduce", "table1", "--quick", "--out", str(out), "--no-progress"])
    assert code == (130 if failure is KeyboardInterrupt else 1)    # 1: a bug in the runner
    assert os.listdir(out) == ["table1.csv"]
    assert (out / "table1.csv").read_text() == "the previous run\n"


def test_reproduce_never_writes_over_the_pima_input(tmp_path, capsys, monkeypatch):
    from dperm import experiments

    out = tmp_path / "res"
    out.mkdir()
    pima = out / "nips2008_real_data.csv"
    pima.write_text("pregnant,glucose\n")

    def runner(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0,
               pima=None):
        path = os.path.join(out, "nips2008_real_data.csv")
        with open(path, "w") as fh:
            fh.write("result\n")
        return {}, "text", [path]
    monkeypatch.setattr(experiments, "reproduce_nips2008", runner)
    assert cli.main(["reproduce", "nips2008", "--quick", "--pima", str(pima), "--out",
                     str(out), "--no-progress"]) == 2
    assert "--pima" in capsys.readouterr().err
    assert pima.read_text() == "pregnant,glucose\n" and os.listdir(out) == [pima.name]
