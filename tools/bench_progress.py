#!/usr/bin/env python
"""What the progress of ``aragog run`` costs: the demo's solve without and with reports.

One process, one solver config, solves alternating between the kinds (so load drifts hit
both alike), each after ``initialize()`` (compiled programs reused in memory):

- ``quiet``: ``solve()`` (``aragog run --quiet``);
- ``terminal``: ``solve(progress=RunProgress(live=True), progress_interval=0.5)``, the bar
  rewritten every 0.5 s (to /dev/null);
- ``log``: the same with a report every 10 s (plain lines, output not a terminal).

    python tools/bench_progress.py [--config input/earth.toml] [--repeat 3] [--json OUT]

Prints wall time per kind (median and best) and the overhead against ``quiet`` for both;
the best of the repeats is the steadier figure on a shared machine. Then the two parts of
the cost, each measured alone (steadier than the whole): the wrapper's time per
right-hand-side call (around a problem that does nothing) and one report's time (a
diagnostics evaluation and the line), and the bound they give for the demo's solve
(RHS calls x the first + reports x the second). Writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO / "input" / "earth.toml"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    from aragog import EntropySolver, load_config
    # private: the progress display of `aragog run`, measured here, has no public name
    from aragog._run_progress import RunProgress

    params = load_config(args.config)
    solver = EntropySolver(params)
    devnull = open(os.devnull, "w")  # noqa: SIM115 - kept for the whole run
    kinds = {
        "quiet": lambda: solver.solve(),
        "terminal": lambda: solver.solve(progress=RunProgress(devnull, live=True), progress_interval=0.5),
        "log": lambda: solver.solve(progress=RunProgress(devnull, live=False), progress_interval=10.0),
    }
    solver.initialize()
    solver.solve()  # compile (or load) everything once, diagnostics included
    solver.get_state()
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    steps = {}
    order = list(kinds)
    for r in range(args.repeat):
        for kind in order[r % len(order):] + order[:r % len(order)]:
            solver.initialize()
            t0 = time.perf_counter()
            kinds[kind]()
            walls[kind].append(time.perf_counter() - t0)
            steps[kind] = int(solver.get_state().nsteps)
    base, best = statistics.median(walls["quiet"]), min(walls["quiet"])
    print(f"{'kind':10s} {'median [s]':>11s} {'overhead':>9s} {'best [s]':>9s} {'overhead':>9s} {'steps':>7s}  runs")
    rows = {}
    for kind, w in walls.items():
        med, low = statistics.median(w), min(w)
        rows[kind] = {"median_s": med, "overhead_median": med / base - 1.0, "best_s": low,
                      "overhead_best": low / best - 1.0, "walls": w, "steps": steps[kind]}
        print(f"{kind:10s} {med:11.2f} {100 * (med / base - 1.0):8.2f}% {low:9.2f} {100 * (low / best - 1.0):8.2f}% "
              f"{steps[kind]:7d}  " + ", ".join(f"{x:.2f}" for x in w))
    parts = _parts(solver, RunProgress(devnull, live=True), rows["quiet"]["median_s"])
    if args.json:
        Path(args.json).write_text(json.dumps({"config": args.config, "repeat": args.repeat, "kinds": rows,
                                               "parts": parts}, indent=1))
        print(f"wrote {args.json}")


def _parts(solver, shown, solve_s: float) -> dict:
    """The wrapper's cost per call and one report's cost, each alone, and the bound."""
    import numpy as np

    # private: the wrapper solve(progress=...) puts around the callbacks, timed alone, has no public name
    from aragog.solver._problems import ProgressProbe

    class Nothing:
        n, ml, mu, jac_into = 1, 0, 0, None

        def rhs_into(self, t, y, out):
            pass

    y, out, calls = np.zeros(1), np.zeros(1), 200_000
    bare = Nothing()
    probe = ProgressProbe(bare, shown, lambda t, y: (0.0, 0.0), 0.0, 1.0, 1e9, time.perf_counter())
    per_call = []
    for f in (bare.rhs_into, probe.rhs_into) * 3:
        t0 = time.perf_counter()
        for _ in range(calls):
            f(0.0, y, out)
        per_call.append((time.perf_counter() - t0) / calls)
    wrapper = min(per_call[1::2]) - min(per_call[0::2])
    bound = solver._bound
    y0 = solver._y0()

    def measure(t, y):
        d = bound.call("diagnostics", t, y)
        return d.T_surface, d.Phi_global

    probe = ProgressProbe(bound, shown, measure, 0.0, 1.0, 1e9, time.perf_counter())
    reports = []
    for _ in range(20):
        t0 = time.perf_counter()
        probe.send(0.5, y0)
        reports.append(time.perf_counter() - t0)
    report = min(reports)
    state = solver.get_state()
    n_reports = solve_s / 0.5
    total = state.nfev * wrapper + n_reports * report
    print(f"\nwrapper per RHS call {wrapper * 1e6:.3f} us x {state.nfev:,} calls = {state.nfev * wrapper * 1e3:.1f} ms; "
          f"one report {report * 1e3:.3f} ms x {n_reports:.0f} (terminal, every 0.5 s) = {n_reports * report * 1e3:.1f} ms; "
          f"bound {total * 1e3:.1f} ms = {100 * total / solve_s:.2f} % of the {solve_s:.1f} s solve")
    return {"wrapper_per_call_s": wrapper, "report_s": report, "rhs_calls": int(state.nfev),
            "terminal_reports": n_reports, "bound_s": total, "bound_fraction": total / solve_s}


if __name__ == "__main__":
    main()
