#!/usr/bin/env python
"""Benchmark ``aragog.csdl._compress`` (issue 4's "Benchmark" section).

    python tools/bench_compress.py [--quick] [--json OUT] [--layers 400 1200]
                                   [--blocks 4 12 24] [--block-size 100] [--size 8]
                                   [--repeats 10] [--timeout 150]

Model: a chain of layers ``h <- tanh(0.9 h + 0.1) + 0.05 sin h`` on a vector of
``--size`` values, output ``y = sum(h)``, split into blocks of ``--block-size`` layers,
run by ``JaxSimulator`` on CPU (``separate_block``: separate blocks run by
``BlockSimulator``, direct calls instead of host callbacks) (inputs [x], outputs [y]).
Two timings per case:

  (a) cold: record the graph (+ compress) + build the simulator + first ``run()`` +
      first ``compute_totals()`` (records the derivative graph, traces and compiles);
  (b) steady: median over ``--repeats`` of ``run()`` + ``compute_totals()``.

Table 1: ``--layers`` (400, 1200): uncompressed vs fused blocks
(``compile_separately=False``) vs separate blocks (``compile_separately=True``;
default sharing on).
Table 2: ``--blocks`` (4, 12, 24) identical separate blocks: no sharing
(``share_compiled=False``) vs automatic sharing (default) vs ``find_repeats=True``
(only the first block is compressed by hand); with the compiled function counts
(``compiled_function_count()`` differences over (a), and over (b): should be 0).

Every case runs in its own Python process (fresh JAX caches and counters, import
time excluded) under a wall-clock limit ``--timeout``; a case that exceeds it is
reported as "> X s". Values and totals are checked against a NumPy reference
(``d sum(h_N) / d x`` is the product of the per-layer diagonal derivatives).

Table 3: a separate block under vmap (the ``loop=False`` Jacobian of a 32-value block
output): the host callback batched (one call for all rows, the default) vs sequential (one
round trip per row).

GPU check: if ``jax.devices('gpu')`` exists, two blocks compressed with
``device='gpu'`` and ``device='cpu'`` are compared with the uncompressed model;
otherwise it is reported as skipped.

Precision: the cases run as a user's process does, with JAX's default x64 mode (off, unless
``JAX_ENABLE_X64`` is set): ``aragog.csdl`` computes in float64 by itself (docs/csdl.md). Each
case reports the dtypes of its values and totals and the process's ``jax_enable_x64`` before
and after, and the last line sums them up: float64 results with the flag as it was, so the
errors are float64's (a float32 derivative of 1200 layers underflows: error 1.0).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {
    "sep_vs_uncompressed_cold": 8.0,  # at 1200 layers, (a)
    "sep_vs_uncompressed_steady": 50.0,  # at 1200 layers, (b)
    "share_vs_noshare_cold": 5.0,  # at 24 blocks, (a)
    "compiled_with_sharing": 2,  # one forward + one derivative function
}


# --------------------------------------------------------------------------- worker --

def _x0(size):
    import numpy as np

    return np.linspace(-0.7, 0.9, size)


def _reference(x, n_layers):
    """NumPy: y = sum(h_N) and dy/dx (shape (1, size))."""
    import numpy as np

    h = np.array(x, dtype=np.float64)
    g = np.ones_like(h)
    for _ in range(n_layers):
        t = np.tanh(0.9 * h + 0.1)
        g = g * (0.9 * (1.0 - t * t) + 0.05 * np.cos(h))
        h = t + 0.05 * np.sin(h)
    return float(np.sum(h)), g[None, :]


def _layers(csdl, h, n):
    for _ in range(n):
        h = csdl.tanh(0.9 * h + 0.1) + 0.05 * csdl.sin(h)
    return h


def _build(csdl, cfg, x0):
    """Record the chain; compress according to cfg['mode']. Returns (rec, x, y, ops)."""
    mode, nb, bs = cfg["mode"], cfg["n_blocks"], cfg["block_size"]
    rec = csdl.Recorder()
    ops = []
    with rec:
        x = csdl.Variable(value=x0, name="x")
        h = x
        first = None
        for b in range(nb):
            h_in = h
            h = _layers(csdl, h, bs)
            if mode in ("fused", "separate", "separate_block", "noshare"):
                ops.append(csdl.compress(
                    [h_in], [h], name=f"block{b}",
                    compile_separately=(mode != "fused"),
                    share_compiled=(mode != "noshare")))
            elif mode == "find_repeats" and b == 0:
                first = (h_in, h)
        if mode == "find_repeats":
            op = csdl.compress([first[0]], [first[1]], name="block0", find_repeats=True)
            ops = [op] + list(op.repeats)
        y = csdl.sum(h)
    return rec, x, y, ops


def worker_case(cfg):
    import numpy as np

    t0 = time.perf_counter()
    import jax

    from aragog import csdl

    t_import = time.perf_counter() - t0
    x64_before = bool(jax.config.jax_enable_x64)
    x0 = _x0(cfg["size"])
    n_layers = cfg["n_blocks"] * cfg["block_size"]
    c0 = csdl.compiled_function_count()

    t0 = time.perf_counter()
    rec, x, y, ops = _build(csdl, cfg, x0)
    t_build = time.perf_counter() - t0
    simulator = csdl.BlockSimulator if cfg["mode"] == "separate_block" else csdl.JaxSimulator
    sim = simulator(rec, [x], [y])
    sim.run()
    t_run = time.perf_counter() - t0
    tot = sim.compute_totals()
    t_cold = time.perf_counter() - t0
    c1 = csdl.compiled_function_count()

    times = []
    for _ in range(cfg["repeats"]):
        t = time.perf_counter()
        sim.run()
        tot = sim.compute_totals()
        times.append(time.perf_counter() - t)
    c2 = csdl.compiled_function_count()

    y_ref, g_ref = _reference(x0, n_layers)
    g = np.asarray(tot[(y, x)])
    err_y = abs(float(np.asarray(sim[y])) - y_ref) / max(abs(y_ref), 1e-300)
    err_g = float(np.max(np.abs(g - g_ref)) / max(np.max(np.abs(g_ref)), 1e-300))
    n_regions = len({id(op.region) for op in rec.nodes
                     if isinstance(op, csdl.JaxCompressedOperation)})
    return dict(
        ok=True, import_s=t_import, build_s=t_build, first_run_s=t_run - t_build,
        first_totals_s=t_cold - t_run, cold_s=t_cold,
        steady_s=statistics.median(times), steady_all_s=times,
        compiled_cold=c1 - c0, compiled_steady=c2 - c1,
        n_compressed=len(ops), n_regions_in_graph=n_regions,
        n_nodes=len(rec.nodes), trace_count=sim.trace_count,
        rel_err_y=err_y, rel_err_totals=err_g,
        **_precision(jax, x64_before, sim[y], g),
    )


def _precision(jax, x64_before, *results) -> dict:
    """The dtypes of the results handed back and the process's x64 flag before and after."""
    import numpy as np

    return dict(dtypes=sorted({str(np.asarray(r).dtype) for r in results}),
                x64_flag=[x64_before, bool(jax.config.jax_enable_x64)])


