"""``aragog.solver.entropy_solver`` (upstream path): PROTEUS imports ``EXTRA_STATE_SLOTS``.

A thin module at the upstream aragog's import path: the names live in
:mod:`aragog._compat.solver` (the upstream layer, docs/compat.md)."""

from aragog._compat.solver import EXTRA_STATE_SLOTS, EntropySolver, SolverOutput

__all__ = ["EXTRA_STATE_SLOTS", "EntropySolver", "SolverOutput"]
