#!/usr/bin/env python
"""Benchmark the entropy solver on the demo (issue 3's speed figures).

    python tools/bench_solver.py [--config input/earth.toml] [--nodes 101] [--solves 100]
                                 [--window 10] [--calls 2000] [--json OUT] [--skip-run]
                                 [--first-nodes 60] [--first-repeats 3] [--cache-dir DIR|none]
                                 [--first-only | --skip-first]

0. The first solve of a fresh process (issue 11: target <= 2.5 s cold, <= 0.5 s with a warm
   persistent cache, at 60 nodes): the config with ``--first-nodes`` nodes and a
   ``--window``-year solve, run in a subprocess with an empty cache directory (cold), then
   in a second subprocess on the same directory (warm); ``--first-repeats`` such pairs,
   medians. Reported: import; the first solve (solver construction + initialize + solve)
   split into tables, mesh, initial state and the compiled programs (wall), with tracing
   + lowering and compiling (or loading) per program (compiles overlap each other and the
   integration, so they need not add up); the integration; the first get_state (it waits
   for a diagnostics compile still running); XLA kernels per compiled program (the
   ENTRY computation's instructions: fusions and other kernels); us per bare call of the
   compiled executable and per integrator callback; RHS and Jacobian calls of the solve.
   ``--cache-dir none`` runs both without a persistent cache; ``--cache-dir DIR`` uses DIR
   (its state as found) instead of a fresh temporary one.
1. One RHS call and one Jacobian call through the integrator callbacks
   (``BoundPair.rhs_into``/``jac_into``) against a bare call of the compiled executable:
   the callback overhead; and the Jacobian's cost in RHS calls (target <= 10). Both the
   banded (colored forward-mode) and the dense (jacfwd) Jacobian are measured.
2. The whole demo run (initialize + solve + netCDF), wall time (target <= 60 s).
3. ``--solves`` consecutive short solves (coupling style: the surface flux and the time
   window change every solve, reset() + solve()): per-solve wall time split into time in
   the RHS/Jacobian callbacks, CVODE's own time, and Python overhead outside the
   integrator (target <= 5 ms), plus the first solve's tracing and compiling per program
   and the trace/compile counts after it (target: 0 new).

Prints tables and optionally writes everything as JSON. Timings are medians; this
machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__" and "--first-worker" in sys.argv:
    _T_START = time.perf_counter()  # a first-solve worker: its import time counts

import numpy as np

from aragog import EntropySolver, load_config
from aragog._jax import jax
from aragog.solver import JitPair, compile_stats, compiled_program, kernel_counts
from aragog.solver._shared_programs import bare_executables

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cold_first_solve_s": 2.5, "warm_first_solve_s": 0.5}


def us_per_call(fn, calls: int) -> float:
    fn()
    ts = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        fn()
        ts[i] = time.perf_counter() - t0
    return float(np.median(ts) * 1e6)


def entry_kernels(compiled) -> dict:
    """Kernels of a compiled executable (:func:`aragog.solver._hlo.kernel_counts`: the ENTRY
    computation's instructions other than parameters, constants, tuples and bitcasts, of
    which fusions); ``None`` values when the HLO text is unavailable (an executable
    deserialized from a cache may not keep it)."""
    try:
        return kernel_counts(compiled)
    except Exception:  # noqa: BLE001
        return {"kernels": None, "fusions": None, "gathers": None, "partitioned": None}


def program_call_costs(solver, calls: int) -> dict:
    """us per bare call of the compiled rhs / jac / diagnostics (executable called
    directly with the bound inputs) and per integrator callback (rhs_into / jac_into) at
    the solver's current state (median of ``calls``; diagnostics ``calls // 10``)."""
    fused = isinstance(solver.programs, JitPair)  # compile_mode "blocks": callbacks only
    y = solver._y0()
    bound = solver._bound
    out_r = np.empty(bound.n)
    shape = (bound.ml + bound.mu + 1, bound.n) if bound.jac_layout == "band" else (bound.n, bound.n)
    out_j = np.empty(shape)
    row = {"rhs_callback_us": us_per_call(lambda: bound.rhs_into(0.0, y, out_r), calls),
           "jac_callback_us": us_per_call(lambda: bound.jac_into(0.0, y, out_j), max(calls // 4, 10))}
    if fused:
        progs, inputs = bare_executables(bound, ("rhs", "jac", "diagnostics"))
        row["rhs_bare_us"] = us_per_call(lambda: np.asarray(progs["rhs"](0.0, y, *inputs)), calls)
        row["jac_bare_us"] = us_per_call(lambda: np.asarray(progs["jac"](0.0, y, *inputs)), max(calls // 4, 10))
        row["diagnostics_bare_us"] = us_per_call(
            lambda: jax.block_until_ready(progs["diagnostics"](0.0, y, *inputs)), max(calls // 10, 10))
    return row


def first_solve_worker(cfg: dict) -> dict:
    """One fresh process: construction + initialize + solve (the first solve), then the
    first get_state, timed by stage; then kernels and per-call costs (after the timing)."""
    import aragog.solver._derived as derived
    import aragog.solver._entropy_solver as es

    t_import = time.perf_counter() - _T_START if "_T_START" in globals() else None
    timers = {"tables": 0.0, "mesh": 0.0, "initial_state": 0.0}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers[name] += time.perf_counter() - t0
        return wrapper

    # the stages' own methods, timed in place (private: what a solve derives, and where)
    stages = ((derived.DerivedInputs, "eos", "tables"), (derived.DerivedInputs, "mesh", "mesh"),
              (es.EntropySolver, "entropy_at", "initial_state"))
    originals = [(cls, name, cls.__dict__[name]) for cls, name, _ in stages]
    for cls, name, timer in stages:
        setattr(cls, name, timed(timer, cls.__dict__[name]))
    overrides = {"mesh.number_of_nodes": cfg["nodes"], "solver.end_time": cfg["window"],
                 "solver.jax_cache_dir": cfg["cache"]}
    params = load_config(cfg["config"], overrides=overrides)
    try:
        w0 = time.perf_counter()
        c0 = time.process_time()
        solver = EntropySolver(params)
        solver.initialize()
        w1 = time.perf_counter()
        solver.solve()
        w2 = time.perf_counter()
        c2 = time.process_time()
        out = solver.get_state()
        w3 = time.perf_counter()
    finally:
        for cls, name, fn in originals:  # run in-process (tests), the classes are left as they were
            setattr(cls, name, fn)
    res = solver.integration_result
    stats = solver.jit_stats
    programs = {}
    for name, st in stats.items():
        if st["compiles"] + st["loads"] == 0:  # not built, or not compiled at all ("initial": NumPy)
            continue
        entry = {k: st[k] for k in ("source", "traces", "compiles", "loads", "trace_seconds", "compile_seconds")}
        prog = compiled_program(solver.programs, name)  # (executable, XLA options) or None
        if prog is not None:
            entry.update(entry_kernels(prog[0]))
            entry["compiler_options"] = prog[1]
        programs[name] = entry
    init_wall = w1 - w0
    parts = timers["tables"] + timers["mesh"] + timers["initial_state"]
    return {
        "ok": True, "nodes": cfg["nodes"], "window_yr": cfg["window"], "cache": cfg["cache"],
        "import_s": t_import, "first_solve_s": w2 - w0, "first_solve_cpu_s": c2 - c0,
        "initialize_s": init_wall, "tables_s": timers["tables"], "mesh_s": timers["mesh"],
        "initial_state_s": timers["initial_state"], "programs_wall_s": init_wall - parts,
        "solve_s": w2 - w1, "integrate_s": res.wall_seconds if res else None,
        "first_get_state_s": w3 - w2, "status": out.status, "nfev": out.nfev, "njev": out.njev,
        "nsteps": out.nsteps, "T_magma": out.T_magma, "programs": programs,
        "calls": program_call_costs(solver, cfg.get("calls", 1000)),
        "load_average": os.getloadavg()[0],
    }


def run_first_worker(cfg: dict, timeout: float = 900.0) -> dict:
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the case's own cache setting only
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


def first_solves(config: Path, nodes: int, window: float, repeats: int, cache_dir: str | None) -> dict:
    """``repeats`` (cold, warm) pairs of first-solve processes; medians."""
    runs = {"cold": [], "warm": []}
    for i in range(repeats):
        with tempfile.TemporaryDirectory(prefix="aragog-bench-cache-") as tmp:
            cache = cache_dir or tmp
            for kind in ("cold", "warm"):
                print(f"  ... first solve {i + 1}/{repeats}, {kind}", file=sys.stderr, flush=True)
                runs[kind].append(run_first_worker({"config": str(config), "nodes": nodes, "window": window,
                                                    "cache": cache}))
    median = {}
    for kind, rows in runs.items():
        ok = [r for r in rows if r.get("ok")]
        if not ok:
            continue
        med = {k: statistics.median(r[k] for r in ok) for k in
               ("import_s", "first_solve_s", "first_solve_cpu_s", "initialize_s", "tables_s", "mesh_s",
                "initial_state_s", "programs_wall_s", "solve_s", "integrate_s", "first_get_state_s")
               if all(r.get(k) is not None for r in ok)}
        med["programs"] = {name: {k: statistics.median(r["programs"][name][k] for r in ok
                                                       if name in r["programs"])
                                  for k in ("trace_seconds", "compile_seconds")}
                           for name in ok[0]["programs"]}
        median[kind] = med
    return {"nodes": nodes, "window_yr": window, "repeats": repeats, "cache_dir": cache_dir or "fresh temporary",
            "runs": runs, "median": median, "targets": TARGETS}


def print_first_solves(fs: dict) -> None:
    med = fs["median"]
    print(f"\n0. first solve in a fresh process at {fs['nodes']} nodes, a {fs['window_yr']:g}-yr solve "
          f"(median of {fs['repeats']}; cache: {fs['cache_dir']}; targets: cold <= "
          f"{TARGETS['cold_first_solve_s']} s, warm <= {TARGETS['warm_first_solve_s']} s)")
    cols = [("import_s", "import"), ("first_solve_s", "FIRST SOLVE"), ("tables_s", "tables"), ("mesh_s", "mesh"),
            ("initial_state_s", "initial"), ("programs_wall_s", "programs"), ("integrate_s", "integrate"),
            ("first_get_state_s", "get_state"), ("first_solve_cpu_s", "cpu")]
    print(f"   {'cache':>5} " + " ".join(f"{label:>11}" for _, label in cols))
    for kind in ("cold", "warm"):
        if kind in med:
            vals = [med[kind].get(k) for k, _ in cols]
            print(f"   {kind:>5} " + " ".join(f"{float('nan') if v is None else v:11.3f}" for v in vals))
    for kind, rows in fs["runs"].items():
        for r in rows:
            if not r.get("ok"):
                print(f"   {kind}: FAILED {r.get('error')}")
    ok = {kind: [r for r in rows if r.get("ok")] for kind, rows in fs["runs"].items()}
    if ok["cold"]:
        last = ok["cold"][-1]
        print("   per program, median s (cold: trace+lower / compile; warm: load), kernels (fusions), options:")
        for name, entry in last["programs"].items():
            m = med["cold"]["programs"].get(name, {})
            w = med.get("warm", {}).get("programs", {}).get(name)
            load = f"{w['compile_seconds']:.3f}" if w else "-"
            opts = ",".join(f"{k}={v}" for k, v in (entry.get("compiler_options") or {}).items()) or "defaults"
            kern = "-" if entry.get("kernels") is None else f"{entry['kernels']} ({entry['fusions']})"
            print(f"     {name:>14}: {m.get('trace_seconds', 0):.3f} / {m.get('compile_seconds', 0):.3f}"
                  f"   warm {load}   kernels {kern}   {opts}")
        c = last["calls"]
        bare = lambda k: f"{c[k]:.1f}" if k in c else "-"  # noqa: E731
        print(f"   us per call (last cold run): rhs bare {bare('rhs_bare_us')} / callback {c['rhs_callback_us']:.1f};"
              f" jac bare {bare('jac_bare_us')} / callback {c['jac_callback_us']:.1f};"
              f" diagnostics bare {bare('diagnostics_bare_us')}")
        loads = ", ".join(f"{r['load_average']:.1f}" for r in ok["cold"] + ok["warm"])
        print(f"   calls in the first solve: {last['nfev']} RHS, {last['njev']} Jacobian, {last['nsteps']} steps;"
              f" 1-min load average after each run: {loads} ({os.cpu_count()} cores)")
    for kind, target in (("cold", TARGETS["cold_first_solve_s"]), ("warm", TARGETS["warm_first_solve_s"])):
        if kind in med:
            v = med[kind]["first_solve_s"]
            print(f"   {kind} first solve {v:.2f} s (target <= {target} s: {'met' if v <= target else 'NOT met'})")


def callback_costs(config: Path, nodes: int, calls: int) -> dict:
    rows = {}
    for mode in ("jax", "dense"):
        overrides = {"mesh.number_of_nodes": nodes}
        solver = EntropySolver(load_config(config, overrides=overrides))
        if mode == "dense":
            solver.parameters.solver.jacobian = "jax"
            solver.reset()
            pair = solver.fresh_programs("dense")  # its own, unshared counters
        solver.initialize() if mode == "jax" else solver.set_initial_entropy(
            solver.entropy_at(solver.parameters.initial_condition.surface_temperature,
                              float(solver.inputs.mesh.P_basic[-1])))
        if mode == "jax":
            pair = solver.programs
        y = solver._y0()
        bound = pair.bind(solver.inputs)
        out_r = np.empty(bound.n)
        shape = (bound.ml + bound.mu + 1, bound.n) if bound.jac_layout == "band" else (bound.n, bound.n)
        out_j = np.empty(shape)
        progs, inputs = bare_executables(bound, ("rhs", "jac"))
        rhs_prog, jac_prog = progs["rhs"], progs["jac"]
        jac_stats = (solver.jit_stats if mode == "jax" else compile_stats(pair))["jac"]
        rows[mode] = {
            "n_state": bound.n,
            "rhs_callback_us": us_per_call(lambda: bound.rhs_into(0.0, y, out_r), calls),
            "rhs_bare_us": us_per_call(lambda: np.asarray(rhs_prog(0.0, y, *inputs)), calls),
            "jac_callback_us": us_per_call(lambda: bound.jac_into(0.0, y, out_j), calls),
            "jac_bare_us": us_per_call(lambda: np.asarray(jac_prog(0.0, y, *inputs)), calls),
            "jac_compile_s": jac_stats["compile_seconds"],
        }
        rows[mode]["jac_in_rhs_calls"] = rows[mode]["jac_callback_us"] / rows[mode]["rhs_callback_us"]
    return rows


def demo_run(config: Path) -> dict:
    t0 = time.perf_counter()
    solver = EntropySolver.from_file(config)
    solver.initialize()
    solver.solve()
    out = solver.get_state()
    t_solve = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        solver.write_netcdf(Path(tmp) / "demo.nc")
    stats = solver.jit_stats
    return {
        "wall_s": time.perf_counter() - t0, "initialize_and_solve_s": t_solve,
        "compile_s": sum(v["trace_seconds"] + v["compile_seconds"] for v in stats.values()),
        "status": out.status, "message": out.message, "nsteps": out.nsteps, "nfev": out.nfev, "njev": out.njev,
        "T_magma": out.T_magma, "Phi_global": out.Phi_global, "integrator": out.integrator,
    }


def repeated_solves(config: Path, nodes: int, solves: int, window: float) -> dict:
    params = load_config(config, overrides={"mesh.number_of_nodes": nodes,
                                            "boundary_conditions.outer_boundary_condition": 4,
                                            "boundary_conditions.outer_boundary_value": 1.0e5,
                                            "solver.end_time": window})
    t0 = time.perf_counter()
    solver = EntropySolver(params)
    solver.initialize()
    solver.solve()
    first = solver.get_state()
    first_wall = time.perf_counter() - t0
    first_stats = {k: {kk: v[kk] for kk in ("traces", "compiles", "trace_seconds", "compile_seconds")}
                   for k, v in solver.jit_stats.items()}
    counts0 = {k: (v["traces"], v["compiles"]) for k, v in solver.jit_stats.items()}
    rows = []
    t = window
    for i in range(solves):
        p = solver.parameters
        p.boundary_conditions.outer_boundary_value = 1.0e5 * (1.0 + 0.3 * np.sin(i))
        p.solver.start_time, p.solver.end_time = t, t + window
        t += window
        w0 = time.perf_counter()
        solver.reset()
        w1 = time.perf_counter()
        solver.solve()
        w2 = time.perf_counter()
        res = solver.integration_result
        cb = res.callback_seconds.get("rhs", 0.0) + res.callback_seconds.get("jac", 0.0)
        rows.append({
            "reset_s": w1 - w0, "solve_s": w2 - w1, "integrate_s": res.wall_seconds, "callbacks_s": cb,
            "cvode_s": res.wall_seconds - cb, "python_overhead_s": (w2 - w0) - res.wall_seconds,
            "nfev": res.nfev, "njev": res.njev, "nsteps": res.nsteps,
        })
    counts1 = {k: (v["traces"], v["compiles"]) for k, v in solver.jit_stats.items()}
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    return {"nodes": nodes, "solves": solves, "window_yr": window, "first_solve_wall_s": first_wall,
            "first_solve": first_stats, "median": med, "new_traces_compiles": {
                k: (counts1[k][0] - counts0[k][0], counts1[k][1] - counts0[k][1]) for k in counts1},
            "last_status": first.status}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--config", type=Path, default=ROOT / "input" / "earth.toml")
    ap.add_argument("--nodes", type=int, default=101, help="basic nodes (cells + 1) for 1 and 3")
    ap.add_argument("--solves", type=int, default=100)
    ap.add_argument("--window", type=float, default=10.0, help="years per short solve")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--skip-run", action="store_true", help="skip the whole demo run")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--first-nodes", type=int, default=60, help="basic nodes of the first-solve section (0)")
    ap.add_argument("--first-repeats", type=int, default=3, help="cold/warm process pairs of section 0")
    ap.add_argument("--cache-dir", default=None,
                    help="persistent cache of section 0: 'none' (no cache), a directory, or a fresh temporary one")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--first-only", action="store_true", help="only section 0")
    group.add_argument("--skip-first", action="store_true", help="skip section 0")
    ap.add_argument("--first-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.first_worker:
        print(json.dumps(first_solve_worker(json.loads(args.first_worker)), default=float))
        return 0

    result = {"machine": platform.platform(), "python": sys.version.split()[0], "jax": jax.__version__,
              "cpus": os.cpu_count()}
    if not args.skip_first:
        fs = first_solves(args.config, args.first_nodes, args.window, args.first_repeats, args.cache_dir)
        result["first_solve"] = fs
        print_first_solves(fs)
        if args.first_only:
            if args.json:
                args.json.write_text(json.dumps(result, indent=2, default=float))
                print(f"\nwrote {args.json}")
            return 0
    cb = callback_costs(args.config, args.nodes, args.calls)
    result["callbacks"] = cb
    print(f"\n1. callbacks at {args.nodes - 1} cells (median us per call)")
    print(f"{'jacobian':>10} {'rhs cb':>9} {'rhs bare':>9} {'jac cb':>9} {'jac bare':>9} {'jac/rhs':>8} {'jac compile s':>14}")
    for mode, r in cb.items():
        name = "banded" if mode == "jax" else "dense"
        print(f"{name:>10} {r['rhs_callback_us']:9.1f} {r['rhs_bare_us']:9.1f} {r['jac_callback_us']:9.1f}"
              f" {r['jac_bare_us']:9.1f} {r['jac_in_rhs_calls']:8.2f} {r['jac_compile_s']:14.2f}")

    if not args.skip_run:
        run = demo_run(args.config)
        result["demo_run"] = run
        print(f"\n2. demo run ({args.config.name}): wall {run['wall_s']:.1f} s (compiling {run['compile_s']:.1f} s),"
              f" {run['nsteps']} steps, {run['nfev']} RHS / {run['njev']} Jacobian calls, status {run['status']},"
              f" final T_magma {run['T_magma']:.0f} K, Phi_global {run['Phi_global']:.3f}")

    rep = repeated_solves(args.config, args.nodes, args.solves, args.window)
    result["repeated"] = rep
    m = rep["median"]
    print(f"\n3. {args.solves} consecutive {args.window:g}-yr solves at {args.nodes - 1} cells (medians per solve)")
    print(f"   reset {m['reset_s'] * 1e3:.2f} ms, solve {m['solve_s'] * 1e3:.2f} ms = callbacks "
          f"{m['callbacks_s'] * 1e3:.2f} ms + CVODE {m['cvode_s'] * 1e3:.2f} ms; Python overhead outside the "
          f"integrator (reset + solve) {m['python_overhead_s'] * 1e3:.2f} ms; {m['nfev']:.0f} RHS, {m['njev']:.0f} Jacobian"
          f" calls, {m['nsteps']:.0f} steps")
    print(f"   first solve {rep['first_solve_wall_s']:.1f} s; new traces/compiles over the {args.solves} solves: "
          f"{rep['new_traces_compiles']}")
    print("   first-solve tracing+lowering / compiling per program (s):")
    for name, s in rep["first_solve"].items():
        print(f"     {name:>14}: {s['trace_seconds']:.2f} / {s['compile_seconds']:.2f}  ({s['traces']} trace, {s['compiles']} compile)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
