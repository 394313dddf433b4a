"""What a solve of given parameters runs on, derived from them, with the two expensive
parts cached per solver: the mesh (rebuilt when a ``[mesh]`` value or the structure
file's content changes, 2-3 ms) and the EOS data (reloaded when the table source or the
constant properties change)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from aragog import eos, structure
from aragog.eos._packed import packed_tables
from aragog.solver import _inputs

#: the constant-property keys of ``[phase_mixed]`` that select the EOS data
_CONSTANT_KEYS = ("const_rho", "const_Cp", "const_alpha", "const_cond", "const_log10visc", "const_T_ref",
                  "const_S_ref")


class DerivedInputs:
    """The mesh and EOS data of the last parameters seen (one of each is kept), and
    :meth:`derive`, everything a solve needs from validated parameters."""

    def __init__(self):
        self._mesh: tuple | None = None  # (key, MeshArrays)
        self._eos: tuple | None = None  # (key, PackedEOS in JAX arrays or ConstantParams)

    def mesh(self, params):
        """The :class:`~aragog.structure.MeshArrays` of ``params.mesh``."""
        key = repr(params.mesh)
        if params.mesh.eos_method == 2:
            try:
                key += hashlib.sha256(Path(params.mesh.eos_file).read_bytes()).hexdigest()
            except OSError:
                pass  # mesh_from_params reports the missing file
        if self._mesh is None or self._mesh[0] != key:
            self._mesh = (key, structure.mesh_from_params(params.mesh))
        return self._mesh[1]

    def eos(self, params, eos_dir=None):
        """The EOS data of ``params`` (``eos_dir`` overrides ``params.eos.dir``): the packed
        tables in the evaluator's layout (:mod:`aragog.eos._packed`), or the constant
        properties."""
        pm = params.phase_mixed
        key = (pm.const_properties, eos_dir or params.eos.dir, params.eos.model,
               tuple(getattr(pm, k) for k in _CONSTANT_KEYS))
        if self._eos is None or self._eos[0] != key:
            data = _inputs.load_tables(params, eos_dir)
            if not isinstance(data, eos.ConstantParams):
                data = packed_tables(data).to_jax()
            self._eos = (key, data)
        return self._eos[1]

    def derive(self, params, eos_dir=None) -> tuple:
        """``(compile mode, PhysicsOptions, MeshArrays, PhysicsInputs, static key)`` of
        validated ``params``; the static key selects the compiled programs."""
        mode = params.solver.compile_mode
        options = _inputs.physics_options(params)
        mesh = self.mesh(params)
        eos_data = self.eos(params, eos_dir)
        inputs = _inputs.physics_inputs(params, mesh, eos_data)
        return mode, options, mesh, inputs, (mode, _inputs.static_key(options, inputs, eos_data))
