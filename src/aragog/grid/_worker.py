"""One grid point, run inside a worker process (a Dask worker of one thread).

:func:`run_point` is what the runner submits: it builds the point's config, runs it with
the public solver API, writes its netCDF and then its manifest record (both atomically)
and returns the record. It never raises for a failing point (a config that no longer
validates, a solver failure, a non-finite state, the wall-time limit): those become a
``"failed"`` record, so the grid goes on.

Each point runs on a new solver. A point whose programs another point of this process
already compiled or loaded reuses them — no trace, no compile — because the solver takes
them from the process's shared programs (:func:`aragog.solver.clear_caches` empties
them); only the first point of a key in a process looks in the shared persistent cache.
What the point's programs cost is told by their counters: :data:`_ATTRIBUTED` keeps, per
static key, the counters the last point of the key left, so the first point of a key
owns the compiles of :func:`prepare_programs` and a later one reuses.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import time
import weakref
from typing import Any

import numpy as np

from aragog.errors import describe
from aragog.grid._store import GridFolder, PointRecord

__all__ = ["PointTask", "run_point", "prepare_programs"]

#: static-key digest -> (the key's programs, as a weak reference; their cumulative
#: counters when the last point of the key in this process ended): bookkeeping, not a
#: cache (the programs themselves live in the process's shared programs).
_ATTRIBUTED: dict[str, tuple[weakref.ref, dict]] = {}


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


def prepare_programs(task: PointTask) -> dict[str, str]:
    """Compile (or load) every program of the task's static key in this worker and wait
    until all are in the shared persistent cache, so that the key's points, submitted
    after this returns, load them on every other worker instead of compiling them again.
    Returns ``{program: source}`` ("compiled", "disk", "memory")."""
    from aragog.config import load_config

    from aragog.solver import EntropySolver

    _tune_malloc()
    solver = EntropySolver(load_config(task.base, overrides=task.overrides))
    solver.initialize()
    solver.wait_for_programs()
    return {name: s["source"] for name, s in solver.jit_stats.items() if s["source"] != "none"}


def _program_counts(programs) -> dict[str, tuple]:
    """Cumulative (compiles, loads, seconds) per program of a solver's ``programs``, over
    every solver that used them (deltas give a point's; seconds: tracing + compiling or
    loading)."""
    return {name: (s["compiles"], s["loads"], s["trace_seconds"] + s["compile_seconds"])
            for name, s in programs.compile_stats().items()}


def _counts_before(key: str, programs) -> dict[str, tuple]:
    """The counters the last point of ``key`` in this process left on ``programs`` (``{}``:
    the first point of the key here, or its programs were built anew since)."""
    seen = _ATTRIBUTED.get(key)
    return seen[1] if seen is not None and seen[0]() is programs else {}


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
    from aragog.solver import EntropySolver

    t0 = time.perf_counter()
    solver = EntropySolver(load_config(task.base, overrides=task.overrides))
    solver.initialize()
    before = _counts_before(task.static_key, solver.programs)
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
    after = _program_counts(solver.programs)
    _ATTRIBUTED[task.static_key] = (weakref.ref(solver.programs), after)
    record.compile = _compile_sources(before, after, solver)
    record.compile_seconds = sum(v[2] - before.get(k, (0, 0, 0.0))[2] for k, v in after.items())
    if state.status < 0:
        record.status, record.message = "failed", state.message
    elif not finite:
        record.status, record.message = "failed", f"non-finite state at t = {state.time:.6g} yr"
    else:
        record.status, record.message = "done", state.message
