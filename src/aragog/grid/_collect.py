"""Collect a grid's points into one CF-1.8 netCDF dataset: ``DIR/grid.nc`` (`aragog grid collect`).

Layout (``G`` = the grid dimensions: one per axis of a product grid, in axis order, or
``point`` for a zip grid)::

    AXIS(AXIS) / AXIS(point)   axis values (product: index coordinates; zip: along point)
    time(time)                 yr  the grid's common output times (grid.json "times")
    point_index(G), point_id(G)        which point each grid cell is
    status(G) int8 0 done, 1 failed, 2 pending;  message(G) str
    stopped_early(G) bool;  t_final(G) yr;  wall_seconds(G), integration_seconds(G) s
    NAME(G, time)              every scalar time series of the runs, on the common times
    profile_time(G) yr         time of the end-state profiles (the runs' last snapshot)
    NAME(G, staggered|basic)   the last snapshot of every profile, NaN-padded to the largest mesh
    radius_staggered(G, staggered), radius_basic(G, basic)   m, each point's own mesh

A time series value at a common time is copied when the run has that time, interpolated
linearly between the run's neighbouring times otherwise, and NaN outside the run's own time
range (a point that stopped early, failed or is pending).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from aragog.errors import ConfigError
from aragog.grid._store import GridFolder, PointRecord
from aragog.io._atomic import atomic_output
from aragog._run_history import RunHistory
from aragog.io._netcdf import CONVENTIONS, read_netcdf

__all__ = ["collect_grid", "resample", "axis_names", "STATUS_CODES", "TITLE"]

TITLE = "aragog parameter grid"
#: ``status`` codes of the collected dataset (``flag_values`` / ``flag_meanings``).
STATUS_CODES = {"done": 0, "failed": 1, "pending": 2}
_RADIUS = {"staggered": "radius_staggered", "basic": "radius_basic"}
_OWN = ("time", "point", "staggered", "basic", "point_index", "point_id", "status", "message",
        "stopped_early", "t_final", "wall_seconds", "integration_seconds", "profile_time",
        "radius_staggered", "radius_basic")
_TIME_COMMENT = "model time in Julian years (1 yr = 31557600 s)"


@dataclasses.dataclass
class PointData:
    """One point as collected: ``status`` (done/failed/pending), a one-line ``message``, its
    record (``None``: pending) and its run (``None``: no readable file)."""

    status: str
    message: str
    record: PointRecord | None
    history: RunHistory | None


def read_point(folder: GridFolder, record: PointRecord | None) -> PointData:
    """The record and run file of one point; an unreadable file makes the point failed."""
    if record is None:
        return PointData("pending", "", None, None)
    status = record.status if record.status in STATUS_CODES else "failed"
    if not record.file:
        return PointData(status, record.message, record, None)
    path = folder.points_dir / record.file
    try:
        return PointData(status, record.message, record, read_netcdf(path))
    except Exception as exc:  # a damaged file of any kind: the point failed, the grid goes on
        return PointData("failed", f"cannot read {path.name}: {' '.join(str(exc).split())}", record, None)


def resample(t: np.ndarray, y: np.ndarray, times: np.ndarray) -> np.ndarray:
    """``y`` (n_t,) at run times ``t`` (n_t,) [yr, non-decreasing] on ``times`` (n,) [yr].

    Exact time matches are copied (the last value at a repeated time), other times in
    ``[t[0], t[-1]]`` are interpolated linearly, times outside are NaN. Returns (n,) float64.
    """
    t, y, times = (np.asarray(a, dtype=np.float64) for a in (t, y, times))
    out = np.full(times.shape, np.nan)
    i = np.searchsorted(t, times, side="right") - 1  # t[i] <= time < t[i+1]
    inside = (i >= 0) & (times <= t[-1])
    exact = inside & (t[np.clip(i, 0, None)] == times)
    out[exact] = y[i[exact]]
    between = inside & ~exact
    j = i[between]
    w = (times[between] - t[j]) / (t[j + 1] - t[j])
    out[between] = y[j] + w * (y[j + 1] - y[j])
    return out


def axis_names(keys: list[str], reserved: set[str] = frozenset()) -> dict[str, str]:
    """A safe netCDF name for each dotted axis key: its last part (``emissivity``) when unique
    among the axes and not in ``reserved``, else the whole key with ``_`` (``a_b``)."""

    def safe(text: str) -> str:
        text = re.sub(r"[^A-Za-z0-9_]", "_", text)
        return text if re.match(r"[A-Za-z]", text) else f"axis_{text}"

    short = [safe(k.split(".")[-1]) for k in keys]
    out = {}
    for key, name in zip(keys, short):
        if short.count(name) > 1 or name in reserved:
            name = safe(key)
        while name in reserved or name in out.values():
            name += "_axis"
        out[key] = name
    return out


def _axis_values(values: list[Any]) -> np.ndarray:
    """An axis as an array: bool, int64 or float64 when all values are so, else str."""
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        kind = np.int64 if all(isinstance(v, int) for v in values) else np.float64
        return np.array(values, dtype=kind)
    return np.array([str(v) for v in values], dtype=object)


def _cf_units(unit: str) -> str | None:
    """A config schema unit (``kg/m³``, ``-``) in CF/UDUNITS spelling; None when not a quantity."""
    if not unit or " or " in unit or "(" in unit:
        return None
    if unit == "-":
        return "1"
    return unit.replace("⁻²", "-2").replace("²", "2").replace("³", "3")


def _axis_attrs(key: str) -> dict[str, str]:
    """``long_name``/``config_key`` (the dotted key) and, when the schema has one, ``units``."""
    attrs = {"long_name": key, "config_key": key}
    try:
        from aragog.config._schema import keys_of

        section, name = key.split(".", 1)
        units = _cf_units(keys_of(section)[name].unit)
    except (ImportError, KeyError, ValueError):
        units = None
    if units:
        attrs["units"] = units
    return attrs


def _grid_layout(grid: dict[str, Any], where: Path) -> tuple[list[str], tuple[int, ...], str]:
    """The axis keys, the grid's shape (product: one size per axis; zip: ``(n_points,)``), mode."""
    try:
        axes, points, mode = dict(grid["axes"]), list(grid["points"]), grid.get("mode", "product")
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{where}: not a grid file (no axes or points)") from None
    if mode == "zip":
        return list(axes), (len(points),), mode
    shape = tuple(len(v) for v in axes.values())
    if int(np.prod(shape)) != len(points):
        raise ConfigError(f"{where}: {len(points)} points for a product grid of shape {shape}")
    for point in points:  # the layout: point i sits at unravel_index(i, shape), axes in order
        cell = np.unravel_index(int(point["index"]), shape) if shape else ()
        expected = {k: v[i] for (k, v), i in zip(axes.items(), cell)}
        if dict(point.get("values", {})) != expected:
            raise ConfigError(f"{where}: point {point['index']} has values {point.get('values')}, not "
                              f"{expected}: the axes are not listed in the grid's order")
    return list(axes), shape, mode


