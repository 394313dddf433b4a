"""Running a grid on Dask: validate every point, then one compile per static key.

:func:`run_grid` is the Python entry point and what ``aragog grid run`` calls:

1. read the grid (:func:`~aragog.grid._spec.load_grid`), build and validate every point's
   config before anything is submitted (:func:`~aragog.grid._spec.point_parameters`), and
   group the points by their program key (:meth:`EntropySolver.program_key`);
2. check the output folder (:mod:`aragog.grid._store`): a folder of another grid is
   refused unless ``force``; ``resume`` runs only the points without a record;
3. per static key, compile its programs on one worker
   (:func:`~aragog.grid._worker.prepare_programs`); once they are in the shared persistent
   cache, submit the key's points — so a key is compiled once per grid, and every other
   worker loads its programs without tracing (the worker that compiled keeps them);
4. record each point as it ends (the worker writes its netCDF and record itself; a point
   whose worker died twice is recorded here), show progress, and collect the grid into
   ``grid.nc`` (:func:`~aragog.grid._collect.collect_grid`).
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError, describe
from aragog.grid._progress import GridProgress, summary_table
from aragog.grid._spec import GridSpec, load_grid, point_parameters, spec_differences
from aragog.grid._store import GridFolder, PointRecord
from aragog.grid._worker import PointTask, prepare_programs, run_point

__all__ = ["run_grid", "prepare_grid", "PreparedGrid", "grid_folder"]

logger = logging.getLogger("aragog.grid")


class PreparedGrid:
    """A validated grid bound to its output folder: the tasks still to run, by static key.

    Attributes:
        spec: the :class:`GridSpec`; folder: its :class:`GridFolder`;
        tasks: ``{static key: [PointTask, ...]}`` of the points to run (pending ones);
        n_points: points in the grid; cache_dir: the shared compilation cache ("none": off);
        ready: the static keys whose programs are all in that cache already (their points
        are submitted at once, without a compile task).
    """

    def __init__(self, spec: GridSpec, folder: GridFolder, tasks: dict[str, list[PointTask]], n_points: int,
                 cache_dir: str, ready: set[str] | None = None):
        self.spec, self.folder, self.tasks = spec, folder, tasks
        self.n_points, self.cache_dir = n_points, cache_dir
        self.ready = set(ready or ())

    @property
    def n_tasks(self) -> int:
        return sum(len(v) for v in self.tasks.values())


def grid_folder(spec: GridSpec | str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """The output folder of a grid: ``out``, else the grid file's path without ``.toml``."""
    if out is not None:
        return Path(out)
    source = spec.source if isinstance(spec, GridSpec) else Path(spec)
    if source is None:
        raise ConfigError("run_grid: give `out` (the output folder) for a grid built from a dict")
    return Path(source).with_suffix("")


def _shared_cache_dir(cache_dir, first_params) -> str:
    """The compilation cache every worker uses (an absolute directory, or "none")."""
    from aragog.programs._disk_cache import resolve_cache_dir

    if cache_dir is not None:
        choice = resolve_cache_dir(str(cache_dir), origin="cli")
    else:
        choice = resolve_cache_dir(first_params.solver.jax_cache_dir, origin="config")
    return "none" if choice.directory is None else choice.directory


def _common_times(spec: GridSpec) -> list[float]:
    """The output times [yr] of the base config with the grid's ``[set]`` (what ``grid.nc``
    puts every point's series on)."""
    from aragog.config import load_config

    try:
        sp = load_config(spec.base, overrides=spec.set).solver
    except ConfigError as exc:
        raise ConfigError(f"the base config with [set]: {exc}") from None
    from aragog.solver import output_times

    # the solver's own output times (EntropySolver.solve), so that they match bit for bit
    times = output_times(float(sp.start_time), float(sp.end_time), max(int(sp.output_points), 2), sp.output_spacing)
    return [float(t) for t in times]


