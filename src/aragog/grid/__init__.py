"""Parameter grids on Dask (docs/grid.md).

A grid file names a base config, axes of values and overrides for every point;
:func:`run_grid` validates every point, runs them on Dask workers of one thread each (a
local cluster, an existing scheduler, or Slurm jobs through dask-jobqueue) with one
compile per static key, records each point as it ends (resumable), and returns the
collected :class:`xarray.Dataset`.

Modules: :mod:`._spec` (the grid file), :mod:`._store` (the output folder and manifest),
:mod:`._worker` (one point in a worker), :mod:`._runner` (submission), :mod:`._cluster`
(Dask clients), :mod:`._progress`, :mod:`._collect`, :mod:`._plot`, :mod:`._commands` (the CLI).
Names are imported on first use, so ``import aragog.grid`` does not import Dask. The
Dask and xarray stack is an extra (``pip install ".[grid]"``, :mod:`._extra`): a
name that needs it says so in one line when it is missing.
"""

from __future__ import annotations

import importlib

__all__ = ["run_grid", "prepare_grid", "load_grid", "grid_from_dict", "GridSpec", "GridPoint", "GridFolder",
           "PointRecord", "collect_grid", "plot_grid", "open_client", "SlurmOptions", "grid_status"]

_WHERE = {"run_grid": "runner", "prepare_grid": "runner", "load_grid": "spec", "grid_from_dict": "spec",
          "GridSpec": "spec", "GridPoint": "spec", "GridFolder": "store", "PointRecord": "store",
          "collect_grid": "collect", "plot_grid": "plot", "open_client": "cluster", "SlurmOptions": "cluster"}


def grid_status(folder) -> dict:
    """``{"done", "failed", "pending", "programs", "failures", ...}`` of a grid's output folder
    (what ``aragog grid status --json`` prints)."""
    from ._store import GridFolder

    return GridFolder(folder).summary()


#: the grid extra's packages each module imports (``pip install ".[grid]"``)
_NEEDS = {"runner": ("distributed", "tqdm", "xarray"), "collect": ("xarray",), "plot": ("xarray",),
          "cluster": ("distributed",)}


def __getattr__(name: str):
    if name in _WHERE:
        from ._extra import require

        module = _WHERE[name]
        require(f"aragog.grid.{name}", *_NEEDS.get(module, ()))
        return getattr(importlib.import_module(f"{__name__}._{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_WHERE))
