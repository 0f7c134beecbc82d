"""`dperm reproduce all`: every experiment into its own folder, one report that shows them."""
import os
import re
from pathlib import Path

from dperm.experiments import Reproduction
from dperm.experiments.report import csv_as_text, run_all, write_report


def _table_runner(out, quick, progress, seed):
    """Full: the whole protocol; --quick: a small one.

    A stand-in table experiment."""
    path = os.path.join(out, "t.csv")
    with open(path, "w") as fh:
        fh.write("lambda,error,paper\n0.001,0.21,0.2161\n")
    return {"seed": seed}, "Lambda  ours    paper\n1e-3    0.2100  0.2161", path


def _figure_runner(out, quick, progress, seed, n_threads=None):
    """A stand-in figure experiment."""
    path = os.path.join(out, "f.csv")
    with open(path, "w") as fh:
        fh.write("epsilon,error\n0.1,0.25\n0.2,0.22\n")
    png = os.path.join(out, "f.png")
    with open(png, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n")
    return {}, path, png


REGISTRY = {"tab": Reproduction(_table_runner, "Table X", "Data A"),
            "fig": Reproduction(_figure_runner, "Figure Y", "Data B")}


def test_report_shows_every_experiment(tmp_path):
    sections = run_all(out=str(tmp_path), quick=True, progress=False, registry=REGISTRY)
    assert [s["name"] for s in sections] == ["tab", "fig"]
    md, html = write_report(sections, str(tmp_path), quick=True, seed=0)
    text = Path(md).read_text()
    for needle in ("## Table X (Data A)", "## Figure Y (Data B)", "0.2161", "](fig/f.png)",
                   "[t.csv](tab/t.csv)", "A stand-in figure experiment.", "quick"):
        assert needle in text, needle
    # a figure's numbers appear as a table in the report
    assert re.search(r"epsilon\s+error\n0\.1\s+0\.25", text)
    page = Path(html).read_text()
    assert "<img src='fig/f.png'" in page and "<pre>Lambda" in page
    assert os.path.isfile(tmp_path / "tab" / "t.csv")


def test_csv_as_text_skips_large_files(tmp_path):
    p = tmp_path / "big.csv"
    p.write_text("a,b\n" + "1,2\n" * 200)
    assert csv_as_text(str(p)) == ""
    p.write_text("a,bb\n10,2\n")
    assert csv_as_text(str(p)) == "a   bb\n10  2"


def test_real_registry_runs_into_the_report(tmp_path):
    """The smallest real experiment through the real registry (the others' quick modes have
    their own tests; `dperm reproduce all --quick` runs them all in about two minutes)."""
    from dperm import experiments

    assert "all" in experiments.REPRODUCTIONS and "learning-curves" in experiments.REPRODUCTIONS
    sections = run_all(out=str(tmp_path), quick=True, progress=False, names=["nips2008"])
    md, _ = write_report(sections, str(tmp_path), quick=True, seed=0)
    text = Path(md).read_text()
    assert "## the NIPS 2008 experiments" in text
    # the paper's numbers stand beside ours in the report (its Figure 2 and the slides' table)
    assert "0.0924 ± 0.0522" in text and "0.2962 ± 0.0617" in text
    assert "UCI Pima Diabetes" in text
    assert "](nips2008/nips2008_figure1.png)" in text or "matplotlib" not in text


def test_markdown_tables_in_a_section_render_as_tables(tmp_path):
    """A section whose text holds a Markdown table (the (epsilon, delta) section) shows it as
    a table in both files, not as raw pipes inside a <pre> block; the rest stays <pre>."""
    text = ("Adult, 5-fold CV\n\n| method | accuracy |\n|---|---|\n| gaussian | 82.10 |\n"
            "| pure | 80.00 |\n\nCPU seconds: 1.0")
    sections = [dict(name="g", title="Gaussian", dataset="Adult", protocol="p.", seconds=1.0,
                     text=text, files=[])]
    md, page = write_report(sections, str(tmp_path), quick=True, seed=0)
    page = Path(page).read_text()
    assert "<table><tr><th>method</th><th>accuracy</th></tr><tr><td>gaussian</td>" in page
    assert "| gaussian" not in page and "<pre>Adult, 5-fold CV</pre>" in page
    assert "<pre>CPU seconds: 1.0</pre>" in page
    md = Path(md).read_text()
    assert "| gaussian | 82.10 |" in md
    fence = md.index("```\nAdult, 5-fold CV\n```")
    assert fence < md.index("| method | accuracy |")     # the table is outside the fence
