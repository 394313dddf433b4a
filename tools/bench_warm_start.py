#!/usr/bin/env python
"""CVODE warm start across coupling solves: what a restart costs, cold vs warm.

    python tools/bench_warm_start.py [--config input/earth.toml] [--nodes 60 100]
                                     [--solves 12] [--window 10] [--rtol R]
                                     [--schedules sin30 drift1e-3 ...] [--no-ref]
                                     [--json OUT]

For every node count and surface-flux schedule, three solvers of the same config run the
same coupling loop side by side (prescribed surface flux, ``reset()`` + ``solve()`` per
``--window`` years, each solve starting where the last one ended):

- cold: ``solver.warm_start = false`` (every solve a fresh CVODE memory: order 1, CVODE's
  own first step, a new Jacobian);
- warm: ``solver.warm_start = true`` (the default; docs/solver.md, "Warm start");
- ref: cold at rtol = atol = 1e-11 (``--no-ref`` skips it).

Reported per solve, averaged over solves 2..N (solve 1 starts from the initial condition
and is the same for both): right-hand-side calls (all of them: CVODE's, the checked
Newton test's and the warm start's jump test), Jacobian calls, CVODE steps; how the warm
solves started (``continue``/``restart``/``new``/``fallback``) and the largest RHS jump;
the end-state difference warm - cold and each one's error against the reference (largest
|dS| [J/kg/K] over all cells and solves). Every status must be 0.

Schedules (flux F_i of solve i, F0 = 1e5 W/m2): ``sin30`` F0 (1 + 0.3 sin i), the loop of
tools/bench_solver.py and tools/profile_solves.py; ``driftR`` F0 (1 - R i) (a relative
change R per solve, e.g. ``drift1e-3``); ``const`` F0.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

from aragog import EntropySolver, load_config

ROOT = Path(__file__).resolve().parents[1]
F0 = 1.0e5
DEFAULT_SCHEDULES = ("sin30", "drift1e-2", "drift1e-3", "drift1e-4", "drift1e-5", "const")


def flux(schedule: str, i: int) -> float:
    if schedule == "const":
        return F0
    if schedule == "sin30":
        return F0 * (1.0 + 0.3 * math.sin(i))
    if schedule.startswith("drift"):
        return F0 * (1.0 - float(schedule[5:]) * i)
    raise ValueError(f"unknown schedule {schedule!r}")


def make(config: Path, nodes: int, warm: bool, tol: float | None) -> EntropySolver:
    over = {"mesh.number_of_nodes": nodes, "solver.warm_start": warm,
            "boundary_conditions.outer_boundary_condition": 4, "boundary_conditions.outer_boundary_value": F0}
    if tol is not None:
        over.update({"solver.rtol": tol, "solver.atol": tol})
    solver = EntropySolver(load_config(config, overrides=over))
    solver.initialize()
    return solver


def run_case(config: Path, nodes: int, schedule: str, solves: int, window: float,
             rtol: float | None, ref: bool) -> dict:
    names = ["cold", "warm"] + (["ref"] if ref else [])
    solvers = {"cold": make(config, nodes, False, rtol), "warm": make(config, nodes, True, rtol)}
    if ref:
        solvers["ref"] = make(config, nodes, False, 1e-11)
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
                               "nsteps": int(r.nsteps), "wall_s": wall,
                               "mode": r.info.get("warm_start", "off"),
                               "jump": r.info.get("rhs_jump"),
                               "err_test_fails": int(r.info.get("NumErrTestFails", 0))})
        S = {k: np.asarray(solvers[k]._S) for k in names}
        diff.append(float(np.max(np.abs(S["warm"] - S["cold"]))))
        if ref:
            for k in ("cold", "warm"):
                err[k].append(float(np.max(np.abs(S[k] - S["ref"]))))
    for s in solvers.values():
        if s._warm is not None:
            s._warm.close()
    summary = {}
    for name in ("cold", "warm"):
        later = rows[name][1:]
        summary[name] = {k: float(np.mean([r[k] for r in later])) for k in ("nfev", "njev", "nsteps", "wall_s",
                                                                          "err_test_fails")}
        summary[name]["all_status_0"] = all(r["status"] == 0 for r in rows[name])
        summary[name]["max_err_vs_ref"] = max(err[name]) if ref else None
    modes = [r["mode"] for r in rows["warm"][1:]]
    jumps = [r["jump"] for r in rows["warm"][1:] if r["jump"] is not None]
    summary["warm"]["modes"] = {m: modes.count(m) for m in sorted(set(modes))}
    summary["warm"]["max_jump"] = max(jumps) if jumps else None
    summary["warm"]["median_jump"] = float(np.median(jumps)) if jumps else None
    summary["max_diff_warm_cold"] = max(diff)
    summary["rhs_saved_fraction"] = 1.0 - summary["warm"]["nfev"] / summary["cold"]["nfev"]
    return {"nodes": nodes, "schedule": schedule, "solves": solves, "window_yr": window,
            "summary": summary, "per_solve": rows, "diff_warm_cold": diff, "err_vs_ref": err}


def table(headers, rows) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "input" / "earth.toml")
    ap.add_argument("--nodes", type=int, nargs="+", default=[60, 100])
    ap.add_argument("--solves", type=int, default=12)
    ap.add_argument("--window", type=float, default=10.0, help="years per solve")
    ap.add_argument("--rtol", type=float, default=None, help="rtol = atol (default: the config's)")
    ap.add_argument("--schedules", nargs="+", default=list(DEFAULT_SCHEDULES))
    ap.add_argument("--no-ref", action="store_true", help="skip the rtol 1e-11 reference")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.solves < 2:
        ap.error("--solves must be >= 2")

    cases = []
    for nodes in args.nodes:
        for schedule in args.schedules:
            t0 = time.perf_counter()
            case = run_case(args.config, nodes, schedule, args.solves, args.window, args.rtol, not args.no_ref)
            case["seconds"] = time.perf_counter() - t0
            cases.append(case)
            print(f"  {nodes} nodes, {schedule}: {case['seconds']:.0f} s", flush=True)

    fmt = lambda x, f="{:.3g}": "-" if x is None else f.format(x)  # noqa: E731
    rows = []
    for c in cases:
        s = c["summary"]
        rows.append([c["nodes"], c["schedule"],
                     f"{s['cold']['nfev']:.1f}", f"{s['warm']['nfev']:.1f}", f"{100 * s['rhs_saved_fraction']:+.0f} %",
                     f"{s['cold']['njev']:.2f}", f"{s['warm']['njev']:.2f}",
                     f"{s['cold']['nsteps']:.1f}", f"{s['warm']['nsteps']:.1f}",
                     " ".join(f"{k}:{v}" for k, v in s["warm"]["modes"].items()), fmt(s["warm"]["median_jump"]),
                     fmt(s["max_diff_warm_cold"]), fmt(s["cold"]["max_err_vs_ref"]), fmt(s["warm"]["max_err_vs_ref"]),
                     "yes" if s["cold"]["all_status_0"] and s["warm"]["all_status_0"] else "NO"])
    print(f"\nPer {args.window:g}-yr coupling solve (mean of solves 2..{args.solves}; rtol "
          f"{args.rtol if args.rtol else 'of the config'}). RHS: right-hand-side calls (saved: warm vs cold); "
          "dS: largest |S| difference [J/kg/K], warm - cold and each against rtol 1e-11\n")
    print(table(["nodes", "flux", "RHS cold", "RHS warm", "saved", "Jac cold", "Jac warm", "steps cold",
                 "steps warm", "warm starts", "jump (median)", "dS warm-cold", "err cold", "err warm",
                 "status 0"], rows))
    if args.json:
        out = {"config": str(args.config), "rtol": args.rtol, "window_yr": args.window, "solves": args.solves,
               "host": platform.node(), "python": platform.python_version(), "cases": cases}
        args.json.write_text(json.dumps(out, indent=2, default=float))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
