"""The command line's CSV reader (pyarrow underneath, dperm/cli/_io.py): what users rely
on -- the schema's types, the missing-value rules, blank rows, quoting, line endings, the
byte order mark, and errors that name the row, the line and the column -- checked on
files written byte for byte, in process (no subprocess: fast)."""
import csv
import json
import os

import numpy as np
import pytest

from dperm import cli
from dperm.cli import _io
from dperm.cli._io import CLIError, CSVReader, read_csv

SCHEMA = {
    "numeric": {"a": [0, 10], "b": [-5, 5]},
    "categorical": {"color": ["red", "green", "blue"]},
    "label": {"column": "y", "classes": ["no", "yes"]},
}


def fit(tmp_path, capsys, name, *args):
    """`dperm fit NAME --schema schema.json` in process: (exit status, stderr)."""
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    code = cli.main(["fit", str(tmp_path / name), "--schema", str(tmp_path / "schema.json"),
                     "--epsilon", "1", "--seed", "0", "-o", str(tmp_path / "m.json"), *args])
    return code, capsys.readouterr().err


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def rows_text(n=40, seed=0, nl="\n"):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.uniform(0, 10), rng.uniform(-5, 5)
        out.append(f"{a:.3f},{b:.3f},{['red', 'green', 'blue'][i % 3]},"
                   f"{'yes' if a > 5 else 'no'}{nl}")
    return out


def cells(table, c):
    col = table.columns[c]
    return col.to_pylist() if hasattr(col, "to_pylist") else list(col)


# ----------------------------------------------------------------------------- errors name row, line, column
def test_a_bad_number_names_row_line_and_column(tmp_path, capsys):
    """Blank lines and a quoted line break before the bad cell: the row counts data rows,
    the line counts lines of the file."""
    body = rows_text(10)
    body[2] = '1.5,2.5,"re\nd",no\n'          # a category with a line break (2 lines)
    body[5] = "3,abc,blue,no\n"               # row 6
    text = "a,b,color,y\n\n" + "".join(body[:4]) + "\n  \n" + "".join(body[4:])
    write(tmp_path, "bad.csv", text)
    code, err = fit(tmp_path, capsys, "bad.csv")
    # header line 1, blank line 2, rows 1-2 on lines 3-4, row 3 on lines 5-6, row 4 line 7,
    # blank lines 8-9, row 5 line 10, row 6 line 11
    assert code == 2 and "Traceback" not in err
    assert "non-numeric value 'abc' in numeric column 'b' (row 6, line 11)" in err, err
    assert not (tmp_path / "m.json").exists()


def test_the_first_bad_cell_is_named_in_a_large_column(tmp_path, capsys):
    """The first cell Arrow's cast refuses is found (bisection) and named with its row."""
    body = rows_text(5000)
    body[3776] = "7,1_000,red,yes\n"     # float() accepted underscores; a CSV number does not
    body[4100] = "7,x,red,yes\n"
    write(tmp_path, "big.csv", "a,b,color,y\n" + "".join(body))
    code, err = fit(tmp_path, capsys, "big.csv")
    assert code == 2 and "non-numeric value '1_000' in numeric column 'b' (row 3777, line 3778)" \
        in err, err


@pytest.mark.parametrize("cell", ["inf", "-Infinity", "1e999"])
def test_a_non_finite_number_is_refused(tmp_path, capsys, cell):
    body = rows_text(20)
    body[7] = f"{cell},1,red,no\n"
    write(tmp_path, "inf.csv", "a,b,color,y\n" + "".join(body))
    code, err = fit(tmp_path, capsys, "inf.csv")
    assert code == 2 and f"non-numeric value '{cell}' in numeric column 'a' (row 8, line 9)" \
        in err, err


