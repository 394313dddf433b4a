#!/usr/bin/env python
"""Time the entropy solver's solves, stage by stage (the speed figures of docs/solver.md and docs/output.md).

    python tools/profile_solves.py [--stages STAGE,STAGE,...|all] [--config input/earth.toml]
                                   [--nodes N [N ...]] [--modes fused,blocks] [--window YR] [--solves N]
                                   [--calls N] [--repeats N] [--cache-dir DIR|none] [--vary flux,tidal,radius]
                                   [--jacobians banded,dense] [--schedules S ...] [--rtol R] [--no-ref]
                                   [--output-points N] [--json OUT]

Stages (``--stages``, comma-separated, run in the order given; default
``first-solve,callbacks,repeated-solves``, about half a minute on the demo; ``all``: every
stage). Each prints its tables and fills one entry of the JSON file (``--json``). Every
stage runs once per node count of ``--nodes`` (default: the config's); the stages that
compare compile modes run each of ``--modes`` (default: the config's) side by side.

first-solve      The first solve of a fresh process (issue 11's targets: <= 2.5 s cold, <= 0.5 s
                 with a warm persistent cache, at 60 nodes): a ``--window``-year solve of the
                 config in a subprocess on an empty cache directory (cold), then a second
                 subprocess on the same directory (warm); ``--repeats`` such pairs, medians.
                 Split into import; derive (tables, mesh, inputs and static key, timed by
                 ``program_key()``); initial state (``jit_stats["initial"]``); programs (the
                 rest of ``initialize()``); integration; the first get_state (it waits for
                 the diagnostics compile that overlaps the integration). Per program: tracing
                 + lowering and compiling (cold) or loading (warm), XLA kernels (fusions) and
                 options; the warm/cold ratio of the summed trace + compile time (target <=
                 10 %). Then us per bare call of the compiled rhs / jac / diagnostics and per
                 integrator callback, and the solve's RHS and Jacobian calls. ``--cache-dir
                 none``: both processes without a persistent cache; ``--cache-dir DIR``: DIR
                 as found. Several ``--nodes`` and ``--modes``: the compile time against the
                 mesh size, fused vs blocks.
callbacks        One RHS and one Jacobian call through the integrator callbacks
                 (``BoundPair.rhs_into`` / ``jac_into``) against a bare call of the compiled
                 executable, at the initial state, for the banded (colored forward-mode) and
                 the dense (jacfwd) Jacobian (``--jacobians``): the callback overhead, the
                 Jacobian's cost in RHS calls (target <= 10) and its compile time.
repeated-solves  A coupling loop (docs/design.md, use 2): one solver, ``--solves`` consecutive
                 ``--window``-year solves (reset() + solve()), with the surface flux (prescribed
                 flux), the tidal heating and the planet radius, hence the mesh (``--vary``),
                 and the time window changing between solves. Per solve: wall time (reset +
                 solve), time in the RHS and Jacobian callbacks, CVODE's own time, Python
                 overhead outside the integrator (target <= 5 ms), calls and us per call
                 (median of solves 2..N, and solve 2); cumulative wall after 1, 10, 100
                 solves; the first solve's tracing and compiling per program with its XLA
                 kernels; the traces and compiles after the first solve (target: none).
rebuild          The pattern the compiled-once design replaces: every solve builds new jitted
                 closures of the RHS and its dense Jacobian with the inputs baked in, against
                 the cached loop of repeated-solves on the same inputs, solve by solve
                 (target: >= 10x slower).
energy           What the energy budget costs (docs/output.md): construction + initialize,
                 the first solve, the first get_state(energy_budget=True) (compiles the
                 diagnostics), with CPU times, then coupling steps of ``--window`` years
                 (default 100): solve, get_state after it and a repeated (cached) get_state,
                 medians; the last step's budget closure.
warm-start       CVODE warm start across coupling solves (docs/solver.md, "Warm start"):
                 solvers with ``solver.warm_start`` off and on and a reference at rtol 1e-11
                 (``--no-ref`` skips it) on the same loop, for each surface-flux schedule
                 (``--schedules``: ``sin30`` F0 (1 + 0.3 sin i), the loop of repeated-solves;
                 ``driftR`` F0 (1 - R i); ``const``): RHS and Jacobian calls and steps per
                 solve (mean of solves 2..N), how the warm solves started, the RHS jump, the
                 end-state difference warm - cold and each one's error against the reference.
demo             The whole demo run (the config as it is: initialize + solve + netCDF), wall
                 time and its compiling (target <= 60 s), per mode.
step-cost        What a CVODE step costs, itemised (docs/solver.md, "One compiled call per
                 step"), for each ``solver.newton`` (``--newton``, default callbacks and
                 compiled), twice each, alternating: the config's solve (``--window`` years
                 when given) per step: wall, time in compiled programs, in the Python around
                 them (callbacks and the nonlinear solver), in CVODE itself (the rest);
                 right-hand sides, Jacobians, factorisations, Newton iterations and calls
                 into XLA per step; the step in bare RHS calls (one call of the compiled
                 RHS at the end state; target <= 2); steps and the end state against the
                 callbacks' (the first run of each).

All stages but first-solve run in this process, without a persistent cache and with the
programs shared between solvers cleared first, so their first solves compile; variants
(modes, Jacobians, warm start on and off) run side by side, so that their ratios hold on a
noisy machine. Timings are medians unless said otherwise.

Only the public API is used, except for one private name: the bare calls (first-solve,
callbacks) need the compiled executables with the bound inputs (``bare_programs``); when it
has moved, those columns read "-" and the stage says so in one line.
"""

from __future__ import annotations

import sys
import time

if __name__ == "__main__" and "--first-worker" in sys.argv:
    _T_START = time.perf_counter()  # a first-solve worker: its import time counts

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

from aragog import EntropySolver, load_config, physics
from aragog.solver import JitPair, clear_shared_programs, compile_stats, compiled_program, kernel_counts
from aragog.solver.backends import dense_to_band, integrate

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("first-solve", "callbacks", "repeated-solves", "rebuild", "energy", "warm-start", "demo", "step-cost")
DEFAULT_STAGES = ("first-solve", "callbacks", "repeated-solves")
#: solves per loop and years per solve, per stage (``--solves`` and ``--window`` set all)
SOLVES = {"repeated-solves": 100, "rebuild": 3, "energy": 11, "warm-start": 12}
WINDOW = {"energy": 100.0}
DEFAULT_WINDOW = 10.0
TARGETS = {"cold_first_solve_s": 2.5, "warm_first_solve_s": 0.5, "warm_fraction": 0.10, "overhead_ms": 5.0,
           "jac_in_rhs_calls": 10.0, "rebuild_ratio": 10.0, "demo_wall_s": 60.0, "step_in_bare_rhs": 2.0}
F0 = 1.0e5  # prescribed surface flux of the coupling loops [W/m2]
SCHEDULES = ("sin30", "drift1e-2", "drift1e-3", "drift1e-4", "drift1e-5", "const")
VARY = ("flux", "tidal", "radius")


class StageUnavailable(RuntimeError):
    """A measurement that cannot be made with this aragog (a private name moved)."""


