"""The upstream aragog's interface (PyPI ``fwl-aragog``), as PROTEUS uses it.

One room for every name that exists only because the upstream has it: its parameter
classes (:mod:`.parser`), ``derive_core_density_from_mesh`` (:mod:`.mesh`), its solver
interface (:mod:`.solver`: ``EntropySolver`` built from upstream parameters, an object that
holds a native solver) and its JAX CVODE factory (:mod:`.jax_records`, :mod:`.cvode_jax`).
Each is a thin adapter over this package's public API: no second physics, solver or compile
path, no private module or attribute of another room (tests/test_upstream_adapters.py).
The upstream's ``EntropyEOS`` lives in the eos room, at its import path
``aragog.eos.entropy``.

Code written for the upstream imports these names from the upstream's paths
(``aragog.parser``, ``aragog.mesh``, ``aragog.jax.*``, ``aragog.solver.entropy_solver``,
``aragog.solver.cvode_jax``): thin modules there re-export them from here, and hold nothing
else (tests/test_imports.py checks it). The differences in meaning are listed in
docs/compat.md.
"""