def test_ragged_rows_name_row_line_and_field_counts(tmp_path, capsys):
    body = rows_text(30)
    body[11] = "1,2,red,no,extra\n"
    write(tmp_path, "long.csv", "a,b,color,y\n\n" + "".join(body))
    code, err = fit(tmp_path, capsys, "long.csv")
    assert code == 2 and "row 12 (line 14) has 5 fields, the header has 4" in err, err
    body = rows_text(30)
    body[20] = "1,2,red\n"
    body[3] = '4,1,"green, light",no\n'       # a quote before: the csv-module look-up
    write(tmp_path, "short.csv", "a,b,color,y\n" + "".join(body))
    code, err = fit(tmp_path, capsys, "short.csv")
    assert code == 2 and "row 21 (line 22) has 3 fields, the header has 4" in err, err


def test_a_space_before_an_opening_quote(tmp_path, capsys):
    """`1, "red"` is read as red (the old reader skipped spaces after a delimiter); a
    delimiter inside such a field splits it (RFC 4180: the quote must open the field),
    and the message says so."""
    text = 'a,b,color,y\n1, "2" , "say ""hi""",no\n2,\t"-1",""   ,no\n'
    t = read_csv(str(write(tmp_path, "ok.csv", text)))
    assert cells(t, "b") == ["2", "-1"] and cells(t, "color") == ['say "hi"', ""]
    write(tmp_path, "sp.csv", 'a,b,color,y\n1,2,red,no\n1, "2",red,no\n3,4, "blue, dark",yes\n')
    code, err = fit(tmp_path, capsys, "sp.csv")
    assert code == 2 and "row 3 (line 4) has 5 fields, the header has 4" in err
    assert "a quoted field must start right after the delimiter" in err, err


def test_not_utf8_names_the_byte_and_line(tmp_path, capsys):
    """The old reader gave the byte's offset within its 8 KiB decoding buffer, not in the
    file (it said byte 713 for this file)."""
    data = ("a,b,color,y\n" + "".join(rows_text(3000))).encode()
    k = data.index(b"\n", 25_000) + 1 + 4     # inside the color of a row past 24 KiB
    data = data[:k] + b"\xff" + data[k + 1:]
    write(tmp_path, "latin.csv", data)
    code, err = fit(tmp_path, capsys, "latin.csv")
    line = data[:k].count(b"\n") + 1
    assert code == 2 and f"not UTF-8 text (byte {k}, line {line}); save the file as UTF-8" \
        in err, err
    # in the header too
    write(tmp_path, "head.csv", b"a,b,col\xe9,y\n1,2,red,no\n")
    code, err = fit(tmp_path, capsys, "head.csv")
    assert code == 2 and "not UTF-8 text (byte 7, line 1)" in err, err


@pytest.mark.parametrize("text,words", [
    ("", "is empty (a header row naming the columns is required)"),
    ("\n\n  \n", "is empty"),
    ("a,b,color,y\n", "has a header but no data rows"),
    ("a,b,color,y\r\n\r\n,,,\r\n  \r\n", "has a header but no data rows"),
])
def test_empty_files(tmp_path, capsys, text, words):
    write(tmp_path, "e.csv", text)
    code, err = fit(tmp_path, capsys, "e.csv")
    assert code == 2 and words in err, err


# ----------------------------------------------------------------------------- what is read
def test_quoted_fields(tmp_path):
    text = ('a,b,color,y\n'
            '"1.5",2,"red",no\n'
            '2,"-1","say ""hi"", then go",yes\n'
            '3,4,"two\nlines",no\n'
            '4,5," padded ",yes\n')
    t = read_csv(str(write(tmp_path, "q.csv", text)))
    assert t.n_rows == 4 and t.header == ["a", "b", "color", "y"]
    assert cells(t, "color") == ["red", 'say "hi", then go', "two\nlines", "padded"]
    assert cells(t, "a") == ["1.5", "2", "3", "4"]
    assert [t.where(i) for i in range(4)] == ["row 1, line 2", "row 2, line 3",
                                              "row 3, line 4", "row 4, line 6"]
    schema = _io.normalize_schema(dict(SCHEMA, categorical={"color": [
        "red", 'say "hi", then go', "two\nlines", "padded"]}))
    X, _ = _io.encode_rows(t, schema)
    assert X.shape == (4, 6) and np.allclose(X[:, 0] * np.sqrt(3), [0.15, 0.2, 0.3, 0.4])


