#!/usr/bin/env python
"""Benchmark the EOS module: table loading, bundled-set generation, jitted evaluation.

    python tools/bench_eos.py [--json OUT] [--calls N] [--sync-dispatch]

(a) load a 10-file 200x200 table set (generated into a temporary directory)  target <= 1 s
(b) generate the bundled default set in memory, and write it to disk            target <= 1 s
(c) a standalone jitted call ``jax.jit(eos.evaluate_phase)(tables, params, P, S)`` at 200
    points (us per call, median of N calls after compilation, block_until_ready)  target <= 50 us
    on the 200x200 set (arithmetic cell index), with rows for the searchsorted index, the
    bundled default set, the RTmelt set (non-uniform S axes; skipped when
    ../shared/data/spider-RTmelt is absent), the constant-property evaluator, and two floors:
    trivial jitted functions with the same 16 outputs and with 1 output (what XLA:CPU
    charges for dispatching a program of that output count on this machine). Then the cost
    per evaluation inside one jitted loop (the evaluator as part of a larger program, without
    the per-call dispatch; XLA hoists the P-only work out of this loop).

The XLA:CPU runtime, not the table lookups, dominates the standalone call on small
machines: every call of a program whose cost analysis exceeds ~1000 flops is handed to a
worker thread (``jax_cpu_enable_async_dispatch``: JAX's default, which aragog turns off;
``--async-dispatch`` turns it back on for a comparison), more than 8 kernels ready at once are spread over threads, and a kernel
whose gather operands exceed 512 KB (a fusion reading two 200x200 tables) is split across
threads (the ``partitioned kernels`` count below; none when the process may use one CPU
only). The report lists the kernel counts of the evaluator.

Prints a table and optionally writes the numbers as JSON. Caches are bypassed (fresh
generation, a fresh temporary directory).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

from aragog import eos  # sets synchronous CPU dispatch, as aragog runs its programs (docs/design.md)

RTMELT = Path(__file__).resolve().parents[2] / "shared" / "data" / "spider-RTmelt"


def _timeit(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _us_per_call(f, args, calls: int) -> dict:
    jax.block_until_ready(f(*args))  # compile
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
    ts = np.array(ts) * 1e6
    return {"median_us": float(np.median(ts)), "p10_us": float(np.percentile(ts, 10)),
            "p90_us": float(np.percentile(ts, 90))}


def _kernels(f, args) -> dict:
    """XLA kernel count of the compiled entry computation and how many are split across threads."""
    hlo = f.lower(*args).compile().as_text()
    entry = hlo[hlo.index("ENTRY"):]
    return {"xla_kernels": len(re.findall(r" (?:fusion|copy|gather|while|sort|call|conditional)\(", entry)),
            "partitioned_kernels": hlo.count("outer_dimension_partitions")}


def main(argv=None) -> int:
    with jax.enable_x64(True):  # the evaluations below in float64, as aragog runs them
        return _main(argv)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--calls", type=int, default=5000, help="timed calls per evaluation row")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the load/generate/write timings")
    ap.add_argument("--async-dispatch", action="store_true",
                    help="hand jitted calls to a worker thread (JAX's default; aragog runs them synchronously)")
    args = ap.parse_args(argv)
    if args.async_dispatch:  # before the first computation creates the CPU client
        jax.config.update("jax_cpu_enable_async_dispatch", True)
    async_dispatch = bool(jax.config.read("jax_cpu_enable_async_dispatch"))
    res: dict = {"host": {"python": sys.version.split()[0], "jax": jax.__version__, "numpy": np.__version__,
                          "machine": platform.machine(), "cpus": os.cpu_count(),
                          "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count(),
                          "async_dispatch": async_dispatch}}
    rows = []

    with tempfile.TemporaryDirectory() as tmp:
        d200 = eos.write_default_tables(Path(tmp) / "set200", np_=200, ns=200)
        nfiles = len(list(d200.glob("*.dat")))
        t = _timeit(lambda: eos.load_table_set(d200), args.repeat)
        res["load_200x200"] = {"files": nfiles, "median_s": statistics.median(t), "min_s": min(t), "target_s": 1.0}
        rows.append(("(a) load 10-file 200x200 set", f"{statistics.median(t):.3f} s", "<= 1 s"))

        t = _timeit(lambda: eos.generate_default_tables(), args.repeat)
        res["generate_default"] = {"np": eos.DEFAULT_NP, "ns": eos.DEFAULT_NS, "median_s": statistics.median(t),
                                   "min_s": min(t), "target_s": 1.0}
        rows.append((f"(b) generate default {eos.DEFAULT_NP}x{eos.DEFAULT_NS} (memory)",
                     f"{statistics.median(t) * 1e3:.1f} ms", "<= 1 s"))
        gen = eos.generate_default_tables()
        k = iter(range(1000))
        t = _timeit(lambda: eos.write_table_set(gen, Path(tmp) / f"w{next(k)}"), args.repeat)
        res["write_default"] = {"median_s": statistics.median(t), "min_s": min(t), "target_s": 1.0}
        rows.append(("(b) write default set to disk", f"{statistics.median(t):.3f} s", "<= 1 s"))

    n = 200
    P = jnp.linspace(0.0, 135e9, n)
    S = jnp.linspace(1500.0, 3300.0, n)
    params = jax.tree.map(jnp.asarray, eos.MaterialParams(
        phase_liquid=eos.PhaseProperties(viscosity=100.0, thermal_conductivity=4.0),
        phase_solid=eos.PhaseProperties(viscosity=1e21, thermal_conductivity=4.0),
        rheological_transition_melt_fraction=0.4, rheological_transition_width=0.15))
    ev = jax.jit(eos.evaluate_phase)
    t200 = eos.generate_default_tables(200, 200).to_jax()
    tdef = eos.generate_default_tables().to_jax()

    def no_uniform(t):
        flat = lambda ph: dataclasses.replace(ph, P_uniform=False, S_uniform=False)  # noqa: E731
        return dataclasses.replace(t, melt=flat(t.melt), solid=flat(t.solid),
                                   solidus=dataclasses.replace(t.solidus, P_uniform=False),
                                   liquidus=dataclasses.replace(t.liquidus, P_uniform=False))

    cases = [
        ("(c) evaluate_phase, 200x200 set, standalone jitted call", "eval_200x200", ev, (t200, params, P, S)),
        ("    evaluate_phase, 200x200 set, searchsorted index", "eval_200x200_searchsorted", ev,
         (no_uniform(t200), params, P, S)),
        (f"    evaluate_phase, bundled default {eos.DEFAULT_NP}x{eos.DEFAULT_NS} set", "eval_default", ev,
         (tdef, params, P, S)),
    ]
    trt = eos.load_table_set(RTMELT).to_jax() if RTMELT.is_dir() else None
    if trt is not None:
        cases.append(("    evaluate_phase, RTmelt 101x100 set", "eval_rtmelt", ev, (trt, params, P, S)))
    cases.append(("    evaluate_constant (constant-property mode)", "eval_constant", jax.jit(eos.evaluate_constant),
                  (jax.tree.map(jnp.asarray, eos.ConstantParams(
                      const_rho=4000.0, const_Cp=1000.0, const_alpha=1e-5, const_cond=4.0, const_log10visc=2.0,
                      const_T_ref=1600.0, const_S_ref=2000.0)), P, S)))
    nout = len(dataclasses.fields(eos.PhaseState))
    cases.append((f"    floor: trivial jit, {nout} outputs of {n}", "floor_trivial_16_outputs",
                  jax.jit(lambda t, p, P, S: [P + S * i for i in range(nout)]), (t200, params, P, S)))
    cases.append(("    floor: trivial jit, 1 output", "floor_trivial_1_output",
                  jax.jit(lambda t, p, P, S: P + S), (t200, params, P, S)))
    for label, key, f, a in cases:
        r = _us_per_call(f, a, args.calls)
        res[key] = dict(r, points=n, **_kernels(f, a))
        target = "<= 50 us" if key == "eval_200x200" else ""
        rows.append((label, f"{r['median_us']:.1f} us (p10 {r['p10_us']:.0f}, p90 {r['p90_us']:.0f})", target))
    # In-program cost: N evaluations chained in one jitted fori_loop (every output feeds
    # the next entropy, so nothing is dropped; the P-only work is loop-invariant).
    n_loop = 200

    @jax.jit
    def chained(t, p, P, S):
        def body(_, s):
            return s + 1e-30 * sum(jax.tree.leaves(eos.evaluate_phase(t, p, P, s)))
        return jax.lax.fori_loop(0, n_loop, body, S)

    loop_cases = [("(c) evaluate_phase per evaluation in one jitted loop", "eval_200x200_in_loop", t200),
                  ("    same, searchsorted index", "eval_200x200_searchsorted_in_loop", no_uniform(t200)),
                  ("    same, bundled default set", "eval_default_in_loop", tdef)]
    if trt is not None:
        loop_cases.append(("    same, RTmelt set", "eval_rtmelt_in_loop", trt))
    for label, key, tabs in loop_cases:
        r = _us_per_call(chained, (tabs, params, P, S), max(args.calls // 25, 20))
        r = {k: v / n_loop for k, v in r.items()}
        res[key] = dict(r, points=n, evaluations_per_call=n_loop)
        rows.append((label, f"{r['median_us']:.1f} us (p10 {r['p10_us']:.0f}, p90 {r['p90_us']:.0f})", ""))

    w = max(len(r[0]) for r in rows)
    print(f"{'benchmark':{w}s}  {'result':34s}  target")
    print("-" * (w + 46))
    for label, val, target in rows:
        print(f"{label:{w}s}  {val:34s}  {target}")
    k200 = res["eval_200x200"]
    print(f"(evaluator on the 200x200 set: {k200['xla_kernels']} XLA kernels, {k200['partitioned_kernels']} "
          f"partitioned across threads; {res['host']['usable_cpus']} usable CPUs, "
          f"{'asynchronous' if async_dispatch else 'synchronous'} CPU dispatch, jax {jax.__version__})")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
