"""``aragog grid run|status|collect|plot``: the command-line face of :mod:`aragog.grid`.

:func:`add_grid_parser` adds the sub-commands to the ``aragog`` parser (:mod:`aragog.cli`);
each handler returns the exit status. User errors raise
:class:`~aragog.errors.AragogError`, which the CLI prints as one line.
"""

from __future__ import annotations

import json
import sys
import time

from aragog.grid._extra import require

__all__ = ["add_grid_parser"]


def add_grid_parser(sub) -> None:
    """Add ``grid`` and its sub-commands to ``sub`` (an argparse sub-parsers object)."""
    g = sub.add_parser("grid", help="parameter grids on Dask: run, status, collect, plot (docs/grid.md)")
    gs = g.add_subparsers(dest="grid_command", metavar="SUBCOMMAND")

    p = gs.add_parser("run", help="run every point of a grid file (resumable)")
    p.add_argument("grid", help="grid file (TOML; docs/grid.md)")
    p.add_argument("--out", help="output folder (default: the grid file's path without .toml)")
    state = p.add_mutually_exclusive_group()
    state.add_argument("--resume", action="store_true", help="run only the points without a record")
    state.add_argument("--force", action="store_true",
                       help="start over, removing the results of an earlier grid in the output folder")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: also run failed points again")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, e.g. tcp://host:8786")
    where.add_argument("--slurm", action="store_true", help="start Dask workers as Slurm jobs (dask-jobqueue)")
    p.add_argument("--workers", type=int, metavar="N", help="local workers (default: the CPUs)")
    p.add_argument("--queue", help="--slurm: partition")
    p.add_argument("--walltime", default="01:00:00", help="--slurm: walltime per job, HH:MM:SS (default 01:00:00)")
    p.add_argument("--jobs", type=int, default=1, help="--slurm: jobs to start (default 1)")
    p.add_argument("--processes", type=int, default=1,
                   help="--slurm: worker processes per job, one thread each (default 1)")
    p.add_argument("--memory", default="4GB", help="--slurm: memory per job (default 4GB)")
    p.add_argument("--account", help="--slurm: account to charge")
    p.add_argument("--interface", help="--slurm: network interface of the Dask scheduler and workers "
                                       "(default: Dask's choice; e.g. ib0; lo for a one-node Slurm)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="the compilation cache shared by every worker (default: the base config's "
                        "solver.jax_cache_dir as resolved here; \"none\": off)")
    p.add_argument("--no-collect", action="store_true", help="do not write grid.nc at the end")
    p.set_defaults(func=_cmd_run)

    p = gs.add_parser("status", help="points done / failed / pending, failures with their messages")
    p.add_argument("folder", help="a grid's output folder")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=_cmd_status)

    p = gs.add_parser("collect", help="collect the points into one CF netCDF dataset (FOLDER/grid.nc)")
    p.add_argument("folder", help="a grid's output folder")
    p.add_argument("-o", "--output", help="netCDF file (default: FOLDER/grid.nc)")
    p.set_defaults(func=_cmd_collect)

    p = gs.add_parser("plot", help="PNG of every point's time series and the end-state maps")
    p.add_argument("folder", help="a grid's output folder")
    p.add_argument("-o", "--output", help="PNG file (default: FOLDER/grid.png)")
    p.set_defaults(func=_cmd_plot)
    g.set_defaults(func=lambda args: (g.print_help(), 2)[1])


def _slurm_options(args):
    from aragog.errors import ConfigError
    from aragog.grid._cluster import SlurmOptions

    try:
        return SlurmOptions(queue=args.queue, walltime=args.walltime, jobs=args.jobs,
                            processes=args.processes, memory=args.memory, account=args.account,
                            interface=args.interface)
    except ValueError as exc:
        raise ConfigError(f"--slurm: {exc}") from None


def _cmd_run(args) -> int:
    from aragog.errors import ConfigError
    from aragog.grid._runner import run_grid

    slurm_only = [name for name in ("queue", "account", "interface") if getattr(args, name)]
    if slurm_only and not args.slurm:
        raise ConfigError(f"--{slurm_only[0]} needs --slurm")
    if args.retry_failed and not args.resume:
        raise ConfigError("--retry-failed needs --resume")
    if args.workers is not None and (args.workers < 1 or args.slurm or args.scheduler):
        raise ConfigError("--workers N (N >= 1) is for the local cluster only")
    require("aragog grid run", "distributed", "tqdm", "xarray", *(("dask_jobqueue",) if args.slurm else ()))
    slurm = _slurm_options(args) if args.slurm else None
    _quiet_dask(args.verbose)
    t0 = time.perf_counter()
    try:
        run_grid(args.grid, out=args.out, resume=args.resume, force=args.force,
                 retry_failed=args.retry_failed, cache_dir=args.cache_dir, scheduler=args.scheduler,
                 slurm=slurm, n_workers=args.workers, collect=not args.no_collect)
    except KeyboardInterrupt:
        print(f"aragog: interrupted after {time.perf_counter() - t0:.0f} s: finished points are kept; "
              "`aragog grid run ... --resume` runs the rest", file=sys.stderr)
        return 130
    from aragog.grid._store import GridFolder
    from aragog.grid._runner import grid_folder

    folder = GridFolder(grid_folder(args.grid, args.out))
    if not args.no_collect:
        print(f"wrote {folder.root / 'grid.nc'}")
    summary = folder.summary()
    return 0 if summary["failed"] == 0 and summary["pending"] == 0 else 1


def _quiet_dask(verbose: int) -> None:
    """Dask logs every scheduler, nanny and worker event at INFO: show them with -vv only
    (the progress bar and the summary say what a user needs)."""
    import logging

    # importing distributed (here, through _cluster) sets its loggers' levels: ours come after
    from aragog.grid._cluster import DASK_LOGGERS

    level = logging.DEBUG if verbose >= 2 else logging.WARNING
    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(level)


def _cmd_status(args) -> int:
    from aragog.grid._progress import summary_table
    from aragog.grid._store import GridFolder

    summary = GridFolder(args.folder).summary()
    if args.json:
        print(json.dumps({k: summary[k] for k in ("done", "failed", "pending", "programs", "failures")}
                         | {"points": summary["points"], "grid": summary["grid"]}, indent=1))
    else:
        print(f"grid {summary['grid']}")
        print(summary_table(summary))
    return 0


def _cmd_collect(args) -> int:
    require("aragog grid collect", "xarray")
    from aragog.grid._collect import collect_grid
    from aragog.grid._store import GridFolder

    folder = GridFolder(args.folder)
    ds = collect_grid(folder, args.output)
    path = args.output or folder.root / "grid.nc"
    print(f"wrote {path} ({', '.join(f'{k}: {v}' for k, v in ds.sizes.items())})")
    return 0


def _cmd_plot(args) -> int:
    require("aragog grid plot", "xarray")
    from aragog.grid._plot import plot_grid

    print(f"wrote {plot_grid(args.folder, args.output)}")
    return 0
