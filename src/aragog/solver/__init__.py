"""The solver: compiled RHS/Jacobian pairs, integrator back ends, and ``EntropySolver``.

``SolverOutput`` and the output field metadata are plain NumPy and import eagerly; the
JAX-heavy parts (``EntropySolver``, ``JitPair``, ``integrate``) import on first use, so
``aragog.io`` can read output metadata without starting JAX.

``EntropySolver(aragog.parser.Parameters)`` answers with the upstream aragog's interface
(``aragog._compat.solver.UpstreamEntropySolver``), which those parameters name.
"""

from __future__ import annotations

from aragog._lazy import lazy_names
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
    "JitPair": "aragog.programs._jitpair",
    "integrate": "aragog.solver.backends",
    "LastSolve": "aragog.solver._results",
    "ProgramStats": "aragog.programs._counters",
    "compile_stats": "aragog.programs._counters",
    "compiled_program": "aragog.programs._shared",
    "clear_shared_programs": "aragog.programs._shared",
    "clear_caches": "aragog.programs._shared",
    "kernel_counts": "aragog.programs._kernels",
    "configure_compilation_cache": "aragog.programs._disk_cache",
    "programs_in_cache": "aragog.programs._disk_cache",
    "output_times": "aragog.solver._output_times",
    "STATUS_OUTSIDE_TABLES": "aragog.solver._table_edge",
    "EDGE_BAND": "aragog.solver._table_edge",
    "TableEdge": "aragog.solver._table_edge",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
