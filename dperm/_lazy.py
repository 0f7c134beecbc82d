"""Public names imported on first use (PEP 562), for the subpackages' ``__init__``:
importing one module of a package (the command line does) must not import the others,
nor SciPy, scikit-learn or pandas behind them."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, home: dict[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for `package`, whose public names live in its
    modules as `home` says (name -> module of the package). A name is imported on first
    use and then kept in `namespace` (the package's globals), so later look-ups skip
    ``__getattr__``."""

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__