@pytest.mark.parametrize("nl", ["\r\n", "\r"])
def test_crlf_and_cr_files_read_as_lf(tmp_path, nl):
    body = rows_text(50, nl="\n")
    lf = read_csv(str(write(tmp_path, "lf.csv", "a,b,color,y\n" + "".join(body))))
    other = write(tmp_path, "crlf.csv", ("a,b,color,y\n" + "".join(body)).replace("\n", nl))
    t = read_csv(str(other))
    assert t.n_rows == 50
    for c in t.header:
        assert cells(t, c) == cells(lf, c)
    assert t.where(49) == "row 50, line 51"


def test_crlf_error_names_the_line(tmp_path, capsys):
    body = rows_text(30, nl="\r\n")
    body[14] = "5,purple?,red,yes\r\n"
    write(tmp_path, "w.csv", "a,b,color,y\r\n\r\n" + "".join(body))
    code, err = fit(tmp_path, capsys, "w.csv")
    assert code == 2 and "non-numeric value 'purple?' in numeric column 'b' (row 15, line 17)" \
        in err, err


def test_byte_order_mark(tmp_path, capsys):
    path = write(tmp_path, "bom.csv", "\ufeffa,b,color,y\n" + "".join(rows_text(200)))
    t = read_csv(str(path))
    assert t.header == ["a", "b", "color", "y"] and t.n_rows == 200
    code, err = fit(tmp_path, capsys, "bom.csv")
    assert code == 0, err


def test_blank_rows_are_skipped_and_not_numbered(tmp_path):
    """An empty line, a line of spaces, a row of delimiters (spreadsheets write them):
    skipped; a row blank only in the used columns is a row (its cells are missing)."""
    text = ("a,b,color,y,note\n"
            "1,2,red,no,x\n"
            ",,,,\n"
            "   \n"
            "\n"
            " , ,\t, ,\u00a0\n"
            ",,,,kept\n"
            "3,4,blue,yes,x\n")
    path = write(tmp_path, "blank.csv", text)
    t = read_csv(str(path))
    assert t.n_rows == 3 and cells(t, "note") == ["x", "kept", "x"]
    assert [t.where(i) for i in range(3)] == ["row 1, line 2", "row 2, line 7",
                                              "row 3, line 8"]
    with CSVReader(str(path)) as reader:
        (chunk,) = list(reader.chunks(10, usecols={"a", "y"}))
    assert sorted(chunk.columns) == ["a", "y"] and cells(chunk, "a") == ["1", "", "3"]
    schema = _io.normalize_schema(SCHEMA)
    with pytest.raises(CLIError, match=r"missing value in column 'a' \(row 2, line 7\)"):
        _io.apply_missing(t, schema, "y", schema.classes)


def test_missing_markers_and_listed_categories(tmp_path):
    """Markers are compared case-insensitively after stripping; a marker the schema lists
    as a category is that category; a missing label is a missing value."""
    text = ("a,b,color,y\n"
            "1,2,red,no\n"
            " NA ,2,red,no\n"
            "1,Null,green,yes\n"
            "1,2, none ,yes\n"
            "1,2,N/A,no\n"
            "1,2,blue,?\n")
    t = read_csv(str(write(tmp_path, "m.csv", text)))
    schema = _io.normalize_schema(dict(SCHEMA, categorical={"color": ["red", "green", "none"]}))
    masks = _io.missing_masks(t, schema, "y", schema.classes)
    assert sorted(masks) == ["a", "b", "color", "y"]
    assert np.flatnonzero(masks["a"]).tolist() == [1] and np.flatnonzero(masks["b"]).tolist() == [2]
    assert np.flatnonzero(masks["color"]).tolist() == [4]     # N/A, not the listed "none"
    assert np.flatnonzero(masks["y"]).tolist() == [5]
    kept, dropped = _io.apply_missing(t, schema, "y", schema.classes, policy="drop")
    assert dropped == 4 and kept.n_rows == 2
    assert [kept.where(i) for i in range(2)] == ["row 1, line 2", "row 4, line 5"]
    X, _ = _io.encode_rows(kept, schema)
    assert X[1, 2 + 2] > 0           # "none" is the third category


