"""``aragog.mesh`` (upstream path): ``derive_core_density_from_mesh``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.mesh` (the upstream layer, docs/compat.md)."""

from aragog._compat.mesh import derive_core_density_from_mesh

__all__ = ["derive_core_density_from_mesh"]