def worker_vmap(cfg):
    """A separate block under vmap: the loop=False Jacobian of h_N(x) (size x size rows
    through one 100-layer block), with the host callback batched (one call for all rows)
    or sequential (one round trip per row)."""
    import jax
    import numpy as np

    from aragog import csdl

    x64_before = bool(jax.config.jax_enable_x64)
    x0 = _x0(cfg["size"])
    rec = csdl.Recorder()
    with rec:
        x = csdl.Variable(value=x0, name="x")
        h = _layers(csdl, x, cfg["block_size"])
        op = csdl.compress([x], [h], name="block")
        y = csdl.sum(h * h)
    from aragog.csdl._region import Region  # private: vmap_method is a class-wide switch with no public setter

    Region.vmap_method = cfg["method"]  # this process only: also the VJP regions made later
    sim = csdl.JaxSimulator(rec, [x], [h], loop=False)
    t0 = time.perf_counter()
    sim.run()
    tot = sim.compute_totals()
    cold = time.perf_counter() - t0
    back = op.region.vjp_regions[(0,), (0,)]
    calls0 = back.host_calls
    times = []
    for _ in range(cfg["repeats"]):
        t = time.perf_counter()
        tot = sim.compute_totals()
        times.append(time.perf_counter() - t)
    calls = (back.host_calls - calls0) / cfg["repeats"]
    # reference: d h_N / d x is diagonal (elementwise layers)
    _, g = _reference(x0, cfg["block_size"])
    err = float(np.max(np.abs(tot[(h, x)] - np.diag(g[0]))))
    del y
    return dict(ok=True, cold_s=cold, steady_s=statistics.median(times), vjp_host_calls_per_totals=calls,
                max_abs_err=err, **_precision(jax, x64_before, tot[(h, x)]))


