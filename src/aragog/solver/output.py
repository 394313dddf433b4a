"""What a solve returns: :class:`SolverOutput`, and the per-field units and long names.

``SolverOutput`` is the state at the end of a solve (profiles and scalars) plus the solve's
status, message and integrator counters. The time series of a solve (every output time)
is kept by the solver and written by :func:`aragog.io.write_netcdf`; the metadata below
(:data:`FIELD_META`) gives every variable its units and CF-style long name.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

__all__ = ["SolverOutput", "FieldMeta", "FIELD_META", "STAGGERED_FIELDS", "BASIC_FIELDS", "SCALAR_FIELDS"]


class FieldMeta(NamedTuple):
    """Where a field lives (``"staggered"``, ``"basic"`` or ``"scalar"``), units, long name."""

    dim: str
    units: str
    long_name: str


FIELD_META: dict[str, FieldMeta] = {
    # staggered nodes (cells), shape (N,)
    "r_stag": FieldMeta("staggered", "m", "radius of the cell centres"),
    "P_stag": FieldMeta("staggered", "Pa", "pressure at the cell centres"),
    "S_final": FieldMeta("staggered", "J kg-1 K-1", "specific entropy of the cells"),
    "T_stag": FieldMeta("staggered", "K", "temperature of the cells"),
    "phi_stag": FieldMeta("staggered", "1", "melt fraction (mass) of the cells"),
    "rho_stag": FieldMeta("staggered", "kg m-3", "density of the cells"),
    "visc_stag": FieldMeta("staggered", "Pa s", "dynamic viscosity of the cells"),
    "mass_stag": FieldMeta("staggered", "kg", "mass of the cells"),
    "heating": FieldMeta("staggered", "W kg-1", "internal heating (radiogenic + tidal)"),
    # basic nodes (cell boundaries), shape (N+1,)
    "r_basic": FieldMeta("basic", "m", "radius of the cell boundaries"),
    "heat_flux": FieldMeta("basic", "W m-2", "total outward heat flux"),
    "jcond_b": FieldMeta("basic", "W m-2", "conductive heat flux"),
    "jconv_b": FieldMeta("basic", "W m-2", "convective heat flux"),
    "jgrav_b": FieldMeta("basic", "W m-2", "heat flux of gravitational melt-solid separation"),
    "jmix_b": FieldMeta("basic", "W m-2", "heat flux of convective mixing"),
    "T_basic": FieldMeta("basic", "K", "temperature at the cell boundaries"),
    "phi_basic": FieldMeta("basic", "1", "melt fraction at the cell boundaries"),
    "dSdr_b": FieldMeta("basic", "J kg-1 K-1 m-1", "radial entropy gradient at the cell boundaries"),
    "eddy_diff": FieldMeta("basic", "m2 s-1", "thermal eddy diffusivity of the convective flux"),
    "cp_basic": FieldMeta("basic", "J kg-1 K-1", "heat capacity at the cell boundaries"),
    "rho_basic": FieldMeta("basic", "kg m-3", "density (EOS) at the cell boundaries"),
    # scalars
    "T_magma": FieldMeta("scalar", "K", "surface (magma ocean) temperature"),
    "T_core": FieldMeta("scalar", "K", "mean core temperature"),
    "Phi_global": FieldMeta("scalar", "1", "mass-weighted mantle melt fraction"),
    "M_mantle": FieldMeta("scalar", "kg", "mantle mass"),
    "M_mantle_liquid": FieldMeta("scalar", "kg", "molten mantle mass"),
    "M_mantle_solid": FieldMeta("scalar", "kg", "solid mantle mass"),
    "F_cmb": FieldMeta("scalar", "W m-2", "heat flux at the core-mantle boundary"),
    "F_surface": FieldMeta("scalar", "W m-2", "heat flux at the surface"),
    "Q_radio_total": FieldMeta("scalar", "W", "total radiogenic heating power"),
    "Q_tidal_total": FieldMeta("scalar", "W", "total tidal heating power"),
    "E_th": FieldMeta("scalar", "J", "thermal energy of the mantle"),
    "RF_depth": FieldMeta("scalar", "1", "depth of the rheological front (fraction of mantle depth)"),
    "dSdr_cmb": FieldMeta("scalar", "J kg-1 K-1 m-1", "entropy gradient at the core-mantle boundary"),
    # energy budget (aragog.solver.budget, aragog.physics.energetics / heat_content)
    "Phi_global_vol": FieldMeta("scalar", "1", "volume-weighted mantle melt (volume) fraction"),
    "Cp_eff": FieldMeta("scalar", "J kg-1 K-1", "effective heat capacity: EOS-mass-weighted c_p over the mantle mass"),
    "E_state": FieldMeta("scalar", "J", "mantle enthalpy sum(rho V h(P, S)) (EOS; table-corner anchor)"),
    "E_state_cons": FieldMeta("scalar", "J", "mantle enthalpy sum(m h(P, S)) with the structural cell mass"),
    "step_dE_F_int_J": FieldMeta("scalar", "J", "surface boundary energy over the solve, -int F_surface A dt"),
    "step_dE_F_cmb_J": FieldMeta("scalar", "J", "core-mantle boundary energy over the solve, int F_cmb A dt"),
    "step_dE_Q_radio_J": FieldMeta("scalar", "J", "radiogenic energy over the solve (EOS cell mass)"),
    "step_dE_Q_tidal_J": FieldMeta("scalar", "J", "tidal energy over the solve (EOS cell mass)"),
    "step_dE_Q_radio_cons_J": FieldMeta("scalar", "J", "radiogenic energy over the solve (structural cell mass)"),
    "step_dE_Q_tidal_cons_J": FieldMeta("scalar", "J", "tidal energy over the solve (structural cell mass)"),
    "step_solver_residual_J": FieldMeta("scalar", "J", "energy residual of the discrete entropy equation over the solve"),
    "step_dE_compression_J": FieldMeta("scalar", "J", "adiabatic compression work of the structure change before the solve"),
    "step_dE_state_heat_J": FieldMeta("scalar", "J", "heat content change over the solve, sum V int rho T dS"),
}

STAGGERED_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "staggered")
BASIC_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "basic")
SCALAR_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "scalar")


@dataclasses.dataclass
class SolverOutput:
    """The state at the end of a solve, with its status (docs/design.md, "Public interface").

    Times in years; everything else SI (units in :data:`FIELD_META`). ``status``: 0 the end
    time was reached, 1 stopped early by an event (``dt_actual`` < the requested window),
    < 0 a failure described by ``message``. ``integrator``: the integrator that actually ran
    ("cvode", "scipy-bdf", "scipy-radau").
    """

    time: float
    status: int
    message: str
    dt_actual: float
    # staggered (N,)
    r_stag: np.ndarray
    P_stag: np.ndarray
    S_final: np.ndarray
    T_stag: np.ndarray
    phi_stag: np.ndarray
    rho_stag: np.ndarray
    visc_stag: np.ndarray
    mass_stag: np.ndarray
    heating: np.ndarray
    # basic (N+1,)
    r_basic: np.ndarray
    heat_flux: np.ndarray
    jcond_b: np.ndarray
    jconv_b: np.ndarray
    jgrav_b: np.ndarray
    jmix_b: np.ndarray
    T_basic: np.ndarray
    phi_basic: np.ndarray
    # scalars
    T_magma: float
    T_core: float
    Phi_global: float
    M_mantle: float
    M_mantle_liquid: float
    M_mantle_solid: float
    F_cmb: float
    F_surface: float
    Q_radio_total: float
    Q_tidal_total: float
    E_th: float
    RF_depth: float
    dSdr_cmb: float | None
    # integrator
    nfev: int
    njev: int
    nsteps: int
    integrator: str
    wall_seconds: float = 0.0
    # energy budget (docs/output.md "Energy budget"; aragog.solver.budget): basic (N+1,)
    dSdr_b: np.ndarray | None = None
    eddy_diff: np.ndarray | None = None
    cp_basic: np.ndarray | None = None
    rho_basic: np.ndarray | None = None
    # scalars [J] unless stated; step_*: over the solve window, positive into the mantle
    Phi_global_vol: float = float("nan")  # [1]
    Cp_eff: float = float("nan")  # [J/kg/K]
    # energy budget: None unless get_state(energy_budget=True)
    E_state: float | None = None
    E_state_cons: float | None = None
    step_dE_F_int_J: float | None = None
    step_dE_F_cmb_J: float | None = None
    step_dE_Q_radio_J: float | None = None
    step_dE_Q_tidal_J: float | None = None
    step_dE_Q_radio_cons_J: float | None = None
    step_dE_Q_tidal_cons_J: float | None = None
    step_solver_residual_J: float | None = None
    step_dE_compression_J: float | None = None
    step_dE_state_heat_J: float | None = None
