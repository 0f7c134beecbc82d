#!/usr/bin/env python3
"""Annotation coverage of dperm's Python functions (issue 27, item 8).

A function counts as annotated ("full") when its return and every parameter (``self`` /
``cls`` of a method excepted) carry an annotation; "partly" when some do.  Three sets:

``all``
    every ``def`` in the package (nested ones included).
``public``
    by name: no part of the module path, the enclosing classes or the function starting
    with "_" (dunder methods count), and not nested in a function.
``api``
    what a user can reach from ``dperm.__all__`` and the public subpackages' ``__all__``:
    the functions named there, the public methods and properties of the classes named
    there (those inherited from dperm's own base classes included), and, for a module named
    there (``dperm.calibration``, ...), the same for every name in the module's ``__all__``.

    python tools/annotation_coverage.py [PACKAGE_DIR] [--list {public,api}] [--by-file]
        [--exclude GLOB ...]

Reads the source with ``ast`` only (nothing is imported: no compiled core, pyspark or
scikit-learn needed).  ``--exclude`` drops the files matching a glob (relative to the
package's parent, e.g. ``dperm/sklearn/*``) from every count.
"""
import argparse
import ast
import fnmatch
import pathlib
import sys
from collections import defaultdict

#: the public subpackages whose ``__all__`` is part of the API (besides ``dperm`` itself)
SUBPACKAGES = ("cli", "data", "datasets", "experiments", "optim", "privacy", "sklearn", "spark")


def _params(fn):
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    if a.vararg:
        params.append(a.vararg)
    if a.kwarg:
        params.append(a.kwarg)
    return params


def _state(fn, method):
    params = _params(fn)
    if method and params and params[0].arg in ("self", "cls"):
        params = params[1:]
    marks = [p.annotation is not None for p in params]
    marks.append(fn.returns is not None)
    return "full" if all(marks) else "partly" if any(marks) else "none"


def _public_name(name):
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


class Package:
    """The parsed source of the package under `root`: its modules, their defs and how a
    public name resolves to the def or class that defines it."""

    def __init__(self, root):
        self.root = pathlib.Path(root).resolve()
        self.trees = {}          # module name -> (path, ast.Module)
        for path in sorted(self.root.rglob("*.py")):
            parts = path.relative_to(self.root.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            self.trees[".".join(parts)] = (path, ast.parse(path.read_text(), filename=str(path)))

    # ------------------------------------------------------------------ every def
    def functions(self):
        """(module, qualname, path, public by name, state) for every def."""
        for module, (path, tree) in self.trees.items():
            private_module = any(p.startswith("_") for p in module.split("."))

            def visit(node, stack, module=module, path=path, private_module=private_module):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        method = bool(stack) and isinstance(stack[-1], ast.ClassDef)
                        nested = any(not isinstance(n, ast.ClassDef) for n in stack)
                        public = (not private_module and not nested and _public_name(child.name)
                                  and not any(n.name.startswith("_") for n in stack))
                        qual = ".".join([*(n.name for n in stack), child.name])
                        yield module, qual, path, public, _state(child, method)
                        yield from visit(child, stack + [child])
                    elif isinstance(child, ast.ClassDef):
                        yield from visit(child, stack + [child])
                    else:
                        yield from visit(child, stack)

            yield from visit(tree, [])

    # ------------------------------------------------------------------ name resolution
    def _absolute(self, module, node):
        """The module an ``ImportFrom`` in `module` imports from."""
        if not node.level:
            return node.module
        is_package = self.trees[module][0].name == "__init__.py"
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        return ".".join(base + ([node.module] if node.module else []))

    def _lazy_table(self, module):
        """A package's name -> (module, attribute or None) table (``_LAZY`` / ``_HOME``)."""
        tree = self.trees[module][1]
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in ("_LAZY", "_HOME")):
                table = ast.literal_eval(node.value)
                return {k: (v if isinstance(v, tuple) else (f"{module}.{v}", k))
                        for k, v in table.items()}
        return {}

    def all_names(self, module):
        """The module's ``__all__`` (a list literal or ``list(_HOME)``), or None."""
        tree = self.trees[module][1]
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                     for t in node.targets)):
                if isinstance(node.value, ast.Call):          # list(_HOME)
                    return list(self._lazy_table(module))
                return list(ast.literal_eval(node.value))
        return None

    def resolve(self, module, name):
        """What `name` is in `module`: ("module", module), ("def"|"class", module, node),
        or None (a constant, or defined outside the package)."""
        if module not in self.trees:
            return None
        table = self._lazy_table(module)
        if name in table:
            target, attr = table[name]
            return ("module", target) if attr is None else self.resolve(target, attr)
        for node in self.trees[module][1].body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return ("def", module, node)
            if isinstance(node, ast.ClassDef) and node.name == name:
                return ("class", module, node)
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self._absolute(module, node)
                        if f"{source}.{alias.name}" in self.trees:
                            return ("module", f"{source}.{alias.name}")
                        return self.resolve(source, alias.name)
        if f"{module}.{name}" in self.trees:
            return ("module", f"{module}.{name}")
        return None

    def _class_methods(self, module, cls, seen):
        """(module, qualname, node) of the class's public methods, then its dperm bases'."""
        own = []
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and _public_name(node.name) and node.name not in seen:
                seen.add(node.name)
                own.append((module, f"{cls.name}.{node.name}", node))
        for base in cls.bases:
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
                if found and found[0] == "class":
                    own += self._class_methods(found[1], found[2], seen)
        return own

    def api(self):
        """(module, qualname, node) of every function reachable from the public names."""
        package = self.root.name
        out = {}
        todo = [(package, n) for n in self.all_names(package) or []]
        for sub in SUBPACKAGES:
            mod = f"{package}.{sub}"
            if mod in self.trees:
                todo += [(mod, n) for n in self.all_names(mod) or []]
        done_modules = set()
        while todo:
            module, name = todo.pop()
            found = self.resolve(module, name)
            if found is None:
                continue
            if found[0] == "module":
                target = found[1]
                if target in done_modules:
                    continue
                done_modules.add(target)
                names = self.all_names(target)
                if names is None:
                    names = [n.name for n in self.trees[target][1].body
                             if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                             and not n.name.startswith("_")]
                todo += [(target, n) for n in names]
            elif found[0] == "def":
                out[(found[1], found[2].name)] = (found[2], False)
            else:
                for mod, qual, node in self._class_methods(found[1], found[2], set()):
                    out[(mod, qual)] = (node, True)
        return [(m, q, self.trees[m][0], _state(node, method))
                for (m, q), (node, method) in sorted(out.items())]


