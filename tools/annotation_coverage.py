#!/usr/bin/env python3
"""Annotation coverage of dperm's Python functions (issue 27, item 8).

A function counts as annotated when its return and every parameter (``self`` / ``cls``
of a method excepted) carry an annotation; "partly" when some do.  Public: not under a
name starting with "_" (module, class or function), dunder methods excepted.

    python tools/annotation_coverage.py [PACKAGE_DIR] [--list]

Reads the source with ``ast`` only (nothing is imported).
"""
import argparse
import ast
import pathlib
import sys


def _params(fn):
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    if a.vararg:
        params.append(a.vararg)
    if a.kwarg:
        params.append(a.kwarg)
    return params


def _is_method(stack):
    return bool(stack) and isinstance(stack[-1], ast.ClassDef)


def _public(module, stack, name):
    if any(part.startswith("_") and part != "__init__" for part in module.split(".")):
        return False
    if any(n.name.startswith("_") for n in stack):
        return False
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def functions(root):
    """(qualified name, public, state) for every def in the package under root;
    state: "full", "partly" or "none"."""
    root = pathlib.Path(root)
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts)
        tree = ast.parse(path.read_text(), filename=str(path))

        def visit(node, stack, module=module):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    params = _params(child)
                    if _is_method(stack) and params and params[0].arg in ("self", "cls"):
                        params = params[1:]
                    marks = [p.annotation is not None for p in params]
                    marks.append(child.returns is not None)
                    state = "full" if all(marks) else "partly" if any(marks) else "none"
                    qual = ".".join([module, *(n.name for n in stack), child.name])
                    yield qual, _public(module, stack, child.name), state
                    yield from visit(child, stack + [child], module)
                elif isinstance(child, ast.ClassDef):
                    yield from visit(child, stack + [child], module)
                else:
                    yield from visit(child, stack, module)

        yield from visit(tree, [])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?",
                    default=str(pathlib.Path(__file__).resolve().parents[1] / "dperm"))
    ap.add_argument("--list", action="store_true", help="list the public functions not annotated")
    args = ap.parse_args(argv)
    rows = list(functions(args.package))
    for label, sel in (("all", rows), ("public", [r for r in rows if r[1]])):
        full = sum(r[2] == "full" for r in sel)
        partly = sum(r[2] == "partly" for r in sel)
        print(f"{label:>6}: {full}/{len(sel)} functions fully annotated "
              f"({100.0 * full / max(len(sel), 1):.1f}%), {partly} partly")
    if args.list:
        for qual, public, state in rows:
            if public and state != "full":
                print(f"  {state:>6}  {qual}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
