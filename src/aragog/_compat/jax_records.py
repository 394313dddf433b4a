"""The value records of the upstream's ``aragog.jax`` that PROTEUS's JAX CVODE factory builds.

PROTEUS (``backend = "jax"``) builds these records and asks
:func:`aragog._compat.cvode_jax.build_jax_rhs_and_jacobian` (``aragog.solver.cvode_jax``)
for CVODE callbacks. In this package the right-hand side and its analytic Jacobian are
always the solver's own compiled programs, so the records only carry values (checked
against the solver's parameters) and nothing is traced or compiled for them
(docs/compat.md). Import paths: ``aragog.jax.nondim`` (:class:`NonDimScales`),
``aragog.jax.phase`` (:class:`PhaseParams`, :class:`MeshArrays`), ``aragog.jax.solver``
(:class:`BoundaryParams`), ``aragog.jax.eos`` (:class:`EntropyEOS_JAX`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["NonDimScales", "PhaseParams", "MeshArrays", "BoundaryParams", "EntropyEOS_JAX"]


@dataclass(frozen=True)
class NonDimScales:
    """Scales of the integrated state: physical = ``state_offset + state_scale * y``, time
    [yr] = ``t_ref * t_nd``; ``rhs_scale = t_ref / state_scale`` (per component, as upstream).

    Attributes:
        state_scale: (n_state,) scale of each state component (J/kg/K for entropy,
            J/kg/K/m for a CMB gradient slot, K for a core temperature).
        state_offset: (n_state,) offsets (zero here).
        t_ref: time scale [yr] (1 here: this package integrates in years).
    """

    state_scale: np.ndarray
    state_offset: np.ndarray
    t_ref: float = 1.0
    _solver: object = field(default=None, repr=False, compare=False)

    @property
    def rhs_scale(self) -> np.ndarray:
        return self.t_ref / self.state_scale

    @classmethod
    def for_solver(cls, solver, state_scale) -> NonDimScales:
        """The scales of ``solver`` (kept as a weak reference, so the callbacks built from
        these scales resolve to that solver's compiled programs)."""
        scale = np.asarray(state_scale, dtype=float)
        return cls(state_scale=scale, state_offset=np.zeros_like(scale), t_ref=1.0, _solver=weakref.ref(solver))

    def solver(self):
        """The solver these scales belong to, or ``None``."""
        return None if self._solver is None else self._solver()


@dataclass(frozen=True, kw_only=True)
class PhaseParams:
    """Material and transport settings as PROTEUS passes them (upstream keywords). The
    solver takes these values from its parameters; the record is kept for the record."""

    phi_rheo: float = 0.4
    phi_width: float = 0.15
    viscosity_solid: float = 1e21
    viscosity_liquid: float = 1e2
    grain_size: float = 1e-3
    k_solid: float = 4.0
    k_liquid: float = 4.0
    matprop_smooth_width: float = 0.01
    conduction: bool = True
    convection: bool = True
    grav_sep: bool = True
    mixing: bool = True
    eddy_diff_thermal: float = 1.0
    eddy_diff_chemical: float = 1.0
    kappah_floor: float = 10.0
    bottom_up_grav_sep: bool = True
    phase_smoothing: str = "tanh"
    phase_smoothing_width: float = 0.01
    # PROTEUS 26.10 passes these too; the solver's own settings are the parser's, which
    # warns where a value has no effect here (docs/compat.md).
    separation_viscosity: str = "melt"
    convective_threshold: float = 0.0
    separation_buoyancy: str = "mixture"


@dataclass(frozen=True)
class MeshArrays:
    """The mesh of a solver (``solver.evaluator.mesh``): this package's
    :class:`aragog.structure.Mesh` (SI units, index 0 at the CMB)."""

    mesh: object

    @classmethod
    def from_numpy_mesh(cls, mesh) -> MeshArrays:
        return cls(mesh=mesh)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "mesh"), name)


@dataclass(frozen=True, kw_only=True)
class BoundaryParams:
    """Boundary settings (upstream keywords; SI units). ``inner_bc_type`` 5 is the
    upstream's code for the energy-balance core. The callbacks check the surface values
    against the solver's parameters, so a stale record cannot go unnoticed."""

    outer_bc_type: int = 4
    outer_bc_value: float = 0.0
    emissivity: float = 1.0
    T_eq: float = 0.0
    inner_bc_type: int = 1
    inner_bc_value: float = 0.0
    core_density: float = 0.0
    core_heat_capacity: float = 0.0
    tfac_core_avg: float = 1.147
    cmb_area: float = 0.0
    core_M: float = 0.0
    cmb_dr_cmb: float = 0.0
    param_utbl: bool = False
    param_utbl_const: float = 0.0


class EntropyEOS_JAX:
    """The table directory PROTEUS names for the JAX path. The solver's compiled programs
    already hold the tables (read once per process for its ``EntropyEOS``), so nothing is
    read or compiled here; the directory is only recorded (``""`` is allowed: the
    constant-property mode has no tables)."""

    def __init__(self, eos_dir):
        self.directory = Path(eos_dir).expanduser().resolve() if str(eos_dir) else None

    def __repr__(self) -> str:
        return f"EntropyEOS_JAX({str(self.directory or '')!r})"
