#!/usr/bin/env python
"""aragog's Bridgmanite (aragog.eos.models._bridgmanite) vs BurnMan's
``SLB_2011.mg_perovskite`` (equation of state ``slb3``) at the same parameters.

BurnMan pins numpy < 2, so it lives in its own venv (never the project's): by default
``/work/burnman-venv`` (``--burnman-python`` or ``$ARAGOG_BURNMAN_PYTHON`` to change),
created with ``python -m venv /work/burnman-venv && /work/burnman-venv/bin/pip install
burnman`` when ``--setup`` is given and it is missing. BurnMan runs in a subprocess of that
interpreter; aragog runs here.

Two parameter sets, each given to both codes:

* ``paper``: aragog's defaults, SLB2011 Table A1 as published (rounded);
* ``burnman``: BurnMan's current ``mg_perovskite`` values (HeFESTo inv251010, unrounded),
  read from BurnMan at run time.

For each, at ~20 (P, T) points over 0-135 GPa, 300-5000 K, it prints rho, S, c_p, alpha,
K_T from both codes and the largest relative difference of each (S by the difference over
|S|). Target (issue): 1e-6 relative. Not run by CI.

    python tools/eos_compare_burnman.py [--setup] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

DEFAULT_VENV = Path("/work/burnman-venv")

# (P [GPa], T [K]): the lower mantle and its extremes, plus (0 GPa, 300 K) = (V0, T0).
POINTS = [(0.0, 300.0), (0.0, 1000.0), (0.0, 2000.0), (0.0, 3000.0), (5.0, 4000.0),
          (10.0, 300.0), (25.0, 1000.0), (25.0, 2000.0), (25.0, 3000.0), (40.0, 2500.0),
          (50.0, 1500.0), (60.0, 4000.0), (75.0, 2500.0), (90.0, 3000.0), (100.0, 5000.0),
          (110.0, 2000.0), (120.0, 3500.0), (135.0, 300.0), (135.0, 2500.0), (135.0, 4000.0),
          (135.0, 5000.0)]

# Runs under BurnMan's interpreter: reads {"params": ..., "points": ...} on stdin (params
# None: BurnMan's own), prints "JSON " + {"params": ..., "rows": [[rho, S, cp, alpha, K_T], ...]}
# (BurnMan prints warnings of its own on stdout when imported).
_BURNMAN_SCRIPT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from burnman.minerals import SLB_2011
job = json.load(sys.stdin)
m = SLB_2011.mg_perovskite()
if job["params"] is not None:
    m.params.update(job["params"])  # slb3 reads its parameters at every evaluation
keys = ["F_0", "V_0", "K_0", "Kprime_0", "Debye_0", "grueneisen_0", "q_0", "n", "molar_mass", "T_0"]
rows = []
for P, T in job["points"]:
    m.set_state(P, T)
    M = m.molar_mass
    rows.append([m.rho, m.S / M, m.C_p / M, m.alpha, m.K_T, m.V, m.pressure])
print("JSON " + json.dumps({"params": {k: float(m.params[k]) for k in keys}, "rows": rows}))
"""

PROPS = ["rho", "S", "cp", "alpha", "K_T"]
# aragog Bridgmanite field <- BurnMan params key
FIELDS = {"F0": "F_0", "V0": "V_0", "K0": "K_0", "K0p": "Kprime_0", "theta0": "Debye_0",
          "gamma0": "grueneisen_0", "q0": "q_0", "n": "n", "molar_mass": "molar_mass", "T0": "T_0"}


def burnman_python(arg: str | None, setup: bool) -> str:
    """The interpreter with BurnMan (created with --setup if missing)."""
    python = Path(arg or os.environ.get("ARAGOG_BURNMAN_PYTHON") or DEFAULT_VENV / "bin" / "python")
    if not python.exists():
        if not setup:
            sys.exit(f"no BurnMan interpreter at {python}: run with --setup, or --burnman-python")
        venv = python.parent.parent
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "burnman"], check=True)
    return str(python)


def run_burnman(python: str, params: dict | None, points) -> dict:
    job = {"params": params, "points": [[P * 1e9, T] for P, T in points]}
    out = subprocess.run([python, "-c", _BURNMAN_SCRIPT], input=json.dumps(job), capture_output=True,
                         text=True, check=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("JSON ")][-1]
    return json.loads(line[5:])