def _scalar_block(runs: list[PointData], times: np.ndarray) -> dict[str, tuple[np.ndarray, dict]]:
    """Every scalar time series: ``{name: ((n_points, n_times) array, attrs)}``."""
    out: dict[str, tuple[np.ndarray, dict]] = {}
    for p, run in enumerate(runs):
        h = run.history
        for name in h.scalars if h is not None else ():
            if name not in out:
                meta = h.meta(name)
                attrs = {"units": meta.units, "long_name": meta.long_name}
                out[name] = (np.full((len(runs), times.size), np.nan), attrs)
            out[name][0][p] = resample(h.time, h.scalars[name], times)
    return out


def _profile_block(runs: list[PointData]) -> dict[str, tuple[str, np.ndarray, dict]]:
    """End-state profiles and radii: ``{name: (dim, (n_points, width) array, attrs)}``, NaN-padded."""
    width = {"staggered": 0, "basic": 0}
    for run in runs:
        if run.history is not None:
            width["staggered"] = max(width["staggered"], run.history.n_cells)
            width["basic"] = max(width["basic"], run.history.n_cells + 1)
    out: dict[str, tuple[str, np.ndarray, dict]] = {}
    for dim, name in _RADIUS.items():
        where = "cell centres (staggered nodes)" if dim == "staggered" else "cell boundaries (basic nodes)"
        out[name] = (dim, np.full((len(runs), width[dim]), np.nan),
                     {"units": "m", "long_name": f"radius of the {where} of each point", "positive": "up"})
    for p, run in enumerate(runs):
        h = run.history
        if h is None:
            continue
        out["radius_staggered"][1][p, : h.n_cells] = h.r_stag
        out["radius_basic"][1][p, : h.n_cells + 1] = h.r_basic
        for name, values in h.profiles.items() if h.n_snapshots else ():
            meta = h.meta(name)
            if name not in out:
                attrs = {"units": meta.units, "long_name": f"{meta.long_name} (end state: last snapshot)"}
                out[name] = (meta.dim, np.full((len(runs), width[meta.dim]), np.nan), attrs)
            out[name][1][p, : values.shape[1]] = values[-1]
    return out


