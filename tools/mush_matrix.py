#!/usr/bin/env python
"""Partly molten mantles through the mush: does every case reach its end time, what does
mixing cost, and does a crystallising cell stay where physics allows?

Each case (a config, overrides, an end time) runs in three variants: every transport term
on ("on"), ``energy.mixing = false`` ("no-mix") and ``energy.gravitational_separation =
false`` ("no-sep"). Per run: status, the end time reached, steps, RHS and Jacobian calls,
CVODE's error-test and Newton-convergence failures, wall time (compiling excluded), the
final T_magma and Phi_global, and the **donor-cell check** (docs/physics.md, "The
donor-cell invariant"): over every output time, the lowest unclipped melt fraction
g = (S - S_sol)/(S_liq - S_sol) of a cell whose entropy is below both neighbours'
(``g_min_local``; a cell drained through a face by a two-phase flux it cannot feed). The
two-phase fluxes vanish once the cell they draw from is ~19 smoothing widths below its
solidus, so ``g_min_local`` >= -20 * matprop_smooth_width (-0.2 at the default 0.01);
before the gate a freezing base reached g = -0.94 (3,300 K below the cell above).

    python tools/mush_matrix.py                       # every case (minutes)
    python tools/mush_matrix.py --fast                # the cases of the test suite
    python tools/mush_matrix.py --cases bundled-3000-e0.5-n40 --json out.json
    python tools/mush_matrix.py --spider-dir ../shared/data/spider-RTmelt
    python tools/mush_matrix.py --fast --perturb 3 --newton compiled   # ensembles: rtol x (1 + j 1e-6)
    python tools/mush_matrix.py --fast --perturb 3 --set solver.max_step_growth=2

The SPIDER cases need a SPIDER table set (``--spider-dir``; default
``../shared/data/spider-RTmelt`` beside the repository, skipped when absent). The MgSiO3
cases generate the bundled MgSiO3 tables on first use (cached). ``tests/test_mush.py``
runs the fast cases; the rest are under ``-m slow`` there.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: The demo planet on the bundled toy model (tests/earth_toy.toml; input/earth.toml until issue
#: 36): the "bundled" cases run on its tables, the others set eos.model or eos.dir; the
#: figures and tests/test_mush.py were made on it.
BASE_CONFIG = REPO / "tests" / "earth_toy.toml"
DEFAULT_SPIDER_DIR = REPO.parent / "shared" / "data" / "spider-RTmelt"

#: PROTEUS's parameters that differ from the base config (its default config; the
#: coupling wrapper's set-up, tests/compat/proteus_sequence.py): 0.1 m grains make the
#: separation flux 10^4 times the demo's.
PROTEUS_LIKE = {
    "phase_mixed.grain_size": 0.1,
    "phase_mixed.separation_buoyancy": "mixture",
    "phase_liquid.viscosity": 100.0,
    "phase_solid.viscosity": 1e22,
    "phase_liquid.thermal_conductivity": 2.0,
    "phase_solid.thermal_conductivity": 5.0,
    "solver.rtol": 1e-6,
}

VARIANTS = {
    "on": {},
    "no-mix": {"energy.mixing": False},
    "no-sep": {"energy.gravitational_separation": False},
    # the separation's drag viscosity the mush's own (PROTEUS's default since 26.10)
    "sep-mixture": {"phase_mixed.separation_viscosity": "mixture"},
}


@dataclass(frozen=True)
class Case:
    """One partly molten start: ``eos`` is "bundled", "mgsio3" or "spider"."""

    name: str
    eos: str
    surface_temperature: float
    nodes: int
    end_time: float  # yr
    emissivity: float | None = None  # grey body; None: prescribed flux
    flux: float | None = None  # W/m2, prescribed surface flux
    extra: dict = field(default_factory=dict)
    fast: bool = False

    def overrides(self, spider_dir: Path) -> dict:
        o = {
            "initial_condition.surface_temperature": self.surface_temperature,
            "mesh.number_of_nodes": self.nodes,
            "solver.start_time": 0.0,
            "solver.end_time": self.end_time,
            "solver.output_points": 21,
        }
        if self.eos == "mgsio3":
            o["eos.model"] = "mgsio3"
        elif self.eos == "spider":
            o["eos.dir"] = str(spider_dir)
        if self.flux is not None:
            o["boundary_conditions.outer_boundary_condition"] = 4
            o["boundary_conditions.outer_boundary_value"] = self.flux
        else:
            o["boundary_conditions.emissivity"] = self.emissivity
        o.update(self.extra)
        return o


CASES = [
    # The issue's stall: 110,726 steps to t = 27 yr, then "too many steps".
    Case("bundled-3000-e0.5-n40", "bundled", 3000.0, 40, 300.0, emissivity=0.5, fast=True),
    Case("bundled-2600-e1-n60", "bundled", 2600.0, 60, 300.0, emissivity=1.0),
    Case("bundled-3300-e0.1-n120", "bundled", 3300.0, 120, 1000.0, emissivity=0.1),
    Case("bundled-3000-f1e5-n80", "bundled", 3000.0, 80, 300.0, flux=1e5),
    Case("mgsio3-3000-e1-n40", "mgsio3", 3000.0, 40, 300.0, emissivity=1.0),
    Case("mgsio3-2900-f1e5-n80", "mgsio3", 2900.0, 80, 300.0, flux=1e5),
    Case("spider-2800-e1-n60", "spider", 2800.0, 60, 300.0, emissivity=1.0),
    Case("spider-2700-f1e5-n120", "spider", 2700.0, 120, 300.0, flux=1e5),
    # The freezing base of PROTEUS's sequence (fully molten start, 4000 K, 1e4 W/m2): the
    # base freezes near 85 kyr.
    Case("spider-freeze-f1e4-n40", "spider", 4000.0, 40, 1.2e5, flux=1e4, extra=PROTEUS_LIKE, fast=True),
    Case("spider-freeze-f1e4-n80", "spider", 4000.0, 80, 1.2e5, flux=1e4, extra=PROTEUS_LIKE),
]


def case_by_name(name: str) -> Case:
    for c in CASES:
        if c.name == name:
            return c
    raise SystemExit(f"unknown case {name!r}; known: {', '.join(c.name for c in CASES)}")


def local_minimum_melt_fraction(S: np.ndarray, S_sol: np.ndarray, S_liq: np.ndarray) -> float:
    """Lowest unclipped melt fraction over the cells whose entropy is below both neighbours'
    (interior cells; ``S`` (m, N) over m output times). +inf when there is none."""
    g = (S - S_sol) / (S_liq - S_sol)
    inner = (S[:, 1:-1] < S[:, :-2]) & (S[:, 1:-1] < S[:, 2:])
    vals = g[:, 1:-1][inner]
    return float(vals.min()) if vals.size else math.inf


def run_case(case: Case, variant: str, spider_dir: Path, max_steps: int = 100000, newton: str = "callbacks",
             rtol_factor: float = 1.0, settings: dict | None = None) -> dict:
    """One run; the result as a JSON-able dict (``newton``: ``solver.newton``; ``rtol_factor``
    scales the case's ``solver.rtol``, for the ensembles of ``--perturb``; ``settings``:
    ``{"section.key": value}`` applied after the case's and the variant's, from ``--set``)."""
    from aragog import EntropySolver, load_config

    over = (case.overrides(spider_dir) | VARIANTS[variant] | {"solver.max_steps": max_steps, "solver.newton": newton}
            | dict(settings or {}))
    params = load_config(BASE_CONFIG, overrides=over)
    params.solver.rtol *= float(rtol_factor)
    solver = EntropySolver(params)
    solver.initialize()
    solver.wait_for_programs()
    t0 = time.perf_counter()
    solver.solve()
    wall = time.perf_counter() - t0
    out = solver.get_state()
    res = solver.integration_result
    inputs = solver.inputs
    P = np.asarray(inputs.mesh.P_stag)
    sol, liq = inputs.eos.solidus, inputs.eos.liquidus
    S_sol = np.interp(P, np.asarray(sol.P), np.asarray(sol.S))
    S_liq = np.interp(P, np.asarray(liq.P), np.asarray(liq.S))
    n = solver.n_cells
    S = np.asarray(res.y)[:, -n:] * float(inputs.scales.S)
    g0 = (S[0] - S_sol) / (S_liq - S_sol)
    phi0 = float(np.clip(g0, 0.0, 1.0).mean())
    info = res.info or {}
    return {
        "case": case.name, "variant": variant, "status": int(out.status), "message": out.message,
        "t_end": case.end_time, "t_reached": float(res.t_final), "steps": int(res.nsteps),
        "nfev": int(res.nfev), "njev": int(res.njev),
        "err_test_fails": int(info.get("NumErrTestFails", -1)),
        "conv_fails": int(info.get("NumNonlinSolvConvFails", -1)),
        "wall_s": wall, "phi_start_cells": phi0, "Phi_global": float(out.Phi_global),
        "T_magma": float(out.T_magma), "g_min_local": local_minimum_melt_fraction(S, S_sol, S_liq),
        "rtol_factor": float(rtol_factor), "rtol": float(params.solver.rtol),
    }


def report(rows: list[dict]) -> str:
    head = (f"{'case':26s} {'variant':7s} {'st':>3s} {'t reached':>10s} {'steps':>7s} {'RHS':>8s} {'Jac':>6s} "
            f"{'errF':>5s} {'nlsF':>5s} {'wall s':>7s} {'Phi0':>6s} {'Phi':>7s} {'g_min':>7s} {'on/off':>6s}")
    lines = [head, "-" * len(head)]
    by = {(r["case"], r["variant"]): r for r in rows if r.get("rtol_factor", 1.0) == 1.0}  # (not --perturb's)
    for r in rows:
        off = by.get((r["case"], "no-mix"))
        ratio = (f"{r['steps'] / off['steps']:.2f}" if r["variant"] == "on" and r.get("rtol_factor", 1.0) == 1.0
                 and off and off["steps"] else "")
        g = r["g_min_local"]
        lines.append(f"{r['case']:26s} {r['variant']:7s} {r['status']:3d} {r['t_reached']:10.4g} {r['steps']:7d} "
                     f"{r['nfev']:8d} {r['njev']:6d} {r['err_test_fails']:5d} {r['conv_fails']:5d} "
                     f"{r['wall_s']:7.2f} {r['phi_start_cells']:6.3f} {r['Phi_global']:7.4f} {g if math.isfinite(g) else float('nan'):7.3f} "
                     f"{ratio:>6s}")
    return "\n".join(lines)


def ensemble_report(rows: list[dict]) -> str:
    """Per case and variant: the steps of each rtol of the ensemble, their median and spread
    (max / min), and how many runs failed."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["case"], r["variant"]), []).append(r)
    lines = [f"{'case':26s} {'variant':7s} {'runs':>4s} {'median':>8s} {'max/min':>7s} {'failed':>6s}  steps",
             "-" * 90]
    for (case, variant), rs in groups.items():
        steps = sorted(r["steps"] for r in rs)
        spread = steps[-1] / max(steps[0], 1)
        failed = sum(r["status"] < 0 for r in rs)
        lines.append(f"{case:26s} {variant:7s} {len(rs):4d} {steps[len(steps) // 2]:8d} {spread:7.2f} {failed:6d}  "
                     + ", ".join(str(r["steps"]) for r in rs))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="only the cases of the test suite")
    ap.add_argument("--cases", default=None, help="comma-separated case names")
    ap.add_argument("--variants", default="on,no-mix,no-sep")
    ap.add_argument("--spider-dir", default=str(DEFAULT_SPIDER_DIR))
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--newton", choices=("auto", "compiled", "callbacks"), default="callbacks",
                    help="solver.newton (the compiled Newton solve or SUNDIALS' own)")
    ap.add_argument("--perturb", type=int, default=0, metavar="K",
                    help="also run each case K more times with solver.rtol x (1 + j 1e-6), j = 1..K, and "
                         "print each ensemble's steps: in the mush the step count is chaotic (docs/solver.md, "
                         "\"One compiled call per step\"), so one run compares nothing")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config setting for every run, as the command line's --set (repeatable), e.g. "
                         "solver.max_step_growth=2")
    args = ap.parse_args(argv)
    from aragog.config import parse_overrides

    settings = parse_overrides(args.set)

    spider_dir = Path(args.spider_dir)
    cases = [case_by_name(n) for n in args.cases.split(",")] if args.cases else CASES
    if args.fast:
        cases = [c for c in cases if c.fast]
    variants = [v for v in args.variants.split(",") if v]
    rows = []
    for case in cases:
        if case.eos == "spider" and not spider_dir.is_dir():
            print(f"skipping {case.name}: no SPIDER table set at {spider_dir}", file=sys.stderr)
            continue
        for variant in variants:
            for j in range(max(args.perturb, 0) + 1):
                rows.append(run_case(case, variant, spider_dir, newton=args.newton, rtol_factor=1.0 + j * 1e-6,
                                     settings=settings))
                print(f"  {case.name} {variant} rtol x {1.0 + j * 1e-6:.6f}: status {rows[-1]['status']}, "
                      f"{rows[-1]['steps']} steps", file=sys.stderr, flush=True)
    print(report(rows))
    if args.perturb > 0:
        print("\n" + ensemble_report(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))
        print(f"wrote {args.json}")
    return 0 if all(r["status"] >= 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
