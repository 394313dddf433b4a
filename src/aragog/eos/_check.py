"""Checks of a table set: grid, value ranges, monotonicity, phase boundaries, consistency.

``check_table_set(directory_or_tables)`` returns a :class:`TableCheckReport`; ``.ok`` is
False when a *problem* makes the set unusable (non-positive T, rho or c_p, T not
increasing with S at fixed P, S_liq <= S_sol somewhere). A directory that does not load at
all (missing, missing files, malformed file) raises the loader's one-line
:class:`~aragog.errors.EOSError` instead, which the CLI prints as an error. Thermodynamic
inconsistencies of the data themselves ((dT/dP)_S versus alpha T/(rho c_p), c_p versus
T (dS/dT)_P) and boundaries that leave the table range are reported as *warnings* above a
tolerance: the evaluator uses the tabulated values as they are (the reference RTmelt set,
for instance, has melt tables whose (dT/dP)_S and alpha T/(rho c_p) differ by up to ~66%).
``aragog eos check DIR`` prints ``.format()`` and exits with 0 when ``.ok``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from aragog.eos._tables import PHASES, EOSTables, load_table_set

__all__ = ["TableCheckReport", "check_table_set"]

_QUANTITIES = (("T", "K"), ("rho", "kg/m3"), ("cp", "J/kg/K"), ("alpha", "1/K"), ("dTdPs", "K/Pa"))


@dataclasses.dataclass
class TableCheckReport:
    """Outcome of :func:`check_table_set`.

    ``grids``: name -> {"NP", "NS" (2-D) or "N" (1-D), "P": (min, max) [Pa], "S": (min, max)};
    ``ranges``: "phase.quantity" -> (min, max) SI; ``T_increasing``: phase -> bool;
    ``min_gap``: min over P of S_liq - S_sol [J/kg/K]; ``dTdPs_deviation``: phase ->
    max |(dT/dP)_S - alpha T/(rho c_p)| / |(dT/dP)_S| (None when alpha is absent: it is
    then defined by that relation); ``cp_deviation``: phase -> max relative deviation of c_p
    from T/(dT/dS)_P by centred differences along S (includes O(dS^2) truncation error).
    """

    source: str
    grids: dict = dataclasses.field(default_factory=dict)
    ranges: dict = dataclasses.field(default_factory=dict)
    T_increasing: dict = dataclasses.field(default_factory=dict)
    min_gap: float | None = None
    dTdPs_deviation: dict = dataclasses.field(default_factory=dict)
    cp_deviation: dict = dataclasses.field(default_factory=dict)
    identity: str = ""
    problems: list = dataclasses.field(default_factory=list)
    warnings: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def format(self) -> str:
        """Human-readable multi-line report."""
        out = [f"EOS table set: {self.source}"]
        if self.identity:
            out.append(f"  identity: {self.identity}")
        if self.grids:
            out.append("  grids:")
            for name, g in self.grids.items():
                size = f"NP={g['NP']:<4d} NS={g['NS']:<4d}" if "NS" in g else f"N={g['N']:<4d}"
                out.append(f"    {name:9s} {size:20s} P {g['P'][0] / 1e9:9.4g} .. {g['P'][1] / 1e9:<9.4g} GPa   "
                           f"S {g['S'][0]:9.6g} .. {g['S'][1]:<9.6g} J/kg/K")
        if self.ranges:
            out.append("  value ranges:")
            for name, (lo, hi) in self.ranges.items():
                unit = dict(_QUANTITIES)[name.split(".")[1]]
                out.append(f"    {name:12s} {lo:12.6g} .. {hi:<12.6g} {unit}")
        if self.T_increasing:
            out.append("  T increasing with S at every P: "
                       + ", ".join(f"{p} {'yes' if v else 'NO'}" for p, v in self.T_increasing.items()))
        if self.min_gap is not None:
            out.append(f"  min (S_liq - S_sol): {self.min_gap:.6g} J/kg/K")
        if self.dTdPs_deviation:
            parts = [f"{p} {'alpha absent (derived from this relation)' if v is None else f'{v:.3g}'}"
                     for p, v in self.dTdPs_deviation.items()]
            out.append("  (dT/dP)_S = alpha T/(rho cp), max relative deviation: " + "; ".join(parts))
        if self.cp_deviation:
            out.append("  cp = T (dS/dT)_P (centred differences), max relative deviation: "
                       + "; ".join(f"{p} {v:.3g}" for p, v in self.cp_deviation.items()))
        for w in self.warnings:
            out.append(f"  warning: {w}")
        for p in self.problems:
            out.append(f"  PROBLEM: {p}")
        out.append("  result: " + ("OK" if self.ok else f"{len(self.problems)} problem(s)"))
        return "\n".join(out)


def check_table_set(source, rtol_dTdPs: float = 1e-3, rtol_cp: float = 1e-2) -> TableCheckReport:
    """Check a table directory (path) or an :class:`EOSTables`.

    Raises :class:`EOSError` (one line) when a directory cannot be loaded; every defect of
    a loaded set goes into the report. ``rtol_dTdPs``/``rtol_cp``: relative deviations
    above which a consistency warning is added (warnings never make the report fail).
    """
    if isinstance(source, EOSTables):
        tables, name = source, "<in-memory table set>"
    else:
        name = str(source)
        tables = load_table_set(Path(os.fspath(source)))
    tables = tables.to_numpy()
    rep = TableCheckReport(source=name, identity=tables.summary())

    for phase in PHASES:
        t = getattr(tables, phase)
        rep.grids[phase] = {"NP": t.P.size, "NS": t.S.size, "P": (t.P[0], t.P[-1]), "S": (t.S[0], t.S[-1])}
    for bname in ("solidus", "liquidus"):
        b = getattr(tables, bname)
        rep.grids[bname] = {"N": b.P.size, "P": (b.P[0], b.P[-1]), "S": (b.S.min(), b.S.max())}

    for phase in PHASES:
        t = getattr(tables, phase)
        for q, _unit in _QUANTITIES:
            arr = getattr(t, q)
            if arr is None:
                continue
            rep.ranges[f"{phase}.{q}"] = (float(arr.min()), float(arr.max()))
            if q in ("T", "rho", "cp") and not (arr > 0).all():
                rep.problems.append(f"{phase} {q} has non-positive values (min {arr.min():.6g})")
        dT_dS = np.diff(t.T, axis=0)
        rep.T_increasing[phase] = bool((dT_dS > 0).all())
        if not rep.T_increasing[phase]:
            j, i = np.argwhere(dT_dS <= 0)[0]
            rep.problems.append(f"{phase} T does not increase with S at P = {t.P[i]:.6g} Pa between "
                                f"S = {t.S[j]:.6g} and {t.S[j + 1]:.6g}")
        if t.alpha is None:
            rep.dTdPs_deviation[phase] = None
        else:
            pred = t.alpha * t.T / (t.rho * t.cp)
            with np.errstate(divide="ignore", invalid="ignore"):
                dev = np.abs(t.dTdPs - pred) / np.abs(t.dTdPs)
            dev = float(np.nanmax(np.where(t.dTdPs == 0, np.where(pred == 0, 0.0, np.inf), dev)))
            rep.dTdPs_deviation[phase] = dev
            if dev > rtol_dTdPs:
                rep.warnings.append(f"{phase}: (dT/dP)_S differs from alpha T/(rho cp) by up to {dev:.3g} "
                                    "(relative); the tabulated values of both are used")
        if t.S.size >= 3:
            with np.errstate(divide="ignore", invalid="ignore"):
                dTdS = (t.T[2:] - t.T[:-2]) / (t.S[2:] - t.S[:-2])[:, None]
                cp_fd = t.T[1:-1] / dTdS
                dev = float(np.nanmax(np.abs(t.cp[1:-1] - cp_fd) / np.abs(t.cp[1:-1])))
            rep.cp_deviation[phase] = dev
            if dev > rtol_cp:
                rep.warnings.append(f"{phase}: cp differs from T (dS/dT)_P (centred differences) by up to "
                                    f"{dev:.3g} (relative)")

    sol, liq = tables.solidus, tables.liquidus
    P = np.union1d(sol.P, liq.P)
    gap = np.interp(P, liq.P, liq.S) - np.interp(P, sol.P, sol.S)
    rep.min_gap = float(gap.min())
    if not (gap > 0).all():
        k = int(np.argmin(gap))
        rep.problems.append(f"liquidus entropy not above the solidus at P = {P[k]:.6g} Pa "
                            f"(S_liq - S_sol = {gap[k]:.6g} J/kg/K)")
    for bname, b, phase in (("solidus", sol, "solid"), ("liquidus", liq, "melt")):
        t = getattr(tables, phase)
        if b.S.min() < t.S[0] or b.S.max() > t.S[-1]:
            rep.warnings.append(f"{bname} S range {b.S.min():.6g}..{b.S.max():.6g} leaves the {phase} table's "
                                f"{t.S[0]:.6g}..{t.S[-1]:.6g}: boundary values are clipped there")
        lo, hi = min(tables.melt.P[0], tables.solid.P[0]), max(tables.melt.P[-1], tables.solid.P[-1])
        if b.P[0] > lo or b.P[-1] < hi:
            rep.warnings.append(f"{bname} covers P {b.P[0] / 1e9:.4g}..{b.P[-1] / 1e9:.4g} GPa, the tables "
                                f"{lo / 1e9:.4g}..{hi / 1e9:.4g} GPa: S_{bname[:3]} is held constant beyond")
    return rep
