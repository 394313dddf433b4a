"""An overview figure of one EOS table set (``aragog eos plot DIR``).

Top row: the phase diagram in P-T (solidus and liquidus temperatures, melting interval
shaded) and in P-S (the boundaries and the entropy ranges the two tables cover). Below,
one row per phase (melt, solid): maps on (P [GPa], S [J kg-1 K-1]) of T, rho, c_p, alpha
and (dT/dP)_S, with the solidus and liquidus S(P) drawn over them. Drawn with Matplotlib's
Agg canvas directly (no pyplot, no change to the global backend) and written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aragog.errors import AragogError
from aragog.eos._tables import EOSTables, PhaseBoundary, PhaseTable, load_table_set
from aragog.io._figure import write_png

__all__ = ["plot_table_set", "melting_curves_PT", "interpolate_on_grid", "property_maps"]

_GPA = 1.0e9
_STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "legend.fontsize": 9,
}
_C_SOLIDUS = "#1f5fa8"
_C_LIQUIDUS = "#c0392b"
_C_PHASE = {"melt": "#d35400", "solid": "#4a4a4a"}
# (key, title, colorbar label, colormap) of the property maps, in column order.
_MAPS = (
    ("T", "temperature", "T (K)", "inferno"),
    ("rho", "density", "$\\rho$ (kg m$^{-3}$)", "viridis"),
    ("cp", "heat capacity", "$c_p$ (J kg$^{-1}$ K$^{-1}$)", "cividis"),
    ("alpha", "thermal expansivity", "$\\alpha$ (K$^{-1}$)", "magma"),
    ("dTdP", "adiabatic gradient", "$(\\partial T/\\partial P)_S$ (K GPa$^{-1}$)", "plasma"),
)


def interpolate_on_grid(grid_P: np.ndarray, grid_S: np.ndarray, values: np.ndarray,
                        P: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Bilinear interpolation of ``values`` (NS, NP) on the grid ``grid_P`` (NP,) x ``grid_S``
    (NS,) at the points (``P``, ``S``) (same shape, any units matching the grid).

    Returns an array shaped like ``P``; NaN at points outside the grid.
    """
    grid_P, grid_S = np.asarray(grid_P, float), np.asarray(grid_S, float)
    values = np.asarray(values, float)
    P, S = np.broadcast_arrays(np.asarray(P, float), np.asarray(S, float))
    inside = (P >= grid_P[0]) & (P <= grid_P[-1]) & (S >= grid_S[0]) & (S <= grid_S[-1])
    i = np.clip(np.searchsorted(grid_P, P, side="right") - 1, 0, grid_P.size - 2)
    j = np.clip(np.searchsorted(grid_S, S, side="right") - 1, 0, grid_S.size - 2)
    u = (P - grid_P[i]) / (grid_P[i + 1] - grid_P[i])
    v = (S - grid_S[j]) / (grid_S[j + 1] - grid_S[j])
    result = ((1 - u) * (1 - v) * values[j, i] + u * (1 - v) * values[j, i + 1]
              + (1 - u) * v * values[j + 1, i] + u * v * values[j + 1, i + 1])
    return np.where(inside, result, np.nan)


def _boundary_temperature(boundary: PhaseBoundary, phase: PhaseTable) -> tuple[np.ndarray, np.ndarray]:
    P, S = np.asarray(boundary.P, float), np.asarray(boundary.S, float)
    return P, interpolate_on_grid(phase.P, phase.S, phase.T, P, S)


