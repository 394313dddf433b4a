"""The upstream aragog's ``aragog.jax`` names that PROTEUS's JAX CVODE factory imports.

PROTEUS (``backend = "jax"``) builds parameter records with these names and asks
:func:`aragog.solver.cvode_jax.build_jax_rhs_and_jacobian` for CVODE callbacks. In this
package the right-hand side and its analytic Jacobian are always the solver's own
compiled programs, so the records here only carry values (checked against the solver's
parameters) and the callbacks resolve to those programs: nothing is traced or compiled
for them. See ``docs/compat.md``.

Modules: :mod:`.nondim` (``NonDimScales``), :mod:`.phase` (``PhaseParams``,
``MeshArrays``), :mod:`.solver` (``BoundaryParams``), :mod:`.eos` (``EntropyEOS_JAX``).
"""
