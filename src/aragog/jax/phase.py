"""``aragog.jax.phase`` (upstream path): ``PhaseParams`` and ``MeshArrays``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.jax_records` (the upstream layer, docs/compat.md)."""

from aragog._compat.jax_records import PhaseParams, MeshArrays

__all__ = ["PhaseParams", "MeshArrays"]
