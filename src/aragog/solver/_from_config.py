"""From validated :class:`~aragog.config.Config` to what a solve runs on: the physics'
static options, its traced inputs, the mesh and the EOS data (:func:`derive`, the one
derivation that the solver, ``aragog validate``'s probe and the validation share).

The split is the whole performance idea of docs/design.md ("The performance idea"):
:func:`physics_options` returns the few hashable switches that select which code is
traced; :func:`physics_inputs` returns every number that may change between solves as a
float64 leaf of one pytree, each field copied from the config key of its name. The
:func:`static_key` of the two decides whether a compiled :class:`JitPair` can be reused.
The two expensive parts can be cached (one :class:`DerivedInputs` per solver): the mesh
(rebuilt when a ``[mesh]`` value or the structure file's content changes, 2-3 ms) and the
EOS data (reloaded when the table source or the constant properties change).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from aragog import eos, physics, structure
from aragog._jax import jax
from aragog.eos._packed import packed_tables
from aragog.solver._fused_programs import optimization_level
from aragog.units import SECONDS_PER_YEAR

logger = logging.getLogger("aragog.solver")

#: Entropy scale of the nondimensional state [J/kg/K] (y = S / ENTROPY_SCALE).
ENTROPY_SCALE = 1000.0


def physics_options(params) -> physics.PhysicsOptions:
    """The static switches of a configuration (hashable)."""
    bc, en = params.boundary_conditions, params.energy
    core = {2: "flux", 3: "temperature"}.get(bc.inner_boundary_condition, bc.core_bc)
    return physics.PhysicsOptions(
        conduction=bool(en.conduction),
        convection=bool(en.convection),
        gravitational_separation=bool(en.gravitational_separation),
        mixing=bool(en.mixing),
        radionuclides=bool(en.radionuclides),
        tidal=bool(en.tidal),
        outer_boundary_condition=int(bc.outer_boundary_condition),
        utbl=bool(bc.param_utbl),
        core_bc=core,
        constant_properties=bool(params.phase_mixed.const_properties),
        separation_viscosity=str(params.phase_mixed.separation_viscosity),
    )


def base_pressure(mesh) -> float:
    """The highest pressure [Pa] of a mesh (its nodes and cells): what the EOS tables must cover."""
    return float(max(np.max(np.asarray(mesh.P_basic)), np.max(np.asarray(mesh.P_stag))))


def generated_range(params, mesh) -> tuple[int | None, float | None]:
    """``(np_, pmax)`` of the generated tables of ``params.eos.model`` for ``mesh``: the
    model's defaults, or a pressure axis that reaches the mesh's base pressure
    (:func:`aragog.eos.table_range_for`)."""
    return eos.table_range_for(params.eos.model, base_pressure(mesh))


def load_tables(params, eos_dir: str | Path | None = None, mesh=None):
    """The EOS of a configuration: ``eos.ConstantParams`` in constant-property mode, else the
    table set of ``eos_dir`` (the ``--eos-dir`` override), ``params.eos.dir``, or the bundled
    model, generated to cover ``mesh``'s pressures (the model's default pressure axis when
    ``mesh`` is ``None`` or within it; a warning when the tables reach beyond the pressures
    the model's published fits cover). Table sets are returned as NumPy pytrees (callers
    convert once with ``to_jax``)."""
    pm = params.phase_mixed
    if pm.const_properties:
        return eos.ConstantParams(**_copied(eos.ConstantParams, pm))
    directory = eos_dir or params.eos.dir
    if directory:
        return eos.load_table_set(directory)
    model = params.eos.model  # checked by Config.validate
    np_, pmax = (None, None) if mesh is None else generated_range(params, mesh)
    note = eos.extrapolation_note(model, pmax)
    if note is not None:
        logger.warning("eos.model = %r for a mantle down to %.4g GPa: %s", model, base_pressure(mesh) / 1e9, note)
    return eos.default_table_set(np_, None, model=model, pmax=pmax)


def tidal_per_cell(params, n_cells: int) -> np.ndarray:
    """``energy.tidal_array`` broadcast to one value per cell [W/kg].

    Its length (1 or one per cell) is checked by :meth:`Config.validate
    <aragog.config.Config.validate>`, which every caller runs first.
    """
    tidal = np.asarray(params.energy.tidal_array, dtype=np.float64).ravel()
    return np.array(np.broadcast_to(tidal, (n_cells,)))


def heating_inputs(params, n_cells: int) -> physics.HeatingInputs:
    """Radionuclides of the ``[radionuclide_*]`` sections (SI, seconds) and the tidal array."""
    nuclides = params.radionuclides
    col = lambda name: np.array([getattr(n, name) for n in nuclides], dtype=np.float64)  # noqa: E731
    return physics.HeatingInputs(
        tidal=tidal_per_cell(params, n_cells),
        heat_production=col("heat_production"),
        abundance=col("abundance"),
        concentration=col("concentration"),
        half_life=col("half_life_years") * SECONDS_PER_YEAR,
        t0=col("t0_years") * SECONDS_PER_YEAR,
    )


@functools.lru_cache(maxsize=None)
def _field_names(pytree_class) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(pytree_class))


def _copied(pytree_class, *sections) -> dict:
    """``{field: value}`` for each field of ``pytree_class`` that one of the config
    ``sections`` has as a key of the same name (the first that has it)."""
    out = {}
    for name in _field_names(pytree_class):
        for section in sections:
            if hasattr(section, name):
                out[name] = getattr(section, name)
                break
    return out


def physics_inputs(params, mesh, eos_data) -> physics.PhysicsInputs:
    """Every traced input of the physics, as float64 arrays (NumPy or JAX).

    Args:
        params: validated parameters.
        mesh: ``Mesh`` of the configuration.
        eos_data: ``EOSTables`` (already ``to_jax()``) or ``ConstantParams``.
    """
    bc, en, pm = params.boundary_conditions, params.energy, params.phase_mixed
    liq, sol = params.phase_liquid, params.phase_solid
    material = eos.MaterialParams(
        phase_liquid=eos.PhaseProperties(**_copied(eos.PhaseProperties, liq)),
        phase_solid=eos.PhaseProperties(**_copied(eos.PhaseProperties, sol)),
        **_copied(eos.MaterialParams, pm),
    )
    # the config's keys copied by name (the pytrees' fields are named as the keys)
    transport = physics.TransportInputs(
        **_copied(physics.TransportInputs, pm, en),
        buoyancy_mixture=physics.SEPARATION_BUOYANCY[pm.separation_buoyancy],
    )
    core_value = {2: "cmb_flux", 3: "cmb_temperature"}.get(bc.inner_boundary_condition)
    boundary = physics.BoundaryInputs(
        **_copied(physics.BoundaryInputs, bc),
        # inner_boundary_value in the core mode that reads it (elsewhere the field's default)
        **({} if core_value is None else {core_value: bc.inner_boundary_value}),
    )
    depth = float(mesh.outer_radius) - float(mesh.inner_radius)
    scales = physics.Scales(S=ENTROPY_SCALE, t=SECONDS_PER_YEAR, dSdr=ENTROPY_SCALE / depth)
    inputs = physics.PhysicsInputs(
        mesh=mesh, eos=eos_data, material=material, transport=transport, boundary=boundary,
        heating=heating_inputs(params, int(mesh.r_stag.shape[0])), scales=scales,
    )
    # Host float64 leaves for the small parameters (the JitPair packs and transfers them once
    # per solve); the table arrays are float64 JAX arrays and stay put (the mesh is host arrays).
    return jax.tree_util.tree_map(
        lambda x: x if isinstance(x, jax.Array) else np.asarray(x, dtype=np.float64), inputs
    )


def static_key(options: physics.PhysicsOptions, inputs: physics.PhysicsInputs, eos_data) -> tuple:
    """What a compiled program depends on: the options, the EOS table identity (shapes,
    optional tables, content hash; "constant" in constant-property mode), and the tree
    structure with every leaf's shape and dtype. Any other change is a traced value."""
    leaves, treedef = jax.tree_util.tree_flatten(inputs)
    # dtype objects, not their names: str(dtype) is the slowest step of a coupling reset
    signature = tuple((x.shape, x.dtype) for x in leaves)
    identity = "constant" if isinstance(eos_data, eos.ConstantParams) else eos_data.identity()
    return (options, identity, str(treedef), signature)