# ------------------------------------------------------------------------------ helpers --
def table(headers, rows) -> str:
    """A plain-text table: a header line, a rule, one line per row (cells left-aligned)."""
    widths = [max([len(str(h))] + [len(str(r[i])) for r in rows]) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def fmt(x, spec: str = ".3f", scale: float = 1.0) -> str:
    """``x * scale`` formatted with ``spec``, "-" for ``None``."""
    return "-" if x is None else format(scale * x, spec)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def float64():
    """JAX's x64 mode on in this thread while open (restored after): what the solver runs its
    integrator callbacks in, for this tool's own calls of them and of its own JAX closures."""
    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # older JAX
        from jax.experimental import enable_x64 as enable
    return enable(True)


def params_for(config, nodes=None, mode=None, cache="none", overrides=None):
    """The config's :class:`aragog.Config` with ``nodes`` (``mesh.number_of_nodes``),
    ``mode`` (``solver.compile_mode``), the persistent cache ``cache`` and ``overrides``."""
    over = {"solver.jax_cache_dir": cache}
    if nodes:
        over["mesh.number_of_nodes"] = nodes
    if mode:
        over["solver.compile_mode"] = mode
    over.update(overrides or {})
    return load_config(config, overrides=over)


def coupling_params(config, nodes, mode, window: float, vary):
    """The coupling loop's set-up: a prescribed surface flux F0, tidal heating when it varies."""
    over = {"solver.start_time": 0.0, "solver.end_time": window, "boundary_conditions.outer_boundary_condition": 4,
            "boundary_conditions.outer_boundary_value": F0}
    if "tidal" in vary:
        over.update({"energy.tidal": True, "energy.tidal_array": [1.0e-9]})
    return params_for(config, nodes, mode, overrides=over)


def change_inputs(params, i: int, t: float, window: float, radius0: float, vary) -> None:
    """The coupling step before solve ``i`` (from 1): a new time window and, as ``vary`` says,
    surface flux, tidal heating and planet radius (hence the whole mesh)."""
    params.solver.start_time, params.solver.end_time = t, t + window
    if "flux" in vary:
        params.boundary_conditions.outer_boundary_value = F0 * (1.0 + 0.3 * math.sin(i))
    if "tidal" in vary:
        params.energy.tidal_array = [1.0e-9 * (1.0 + 0.5 * math.cos(i))]
    if "radius" in vary:
        params.mesh.outer_radius = radius0 * (1.0 + 1.0e-3 * math.sin(0.7 * i))


def state_vector(solver) -> np.ndarray:
    """The integrator's state vector of the solver's current state: the last solve's own end
    state, or (before any solve) the state get_state() reports, joined by physics.join_state."""
    res = solver.integration_result
    if res is not None:
        return np.array(res.y_final, dtype=np.float64)
    out = solver.get_state()
    slot = out.dSdr_cmb if out.dSdr_cmb is not None else out.T_core
    with float64():
        return np.asarray(physics.join_state(out.S_final, slot, solver.inputs, solver.options), dtype=np.float64)


def end_entropy(solver) -> np.ndarray:
    """Cell entropy [J/kg/K] at the end of the last solve, as the integrator left it."""
    with float64():
        S = physics.split_state(solver.integration_result.y_final, solver.inputs, solver.options)[0]
        return np.asarray(S, dtype=np.float64)


def us_per_call(fn, calls: int) -> float:
    """Median microseconds of ``calls`` calls of ``fn`` (after one untimed call)."""
    fn()
    ts = np.empty(max(calls, 1))
    for i in range(ts.size):
        t0 = time.perf_counter()
        fn()
        ts[i] = time.perf_counter() - t0
    return float(np.median(ts) * 1e6)


def bare_programs(bound, names) -> tuple[dict, tuple]:
    """``(executables, inputs)``: ``executables[name](t, y, *inputs)`` calls compiled program
    ``name`` of a bound JitPair with its packed device inputs, no checks, no counters."""
    try:
        return bound.bare_executables(names)
    except AttributeError as exc:
        raise StageUnavailable(f"bare calls not measured: {type(bound).__name__}.bare_executables "
                               f"is missing ({exc})") from exc


def call_costs(bound, y: np.ndarray, calls: int, diagnostics: bool = True) -> dict:
    """us per integrator callback (``rhs_into`` / ``jac_into``) of ``bound`` at ``y`` and per
    bare call of the compiled rhs / jac (/ diagnostics) (medians of ``calls``; the Jacobian
    ``calls // 4``, the diagnostics ``calls // 10``), in x64 mode as the integrator calls
    them. Without the bare calls (a private name moved; ``bound`` not a JitPair's)
    ``bare_error`` says why."""
    with float64():
        return _call_costs(bound, y, calls, diagnostics)


def _call_costs(bound, y: np.ndarray, calls: int, diagnostics: bool) -> dict:
    out_r = np.empty(bound.n)
    shape = (bound.ml + bound.mu + 1, bound.n) if bound.jac_layout == "band" else (bound.n, bound.n)
    out_j = np.empty(shape)
    jac_calls, diag_calls = max(calls // 4, 10), max(calls // 10, 10)
    row = {"rhs_callback_us": us_per_call(lambda: bound.rhs_into(0.0, y, out_r), calls),
           "jac_callback_us": us_per_call(lambda: bound.jac_into(0.0, y, out_j), jac_calls)}
    if not isinstance(getattr(bound, "pair", None), JitPair):
        row["bare_error"] = "bare calls: fused programs only"
        return row
    names = ("rhs", "jac", "diagnostics") if diagnostics else ("rhs", "jac")
    try:
        progs, inputs = bare_programs(bound, names)
    except StageUnavailable as exc:
        row["bare_error"] = str(exc)
        return row
    row["rhs_bare_us"] = us_per_call(lambda: np.asarray(progs["rhs"](0.0, y, *inputs)), calls)
    row["jac_bare_us"] = us_per_call(lambda: np.asarray(progs["jac"](0.0, y, *inputs)), jac_calls)
    if diagnostics:
        row["diagnostics_bare_us"] = us_per_call(
            lambda: jax.block_until_ready(progs["diagnostics"](0.0, y, *inputs)), diag_calls)
    return row


def program_table(stats: dict, programs) -> dict:
    """Per program built (compiled or loaded): the compile counters of ``stats``
    (``jit_stats``) and, for a fused pair's programs, the XLA kernels and options of the
    compiled executable (``None`` where its HLO text is gone, e.g. loaded from a cache)."""
    keys = ("source", "traces", "compiles", "loads", "trace_seconds", "compile_seconds")
    out = {}
    for name, st in stats.items():
        if st["compiles"] + st["loads"] == 0:  # not built here ("initial": NumPy, never compiled)
            continue
        entry = {k: st[k] for k in keys}
        entry.update(kernels=None, fusions=None, gathers=None, partitioned=None, compiler_options=None)
        prog = compiled_program(programs, name)  # (executable, XLA options) or None
        if prog is not None:
            try:
                entry.update(kernel_counts(prog[0]))
            except Exception:  # noqa: BLE001 - a deserialized executable may have no HLO text
                pass
            entry["compiler_options"] = prog[1]
        out[name] = entry
    return out


def compile_counts(solver) -> dict:
    """``{program: [traces, compiles + loads]}`` of a solver so far."""
    return {k: [int(v["traces"]), int(v["compiles"] + v["loads"])] for k, v in solver.jit_stats.items()}


def summed_compile(programs: dict) -> tuple[float, float]:
    """(trace + lower seconds, compile or load seconds) summed over ``programs``."""
    return (sum(v["trace_seconds"] for v in programs.values()), sum(v["compile_seconds"] for v in programs.values()))


def node_list(args) -> list:
    return args.nodes or [None]


def nodes_of(solver) -> int:
    return int(solver.n_cells) + 1


# ------------------------------------------------------------------------- first-solve --
def first_solve_worker(cfg: dict) -> dict:
    """One fresh process: construction + derive + initialize + solve (the first solve), then
    the first get_state, timed by part; then kernels and per-call costs (after the timing)."""
    t_import = time.perf_counter() - _T_START if "_T_START" in globals() else None
    clear_shared_programs()  # run in-process (tests): compile, as a fresh process does
    params = params_for(cfg["config"], cfg["nodes"], cfg["mode"], cfg["cache"],
                        {"solver.end_time": cfg["window"]})
    w0, c0 = time.perf_counter(), time.process_time()
    solver = EntropySolver(params)
    solver.program_key()  # tables, mesh, inputs, static key: kept for initialize(), nothing compiled
    wd = time.perf_counter()
    solver.initialize()
    w1 = time.perf_counter()
    solver.solve()
    w2, c2 = time.perf_counter(), time.process_time()
    out = solver.get_state()
    w3 = time.perf_counter()
    stats = solver.jit_stats
    init_wall, derive, initial = w1 - w0, wd - w0, stats["initial"]["call_seconds"]
    res = solver.integration_result
    with float64():  # the inputs packed as the solver packs them
        bound = solver.programs.bind(solver.inputs)
    return {
        "ok": True, "mode": solver.parameters.solver.compile_mode, "nodes": nodes_of(solver),
        "window_yr": cfg["window"], "cache": cfg["cache"],
        "import_s": t_import, "first_solve_s": w2 - w0, "first_solve_cpu_s": c2 - c0,
        "initialize_s": init_wall, "derive_s": derive, "initial_state_s": initial,
        "programs_wall_s": init_wall - derive - initial, "solve_s": w2 - w1,
        "integrate_s": res.wall_seconds if res else None, "first_get_state_s": w3 - w2,
        "status": int(out.status), "nfev": int(out.nfev), "njev": int(out.njev), "nsteps": int(out.nsteps),
        "T_magma": out.T_magma, "programs": program_table(stats, solver.programs),
        "calls": call_costs(bound, state_vector(solver), cfg["calls"]),
        "load_average": os.getloadavg()[0],
    }


def run_first_worker(cfg: dict, timeout: float) -> dict:
    """:func:`first_solve_worker` in a fresh Python process (its own cache setting only)."""
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env.pop("ARAGOG_JAX_CACHE_DIR", None)
    try:
        proc = subprocess.run([sys.executable, __file__, "--first-worker", json.dumps(cfg)], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"> {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()
        return {"ok": False, "error": tail[-1] if tail else f"exit status {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


FIRST_KEYS = ("import_s", "first_solve_s", "first_solve_cpu_s", "initialize_s", "derive_s", "initial_state_s",
              "programs_wall_s", "solve_s", "integrate_s", "first_get_state_s")


def first_solve_summary(runs: dict) -> dict:
    """Medians of the cold and warm runs of one case, per program too, and the warm/cold
    ratio of the summed trace + compile (load) seconds."""
    med = {}
    for kind, rows in runs.items():
        ok = [r for r in rows if r.get("ok")]
        if not ok:
            continue
        m = {k: median(r.get(k) for r in ok) for k in FIRST_KEYS}
        m["programs"] = {name: {k: median(r["programs"][name][k] for r in ok if name in r["programs"])
                                for k in ("trace_seconds", "compile_seconds")} for name in ok[-1]["programs"]}
        m["trace_compile_s"] = median(sum(summed_compile(r["programs"])) for r in ok)
        m["load_only_s"] = median(summed_compile(r["programs"])[1] for r in ok)
        med[kind] = m
    if "cold" in med and "warm" in med and med["cold"]["trace_compile_s"]:
        cold = med["cold"]["trace_compile_s"]
        med["warm_vs_cold"] = {"cold_s": cold, "warm_s": med["warm"]["trace_compile_s"],
                               "fraction": med["warm"]["trace_compile_s"] / cold,
                               "warm_load_only_fraction": med["warm"]["load_only_s"] / cold}
    return med


def stage_first_solve(args) -> dict:
    window = args.window if args.window is not None else DEFAULT_WINDOW
    cases = {}
    for rep in range(args.repeats):
        for nodes in node_list(args):
            for mode in args.modes or [None]:
                with tempfile.TemporaryDirectory(prefix="aragog-time-solves-") as tmp:
                    cache = args.cache_dir or tmp
                    case = cases.setdefault((mode, nodes), {"cold": [], "warm": []})
                    for kind in ("cold", "warm"):
                        print(f"  ... first solve {rep + 1}/{args.repeats}, {mode or 'config mode'}, "
                              f"{nodes or 'config'} nodes, {kind}", file=sys.stderr, flush=True)
                        cfg = {"config": str(args.config), "nodes": nodes, "mode": mode, "window": window,
                               "cache": cache, "calls": args.calls}
                        case[kind].append(run_first_worker(cfg, args.timeout))
    out = []
    for (mode, nodes), runs in cases.items():
        ok = [r for r in runs["cold"] + runs["warm"] if r.get("ok")]
        out.append({"mode": ok[0]["mode"] if ok else mode, "nodes": ok[0]["nodes"] if ok else nodes,
                    "runs": runs, "median": first_solve_summary(runs)})
    if not any(c["median"] for c in out):
        raise RuntimeError(f"every first-solve process failed, e.g. {out[0]['runs']['cold'][0].get('error')}")
    return {"window_yr": window, "repeats": args.repeats, "cache_dir": args.cache_dir or "fresh temporary",
            "cases": out}


def print_first_solve(res: dict) -> None:
    print(f"first-solve: a fresh process, a {res['window_yr']:g}-yr first solve (median of {res['repeats']}; "
          f"cache: {res['cache_dir']}; targets: cold <= {TARGETS['cold_first_solve_s']} s, warm <= "
          f"{TARGETS['warm_first_solve_s']} s), seconds")
    cols = [("import_s", "import"), ("first_solve_s", "FIRST SOLVE"), ("derive_s", "derive"),
            ("initial_state_s", "initial"), ("programs_wall_s", "programs"), ("integrate_s", "integrate"),
            ("first_get_state_s", "get_state"), ("first_solve_cpu_s", "cpu"), ("trace_compile_s", "trace+compile")]
    rows, prog_rows, call_rows, notes = [], [], [], []
    for case in res["cases"]:
        med, label = case["median"], (case["mode"] or "-", case["nodes"] or "-")
        for kind in ("cold", "warm"):
            if kind in med:
                rows.append([*label, kind] + [fmt(med[kind].get(k)) for k, _ in cols])
            for r in case["runs"][kind]:
                if not r.get("ok"):
                    notes.append(f"   {label[0]} {label[1]} {kind}: FAILED {r.get('error')}")
        cold_ok = [r for r in case["runs"]["cold"] if r.get("ok")]
        if not cold_ok:
            continue
        last = cold_ok[-1]
        for name, entry in last["programs"].items():
            m = med["cold"]["programs"].get(name, {})
            w = med.get("warm", {}).get("programs", {}).get(name)
            opts = ",".join(f"{k}={v}" for k, v in (entry.get("compiler_options") or {}).items()) or "defaults"
            kern = "-" if entry.get("kernels") is None else f"{entry['kernels']} ({entry['fusions']})"
            prog_rows.append([*label, name, fmt(m.get("trace_seconds")), fmt(m.get("compile_seconds")),
                              fmt(w["compile_seconds"]) if w else "-", kern, opts])
        c = last["calls"]
        call_rows.append([*label, fmt(c.get("rhs_bare_us"), ".1f"), fmt(c["rhs_callback_us"], ".1f"),
                          fmt(c.get("jac_bare_us"), ".1f"), fmt(c["jac_callback_us"], ".1f"),
                          fmt(c.get("diagnostics_bare_us"), ".1f"), last["nfev"], last["njev"], last["nsteps"],
                          ", ".join(f"{r['load_average']:.1f}" for r in case["runs"]["cold"] + case["runs"]["warm"]
                                    if r.get("ok"))])
        if c.get("bare_error"):
            notes.append(f"   {label[0]} {label[1]}: {c['bare_error']}")
        for kind in ("cold", "warm"):
            if kind in med:
                v, target = med[kind]["first_solve_s"], TARGETS[f"{kind}_first_solve_s"]
                notes.append(f"   {label[0]} {label[1]}: {kind} first solve {v:.2f} s (target <= {target} s: "
                             f"{'met' if v <= target else 'NOT met'})")
        wc = med.get("warm_vs_cold")
        if wc:
            met = "met" if wc["fraction"] <= TARGETS["warm_fraction"] else "NOT met"
            notes.append(f"   {label[0]} {label[1]}: warm trace + load {100 * wc['fraction']:.1f} % of cold trace + "
                         f"compile (load only {100 * wc['warm_load_only_fraction']:.1f} %; target <= "
                         f"{100 * TARGETS['warm_fraction']:.0f} %: {met})")
    print(table(["mode", "nodes", "cache"] + [label for _, label in cols], rows))
    if prog_rows:
        print("\nper program (median s): cold trace + lower / compile, warm load; XLA kernels (fusions), options")
        print(table(["mode", "nodes", "program", "trace+lower", "compile", "warm load", "kernels", "options"],
                    prog_rows))
        print(f"\nus per call (last cold run), calls of the first solve, 1-min load average after each run "
              f"({os.cpu_count()} cores)")
        print(table(["mode", "nodes", "rhs bare", "rhs callback", "jac bare", "jac callback", "diagnostics bare",
                     "RHS calls", "Jac calls", "steps", "load"], call_rows))
    modes = list(dict.fromkeys(c["mode"] for c in res["cases"]))
    if len(modes) == 2:  # the compile-time crossover of the two modes
        by = {(c["mode"], c["nodes"]): c["median"].get("cold", {}).get("trace_compile_s") for c in res["cases"]}
        rows = []
        for nodes in sorted({c["nodes"] for c in res["cases"]}, key=lambda n: n or 0):
            a, b = by.get((modes[0], nodes)), by.get((modes[1], nodes))
            rows.append([nodes, fmt(a, ".2f"), fmt(b, ".2f"), f"{a / b:.2f}x" if a and b else "-"])
        print(f"\ncold first-solve trace + compile (s) against the mesh size, {modes[0]} vs {modes[1]}")
        print(table(["nodes", modes[0], modes[1], f"{modes[0]}/{modes[1]}"], rows))
    if notes:
        print("\n" + "\n".join(notes))


# --------------------------------------------------------------------------- callbacks --
def stage_callbacks(args) -> dict:
    cases = []
    for nodes in node_list(args):
        clear_shared_programs()
        solver = EntropySolver(params_for(args.config, nodes))
        solver.initialize()
        y = state_vector(solver)
        for variant in args.jacobians:
            if variant == "banded":
                pair, stats = solver.programs, lambda: solver.jit_stats
                if not isinstance(pair, JitPair):
                    raise StageUnavailable("callbacks: the config's compile_mode is not 'fused'")
            else:
                pair = solver.fresh_programs("dense")  # its own, unshared counters; compiled at bind
                stats = lambda pair=pair: compile_stats(pair)  # noqa: E731
            with float64():  # the inputs packed as the solver packs them (and the dense pair compiled)
                bound = pair.bind(solver.inputs)
            row = {"nodes": nodes_of(solver), "jacobian": variant, "n_state": int(bound.n)}
            row.update(call_costs(bound, y, args.calls, diagnostics=False))
            row["jac_in_rhs_calls"] = row["jac_callback_us"] / row["rhs_callback_us"]
            row["jac_compile_s"] = stats()["jac"]["compile_seconds"]
            cases.append(row)
    return {"calls": args.calls, "cases": cases}


def print_callbacks(res: dict) -> None:
    print(f"callbacks: us per call at the initial state (median of {res['calls']} RHS, {max(res['calls'] // 4, 10)} "
          f"Jacobian calls); Jacobian in RHS calls (target <= {TARGETS['jac_in_rhs_calls']:g})")
    us = lambda x: fmt(x, ".1f")  # noqa: E731
    rows = [[r["nodes"], r["jacobian"], r["n_state"], us(r["rhs_callback_us"]), us(r.get("rhs_bare_us")),
             us(r["jac_callback_us"]), us(r.get("jac_bare_us")), fmt(r["jac_in_rhs_calls"], ".2f"),
             fmt(r["jac_compile_s"], ".2f")] for r in res["cases"]]
    print(table(["nodes", "jacobian", "n", "rhs callback", "rhs bare", "jac callback", "jac bare", "jac/rhs",
                 "jac compile s"], rows))
    for err in sorted({r["bare_error"] for r in res["cases"] if r.get("bare_error")}):
        print(f"   {err}")


# --------------------------------------------------------------------- repeated-solves --
def loop_row(wall: float, reset: float, res) -> dict:
    """One solve of a loop: wall (inputs changed + reset + solve) split into reset, the RHS
    and Jacobian callbacks, CVODE's own time and the Python overhead outside the integrator."""
    cb = res.callback_seconds
    rhs_s, jac_s = cb.get("rhs", 0.0), cb.get("jac", 0.0)
    return {"wall_s": wall, "reset_s": reset, "solve_s": wall - reset, "integrate_s": res.wall_seconds,
            "rhs_s": rhs_s, "jac_s": jac_s, "callbacks_s": rhs_s + jac_s, "cvode_s": res.wall_seconds - rhs_s - jac_s,
            "overhead_s": wall - res.wall_seconds, "nfev": int(res.nfev), "njev": int(res.njev),
            "nsteps": int(res.nsteps), "status": int(res.status),
            "us_per_rhs": 1e6 * rhs_s / max(res.nfev, 1), "us_per_jac": 1e6 * jac_s / max(res.njev, 1)}


class CouplingLoop:
    """One solver of the coupling loop: :meth:`step` changes the inputs (solve 2 on) and
    solves, recording the row of each solve, the cumulative wall time and the counters."""

    def __init__(self, args, nodes, mode, window: float):
        self.window, self.vary = window, args.vary
        w0 = time.perf_counter()
        self.solver = EntropySolver(coupling_params(args.config, nodes, mode, window, args.vary))
        self.solver.initialize()
        self.radius0 = float(self.solver.parameters.mesh.outer_radius)
        self.t = window
        self.rows, self.cumulative = [], []
        self.first_wall = time.perf_counter() - w0  # construction + initialize, added to solve 1
        self.first_programs = self.counts_after_first = None

    def step(self, i: int) -> None:
        solver = self.solver
        w0 = time.perf_counter()
        if i > 0:
            change_inputs(solver.parameters, i, self.t, self.window, self.radius0, self.vary)
            self.t += self.window
            solver.reset()
        w1 = time.perf_counter()
        solver.solve()
        row = loop_row(time.perf_counter() - w0, w1 - w0, solver.integration_result)
        if i == 0:
            solver.get_state()  # the diagnostics, as a coupling loop reads the state
            row["wall_s"] = self.first_wall + time.perf_counter() - w0  # initialize + compiles included
            self.first_programs = program_table(solver.jit_stats, solver.programs)
            self.counts_after_first = compile_counts(solver)
        self.rows.append(row)
        self.cumulative.append((self.cumulative[-1] if self.cumulative else 0.0) + row["wall_s"])

    def summary(self) -> dict:
        counts = compile_counts(self.solver)
        new = {k: [v[0] - self.counts_after_first.get(k, [0, 0])[0], v[1] - self.counts_after_first.get(k, [0, 0])[1]]
               for k, v in counts.items()}
        # a program first built after the first solve, once (the compiled Newton solve,
        # compiled in the background from the second solve: docs/solver.md), is not a re-trace
        first = self.counts_after_first
        built_later = {k: v for k, v in new.items() if first.get(k, [0, 0]) == [0, 0] and v != [0, 0]}
        retraced = (any(v != [0, 0] for k, v in new.items() if k not in built_later)
                    or any(v[0] > 1 or v[1] > 1 for v in built_later.values()))
        later = self.rows[1:] or self.rows
        keys = [k for k in later[0] if k != "status"]
        return {"mode": self.solver.parameters.solver.compile_mode, "nodes": nodes_of(self.solver),
                "median": {k: statistics.median(r[k] for r in later) for k in keys},
                "solve_2": dict((self.rows[1:2] or self.rows)[0]), "rows": self.rows,
                "cumulative_s": self.cumulative, "first_solve": self.first_programs,
                "new_after_first": {k: v for k, v in new.items() if k not in built_later},
                "built_after_first": built_later, "retraced": retraced,
                "all_status_0": all(r["status"] == 0 for r in self.rows)}


def stage_repeated_solves(args) -> dict:
    solves = args.solves or SOLVES["repeated-solves"]
    window = args.window if args.window is not None else DEFAULT_WINDOW
    cases = []
    for nodes in node_list(args):
        clear_shared_programs()
        loops = [CouplingLoop(args, nodes, mode, window) for mode in args.modes or [None]]
        for i in range(solves):
            for loop in loops:  # the modes side by side, solve by solve
                loop.step(i)
        cases.extend(loop.summary() for loop in loops)
    return {"solves": solves, "window_yr": window, "vary": list(args.vary), "cases": cases}


def print_repeated_solves(res: dict) -> None:
    n = res["solves"]
    names = {"flux": "surface flux", "tidal": "tidal heating", "radius": "radius (mesh)"}
    print(f"repeated-solves: {n} consecutive {res['window_yr']:g}-yr solves; between solves the window"
          f"{''.join(', ' + names[v] for v in res['vary'])} change (ms; median of solves 2..{n}, and solve 2)")
    ms = lambda x: fmt(x, ".2f", 1e3)  # noqa: E731
    rows = []
    for c in res["cases"]:
        for label, r in (("median", c["median"]), ("solve 2", c["solve_2"])):
            rows.append([c["mode"], c["nodes"], label, ms(r["wall_s"]), ms(r["reset_s"]), ms(r["rhs_s"]),
                         ms(r["jac_s"]), ms(r["cvode_s"]), ms(r["overhead_s"]), int(r["nfev"]), int(r["njev"]),
                         int(r["nsteps"]), fmt(r["us_per_rhs"], ".0f"), fmt(r["us_per_jac"], ".0f")])
    print(table(["mode", "nodes", "which", "wall", "reset", "RHS cb", "Jac cb", "CVODE", "overhead", "RHS calls",
                 "Jac calls", "steps", "us/RHS", "us/Jac"], rows))
    marks = [m for m in (1, 10, 100, 1000) if m <= n]
    rows = [[c["mode"], c["nodes"]] + [fmt(c["cumulative_s"][m - 1], ".2f") for m in marks]
            + [ms((c["cumulative_s"][-1] - c["cumulative_s"][0]) / (n - 1)) if n > 1 else "-"] for c in res["cases"]]
    print("\ncumulative wall (s) after N solves (construction, initialize and compiles in N = 1)")
    print(table(["mode", "nodes"] + [f"N = {m}" for m in marks] + ["per later solve (ms)"], rows))
    rows = []
    for c in res["cases"]:
        for name, v in c["first_solve"].items():
            rows.append([c["mode"], c["nodes"], name, v["source"], v["compiles"], fmt(v["trace_seconds"], ".2f"),
                         fmt(v["compile_seconds"], ".2f"), "-" if v["kernels"] is None else v["kernels"]])
        tr, co = summed_compile(c["first_solve"])
        rows.append([c["mode"], c["nodes"], "TOTAL", "", "", fmt(tr, ".2f"), fmt(co, ".2f"), ""])
    print("\nfirst solve: tracing + lowering vs compiling per program (s), XLA kernels (fused)")
    print(table(["mode", "nodes", "program", "source", "compiles", "trace+lower", "compile", "kernels"], rows))
    for c in res["cases"]:
        over = 1e3 * c["median"]["overhead_s"]
        new = {k: v for k, v in c["new_after_first"].items() if v != [0, 0]}
        later = c.get("built_after_first") or {}
        print(f"   {c['mode']} {c['nodes']}: traces/compiles after the first solve: {new or 'none'} (target: none); "
              f"first built after it (once each): {later or 'none'}; "
              f"overhead {over:.2f} ms (target <= {TARGETS['overhead_ms']:g} ms: "
              f"{'met' if over <= TARGETS['overhead_ms'] else 'NOT met'}); all statuses 0: {c['all_status_0']}")


# ----------------------------------------------------------------------------- rebuild --
def rebuild_solve(solver, y0: np.ndarray) -> dict:
    """One solve as the compiled-once design does not: new jitted closures of the RHS and of
    its dense Jacobian with this solve's inputs baked in as constants, integrated by the same
    back end and tolerances (a scalar atol) from ``y0``, in x64 mode."""
    with float64():
        return _rebuild_solve(solver, y0)


def _rebuild_solve(solver, y0: np.ndarray) -> dict:
    w0 = time.perf_counter()
    inputs, options = solver.inputs, solver.options
    ml, mu = physics.band_widths(options)
    rhs = jax.jit(lambda t, y: physics.rhs(t, y, inputs, options))
    jac = jax.jit(jax.jacfwd(lambda y, t: physics.rhs(t, y, inputs, options)))

    class Problem:  # the integrator's callback object (OdeProblemLike)
        n, jac_layout = y0.shape[0], "band"

        def rhs_into(self, t, y, out):
            out[:] = rhs(t, jnp.asarray(y))

        def jac_into(self, t, y, out):
            out[:] = dense_to_band(np.asarray(jac(jnp.asarray(y), t)), ml, mu)

    problem = Problem()
    problem.ml, problem.mu = ml, mu
    sp = solver.parameters.solver
    res = integrate(problem, [float(sp.start_time), float(sp.end_time)], y0, method="cvode", rtol=float(sp.rtol),
                    atol=float(sp.atol) / float(inputs.scales.S), max_steps=int(sp.max_steps))
    return {"wall_s": time.perf_counter() - w0, "nfev": int(res.nfev), "njev": int(res.njev),
            "status": int(res.status)}


def stage_rebuild(args) -> dict:
    solves = args.solves or SOLVES["rebuild"]
    window = args.window if args.window is not None else DEFAULT_WINDOW
    cases = []
    for nodes in node_list(args):
        clear_shared_programs()
        loop = CouplingLoop(args, nodes, "fused", window)
        loop.step(0)  # the cached loop's first solve (compiles)
        solver, rebuilt, cached = loop.solver, [], []
        for i in range(1, solves + 1):
            print(f"  ... rebuild solve {i}/{solves}", file=sys.stderr, flush=True)
            with float64():  # the state to start from, in the new inputs' scales
                S, slot = physics.split_state(solver.integration_result.y_final, solver.inputs, solver.options)
                w0 = time.perf_counter()
                change_inputs(solver.parameters, i, loop.t, window, loop.radius0, loop.vary)
                loop.t += window
                solver.reset()
                y0 = np.asarray(physics.join_state(S, slot, solver.inputs, solver.options), dtype=np.float64)
            reset_s = time.perf_counter() - w0
            row = rebuild_solve(solver, y0)
            row["wall_s"] += reset_s
            rebuilt.append(row)
            w1 = time.perf_counter()
            solver.solve()
            cached.append(loop_row(reset_s + time.perf_counter() - w1, reset_s, solver.integration_result))
        later = rebuilt[1:] or rebuilt  # the first rebuild also pays one-time costs of jax.jit
        reb, cac = median(r["wall_s"] for r in later), median(r["wall_s"] for r in cached)
        cases.append({"nodes": nodes_of(solver), "rebuild_rows": rebuilt, "cached_rows": cached,
                      "rebuild_per_solve_s": reb, "cached_per_solve_s": cac, "ratio": reb / cac})
    return {"solves": solves, "window_yr": window, "vary": list(args.vary), "cases": cases}


def print_rebuild(res: dict) -> None:
    target = TARGETS["rebuild_ratio"]
    print(f"rebuild: new jitted closures every solve (inputs baked in) vs the cached loop, fused, "
          f"{res['solves']} {res['window_yr']:g}-yr solves side by side (target: ratio >= {target:g})")
    rows = [[c["nodes"], fmt(c["rebuild_per_solve_s"], ".2f"), fmt(c["cached_per_solve_s"], ".2f", 1e3),
             f"{c['ratio']:.0f}x", "met" if c["ratio"] >= target else "NOT met"] for c in res["cases"]]
    print(table(["nodes", "rebuild every solve (s)", "cached (ms)", "ratio", "target"], rows))


# ------------------------------------------------------------------------------ energy --
def stage_energy(args) -> dict:
    solves = args.solves or SOLVES["energy"]
    dt = args.window if args.window is not None else WINDOW["energy"]
    cases = []
    for nodes in node_list(args):
        clear_shared_programs()
        w0 = time.perf_counter()
        params = params_for(args.config, nodes, overrides={"solver.start_time": 0.0, "solver.end_time": dt,
                                                          "solver.output_points": args.output_points})
        solver = EntropySolver(params)
        solver.initialize()
        t_init = time.perf_counter() - w0
        w0, c0 = time.perf_counter(), time.process_time()
        solver.solve()
        t_solve, c_solve = time.perf_counter() - w0, time.process_time() - c0
        w0, c0 = time.perf_counter(), time.process_time()
        out = solver.get_state(energy_budget=True)
        t_state, c_state = time.perf_counter() - w0, time.process_time() - c0
        solve_s, state_s, cached_s = [], [], []
        for k in range(1, solves):  # coupling steps: reset, solve, get_state, get_state again
            sp = solver.parameters.solver
            sp.start_time, sp.end_time = k * dt, (k + 1) * dt
            solver.reset()
            w0 = time.perf_counter()
            solver.solve()
            w1 = time.perf_counter()
            out = solver.get_state(energy_budget=True)
            w2 = time.perf_counter()
            solver.get_state(energy_budget=True)
            solve_s.append(w1 - w0)
            state_s.append(w2 - w1)
            cached_s.append(time.perf_counter() - w2)
        closure = None
        if out.step_dE_state_heat_J is not None:
            dE = out.step_dE_state_heat_J
            src = out.step_dE_F_int_J + out.step_dE_F_cmb_J + out.step_dE_Q_radio_J + out.step_dE_Q_tidal_J
            closure = (dE - src - out.step_solver_residual_J) / abs(dE)
        stats = solver.jit_stats
        compiled = {name: stats[name]["trace_seconds"] + stats[name]["compile_seconds"]
                    for name in ("diagnostics", "powers") if name in stats}
        cases.append({
            "nodes": nodes_of(solver), "output_points": args.output_points, "dt_yr": dt, "steps": solves - 1,
            "init_s": t_init, "first_solve_s": t_solve, "first_solve_cpu_s": c_solve, "first_get_state_s": t_state,
            "first_get_state_cpu_s": c_state, "diagnostics_compile_s": compiled.get("diagnostics", 0.0),
            "powers_compile_s": compiled.get("powers"), "solve_median_s": median(solve_s),
            "get_state_median_s": median(state_s), "get_state_cached_median_s": median(cached_s),
            "has_budget": out.step_dE_state_heat_J is not None, "last_closure_rel": closure})
    return {"cases": cases}


def print_energy(res: dict) -> None:
    cases = res["cases"]
    c0 = cases[0]
    print(f"energy: the energy budget's cost, {c0['output_points']} output times, {c0['steps']} steps of "
          f"{c0['dt_yr']:g} yr after the first solve (s)")
    rows = [("construct + initialize", "init_s"), ("first solve (compiles rhs, jac)", "first_solve_s"),
            ("  CPU time of the first solve", "first_solve_cpu_s"),
            ("first get_state (compiles diagnostics)", "first_get_state_s"),
            ("  CPU time of the first get_state", "first_get_state_cpu_s"),
            ("  of which diagnostics trace + compile", "diagnostics_compile_s"),
            ("  of which powers trace + compile", "powers_compile_s"),
            ("solve, median", "solve_median_s"), ("get_state after a solve, median", "get_state_median_s"),
            ("get_state again (cached budget), median", "get_state_cached_median_s")]
    body = [[label] + [fmt(c[key]) for c in cases] for label, key in rows]
    body.append(["budget closure |dE - sources| / |dE|"] + [fmt(c["last_closure_rel"], ".2e") for c in cases])
    print(table([""] + [f"{c['nodes']} nodes" for c in cases], body))


# -------------------------------------------------------------------------- warm-start --
def flux(schedule: str, i: int) -> float:
    """Surface flux of solve ``i`` (from 0) under ``schedule``."""
    if schedule == "const":
        return F0
    if schedule == "sin30":
        return F0 * (1.0 + 0.3 * math.sin(i))
    if schedule.startswith("drift"):
        return F0 * (1.0 - float(schedule[5:]) * i)
    raise ValueError(f"unknown schedule {schedule!r}")


def warm_case(args, nodes, schedule: str, solves: int, window: float) -> dict:
    """Solvers with the warm start off ("cold") and on ("warm") and a cold reference at rtol
    = atol = 1e-11 ("ref") through the same loop, solve by solve."""
    def make(warm: bool, tol):
        over = {"solver.warm_start": warm, "boundary_conditions.outer_boundary_condition": 4,
                "boundary_conditions.outer_boundary_value": F0}
        if tol is not None:
            over.update({"solver.rtol": tol, "solver.atol": tol})
        solver = EntropySolver(params_for(args.config, nodes, overrides=over))
        solver.initialize()
        return solver

    names = ["cold", "warm"] + ([] if args.no_ref else ["ref"])
    solvers = {"cold": make(False, args.rtol), "warm": make(True, args.rtol)}
    if not args.no_ref:
        solvers["ref"] = make(False, 1e-11)
    rows = {k: [] for k in names}
    diff, err = [], {"cold": [], "warm": []}
    for i in range(solves):
        for name in names:
            s = solvers[name]
            p = s.parameters
            p.boundary_conditions.outer_boundary_value = flux(schedule, i)
            p.solver.start_time, p.solver.end_time = window * i, window * (i + 1)
            s.reset()
            t0 = time.perf_counter()
            s.solve()
            wall = time.perf_counter() - t0
            r = s.integration_result
            rows[name].append({"status": int(r.status), "nfev": int(r.nfev), "njev": int(r.njev),
                               "nsteps": int(r.nsteps), "wall_s": wall, "mode": r.info.get("warm_start", "off"),
                               "jump": r.info.get("rhs_jump"), "err_test_fails": int(r.info.get("NumErrTestFails", 0))})
        S = {k: end_entropy(solvers[k]) for k in names}
        diff.append(float(np.max(np.abs(S["warm"] - S["cold"]))))
        if not args.no_ref:
            for k in ("cold", "warm"):
                err[k].append(float(np.max(np.abs(S[k] - S["ref"]))))
    nodes = nodes_of(solvers["cold"])
    solvers.clear()  # their CVODE memories are freed with them
    summary = {}
    for name in ("cold", "warm"):
        later = rows[name][1:]
        summary[name] = {k: float(np.mean([r[k] for r in later]))
                         for k in ("nfev", "njev", "nsteps", "wall_s", "err_test_fails")}
        summary[name]["all_status_0"] = all(r["status"] == 0 for r in rows[name])
        summary[name]["max_err_vs_ref"] = None if args.no_ref else max(err[name])
    modes = [r["mode"] for r in rows["warm"][1:]]
    jumps = [r["jump"] for r in rows["warm"][1:] if r["jump"] is not None]
    summary["warm"]["modes"] = {m: modes.count(m) for m in sorted(set(modes))}
    summary["warm"]["max_jump"] = max(jumps) if jumps else None
    summary["warm"]["median_jump"] = float(np.median(jumps)) if jumps else None
    summary["max_diff_warm_cold"] = max(diff)
    summary["rhs_saved_fraction"] = 1.0 - summary["warm"]["nfev"] / summary["cold"]["nfev"]
    return {"nodes": nodes, "schedule": schedule, "solves": solves, "window_yr": window, "summary": summary,
            "per_solve": rows, "diff_warm_cold": diff, "err_vs_ref": err}


def stage_warm_start(args) -> dict:
    solves = args.solves or SOLVES["warm-start"]
    if solves < 2:
        raise StageUnavailable("warm-start: needs --solves >= 2")
    window = args.window if args.window is not None else DEFAULT_WINDOW
    cases = []
    for nodes in node_list(args):
        clear_shared_programs()
        for schedule in args.schedules:
            t0 = time.perf_counter()
            case = warm_case(args, nodes, schedule, solves, window)
            case["seconds"] = time.perf_counter() - t0
            print(f"  ... warm start, {case['nodes']} nodes, {schedule}: {case['seconds']:.0f} s", file=sys.stderr,
                  flush=True)
            cases.append(case)
    return {"solves": solves, "window_yr": window, "rtol": args.rtol, "cases": cases}


def print_warm_start(res: dict) -> None:
    g = lambda x: fmt(x, ".3g")  # noqa: E731
    rows = []
    for c in res["cases"]:
        s = c["summary"]
        rows.append([c["nodes"], c["schedule"], f"{s['cold']['nfev']:.1f}", f"{s['warm']['nfev']:.1f}",
                     f"{100 * s['rhs_saved_fraction']:+.0f} %", f"{s['cold']['njev']:.2f}", f"{s['warm']['njev']:.2f}",
                     f"{s['cold']['nsteps']:.1f}", f"{s['warm']['nsteps']:.1f}",
                     " ".join(f"{k}:{v}" for k, v in s["warm"]["modes"].items()), g(s["warm"]["median_jump"]),
                     g(s["max_diff_warm_cold"]), g(s["cold"]["max_err_vs_ref"]), g(s["warm"]["max_err_vs_ref"]),
                     "yes" if s["cold"]["all_status_0"] and s["warm"]["all_status_0"] else "NO"])
    print(f"warm-start: per {res['window_yr']:g}-yr coupling solve, mean of solves 2..{res['solves']} (rtol "
          f"{res['rtol'] or 'of the config'}); RHS: right-hand-side calls (saved: warm vs cold); dS: largest |S| "
          "difference [J/kg/K], warm - cold and each against rtol 1e-11")
    print(table(["nodes", "flux", "RHS cold", "RHS warm", "saved", "Jac cold", "Jac warm", "steps cold", "steps warm",
                 "warm starts", "jump (median)", "dS warm-cold", "err cold", "err warm", "status 0"], rows))


# -------------------------------------------------------------------------------- demo --
def stage_demo(args) -> dict:
    cases = []
    for mode in args.modes or [None]:
        clear_shared_programs()
        t0 = time.perf_counter()
        solver = EntropySolver(params_for(args.config, mode=mode))
        solver.initialize()
        solver.solve()
        out = solver.get_state()
        t_solve = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            solver.write_netcdf(Path(tmp) / "demo.nc")
        stats = solver.jit_stats
        cases.append({
            "mode": solver.parameters.solver.compile_mode, "nodes": nodes_of(solver),
            "wall_s": time.perf_counter() - t0, "initialize_and_solve_s": t_solve,
            "compile_s": sum(v["trace_seconds"] + v["compile_seconds"] for v in stats.values()),
            "status": int(out.status), "message": out.message, "nsteps": int(out.nsteps), "nfev": int(out.nfev),
            "njev": int(out.njev), "T_magma": out.T_magma, "Phi_global": out.Phi_global, "integrator": out.integrator})
    return {"config": str(args.config), "cases": cases}


def print_demo(res: dict) -> None:
    print(f"demo: the whole run of {Path(res['config']).name} (initialize + solve + netCDF; target <= "
          f"{TARGETS['demo_wall_s']:g} s)")
    rows = [[c["mode"], c["nodes"], fmt(c["wall_s"], ".1f"), fmt(c["compile_s"], ".1f"), c["nsteps"], c["nfev"],
             c["njev"], c["status"], f"{c['T_magma']:.0f}", f"{c['Phi_global']:.3f}"] for c in res["cases"]]
    print(table(["mode", "nodes", "wall s", "compiling s", "steps", "RHS calls", "Jac calls", "status",
                 "T_magma K", "Phi_global"], rows))


# --------------------------------------------------------------------------- step-cost --
def _step_cost_run(args, newton: str) -> tuple[dict, np.ndarray]:
    """One solve of the config with ``solver.newton = newton``: its per-step costs and the
    end state vector."""
    clear_shared_programs()
    over = {"solver.newton": newton}
    if args.window:
        over["solver.end_time"] = float(load_config(args.config).solver.start_time) + args.window
    solver = EntropySolver(params_for(args.config, node_list(args)[0], overrides=over))
    solver.initialize()
    before = {k: v["call_seconds"] for k, v in solver.jit_stats.items()}
    t0 = time.perf_counter()
    solver.solve()
    wall = time.perf_counter() - t0
    res, stats = solver.integration_result, solver.jit_stats
    info = res.info
    programs = {k: v["call_seconds"] - before.get(k, 0.0) for k, v in stats.items()}
    in_programs = sum(programs.values())
    # the Python around the compiled calls: the integrator's callbacks (their time includes
    # the programs they call) and the compiled Newton solver's (its corrector's call inside)
    callbacks = sum(res.callback_seconds.values()) + info.get("NewtonSeconds", 0.0)
    around = callbacks - programs.get("rhs", 0.0) - programs.get("jac", 0.0) - programs.get("corrector", 0.0)
    around -= programs.get("melt_fraction", 0.0)  # the phase step cap's event calls it
    steps = max(int(res.nsteps), 1)
    y = state_vector(solver)
    try:
        progs, inputs = bare_programs(solver.programs.bind(solver.inputs), ("rhs",))
        with float64():
            rhs_us = us_per_call(lambda: np.asarray(progs["rhs"](0.0, y, *inputs)), args.calls)
    except StageUnavailable:
        rhs_us = None
    per = lambda x: x / steps  # noqa: E731
    row = {
        "newton": info.get("newton", newton), "nodes": nodes_of(solver), "status": int(res.status),
        "steps": int(res.nsteps), "wall_s": wall, "step_us": 1e6 * per(wall),
        "programs_us": 1e6 * per(in_programs), "python_us": 1e6 * per(max(around, 0.0)),
        "cvode_us": 1e6 * per(max(wall - in_programs - max(around, 0.0), 0.0)),
        "program_us": {k: 1e6 * per(v) for k, v in programs.items() if v > 0.0},
        "rhs_per_step": per(res.nfev), "jac_per_step": per(res.njev),
        "setups_per_step": per(info.get("NumLinSolvSetups", 0)),
        "newton_iters_per_step": per(info.get("NumNonlinSolvIters", 0)),
        "xla_calls_per_step": per(sum(v["calls"] for v in stats.values())),
        "error_test_fails": int(info.get("NumErrTestFails", 0)),
        "conv_fails": int(info.get("NumNonlinSolvConvFails", 0)),
        "rhs_bare_us": rhs_us,
    }
    row["step_in_bare_rhs"] = None if not rhs_us else row["step_us"] / rhs_us
    return row, y


def stage_step_cost(args) -> dict:
    runs, first = [], {}
    for _ in range(2):
        for newton in args.newton:
            row, y = _step_cost_run(args, newton)
            first.setdefault(newton, (row, y))
            runs.append(row)
    ref_row, ref_y = first.get("callbacks", next(iter(first.values())))
    for row_y in first.values():
        row, y = row_y
        row["steps_vs_callbacks"] = row["steps"] / max(ref_row["steps"], 1)
        row["end_state_vs_callbacks"] = float(np.max(np.abs(y - ref_y) / np.maximum(np.abs(ref_y), 1e-300)))
    return {"config": str(args.config), "window": args.window, "runs": runs}


def print_step_cost(res: dict) -> None:
    window = f"{res['window']:g} yr" if res["window"] else "the config's window"
    print(f"step-cost: one CVODE step of {Path(res['config']).name} ({window}), per solver.newton, twice each "
          f"(target: a step <= {TARGETS['step_in_bare_rhs']:g} bare RHS calls)")
    us = lambda x: fmt(x, ".0f")  # noqa: E731
    rows = [[r["newton"], r["nodes"], r["steps"], fmt(r["wall_s"], ".2f"), us(r["step_us"]), us(r["programs_us"]),
             us(r["python_us"]), us(r["cvode_us"]), fmt(r["rhs_per_step"], ".2f"), fmt(r["jac_per_step"], ".3f"),
             fmt(r["setups_per_step"], ".3f"), fmt(r["newton_iters_per_step"], ".2f"),
             fmt(r["xla_calls_per_step"], ".2f"), us(r["rhs_bare_us"]), fmt(r["step_in_bare_rhs"], ".2f")]
            for r in res["runs"]]
    print(table(["newton", "nodes", "steps", "wall s", "us/step", "programs", "python", "cvode", "RHS/step",
                 "Jac/step", "LU/step", "iters/step", "XLA calls/step", "bare RHS us", "step/bare RHS"], rows))
    for r in res["runs"]:
        if "steps_vs_callbacks" in r:
            per = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["program_us"].items()))
            print(f"   {r['newton']}: steps x{r['steps_vs_callbacks']:.3f} of callbacks', end state "
                  f"{r['end_state_vs_callbacks']:.1e} relative; us per step in each program: {per}")


# -------------------------------------------------------------------------------- main --
STAGE_HELP = {
    "first-solve": "fresh processes, cold and warm cache: the first solve by part, per-program compiles",
    "callbacks": "us per RHS / Jacobian call, integrator callback vs bare, banded vs dense Jacobian",
    "repeated-solves": "a coupling loop: per-solve breakdown, scaling, first-solve compiles, no re-tracing",
    "rebuild": "new jitted closures every solve vs the cached loop",
    "energy": "the energy budget's cost: first solve, first get_state, get_state per step",
    "warm-start": "CVODE warm start off vs on (and a reference) per surface-flux schedule",
    "demo": "the whole demo run, per mode",
    "step-cost": "one CVODE step itemised (programs, Python, CVODE; calls per step), per solver.newton",
}
RUN = {"first-solve": (stage_first_solve, print_first_solve), "callbacks": (stage_callbacks, print_callbacks),
       "repeated-solves": (stage_repeated_solves, print_repeated_solves), "rebuild": (stage_rebuild, print_rebuild),
       "energy": (stage_energy, print_energy), "warm-start": (stage_warm_start, print_warm_start),
       "demo": (stage_demo, print_demo), "step-cost": (stage_step_cost, print_step_cost)}


def comma_list(choices):
    """An argparse type: a comma-separated list of ``choices`` (``all``: every one)."""
    def parse(text: str) -> list:
        items = list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
        if items == ["all"]:
            return list(choices)
        bad = [s for s in items if s not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (got {text!r})")
        return items
    return parse


def json_default(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def main(argv=None) -> int:
    epilog = "stages (the module docstring says more):\n" + "\n".join(f"  {k:<16} {v}" for k, v in STAGE_HELP.items())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=comma_list(STAGES), default=list(DEFAULT_STAGES),
                    help=f"comma-separated, or 'all' (default: {','.join(DEFAULT_STAGES)})")
    ap.add_argument("--config", type=Path, default=ROOT / "input" / "earth.toml")
    ap.add_argument("--nodes", type=int, nargs="+",
                    help="basic nodes (cells + 1), one case each (default: the config's)")
    ap.add_argument("--modes", type=comma_list(("fused", "blocks")), default=None,
                    help="compile modes side by side: first-solve, repeated-solves, demo (default: the config's)")
    ap.add_argument("--window", type=float, default=None,
                    help=f"years per solve (default {DEFAULT_WINDOW:g}; energy {WINDOW['energy']:g})")
    per_stage = ", ".join(f"{k} {v}" for k, v in SOLVES.items())
    ap.add_argument("--solves", type=int, default=None,
                    help=f"solves per loop, the first included (default: {per_stage})")
    ap.add_argument("--calls", type=int, default=2000, help="timed RHS calls per figure (Jacobian: a quarter)")
    ap.add_argument("--repeats", type=int, default=1, help="first-solve: cold/warm process pairs per case")
    ap.add_argument("--cache-dir", default=None,
                    help="first-solve: persistent cache, 'none', a directory, or (default) a fresh temporary one")
    ap.add_argument("--vary", type=comma_list(VARY), default=list(VARY),
                    help="repeated-solves, rebuild: what changes between solves besides the window (default: all)")
    ap.add_argument("--jacobians", type=comma_list(("banded", "dense")), default=["banded", "dense"],
                    help="callbacks: Jacobian variants (default: both)")
    ap.add_argument("--schedules", nargs="+", default=list(SCHEDULES), help="warm-start: surface-flux schedules")
    ap.add_argument("--rtol", type=float, default=None, help="warm-start: rtol = atol (default: the config's)")
    ap.add_argument("--no-ref", action="store_true", help="warm-start: skip the rtol 1e-11 reference")
    ap.add_argument("--newton", type=comma_list(("callbacks", "compiled")), default=["callbacks", "compiled"],
                    help="step-cost: solver.newton variants (default: both)")
    ap.add_argument("--output-points", type=int, default=65, help="energy: solver.output_points")
    ap.add_argument("--timeout", type=float, default=900.0, help="first-solve: seconds per process")
    ap.add_argument("--json", type=Path, help="write every stage's figures here")
    ap.add_argument("--first-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.first_worker:
        print(json.dumps(first_solve_worker(json.loads(args.first_worker)), default=json_default))
        return 0
    if args.solves is not None and args.solves < 1:
        ap.error("--solves must be >= 1")

    report = {"tool": "tools/profile_solves.py", "config": str(args.config), "stages_asked": args.stages,
              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                           if k != "first_worker"},
              "machine": {"platform": platform.platform(), "python": platform.python_version(), "jax": jax.__version__,
                          "cpus": os.cpu_count()},
              "targets": TARGETS, "stages": {}}
    wall0, failed = time.perf_counter(), []
    for name in args.stages:
        run, show = RUN[name]
        t0 = time.perf_counter()
        try:
            res = run(args)
        except StageUnavailable as exc:
            res = {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - one stage's failure must not stop the others
            res = {"error": f"{type(exc).__name__}: {exc}"}
        res["seconds"] = time.perf_counter() - t0
        report["stages"][name] = res
        print()
        if "error" not in res:
            try:
                show(res)
            except Exception as exc:  # noqa: BLE001 - the figures are in the JSON still
                print(f"{name}: its table failed: {type(exc).__name__}: {exc}")
        else:
            failed.append(name)
            print(f"{name}: FAILED: {res['error']}")
    print(f"\ntotal wall time {time.perf_counter() - wall0:.0f} s"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=json_default))
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
