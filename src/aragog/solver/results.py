"""From the integrator's states to what a user reads: :class:`SolverOutput` fields and the
run history written to netCDF (used by :class:`aragog.solver.EntropySolver`)."""

from __future__ import annotations

import numpy as np

from aragog.solver.output import BASIC_FIELDS, SCALAR_FIELDS, STAGGERED_FIELDS

__all__ = ["output_fields", "run_history"]


def output_fields(d, inputs, options) -> dict:
    """The :class:`SolverOutput` fields of one state from its physics ``Diagnostics`` ``d``
    and the inputs it was evaluated with (profiles as NumPy arrays, scalars as floats)."""
    mesh = inputs.mesh
    return {
        "r_stag": np.asarray(mesh.r_stag), "P_stag": np.asarray(mesh.P_stag), "S_final": d.S, "T_stag": d.T,
        "phi_stag": d.phi, "rho_stag": d.rho, "visc_stag": d.visc, "mass_stag": np.asarray(mesh.mass_stag),
        "heating": d.H, "r_basic": np.asarray(mesh.r_basic), "heat_flux": d.heat_flux, "jcond_b": d.jcond,
        "jconv_b": d.jconv, "jgrav_b": d.jgrav, "jmix_b": d.jmix, "T_basic": d.T_basic, "phi_basic": d.phi_basic,
        "T_magma": float(d.T_surface), "T_core": float(d.T_core), "Phi_global": float(d.Phi_global),
        "M_mantle": float(d.M_mantle), "M_mantle_liquid": float(d.M_liquid), "M_mantle_solid": float(d.M_solid),
        "F_cmb": float(d.F_cmb), "F_surface": float(d.F_surface), "Q_radio_total": float(d.Q_radio_total),
        "Q_tidal_total": float(d.Q_tidal_total), "E_th": float(d.E_th), "RF_depth": float(d.RF_depth),
        "dSdr_cmb": float(d.dSdr_cmb) if options.energy_balance else None,
        "dSdr_b": d.energy.dSdr_basic, "eddy_diff": d.energy.eddy_diff, "cp_basic": d.energy.cp_basic,
        "rho_basic": d.energy.rho_basic, "Phi_global_vol": float(d.energy.Phi_global_vol),
        "Cp_eff": float(d.energy.Cp_eff),
    }


def run_history(records, bind, options, energy, params, last: dict, integrator: str):
    """An :class:`aragog.io.RunHistory` of ``records`` (the solver's ``(t, y, inputs)`` per
    solve); ``bind(inputs)`` gives the programs bound to those inputs, ``energy`` the
    solver's :class:`aragog.solver.budget.EnergyBook`, ``last`` the last solve's status."""
    from aragog import __version__
    from aragog.config import to_toml
    from aragog.io import RunHistory, select_snapshots

    rows = []
    for t_arr, y_arr, inp in records:
        bound = bind(inp)
        for t, y in zip(t_arr, y_arr):
            rows.append((float(t), bound.call("diagnostics", float(t), y), inp))
    times = np.array([r[0] for r in rows])
    outs = [output_fields(d, inp, options) for _, d, inp in rows]
    for o, (_, d, inp) in zip(outs, rows):
        o.update(energy.state_fields(d, inp, options))
    scalars = {k: np.array([o[k] for o in outs]) for k in SCALAR_FIELDS if outs[0].get(k) is not None}
    scalars.update(energy.history_fields(rows, len(records[-1][0]), options))
    snap = select_snapshots(times, int(params.output.snapshots))
    profiles = {k: np.stack([outs[i][k] for i in snap]) for k in STAGGERED_FIELDS + BASIC_FIELDS}
    mesh = records[-1][2].mesh
    attrs = {
        "aragog_version": __version__,
        "integrator": integrator,
        "status": int(last.get("status", 0)),
        "message": str(last.get("message", "")),
        "config": to_toml(params),
    }
    return RunHistory(time=times, scalars=scalars, snapshot_time=times[snap], profiles=profiles,
                      r_stag=np.asarray(mesh.r_stag), r_basic=np.asarray(mesh.r_basic), attrs=attrs)
