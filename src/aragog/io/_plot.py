"""A four-panel overview figure of one run (``aragog plot F.nc``).

(a) temperature profiles and (b) melt-fraction profiles against radius, depth or pressure
at each snapshot, coloured by time; (c) surface temperature, global melt fraction and the
rheological front's depth and (d) surface and core-mantle-boundary heat flux against time
(a logarithmic time axis when the output times span two decades or more:
``solver.output_spacing = "log"`` stores them so). Drawn with Matplotlib's Agg canvas directly
(no pyplot, no display, no change to the global backend) and written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aragog.errors import AragogError
from aragog.io._figure import write_png
from aragog._run_history import RunHistory
from aragog.io._netcdf import read_netcdf

__all__ = ["plot_run"]

# A log time axis when the positive output times span at least this factor.
_LOG_SPAN = 100.0
_STYLE = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.labelsize": 11.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 10,
    "xtick.direction": "out",
    "ytick.direction": "out",
}
_C_TEMP = "#c0392b"   # surface temperature
_C_PHI = "#1f5fa8"    # melt fraction
_C_FSURF = "#d35400"  # surface heat flux
_C_FCMB = "#4a4a4a"   # core-mantle boundary heat flux
_C_RF = "#2e8b57"     # rheological front depth


def _load(history_or_path: Any, out_png: Any) -> tuple[RunHistory, Path, str]:
    if isinstance(history_or_path, RunHistory):
        if out_png is None:
            raise ValueError("plot_run: out_png is required when plotting a RunHistory (no file to name it after)")
        return history_or_path, Path(out_png), ""
    if isinstance(history_or_path, (str, os.PathLike)):
        source = Path(history_or_path)
        history = read_netcdf(source)
        out = Path(out_png) if out_png is not None else source.with_suffix(".png")
        return history, out, source.name
    raise TypeError(f"plot_run: expected a RunHistory or a path, got {type(history_or_path).__name__}")


def _time_scale(t: np.ndarray) -> tuple[str, np.ndarray]:
    """``("log", mask)`` if the positive times span >= _LOG_SPAN and none is negative, else linear.

    On a log axis only the points with t > 0 are drawn (a run usually starts at t = 0).
    """
    finite = np.isfinite(t)
    pos = t[finite & (t > 0)]
    if pos.size >= 2 and np.nanmin(t) >= 0 and pos.max() / pos.min() >= _LOG_SPAN:
        return "log", finite & (t > 0)
    return "linear", finite


def _set_flux_scale(ax: Any, series: list[np.ndarray]) -> None:
    values = np.concatenate([s[np.isfinite(s)] for s in series]) if series else np.zeros(0)
    if values.size == 0:
        return
    if np.all(values > 0):
        if values.max() / values.min() > 20:
            ax.set_yscale("log")
        return
    nonzero = np.abs(values[values != 0])
    if nonzero.size == 0:
        return
    linthresh = max(nonzero.min(), nonzero.max() * 1e-6)
    if nonzero.max() / linthresh > 20:
        ax.set_yscale("symlog", linthresh=linthresh)
        ax.axhline(0.0, color="0.6", lw=0.8, zorder=0)


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.45", style="italic")


#: where a time panel's legend may sit, in order of preference
_LEGEND_LOCS = ("upper right", "lower left", "upper left", "lower right", "center right", "center left",
                "upper center", "lower center")


def _line_points(axes: list[Any], step: float = 2.0) -> np.ndarray:
    """Every line of ``axes`` as points in display coordinates, ``step`` pixels apart at
    most (a legend that covers none of them covers no curve)."""
    out = [np.zeros((0, 2))]
    for a in axes:
        a.get_xlim(), a.get_ylim()  # the final data limits, before transData is used
        for line in a.get_lines():
            if not line.get_visible():
                continue
            with np.errstate(all="ignore"):
                p = a.transData.transform(np.asarray(line.get_xydata(), dtype=float))
            p = p[np.all(np.isfinite(p), axis=1)]
            if len(p) < 2:
                out.append(p)
                continue
            seg = np.diff(p, axis=0)
            n = np.clip(np.ceil(np.hypot(seg[:, 0], seg[:, 1]) / step).astype(int), 1, 4000)
            frac = np.concatenate([np.arange(k) / k for k in n])
            out.append(np.repeat(p[:-1], n, axis=0) + np.repeat(seg, n, axis=0) * frac[:, None])
            out.append(p[-1:])
    return np.concatenate(out)


def _legend_clear_of_curves(fig: Any, ax: Any, handles: list[Any]) -> None:
    """The legend of ``handles`` on ``ax`` (a panel's top-most axes) where it covers the
    fewest points of the panel's curves, its twin's included (Matplotlib's "best" sees one
    axes only); with a white backing where every place covers some."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)  # the panels' final positions
    renderer = fig.canvas.get_renderer()
    twins = [a for a in fig.axes if a.get_position().bounds == ax.get_position().bounds]
    points = _line_points(twins)
    # the corners and edges first, then a grid of places inside the panel
    places = [dict(loc=loc) for loc in _LEGEND_LOCS] + [
        dict(loc="center", bbox_to_anchor=(fx, fy), bbox_transform=ax.transAxes)
        for fy in np.linspace(0.85, 0.15, 8) for fx in np.linspace(0.8, 0.2, 7)]
    best = None
    for place in places:
        box = ax.legend(handles=handles, **place).get_window_extent(renderer)
        if "bbox_to_anchor" in place and not (ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1
                                              and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1):
            continue
        covered = box.padded(3.0).count_contains(points) if len(points) else 0
        if best is None or covered < best[0]:
            best = (covered, place)
        if covered == 0:
            break
    if best[0]:
        ax.legend(handles=handles, **best[1], frameon=True, facecolor="white", edgecolor="none", framealpha=0.85)
    else:
        ax.legend(handles=handles, **best[1])


#: what the profile panels are drawn against: label, and the x values of a profile
#: (``history``, ``staggered``: bool, snapshot index)
AGAINST = ("radius", "depth", "pressure")
_AGAINST_LABEL = {"radius": "radius (km)", "depth": "depth (km)", "pressure": "pressure (GPa)"}


def _x_values(history: RunHistory, staggered: bool, k: int, against: str) -> np.ndarray:
    """Where a profile's points lie along the profile panels' axis (``against``): radius or
    depth below the surface [km], or pressure [GPa] (the cells' ``P_stag`` of snapshot k,
    interpolated in radius to the basic nodes)."""
    r = history.r_stag if staggered else history.r_basic
    if against == "radius":
        return r / 1e3
    if against == "depth":
        return (history.r_basic.max() - r) / 1e3
    P = history.profiles["P_stag"][k]
    if staggered:
        return P / 1e9
    order = np.argsort(history.r_stag)
    return np.interp(r, history.r_stag[order], P[order]) / 1e9


def _profile(history: RunHistory, names: tuple[str, ...]) -> tuple[str | None, bool, np.ndarray | None]:
    """The first of ``names`` present in the profiles, whether it lives on the cells
    (staggered) or the basic nodes, and its values (snapshots, points)."""
    for name in names:
        if name in history.profiles:
            return name, history.meta(name).dim == "staggered", history.profiles[name]
    return None, True, None


def _title(history: RunHistory, label: str) -> str:
    a = history.attrs
    parts = [label or "aragog run"]
    version = a.get("aragog_version")
    parts.append(f"aragog {version}" if version is not None else "aragog")
    if "integrator" in a:
        parts.append(str(a["integrator"]))
    parts.append(f"{history.n_cells} cells")
    status = a.get("status")
    message = str(a.get("message", "")).strip()
    if status is not None or message:
        text = f"status {status}" if status is not None else "status"
        if message:
            text += f": {message}"
        parts.append(text if len(text) <= 70 else text[:67] + "...")
    return "  \u00b7  ".join(parts)


def _draw(fig: Any, history: RunHistory, label: str, against: str = "radius") -> None:
    from matplotlib import cm, colormaps, colors

    axes = fig.subplots(2, 2)
    ax_t, ax_phi = axes[0]
    ax_surf, ax_flux = axes[1]
    ax_phi.sharex(ax_t)
    ax_flux.sharex(ax_surf)

    # --- colour by snapshot time -------------------------------------------------------
    ts = history.snapshot_time
    # plasma, reversed and without its palest yellow: early (hot) orange -> late (cool) indigo.
    cmap = colors.LinearSegmentedColormap.from_list(
        "aragog_cooling", colormaps["plasma_r"](np.linspace(0.12, 1.0, 256))
    )
    scale, _ = _time_scale(ts)
    if ts.size and scale == "log":
        norm: colors.Normalize = colors.LogNorm(vmin=ts[ts > 0].min(), vmax=ts.max(), clip=True)
    elif ts.size and ts.max() > ts.min():
        norm = colors.Normalize(vmin=ts.min(), vmax=ts.max())
    else:
        norm = colors.Normalize(vmin=(ts[0] if ts.size else 0.0) - 0.5, vmax=(ts[0] if ts.size else 0.0) + 0.5)

    def colour(t: float) -> Any:
        return cmap(norm(max(t, norm.vmin) if isinstance(norm, colors.LogNorm) else t))

    # --- (a) temperature, (b) melt fraction profiles ------------------------------------
    for ax, names, ylabel, title in (
        (ax_t, ("T_stag", "T_basic"), "temperature (K)", "Temperature profiles"),
        (ax_phi, ("phi_stag", "phi_basic"), "melt fraction", "Melt fraction profiles"),
    ):
        ax.set_title(title, loc="left")
        ax.set_xlabel(_AGAINST_LABEL[against])
        ax.set_ylabel(ylabel)
        name, staggered, values = _profile(history, names)
        if name is None or history.n_snapshots == 0:
            _no_data(ax, f"no {names[0]} profiles recorded")
            continue
        xs = [_x_values(history, staggered, k, against) for k in range(history.n_snapshots)]
        lo, hi = min(float(np.min(x)) for x in xs), max(float(np.max(x)) for x in xs)
        if against == "radius":
            lo, hi = history.r_basic.min() / 1e3, history.r_basic.max() / 1e3
        elif against == "depth":
            lo, hi = 0.0, (history.r_basic.max() - history.r_basic.min()) / 1e3
        if hi > lo:
            ax.set_xlim(lo, hi)
        lw = 2.0 if history.n_snapshots <= 12 else 1.3
        initial_drawn = False
        for k in range(history.n_snapshots):
            if isinstance(norm, colors.LogNorm) and ts[k] <= 0:
                # Not on a log colour scale: the initial state, drawn dashed in grey.
                # above the later profiles (a melt fraction of 1 is shared by the first ones)
                ax.plot(xs[k], values[k], color="0.3", lw=lw, ls=(0, (4, 2)), zorder=2.5,
                        label=None if initial_drawn else f"t = {ts[k]:g} yr (initial)")
                initial_drawn = True
            else:
                ax.plot(xs[k], values[k], color=colour(ts[k]), lw=lw, solid_capstyle="round",
                        label=f"t = {ts[k]:.3g} yr" if history.n_snapshots == 1 else None)
        if ax.get_legend_handles_labels()[1]:
            # in the title's row, right-aligned: the profiles fill the panel
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.1, borderpad=0.1)
    if "phi_stag" in history.profiles or "phi_basic" in history.profiles:
        ax_phi.set_ylim(-0.03, 1.03)
    if history.n_snapshots >= 2:
        sm = cm.ScalarMappable(norm=norm, cmap=cmap)
        cbar = fig.colorbar(sm, ax=[ax_t, ax_phi, ax_surf, ax_flux], location="right", pad=0.015,
                            aspect=40, fraction=0.03)
        cbar.set_label("snapshot time (yr)")

    # --- (c) surface temperature and global melt fraction --------------------------------
    t = history.time
    t_scale, mask = _time_scale(t)
    ax_surf.set_title("Surface temperature and melt fraction", loc="left")
    ax_surf.set_xscale(t_scale)
    if mask.any() and t[mask].max() > t[mask].min():
        ax_surf.set_xlim(t[mask].min(), t[mask].max())
    ax_surf.set_xlabel("time (yr)")
    handles = []
    ax_top = ax_surf  # the panel's top-most axes: the legend goes there
    if "T_magma" in history.scalars:
        (h,) = ax_surf.plot(t[mask], history.scalars["T_magma"][mask], color=_C_TEMP, lw=2.2,
                            label="$T_\\mathrm{magma}$ (surface)")
        handles.append(h)
        ax_surf.set_ylabel("surface temperature (K)", color=_C_TEMP)
        ax_surf.tick_params(axis="y", colors=_C_TEMP)
        # Snapshot times as dots on the curve, in their colours (ties the panels together).
        if history.n_snapshots:
            tk = ts if t_scale == "linear" else ts[ts > 0]
            tk = tk[(tk >= t[mask].min()) & (tk <= t[mask].max())] if mask.any() else tk[:0]
            if tk.size:
                yk = np.interp(tk, t[mask], history.scalars["T_magma"][mask])
                ax_surf.scatter(tk, yk, c=[colour(x) for x in tk], s=34, zorder=3,
                                edgecolors="white", linewidths=0.8, clip_on=False)
    if "Phi_global" in history.scalars:
        ax_m = ax_top = ax_surf.twinx()
        ax_m.grid(False)
        ax_m.spines["top"].set_visible(False)
        ax_m.spines["right"].set_visible(True)
        (h,) = ax_m.plot(t[mask], history.scalars["Phi_global"][mask], color=_C_PHI, lw=2.0, ls="--",
                         label="$\\Phi_\\mathrm{global}$ (mass-weighted)")
        handles.append(h)
        ylabel = "global melt fraction"
        if "RF_depth" in history.scalars:
            # the rheological front's depth as a fraction of the mantle's depth (0: no front,
            # or at the surface; docs/output.md): where the mush stiffens, a 0-1 like Phi
            (h,) = ax_m.plot(t[mask], history.scalars["RF_depth"][mask], color=_C_RF, lw=1.8, ls=":",
                             label="rheological front depth")
            handles.append(h)
            ylabel = "melt fraction; front depth / mantle depth"
        ax_m.set_ylim(-0.03, 1.03)
        ax_m.set_ylabel(ylabel, color=_C_PHI)
        ax_m.tick_params(axis="y", colors=_C_PHI)
    if not handles:
        _no_data(ax_surf, "T_magma and Phi_global not recorded")

    # --- (d) heat fluxes --------------------------------------------------------------------
    ax_flux.set_title("Heat flux", loc="left")
    ax_flux.set_xscale(t_scale)
    ax_flux.set_xlabel("time (yr)")
    ax_flux.set_ylabel("heat flux (W m$^{-2}$)")
    series = []
    for name, lbl, c, ls in (("F_surface", "surface", _C_FSURF, "-"), ("F_cmb", "core-mantle boundary", _C_FCMB, "-.")):
        if name in history.scalars:
            ax_flux.plot(t[mask], history.scalars[name][mask], color=c, lw=2.0, ls=ls, label=lbl)
            series.append(history.scalars[name][mask])
    if series:
        _set_flux_scale(ax_flux, series)
    else:
        _no_data(ax_flux, "F_surface and F_cmb not recorded")

    for ax, letter in zip((ax_t, ax_phi, ax_surf, ax_flux), "abcd"):
        ax.text(-0.02, 1.03, f"({letter})", transform=ax.transAxes, ha="right", va="bottom",
                fontsize=12, fontweight="bold")
    fig.suptitle(_title(history, label), fontsize=13)
    # last, once every panel is drawn and laid out: the legends of the time panels
    if handles:
        _legend_clear_of_curves(fig, ax_top, handles)
    if series:
        _legend_clear_of_curves(fig, ax_flux, ax_flux.get_legend_handles_labels()[0])


