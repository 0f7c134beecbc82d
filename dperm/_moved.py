"""Module paths of the flat layout (dperm 0.1.0: every module in dperm/), kept importable.

Each old path is the SAME module object as its new home (``dperm.erm is
dperm.optim.erm``), so attributes, monkeypatching and pickles by old path keep
working.  Installed by ``dperm/__init__.py`` before anything else is imported.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys

#: old module path -> where the module lives now
MOVED = {
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


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and hands back the module at its new home."""

    def __init__(self):
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import machinery has just set __spec__ to the old path's: give back its own
        module.__spec__ = self._specs[module.__spec__.name]


def install():
    """Put the finder first on sys.meta_path (once)."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())
