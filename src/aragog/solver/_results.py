"""From the integrator's states to what a user reads: the :class:`SolverOutput` fields of
one state and the record of the last solve (used by :class:`aragog.solver.EntropySolver`;
the rows of the run history, which :mod:`aragog.solver._history` assembles)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LastSolve", "output_fields", "history_rows", "split_state", "join_state", "state_key"]


@dataclass(frozen=True, eq=False)
class LastSolve:
    """What the last :meth:`EntropySolver.solve` ended with (read-only).

    Attributes:
        status: the back end's status (< 0: the solve failed).
        message: its message.
        t0: the start of the time window [yr].
        t_final: the time the integrator reached [yr].
        y: the integrator's state vector at ``t_final`` (nondimensional; ``None`` before a solve).
        result: the back end's ``IntegrationResult`` (``None`` for an empty time window).
        wall: wall-clock seconds of the solve.
    """

    status: int
    message: str
    t0: float
    t_final: float
    y: np.ndarray | None = None
    result: Any = None
    wall: float = 0.0

    @classmethod
    def not_integrated(cls, t: float) -> "LastSolve":
        """The record of a solver that has not solved since :meth:`initialize` (state at ``t`` [yr])."""
        return cls(status=0, message="not integrated yet", t0=t, t_final=t)


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


def history_rows(records, bind, options, energy) -> tuple[np.ndarray, list[dict], dict]:
    """``(times, outputs, step_scalars)`` of the solver's ``records`` (a
    :class:`~aragog.solver._records.SolveRecords`: ``(t, y, inputs)`` per solve, oldest
    first): every output time [yr], the :class:`SolverOutput` fields and
    energy state fields at each (:func:`output_fields`), and the energy step fields as time
    series. ``bind(inputs)`` gives the programs bound to those inputs, ``energy`` is the
    solver's :class:`aragog.solver._budget.EnergyBook`. :func:`aragog.solver._history.run_history`
    makes a run history of them."""
    rows = []
    bound, bound_inp = None, None
    for t_arr, y_arr, inp in records.solves():
        if inp is not bound_inp:  # solves with the same inputs object share one binding
            bound, bound_inp = bind(inp), inp
        for t, y in zip(t_arr, y_arr):
            rows.append((float(t), bound.call("diagnostics", float(t), y), inp))
    outputs = [output_fields(d, inp, options) for _, d, inp in rows]
    for o, (_, d, inp) in zip(outputs, rows):
        o.update(energy.state_fields(d, inp, options))
    steps = energy.history_fields(rows, len(records.latest[0]), options)
    return np.array([r[0] for r in rows]), outputs, steps


def split_state(y, scales, options) -> tuple[np.ndarray, float | None]:
    """``(S [J/kg/K] per cell, slot)`` of the integrator's nondimensional state ``y``: the
    slot is dS/dr at the CMB [J/kg/K/m] with the energy balance, T_core [K] with
    core_bc "bower2018" (``options.core_temperature_slot``), else ``None``."""
    if options.energy_balance:
        return np.asarray(y[1:]) * float(scales.S), float(y[0]) * float(scales.dSdr)
    if options.core_temperature_slot:
        return np.asarray(y[1:]) * float(scales.S), float(y[0]) * float(scales.T)
    return np.asarray(y) * float(scales.S), None


def join_state(S, slot, scales, options) -> np.ndarray:
    """The integrator's nondimensional state of the cell entropies ``S`` [J/kg/K] and the
    ``slot`` (ignored when ``options`` have none): the inverse of :func:`split_state`."""
    y = np.asarray(S) / float(scales.S)
    if options.energy_balance:
        return np.concatenate([[slot / float(scales.dSdr)], y])
    if options.core_temperature_slot:
        return np.concatenate([[slot / float(scales.T)], y])
    return y


def state_key(scales, options, dSdr_cmb, T_core) -> tuple:
    """What, besides the entropy, maps a state to the integrator's vector (:func:`join_state`)."""
    return (float(scales.S), float(scales.dSdr), float(scales.T), bool(options.energy_balance),
            bool(options.core_temperature_slot), dSdr_cmb, T_core)
