"""A short human-readable summary of a run (``aragog inspect F.nc``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from aragog._run_history import RunHistory
from aragog.io._netcdf import read_netcdf

__all__ = ["summarize"]

# Scalars shown as "initial -> final" (in this order, those present).
KEY_SCALARS = ("T_magma", "T_core", "Phi_global", "F_surface", "F_cmb")


def _num(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.6g}"


def _first_last(values: np.ndarray) -> tuple[float, float]:
    finite = np.flatnonzero(np.isfinite(values))
    if finite.size == 0:
        return float("nan"), float("nan")
    return float(values[finite[0]]), float(values[finite[-1]])


def summarize(history_or_path: RunHistory | str | os.PathLike) -> str:
    """A short text summary of a run: provenance, time span, mesh, key values, variables.

    Lists the file, aragog version, integrator, status and message, the time span with
    the number of output times and snapshots, the number of cells and the radius range,
    the initial -> final values of ``T_magma``, ``T_core``, ``Phi_global``, ``F_surface``
    and ``F_cmb`` (those recorded; first and last finite values), then every variable
    with its dimensions and units. Numbers are printed with 6 significant digits.

    Raises
    ------
    AragogError
        If a path is given and it is not a readable aragog netCDF file.
    """
    if isinstance(history_or_path, RunHistory):
        h, file_label = history_or_path, "(in memory)"
    elif isinstance(history_or_path, (str, os.PathLike)):
        path = Path(history_or_path)
        h, file_label = read_netcdf(path), str(path)
    else:
        raise TypeError(f"summarize: expected a RunHistory or a path, got {type(history_or_path).__name__}")
    h.validate()
    a = h.attrs

    def attr(name: str, default: str = "unknown") -> str:
        return str(a[name]) if name in a else default

    status = attr("status")
    message = attr("message", "")
    lines: list[str] = [
        f"file           {file_label}",
        f"aragog version {attr('aragog_version')}",
        f"integrator     {attr('integrator')}",
        f"status         {status}" + (f": {message}" if message else ""),
    ]
    if "created" in a:
        lines.append(f"created        {a['created']}")
    t = h.time
    lines.append(
        f"time           {_num(t[0])} .. {_num(t[-1])} yr, {h.n_times} output time{'s' * (h.n_times != 1)}, "
        f"{h.n_snapshots} profile snapshot{'s' * (h.n_snapshots != 1)}"
    )
    r = h.r_basic
    lines.append(
        f"mesh           N = {h.n_cells} cells, radius {_num(r.min())} .. {_num(r.max())} m "
        f"({_num(r.min() / 1e3)} .. {_num(r.max() / 1e3)} km)"
    )
    if "config" in a:
        n = len(str(a["config"]).splitlines())
        lines.append(f"config         {n} lines of TOML (global attribute 'config')")

    rows = []
    for name in KEY_SCALARS:
        if name in h.scalars:
            first, last = _first_last(h.scalars[name])
            rows.append((name, _num(first), _num(last), h.meta(name).units))
    if rows:
        lines.append("")
        lines.append("initial -> final")
        w = [max(len(row[i]) for row in rows) for i in range(3)]
        for name, first, last, units in rows:
            lines.append(f"  {name:<{w[0]}}  {first:>{w[1]}} -> {last:>{w[2]}}  {units}")

    var_rows: list[tuple[str, str, str, str]] = [
        ("time", "(time)", "yr", "time"),
        ("snapshot_time", "(snapshot)", "yr", "time of the profile snapshots"),
        ("radius_staggered", "(staggered)", "m", "radius of the cell centres (staggered nodes)"),
        ("radius_basic", "(basic)", "m", "radius of the cell boundaries (basic nodes)"),
    ]
    for name in h.scalars:
        m = h.meta(name)
        var_rows.append((name, "(time)", m.units, m.long_name))
    for name in h.profiles:
        m = h.meta(name)
        var_rows.append((name, f"(snapshot, {m.dim})", m.units, m.long_name))
    lines.append("")
    lines.append(
        f"variables (time = {h.n_times}, snapshot = {h.n_snapshots}, "
        f"staggered = {h.n_cells}, basic = {h.n_cells + 1})"
    )
    w = [max(len(row[i]) for row in var_rows) for i in range(3)]
    for name, dims, units, long_name in var_rows:
        lines.append(f"  {name:<{w[0]}}  {dims:<{w[1]}}  {units:<{w[2]}}  {long_name}")
    return "\n".join(lines) + "\n"