def plot_run(history_or_path: RunHistory | str | os.PathLike, out_png: str | os.PathLike | None = None,
             *, dpi: int = 150, against: str = "radius") -> Path:
    """Draw the four-panel overview of a run and write it as a PNG, atomically.

    Parameters
    ----------
    history_or_path : RunHistory or path of a netCDF file written by :func:`write_netcdf`
    out_png : path, optional
        Where to write the figure. Default: the netCDF path with suffix ``.png``
        (required when a ``RunHistory`` is given).
    dpi : int
        Resolution (the figure is 12 x 8.5 inches).
    against : {"radius", "depth", "pressure"}
        The axis of the profile panels (a) and (b): radius or depth below the surface [km],
        or pressure [GPa] (needs the ``P_stag`` profiles).

    Returns
    -------
    The path of the PNG written.

    Raises
    ------
    AragogError
        The netCDF file cannot be read, or the PNG cannot be written (one line naming it).
    """
    if against not in AGAINST:
        raise AragogError(f"plot: profiles can be drawn against {', '.join(AGAINST)}, not {against!r}")
    history, out, label = _load(history_or_path, out_png)
    history.validate()
    if against == "pressure" and "P_stag" not in history.profiles:
        raise AragogError(f"plot: {label or out} has no pressure profiles (P_stag): draw against radius or depth")
    return write_png(out, "plot", (12.0, 8.5), lambda fig: _draw(fig, history, label or out.stem, against),
                     style=_STYLE, dpi=dpi)