def _check_folder(folder: GridFolder, grid: dict[str, Any], *, resume: bool, force: bool) -> None:
    """Refuse a folder holding another grid (unless ``force``), or this grid's results
    without ``resume``/``force``; make the folder."""
    if folder.root.exists() and not folder.root.is_dir():
        raise ConfigError(f"output folder {folder.root} is a file")
    if not folder.exists():
        if folder.root.is_dir() and any(folder.root.iterdir()) and not force:
            raise ConfigError(f"output folder {folder.root} is not empty and holds no grid: "
                              "choose another folder (or --force to use it anyway)")
        folder.create(grid)
        return
    old = folder.read_grid()
    if old.get("spec_hash") != grid["spec_hash"]:
        diffs = "; ".join(spec_differences(old.get("spec", {}), grid["spec"])) or "its spec hash differs"
        if force:
            logger.warning("%s: replacing an earlier grid (%s)", folder.root, diffs)
            folder.create(grid, force=True)
            return
        if resume:
            raise ConfigError(f"--resume: the grid changed since {folder.root} was started ({diffs}); "
                              "run it into a new folder, or --force to start over here")
        raise ConfigError(f"output folder {folder.root} holds a different grid ({diffs}): "
                          "choose another folder, or --force to replace it")
    if force:
        folder.create(grid, force=True)
    elif folder.records() and not resume:
        n = len(folder.records())
        raise ConfigError(f"output folder {folder.root} already holds {n} finished point(s) of this grid: "
                          "--resume runs the missing ones, --force starts over")


