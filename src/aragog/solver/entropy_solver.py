"""The upstream's ``aragog.solver.entropy_solver`` import path: PROTEUS imports
``EXTRA_STATE_SLOTS`` from it. Names only; they live in :mod:`aragog.solver._upstream`."""

from __future__ import annotations

from aragog.solver._output import SolverOutput
from aragog.solver._upstream import EXTRA_STATE_SLOTS, EntropySolver

__all__ = ["EXTRA_STATE_SLOTS", "EntropySolver", "SolverOutput"]