def run_aragog_VT(fields: dict, V, T) -> np.ndarray:
    """aragog at BurnMan's volumes: the model alone, without either code's V(P, T) solve
    (columns PROPS + [P])."""
    from aragog.eos.models import Bridgmanite
    from aragog.eos.models import properties_VT

    props = properties_VT(Bridgmanite(**fields), V, T)
    return np.stack([np.asarray(props[k]) for k in PROPS + ["P"]], axis=1)


def run_aragog(fields: dict, points) -> np.ndarray:
    from aragog.eos.models import Bridgmanite
    from aragog.eos.models import properties_PT

    phase = Bridgmanite(**fields)
    P = np.array([p for p, _ in points]) * 1e9
    T = np.array([t for _, t in points])
    props = properties_PT(phase, P, T)
    residual = np.max(np.abs(np.asarray(props["P"]) - P) / np.maximum(P, phase.K0))
    if residual > 1e-12:
        print(f"warning: aragog's V(P, T) solve left |P - P0|/max(P0, K0) = {residual:.1e}")
    return np.stack([np.asarray(props[k]) for k in PROPS], axis=1)


def compare(label: str, python: str, use_burnman_params: bool, points) -> dict:
    from aragog.eos.models import Bridgmanite

    if use_burnman_params:
        bm = run_burnman(python, None, points)
        fields = {f: bm["params"][k] for f, k in FIELDS.items()}
    else:
        default = Bridgmanite()
        fields = {f: getattr(default, f) for f in FIELDS}
        bm = run_burnman(python, {k: fields[f] for f, k in FIELDS.items()}, points)
    ours = run_aragog(fields, points)
    theirs = np.array(bm["rows"])[:, :len(PROPS)]
    rel = np.abs(ours - theirs) / np.abs(theirs)
    V_bm, P_bm = np.array(bm["rows"])[:, len(PROPS)], np.array(bm["rows"])[:, len(PROPS) + 1]
    at_v = run_aragog_VT(fields, V_bm, np.array([t for _, t in points]))
    rel_v = np.abs(at_v[:, :len(PROPS)] - theirs) / np.abs(theirs)
    dp = np.abs(at_v[:, len(PROPS)] - P_bm) / np.maximum(np.abs(P_bm), fields["K0"])
    print(f"\n== {label}: " + ", ".join(f"{f}={v:.10g}" for f, v in fields.items()))
    print(f"{'P GPa':>6} {'T K':>6}  " + "  ".join(f"{k + ' aragog':>14} {'rel diff':>8}" for k in PROPS))
    for (P, T), a, r in zip(points, ours, rel):
        print(f"{P:6.1f} {T:6.0f}  " + "  ".join(f"{x:14.8g} {d:8.1e}" for x, d in zip(a, r)))
    worst = {k: float(rel[:, i].max()) for i, k in enumerate(PROPS)}
    worst_v = {k: float(rel_v[:, i].max()) for i, k in enumerate(PROPS)}
    print("max relative difference at the same (P, T): " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    print("max relative difference at BurnMan's (V, T): " + ", ".join(f"{k} {v:.2e}" for k, v in worst_v.items())
          + f"; P {dp.max():.2e} (of max(P, K0))")
    return {"fields": fields, "points": points, "aragog": ours.tolist(), "burnman": theirs.tolist(),
            "max_rel": worst, "max_rel_at_burnman_V": worst_v, "max_rel_P_at_burnman_V": float(dp.max())}


def main() -> None:
    import jax

    # properties_PT and properties_VT are pure JAX functions, which follow JAX's setting:
    # called in float64 as a user does (float32 would round at 6e-8 of a 1e-6 target)
    with jax.enable_x64(True):
        _main()


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--burnman-python", help="interpreter with burnman (default /work/burnman-venv)")
    parser.add_argument("--setup", action="store_true", help="create the BurnMan venv if missing")
    parser.add_argument("--json", type=Path, help="write both codes' values and the differences here")
    args = parser.parse_args()
    python = burnman_python(args.burnman_python, args.setup)
    result = {"paper": compare("SLB2011 Table A1 (aragog defaults)", python, False, POINTS),
              "burnman": compare("BurnMan SLB_2011.mg_perovskite params", python, True, POINTS)}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
