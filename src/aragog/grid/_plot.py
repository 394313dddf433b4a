"""One overview figure of a grid (`aragog grid plot`): ``DIR/grid.png``.

Top row: time series of every point (``T_magma``, ``Phi_global``, ``F_surface``, or what the
runs have), one thin line per point coloured by the value of the first axis. Bottom row: the
end state (last value of each point's series) of ``T_magma`` and ``Phi_global``: a map over
the two axes of a 2-axis product grid, else the value against the first axis. Failed points
are marked with a red cross, points that stopped early with an open marker. Reads the
collected dataset ``DIR/grid.nc`` (collected again when missing or older than a record).
Drawn with Matplotlib's Agg canvas (no pyplot) and written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from aragog.grid._collect import STATUS_CODES, collect_grid
from aragog.grid._store import GridFolder
from aragog.io._figure import write_png
from aragog.io._plot import _STYLE, _set_flux_scale, _time_scale

__all__ = ["plot_grid", "load_collected"]

_SERIES = ("T_magma", "Phi_global", "F_surface", "F_cmb", "T_core", "RF_depth")
_MAPS = ("T_magma", "Phi_global")
_LABELS = {"T_magma": "surface temperature", "Phi_global": "global melt fraction", "F_surface": "surface heat flux",
           "F_cmb": "core-mantle boundary heat flux", "T_core": "core temperature",
           "RF_depth": "rheological front depth"}
_FAILED = "#d62728"
_FAILED_CODE = STATUS_CODES["failed"]


def load_collected(folder: GridFolder) -> xr.Dataset:
    """``DIR/grid.nc`` in memory; collected first when missing or older than grid.json or a record."""
    path = folder.root / "grid.nc"
    records = list(folder.points_dir.glob("p*.json")) if folder.points_dir.is_dir() else []
    sources = [folder.grid_file, *records]
    newest = max((p.stat().st_mtime for p in sources if p.exists()), default=0.0)
    if not path.is_file() or path.stat().st_mtime < newest:
        return collect_grid(folder)
    with xr.open_dataset(path) as ds:
        return ds.load()


def _axes_coords(ds: xr.Dataset) -> list[xr.DataArray]:
    """The axis coordinates, in axis order (``grid_axes`` attribute: dotted keys)."""
    by_key = {c.attrs.get("config_key"): c for c in ds.coords.values() if "config_key" in c.attrs}
    return [by_key[k] for k in str(ds.attrs.get("grid_axes", "")).split() if k in by_key]


def _flat(ds: xr.DataArray | Any, like: xr.DataArray) -> np.ndarray:
    """``ds`` broadcast over the grid cells of ``like`` and flattened to (n_points, ...)."""
    values = xr.broadcast(ds, like)[0].transpose(*like.dims, ...).values
    return values.reshape((int(np.prod(like.shape)),) + values.shape[like.ndim:])


def _label(coord: xr.DataArray) -> str:
    units = coord.attrs.get("units")
    name = str(coord.attrs.get("config_key", coord.name))
    return f"{name} ({units})" if units and units != "1" else name


def _colouring(values: np.ndarray | None) -> tuple[Any, Any, list]:
    """``(colour of a value, ScalarMappable or None, legend handles)`` for the first axis."""
    from matplotlib import cm, colormaps, colors, lines

    if values is None:
        return (lambda v: "#1f5fa8"), None, []
    if values.dtype.kind in "iuf":
        lo, hi = float(np.min(values)), float(np.max(values))
        if lo > 0 and hi / lo >= 20:
            norm: colors.Normalize = colors.LogNorm(lo, hi)
        else:
            norm = colors.Normalize(lo, hi) if hi > lo else colors.Normalize(lo - 0.5, hi + 0.5)
        cmap = colors.LinearSegmentedColormap.from_list("grid", colormaps["viridis"](np.linspace(0.0, 0.92, 256)))
        return (lambda v: cmap(norm(v))), cm.ScalarMappable(norm=norm, cmap=cmap), []
    uniq = list(dict.fromkeys(values.tolist()))
    palette = {v: colormaps["tab10"](i % 10) for i, v in enumerate(uniq)}
    handles = [lines.Line2D([], [], color=palette[v], lw=2, label=str(v)) for v in uniq]
    return (lambda v: palette[v]), None, handles


def _series_panel(ax: Any, ds: xr.Dataset, name: str, first: np.ndarray | None, colour: Any) -> None:
    """One variable against time: a thin line per point; open marker at an early end, red x for failed."""
    t = ds.time.values
    scale, mask = _time_scale(t)
    ax.set_xscale(scale)
    y = _flat(ds[name], ds.point_index)
    status, early = _flat(ds.status, ds.point_index), _flat(ds.stopped_early, ds.point_index)
    for p in range(y.shape[0]):
        c = colour(first[p]) if first is not None else colour(None)
        failed = status[p] == _FAILED_CODE
        ax.plot(t[mask], y[p][mask], color=c, lw=1.1, alpha=0.9, ls=":" if failed else "-")
        good = np.flatnonzero(mask & np.isfinite(y[p]))
        if good.size and (failed or early[p]):
            k = good[-1]
            ax.plot(t[k], y[p][k], ls="none", ms=6, **(dict(marker="x", color=_FAILED, mew=1.8) if failed
                                                       else dict(marker="o", mfc="white", mec=c, mew=1.4)))
    if name in ("Phi_global", "RF_depth"):
        ax.set_ylim(-0.03, 1.03)
    if name.startswith("F_"):
        _set_flux_scale(ax, [row[mask] for row in y])
    units = ds[name].attrs.get("units", "")
    ax.set_title(f"{_LABELS.get(name, ds[name].attrs.get('long_name', name))}", loc="left")
    ax.set_ylabel(f"{name} ({units})" if units and units != "1" else name)
    ax.set_xlabel("time (yr)")


def _marker_legend(ax: Any, ds: xr.Dataset, name: str) -> None:
    """What the end markers of the time series of ``name`` mean (only those that occur)."""
    from matplotlib import lines

    drawn = np.isfinite(ds[name].values).any(-1)
    handles = []
    if (ds.stopped_early.values & drawn).any():
        handles.append(lines.Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3", mew=1.4,
                                    label="stopped early"))
    if ((ds.status.values == _FAILED_CODE) & drawn).any():
        handles.append(lines.Line2D([], [], ls=":", marker="x", color=_FAILED, mew=1.8, label="failed (last value)"))
    if handles:
        ax.legend(handles=handles, loc="best")


def _end_values(ds: xr.Dataset, name: str) -> np.ndarray:
    """The last finite value of each point's series, shape (grid dims...); NaN: no value."""
    y = ds[name].values
    finite = np.isfinite(y)
    last = np.where(finite.any(-1), y.shape[-1] - 1 - np.argmax(finite[..., ::-1], axis=-1), 0)
    return np.where(finite.any(-1), np.take_along_axis(y, last[..., None], -1)[..., 0], np.nan)


