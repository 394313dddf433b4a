"""``aragog.solver.cvode_jax`` (upstream path): ``build_jax_rhs_and_jacobian``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.cvode_jax` (the upstream layer, docs/compat.md)."""

from aragog._compat.cvode_jax import build_jax_rhs_and_jacobian

__all__ = ["build_jax_rhs_and_jacobian"]
