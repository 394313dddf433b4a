"""The solver: compiled RHS/Jacobian pairs, integrator back ends, and ``EntropySolver``.

``SolverOutput`` and the output field metadata are plain NumPy and import eagerly; the
JAX-heavy parts (``EntropySolver``, ``JitPair``, ``integrate``) import on first use, so
``aragog.io`` can read output metadata without starting JAX.

``EntropySolver(aragog.parser.Parameters)`` answers with the upstream aragog's interface
(``aragog._compat.solver.UpstreamEntropySolver``), which those parameters name.
"""

from __future__ import annotations

from aragog.solver._output import FIELD_META, SolverOutput

__all__ = [
    "EntropySolver", "SolverOutput", "FIELD_META", "JitPair", "integrate", "SolverStateError", "SolveProgress",
    # records of a solve and of the compiled programs, for benchmarks and profiles
    "LastSolve", "ProgramStats", "compile_stats", "compiled_program", "kernel_counts",
    "clear_shared_programs", "clear_caches", "configure_compilation_cache", "programs_in_cache", "output_times",
    # the EOS tables' edge (docs/physics.md, "Equation of state")
    "STATUS_OUTSIDE_TABLES", "EDGE_BAND", "TableEdge",
]

_LAZY = {
    "EntropySolver": "aragog.solver._entropy_solver",
    "SolverStateError": "aragog.solver._entropy_solver",
    "SolveProgress": "aragog.solver._problems",
    "JitPair": "aragog.solver._jitpair",
    "integrate": "aragog.solver.backends",
    "LastSolve": "aragog.solver._results",
    "ProgramStats": "aragog.solver._jitpair",
    "compile_stats": "aragog.solver._compile_stats",
    "compiled_program": "aragog.solver._shared_programs",
    "clear_shared_programs": "aragog.solver._shared_programs",
    "clear_caches": "aragog.solver._shared_programs",
    "kernel_counts": "aragog.solver._hlo",
    "configure_compilation_cache": "aragog.solver._persistent_cache",
    "programs_in_cache": "aragog.solver._persistent_cache",
    "output_times": "aragog.solver._output_times",
    "STATUS_OUTSIDE_TABLES": "aragog.solver._table_edge",
    "EDGE_BAND": "aragog.solver._table_edge",
    "TableEdge": "aragog.solver._table_edge",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aragog.solver' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