def _ticks(values: np.ndarray) -> list[str]:
    return [f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v) for v in values.tolist()]


def _map_panel(fig: Any, ax: Any, ds: xr.Dataset, name: str, axes: list[xr.DataArray]) -> None:
    """End values over a 2-axis product grid: first axis along x, second along y, one cell each."""
    cx, cy = axes
    end = _end_values(ds, name).T  # (n_y, n_x)
    status, early = ds.status.values.T, ds.stopped_early.values.T
    from matplotlib import patches

    ax.set_facecolor("0.88")
    mesh = ax.pcolormesh(np.arange(cx.size + 1) - 0.5, np.arange(cy.size + 1) - 0.5, np.ma.masked_invalid(end),
                         cmap="magma" if name.startswith("T") else "cividis", shading="flat")
    cbar = fig.colorbar(mesh, ax=ax, pad=0.02)
    units = ds[name].attrs.get("units", "")
    cbar.set_label(f"end {name}" + (f" ({units})" if units and units != "1" else ""))
    t_final = ds.t_final.values.T
    for (j, i), value in np.ndenumerate(end):
        if early[j, i] or status[j, i] == _FAILED_CODE:  # hatched: not the state at the grid's end time
            ax.add_patch(patches.Rectangle((i - 0.5, j - 0.5), 1, 1, fill=False, hatch="//", lw=0,
                                           edgecolor=_FAILED if status[j, i] == _FAILED_CODE else "0.5"))
        if cx.size * cy.size > 144:
            continue
        if status[j, i] == _FAILED_CODE:
            note = "failed"
        elif status[j, i] == STATUS_CODES["pending"]:
            note = "pending"
        else:
            note = f"stopped at {t_final[j, i]:.4g} yr" if early[j, i] else ""
        dark = np.isfinite(value) and mesh.norm(value) < 0.55
        text = "\n".join(x for x in (f"{value:.4g}" if np.isfinite(value) else "", note) if x)
        ax.text(i, j, text, ha="center", va="center", fontsize=8.5, color="white" if dark else "black",
                fontweight="bold" if note == "failed" else "normal")
    fj, fi = np.nonzero(status == _FAILED_CODE)
    ax.plot(fi, fj + 0.25, ls="none", marker="x", color=_FAILED, ms=11, mew=2.2)
    ax.set_xticks(range(cx.size), _ticks(cx.values))
    ax.set_yticks(range(cy.size), _ticks(cy.values))
    ax.set_xlabel(_label(cx))
    ax.set_ylabel(_label(cy))
    ax.grid(False)


