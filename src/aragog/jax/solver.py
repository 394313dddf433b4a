"""``BoundaryParams`` (upstream name): boundary values as PROTEUS passes them to the factory."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BoundaryParams"]


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