def worker_gpu(cfg):
    import jax
    import numpy as np

    from aragog import csdl

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        return dict(ok=True, skipped=True, reason="no GPU (jax.devices('gpu') is empty)",
                    backend=jax.default_backend())
    x0 = _x0(cfg["size"])
    bs = cfg["block_size"]
    out = dict(ok=True, skipped=False, gpu=str(gpus[0]))
    res = {}
    for label, devices in [("uncompressed", None), ("gpu+cpu", ("gpu", "cpu"))]:
        t0 = time.perf_counter()
        rec = csdl.Recorder()
        ops = []
        with rec:
            x = csdl.Variable(value=x0, name="x")
            h = x
            for b in range(2):
                h_in = h
                h = _layers(csdl, h, bs)
                if devices:
                    ops.append(csdl.compress([h_in], [h], name=f"block{b}", device=devices[b]))
            y = csdl.sum(h)
        sim = csdl.JaxSimulator(rec, [x], [y])
        sim.run()
        tot = sim.compute_totals()
        cold = time.perf_counter() - t0
        times = []
        for _ in range(cfg["repeats"]):
            t = time.perf_counter()
            sim.run()
            tot = sim.compute_totals()
            times.append(time.perf_counter() - t)
        res[label] = dict(y=float(np.asarray(sim[y])), g=np.asarray(tot[(y, x)]),
                          cold_s=cold, steady_s=statistics.median(times),
                          devices=[str(op.region.device) for op in ops],
                          host_calls=[op.region.host_calls for op in ops])
    u, c = res["uncompressed"], res["gpu+cpu"]
    out.update(
        devices=c["devices"], host_calls=c["host_calls"],
        rel_err_y=abs(c["y"] - u["y"]) / abs(u["y"]),
        rel_err_totals=float(np.max(np.abs(c["g"] - u["g"])) / np.max(np.abs(u["g"]))),
        uncompressed_cold_s=u["cold_s"], uncompressed_steady_s=u["steady_s"],
        placed_cold_s=c["cold_s"], placed_steady_s=c["steady_s"],
    )
    out["match"] = out["rel_err_y"] < 1e-10 and out["rel_err_totals"] < 1e-10
    return out


# ----------------------------------------------------------------------------- driver --

