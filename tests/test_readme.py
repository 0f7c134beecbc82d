"""Every Python code block of README.md and of the user guide's pages (docs/user_guide/*.md)
runs, and every model it fits beats the majority class.

The blocks of one page run in order in one namespace, as a reader would paste them. A block that fits a
model prints "accuracy A (majority class M)"; each A must exceed M by a margin, so an example
that quietly predicts a single class (as the kernel example once did) fails here."""
import contextlib
import glob
import io
import os
import re
import warnings

import pytest

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")
GUIDE = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "user_guide")
# the guide's pages (absent where only tests/ and README.md are copied, as in the wheel test)
GUIDE_PAGES = sorted(glob.glob(os.path.join(GUIDE, "*.md")))


def python_blocks(path=README):
    with open(path, encoding="utf-8") as fh:
        return re.findall(r"```python\n(.*?)```", fh.read(), flags=re.S)


def run_blocks(path):
    """Run a page's Python blocks in one namespace; return what they printed."""
    namespace, out = {"__name__": "__readme__"}, io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("error", UserWarning)   # an example must not draw a warning
        for block in python_blocks(path):
            exec(compile(block, path, "exec"), namespace)
    return out.getvalue()


def accuracies(printed):
    return re.findall(r"accuracy (\d\.\d+) \(majority class (\d\.\d+)\)", printed)


def test_readme_has_examples():
    assert len(python_blocks()) >= 4


def test_readme_examples_run_and_give_sensible_models(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    printed = run_blocks(README)
    found = accuracies(printed)
    assert len(found) >= 4, printed
    for acc, maj in found:
        assert float(acc) >= float(maj) + 0.03, printed


def test_the_guide_has_examples():
    if not GUIDE_PAGES:
        pytest.skip("no docs/user_guide next to tests/ (an installed package's test copy)")
    assert sum(len(python_blocks(p)) for p in GUIDE_PAGES) >= 10


@pytest.mark.parametrize("path", GUIDE_PAGES, ids=[os.path.basename(p) for p in GUIDE_PAGES])
def test_guide_examples_run_and_give_sensible_models(path, tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    printed = run_blocks(path)
    for acc, maj in accuracies(printed):
        assert float(acc) >= float(maj) + 0.03, printed
