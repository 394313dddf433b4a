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

from aragog.errors import describe
from aragog.grid._store import GridFolder, PointRecord

__all__ = ["PointTask", "run_point", "prepare_programs", "MAX_SOLVERS"]

#: Solvers kept per worker process (least recently used dropped first).
MAX_SOLVERS = 8

#: static-key digest -> [EntropySolver, its program counters after its last point], per
#: worker process.
_SOLVERS: "OrderedDict[str, Any]" = OrderedDict()


@dataclasses.dataclass(frozen=True)
class PointTask:
    """What a worker needs to run one point (small, picklable).

    Attributes:
        index, id, values: the point (:class:`aragog.grid._spec.GridPoint`).
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


_MALLOC_TUNED = False


def _tune_malloc() -> None:
    """Undo Dask's ``MALLOC_TRIM_THRESHOLD_=65536`` for this worker process (glibc only).

    Dask's nanny sets that variable for its workers so that they hand freed memory back to
    the system. Setting it also freezes glibc's mmap threshold at 128 KiB, so every NumPy
    temporary above that size is a fresh ``mmap`` + page faults + ``munmap``: the energy
    budget's quadratures (arrays of ~10^4-10^5 points) ran 2.5-4x slower in a worker
    than in a plain process. Raising both thresholds (32 MiB mmap, 64 MiB trim) restores
    the plain-process speed; a grid worker's memory stays bounded by its largest point.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if not os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: nothing to undo


def _solver_for(task: PointTask, params) -> list:
    """``[solver, counters]``: this process's solver for the task's static key with
    ``params`` set (a new one the first time the key is seen here), and its program
    counters when its last point ended (``{}`` for a new solver, so the next point it runs
    owns the compiles of :func:`prepare_programs`)."""
    from aragog.solver import EntropySolver

    entry = _SOLVERS.pop(task.static_key, None)
    if entry is None:
        entry = [EntropySolver(params), {}]
    else:
        entry[0].parameters = params
    _SOLVERS[task.static_key] = entry
    while len(_SOLVERS) > MAX_SOLVERS:
        _SOLVERS.popitem(last=False)
    return entry


def prepare_programs(task: PointTask) -> dict[str, str]:
    """Compile (or load) every program of the task's static key in this worker and wait
    until all are in the shared persistent cache, so that the key's points, submitted
    after this returns, load them on every other worker instead of compiling them again.
    Returns ``{program: source}`` ("compiled", "disk", "memory")."""
    from aragog.config import load_config

    _tune_malloc()
    solver, _ = _solver_for(task, load_config(task.base, overrides=task.overrides))
    solver.initialize()
    solver.wait_for_programs()
    return {name: s["source"] for name, s in solver.jit_stats.items() if s["source"] != "none"}


def _program_counts(solver) -> dict[str, tuple]:
    """Cumulative (compiles, loads, seconds) per program of ``solver`` (deltas give a
    point's; seconds: tracing + compiling or loading)."""
    return {name: (s["compiles"], s["loads"], s["trace_seconds"] + s["compile_seconds"])
            for name, s in solver.jit_stats.items()}


def _compile_sources(before: dict, after: dict, solver) -> dict[str, int]:
    """Programs this point compiled, loaded from the persistent cache, or reused (already
    in this process): from the solver's counters before and after the point."""
    out = {"compiled": 0, "loaded": 0, "reused": 0}
    for name, stats in solver.jit_stats.items():
        if name == "initial" or stats["calls"] == 0 and stats["source"] == "none":
            continue
        c0, l0, _ = before.get(name, (0, 0, 0.0))
        c1, l1, _ = after[name]
        if c1 > c0:
            out["compiled"] += c1 - c0
        elif l1 > l0:
            out["loaded"] += l1 - l0
        elif stats["source"] != "none":
            out["reused"] += 1
    return out


def _worker_name() -> str:
    """``host:pid``, with ``slurm job N`` when the worker runs in a Slurm job."""
    job = os.environ.get("SLURM_JOB_ID")
    return f"{socket.gethostname()}:{os.getpid()}" + (f" (slurm job {job})" if job else "")


def run_point(task: PointTask) -> dict[str, Any]:
    """Run one point and record it; returns its :class:`PointRecord` as a dict."""
    wall0 = time.perf_counter()
    _tune_malloc()
    folder = GridFolder(task.folder)
    record = PointRecord(index=task.index, id=task.id, values=dict(task.values), status="failed",
                         message="", static_key=task.static_key,
                         worker=_worker_name(), started=time.time())
    try:
        _run(task, folder, record)
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded, the grid goes on
        record.status, record.message = "failed", describe(exc)
    record.wall_seconds = time.perf_counter() - wall0
    record.ended = time.time()
    folder.write_record(record)
    return record.to_dict()


def _run(task: PointTask, folder: GridFolder, record: PointRecord) -> None:
    from aragog.config import load_config
    from aragog.io import write_netcdf

    t0 = time.perf_counter()
    params = load_config(task.base, overrides=task.overrides)
    entry = _solver_for(task, params)
    solver, before = entry
    solver.initialize()
    record.setup_seconds = time.perf_counter() - t0
    solver.solve()
    state = solver.get_state()
    record.solver_status = int(state.status)
    record.t_final = float(state.time)
    record.integration_seconds = float(getattr(solver.integration_result, "wall_seconds", 0.0) or 0.0)
    finite = bool(np.all(np.isfinite(state.S_final))) and math.isfinite(state.T_magma)
    record.stopped_early = state.time < task.end_time * (1 - 1e-12) - 1e-12
    t0 = time.perf_counter()
    history = solver.history()
    t1 = time.perf_counter()
    folder.points_dir.mkdir(parents=True, exist_ok=True)
    written = write_netcdf(folder.netcdf(task.id), history)  # atomic: a record names a whole file
    record.output_seconds, record.write_seconds = t1 - t0, time.perf_counter() - t1
    record.file = written.name
    after = entry[1] = _program_counts(solver)
    record.compile = _compile_sources(before, after, solver)
    record.compile_seconds = sum(v[2] - before.get(k, (0, 0, 0.0))[2] for k, v in after.items())
    if state.status < 0:
        record.status, record.message = "failed", state.message
    elif not finite:
        record.status, record.message = "failed", f"non-finite state at t = {state.time:.6g} yr"
    else:
        record.status, record.message = "done", state.message
