#!/usr/bin/env python
"""This package vs the upstream aragog (fwl-aragog) on PROTEUS's coupled-run call sequence.

The same script (``tests/compat/proteus_sequence.py``, upstream names only, PROTEUS's call
order) runs under two interpreters: this one (this package) and one with the upstream
installed (``--upstream-python``, default ``$ARAGOG_UPSTREAM_PYTHON`` or
``/work/upvenv/bin/python``). Inputs (P-S tables, PROTEUS's P-T lookup directory, melting
curves) are generated once by this package and given to both.

Prints, per (mode, backend) and per call: T_magma, T_core, Phi_global for both codes with
their differences, and the wall time of each call (each run in its own process, so the
first call includes each code's start-up: table loading, JAX compilation). ``--json PATH``
writes everything, both records included.

    python tools/compare_upstream.py                       # const + table, numpy + jax
    python tools/compare_upstream.py --modes const --backends numpy --json cmp.json
    python tools/compare_upstream.py --modes table --backends jax --nodes 80 --tsurf 4000 \
        --eos-dir ../shared/data/spider-RTmelt --freeze           # through the freezing base

The upstream interpreter (never used by CI; outside the repository): a Python 3.11 venv with
``pip install --ignore-requires-python --only-binary=:all: fwl_aragog-*.whl numpy==<ours>
typing_extensions jax==<ours> jaxlib==<ours> equinox`` (the wheel asks for Python >= 3.12,
and the index's newest numpy needs 3.12 too). Its CVODE path needs
``scikits-odes-sundials`` (3.x), which builds only against SUNDIALS >= 7 (Debian bookworm
ships 6.4): build SUNDIALS 7 (CVODE, CVODES, IDA, IDAS) into a prefix, ``SUNDIALS_INST=PREFIX
pip install scikits-odes-sundials``, and set the extension modules' rpath to PREFIX/lib.
Without it the upstream warns and integrates with scipy's Radau, and its ``backend = jax``
factory is never called (the factory is used on the CVODE path only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "tests" / "compat"
SCRIPT = COMPAT / "proteus_sequence.py"
DEFAULT_UPSTREAM_PYTHON = "/work/upvenv/bin/python"


def _run(exe: str, mode: str, backend: str, inputs: dict, workdir: Path, nodes, env, tsurf=None,
         structure="dummy", freeze=False) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "record.json"
    cmd = [exe, str(SCRIPT), "--mode", mode, "--backend", backend, "--eos-dir", inputs["eos_dir"],
           "--lookup-dir", inputs["lookup_dir"], "--melting-dir", inputs["melting_dir"],
           "--workdir", str(workdir), "--out", str(out)]
    if nodes:
        cmd += ["--nodes", str(nodes)]
    if tsurf:
        cmd += ["--tsurf", str(tsurf)]
    cmd += ["--structure", structure]
    if freeze:
        cmd += ["--freeze"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=str(workdir), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.is_file():
        record = json.loads(out.read_text())
    else:
        record = {"ok": False, "calls": [], "error": {"stage": "process", "type": "NoRecord",
                                                       "message": proc.stderr[-2000:]}}
    record["process_wall_s"] = wall
    record["returncode"] = proc.returncode
    return record


def _rel(a, b):
    return abs(a - b) / abs(b) if b else float("inf")


def compare(ours: dict, up: dict) -> dict:
    """Per-call differences and their maxima."""
    rows = []
    for o, u in zip(ours.get("calls", []), up.get("calls", [])):
        row = {"label": o["label"], "t_end": o["t_end"]}
        for key in ("T_magma", "T_core", "Phi_global"):
            row[key] = (o[key], u[key])
        row["rel_T_magma"] = _rel(o["T_magma"], u["T_magma"])
        row["rel_T_core"] = _rel(o["T_core"], u["T_core"])
        row["abs_Phi_global"] = abs(o["Phi_global"] - u["Phi_global"])
        # The upstream's T_core is the bottom cell's temperature (T_stag[0]); compare that too.
        if o.get("T_stag") and u.get("T_stag"):
            row["rel_T_stag0"] = _rel(o["T_stag"][0], u["T_stag"][0])
        row["status"] = (o["status"], u["status"])
        row["dt_actual"] = (o["dt_actual"], u["dt_actual"])
        row["wall_s"] = (o["wall_s"], u["wall_s"])
        rows.append(row)
    summary = {}
    for key in ("rel_T_magma", "rel_T_core", "abs_Phi_global", "rel_T_stag0"):
        vals = [r[key] for r in rows if key in r]
        summary[f"max_{key}"] = max(vals) if vals else None
    for side, rec, idx in (("ours", ours, 0), ("upstream", up, 1)):
        walls = [r["wall_s"][idx] for r in rows]
        summary[f"{side}_first_call_s"] = walls[0] if walls else None
        summary[f"{side}_later_calls_mean_s"] = sum(walls[1:]) / len(walls[1:]) if len(walls) > 1 else None
        summary[f"{side}_setup_s"] = rec.get("setup_wall_s")
        summary[f"{side}_process_s"] = rec.get("process_wall_s")
    return {"rows": rows, "summary": summary}


def print_table(mode: str, backend: str, ours: dict, up: dict, cmp: dict) -> None:
    print(f"\n== mode={mode} backend={backend}  (ours: aragog {ours.get('aragog_version')}, "
          f"upstream: fwl-aragog {up.get('aragog_version')})")
    for side, rec in (("ours", ours), ("upstream", up)):
        if not rec.get("ok"):
            err = rec.get("error", {})
            print(f"  {side} FAILED at {err.get('stage')}: {err.get('type')}: {err.get('message')}")
    head = (f"{'call':<12} {'T_magma ours':>12} {'upstream':>10} {'rel':>8}  {'T_core ours':>11} "
            f"{'upstream':>10} {'rel':>8}  {'Phi ours':>8} {'upstream':>8} {'abs':>7}  "
            f"{'wall ours':>9} {'upstream':>9}")
    print(head)
    print("-" * len(head))
    for r in cmp["rows"]:
        (tm_o, tm_u), (tc_o, tc_u), (ph_o, ph_u) = r["T_magma"], r["T_core"], r["Phi_global"]
        w_o, w_u = r["wall_s"]
        print(f"{r['label']:<12} {tm_o:12.2f} {tm_u:10.2f} {r['rel_T_magma']:8.2%}  {tc_o:11.2f} "
              f"{tc_u:10.2f} {r['rel_T_core']:8.2%}  {ph_o:8.4f} {ph_u:8.4f} {r['abs_Phi_global']:7.4f}  "
              f"{w_o:8.2f}s {w_u:8.2f}s")
    s = cmp["summary"]
    if cmp["rows"]:
        print(f"max: T_magma {s['max_rel_T_magma']:.3%}, T_core {s['max_rel_T_core']:.3%}, "
              f"Phi_global {s['max_abs_Phi_global']:.4f} (abs)"
              + (f", bottom-cell T (upstream's T_core) {s['max_rel_T_stag0']:.3%}"
                 if s.get("max_rel_T_stag0") is not None else ""))
        o_calls, u_calls = ours.get("calls", []), up.get("calls", [])
        if len(o_calls) > 1 and o_calls[1].get("eddy_diff_ends") and u_calls[1].get("eddy_diff_ends"):
            print(f"CMB node after call1: eddy diffusivity ours {o_calls[1]['eddy_diff_ends'][0]:.3g} "
                  f"upstream {u_calls[1]['eddy_diff_ends'][0]:.3g} m2/s; heat flux ours "
                  f"{o_calls[1]['heat_flux_ends'][0]:.3g} upstream {u_calls[1]['heat_flux_ends'][0]:.3g} W/m2")
        print(f"wall: set-up ours {s['ours_setup_s']:.2f}s upstream {s['upstream_setup_s']:.2f}s; "
              f"first call ours {s['ours_first_call_s']:.2f}s upstream {s['upstream_first_call_s']:.2f}s; "
              f"later calls (mean) ours {s['ours_later_calls_mean_s']:.3f}s "
              f"upstream {s['upstream_later_calls_mean_s']:.3f}s; "
              f"process ours {s['ours_process_s']:.1f}s upstream {s['upstream_process_s']:.1f}s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream-python",
                    default=os.environ.get("ARAGOG_UPSTREAM_PYTHON", DEFAULT_UPSTREAM_PYTHON))
    ap.add_argument("--modes", nargs="+", choices=("const", "table"), default=["const", "table"])
    ap.add_argument("--backends", nargs="+", choices=("numpy", "jax"), default=["numpy", "jax"])
    ap.add_argument("--nodes", type=int, default=None, help="num_levels (the script's default otherwise)")
    ap.add_argument("--tsurf", type=float, default=None,
                    help="planet.tsurf_init [K] in table mode (3000: partly crystallised, Phi < 1)")
    ap.add_argument("--structure", choices=("dummy", "zalmoxis"), default="dummy",
                    help="dummy: Adams-Williamson mesh; zalmoxis: a structure file re-read by reset()")
    ap.add_argument("--freeze", action="store_true",
                    help="continue PROTEUS's sequence at a fixed 1e4 W/m2 through the freezing of the "
                         "base until Phi_global < 0.5 (proteus_sequence.py FREEZE)")
    ap.add_argument("--eos-dir", default=None,
                    help="P-S tables for both codes (a SPIDER set, e.g. ../shared/data/spider-RTmelt), with "
                         "P-T melting curves made from its own phase boundaries; default: generated by this "
                         "package")
    ap.add_argument("--workdir", default=None, help="inputs and per-run logs (default: a temporary dir)")
    ap.add_argument("--json", default=None, metavar="PATH", help="write the comparison and both records")
    args = ap.parse_args(argv)
    if not (Path(args.upstream_python).is_file() and os.access(args.upstream_python, os.X_OK)):
        print(f"no upstream interpreter at {args.upstream_python} (--upstream-python or "
              "ARAGOG_UPSTREAM_PYTHON)", file=sys.stderr)
        return 2
    root = Path(args.workdir or tempfile.mkdtemp(prefix="compare_upstream_"))
    sys.path.insert(0, str(COMPAT))
    from _tables import prepare

    inputs = prepare(root / "inputs")
    if args.eos_dir:  # another table set, with melting curves from its own phase boundaries
        from _tables import melting_from_table_set

        inputs["eos_dir"] = str(Path(args.eos_dir).resolve())
        inputs["melting_dir"] = str(melting_from_table_set(inputs["eos_dir"], root / "inputs" / "melting_eos"))
    env_up = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env_up.setdefault("JAX_PLATFORMS", "cpu")
    env_ours = dict(os.environ)
    env_ours.setdefault("JAX_PLATFORMS", "cpu")
    results = {"inputs": inputs, "upstream_python": args.upstream_python, "ours_python": sys.executable,
               "runs": []}
    for mode in args.modes:
        for backend in args.backends:
            ours = _run(sys.executable, mode, backend, inputs, root / f"ours_{mode}_{backend}", args.nodes, env_ours,
                        args.tsurf, args.structure, args.freeze)
            up = _run(args.upstream_python, mode, backend, inputs, root / f"up_{mode}_{backend}", args.nodes, env_up,
                      args.tsurf, args.structure, args.freeze)
            cmp = compare(ours, up)
            print_table(mode, backend, ours, up, cmp)
            results["runs"].append({"mode": mode, "backend": backend, **cmp, "ours": ours, "upstream": up})
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