def prepare_grid(spec: GridSpec | str | os.PathLike, out: str | os.PathLike | None = None, *,
                 resume: bool = False, force: bool = False, retry_failed: bool = False,
                 cache_dir: str | os.PathLike | None = None) -> PreparedGrid:
    """Validate every point and make the output folder; nothing runs (see :func:`run_grid`).

    Raises:
        ConfigError: an invalid grid or point (naming the point, key and value), or an
            output folder that holds another grid.
    """
    from aragog._version import __version__
    from aragog.solver import EntropySolver

    if not isinstance(spec, GridSpec):
        spec = load_grid(spec)
    folder = GridFolder(grid_folder(spec, out))
    points = spec.points()
    params = point_parameters(spec, points)
    cache = _shared_cache_dir(cache_dir, params[0])
    probe = EntropySolver(params[0])  # mesh and tables only: nothing is compiled
    keys, stored = [], {}
    for point, p in zip(points, params):
        try:
            keys.append(probe.program_key(p))
            if keys[-1] not in stored:  # are its programs in the shared cache already?
                p.solver.jax_cache_dir = cache
                stored[keys[-1]] = cache != "none" and probe.programs_stored(p)
        except Exception as exc:  # noqa: BLE001 - e.g. a table file that does not load
            raise ConfigError(f"{point.label()}: {exc}") from None
    times = _common_times(spec)
    grid = {"format": 1, "spec_hash": spec.hash(), "spec": spec.identity(),
            "grid_file": None if spec.source is None else str(spec.source), "mode": spec.mode,
            "axes": {k: list(v) for k, v in spec.axes.items()}, "shape": list(spec.shape),
            "points": [{"index": p.index, "id": p.id, "values": p.values} for p in points],
            "times": times, "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "aragog_version": __version__}
    _check_folder(folder, grid, resume=resume, force=force)
    records = folder.records()
    if retry_failed:
        for r in [r for r in records.values() if r.status == "failed"]:
            folder.forget(r.id)
            del records[r.index]
    extra = {"solver.jax_cache_dir": cache}
    if spec.timeout is not None:
        extra["solver.wall_time_limit"] = spec.timeout
    tasks: dict[str, list[PointTask]] = defaultdict(list)
    for point, p, key in zip(points, params, keys):
        if point.index in records:
            continue
        tasks[key].append(PointTask(point.index, point.id, point.values, str(spec.base),
                                    {**point.overrides, **extra}, str(folder.root), key,
                                    float(p.solver.end_time)))
    return PreparedGrid(spec, folder, dict(tasks), len(points), cache,
                        {key for key in tasks if stored.get(key)})


def run_grid(spec: GridSpec | str | os.PathLike, client=None, *, out: str | os.PathLike | None = None,
             resume: bool = False, force: bool = False, retry_failed: bool = False,
             cache_dir: str | os.PathLike | None = None, scheduler: str | None = None, slurm=None,
             n_workers: int | None = None, progress: bool | None = None, collect: bool = True):
    """Run a grid on Dask and return the collected :class:`xarray.Dataset`.

    Args:
        spec: a grid file or a :class:`GridSpec`.
        client: any ``dask.distributed.Client`` (default: one made here: a local cluster of
            one-thread workers, or ``scheduler`` / ``slurm``; :mod:`aragog.grid._cluster`).
        out: the output folder (default: the grid file's path without ``.toml``).
        resume: run only points without a record; force: replace a folder's earlier grid;
        retry_failed: with ``resume``, run failed points again.
        cache_dir: the shared compilation cache (default: the base config's
            ``solver.jax_cache_dir`` as resolved for this process; ``"none"``: off).
        scheduler: a scheduler address; slurm: :class:`aragog.grid._cluster.SlurmOptions`;
        n_workers: local workers (default: the CPUs).
        progress: ``True``/``False``/``None`` (a bar on a terminal, plain lines in a log).
        collect: write and return ``grid.nc`` (``False``: return ``None``).

    Raises:
        ConfigError: see :func:`prepare_grid`; nothing is run then.
        KeyboardInterrupt: after cancelling the remaining points (finished ones are kept).
    """
    t0 = time.perf_counter()
    prepared = prepare_grid(spec, out, resume=resume, force=force, retry_failed=retry_failed,
                            cache_dir=cache_dir)
    folder = prepared.folder
    logger.info("grid %s: %d points, %d to run, %d static key(s); compilation cache %s", folder.root,
                prepared.n_points, prepared.n_tasks, len(prepared.tasks), prepared.cache_dir)
    if prepared.n_tasks:
        if client is not None:
            _run_tasks(client, prepared, progress)
        else:
            from aragog.grid._cluster import open_client

            with open_client(scheduler=scheduler, slurm=slurm, n_workers=n_workers) as own:
                _run_tasks(own, prepared, progress)
    if progress is not False:
        import sys

        print(summary_table(folder.summary(), time.perf_counter() - t0), file=sys.stderr)
    if not collect:
        return None
    from aragog.grid._collect import collect_grid

    return collect_grid(folder)


def _run_tasks(client, prepared: PreparedGrid, progress: bool | None) -> None:
    """Per static key: prepare its programs on one worker, then submit its points; record
    points whose worker died (the worker records everything else itself)."""
    from distributed import as_completed

    bar = GridProgress(prepared.n_tasks, enabled=progress is not False,
                       live=None if progress is None else bool(progress))
    tag = prepared.folder.root.name
    points: dict[Any, PointTask] = {}  # running point futures
    preparing: dict[Any, str] = {}  # program futures -> static key

    def submit(task: PointTask):
        future = client.submit(run_point, task, key=f"aragog-grid-{tag}-{task.id}", pure=False)
        points[future] = task
        return future

    first = []
    for key, tasks in prepared.tasks.items():
        if key in prepared.ready:  # every program is in the shared cache: no compile task
            first += [submit(task) for task in tasks]
            continue
        future = client.submit(prepare_programs, tasks[0], key=f"aragog-programs-{tag}-{key[:16]}", pure=False)
        preparing[future] = key
        first.append(future)
    slots = max(_worker_threads(client), 1)
    pending = as_completed(first)
    try:
        bar.set_running(min(len(points), slots))
        for future in pending:
            if future in preparing:
                key = preparing.pop(future)
                _programs_ready(future, key)
                for task in prepared.tasks[key]:
                    pending.add(submit(task))
                bar.set_running(min(len(points), slots))
            else:
                task = points.pop(future)
                bar.point_finished(_finish(future, task, prepared.folder), min(len(points), slots))
    except BaseException:
        client.cancel(list(points) + list(preparing))
        raise
    finally:
        bar.close()


def _programs_ready(future, key: str) -> None:
    """Log how a static key's programs were made ready; a failure is only logged (each point
    of the key then fails, or compiles, on its own and says why)."""
    try:
        sources = future.result()
    except Exception as exc:  # noqa: BLE001
        logger.warning("programs of static key %s could not be prepared (%s: %s); running its points anyway",
                       key[:16], type(exc).__name__, exc)
        return
    logger.info("programs of static key %s ready: %s", key[:16],
                ", ".join(f"{name} {source}" for name, source in sorted(sources.items())))


def _worker_threads(client) -> int:
    """Threads of the client's workers now (each runs one point at a time)."""
    try:
        return sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values())
    except Exception:  # noqa: BLE001 - only for the progress display
        return 1


def _finish(future, task: PointTask, folder: GridFolder) -> bool:
    """The point's outcome; a point that did not return a record (its worker died twice,
    or the task could not run at all) is recorded as failed here."""
    try:
        record = future.result()
    except Exception as exc:  # noqa: BLE001 - KilledWorker, a lost scheduler, ...
        killed = type(exc).__name__ == "KilledWorker"
        why = "its worker died twice while running it (killed, or out of memory?)" if killed else describe(exc)
        rec = PointRecord(index=task.index, id=task.id, values=dict(task.values), status="failed",
                          message=why, static_key=task.static_key, attempts=2 if killed else 1)
        folder.write_record(rec)
        return False
    return record.get("status") == "done"