def run_case(cfg, timeout):
    """Run one case in a fresh process; {'ok': False, 'timeout': True, ...} past timeout."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(cfg)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(ok=False, timeout=True, limit_s=timeout, wall_s=time.perf_counter() - t0)
    if p.returncode != 0:
        return dict(ok=False, timeout=False, error=(p.stderr or p.stdout)[-2000:])
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    return res


def fmt_t(res, key):
    if res.get("timeout"):
        return f"> {res['limit_s']:.0f} s"
    if not res.get("ok"):
        return "error"
    v = res[key]
    return f"{v:.3g} s" if v >= 1 else f"{v * 1e3:.3g} ms"


def ratio(a, b, key):
    """a / b on key; lower bound '>' when a timed out; None when undefined."""
    if not b.get("ok"):
        return None, ""
    if a.get("timeout"):
        return a["limit_s"] / b[key], ">"
    if not a.get("ok"):
        return None, ""
    return a[key] / b[key], ""


def fmt_r(r):
    v, pre = r
    return "-" if v is None else f"{pre}{v:.3g}x"


def table(headers, rows):
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w[i]) for i, h in enumerate(headers))
    out = [line, "  ".join("-" * x for x in w)]
    out += ["  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) for r in rows]
    return "\n".join(out)


def err_str(res):
    if not res.get("ok"):
        return "-"
    return f"{max(res['rel_err_y'], res['rel_err_totals']):.1e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes (layers 200 400, blocks 2 4 8, 3 repeats, timeout 40 s)")
    ap.add_argument("--layers", type=int, nargs="+", help="Table 1 chain lengths (default 400 1200)")
    ap.add_argument("--blocks", type=int, nargs="+", help="Table 2 block counts (default 4 12 24)")
    ap.add_argument("--block-size", type=int, default=100, help="layers per block (100)")
    ap.add_argument("--size", type=int, default=8, help="vector length (8)")
    ap.add_argument("--repeats", type=int, help="steady-state repeats (default 10)")
    ap.add_argument("--timeout", type=float, help="per-case wall limit in s (default 150)")
    ap.add_argument("--skip-table1", action="store_true")
    ap.add_argument("--skip-table2", action="store_true")
    ap.add_argument("--json", metavar="OUT", help="write all results as JSON")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        cfg = json.loads(args.worker)
        res = (worker_gpu(cfg) if cfg["mode"] == "gpu" else
               worker_vmap(cfg) if cfg["mode"] == "vmap" else worker_case(cfg))
        print(json.dumps(res, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
        return 0

    q = args.quick
    layers = args.layers or ([200, 400] if q else [400, 1200])
    blocks = args.blocks or ([2, 4, 8] if q else [4, 12, 24])
    repeats = args.repeats or (3 if q else 10)
    timeout = args.timeout or (40.0 if q else 150.0)
    bs, size = args.block_size, args.size
    for n in layers:
        if n % bs:
            ap.error(f"--layers {n} is not a multiple of --block-size {bs}")

    def cfg(mode, nb):
        return dict(mode=mode, n_blocks=nb, block_size=bs, size=size, repeats=repeats)

    t_start = time.perf_counter()
    report = dict(
        settings=dict(layers=layers, blocks=blocks, block_size=bs, size=size, repeats=repeats,
                      timeout_s=timeout, quick=q),
        machine=dict(python=platform.python_version(), platform=platform.platform(),
                     processor=platform.processor()),
        targets=TARGETS, table1={}, table2={},
    )
    try:
        import jax
        report["machine"]["jax"] = jax.__version__
    except Exception:  # noqa: BLE001
        pass
    print(f"bench_compress: layer h <- tanh(0.9 h + 0.1) + 0.05 sin h, size {size}, "
          f"{bs} layers/block, JaxSimulator CPU, y = sum(h)")
    print("(a) = record + compress + simulator + first run() + first compute_totals();"
          f" (b) = median of {repeats} x [run() + compute_totals()]; per-case limit {timeout:.0f} s\n")

    # ---- Table 1 -----------------------------------------------------------------
    if not args.skip_table1:
        rows = []
        for n in layers:
            nb = n // bs
            t1_modes = ("uncompressed", "fused", "separate", "separate_block")
            r = {m: run_case(cfg(m, nb), timeout) for m in t1_modes}
            report["table1"][str(n)] = r
            u = r["uncompressed"]
            for m in t1_modes:
                rr = r[m]
                rows.append([
                    n, m, fmt_t(rr, "cold_s"), fmt_r(ratio(u, rr, "cold_s")) if m != "uncompressed" else "1x",
                    fmt_t(rr, "steady_s"),
                    fmt_r(ratio(u, rr, "steady_s")) if m != "uncompressed" else "1x",
                    rr.get("compiled_cold", "-"), err_str(rr),
                ])
                print(f"  ... {n} layers, {m}: (a) {fmt_t(rr, 'cold_s')}, (b) {fmt_t(rr, 'steady_s')}",
                      file=sys.stderr, flush=True)
        print("Table 1: uncompressed vs fused blocks (compile_separately=False) vs separate "
              "blocks (compile_separately=True) under JaxSimulator (host callbacks) and under "
              "BlockSimulator (separate_block: direct calls)")
        print(table(["layers", "variant", "(a) cold", "speedup", "(b) steady", "speedup",
                     "region fns compiled", "max rel err"], rows))
        n = max(layers)
        r = report["table1"][str(n)]
        sa = ratio(r["uncompressed"], r["separate"], "cold_s")
        sb = ratio(r["uncompressed"], r["separate"], "steady_s")
        sbb = ratio(r["uncompressed"], r["separate_block"], "steady_s")
        report["table1_check"] = dict(layers=n, sep_speedup_cold=sa, sep_speedup_steady=sb,
                                      sep_block_speedup_steady=sbb)
        print(f"Target at {n} layers (issue: at 1200): separate vs uncompressed (a) "
              f">= {TARGETS['sep_vs_uncompressed_cold']:.0f}x -> {fmt_r(sa)}; "
              f"(b) >= {TARGETS['sep_vs_uncompressed_steady']:.0f}x -> {fmt_r(sb)} "
              f"(BlockSimulator: {fmt_r(sbb)})\n")

    # ---- Table 2 -----------------------------------------------------------------
    if not args.skip_table2:
        rows = []
        modes = ("noshare", "separate", "find_repeats")
        names = {"noshare": "no sharing", "separate": "auto sharing", "find_repeats": "find_repeats"}
        for nb in blocks:
            r = {m: run_case(cfg(m, nb), timeout) for m in modes}
            report["table2"][str(nb)] = r
            base = r["noshare"]
            for m in modes:
                rr = r[m]
                rows.append([
                    nb, names[m], rr.get("n_compressed", "-"), rr.get("n_regions_in_graph", "-"),
                    fmt_t(rr, "build_s"), fmt_t(rr, "cold_s"),
                    fmt_r(ratio(base, rr, "cold_s")) if m != "noshare" else "1x",
                    fmt_t(rr, "steady_s"), rr.get("compiled_cold", "-"),
                    rr.get("compiled_steady", "-"), err_str(rr),
                ])
                print(f"  ... {nb} blocks, {m}: (a) {fmt_t(rr, 'cold_s')}", file=sys.stderr, flush=True)
        print("Table 2: identical separate blocks: no sharing (share_compiled=False) vs "
              "automatic sharing vs find_repeats=True")
        print(table(["blocks", "variant", "compressed ops", "regions in graph", "record+compress",
                     "(a) cold", "speedup", "(b) steady", "compiled (a)", "compiled (b)",
                     "max rel err"], rows))
        nb = max(blocks)
        r = report["table2"][str(nb)]
        sa = ratio(r["noshare"], r["separate"], "cold_s")
        sf = ratio(r["noshare"], r["find_repeats"], "cold_s")
        counts = {m: [report["table2"][str(k)][m].get("compiled_cold", "-") for k in blocks]
                  for m in modes}
        report["table2_check"] = dict(blocks=nb, share_speedup_cold=sa, find_repeats_speedup_cold=sf,
                                      compiled_counts=counts)
        print(f"Target at {nb} blocks (issue: at 24): sharing vs no sharing (a) "
              f">= {TARGETS['share_vs_noshare_cold']:.0f}x -> auto {fmt_r(sa)}, find_repeats {fmt_r(sf)}")
        print(f"Target: exactly {TARGETS['compiled_with_sharing']} region functions compiled "
              f"(1 forward + 1 derivative) whatever the block count -> counts at {blocks} blocks: "
              f"auto {counts['separate']}, find_repeats {counts['find_repeats']} "
              f"(no sharing: {counts['noshare']})\n")

    # ---- Table 3: a separate block under vmap ------------------------------------------
    rows = []
    report["table3"] = {}
    for method in ("broadcast_all", "sequential"):
        r = run_case(dict(mode="vmap", method=method, block_size=bs, size=32, repeats=repeats), timeout)
        report["table3"][method] = r
        rows.append([method, fmt_t(r, "steady_s"), r.get("vjp_host_calls_per_totals", "-"),
                     f"{r['max_abs_err']:.1e}" if r.get("ok") else "-"])
    print("Table 3: loop=False Jacobian (32 rows) through one separate block under JaxSimulator: "
          "one batched host call vs one round trip per row")
    print(table(["callback under vmap", "compute_totals()", "VJP host calls per totals", "max abs err"], rows) + "\n")

    # ---- GPU check ----------------------------------------------------------------
    g = run_case(dict(mode="gpu", n_blocks=2, block_size=bs, size=size, repeats=repeats), timeout)
    report["gpu_check"] = g
    if not g.get("ok"):
        print("GPU check: failed", "(timeout)" if g.get("timeout") else g.get("error", ""))
    elif g.get("skipped"):
        print(f"GPU check: skipped, {g['reason']}")
    else:
        print(f"GPU check ({g['gpu']}): two blocks on devices {g['devices']}, host calls "
              f"{g['host_calls']}; vs uncompressed: rel err y {g['rel_err_y']:.1e}, totals "
              f"{g['rel_err_totals']:.1e} -> {'match' if g['match'] else 'MISMATCH'}; "
              f"(a) {g['placed_cold_s']:.3g} s vs {g['uncompressed_cold_s']:.3g} s, "
              f"(b) {g['placed_steady_s'] * 1e3:.3g} ms vs {g['uncompressed_steady_s'] * 1e3:.3g} ms")

    # ---- precision ------------------------------------------------------------------
    cases = [c for t in ("table1", "table2") for row in report[t].values() for c in row.values()]
    cases += list(report["table3"].values())
    done = [c for c in cases if c.get("ok")]
    dtypes = sorted({d for c in done for d in c["dtypes"]})
    flags = sorted({tuple(c["x64_flag"]) for c in done})
    report["precision"] = dict(cases=len(cases), ok=len(done), dtypes=dtypes, x64_flag_before_after=flags)
    print(f"\nPrecision: {len(done)} of {len(cases)} cases ran; results {', '.join(dtypes) or '-'}; "
          f"the process's jax_enable_x64 (before, after) {', '.join(map(str, flags)) or '-'}")

    report["total_wall_s"] = time.perf_counter() - t_start
    print(f"\ntotal wall time {report['total_wall_s']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
