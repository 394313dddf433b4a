#!/usr/bin/env python
"""Benchmark the entropy solver on the demo (issue 3's speed figures).

    python tools/bench_solver.py [--config input/earth.toml] [--nodes 101] [--solves 100]
                                 [--window 10] [--calls 2000] [--json OUT] [--skip-run]

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
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from aragog import EntropySolver, load_config
from aragog._jax import jax

ROOT = Path(__file__).resolve().parents[1]


def us_per_call(fn, calls: int) -> float:
    fn()
    ts = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        fn()
        ts[i] = time.perf_counter() - t0
    return float(np.median(ts) * 1e6)


def callback_costs(config: Path, nodes: int, calls: int) -> dict:
    rows = {}
    for mode in ("jax", "dense"):
        overrides = {"mesh.number_of_nodes": nodes}
        solver = EntropySolver(load_config(config, overrides=overrides))
        if mode == "dense":
            solver.parameters.solver.jacobian = "jax"
            solver.reset()
            solver._pair = solver._build_pair(solver._options, solver._inputs, "dense")
        solver.initialize() if mode == "jax" else solver.set_initial_entropy(
            solver.entropy_at(solver.parameters.initial_condition.surface_temperature,
                              float(solver._inputs.mesh.P_basic[-1])))
        y = solver._y0()
        bound = solver._pair.bind(solver._inputs)
        out_r = np.empty(bound.n)
        shape = (bound.ml + bound.mu + 1, bound.n) if bound.jac_layout == "band" else (bound.n, bound.n)
        out_j = np.empty(shape)
        rhs_prog = solver._pair._program("rhs").compiled
        jac_prog = solver._pair._program("jac").compiled
        inputs = bound._inputs
        rows[mode] = {
            "n_state": bound.n,
            "rhs_callback_us": us_per_call(lambda: bound.rhs_into(0.0, y, out_r), calls),
            "rhs_bare_us": us_per_call(lambda: np.asarray(rhs_prog(0.0, y, *inputs)), calls),
            "jac_callback_us": us_per_call(lambda: bound.jac_into(0.0, y, out_j), calls),
            "jac_bare_us": us_per_call(lambda: np.asarray(jac_prog(0.0, y, *inputs)), calls),
            "jac_compile_s": solver.jit_stats["jac"]["compile_seconds"],
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
    args = ap.parse_args(argv)

    result = {"machine": platform.platform(), "python": sys.version.split()[0], "jax": jax.__version__}
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
