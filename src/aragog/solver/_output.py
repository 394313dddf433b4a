"""What a solve returns: :class:`SolverOutput`, and the per-field units and long names.

``SolverOutput`` is the state at the end of a solve (profiles and scalars) plus the solve's
status, message and integrator counters. The time series of a solve (every output time)
is kept by the solver and written by :func:`aragog.io.write_netcdf`; the metadata
(:data:`FIELD_META`, from :mod:`aragog.fields`) gives every variable its units and CF-style
long name.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# The field metadata lives in aragog.fields (shared with the structure and aragog.io);
# these names are re-exported here for the solver's callers.
from aragog.fields import BASIC_FIELDS, FIELD_META, SCALAR_FIELDS, STAGGERED_FIELDS, FieldMeta

__all__ = ["SolverOutput", "FieldMeta", "FIELD_META", "STAGGERED_FIELDS", "BASIC_FIELDS", "SCALAR_FIELDS"]


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
    # energy budget (docs/output.md "Energy budget"; aragog.solver._budget): basic (N+1,)
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