def _point_info(runs: list[PointData], points: list[dict]) -> dict[str, tuple[np.ndarray, dict]]:
    """Per-point variables from the records: ``{name: ((n_points,) array, attrs)}``."""

    def rec(run: PointData, field: str) -> float:
        value = getattr(run.record, field, None) if run.record is not None else None
        return np.nan if value is None else float(value)

    def reached(run: PointData) -> float:  # the record's, else the run file's last time
        if run.record is not None and run.record.t_final is not None:
            return float(run.record.t_final)
        return float(run.history.time[-1]) if run.history is not None else np.nan

    t_final = [reached(r) for r in runs]
    profile_time = [r.history.snapshot_time[-1] if r.history is not None and r.history.n_snapshots else np.nan
                    for r in runs]
    return {
        "point_index": (np.array([int(p["index"]) for p in points], dtype=np.int64),
                        {"long_name": "index of the point"}),
        "point_id": (np.array([str(p["id"]) for p in points], dtype=object),
                     {"long_name": "id of the point (file stem in points/)"}),
        "status": (np.array([STATUS_CODES[r.status] for r in runs], dtype=np.int8),
                   {"long_name": "status of the point", "flag_values": np.array(list(STATUS_CODES.values()), np.int8),
                    "flag_meanings": " ".join(STATUS_CODES)}),
        "message": (np.array([r.message for r in runs], dtype=object), {"long_name": "solver message or failure"}),
        "stopped_early": (np.array([bool(r.record and r.record.stopped_early) for r in runs]),
                          {"long_name": "the run ended before solver.end_time"}),
        "t_final": (np.array(t_final), {"units": "yr", "long_name": "model time reached", "comment": _TIME_COMMENT}),
        "wall_seconds": (np.array([rec(r, "wall_seconds") for r in runs]),
                         {"units": "s", "long_name": "wall time of the point in its worker"}),
        "integration_seconds": (np.array([rec(r, "integration_seconds") for r in runs]),
                                {"units": "s", "long_name": "wall time of the integrator"}),
        "profile_time": (np.array(profile_time, dtype=np.float64),
                         {"units": "yr", "long_name": "time of the end-state profiles (last snapshot)"}),
    }


