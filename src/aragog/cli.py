"""The ``aragog`` command.

Sub-commands (docs/design.md, "Public interface"): ``run``, ``validate``, ``show-config``,
``eos generate``, ``eos check``, ``eos plot``, ``plot``, ``inspect``, ``cache info``,
``cache clear``, ``grid run|status|collect|plot`` (:mod:`aragog.grid._commands`).
User errors (an :class:`~aragog.errors.AragogError`, or an OS error such as a missing or
unwritable file) print one line, ``aragog: error: ...``, with no traceback, and exit 1;
argument errors exit 2 (argparse).
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import os
import sys
from pathlib import Path

from aragog._version import __version__
from aragog.errors import AragogError

logger = logging.getLogger("aragog.cli")


_CONFIG_HELP = "config file: TOML, or INI syntax for a .cfg/.ini name (docs/config.md)"


def _add_set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="override a config value (repeatable), e.g. --set mesh.number_of_nodes=80",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aragog",
        description="1-D thermal evolution of rocky-planet mantles (entropy method).",
    )
    parser.add_argument("--version", action="version", version=f"aragog {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="integrate a config and write a netCDF file")
    p.add_argument("config", help=_CONFIG_HELP)
    p.add_argument("--eos-dir", help="directory of SPIDER-format EOS tables (overrides eos.dir)")
    p.add_argument("--out", help="netCDF output file (default: output.file, else CONFIG's name with .nc)")
    _add_set_option(p)
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--jax-cache", metavar="DIR",
                       help="persistent compilation cache directory (default: solver.jax_cache_dir, "
                            "else $ARAGOG_JAX_CACHE_DIR, else the user's JAX cache, else the user cache "
                            "directory; see `aragog cache info`)")
    cache.add_argument("--no-jax-cache", action="store_true",
                       help="no persistent compilation cache for this run (as solver.jax_cache_dir = \"none\")")
    p.add_argument("--plot", action="store_true", help="also write a PNG summary figure next to the output")
    p.add_argument("--quiet", action="store_true",
                   help="no progress while integrating (default: a bar on a terminal, a line every 10 s otherwise)")
    p.set_defaults(func=_cmd_run)

    from aragog.grid._commands import add_grid_parser

    add_grid_parser(sub)

    p = sub.add_parser("plot", help="plot a run's netCDF output (PNG)")
    p.add_argument("file", help="netCDF file written by aragog run")
    p.add_argument("-o", "--output", help="PNG file (default: FILE with .png)")
    p.add_argument("--against", choices=("radius", "depth", "pressure"), default="radius",
                   help="the axis of the profile panels (default: radius)")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser("inspect", help="summarize a run's netCDF output")
    p.add_argument("file", help="netCDF file written by aragog run")
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("validate", help="check a config file and every file it refers to, and evaluate the "
                       "right-hand side once at the initial state, without integrating")
    p.add_argument("config", help=_CONFIG_HELP)
    _add_set_option(p)
    p.add_argument("--no-rhs", dest="rhs", action="store_false",
                   help="skip the right-hand-side evaluation (no compilation; files and mesh only)")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("show-config", help="print the resolved config (with all defaults) as TOML")
    p.add_argument("config", help=_CONFIG_HELP)
    _add_set_option(p)
    p.add_argument("-o", "--output", help="write to this file instead of standard output")
    p.set_defaults(func=_cmd_show_config)

    p = sub.add_parser("eos", help="equation-of-state table sets")
    eos_sub = p.add_subparsers(dest="eos_command", metavar="EOS_COMMAND")
    g = eos_sub.add_parser("generate", help="write a bundled table set (SPIDER format) to DIR")
    g.add_argument("directory", help="output directory (created if missing)")
    g.add_argument("--model", default="default",
                   help='bundled model: "default" (the toy two-phase model) or "mgsio3" (MgSiO3 from '
                        "published phase models; docs/eos_tables.md)")
    g.add_argument("--np", dest="n_pressure", type=int, default=None,
                   help="number of pressure points (default: 151 for default, 200 for mgsio3)")
    g.add_argument("--ns", dest="n_entropy", type=int, default=None,
                   help="number of entropy points per phase (default: 341 for default, 200 for mgsio3)")
    g.add_argument("--pmax", type=float, default=None, help="top of the pressure axis, GPa (default 150)")
    g.set_defaults(func=_cmd_eos_generate)
    pl = eos_sub.add_parser("plot", help="draw a table set's phase diagram and property maps (PNG)")
    pl.add_argument("directory", help="directory of SPIDER-format tables")
    pl.add_argument("-o", "--output", help="PNG file (default: DIR/eos.png)")
    pl.set_defaults(func=_cmd_eos_plot)
    c = eos_sub.add_parser("check", help="report a table set's grid, ranges and thermodynamic consistency")
    c.add_argument("directory", help="directory of SPIDER-format tables")
    c.set_defaults(func=_cmd_eos_check)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    p = sub.add_parser("info", help="what is installed: aragog, Python, NumPy, JAX and its devices, the SUNDIALS "
                                    "library, the compilation and EOS table caches")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("cache", help="the persistent compilation cache: where it is, its size, clearing it")
    cache_sub = p.add_subparsers(dest="cache_command", metavar="CACHE_COMMAND")
    for name, text in (("info", "show the cache directory in use and why, its entries and size, and the cap"),
                       ("clear", "remove the cache's entries (JAX's and aragog's executables)")):
        c = cache_sub.add_parser(name, help=text)
        c.add_argument("--dir", metavar="DIR", help="this cache directory instead of the one aragog uses")
        c.add_argument("--config", metavar="CONFIG",
                       help="take solver.jax_cache_dir and solver.jax_cache_max_mb from this config file")
        if name == "clear":
            c.add_argument("--all", action="store_true",
                           help="in the user's own JAX cache ($JAX_COMPILATION_CACHE_DIR), remove JAX's "
                                "entries too (they may belong to other programs)")
        c.set_defaults(func=_cmd_cache_info if name == "info" else _cmd_cache_clear)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    return parser


def _load(args):
    from aragog.config import load_config

    return load_config(args.config, overrides=args.overrides)


def _cmd_run(args) -> int:
    import time

    wall0 = time.perf_counter()
    params = _load(args)  # a config error is reported before JAX is imported

    from aragog.solver import EntropySolver
    from aragog.programs._disk_cache import configure_compilation_cache

    origin = "config"
    if args.no_jax_cache:
        params.solver.jax_cache_dir, origin = "none", "cli"
    elif args.jax_cache:
        params.solver.jax_cache_dir, origin = str(args.jax_cache), "cli"
    configure_compilation_cache(params.solver.jax_cache_dir, params.solver.jax_cache_max_mb, origin=origin)
    out_path = Path(args.out or params.output.file or Path(args.config).with_suffix(".nc").name)
    solver = EntropySolver(params, eos_dir=args.eos_dir)
    solver.initialize()
    if args.quiet:
        solver.solve()
    else:
        from aragog._run_progress import RunProgress

        shown = RunProgress()
        solver.solve(progress=shown, progress_interval=shown.interval)
    state = solver.get_state()
    written = solver.write_netcdf(out_path)
    print(f"{args.config}: {state.message}")
    print(f"  t = {state.time:.6g} yr   T_magma = {state.T_magma:.1f} K   Phi_global = {state.Phi_global:.4f}"
          f"   F_surface = {state.F_surface:.4g} W/m2")
    stats = solver.jit_stats
    compile_s = sum(v["trace_seconds"] + v["compile_seconds"] for v in stats.values())
    n_compiled = sum(v["compiles"] for v in stats.values())
    n_loaded = sum(v["loads"] for v in stats.values())
    n_reused = sum(1 for v in stats.values() if v["source"] == "memory")
    print(f"  integrator {state.integrator}: {state.nsteps} steps, {state.nfev} RHS and {state.njev} Jacobian calls;"
          f" wall {time.perf_counter() - wall0:.1f} s")
    print(f"  programs ({params.solver.compile_mode}): {n_compiled} compiled, {n_loaded} loaded from the "
          f"persistent cache, {n_reused} reused in memory; {compile_s:.1f} s tracing + compiling/loading")
    print(f"  wrote {written}")
    if args.plot:
        from aragog.io import plot_run

        print(f"  wrote {plot_run(written)}")
    return 0 if state.status >= 0 else 1


def _cmd_plot(args) -> int:
    from aragog.io import plot_run

    print(f"wrote {plot_run(args.file, args.output, against=args.against)}")
    return 0


def _cmd_inspect(args) -> int:
    from aragog.io import summarize

    print(summarize(args.file))
    return 0


def _cmd_validate(args) -> int:
    from aragog.validation import check_inputs

    params = _load(args)
    lines = check_inputs(params, rhs=args.rhs)
    print(f"{args.config}: OK")
    for line in lines:
        print(f"  {line}")
    return 0


def _cmd_show_config(args) -> int:
    from aragog._atomic import write_text_atomically
    from aragog.config import to_toml

    text = to_toml(_load(args))
    if args.output:
        write_text_atomically(args.output, text, "config")
    else:
        sys.stdout.write(text)
    return 0


def _cmd_eos_generate(args) -> int:
    from aragog import eos

    for name, value in (("--np", args.n_pressure), ("--ns", args.n_entropy)):
        if value is not None and value < 2:
            raise AragogError(f"{name} must be at least 2, got {value}")
    if args.pmax is not None and not (math.isfinite(args.pmax) and args.pmax > 0):
        raise AragogError(f"--pmax must be a positive number of GPa, got {args.pmax:g}")
    if args.model not in eos.BUNDLED_MODELS:
        raise AragogError(f"--model: unknown bundled model {args.model!r}; available: "
                          f"{', '.join(sorted(eos.BUNDLED_MODELS))}")
    directory = Path(args.directory)
    pmax = None if args.pmax is None else args.pmax * 1e9
    tables = eos.default_table_set(args.n_pressure, args.n_entropy, model=args.model, pmax=pmax)
    eos.write_table_set(tables, directory)
    shape = tables.melt.T.shape
    print(f"wrote the bundled {args.model!r} table set ({shape[1]} pressures x {shape[0]} entropies per "
          f"phase, 0-{tables.melt.P[-1] / 1e9:g} GPa) to {directory}")
    return 0


def _cmd_eos_plot(args) -> int:
    from aragog.io._eos_plot import plot_table_set

    out = plot_table_set(args.directory, args.output)
    print(f"wrote {out}")
    return 0


def _cmd_eos_check(args) -> int:
    from aragog import eos

    report = eos.check_table_set(args.directory)
    print(report.format())
    return 0 if report.ok else 1


def _cmd_info(args) -> int:
    import json

    from aragog._info import format_report, installation_report

    report = installation_report()
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _cache_choice(args):
    """The directory ``aragog cache`` works on, and the cap (MB), as a run would choose them
    (the user's JAX setting here can only be the environment's ``JAX_COMPILATION_CACHE_DIR``)."""
    from aragog.config._schema import keys_of
    from aragog.programs import _disk_cache as cache

    configured, max_mb = None, keys_of("solver")["jax_cache_max_mb"].default
    if args.config:
        solver = _load(argparse.Namespace(config=args.config, overrides=[])).solver
        configured, max_mb = solver.jax_cache_dir, solver.jax_cache_max_mb
    if args.dir:
        return cache.resolve_cache_dir(args.dir, origin="dir"), max_mb
    return cache.resolve_cache_dir(configured), max_mb


def _cmd_cache_info(args) -> int:
    from aragog.programs import _disk_cache as cache

    choice, max_mb = _cache_choice(args)
    if choice.directory is None:
        print(f"compilation cache: off ({choice.reason})")
        return 0
    directory = Path(choice.directory)
    print(f"compilation cache: {directory}")
    print(f"  why: {choice.reason}")
    if not directory.is_dir():
        print("  (not created yet: the first run creates it)")
    found = cache.cache_contents(directory)
    print(f"  JAX's entries: {found.jax_entries} ({cache.format_bytes(found.jax_bytes)})")
    print(f"  aragog's executables ({cache.EXECUTABLES}/): {found.own_entries} "
          f"({cache.format_bytes(found.own_bytes)})")
    print(f"  total: {cache.format_bytes(found.jax_bytes + found.own_bytes)}")
    if max_mb:
        print(f"  cap (solver.jax_cache_max_mb): {max_mb} MB of aragog's executables; least recently used "
              f"entries are evicted first (JAX's entries are JAX's: aragog writes none)")
    else:
        print("  cap (solver.jax_cache_max_mb): none")
    return 0


def _cmd_cache_clear(args) -> int:
    from aragog.programs import _disk_cache as cache

    choice, _ = _cache_choice(args)
    if choice.directory is None:
        print(f"compilation cache: off ({choice.reason}); nothing to clear (--dir DIR names a directory)")
        return 0
    if "://" in choice.directory:
        raise AragogError(f"{choice.directory} is a remote JAX cache: aragog clears local directories only")
    directory = Path(choice.directory)
    if directory.exists() and not directory.is_dir():
        raise AragogError(f"{directory} is not a directory")
    jax_too = not choice.users_jax or args.all
    removed = cache.clear_cache(directory, jax_entries=jax_too)
    print(f"compilation cache {directory} ({choice.reason}):")
    print(f"  removed {removed.own_entries} of aragog's executables ({cache.format_bytes(removed.own_bytes)})")
    if jax_too:
        print(f"  removed {removed.jax_entries} of JAX's entries ({cache.format_bytes(removed.jax_bytes)})")
    else:
        left = cache.cache_contents(directory)
        print(f"  kept JAX's {left.jax_entries} entries ({cache.format_bytes(left.jax_bytes)}): this is the "
              f"user's own JAX cache, which other programs may share (--all removes them too)")
    return 0


class _ClosedPipeProof(io.TextIOBase):
    """Standard output that outlives its reader: once the reader has gone (``aragog run ...
    | head -1``), what is printed goes nowhere and the command goes on to write its files
    (Python's advice for SIGPIPE: standard output's descriptor onto os.devnull)."""

    def __init__(self, stream):
        self._stream = stream

    def _closed_reader(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())  # the interpreter's own last flush too
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)
        self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the CLI

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._closed_reader()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed_reader()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 success, 1 user error, 2 usage error)."""
    stdout = sys.stdout
    sys.stdout = _ClosedPipeProof(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="aragog: %(levelname)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except AragogError as exc:
        print(f"aragog: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # unreadable/unwritable paths the modules did not already name
        print(f"aragog: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("aragog: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