class Derived(NamedTuple):
    """What a solve of some parameters runs on.

    Attributes:
        mode: ``solver.compile_mode`` ("fused" or "blocks").
        options: :class:`aragog.physics.PhysicsOptions` (static).
        mesh: :class:`aragog.structure.Mesh`.
        inputs: :class:`aragog.physics.PhysicsInputs` (traced; the EOS as packed tables or
            constant properties).
        key: the static key, ``(mode, static_key, optimization level)``: it selects the
            compiled programs (the level: ``$ARAGOG_XLA_OPTIMIZATION_LEVEL``,
            :func:`aragog.solver._fused_programs.optimization_level`).
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
    options = physics_options(params)
    mesh = cache.mesh(params) if mesh is None else mesh
    eos_data = cache.eos(params, eos_dir, mesh)
    inputs = physics_inputs(params, mesh, eos_data)
    key = (mode, static_key(options, inputs, eos_data), optimization_level())
    return Derived(mode, options, mesh, inputs, key)


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
        constant = tuple(getattr(pm, name) for name in _field_names(eos.ConstantParams))
        key = (pm.const_properties, directory, params.eos.model, constant,
               generated_range(params, mesh) if generated else None)
        if self._eos is None or self._eos[0] != key:
            data = load_tables(params, eos_dir, mesh)
            if not isinstance(data, eos.ConstantParams):
                data = packed_tables(data).to_jax()
            self._eos = (key, data)
        return self._eos[1]
