"""``aragog.eos.entropy`` (upstream path): the upstream aragog's ``EntropyEOS``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.entropy_eos` (the upstream layer, docs/compat.md)."""

from aragog._compat.entropy_eos import EntropyEOS

__all__ = ["EntropyEOS"]
