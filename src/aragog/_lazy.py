"""Names a package imports on first use (PEP 562 module ``__getattr__``).

A package lists ``{name: module}`` and :func:`lazy_names` gives it the module-level
``__getattr__`` and ``__dir__`` that import the module when the name is first asked for,
so that importing the package stays light (no JAX, no scipy). Imports nothing of aragog.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(package: str, names: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` of ``package`` (its ``__name__``), whose ``names`` map each
    lazily imported name to the module defining it; ``namespace``: the package's
    ``globals()``, which ``__dir__`` lists beside the lazy names."""

    def __getattr__(name: str):
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