def _scatter_panel(ax: Any, ds: xr.Dataset, name: str, first: xr.DataArray | None) -> None:
    """End values against the first axis (1-axis, zip or >2-axis grids)."""
    end = _end_values(ds, name).ravel()
    status, early = _flat(ds.status, ds.point_index), _flat(ds.stopped_early, ds.point_index)
    if first is None:
        x, ticks = np.zeros(end.size), None
    elif first.dtype.kind in "iuf":
        x, ticks = _flat(first, ds.point_index).astype(float), None
        if x.min() > 0 and x.max() / x.min() >= 20:
            ax.set_xscale("log")
    else:
        labels = list(dict.fromkeys(_flat(first, ds.point_index).tolist()))
        x = np.array([labels.index(v) for v in _flat(first, ds.point_index).tolist()], dtype=float)
        ticks = labels
    failed = status == _FAILED_CODE
    ok = np.isfinite(end) & ~failed
    order = np.argsort(x, kind="stable")
    if ds.point_index.ndim == 1 and ds.attrs.get("grid_mode") == "product" and ticks is None:
        ax.plot(x[order][ok[order]], end[order][ok[order]], color="0.6", lw=1.0, zorder=1)
    ax.scatter(x[ok & ~early], end[ok & ~early], s=40, color="#1f5fa8", zorder=2, label="done")
    if np.any(ok & early):
        ax.scatter(x[ok & early], end[ok & early], s=40, facecolor="white", edgecolor="#1f5fa8", lw=1.5,
                   zorder=2, label="stopped early (last value)")
    partial = failed & np.isfinite(end)
    if partial.any():  # a failed run that wrote a file: its last value
        ax.plot(x[partial], end[partial], ls="none", marker="x", color=_FAILED, ms=10, mew=2,
                label="failed (last value)")
    if (failed & ~partial).any():  # nothing to show: a cross on the x axis
        from matplotlib import transforms

        blend = transforms.blended_transform_factory(ax.transData, ax.transAxes)
        ax.plot(x[failed & ~partial], np.full(int((failed & ~partial).sum()), 0.04), ls="none", marker="x",
                color=_FAILED, ms=10, mew=2, transform=blend, label="failed (no run)", clip_on=False)
    if ticks is not None:
        ax.set_xticks(range(len(ticks)), [str(v) for v in ticks])
    units = ds[name].attrs.get("units", "")
    ax.set_xlabel(_label(first) if first is not None else "point")
    ax.set_ylabel(f"end {name}" + (f" ({units})" if units and units != "1" else ""))
    ax.yaxis.get_major_formatter().set_useOffset(False)
    ax.legend(loc="best")


def _title(ds: xr.Dataset, folder: GridFolder) -> str:
    a = ds.attrs
    n = int(ds.point_index.size)
    shape = f"({n} points)"
    if ds.point_index.ndim > 1:
        shape = "\u00d7".join(str(k) for k in ds.point_index.shape) + f" {shape}"
    counts = ", ".join(f"{a.get(f'points_{s}', '?')} {s}" for s in STATUS_CODES)
    return "  \u00b7  ".join([folder.root.name, f"{a.get('grid_mode', 'product')} grid {shape}", counts,
                             f"spec {a.get('spec_hash', '')}", str(a.get("source", "aragog"))])


def _draw(fig: Any, ds: xr.Dataset, folder: GridFolder) -> None:
    axes = _axes_coords(ds)
    series = [n for n in _SERIES if n in ds and "time" in ds[n].dims][:3]
    if not series:
        series = [n for n, v in ds.data_vars.items() if "time" in v.dims][:3]
    first = _flat(axes[0], ds.point_index) if axes else None
    colour, mappable, handles = _colouring(first)
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.0, 1.05])
    top_axes = np.atleast_1d(top.subplots(1, max(len(series), 1)))
    for ax, name in zip(top_axes, series):
        _series_panel(ax, ds, name, first, colour)
    if series:
        _marker_legend(top_axes[0], ds, series[0])
    if mappable is not None:
        top.colorbar(mappable, ax=list(top_axes), pad=0.01, aspect=30).set_label(_label(axes[0]))
    elif handles:
        top_axes[-1].legend(handles=handles, title=_label(axes[0]), loc="best")
    maps = [n for n in _MAPS if n in ds] or series[:2]
    bottom_axes = np.atleast_1d(bottom.subplots(1, max(len(maps), 1)))
    two_d = ds.attrs.get("grid_mode") == "product" and len(axes) == 2
    for ax, name in zip(bottom_axes, maps):
        if two_d:
            _map_panel(bottom, ax, ds, name, axes)
        else:
            _scatter_panel(ax, ds, name, axes[0] if axes else None)
        ax.set_title(f"End state: {_LABELS.get(name, name)}", loc="left")
    fig.suptitle(_title(ds, folder), fontsize=13)


def plot_grid(folder: str | os.PathLike | GridFolder, output: str | os.PathLike | None = None, *,
              dpi: int = 130) -> Path:
    """Draw the overview of the grid in ``folder`` (module docstring) and write it as a PNG,
    atomically, to ``output`` (default ``DIR/grid.png``); return its path.

    Raises:
        ConfigError: not a grid folder, or no point has finished (from :func:`collect_grid`).
        AragogError: the PNG cannot be written.
    """
    gf = folder if isinstance(folder, GridFolder) else GridFolder(folder)
    gf.read_grid()  # ConfigError when this is not a grid folder
    ds = load_collected(gf)
    out = Path(output) if output is not None else gf.root / "grid.png"
    return write_png(out, "grid plot", (15.0, 9.5), lambda fig: _draw(fig, ds, gf), style=_STYLE, dpi=dpi)