def test_unicode_spaces_are_stripped_by_the_schema_rule(tmp_path):
    """Cells lose the characters str.strip() removes, as schema strings do
    (normalize_category): one rule for both."""
    assert set(_io._WHITESPACE) == {chr(i) for i in range(0x110000) if chr(i).isspace()}
    text = "a,b,color,y\n1,2,\u00a0red\u3000,no\n2,3,\tgreen ,yes\n"
    t = read_csv(str(write(tmp_path, "u.csv", text)))
    assert cells(t, "color") == ["red", "green"]
    schema = _io.normalize_schema(dict(SCHEMA, categorical={"color": [" red", "green\u2003"]}))
    X, _ = _io.encode_rows(t, schema)
    assert X[:, 2:].tolist() == [[1 / np.sqrt(3), 0], [0, 1 / np.sqrt(3)]]


def test_unknown_category_and_bad_label_name_their_rows(tmp_path):
    text = "a,b,color,y\n1,2,red,no\n\n1,2,Red,no\n1,2,red,maybe\n"
    t = read_csv(str(write(tmp_path, "c.csv", text)))
    schema = _io.normalize_schema(SCHEMA)
    with pytest.raises(CLIError, match=r"unknown category 'Red' in column 'color' "
                                       r"\(row 2, line 4\)"):
        _io.encode_rows(t, schema)
    with pytest.raises(CLIError, match=r"label 'maybe' in column 'y' \(row 3, line 5\) is not "
                                       r"one of the classes"):
        _io.label_codes(t, "y", schema.classes)
    assert _io.label_codes(t.take([0, 1]), "y", schema.classes).tolist() == [0, 0]


def test_other_delimiters(tmp_path):
    text = "a;b;color;y\n1,5;2;\"red;dark\";no\n"
    t = read_csv(str(write(tmp_path, "s.csv", text)), delimiter=";")
    assert cells(t, "a") == ["1,5"] and cells(t, "color") == ["red;dark"]
    t = read_csv(str(write(tmp_path, "t.tsv", "a\tb\n 1 \t x y \n")), delimiter="\t")
    assert cells(t, "a") == ["1"] and cells(t, "b") == ["x y"]


