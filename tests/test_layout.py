"""The package's plan (CONTRIBUTING.md, "Where things live"): subpackages, imports only
downward, no cycles, and the flat layout's module paths retired (nothing imports or cites
them)."""
import ast
import importlib
import pathlib
import re
import sys

import pytest

import dperm

ROOT = pathlib.Path(dperm.__file__).parent

#: the layers, lowest first: a module imports only from its own layer or lower ones
LAYERS = [
    ("dperm._core", "dperm.exceptions", "dperm._files", "dperm._lazy"),
    ("dperm.data", "dperm.losses"),
    ("dperm.optim", "dperm._config"),
    ("dperm.privacy",),
    ("dperm.schema", "dperm.sklearn"),
    ("dperm.datasets",),
    ("dperm.model_io",),
    ("dperm.pipeline",),
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
        while target not in mods and "." in target:
            target = target.rsplit(".", 1)[0]
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


#: the flat layout's module paths (dperm 0.1.0), retired in 0.2.0: old path -> real module
RETIRED = {
    "dperm._validation": "dperm.data.validation",
    "dperm._design": "dperm.data.design",
    "dperm._dask": "dperm.data.dask_rows",
    "dperm.erm": "dperm.optim.erm",
    "dperm._newton": "dperm.optim.newton",
    "dperm._multinomial": "dperm.optim.softmax",
    "dperm.noise": "dperm.privacy.noise",
    "dperm.exact_noise": "dperm.privacy.exact_noise",
    "dperm.calibration": "dperm.privacy.calibration",
    "dperm.mechanisms": "dperm.privacy.mechanisms",
    "dperm.tuning": "dperm.privacy.tuning",
    "dperm.regularization": "dperm.privacy.regularization",
    "dperm.accountant": "dperm.privacy.accountant",
    "dperm.estimators": "dperm.sklearn.classifier",
    "dperm.features": "dperm.sklearn.features",
    "dperm._cli_io": "dperm.cli._io",
    "dperm._cli_stream": "dperm.cli._stream",
}


@pytest.mark.parametrize("old", sorted(RETIRED))
def test_old_module_paths_are_retired(old):
    """No import hook aliases the flat layout's paths any more (it was installed on
    sys.meta_path by dperm/__init__.py, silently): they are not modules, and the real
    module is importable."""
    assert not any(type(f).__name__ == "_MovedModules" for f in sys.meta_path)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert importlib.import_module(RETIRED[old]).__name__ == RETIRED[old]


def test_no_citation_of_a_retired_path():
    """Nothing imports a retired path, and code, comments, docstrings, tests and docs name
    the real module.  The modules dperm re-exports by name (``dperm.erm``,
    ``dperm.calibration``, ... in dperm.__all__) are attributes of dperm, so attribute
    uses such as ``dperm.erm.minimize(...)`` in the user guide's code stay valid; importing
    them by that path (``from dperm.erm import``, ``automodule:: dperm.erm``) is not.
    README.md, BENCHMARKS.md and the CHANGELOG's history are the docs' and the lead's."""
    repo = ROOT.parent
    if not (repo / "docs").is_dir() or not (ROOT / "meson.build").exists():
        pytest.skip("an installed package: no source tree here")
    exported = [o for o in RETIRED if o.split(".", 1)[1] in dperm.__all__]
    private = [o for o in RETIRED if o not in exported]
    alt = "|".join(re.escape(o) for o in RETIRED)
    rx = re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o in private) + r")(?!\w)"
                    r"|(?:\bimport |\bfrom |automodule:: |[\"']|, )(" + alt + r")(?![\w.])"
                    r"|\bfrom (" + alt + r")\.")
    import subprocess

    try:                    # the committed files only (a docs build writes pages into docs/)
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True,
                                 check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = [repo / f for f in tracked
             if f.split("/")[0] in ("dperm", "tests", "docs", "benchmarks", "tools")
             and f.endswith((".py", ".pyx", ".pxd", ".h", ".md", ".rst", ".txt"))
             and "results" not in f.split("/") and f != "tests/test_layout.py"]
    files += [repo / f for f in ("CONTRIBUTING.md", "REPRODUCTION.md") if (repo / f).exists()]
    hits = [f"{p.relative_to(repo)}:{i}: {line.strip()}" for p in files
            for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
            if rx.search(line)]
    assert not hits, hits