def melting_curves_PT(tables: EOSTables) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The melting curves in P-T: ``{"solidus": (P, T), "liquidus": (P, T)}``.

    P [Pa] is the boundary's own pressure axis (N,); T [K] (N,) is the solid table's T at
    the solidus (P, S_sol(P)) and the melt table's T at the liquidus (P, S_liq(P)), by
    bilinear interpolation; NaN where the boundary leaves the table's grid.
    """
    return {
        "solidus": _boundary_temperature(tables.solidus, tables.solid),
        "liquidus": _boundary_temperature(tables.liquidus, tables.melt),
    }


def property_maps(phase: PhaseTable) -> dict[str, np.ndarray]:
    """The mapped quantities of one phase, each (NS, NP), in plotting units: ``T`` [K],
    ``rho`` [kg m-3], ``cp`` [J kg-1 K-1], ``alpha`` [K-1] (computed as
    (dT/dP)_S rho c_p / T when the table has none) and ``dTdP`` = (dT/dP)_S [K GPa-1]."""
    T, rho, cp, dTdPs = (np.asarray(getattr(phase, k), float) for k in ("T", "rho", "cp", "dTdPs"))
    alpha = np.asarray(phase.alpha, float) if phase.alpha is not None else dTdPs * rho * cp / T
    return {"T": T, "rho": rho, "cp": cp, "alpha": alpha, "dTdP": dTdPs * _GPA}


def _load(source: Any, out_png: Any) -> tuple[EOSTables, Path, str]:
    if isinstance(source, EOSTables):
        if out_png is None:
            raise AragogError("plot_table_set: out_png is required when plotting an EOSTables object "
                              "(there is no directory to write eos.png into)")
        return source, Path(out_png), "EOS tables"
    if isinstance(source, (str, os.PathLike)):
        directory = Path(source)
        tables = load_table_set(directory)
        out = Path(out_png) if out_png is not None else directory / "eos.png"
        return tables, out, f"EOS tables: {directory.resolve().name or directory}"
    raise TypeError(f"plot_table_set: expected an EOSTables or a directory, got {type(source).__name__}")


def _covered_interval(P: np.ndarray, T: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """T(P) on ``grid``, linear between the finite points, NaN outside their P range."""
    ok = np.isfinite(T)
    if ok.sum() < 2:
        return np.full(grid.shape, np.nan)
    out = np.interp(grid, P[ok], T[ok])
    return np.where((grid >= P[ok][0]) & (grid <= P[ok][-1]), out, np.nan)


def _draw_PT(ax: Any, tables: EOSTables) -> None:
    curves = melting_curves_PT(tables)
    grid = np.union1d(curves["solidus"][0], curves["liquidus"][0])
    T_sol = _covered_interval(*curves["solidus"], grid)
    T_liq = _covered_interval(*curves["liquidus"], grid)
    both = np.isfinite(T_sol) & np.isfinite(T_liq)
    ax.fill_between(grid / _GPA, T_sol, T_liq, where=both, color="#e8a33d", alpha=0.3, lw=0,
                    label="melting interval")
    for name, colour in (("liquidus", _C_LIQUIDUS), ("solidus", _C_SOLIDUS)):
        P, T = curves[name]
        ax.plot(P / _GPA, T, color=colour, lw=2.0, label=name)
    ax.set_title("Phase diagram, P-T", loc="left")
    ax.set_xlabel("pressure (GPa)")
    ax.set_ylabel("temperature (K)")
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left")


def _draw_PS(ax: Any, tables: EOSTables) -> None:
    for name in ("melt", "solid"):
        phase = getattr(tables, name)
        P, S = np.asarray(phase.P) / _GPA, np.asarray(phase.S)
        ax.fill_between([P[0], P[-1]], S[0], S[-1], color=_C_PHASE[name], alpha=0.12, lw=0,
                        label=f"{name} table S range")
        ax.hlines([S[0], S[-1]], P[0], P[-1], colors=_C_PHASE[name], lw=0.8, ls=":")
    _overlay_boundaries(ax, tables, colour_by_name=True)
    ax.set_title("Phase diagram, P-S", loc="left")
    ax.set_xlabel("pressure (GPa)")
    ax.set_ylabel("entropy (J kg$^{-1}$ K$^{-1}$)")
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", ncol=2)


def _overlay_boundaries(ax: Any, tables: EOSTables, colour_by_name: bool = False) -> None:
    for name, ls in (("liquidus", "-"), ("solidus", "--")):
        b = getattr(tables, name)
        colour = (_C_LIQUIDUS if name == "liquidus" else _C_SOLIDUS) if colour_by_name else "white"
        ax.plot(np.asarray(b.P) / _GPA, np.asarray(b.S), color=colour, lw=2.0 if colour_by_name else 1.3,
                ls=ls, label=name)


def _draw_maps(fig: Any, axes: list[Any], tables: EOSTables, phase_name: str) -> None:
    phase = getattr(tables, phase_name)
    P, S = np.asarray(phase.P) / _GPA, np.asarray(phase.S)
    maps = property_maps(phase)
    for ax, (key, title, unit, cmap) in zip(axes, _MAPS):
        mesh = ax.pcolormesh(P, S, maps[key], shading="nearest", cmap=cmap, rasterized=True)
        fig.colorbar(mesh, ax=ax, pad=0.02).set_label(unit)
        _overlay_boundaries(ax, tables)
        ax.set_xlim(P[0], P[-1])
        ax.set_ylim(S[0], S[-1])
        ax.set_title(f"{phase_name}: {title}", loc="left")
        ax.set_xlabel("P (GPa)")
        ax.set_ylabel("S (J kg$^{-1}$ K$^{-1}$)")
    axes[0].legend(loc="lower right", labelcolor="white", fontsize=8)


def _draw(fig: Any, tables: EOSTables, label: str) -> None:
    n_maps = len(_MAPS)
    grid = fig.add_gridspec(3, 2 * n_maps)
    _draw_PT(fig.add_subplot(grid[0, :n_maps]), tables)
    _draw_PS(fig.add_subplot(grid[0, n_maps:]), tables)
    for row, phase_name in ((1, "melt"), (2, "solid")):
        axes = [fig.add_subplot(grid[row, 2 * k:2 * k + 2]) for k in range(n_maps)]
        _draw_maps(fig, axes, tables, phase_name)
    fig.suptitle(f"{label}  \u00b7  {tables.summary()}", fontsize=13)


def plot_table_set(source: EOSTables | str | os.PathLike, out_png: str | os.PathLike | None = None,
                   *, dpi: int = 120) -> Path:
    """Draw the overview of an EOS table set and write it as a PNG, atomically.

    Parameters
    ----------
    source : directory of SPIDER-format tables, or an :class:`~aragog.eos.EOSTables`
    out_png : path, optional
        Where to write the figure. Default ``<source>/eos.png`` (required for an EOSTables).
    dpi : int
        Resolution (the figure is 22 x 13 inches).

    Returns
    -------
    The path of the PNG written.

    Raises
    ------
    AragogError
        The tables cannot be read (:class:`~aragog.errors.EOSError`), matplotlib is not
        installed, out_png is missing for an EOSTables, or the PNG cannot be written.
    """
    tables, out, label = _load(source, out_png)
    return write_png(out, "EOS plot", (22.0, 13.0), lambda fig: _draw(fig, tables, label), style=_STYLE, dpi=dpi)