def _summary(label, rows):
    full = sum(r[-1] == "full" for r in rows)
    partly = sum(r[-1] == "partly" for r in rows)
    print(f"{label:>6}: {full}/{len(rows)} functions fully annotated "
          f"({100.0 * full / max(len(rows), 1):.1f}%), {partly} partly")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?",
                    default=str(pathlib.Path(__file__).resolve().parents[1] / "dperm"))
    ap.add_argument("--list", choices=("public", "api"),
                    help="list that set's functions that are not fully annotated")
    ap.add_argument("--by-file", action="store_true", help="the api set's counts per file")
    ap.add_argument("--exclude", nargs="*", default=[], metavar="GLOB",
                    help="leave out the files matching these globs (e.g. 'dperm/sklearn/*')")
    args = ap.parse_args(argv)
    pkg = Package(args.package)

    def kept(path):
        rel = path.relative_to(pkg.root.parent).as_posix()
        return not any(fnmatch.fnmatch(rel, g) for g in args.exclude)

    rows = [r for r in pkg.functions() if kept(r[2])]
    api = [r for r in pkg.api() if kept(r[2])]
    _summary("all", [(r[0], r[4]) for r in rows])
    _summary("public", [(r[0], r[4]) for r in rows if r[3]])
    _summary("api", api)
    if args.by_file:
        per = defaultdict(lambda: [0, 0])
        for _, _, path, state in api:
            per[path.relative_to(pkg.root.parent).as_posix()][0] += state == "full"
            per[path.relative_to(pkg.root.parent).as_posix()][1] += 1
        for rel, (full, total) in sorted(per.items()):
            print(f"  {full:>4}/{total:<4} {rel}")
    if args.list == "public":
        for module, qual, _, public, state in rows:
            if public and state != "full":
                print(f"  {state:>6}  {module}.{qual}")
    elif args.list == "api":
        for module, qual, _, state in api:
            if state != "full":
                print(f"  {state:>6}  {module}.{qual}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
