"""``aragog.jax.eos`` (upstream path): ``EntropyEOS_JAX``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.jax_records` (the upstream layer, docs/compat.md)."""

from aragog._compat.jax_records import EntropyEOS_JAX

__all__ = ["EntropyEOS_JAX"]
