"""What a solve of given parameters runs on, derived from them: :func:`derive`, the one
derivation that the solver, ``aragog validate``'s probe and the validation share. The
two expensive parts can be cached (one :class:`DerivedInputs` per solver): the mesh
(rebuilt when a ``[mesh]`` value or the structure file's content changes, 2-3 ms) and
the EOS data (reloaded when the table source or the constant properties change)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

from aragog import eos, structure
from aragog.eos._packed import packed_tables
from aragog.solver import _from_config

__all__ = ["Derived", "DerivedInputs", "derive"]

#: the constant-property keys of ``[phase_mixed]`` that select the EOS data
_CONSTANT_KEYS = ("const_rho", "const_Cp", "const_alpha", "const_cond", "const_log10visc", "const_T_ref",
                  "const_S_ref")


class Derived(NamedTuple):
    """What a solve of some parameters runs on.

    Attributes:
        mode: ``solver.compile_mode`` ("fused" or "blocks").
        options: :class:`aragog.physics.PhysicsOptions` (static).
        mesh: :class:`aragog.structure.Mesh`.
        inputs: :class:`aragog.physics.PhysicsInputs` (traced; the EOS as packed tables or
            constant properties).
        key: the static key, ``(mode, static_key)``: it selects the compiled programs.
    """

    mode: str
    options: Any
    mesh: Any
    inputs: Any
    key: tuple


def derive(params, eos_dir=None, *, mesh=None, cache: DerivedInputs | None = None) -> Derived:
    """Everything a solve of validated ``params`` runs on (:class:`Derived`).

    Args:
        params: validated :class:`aragog.config.Config`.
        eos_dir: an EOS table directory overriding ``params.eos.dir`` (``--eos-dir``).
        mesh: the mesh of ``params.mesh`` if already built (else built here).
        cache: a :class:`DerivedInputs` that keeps the mesh and EOS data between calls.
    """
    cache = DerivedInputs() if cache is None else cache
    mode = params.solver.compile_mode
    options = _from_config.physics_options(params)
    mesh = cache.mesh(params) if mesh is None else mesh
    eos_data = cache.eos(params, eos_dir, mesh)
    inputs = _from_config.physics_inputs(params, mesh, eos_data)
    return Derived(mode, options, mesh, inputs, (mode, _from_config.static_key(options, inputs, eos_data)))


class DerivedInputs:
    """The mesh and EOS data of the last parameters seen (one of each is kept): the cache
    of :func:`derive`."""

    def __init__(self):
        self._mesh: tuple | None = None  # (key, Mesh)
        self._eos: tuple | None = None  # (key, PackedEOS in JAX arrays or ConstantParams)

    def mesh(self, params):
        """The :class:`~aragog.structure.Mesh` of ``params.mesh``."""
        key = repr(params.mesh)
        if params.mesh.eos_method == 2:
            try:
                key += hashlib.sha256(Path(params.mesh.eos_file).read_bytes()).hexdigest()
            except OSError:
                pass  # mesh_from_params reports the missing file
        if self._mesh is None or self._mesh[0] != key:
            self._mesh = (key, structure.mesh_from_params(params.mesh))
        return self._mesh[1]

    def eos(self, params, eos_dir=None, mesh=None):
        """The EOS data of ``params`` (``eos_dir`` overrides ``params.eos.dir``): the packed
        tables in the evaluator's layout (:mod:`aragog.eos._packed`), generated to cover
        ``mesh``'s pressures when they are the bundled model's, or the constant properties."""
        pm = params.phase_mixed
        directory = eos_dir or params.eos.dir
        generated = not (pm.const_properties or directory) and mesh is not None
        key = (pm.const_properties, directory, params.eos.model, tuple(getattr(pm, k) for k in _CONSTANT_KEYS),
               _from_config.generated_range(params, mesh) if generated else None)
        if self._eos is None or self._eos[0] != key:
            data = _from_config.load_tables(params, eos_dir, mesh)
            if not isinstance(data, eos.ConstantParams):
                data = packed_tables(data).to_jax()
            self._eos = (key, data)
        return self._eos[1]
