"""aragog: 1-D thermal evolution of rocky-planet mantles (entropy method).

Public API (see DESIGN.md): :func:`load_config` and, from the solver issue on,
``EntropySolver`` and ``SolverOutput``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("aragog")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"

from aragog.config import Parameters, load_config
from aragog.errors import AragogError, ConfigError, EOSError, StructureError

__all__ = [
    "__version__",
    "EntropySolver",
    "SolverOutput",
    "load_config",
    "Parameters",
    "AragogError",
    "ConfigError",
    "EOSError",
    "StructureError",
]


def __getattr__(name: str):
    # The solver imports JAX: load it on first use so config-only users stay light.
    if name in ("EntropySolver", "SolverOutput"):
        from aragog import solver

        return getattr(solver, name)
    raise AttributeError(f"module 'aragog' has no attribute {name!r}")
