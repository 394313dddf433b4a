#!/usr/bin/env python
"""A PROTEUS-like coupling loop through the liquidus: how many coupling steps, and how long
each takes, from a molten mantle to Phi_global < 0.005.

The caller plays the atmosphere: each call prescribes the surface flux of a grey body at
the last call's T_magma, F = eps sigma (T_magma^4 - T_eq^4) (``outer_boundary_condition =
4``), solves [t, t + dt] with ``reset()`` + ``solve()`` + ``get_state()`` on one solver, and
grows dt by ``--growth`` while T_magma moved less than ``--dT`` per call (else shrinks it by
the same factor), as PROTEUS's time stepping does. A failed solve (status < 0, e.g. a cell
reaching the EOS tables' edge) is retried as PROTEUS's retry ladder does: from the last
accepted state with half the time the failed solve reached (``dt_actual``), up to ``--max-retries`` times in a row. Tables: a SPIDER set (``--eos-dir``,
default ``../shared/data/spider-RTmelt``) with PROTEUS's transport parameters
(tools/mush_matrix.py ``PROTEUS_LIKE``).

    python tools/bench_mush_loop.py                    # 80 nodes, prints a table
    python tools/bench_mush_loop.py --nodes 60 --json loop.json

Prints the coupling steps, the median / mean / 90th-percentile wall time per coupling step
(the first, compiling, call excluded), the total, the integrator's steps and calls, and
the state at the end; ``--json`` writes every call. For humans (not timed in tests).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SIGMA = 5.670374419e-8


def _proteus_like() -> dict:
    spec = importlib.util.spec_from_file_location("mush_matrix", REPO / "tools" / "mush_matrix.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mush_matrix", module)  # dataclasses resolve through sys.modules
    spec.loader.exec_module(module)
    return dict(module.PROTEUS_LIKE)


def run_loop(eos_dir: str, nodes: int, tsurf: float, dt0: float, growth: float, dT: float,
             phi_stop: float, max_calls: int, T_eq: float = 280.0, emissivity: float = 1.0,
             max_retries: int = 6) -> dict:
    from aragog import EntropySolver, load_config

    over = _proteus_like() | {
        "eos.dir": eos_dir, "mesh.number_of_nodes": nodes,
        "initial_condition.surface_temperature": tsurf,
        "boundary_conditions.outer_boundary_condition": 4,
        "boundary_conditions.outer_boundary_value": emissivity * SIGMA * (tsurf**4 - T_eq**4),
        "solver.start_time": 0.0, "solver.end_time": dt0, "solver.output_points": 2,
    }
    solver = EntropySolver(load_config(REPO / "input" / "earth.toml", overrides=over))
    solver.initialize()
    t, dt, T_magma = 0.0, dt0, tsurf
    state = (solver.get_state().S_final, 0.0)  # the last accepted state: (S, dS/dr at the CMB)
    calls = []
    failed_in_a_row = 0
    for i in range(max_calls):
        p = solver.parameters
        p.boundary_conditions.outer_boundary_value = emissivity * SIGMA * (T_magma**4 - T_eq**4)
        p.solver.start_time, p.solver.end_time = t, t + dt
        w0 = time.perf_counter()
        solver.reset()
        solver.solve()
        out = solver.get_state()
        wall = time.perf_counter() - w0
        res = solver.integration_result
        moved = abs(float(out.T_magma) - T_magma)
        calls.append({"t": t + dt, "dt": dt, "wall_s": wall, "status": int(out.status), "T_magma": float(out.T_magma),
                      "Phi_global": float(out.Phi_global), "steps": int(res.nsteps), "nfev": int(res.nfev),
                      "njev": int(res.njev), "message": out.message if out.status < 0 else ""})
        if out.status < 0:  # as PROTEUS's retry ladder: back to the last accepted state, half the window
            failed_in_a_row += 1
            if failed_in_a_row > max_retries:
                break
            solver.set_initial_entropy(state[0])
            solver.set_initial_dSdr_cmb(state[1])
            # the window ends before where this one failed (dt_actual), and at most half of it
            dt = min(dt, float(out.dt_actual)) / 2.0 if out.dt_actual > 0 else dt / 2.0
            continue
        failed_in_a_row = 0
        state = (out.S_final, out.dSdr_cmb)
        t += float(out.dt_actual) if out.dt_actual else dt
        T_magma = float(out.T_magma)
        if out.Phi_global < phi_stop:
            break
        dt = dt * growth if moved < dT else dt / growth
    return {"calls": calls}


def summary(rec: dict) -> dict:
    calls = rec["calls"]
    walls = np.array([c["wall_s"] for c in calls[1:]]) if len(calls) > 1 else np.array([np.nan])
    last = calls[-1]
    return {"coupling_steps": len(calls), "failed_solves": sum(c["status"] < 0 for c in calls),
            "median_ms": 1e3 * float(np.median(walls)),
            "mean_ms": 1e3 * float(np.mean(walls)), "p90_ms": 1e3 * float(np.percentile(walls, 90)),
            "first_call_s": calls[0]["wall_s"], "total_s": float(sum(c["wall_s"] for c in calls)),
            "steps": sum(c["steps"] for c in calls), "nfev": sum(c["nfev"] for c in calls),
            "njev": sum(c["njev"] for c in calls), "t_end": last["t"], "Phi_end": last["Phi_global"],
            "T_magma_end": last["T_magma"], "status_end": last["status"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eos-dir", default=str(REPO.parent / "shared" / "data" / "spider-RTmelt"))
    ap.add_argument("--nodes", type=int, default=80)
    ap.add_argument("--tsurf", type=float, default=3600.0, help="initial surface temperature [K]")
    ap.add_argument("--dt0", type=float, default=1.0, help="first window [yr]")
    ap.add_argument("--growth", type=float, default=1.5)
    ap.add_argument("--dT", type=float, default=30.0, help="grow dt while T_magma moves less than this [K]")
    ap.add_argument("--phi-stop", type=float, default=0.005)
    ap.add_argument("--max-calls", type=int, default=2000)
    ap.add_argument("--max-retries", type=int, default=6, help="failed solves in a row before giving up")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if not Path(args.eos_dir).is_dir():
        print(f"no table set at {args.eos_dir} (--eos-dir)", file=sys.stderr)
        return 2
    rec = run_loop(args.eos_dir, args.nodes, args.tsurf, args.dt0, args.growth, args.dT, args.phi_stop,
                   args.max_calls, max_retries=args.max_retries)
    s = summary(rec)
    import aragog

    print(f"aragog {aragog.__version__} from {Path(aragog.__file__).parent}; load {os.getloadavg()[0]:.2f}")
    print(f"{'coupling steps':>15} {'failed':>6} {'median ms':>10} {'mean ms':>8} {'p90 ms':>7} {'first s':>8} {'total s':>8} "
          f"{'steps':>7} {'RHS':>8} {'Jac':>6} {'t_end yr':>9} {'Phi':>7} {'T_magma':>8} {'status':>6}")
    print(f"{s['coupling_steps']:15d} {s['failed_solves']:6d} {s['median_ms']:10.1f} {s['mean_ms']:8.1f} {s['p90_ms']:7.1f} "
          f"{s['first_call_s']:8.2f} {s['total_s']:8.2f} {s['steps']:7d} {s['nfev']:8d} {s['njev']:6d} "
          f"{s['t_end']:9.4g} {s['Phi_end']:7.4f} {s['T_magma_end']:8.1f} {s['status_end']:6d}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "summary": s, **rec}, indent=1))
        print(f"wrote {args.json}")
    return 0 if s["status_end"] >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
