"""`dperm fit`'s privacy block (dperm.cli.fit._print_privacy) prints, byte for byte, what
it printed before it was split into small pieces: data/print_privacy_cases.json holds
the records, names and shapes it was called with across tests/cli (27 cases of distinct
layout: every mechanism, two and K classes, one-vs-rest and multinomial, pure and
(epsilon, delta), Delta > 0, the grid of output perturbation) and the text captured then."""
import contextlib
import io
import json
import os

import pytest

from dperm.cli.fit import _print_privacy

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                     "print_privacy_cases.json")


def _value(tagged):
    kind, v = tagged
    if kind == "tuple":
        return tuple(_value(x) for x in v)
    if kind == "list":
        return [_value(x) for x in v]
    if kind == "dict":
        return {k: _value(x) for k, x in v.items()}
    return v


def _cases():
    with open(CASES) as fh:
        return json.load(fh)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['source']}-{c['out'][:40]}")
def test_same_text_as_before_the_split(case):
    rec = {k: _value(v) for k, v in case["rec"].items()}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _print_privacy(rec, case["source"], tuple(case["shape"]))
    assert buf.getvalue() == case["out"]


def test_the_cases_cover_every_branch():
    outs = [c["out"] for c in _cases()]
    for words in ("objective perturbation", "output perturbation", "AMP", "NON-PRIVATE",
                  "one-vs-rest", "multinomial", "Gaussian", "Laplace-type", "Delta > 0",
                  "multiples of it", "sigma (output)", "(epsilon, delta)-DP"):
        assert any(words in o for o in outs), words
