"""``PhaseParams`` and ``MeshArrays`` (upstream names): value records for the JAX factory."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PhaseParams", "MeshArrays"]


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
    :class:`aragog.structure.MeshArrays` (SI units, index 0 at the CMB)."""

    mesh: object

    @classmethod
    def from_numpy_mesh(cls, mesh) -> MeshArrays:
        return cls(mesh=mesh)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "mesh"), name)
