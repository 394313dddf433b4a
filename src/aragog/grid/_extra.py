"""The grid stack is an extra: ``pip install ".[grid]"`` (Dask's distributed, dask-jobqueue,
xarray, tqdm). A default install has none of it; asking for what needs it ends in one line
that says what to install, before any of it is imported."""

from __future__ import annotations

import importlib.util

from aragog.errors import AragogError

__all__ = ["require", "GRID_MODULES"]

#: import name -> distribution name, of every package of the extra
GRID_MODULES = {"distributed": "distributed", "dask_jobqueue": "dask-jobqueue", "xarray": "xarray", "tqdm": "tqdm"}


def require(purpose: str, *modules: str) -> None:
    """Raise :class:`~aragog.errors.AragogError` naming ``purpose`` and the missing
    distributions when any of ``modules`` (import names of :data:`GRID_MODULES`) is not
    installed."""
    missing = [GRID_MODULES[m] for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise AragogError(f"{purpose} needs {', '.join(missing)}, not installed here: "
                          f"pip install \".[grid]\" (in a clone of aragog)")
