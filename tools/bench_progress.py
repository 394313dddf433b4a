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
the best of the repeats is the steadier figure on a shared machine. Writes JSON.
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
    if args.json:
        Path(args.json).write_text(json.dumps({"config": args.config, "repeat": args.repeat, "kinds": rows}, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
