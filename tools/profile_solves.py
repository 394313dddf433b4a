#!/usr/bin/env python
"""Where the time of repeated solves goes (docs/design.md, use 4 "Profiling"; issue 5).

    python tools/profile_solves.py [--config input/earth.toml] [--solves 100] [--nodes N]
                                   [--mode fused|blocks|both] [--window 10] [--fixed-mesh]
                                   [--jax-cache DIR] [--rebuild-solves 3]
                                   [--crossover 25 50 100 200] [--quick]
                                   [--json OUT] [--png OUT]

A coupling-style loop: one solver, ``--solves`` consecutive solves of ``--window`` years,
and between solves the surface flux (prescribed-flux boundary), the tidal heating, the
time window and (unless ``--fixed-mesh``) the planet radius, hence the whole mesh,
change — what an atmosphere model coupled through the Python API does. Reported, as
tables and JSON:

1. per solve: wall time (reset + solve), time inside the RHS and Jacobian callbacks,
   CVODE's own time (integration minus callbacks), Python overhead (wall minus
   integration), RHS / Jacobian calls and microseconds per call (median, and solve 2);
2. the first solve: tracing + lowering vs compiling (or loading), per program;
3. scaling: cumulative wall time after 1, 10, 100 solves (process start excluded);
4. the same first solve in a second process on the same persistent cache (warm),
   and fused vs blocks;
5. a "rebuild every solve" baseline: each solve builds new jitted closures of the RHS and
   Jacobian with the inputs baked in (the pattern the JitPair design replaces), so the
   saving is measured on the same inputs;
6. the first-solve compile time of both modes against the number of cells (crossover).

Every case runs in its own Python process (clean JAX caches). With ``--jax-cache`` the
cold/warm pair uses that directory (its state is reported as found); by default a fresh
temporary directory, so "cold" is really cold.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"overhead_ms": 5.0, "rebuild_ratio": 10.0, "warm_fraction": 0.10}


# ------------------------------------------------------------------------------ worker --
def _coupling_params(cfg: dict, mode: str):
    from aragog import load_config

    overrides = {"solver.compile_mode": mode, "solver.end_time": cfg["window"],
                 "boundary_conditions.outer_boundary_condition": 4,
                 "boundary_conditions.outer_boundary_value": 1.0e5,
                 "energy.tidal": True, "energy.tidal_array": [1.0e-9]}
    if cfg.get("nodes"):
        overrides["mesh.number_of_nodes"] = cfg["nodes"]
    overrides["solver.jax_cache_dir"] = cfg.get("cache") or "none"  # the cache is on by default
    return load_config(cfg["config"], overrides=overrides)


def _change_inputs(params, i: int, t: float, window: float, radius0: float, mesh_change: bool) -> None:
    """The coupling step between solves: new flux, tidal heating, window (and radius)."""
    params.boundary_conditions.outer_boundary_value = 1.0e5 * (1.0 + 0.3 * math.sin(i))
    params.energy.tidal_array = [1.0e-9 * (1.0 + 0.5 * math.cos(i))]
    params.solver.start_time, params.solver.end_time = t, t + window
    if mesh_change:
        params.mesh.outer_radius = radius0 * (1.0 + 1.0e-3 * math.sin(0.7 * i))


def _compile_table(stats: dict, programs=None) -> dict:
    """Per program: the compile counters of ``stats`` (jit_stats) and, for the programs of
    a fused pair (``programs``: its JitPair), the kernels of the compiled executable."""
    from aragog.solver import compiled_program
    from aragog.solver import kernel_counts

    keys = ("traces", "compiles", "loads", "trace_seconds", "compile_seconds", "source")
    out = {k: {kk: v[kk] for kk in keys} for k, v in stats.items()}
    for name, entry in out.items():
        prog = compiled_program(programs, name)  # (executable, XLA options) or None
        entry["kernels"] = None
        if prog is not None:
            try:
                entry["kernels"] = kernel_counts(prog[0])["kernels"]
            except Exception:  # noqa: BLE001 - a deserialized executable may have no HLO text
                pass
    return out


def worker_loop(cfg: dict) -> dict:
    """One process: initialize + first solve, then solves 2..N with inputs changing."""
    t_import = time.perf_counter()
    from aragog import EntropySolver

    t_import = time.perf_counter() - t_import
    mode = cfg["mode"]
    params = _coupling_params(cfg, mode)
    radius0 = float(params.mesh.outer_radius)
    t0 = time.perf_counter()
    solver = EntropySolver(params)
    solver.initialize()
    rows, cumulative = [], []
    t = float(cfg["window"])
    first_stats = None
    counts_after_first = None
    for i in range(cfg["solves"]):
        w0 = time.perf_counter()
        if i > 0:
            _change_inputs(solver.parameters, i, t, cfg["window"], radius0, cfg["mesh_change"])
            t += cfg["window"]
            solver.reset()
        w1 = time.perf_counter()
        solver.solve()
        w2 = time.perf_counter()
        res = solver.integration_result
        cb = res.callback_seconds
        rhs_s, jac_s = cb.get("rhs", 0.0), cb.get("jac", 0.0)
        rows.append({
            "wall_s": w2 - w0, "reset_s": w1 - w0, "integrate_s": res.wall_seconds,
            "rhs_s": rhs_s, "jac_s": jac_s, "cvode_s": res.wall_seconds - rhs_s - jac_s,
            "overhead_s": (w2 - w0) - res.wall_seconds, "nfev": res.nfev, "njev": res.njev,
            "nsteps": res.nsteps, "status": solver.get_state().status if i == 0 else None,
            "us_per_rhs": 1e6 * rhs_s / max(res.nfev, 1), "us_per_jac": 1e6 * jac_s / max(res.njev, 1),
        })
        cumulative.append(time.perf_counter() - t0)
        if i == 0:
            solver.get_state()  # the output program, as a coupling loop reads the state
            first_stats = _compile_table(solver.jit_stats, solver.programs)
            counts_after_first = {k: (v["traces"], v["compiles"] + v["loads"]) for k, v in solver.jit_stats.items()}
            rows[0]["wall_s"] = time.perf_counter() - t0  # includes initialize + compiles
    counts = {k: (v["traces"], v["compiles"] + v["loads"]) for k, v in solver.jit_stats.items()}
    new = {k: [counts[k][0] - counts_after_first.get(k, (0, 0))[0],
               counts[k][1] - counts_after_first.get(k, (0, 0))[1]] for k in counts}
    return dict(ok=True, mode=mode, nodes=int(solver.n_cells) + 1, import_s=t_import, rows=rows,
                cumulative_s=cumulative, first_solve=first_stats, new_after_first=new)


def worker_rebuild(cfg: dict) -> dict:
    """The pattern this design replaces: every solve builds new jitted closures of the RHS
    and its Jacobian with that solve's inputs baked in as constants, then integrates them
    with the same back end and tolerances."""
    import numpy as np

    from aragog import EntropySolver, physics
    from aragog._jax import jax, jnp
    from aragog.solver.backends import integrate
    from aragog.solver.backends import dense_to_band

    params = _coupling_params(cfg, "fused")
    radius0 = float(params.mesh.outer_radius)
    solver = EntropySolver(params)
    solver.initialize()  # mesh, tables, initial state (its programs are not used below)
    y = solver._y0()
    t = 0.0
    rows = []
    ml, mu = physics.band_widths(solver.options)
    for i in range(cfg["solves"]):
        w0 = time.perf_counter()
        if i > 0:
            _change_inputs(solver.parameters, i, t, cfg["window"], radius0, cfg["mesh_change"])
            solver.reset()
        inputs, options = solver.inputs, solver.options
        rhs = jax.jit(lambda tt, yy: physics.rhs(tt, yy, inputs, options))  # closure: baked inputs
        jac_dense = jax.jit(jax.jacfwd(lambda yy, tt: physics.rhs(tt, yy, inputs, options)))

        class Problem:  # the integrator's callback object (OdeProblemLike)
            n, jac_layout = y.shape[0], "band"

            def rhs_into(self, tt, yy, out):
                out[:] = rhs(tt, jnp.asarray(yy))

            def jac_into(self, tt, yy, out):
                out[:] = dense_to_band(np.asarray(jac_dense(jnp.asarray(yy), tt)), ml, mu)

        prob = Problem()
        prob.ml, prob.mu = ml, mu
        sp = solver.parameters.solver
        t0, t1 = float(sp.start_time), float(sp.end_time)
        atol = float(sp.atol) / float(inputs.scales.S)
        res = integrate(prob, [t0, t1], y, method="cvode", rtol=float(sp.rtol), atol=atol,
                        max_steps=int(sp.max_steps))
        y = res.y_final
        t = t1
        rows.append({"wall_s": time.perf_counter() - w0, "nfev": res.nfev, "njev": res.njev,
                     "status": res.status})
    return dict(ok=True, rows=rows)


# ------------------------------------------------------------------------ orchestrator --
def run_case(kind: str, cfg: dict, timeout: float) -> dict:
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the case's own cache setting only
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", kind, json.dumps(cfg)],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return dict(ok=False, error=f"> {timeout:.0f} s")
    if proc.returncode != 0:
        return dict(ok=False, error=proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - t0
    return out


def table(headers, rows) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def ms(x) -> str:
    return "-" if x is None else f"{1e3 * x:.2f} ms"


def sec(x) -> str:
    return "-" if x is None else f"{x:.2f} s"


def first_compile(case) -> tuple[float, float]:
    """(trace + lower seconds, compile or load seconds) of the first solve, all programs."""
    fs = case["first_solve"]
    return (sum(v["trace_seconds"] for v in fs.values()), sum(v["compile_seconds"] for v in fs.values()))


def later(case) -> list:
    return case["rows"][1:] or case["rows"]


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(REPO / "input" / "earth.toml"))
    ap.add_argument("--solves", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=None, help="mesh.number_of_nodes (default: the config's)")
    ap.add_argument("--mode", choices=("fused", "blocks", "both"), default="both")
    ap.add_argument("--window", type=float, default=10.0, help="years per solve")
    ap.add_argument("--fixed-mesh", action="store_true", help="keep the radius (mesh) fixed between solves")
    ap.add_argument("--jax-cache", default=None, help="persistent cache directory for the cold/warm pair")
    ap.add_argument("--rebuild-solves", type=int, default=3, help="solves of the rebuild-every-solve baseline")
    ap.add_argument("--crossover", type=int, nargs="*", default=[25, 50, 100, 200],
                    help="numbers of nodes for the compile-time comparison (empty: skip)")
    ap.add_argument("--quick", action="store_true", help="10 solves, 2 rebuild solves, crossover 25 100")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--png", default=None)
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "CFG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        kind, cfg = args.worker[0], json.loads(args.worker[1])
        out = worker_loop(cfg) if kind == "loop" else worker_rebuild(cfg)
        print(json.dumps(out))
        return 0

    if args.quick:
        args.solves, args.rebuild_solves, args.crossover = min(args.solves, 10), 2, [25, 100]
    modes = ["fused", "blocks"] if args.mode == "both" else [args.mode]
    tmp = tempfile.TemporaryDirectory(prefix="aragog-profile-")
    base = dict(config=str(Path(args.config).absolute()), window=args.window, nodes=args.nodes,
                mesh_change=not args.fixed_mesh)
    report = dict(settings=dict(vars(args), worker=None), targets=TARGETS,
                  machine=dict(python=platform.python_version(), platform=platform.platform(),
                               cpus=os.cpu_count()), modes={})
    wall0 = time.perf_counter()
    print(f"profile_solves: {args.config}, {args.solves} solves of {args.window:g} yr; surface flux, tidal "
          f"heating, window{'' if args.fixed_mesh else ' and radius (mesh)'} change between solves\n")

    for mode in modes:
        cache = args.jax_cache or str(Path(tmp.name) / f"cache-{mode}")
        r = {}
        print(f"  ... {mode}: loop of {args.solves} solves (cold cache)", file=sys.stderr, flush=True)
        r["cold"] = run_case("loop", {**base, "mode": mode, "solves": args.solves, "cache": cache}, args.timeout)
        print(f"  ... {mode}: second process, warm cache", file=sys.stderr, flush=True)
        r["warm"] = run_case("loop", {**base, "mode": mode, "solves": min(args.solves, 10), "cache": cache},
                             args.timeout)
        report["modes"][mode] = r
        for k in ("cold", "warm"):
            if not r[k].get("ok"):
                print(f"{mode} {k}: FAILED {r[k].get('error')}")

    # ---- 1. per solve ---------------------------------------------------------------------
    rows = []
    for mode, r in report["modes"].items():
        c = r["cold"]
        if not c.get("ok"):
            continue
        for label, sel in (("median of solves 2..N", later(c)), ("solve 2", c["rows"][1:2] or c["rows"])):
            rows.append([mode, label, ms(med(sel, "wall_s")), ms(med(sel, "rhs_s")), ms(med(sel, "jac_s")),
                         ms(med(sel, "cvode_s")), ms(med(sel, "overhead_s")), int(med(sel, "nfev")),
                         int(med(sel, "njev")), f"{med(sel, 'us_per_rhs'):.0f}", f"{med(sel, 'us_per_jac'):.0f}"])
    print("1. Per solve (after the first)")
    print(table(["mode", "which", "wall", "RHS cb", "Jac cb", "CVODE", "overhead", "RHS calls",
                 "Jac calls", "us/RHS", "us/Jac"], rows) + "\n")

    # ---- 2. first solve ------------------------------------------------------------------
    rows = []
    for mode, r in report["modes"].items():
        for k in ("cold", "warm"):
            case = r[k]
            if not case.get("ok"):
                continue
            for prog, v in case["first_solve"].items():
                if v["compiles"] + v["loads"] == 0:  # not built here ("initial": NumPy, never compiled)
                    continue
                kernels = v.get("kernels")
                rows.append([mode, k, prog, v["source"], v["compiles"], v["loads"], sec(v["trace_seconds"]),
                             sec(v["compile_seconds"]), "-" if kernels is None else kernels])
            tr, co = first_compile(case)
            rows.append([mode, k, "TOTAL", "", "", "", sec(tr), sec(co), ""])
    print("2. First solve: tracing + lowering vs compiling (cold) or loading (warm), per program; XLA kernels "
          "of the compiled program (fused)")
    print(table(["mode", "cache", "program", "source", "compiles", "loads", "trace+lower", "compile/load",
                 "kernels"], rows) + "\n")

    # ---- 3. scaling ----------------------------------------------------------------------
    rows = []
    for mode, r in report["modes"].items():
        c = r["cold"]
        if not c.get("ok"):
            continue
        cum = c["cumulative_s"]
        marks = [n for n in (1, 10, 100, 1000) if n <= len(cum)]
        row = [mode] + [sec(cum[n - 1]) for n in marks]
        if len(cum) > 1:
            row.append(ms((cum[-1] - cum[0]) / (len(cum) - 1)))
        rows.append(row)
        new = {k: v for k, v in c["new_after_first"].items() if v != [0, 0]}
        report["modes"][mode]["zero_new_after_first"] = not new
    marks = [n for n in (1, 10, 100, 1000) if n <= args.solves]
    print("3. Scaling: cumulative wall after N solves (initialize + compiles included in N = 1)")
    print(table(["mode"] + [f"N = {n}" for n in marks] + ["per later solve"], rows))
    for mode, r in report["modes"].items():
        if r["cold"].get("ok"):
            print(f"   {mode}: new traces/compiles over solves 2..{args.solves}: "
                  f"{'none' if r.get('zero_new_after_first') else r['cold']['new_after_first']}")
    print()

    # ---- 4. warm cache ---------------------------------------------------------------------
    rows = []
    report["warm_vs_cold"] = {}
    for mode, r in report["modes"].items():
        if not (r["cold"].get("ok") and r["warm"].get("ok")):
            continue
        ct, cc = first_compile(r["cold"])
        wt, wc = first_compile(r["warm"])
        frac = (wt + wc) / (ct + cc)
        report["warm_vs_cold"][mode] = dict(cold_s=ct + cc, warm_s=wt + wc, fraction=frac,
                                            warm_load_only_fraction=wc / (ct + cc))
        rows.append([mode, sec(ct + cc), sec(wt + wc), f"{100 * frac:.1f} %", f"{100 * wc / (ct + cc):.1f} %",
                     sec(r["cold"]["rows"][0]["wall_s"]), sec(r["warm"]["rows"][0]["wall_s"])])
    print(f"4. Persistent cache: first-solve compile time, cold process vs a second (warm) process "
          f"(target <= {100 * TARGETS['warm_fraction']:.0f} %)")
    print(table(["mode", "cold trace+compile", "warm trace+load", "warm/cold", "load only/cold",
                 "cold first solve", "warm first solve"], rows) + "\n")

    # ---- 5. rebuild baseline -----------------------------------------------------------------
    print(f"  ... rebuild-every-solve baseline ({args.rebuild_solves} solves)", file=sys.stderr, flush=True)
    rb = run_case("rebuild", {**base, "solves": args.rebuild_solves}, args.timeout)
    report["rebuild"] = rb
    if rb.get("ok") and report["modes"].get("fused", {}).get("cold", {}).get("ok"):
        cached = med(later(report["modes"]["fused"]["cold"]), "wall_s")
        rebuild = statistics.median(r["wall_s"] for r in rb["rows"][1:] or rb["rows"])
        report["rebuild_check"] = dict(cached_per_solve_s=cached, rebuild_per_solve_s=rebuild,
                                       ratio=rebuild / cached)
        print("5. Rebuild every solve (new jitted closures, inputs baked in) vs the cached loop, fused")
        print(table(["", "per solve", "ratio"], [["rebuild every solve", sec(rebuild), f"{rebuild / cached:.0f}x"],
                                                  ["cached (JitPair)", ms(cached), "1x"]]))
        print(f"   target: cached <= 1/{TARGETS['rebuild_ratio']:.0f} of rebuild -> "
              f"{'met' if rebuild / cached >= TARGETS['rebuild_ratio'] else 'NOT met'}\n")
    elif not rb.get("ok"):
        print(f"5. Rebuild baseline FAILED: {rb.get('error')}\n")

    # ---- 6. crossover --------------------------------------------------------------------------
    if args.crossover:
        rows = []
        report["crossover"] = {}
        for nodes in args.crossover:
            entry = {}
            for mode in ("fused", "blocks"):
                print(f"  ... compile time at {nodes} nodes, {mode}", file=sys.stderr, flush=True)
                case = run_case("loop", {**base, "nodes": nodes, "mode": mode, "solves": 1, "cache": None,
                                         "window": min(args.window, 0.01)}, args.timeout)
                entry[mode] = dict(ok=case.get("ok"), compile_s=sum(first_compile(case)) if case.get("ok") else None,
                                   first_solve_s=case["rows"][0]["wall_s"] if case.get("ok") else None)
            report["crossover"][str(nodes)] = entry
            f, b = entry["fused"]["compile_s"], entry["blocks"]["compile_s"]
            rows.append([nodes, sec(f), sec(b), f"{f / b:.2f}x" if f and b else "-",
                         sec(entry["fused"]["first_solve_s"]), sec(entry["blocks"]["first_solve_s"])])
        print("6. First-solve trace + compile time against mesh size, fused vs blocks (no cache; a "
              f"{min(args.window, 0.01):g}-yr first solve)")
        print(table(["nodes", "fused", "blocks", "fused/blocks", "fused first solve", "blocks first solve"], rows) + "\n")

    # ---- checks ----------------------------------------------------------------------------------
    print("Targets")
    for mode, r in report["modes"].items():
        c = r["cold"]
        if not c.get("ok"):
            continue
        ov = med(later(c), "overhead_s")
        print(f"  {mode}: 0 traces/compiles after the first solve -> "
              f"{'met' if r.get('zero_new_after_first') else 'NOT met'}; per-solve overhead "
              f"{ms(ov)} (<= {TARGETS['overhead_ms']:.0f} ms: {'met' if 1e3 * ov <= TARGETS['overhead_ms'] else 'NOT met'})")
        if mode in report["warm_vs_cold"]:
            frac = report["warm_vs_cold"][mode]["fraction"]
            print(f"  {mode}: warm cache first-solve compile {100 * frac:.1f} % of cold "
                  f"({'met' if frac <= TARGETS['warm_fraction'] else 'NOT met'})")
    print(f"\ntotal wall time {time.perf_counter() - wall0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        print(f"wrote {args.json}")
    if args.png:
        plot(report, args.png)
        print(f"wrote {args.png}")
    tmp.cleanup()
    return 0


def plot(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m, r in report["modes"].items() if r["cold"].get("ok")]
    fig, axes = plt.subplots(1, len(modes), figsize=(6 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        rows = report["modes"][mode]["cold"]["rows"][1:]
        x = range(2, len(rows) + 2)
        parts = [("rhs_s", "RHS callbacks"), ("jac_s", "Jacobian callbacks"), ("cvode_s", "CVODE"),
                 ("overhead_s", "Python overhead")]
        bottom = [0.0] * len(rows)
        for key, label in parts:
            vals = [1e3 * r[key] for r in rows]
            ax.bar(x, vals, bottom=bottom, label=label, width=1.0)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xlabel("solve")
        ax.set_ylabel("ms")
        ax.set_title(f"{mode}: per-solve wall time")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
