"""The package's plan (CONTRIBUTING.md, "Where things live"): subpackages, imports only
downward, no cycles, and every module path of the flat layout still importable as the same
module."""
import ast
import importlib
import pathlib
import re

import pytest

import dperm
from dperm._moved import MOVED

ROOT = pathlib.Path(dperm.__file__).parent

#: the layers, lowest first: a module imports only from its own layer or lower ones
LAYERS = [
    ("dperm._core", "dperm.exceptions", "dperm._moved", "dperm._files"),
    ("dperm.data", "dperm.losses"),
    ("dperm.optim", "dperm._config"),
    ("dperm.privacy",),
    ("dperm.schema", "dperm.sklearn"),
    ("dperm.datasets",),
    ("dperm.model_io",),
    ("dperm.cli", "dperm.experiments"),
    ("dperm", "dperm.__main__"),
]


def _modules():
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _layer(name):
    best = None
    for i, group in enumerate(LAYERS):
        for prefix in group:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (i, len(prefix))
    return best[0]


def _graph():
    mods = _modules()

    def resolve(target):
        while target not in mods and target not in MOVED and "." in target:
            target = target.rsplit(".", 1)[0]
        target = MOVED.get(target, target)
        return target if target in mods else None

    graph = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):     # lazy imports included
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:                                # relative: from ..schema import
                    up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{up}.{base}" if base else up
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                r = resolve(t) if t.startswith("dperm") else None
                if r and r != m and (r == "dperm" or not m.startswith(r + ".")):
                    graph[m].add(r)
    return graph


def test_imports_only_downward():
    graph = _graph()
    up = sorted((m, t) for m, ts in graph.items() for t in ts if _layer(t) > _layer(m))
    assert not up, up


def test_no_import_cycles():
    graph = _graph()
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_paths_are_the_new_modules(old):
    mod = importlib.import_module(old)
    assert mod is importlib.import_module(MOVED[old])
    assert mod.__spec__.name == MOVED[old]


def test_public_names_and_documented_paths():
    for name in dperm.__all__:
        assert getattr(dperm, name) is not None, name
    from dperm.calibration import analytic_gaussian_sigma
    from dperm.cli import main
    from dperm.erm import minimize
    from dperm.estimators import PrivateLinearClassifier
    from dperm.mechanisms import objective_perturbation

    assert minimize is dperm.erm.minimize and callable(main)
    assert PrivateLinearClassifier is dperm.PrivateLinearClassifier
    assert objective_perturbation is dperm.objective_perturbation
    assert callable(analytic_gaussian_sigma)


#: a test of how rows are stored: sparse / Dask / DesignRows / ndarray checks, oracle duck typing
STORAGE_CHECK = re.compile(
    r"issparse|_is_sparse|is_distributed|is_dask_array|_dperm_distributed|"
    r"isinstance\([\w.]+, *\(?(np\.ndarray|DesignRows|DaskRows|np\.memmap)|"
    r"hasattr\([\w.]+, *[\"'](value_grad|hess_vec|indptr|compute|to_dask_array|tocsr)[\"']\)")


@pytest.mark.parametrize("folder", ["optim", "privacy", "sklearn"])
def test_no_storage_checks_above_the_data_layer(folder):
    """Only dperm/data/ asks how rows are stored (the oracle factory); the solvers, the
    mechanisms and the estimators never do."""
    hits = []
    for p in sorted((ROOT / folder).rglob("*.py")):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if STORAGE_CHECK.search(code):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, hits


def test_meson_installs_every_module():
    """A module missing from a meson.build is missing from the wheel (and from the
    editable install): every .py file of the package is listed in its folder's file."""
    if not (ROOT / "meson.build").exists():
        pytest.skip("an installed package: no meson.build files here")
    missing = []
    for p in ROOT.rglob("*.py"):
        build = p.parent / "meson.build"
        if not build.exists() or f"'{p.name}'" not in build.read_text():
            missing.append(str(p.relative_to(ROOT)))
    assert not missing, missing


def test_readme_layout_is_the_tree():
    """README's Layout section lists every module of the package's own folders."""
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    if not readme.exists():
        pytest.skip("no README.md next to tests/")
    text = readme.read_text()
    layout = text[text.index("## Layout"):text.index("\n## ", text.index("## Layout") + 3)]
    missing = [str(p.relative_to(ROOT)) for folder in ("", "data", "optim", "privacy", "sklearn", "cli")
               for p in sorted((ROOT / folder).glob("*.py"))
               if p.name not in layout and p.name != "__main__.py"
               and not (folder and p.name == "__init__.py")]
    assert not missing, missing
