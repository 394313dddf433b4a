"""What the energy budget costs: first-solve wall time and get_state time.

Runs the demo (input/earth.toml) in this process, cold (no persistent compilation cache;
CPU times beside the wall times, which vary by seconds on a shared machine):
construction + initialize(), the first solve (compiles the right-hand side and the
Jacobian), the first get_state() (compiles the diagnostics program), then ``--steps``
coupling steps of ``--dt`` years (reset, solve, get_state), and prints a table; ``--json``
writes the numbers. The budget adds no compiled program, so the first solve must not
change; get_state pays one diagnostics call per output time of the solve plus NumPy.

To compare with the code before the budget, run the same script with the older tree first
on the path: ``PYTHONPATH=/path/to/old/src python tools/bench_energy.py`` (it only uses
the public API; the budget columns then read n/a).

    python tools/bench_energy.py [--nodes 60] [--steps 10] [--dt 100] [--points 65] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO / "input" / "earth.toml"))
    ap.add_argument("--nodes", type=int, default=60)
    ap.add_argument("--steps", type=int, default=10, help="coupling steps after the first solve")
    ap.add_argument("--dt", type=float, default=100.0, help="years per solve")
    ap.add_argument("--points", type=int, default=65, help="solver.output_points")
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args(argv)

    import aragog
    from aragog import EntropySolver, load_config

    t0 = time.perf_counter()
    params = load_config(args.config, overrides={"mesh.number_of_nodes": args.nodes, "solver.start_time": 0.0,
                                                 "solver.end_time": args.dt, "solver.output_points": args.points,
                                                 "solver.jax_cache_dir": "none"})
    solver = EntropySolver(params)
    solver.initialize()
    t_init = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    solver.solve()
    t_first_solve, c_first_solve = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    out = solver.get_state(energy_budget=True)
    t_first_state, c_first_state = time.perf_counter() - t0, time.process_time() - c0
    solves, states, cached = [], [], []
    for k in range(1, args.steps + 1):
        sp = solver.parameters.solver
        sp.start_time, sp.end_time = k * args.dt, (k + 1) * args.dt
        solver.reset()
        t0 = time.perf_counter()
        solver.solve()
        solves.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = solver.get_state(energy_budget=True)
        states.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        solver.get_state(energy_budget=True)
        cached.append(time.perf_counter() - t0)
    budget = getattr(out, "step_dE_state_heat_J", None)
    closure = None
    if budget is not None:
        src = out.step_dE_F_int_J + out.step_dE_F_cmb_J + out.step_dE_Q_radio_J + out.step_dE_Q_tidal_J
        closure = (budget - src - out.step_solver_residual_J) / abs(budget)
    diag = solver.jit_stats.get("diagnostics", {})
    result = {
        "aragog": getattr(aragog, "__file__", "?"), "config": args.config, "nodes": args.nodes,
        "output_points": args.points, "dt_yr": args.dt, "steps": args.steps,
        "init_s": t_init, "first_solve_s": t_first_solve, "first_get_state_s": t_first_state,
        "first_solve_cpu_s": c_first_solve, "first_get_state_cpu_s": c_first_state,
        "diagnostics_compile_s": diag.get("trace_seconds", 0.0) + diag.get("compile_seconds", 0.0),
        "solve_median_s": statistics.median(solves), "get_state_median_s": statistics.median(states),
        "get_state_cached_median_s": statistics.median(cached),
        "has_budget": budget is not None, "last_closure_rel": closure,
    }
    rows = [("construct + initialize", t_init), ("first solve (compiles rhs, jac)", t_first_solve),
            ("  CPU time of the first solve", c_first_solve),
            ("first get_state (compiles diagnostics)", t_first_state),
            ("  CPU time of the first get_state", c_first_state),
            ("  of which diagnostics trace + compile", result["diagnostics_compile_s"]),
            (f"solve, median of {args.steps} x {args.dt:g} yr", result["solve_median_s"]),
            ("get_state after a solve, median", result["get_state_median_s"]),
            ("get_state again (cached budget), median", result["get_state_cached_median_s"])]
    print(f"aragog from {result['aragog']}; {args.nodes} nodes, {args.points} output times")
    for name, value in rows:
        print(f"{name:<44s} {value:9.3f} s")
    print(f"{'budget closure |dE - sources| / |dE|':<44s} "
          + (f"{closure:9.2e}" if closure is not None else "      n/a"))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
