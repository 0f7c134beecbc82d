"""Every public callable documents its parameters in a numpydoc ``Parameters`` section.

"Public" is what a user can reach by a documented name: each callable in ``dperm.__all__``,
each callable in the ``__all__`` of the public modules it lists (``dperm.calibration``,
``dperm.erm``, ``dperm.exact_noise``, ``dperm.losses``, ``dperm.mechanisms``, ``dperm.noise``,
``dperm.regularization``, ``dperm.datasets``), and the public methods those classes define
(methods inherited from scikit-learn or the standard library are documented there). A class
documents its constructor's parameters in the class docstring, as numpydoc asks.

A callable that takes parameters (other than ``self`` / ``cls``) must have a ``Parameters``
section naming every one of them (``*args`` and ``**kwargs`` by their names, with or
without stars); one that takes none must still have a docstring. The parser is a small one
on purpose, so the test runs without numpydoc installed; the Sphinx build (``docs/``,
numpydoc with warnings as errors) checks the sections' format.

Run as a script (``python tests/test_docstrings.py``) it prints the coverage counts and the
callables that fall short.
"""
import inspect
import re
import sys

import pytest

import dperm

PUBLIC_MODULES = ("calibration", "datasets", "erm", "exact_noise", "losses", "mechanisms", "noise",
                  "regularization")

_SECTION = re.compile(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.M)
_PARAM_LINE = re.compile(r"^(\*{0,2}[A-Za-z_][\w]*(?:\s*,\s*\*{0,2}[A-Za-z_][\w]*)*)\s*(?::.*)?$")


def _owned(obj):
    return (getattr(obj, "__module__", "") or "").startswith("dperm")


def public_callables():
    """Yield ``(qualified name, callable)`` for every public callable, each once."""
    seen, out = set(), []

    def add(name, obj):
        key = id(obj)
        if key in seen or not callable(obj) or not _owned(obj):
            return
        seen.add(key)
        out.append((name, obj))
        if inspect.isclass(obj):
            for klass in obj.__mro__:
                if not _owned(klass):
                    continue
                for attr, member in vars(klass).items():
                    if attr.startswith("_") or attr in vars(obj) and klass is not obj:
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if inspect.isfunction(member) and id(member) not in seen:
                        seen.add(id(member))
                        out.append((f"{name}.{attr}", member))

    for name in dperm.__all__:
        add(f"dperm.{name}", getattr(dperm, name))
    for mod_name in PUBLIC_MODULES:
        module = getattr(dperm, mod_name)
        for name in module.__all__:
            add(f"dperm.{mod_name}.{name}", getattr(module, name))
    return out


def parameters_of(obj):
    """The parameter names a docstring must document (without ``self`` / ``cls``)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and not _owned(target):
        # an inherited constructor (e.g. a dataclass's generated one is owned; Exception's is not)
        return []
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    names = [p.name for p in sig.parameters.values()]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def documented_parameters(doc):
    """Names listed in the docstring's ``Parameters`` section (numpydoc layout)."""
    if not doc:
        return None
    doc = inspect.cleandoc(doc)
    headers = list(_SECTION.finditer(doc))
    for i, match in enumerate(headers):
        if match.group(1).strip() != "Parameters":
            continue
        end = headers[i + 1].start() if i + 1 < len(headers) else len(doc)
        names = set()
        for line in doc[match.end():end].splitlines():
            if not line.strip() or line.startswith((" ", "\t")):
                continue
            found = _PARAM_LINE.match(line.strip())
            if found:
                names.update(n.strip().lstrip("*") for n in found.group(1).split(","))
        return names
    return None


def shortfall(obj):
    """What the docstring lacks: None when complete, else a short description."""
    doc = inspect.getdoc(obj) if not inspect.isclass(obj) else obj.__doc__
    if not doc or not doc.strip():
        return "no docstring"
    params = parameters_of(obj)
    if not params:
        return None
    listed = documented_parameters(doc)
    if listed is None:
        return "no Parameters section"
    missing = [p for p in params if p not in listed]
    return f"Parameters section lacks {', '.join(missing)}" if missing else None


CALLABLES = public_callables()


def test_the_walk_finds_the_public_api():
    names = {n for n, _ in CALLABLES}
    for expected in ("dperm.PrivateLinearClassifier", "dperm.PrivateLinearClassifier.fit",
                     "dperm.erm.minimize", "dperm.datasets.load_adult", "dperm.estimate_bounds"):
        assert expected in names
    assert len(CALLABLES) > 100


def test_the_parser_sees_a_missing_parameter():
    def good(a, b, *args, **kwargs):
        """Doc.

        Parameters
        ----------
        a, b : float
            Two.
        *args : tuple
            More.
        **kwargs
            Options.

        Returns
        -------
        c : float
        """

    def bad(a, b):
        """Doc.

        Parameters
        ----------
        a : float

        Returns
        -------
        b : float
            Not a parameter.
        """

    assert shortfall(good) is None
    assert shortfall(bad) == "Parameters section lacks b"
    bad.__doc__ = "Doc only."
    assert shortfall(bad) == "no Parameters section"
    bad.__doc__ = None
    assert shortfall(bad) == "no docstring"


@pytest.mark.parametrize("name, obj", CALLABLES, ids=[n for n, _ in CALLABLES])
def test_public_callable_documents_its_parameters(name, obj):
    problem = shortfall(obj)
    assert problem is None, f"{name}: {problem}"


EXAMPLES = [(name, obj) for name, obj in CALLABLES if ">>>" in (obj.__doc__ or "")]


def test_public_api_pages_have_examples():
    """Every callable of dperm.__all__ shows an example (its API page's Examples section)."""
    top = {f"dperm.{n}" for n in dperm.__all__}
    missing = [n for n, o in CALLABLES if n in top and ">>>" not in (o.__doc__ or "")]
    assert not missing, missing


@pytest.mark.parametrize("name, obj", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_docstring_examples_run(name, obj):
    """The Examples sections are doctests: they run and print what they show."""
    import doctest

    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, name, globs={}):
        runner.run(test, out=lambda text: None)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, f"{name}: {failed} of {attempted} examples failed"


if __name__ == "__main__":
    bad = [(n, shortfall(o)) for n, o in CALLABLES if shortfall(o)]
    no_doc = sum(1 for _, p in bad if p == "no docstring")
    print(f"{len(CALLABLES) - len(bad)} of {len(CALLABLES)} public callables complete; "
          f"{no_doc} without a docstring")
    for n, p in bad:
        print(f"  {n}: {p}")
    sys.exit(1 if bad else 0)
