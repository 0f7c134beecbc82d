"""Every mutant of tools/mutation_test.py still applies: its source text occurs exactly
once under dperm/ and the replacement changes it. A refactor that moves a privacy constant
(the loss classes of issue 27 did, for four mutants) otherwise makes the tool abort or
silently test nothing; this fails first and names the mutant."""
import importlib.util
import pathlib

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "mutation_test.py"


def load_tool():
    if not TOOL.exists():
        pytest.skip(f"no {TOOL} (an installed package's test copy has no tools/)")
    spec = importlib.util.spec_from_file_location("dperm_mutation_test", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_mutant_applies_exactly_once():
    tool = load_tool()
    bad = []
    for name, _, old, new in tool.MUTANTS:
        if old == new:
            bad.append(f"{name}: the replacement is the original")
            continue
        try:
            tool.locate(old)
        except SystemExit as exc:
            bad.append(f"{name}: {exc}")
    assert not bad, "\n".join(bad)


def test_every_listed_test_file_exists():
    tool = load_tool()
    found = {p.name for p in (TOOL.parents[1] / "tests").rglob("test_*.py")}
    assert not [n for n in tool.TEST_FILES if n not in found]
