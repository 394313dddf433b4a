#!/usr/bin/env python
"""Side by side: two records of tools/proteus_wrapper_run.py (default: ours.json, up.json).

For humans only (never in CI)::

    python tools/proteus_wrapper_compare.py [ours.json] [up.json] [--all] [--json table.json]

Per coupled call (matched by call number): ours, upstream and the relative difference
(ours - up) / |up| for T_magma, T_cmb, Phi_global, F_cmb, RF_depth, E_th_mantle, and the two
E_residual_cons_frac columns side by side (their difference is absolute, not relative: the
column is itself a fraction). --all adds the other recorded fields.

Then the wall time per call (issue 37, item 5): the whole ``run_interior`` call, the time
inside the solver's ``solve()`` (every attempt of the wrapper's retry ladder), inside
``get_state()``, and the wrapper's own work (the rest), for both codes, with the ratio
upstream / ours; the call's window, Φ before and after, status and solve attempts. Calls
marked ``C`` are crystallisation calls (the global melt fraction falls through 0.5 within
the call, in either code); ``M`` marks the call with the largest solve time. Totals over
all calls and over the evolving (ic = 2) calls. ``--json`` writes that table; ``--cpu``
makes it the process's CPU time (all threads: with the wall time, how many cores a call
used). Both grow when other processes share the machine: the load-average line says so.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

MAIN = ("T_magma", "T_cmb", "Phi_global", "F_cmb", "F_cmb_core_energy", "RF_depth", "E_th_mantle")
EXTRA = ("F_int", "Cp_eff", "T_pot", "F_radio", "Q_radio_W", "M_mantle", "E_state_J", "E_state_cons_J",
         "step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J",
         "step_dE_state_heat_J", "step_solver_residual_J", "step_dE_compression_J",
         "E_state_heat_cons_J", "dE_predicted_cons_J", "E_residual_cons_J", "solver_residual_J")


def num(x):
    try:
        v = float(x)
        return v
    except (TypeError, ValueError):
        return float("nan")


def rel(a, b):
    a, b = num(a), num(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        return float("nan")
    if b == 0.0:
        return 0.0 if a == 0.0 else float("inf")
    return (a - b) / abs(b)


def fmt(v, w=11):
    v = num(v)
    if not math.isfinite(v):
        return f"{'nan' if math.isnan(v) else v:>{w}}"
    return f"{v:>{w}.5g}"


def case_differences(a: dict, b: dict) -> list[str]:
    """The keys in which two runs' cases differ: the solver config and the upstream
    parameters PROTEUS set (``section.key``)."""
    def flat(d: dict) -> dict:
        out = dict((d.get("config") or {}))
        for section, values in ((d.get("setup") or {}).get("upstream_parameters") or {}).items():
            for key, value in (values.items() if isinstance(values, dict) else [("", values)]):
                out[f"{section}.{key}".rstrip(".")] = value
        return out

    fa, fb = flat(a), flat(b)
    return sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))


TIMES = ("total", "solve", "get_state", "wrapper")
PHI_CRYST = 0.5  # a call whose Phi_global falls through this is a crystallisation call


def call_times(c: dict, cpu: bool = False) -> dict:
    """A call's four times [s]: from its ``timing`` block, or only the total (``wall_s``) in
    records made before the tool timed the solver's methods. ``cpu``: the process's CPU
    time instead of wall time (all threads)."""
    t = c.get("timing") or {}
    if cpu:
        total, solve, state = num(t.get("process_cpu_s")), num(t.get("solve_cpu_s")), num(t.get("get_state_cpu_s"))
        return {"total": total, "solve": solve, "get_state": state, "wrapper": total - solve - state}
    return {"total": num(t.get("total_s", c.get("wall_s"))), "solve": num(t.get("solve_s")),
            "get_state": num(t.get("get_state_s")), "wrapper": num(t.get("wrapper_s"))}


def ratio(up, ours):
    up, ours = num(up), num(ours)
    return up / ours if math.isfinite(up) and math.isfinite(ours) and ours > 0.0 else float("nan")


def timing_table(ours: dict, up: dict, cpu: bool = False) -> dict:
    """Per call and in total: the four times of both codes and upstream / ours."""
    co = {c["call"]: c for c in ours["calls"]}
    cu = {c["call"]: c for c in up["calls"]}
    rows = []
    for n in sorted(set(co) | set(cu)):
        o, u = co.get(n, {}), cu.get(n, {})
        ref = o or u
        to, tu = call_times(o, cpu), call_times(u, cpu)
        phi = {tag: [num(c.get("Phi_in")), num(c.get("Phi_global"))] for tag, c in (("ours", o), ("upstream", u))}
        cryst = any(a > PHI_CRYST >= b for a, b in phi.values() if math.isfinite(a) and math.isfinite(b))
        rows.append({
            "call": n, "ic": ref.get("ic"), "Time_in": num(ref.get("Time_in")),
            "window_yr": num(ref.get("window_yr", ref.get("dt"))), "dt_yr": {"ours": num(o.get("dt")),
                                                                          "upstream": num(u.get("dt"))},
            "Phi": phi, "crystallisation": cryst,
            "status": {"ours": (o.get("solver_out") or {}).get("status"),
                       "upstream": (u.get("solver_out") or {}).get("status")},
            "exception": {"ours": o.get("exception"), "upstream": u.get("exception")},
            "loadavg_1min": {"ours": (o.get("timing") or {}).get("loadavg_1min"),
                             "upstream": (u.get("timing") or {}).get("loadavg_1min")},
            "process_cpu_s": {"ours": (o.get("timing") or {}).get("process_cpu_s"),
                              "upstream": (u.get("timing") or {}).get("process_cpu_s")},
            "solve_attempts": {"ours": (o.get("timing") or {}).get("solve_attempts"),
                               "upstream": (u.get("timing") or {}).get("solve_attempts")},
            "ours_s": to, "upstream_s": tu, "ratio_up_over_ours": {k: ratio(tu[k], to[k]) for k in TIMES},
        })
        if o.get("exception") or u.get("exception"):  # cut short: only total and solve bound the ratio
            rows[-1]["ratio_up_over_ours"].update(get_state=float("nan"), wrapper=float("nan"))
    solves = [max(num(r["ours_s"]["solve"]), num(r["upstream_s"]["solve"])) for r in rows]
    finite = [(s, r["call"]) for s, r in zip(solves, rows) if math.isfinite(s)]
    largest = max(finite)[1] if finite else None
    for r in rows:
        r["largest_solve"] = r["call"] == largest

    def total(select) -> dict:
        out = {}
        for tag in ("ours", "upstream"):
            out[f"{tag}_s"] = {k: sum(r[f"{tag}_s"][k] for r in rows if select(r)) for k in TIMES}
        out["ratio_up_over_ours"] = {k: ratio(out["upstream_s"][k], out["ours_s"][k]) for k in TIMES}
        out["calls"] = sum(1 for r in rows if select(r))
        out["cut_short"] = [r["call"] for r in rows if select(r) and any(r["exception"].values())]
        return out

    return {"clock": "process CPU" if cpu else "wall",
            "ours": {"file": ours.get("aragog_file"), "version": ours.get("aragog_version"),
                     "interpreter": ours.get("interpreter"), "run_wall_s": num(ours.get("total_wall_s"))},
            "upstream": {"file": up.get("aragog_file"), "version": up.get("aragog_version"),
                         "interpreter": up.get("interpreter"), "run_wall_s": num(up.get("total_wall_s"))},
            "proteus": {"ours": (ours.get("proteus") or {}).get("commit"),
                        "upstream": (up.get("proteus") or {}).get("commit")},
            "windows": {"ours": (ours.get("harness") or {}).get("windows", "doubling"),
                        "upstream": (up.get("harness") or {}).get("windows", "doubling")},
            "cpu_count": {tag: (d.get("harness") or {}).get("cpu_count")
                          for tag, d in (("ours", ours), ("upstream", up))},
            "calls": rows, "total_all": total(lambda r: True),
            "total_evolving": total(lambda r: r["ic"] == 2)}


def print_timing(table: dict) -> None:
    def cell(v, w=8, d=3):
        v = num(v)
        return f"{v:>{w}.{d}f}" if math.isfinite(v) else f"{'-':>{w}}"

    print(f"\n== {table['clock']} time per call [s]: ours | upstream | upstream/ours "
          "(solve: inside solve(), all attempts; get_state; wrapper: the rest of run_interior)")
    print(f"windows: {table['windows']}; C: Phi falls through {PHI_CRYST} in the call, M: the largest solve; "
          "status E: the call raised (a timeout: its times are lower bounds)")
    head = " ".join(f"{k[:6] + ' o':>8} {k[:6] + ' u':>8} {'u/o':>5}" for k in TIMES)
    print(f"{'call':>4} {'':2} {'ic':>2} {'window[yr]':>10} {'Phi in->out (ours)':>18} {'st o/u':>6} "
          f"{'att':>3} | {head}")
    for r in table["calls"]:
        mark = ("C" if r["crystallisation"] else "") + ("M" if r["largest_solve"] else "")
        pin, pout = r["Phi"]["ours"] if math.isfinite(r["Phi"]["ours"][1]) else r["Phi"]["upstream"]
        phi = f"{pin:.3f}->{pout:.3f}" if math.isfinite(pin) else f"{'':5}->{pout:.3f}"
        st = "/".join("E" if r["exception"][tag] else ("-" if r["status"][tag] is None else str(r["status"][tag]))
                      for tag in ("ours", "upstream"))
        att = f"{r['solve_attempts']['ours'] or '-'}/{r['solve_attempts']['upstream'] or '-'}"
        times = " ".join(f"{cell(r['ours_s'][k])} {cell(r['upstream_s'][k])} {cell(r['ratio_up_over_ours'][k], 5, 1)}"
                         for k in TIMES)
        print(f"{r['call']:>4} {mark:2} {r['ic'] if r['ic'] is not None else '':>2} {r['window_yr']:>10.4g} "
              f"{phi:>18} {st:>6} {att:>3} | {times}")
    for name, key in (("all calls", "total_all"), ("evolving calls (ic=2)", "total_evolving")):
        t = table[key]
        times = " ".join(f"{cell(t['ours_s'][k])} {cell(t['upstream_s'][k])} {cell(t['ratio_up_over_ours'][k], 5, 1)}"
                         for k in TIMES)
        label = f"sum, {name} ({t['calls']}{', E: lower bounds' if t['cut_short'] else ''})"
        print(f"{label:>51} | {times}")
    loads = {tag: [x for r in table["calls"] for x in (r["loadavg_1min"][tag] or [])] for tag in ("ours", "upstream")}
    if any(loads.values()):
        print("1-min load average over the calls (before/after each; other processes inflate wall times): "
              + ", ".join(f"{tag} {min(v):.2f}-{max(v):.2f}" for tag, v in loads.items() if v)
              + f" (CPUs: {table['cpu_count']})")
    print(f"whole run (process, with imports and set-up): ours {table['ours']['run_wall_s']:.1f} s, "
          f"upstream {table['upstream']['run_wall_s']:.1f} s")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="ours.json up.json (default: those names)")
    ap.add_argument("--all", action="store_true", help="also the other recorded fields")
    ap.add_argument("--json", default=None, help="write the per-call time table here")
    ap.add_argument("--cpu", action="store_true",
                    help="the time table in this process's CPU time (all threads) instead of wall time")
    args = ap.parse_args(argv)
    show_all = args.all
    files = args.files
    f_ours = files[0] if len(files) > 0 else "ours.json"
    f_up = files[1] if len(files) > 1 else "up.json"
    ours, up = json.load(open(f_ours)), json.load(open(f_up))
    for tag, d in (("ours", ours), ("upstream", up)):
        print(f"{tag:9s}: {d.get('aragog_file')} (version {d.get('aragog_version')}), "
              f"total wall {num(d.get('total_wall_s')):.1f} s, stopped: {d.get('stopped')}, ok={d.get('ok')}")
        if d.get("error"):
            print(f"           ERROR at {d['error']['stage']}: {d['error']['type']}: {d['error']['message']}")
        print(f"           PROTEUS {(d.get('proteus') or {}).get('commit') or 'commit not recorded'}")
    differ = case_differences(ours, up)
    if differ:
        print(f"WARNING: the two runs are not the same case: they differ in {', '.join(differ)}")
    co = {c["call"]: c for c in ours["calls"]}
    cu = {c["call"]: c for c in up["calls"]}
    calls = sorted(set(co) | set(cu))

    hdr = f"{'call':>4} {'ic':>2} {'time[yr]':>9} {'dt[yr]':>7} {'wall o/u [s]':>13} |"
    print()
    print("Per-field blocks: ours | upstream | rel.diff (ours-up)/|up|")
    for field in MAIN:
        print(f"\n== {field}")
        print(hdr + f" {'ours':>14} {'upstream':>14} {'rel.diff':>10}")
        for n in calls:
            o, u = co.get(n, {}), cu.get(n, {})
            ref = u or o
            print(f"{n:>4} {ref.get('ic', ''):>2} {num(ref.get('Time')):>9.5g} {num(ref.get('dt')):>7.4g} "
                  f"{num(o.get('wall_s')):>6.1f}/{num(u.get('wall_s')):<6.1f} | "
                  f"{num(o.get(field)):>14.8g} {num(u.get(field)):>14.8g} {rel(o.get(field), u.get(field)):>10.2e}")

    print("\n== E_residual_cons_frac (coupler._populate_energy_residual), side by side")
    print(hdr + f" {'ours':>12} {'upstream':>12} {'ours-up':>11}")
    for n in calls:
        o, u = co.get(n, {}), cu.get(n, {})
        ref = u or o
        a, b = num(o.get("E_residual_cons_frac")), num(u.get("E_residual_cons_frac"))
        print(f"{n:>4} {ref.get('ic', ''):>2} {num(ref.get('Time')):>9.5g} {num(ref.get('dt')):>7.4g} "
              f"{num(o.get('wall_s')):>6.1f}/{num(u.get('wall_s')):<6.1f} | {a:>12.4e} {b:>12.4e} {a - b:>11.3e}")

    if show_all:
        for field in EXTRA:
            print(f"\n== {field}")
            for n in calls:
                o, u = co.get(n, {}), cu.get(n, {})
                print(f"{n:>4} {num(o.get(field)):>16.9g} {num(u.get(field)):>16.9g} {rel(o.get(field), u.get(field)):>10.2e}")

    print("\n== warnings / exceptions per call")
    any_w = False
    for n in calls:
        for tag, c in (("ours", co.get(n)), ("up", cu.get(n))):
            if not c:
                print(f"call {n} {tag}: <not run>")
                any_w = True
                continue
            for w in c.get("warnings", []):
                print(f"call {n} {tag}: {w[:240]}")
                any_w = True
            if c.get("exception"):
                print(f"call {n} {tag}: EXCEPTION {c['exception']}")
                any_w = True
    if not any_w:
        print("(none)")

    table = timing_table(ours, up, cpu=args.cpu)
    print_timing(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(table, fh, indent=1, allow_nan=True)
        print(f"table written to {args.json}")


if __name__ == "__main__":
    main(sys.argv[1:])
