"""The compiled programs: what compiles, shares, stores and counts the solver's XLA programs.

One room for the machinery behind :class:`Programs`, what the solver asks of its compiled
programs in either compile mode (``_protocol.py``):

- the fused pair (``_jitpair.py``): :class:`JitPair`, ahead-of-time compiled right-hand
  side, Jacobian and extra programs of ``(t, y, args)``, and :class:`BoundPair`, one
  ``args`` bound, the integrator's callback object; the pieces it is built from: the
  Jacobians (``_jacobian.py``, band storage ``_band.py``), CVODE's Newton solve of a step
  as one program (``_corrector.py``) and how the args travel into a program
  (``_packing.py``);
- the blocks of compile_mode "blocks" (``_blocks.py``): :class:`BlockPrograms`;
- the share in memory (``_shared.py``): programs shared by the solvers of one process
  (:func:`clear_shared_programs`, :func:`clear_caches`, :func:`compiled_program`);
- the store on disk (``_disk_cache.py``): the persistent compilation cache directory,
  aragog's executable store (:func:`configure_compilation_cache`,
  :func:`programs_in_cache`);
- the counters (``_counters.py``): :class:`ProgramStats` of one program and
  :func:`compile_stats` of them all; the kernels of a compiled program
  (``_kernels.py``: :func:`kernel_counts`).

Which programs the solver compiles in the fused mode (their bodies, XLA options) is the
solver's (:mod:`aragog.solver._fused_programs`); this room sits below it and above
:mod:`aragog.physics` (docs/design.md, "Layers"). Nothing here loads JAX on import: the
names import their module on first use, and the integrator back ends import the band
storage from here without JAX.
"""

from __future__ import annotations

from aragog._lazy import lazy_names

__all__ = [
    "Programs", "JitPair", "BoundPair", "BlockPrograms", "ProgramStats", "compile_stats", "kernel_counts",
    "compiled_program", "clear_shared_programs", "clear_caches", "configure_compilation_cache", "programs_in_cache",
]

_LAZY = {
    "Programs": "aragog.programs._protocol",
    "JitPair": "aragog.programs._jitpair",
    "BoundPair": "aragog.programs._jitpair",
    "BlockPrograms": "aragog.programs._blocks",
    "ProgramStats": "aragog.programs._counters",
    "compile_stats": "aragog.programs._counters",
    "kernel_counts": "aragog.programs._kernels",
    "compiled_program": "aragog.programs._shared",
    "clear_shared_programs": "aragog.programs._shared",
    "clear_caches": "aragog.programs._shared",
    "configure_compilation_cache": "aragog.programs._disk_cache",
    "programs_in_cache": "aragog.programs._disk_cache",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
