"""The solver: compiled RHS/Jacobian pairs, integrator back ends, and ``EntropySolver``.

``SolverOutput`` and the output field metadata are plain NumPy and import eagerly; the
JAX-heavy parts (``EntropySolver``, ``JitPair``, ``integrate``) import on first use, so
``aragog.io`` can read output metadata without starting JAX.
"""

from __future__ import annotations

from aragog.solver.output import FIELD_META, SolverOutput

__all__ = ["EntropySolver", "SolverOutput", "FIELD_META", "JitPair", "integrate", "SolverStateError"]

_LAZY = {
    "EntropySolver": "aragog.solver.entropy_solver",
    "SolverStateError": "aragog.solver.entropy_solver",
    "JitPair": "aragog.solver.jitpair",
    "integrate": "aragog.solver.backends",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aragog.solver' has no attribute {name!r}")
