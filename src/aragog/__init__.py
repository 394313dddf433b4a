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
    "load_config",
    "Parameters",
    "AragogError",
    "ConfigError",
    "EOSError",
    "StructureError",
]
