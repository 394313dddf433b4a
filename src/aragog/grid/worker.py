"""One grid point, run inside a worker process (a Dask worker of one thread).

:func:`run_point` is what the runner submits: it builds the point's config, runs it with
the public solver API, writes its netCDF and then its manifest record (both atomically)
and returns the record. It never raises for a failing point (a config that no longer
validates, a solver failure, a non-finite state, the wall-time limit): those become a
``"failed"`` record, so the grid goes on.

Each worker process keeps its solvers per static key (:data:`_SOLVERS`): a point whose
programs another point of this process already compiled or loaded reuses them — no
trace, no compile — and only the first point of a key in a process looks in the shared
persistent cache.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from aragog.grid.store import GridFolder, PointRecord

__all__ = ["PointTask", "run_point", "MAX_SOLVERS"]

#: Solvers kept per worker process (least recently used dropped first).
MAX_SOLVERS = 8

#: static-key digest -> EntropySolver, per worker process.
_SOLVERS: "OrderedDict[str, Any]" = OrderedDict()


@dataclasses.dataclass(frozen=True)
class PointTask:
    """What a worker needs to run one point (small, picklable).

    Attributes:
        index, id, values: the point (:class:`aragog.grid.spec.GridPoint`).
        base: the base config file (absolute path).
        overrides: every override of the point (the grid's ``[set]``, the axis values and
            the runner's own: the shared cache directory, the wall-time limit).
        folder: the grid's output folder (absolute path).
        static_key: the point's program key (:meth:`EntropySolver.program_key`).
        end_time: the point's ``solver.end_time`` [yr] (to flag a run that stopped early).
    """

    index: int
    id: str
    values: dict
    base: str
    overrides: dict
    folder: str
    static_key: str
    end_time: float


def _solver_for(task: PointTask, params):
    """This process's solver for the task's static key, with ``params`` set (a new one the
    first time the key is seen here)."""
    from aragog.solver import EntropySolver

    solver = _SOLVERS.pop(task.static_key, None)
    if solver is None:
        solver = EntropySolver(params)
    else:
        solver.parameters = params
    _SOLVERS[task.static_key] = solver
    while len(_SOLVERS) > MAX_SOLVERS:
        _SOLVERS.popitem(last=False)
    return solver


def _program_counts(solver) -> dict[str, int]:
    """Cumulative (compiles, loads) per program of ``solver`` (deltas give a point's)."""
    return {name: (s["compiles"], s["loads"]) for name, s in solver.jit_stats.items()}


def _compile_sources(before: dict, after: dict, solver) -> dict[str, int]:
    """Programs this point compiled, loaded from the persistent cache, or reused (already
    in this process): from the solver's counters before and after the point."""
    out = {"compiled": 0, "loaded": 0, "reused": 0}
    for name, stats in solver.jit_stats.items():
        if name == "initial" or stats["calls"] == 0 and stats["source"] == "none":
            continue
        c0, l0 = before.get(name, (0, 0))
        c1, l1 = after[name]
        if c1 > c0:
            out["compiled"] += c1 - c0
        elif l1 > l0:
            out["loaded"] += l1 - l0
        elif stats["source"] != "none":
            out["reused"] += 1
    return out


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text and text[0] else type(exc).__name__


def run_point(task: PointTask) -> dict[str, Any]:
    """Run one point and record it; returns its :class:`PointRecord` as a dict."""
    wall0 = time.perf_counter()
    folder = GridFolder(task.folder)
    record = PointRecord(index=task.index, id=task.id, values=dict(task.values), status="failed",
                         message="", static_key=task.static_key,
                         worker=f"{socket.gethostname()}:{os.getpid()}")
    try:
        _run(task, folder, record)
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded, the grid goes on
        record.status, record.message = "failed", _one_line(exc)
    record.wall_seconds = time.perf_counter() - wall0
    folder.write_record(record)
    return record.to_dict()


def _run(task: PointTask, folder: GridFolder, record: PointRecord) -> None:
    from aragog.config import load_config

    params = load_config(task.base, overrides=task.overrides)
    solver = _solver_for(task, params)
    before = _program_counts(solver)
    solver.initialize()
    solver.solve()
    state = solver.get_state()
    record.solver_status = int(state.status)
    record.t_final = float(state.time)
    record.integration_seconds = float(getattr(solver.integration_result, "wall_seconds", 0.0) or 0.0)
    finite = bool(np.all(np.isfinite(state.S_final))) and math.isfinite(state.T_magma)
    record.stopped_early = state.time < task.end_time * (1 - 1e-12) - 1e-12
    written = solver.write_netcdf(folder.netcdf(task.id))  # atomic: a record names a whole file
    record.file = written.name
    record.compile = _compile_sources(before, _program_counts(solver), solver)
    if state.status < 0:
        record.status, record.message = "failed", state.message
    elif not finite:
        record.status, record.message = "failed", f"non-finite state at t = {state.time:.6g} yr"
    else:
        record.status, record.message = "done", state.message