def build_dataset(grid: dict[str, Any], runs: list[PointData], where: Path) -> xr.Dataset:
    """The collected dataset of ``grid`` (grid.json content) from its points' ``runs`` (in point order)."""
    keys, shape, mode = _grid_layout(grid, where)
    times = np.asarray(grid.get("times") or [], dtype=np.float64)
    if times.size == 0:  # no common times recorded: the union of the runs' times
        times = np.unique(np.concatenate([r.history.time for r in runs if r.history is not None]))
    scalars, profiles, info = _scalar_block(runs, times), _profile_block(runs), _point_info(runs, grid["points"])
    runs_names = (set(scalars) | set(profiles)) - set(_OWN)
    names = axis_names(keys, set(_OWN) | runs_names)
    dims = tuple(names[k] for k in keys) if mode == "product" else ("point",)
    ds = xr.Dataset()
    for key in keys:
        values = _axis_values(list(grid["axes"][key]))
        ds.coords[names[key]] = ((names[key] if mode == "product" else "point"), values, _axis_attrs(key))
    ds.coords["time"] = ("time", times, {"units": "yr", "long_name": "time", "axis": "T", "comment": _TIME_COMMENT})
    for name, (values, attrs) in info.items():
        ds[name] = (dims, values.reshape(shape), attrs)
    for name, (values, attrs) in scalars.items():
        if name not in _OWN:
            ds[name] = (dims + ("time",), values.reshape(shape + (times.size,)), attrs)
    for name, (dim, values, attrs) in profiles.items():
        if name in _RADIUS.values() or name not in _OWN:
            ds[name] = (dims + (dim,), values.reshape(shape + values.shape[1:]), attrs)
    ds.attrs = _global_attrs(grid, runs)
    return ds


def _global_attrs(grid: dict[str, Any], runs: list[PointData]) -> dict[str, Any]:
    from aragog._version import provenance_attrs

    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    count = {s: sum(r.status == s for r in runs) for s in STATUS_CODES}
    return {
        "Conventions": CONVENTIONS, "title": TITLE,
        **provenance_attrs(now, "collected", "aragog.grid.collect_grid", f" from {len(runs)} points"),
        "spec_hash": str(grid.get("spec_hash") or ""), "grid_file": str(grid.get("grid_file") or ""),
        "grid_mode": str(grid.get("mode", "product")), "grid_axes": " ".join(grid.get("axes", {})),
        "grid_spec": json.dumps(grid.get("spec", {}), sort_keys=True),
        "grid_created": str(grid.get("created") or ""), "grid_aragog_version": str(grid.get("aragog_version") or ""),
        "points_done": count["done"], "points_failed": count["failed"], "points_pending": count["pending"],
    }


def _encoding(ds: xr.Dataset) -> dict[str, dict]:
    """zlib for the float arrays of 2 or more dimensions; variable-length strings for text; no
    _FillValue on coordinates (CF)."""
    enc: dict[str, dict] = {}
    for name, var in ds.variables.items():
        if var.dtype == object:
            enc[name] = {"dtype": str}
        elif name in ds.coords:
            enc[name] = {"_FillValue": None}
        elif var.dtype.kind == "f" and var.ndim >= 2 and var.size:
            enc[name] = {"zlib": True, "complevel": 4, "shuffle": True}
    return enc


def collect_grid(folder: str | os.PathLike | GridFolder, output: str | os.PathLike | None = None) -> xr.Dataset:
    """Collect every point of the grid in ``folder`` into one dataset (module docstring), write
    it to ``output`` (default ``DIR/grid.nc``) atomically, and return it (in memory).

    Raises:
        ConfigError: ``folder`` is not a grid output folder, or no point has a readable run.
        AragogError: the file cannot be written.
    """
    gf = folder if isinstance(folder, GridFolder) else GridFolder(folder)
    grid = gf.read_grid()
    try:
        grid = {**grid, "points": sorted(grid["points"], key=lambda p: int(p["index"]))}
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{gf.grid_file}: not a grid file (no list of points with an index)") from None
    records = gf.records()
    runs = [read_point(gf, records.get(int(p["index"]))) for p in grid["points"]]
    if not any(r.history is not None for r in runs):
        counts = ", ".join(f"{sum(r.status == s for r in runs)} {s}" for s in STATUS_CODES)
        raise ConfigError(f"{gf.root}: no point has finished with a readable run file yet ({counts})")
    ds = build_dataset(grid, runs, gf.grid_file)
    target = Path(output) if output is not None else gf.root / "grid.nc"
    with atomic_output(target, "grid dataset") as tmp:
        ds.to_netcdf(tmp, mode="w", format="NETCDF4", engine="netcdf4", encoding=_encoding(ds))
    return ds
