"""``aragog.parser`` (upstream path): the upstream aragog's parameter classes.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.parser` (the upstream layer, docs/compat.md)."""

from aragog._compat.parser import (
    Parameters,
    _BoundaryConditionsParameters,
    _EnergyParameters,
    _InitialConditionParameters,
    _MeshParameters,
    _PhaseMixedParameters,
    _PhaseParameters,
    _Radionuclide,
    _SolverParameters,
)

__all__ = [
    "Parameters",
    "_BoundaryConditionsParameters",
    "_EnergyParameters",
    "_InitialConditionParameters",
    "_MeshParameters",
    "_PhaseMixedParameters",
    "_PhaseParameters",
    "_Radionuclide",
    "_SolverParameters",
]
