#!/usr/bin/env python
"""The demo planet on the generated MgSiO3 tables against the bundled toy model: the figure
of docs/eos_tables.md ("The MgSiO3 model").

    python tools/plot_eos_demo.py [--out docs/figures/eos_mgsio3_demo.png] [--json OUT]

Runs ``tests/earth_toy.toml`` (toy tables) and the demo ``input/earth.toml`` (``eos.model =
"mgsio3"``), the same planet otherwise, from 4000 K to the end time, as consecutive
``solve()`` calls ending at log-spaced times, and plots the magma ocean's temperature
T_magma and the global melt fraction Φ against time. Prints one row
per run: status, steps, wall time, the time the mantle became 99 % and fully solid, and
the final T_magma; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from aragog import EntropySolver, load_config

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"toy model (eos.model = \"default\")": ROOT / "tests" / "earth_toy.toml",
        "MgSiO3 (eos.model = \"mgsio3\")": ROOT / "input" / "earth.toml"}


def _first_time_below(t: np.ndarray, phi: np.ndarray, level: float) -> float | None:
    below = np.nonzero(phi <= level)[0]
    return float(t[below[0]]) if below.size else None


def run(path: Path, per_decade: int) -> dict:
    """The evolution of the config at ``path`` as consecutive solves, each continuing the
    last, ending at ``per_decade`` log-spaced times per decade from 0.1 yr to the end time
    (as a coupled code calls it): its series and figures."""
    params = load_config(path)
    end = float(params.solver.end_time)
    times = np.geomspace(0.1, end, int(per_decade * np.log10(end / 0.1)) + 1)
    solver = EntropySolver(params)
    t0 = time.perf_counter()
    solver.initialize()
    series = {"time": [0.0], "T_magma": [], "Phi_global": []}
    first = solver.get_state()
    series["T_magma"].append(first.T_magma)
    series["Phi_global"].append(first.Phi_global)
    steps, status, message, start = 0, 0, "", 0.0
    for stop in times:
        solver.parameters.solver.start_time, solver.parameters.solver.end_time = start, float(stop)
        solver.reset()
        solver.solve()
        state = solver.get_state()
        steps, status, message, start = steps + int(state.nsteps), int(state.status), state.message, float(stop)
        series["time"].append(float(stop))
        series["T_magma"].append(state.T_magma)
        series["Phi_global"].append(state.Phi_global)
        if status != 0:
            break
    wall = time.perf_counter() - t0
    series = {k: np.asarray(v) for k, v in series.items()}
    t, phi = series["time"], series["Phi_global"]
    return {"config": str(path.relative_to(ROOT)), "status": status, "message": message, "steps": steps,
            "solves": len(t) - 1, "wall_s": wall, "t_phi_1pct_yr": _first_time_below(t, phi, 0.01),
            "t_solid_yr": _first_time_below(t, phi, 0.0), "T_magma_end_K": float(series["T_magma"][-1]),
            "series": series}


def plot(results: dict, out: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax_T, ax_phi = fig.subplots(1, 2)
    for label, res in results.items():
        series = res["series"]
        t = series["time"][1:]  # t = 0 has no place on a log axis
        ax_T.plot(t, series["T_magma"][1:], label=label)
        ax_phi.plot(t, series["Phi_global"][1:], label=label)
    for ax, ylabel in ((ax_T, "T_magma [K]"), (ax_phi, "global melt fraction Φ")):
        ax.set_xscale("log")
        ax.set_xlabel("time [yr]")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax_phi.legend(loc="lower left")
    fig.suptitle("Earth-size mantle from 4000 K: bundled toy tables vs generated MgSiO3 tables")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures" / "eos_mgsio3_demo.png")
    ap.add_argument("--json", type=Path, help="write the figures as JSON")
    ap.add_argument("--per-decade", type=int, default=20, help="solves (output times) per decade of time")
    args = ap.parse_args()
    results = {label: run(path, args.per_decade) for label, path in RUNS.items()}
    print(f"{'run':38s} {'status':>6s} {'steps':>6s} {'wall s':>7s} {'Φ<=1% at yr':>12s} {'solid at yr':>12s} "
          f"{'T_end K':>8s}")
    fmt = lambda v: "-" if v is None else f"{v:.3g}"
    for label, r in results.items():
        print(f"{label:38s} {r['status']:6d} {r['steps']:6d} {r['wall_s']:7.1f} {fmt(r['t_phi_1pct_yr']):>12s} "
              f"{fmt(r['t_solid_yr']):>12s} {r['T_magma_end_K']:8.1f}")
    plot(results, args.out)
    print(f"wrote {args.out}")
    if args.json:
        args.json.write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "series"}
                                         for k, v in results.items()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
