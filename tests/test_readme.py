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


def test_readme_stays_a_newcomers_page():
    """The README is what a newcomer needs (issue 27: at most 15,000 bytes); the long
    material lives in the documentation site (docs/)."""
    with open(README, "rb") as fh:
        assert len(fh.read()) <= 15_000


def test_examples_import_public_names_only():
    """The README's, the guide's and the gallery's code import no private module or name
    of dperm (a name starting with an underscore)."""
    import ast

    gallery = sorted(glob.glob(os.path.join(os.path.dirname(__file__), os.pardir, "docs",
                                            "examples", "*.py")))
    sources = [(README, b) for b in python_blocks(README)]
    sources += [(p, b) for p in GUIDE_PAGES for b in python_blocks(p)]
    sources += [(p, open(p, encoding="utf-8").read()) for p in gallery]
    bad = []
    for path, code in sources:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dperm"):
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("dperm")]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "dperm":
                names = [f"dperm.{node.attr}"]
            else:
                continue
            bad += [(os.path.basename(path), n) for n in names
                    if any(part.startswith("_") for part in n.split(".") if part != "__version__")]
    assert not bad, bad
