"""format_nips2008's text, byte for byte, for a fixed result: a quick run's result dict
(seed 0, its timings replaced by round numbers) kept as JSON in data/, and two variants
that take the other branches (no equivalent eps and no Figure 3 curves; Pima present and
an equivalent eps outside the range run). The expected text was written by the code before
format_nips2008 was split into one function per section; regenerate it only for an
intended change of the text:

    python tests/experiments/test_nips2008_text.py --write
"""
import copy
import json
import pathlib
import sys

import numpy as np

from dperm.experiments.nips2008 import format_nips2008

DATA = pathlib.Path(__file__).resolve().parent / "data"
RESULT = DATA / "nips2008_quick_result.json"
TEXT = DATA / "nips2008_quick_text.txt"
SEPARATOR = "\n=====\n"


def _decode(o):
    if isinstance(o, list):
        return [_decode(x) for x in o]
    if not isinstance(o, dict):
        return o
    if "__items__" in o:
        return {_decode(k): _decode(v) for k, v in o["__items__"]}
    if "__tuple__" in o:
        return tuple(_decode(x) for x in o["__tuple__"])
    if "__array__" in o:
        return np.array(o["__array__"], dtype=o["dtype"])
    if "__scalar__" in o:
        return np.dtype(o["dtype"]).type(o["__scalar__"])
    return {k: _decode(v) for k, v in o.items()}


def results():
    r = _decode(json.loads(RESULT.read_text()))
    bare = copy.deepcopy(r)
    bare["equivalent_epsilon"] = {}
    for ds in bare["datasets"].values():
        ds.pop("epsilon_curve", None)
    pima = copy.deepcopy(r)
    pima["datasets"]["pima"] = copy.deepcopy(pima["datasets"]["breast_cancer"])
    first = next(iter(pima["equivalent_epsilon"]))
    pima["equivalent_epsilon"][first] = None
    return [r, bare, pima]


def test_fixture_takes_every_branch():
    r, bare, pima = results()
    assert r["equivalent_epsilon"] and "pima" not in r["datasets"]
    assert any("epsilon_curve" in ds for ds in r["datasets"].values())
    cells = [k in ds["table"]["epsilon_bound"] for ds in r["datasets"].values()
             for k in ds["table"]["errors"]]
    assert any(cells) and not all(cells)          # rows with and without an eps bound
    assert "pima" in pima["datasets"] and None in pima["equivalent_epsilon"].values()
    assert not bare["equivalent_epsilon"]


def test_text_is_byte_identical():
    want = TEXT.read_text(encoding="utf-8").split(SEPARATOR)
    got = [format_nips2008(r) for r in results()]
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g == w


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    TEXT.write_text(SEPARATOR.join(format_nips2008(r) for r in results()), encoding="utf-8")
