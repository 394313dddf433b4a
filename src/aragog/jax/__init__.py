"""The upstream aragog's ``aragog.jax`` package: the records PROTEUS's JAX factory builds.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.jax_records` (the upstream layer, docs/compat.md)."""

from aragog._compat.jax_records import NonDimScales, PhaseParams, MeshArrays, BoundaryParams, EntropyEOS_JAX

__all__ = ["NonDimScales", "PhaseParams", "MeshArrays", "BoundaryParams", "EntropyEOS_JAX"]
