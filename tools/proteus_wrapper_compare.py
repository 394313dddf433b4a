#!/usr/bin/env python
"""Side by side: two records of tools/proteus_wrapper_run.py (default: ours.json, up.json).

For humans only (never in CI)::

    python tools/proteus_wrapper_compare.py [ours.json] [up.json] [--all]

Per coupled call (matched by call number): ours, upstream and the relative difference
(ours - up) / |up| for T_magma, T_cmb, Phi_global, F_cmb, RF_depth, E_th_mantle, and the two
E_residual_cons_frac columns side by side (their difference is absolute, not relative: the
column is itself a fraction). --all adds the other recorded fields.
"""

from __future__ import annotations

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


def main(argv):
    show_all = "--all" in argv
    files = [a for a in argv if not a.startswith("--")]
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


if __name__ == "__main__":
    main(sys.argv[1:])