def test_public_names_and_documented_paths():
    for name in dperm.__all__:
        assert getattr(dperm, name) is not None, name
    from dperm.cli import main
    from dperm.optim.erm import minimize
    from dperm.privacy.calibration import analytic_gaussian_sigma
    from dperm.privacy.mechanisms import objective_perturbation
    from dperm.sklearn.classifier import PrivateLinearClassifier

    assert minimize is dperm.erm.minimize and callable(main)
    assert PrivateLinearClassifier is dperm.PrivateLinearClassifier
    assert objective_perturbation is dperm.objective_perturbation
    assert callable(analytic_gaussian_sigma)


#: a test of how rows are stored: sparse / Dask / DesignRows / ndarray checks, oracle duck typing
STORAGE_CHECK = re.compile(
    r"issparse|_is_sparse|is_distributed|is_dask_array|_dperm_distributed|"
    r"isinstance\([\w.]+, *\(?(np\.ndarray|DesignRows|DaskRows|np\.memmap)|"
    r"hasattr\([\w.]+, *[\"'](value_grad|hess_vec|indptr|compute|to_dask_array|tocsr|"
    r"map_partitions|to_delayed)[\"']\)|"
    r"__module__\.startswith\([\"'](dask|pyspark)")


@pytest.mark.parametrize("folder", ["optim", "privacy", "sklearn", "schema.py"])
def test_no_storage_checks_above_the_data_layer(folder):
    """Only dperm/data/ asks how rows are stored (the oracle factory) and what container
    holds a table's columns (data/columns.py: DataFrame, 2-D array, dask DataFrame); the
    solvers, the mechanisms, the estimators, the transformer and the public schema never
    do (schema.py had 6 such checks and the transformer's dask test before issue 27's
    item 5)."""
    hits = []
    paths = [ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py"))
    for p in paths:
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


SUBPACKAGES = ["dperm.sklearn", "dperm.privacy", "dperm.optim", "dperm.data"]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackages_export_their_public_names(name):
    """Each subpackage's __all__ names its public objects, each the very object of its home
    module (`from dperm.sklearn import PrivateLinearClassifier`), and no exported name
    hides a submodule of the same name (`dperm.privacy.adassp` stays the module)."""
    pkg = importlib.import_module(name)
    assert pkg.__all__ and len(set(pkg.__all__)) == len(pkg.__all__)
    folder = pathlib.Path(pkg.__file__).parent
    submodules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    homes = [importlib.import_module(f"{name}.{sub}") for sub in sorted(submodules)]
    for public in pkg.__all__:
        obj = getattr(pkg, public)
        assert public not in submodules, public
        assert any(getattr(m, public, None) is obj for m in homes), public
    for sub in submodules:
        assert getattr(pkg, sub) is importlib.import_module(f"{name}.{sub}"), sub
    ns = {}
    exec(f"from {name} import *", ns)
    assert set(pkg.__all__) <= set(ns)


def test_documented_subpackage_imports():
    from dperm.optim import minimize, trust_region_newton
    from dperm.privacy import BudgetAccountant, objective_perturbation
    from dperm.sklearn import PrivateLinearClassifier, PrivateLinearRegression

    assert PrivateLinearClassifier is dperm.PrivateLinearClassifier
    assert PrivateLinearRegression is dperm.PrivateLinearRegression
    assert objective_perturbation is dperm.objective_perturbation
    assert BudgetAccountant is dperm.BudgetAccountant
    assert minimize is dperm.erm.minimize and callable(trust_region_newton)


def test_subpackages_import_no_engine():
    """Importing dperm and every subpackage imports neither dask nor pyspark, nor any
    module of those subpackages (their names are loaded on first use, as dperm's are: the
    command line imports single modules and must not pay for the rest)."""
    import subprocess

    code = ("import sys, dperm, " + ", ".join(SUBPACKAGES) + "\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed', 'pyspark', 'sklearn', 'scipy'))\n"
            "bad += sorted(m for m in sys.modules if m.count('.') >= 2 and "
            f"m.rsplit('.', 1)[0] in {SUBPACKAGES!r})\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(__file__).parent)
