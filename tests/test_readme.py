"""Every Python code block of README.md runs, and every model it fits beats the majority class.

The blocks run in order in one namespace, as a reader would paste them. A block that fits a
model prints "accuracy A (majority class M)"; each A must exceed M by a margin, so an example
that quietly predicts a single class (as the kernel example once did) fails here."""
import contextlib
import io
import os
import re
import warnings

import pytest

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def python_blocks():
    with open(README, encoding="utf-8") as fh:
        return re.findall(r"```python\n(.*?)```", fh.read(), flags=re.S)


def test_readme_has_examples():
    assert len(python_blocks()) >= 4


def test_readme_examples_run_and_give_sensible_models(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    namespace, out = {"__name__": "__readme__"}, io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("error", UserWarning)   # an example must not draw a warning
        for block in python_blocks():
            exec(compile(block, README, "exec"), namespace)
    found = re.findall(r"accuracy (\d\.\d+) \(majority class (\d\.\d+)\)", out.getvalue())
    assert len(found) >= 4, out.getvalue()
    for acc, maj in found:
        assert float(acc) >= float(maj) + 0.03, out.getvalue()
