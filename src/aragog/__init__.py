"""aragog: 1-D thermal evolution of rocky-planet mantles (entropy method).

Public API (docs/design.md, "Public interface"): :func:`load_config` and, from the solver
issue on, ``EntropySolver`` and ``SolverOutput``.
"""

from __future__ import annotations

from aragog._version import __version__
from aragog.config import Config, load_config
from aragog.logs import aragog_file_logger
from aragog.errors import AragogError, ConfigError, EOSError, StructureError
from aragog._environment import warn_if_shared as _warn_if_shared

_warn_if_shared(__version__, __path__[0])
del _warn_if_shared

__all__ = [
    "__version__",
    "EntropySolver",
    "SolverOutput",
    "load_config",
    "Config",
    "aragog_file_logger",
    "AragogError",
    "ConfigError",
    "EOSError",
    "StructureError",
    "clear_caches",
]


def __getattr__(name: str):
    # The solver imports JAX: load it on first use so config-only users stay light.
    if name in ("EntropySolver", "SolverOutput", "clear_caches"):
        from aragog import solver

        return getattr(solver, name)
    if name == "Parameters":  # Config's name up to 26.12.01: aragog.config warns and answers
        from aragog import config

        return getattr(config, name)
    raise AttributeError(f"module 'aragog' has no attribute {name!r}")