# ----------------------------------------------------------------------------- chunks = whole file
@pytest.mark.parametrize("quotes", [False, True])
def test_chunks_number_rows_as_the_whole_file(tmp_path, quotes):
    """Chunks of n rows (blank lines and rows between them) concatenate to the whole
    table, with the same row numbers and lines; the line look-up (vectorised without
    quotes, the csv module with them) agrees with the csv module row by row."""
    rng = np.random.default_rng(3)
    lines = ["a,b,color,y"]
    for i in range(700):
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "  ", ",,,", " , , , "]))
        color = '"gr\neen"' if quotes and i % 97 == 5 else "red"
        lines.append(f"{i},{i % 7},{color},no")
    path = write(tmp_path, "c.csv", "\n".join(lines) + "\n")
    whole = read_csv(str(path))
    # the oracle: the csv module's records, blank ones skipped
    expect = []
    with open(path, newline="") as fh:
        r = csv.reader(fh)
        next(r)
        prev = r.line_num
        for rec in r:
            if rec and any(v.strip() for v in rec):
                expect.append(f"row {len(expect) + 1}, line {prev + 1}")
            prev = r.line_num
    assert whole.n_rows == len(expect) == 700
    assert [whole.where(i) for i in range(0, 700, 37)] == expect[::37]
    for n in (1, 64, 699, 700, 5000):
        with CSVReader(str(path)) as reader:
            chunks = list(reader.chunks(n, usecols={"a", "color"}))
        assert [c.n_rows for c in chunks] == [n] * (700 // n) + ([700 % n] if 700 % n else [])
        got = sum((cells(c, "a") for c in chunks), [])
        assert got == cells(whole, "a") == [str(i) for i in range(700)]
        last = chunks[-1]
        assert last.where(last.n_rows - 1) == expect[-1]


def test_a_row_longer_than_a_block_is_explained(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_io, "_BLOCK", 4096)
    text = "a,b,color,y\n" + "".join(rows_text(20)) + '1,2,"' + "x" * 10000 + '",no\n'
    write(tmp_path, "long.csv", text)
    code, err = fit(tmp_path, capsys, "long.csv")
    assert code == 2 and "a row longer than" in err, err


# ----------------------------------------------------------------------------- inferred schema
def test_inferred_schema_types_and_errors(tmp_path):
    text = ("a,b,c,note,y\n"
            "1,x,1e3,,no\n"
            "2.5,y,.5,NA,yes\n"
            ",x,-2,?,no\n"
            "4,z,+7.,hello,yes\n")
    t = read_csv(str(write(tmp_path, "i.csv", text)))
    s = _io.infer_schema(t, "y")
    assert dict(s.numeric) == {"a": (1.0, 4.0), "c": (-2.0, 1000.0)}
    assert dict(s.categorical) == {"b": ("x", "y", "z"), "note": ("hello",)}
    text = "a,b,y\n1,x,no\n2,x,no\ninf,x,no\n"
    t = read_csv(str(write(tmp_path, "j.csv", text)))
    with pytest.raises(CLIError, match=r"non-numeric value 'inf' in numeric column 'a' "
                                       r"\(row 3, line 4; most cells"):
        _io.infer_schema(t, "y")


def test_stripped_cells_round_trip_through_the_whole_fit(tmp_path, capsys):
    """The same rows written plainly, with CRLF, padded, quoted and a BOM fit the same model."""
    body = rows_text(300)
    plain = "a,b,color,y\n" + "".join(body)
    fancy = "\ufeffa, b ,color,y\r\n" + "".join(
        '"{}", {} ,"{}",{}\r\n'.format(*r.rstrip("\n").split(",")) for r in body)
    models = []
    for name, text in (("plain.csv", plain), ("fancy.csv", fancy)):
        write(tmp_path, name, text)
        code, err = fit(tmp_path, capsys, name)
        assert code == 0, err
        models.append(json.loads((tmp_path / "m.json").read_text())["coef"])
    assert models[0] == models[1]


def test_table_take_keeps_numbers_and_lines(tmp_path):
    t = read_csv(str(write(tmp_path, "t.csv", "a,b\n1,2\n\n3,4\n5,6\n")))
    sub = t.take([2, 0])
    assert cells(sub, "a") == ["5", "1"] and [sub.where(0), sub.where(1)] == [
        "row 3, line 5", "row 1, line 2"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_once(tmp_path, capsys, monkeypatch):
    """`dperm fit <(zcat a.csv.gz) ...`: the reader reads a pipe once (into a temporary
    copy, since the header, the rows and a message's line look-up each read the file),
    fits as from the file, names lines in messages, and leaves no copy behind."""
    import gc
    import tempfile
    import threading

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spool"))
    (tmp_path / "spool").mkdir()
    text = "a,b,color,y\n\n" + "".join(rows_text(300))

    def pipe(name, data):
        path = tmp_path / name
        os.mkfifo(path)
        threading.Thread(target=path.write_text, args=(data,), daemon=True).start()
        return path

    write(tmp_path, "plain.csv", text)
    code, err = fit(tmp_path, capsys, "plain.csv")
    assert code == 0, err
    want = json.loads((tmp_path / "m.json").read_text())["coef"]
    code, err = fit(tmp_path, capsys, pipe("p1", text).name)
    assert code == 0, err
    assert json.loads((tmp_path / "m.json").read_text())["coef"] == want
    bad = text.replace(rows_text(300)[200], "1,2,purple,no\n")
    code, err = fit(tmp_path, capsys, pipe("p2", bad).name, "--memory-budget", "100K")
    assert code == 2 and "unknown category 'purple' in column 'color' (row 201, line 203)" \
        in err, err
    gc.collect()
    assert os.listdir(tmp_path / "spool") == []
