"""Pure-JAX physics of the entropy method: dS/dt, its diagnostics, heating, fluxes, BCs.

Arrays in, arrays out; no I/O, no globals, no Python branching on traced values.
Everything that varies between solves is a traced leaf of :class:`PhysicsInputs`; only
:class:`PhysicsOptions` is static. docs/physics.md describes the discretisation.

Typical use (docs/physics.md opens with a complete example that builds the inputs by
hand; ``aragog.solver`` builds them from a config, each field copied from the config key of
its name)::

    inputs = physics.as_float64(physics.PhysicsInputs(mesh=..., eos=..., material=...,
                                                      transport=..., boundary=..., heating=..., scales=...))
    options = physics.PhysicsOptions(outer_boundary_condition=1, core_bc="energy_balance")
    f = jax.jit(physics.rhs, static_argnums=3)
    y0 = physics.join_state(S_cells, None, inputs, options)
    dydt = f(0.0, y0, inputs, options)
"""

from __future__ import annotations

from aragog.physics._boundary import (
    core_entropy_rate,
    grey_body_flux,
    quasi_steady_cmb_flux,
    surface_entropy_for_temperature,
    surface_flux,
    utbl_radiating_temperature,
)
from aragog.physics._core import (
    conductive_cmb_flux,
    core_temperature_rate,
    entropy_layout,
    gradient_layout,
    radial_basic_nodes,
)
from aragog.physics._heating import (
    EARTH_RADIONUCLIDES,
    cell_heating,
    earth_heating_inputs,
    radiogenic_energy,
    radiogenic_heating,
)
from aragog.physics._inputs import (
    CORE_BCS,
    SECONDS_PER_YEAR,
    SIGMA_SB,
    SURFACE_BCS,
    BoundaryInputs,
    HeatingInputs,
    PhysicsInputs,
    PhysicsOptions,
    Scales,
    SEPARATION_BUOYANCY,
    TransportInputs,
    as_float64,
)
from aragog.physics._rhs import (
    Diagnostics,
    StructureState,
    band_widths,
    basic_node_entropy,
    diagnostics,
    diagnostics_of,
    global_melt_fraction,
    join_state,
    mass_weighted_melt_fraction,
    rhs,
    split_state,
    state_rate,
    state_size,
    structure_stage,
    thermal_stage,
)
from aragog.physics._transport import (
    conductive_flux,
    convective_flux,
    donor_cell_weight,
    eddy_diffusivity,
    gravitational_separation_flux,
    material_state,
    mixing_flux,
    melt_weight,
    mixing_length_diffusivity,
    mixing_onset_drive,
    mush_weight,
    permeability,
    phase_boundary_gradient,
    porosity,
    thermal_eddy_diffusivity,
)

__all__ = [
    # inputs
    "PhysicsOptions",
    "TransportInputs",
    "SEPARATION_BUOYANCY",
    "BoundaryInputs",
    "HeatingInputs",
    "Scales",
    "PhysicsInputs",
    "as_float64",
    "SIGMA_SB",
    "SECONDS_PER_YEAR",
    "SURFACE_BCS",
    "CORE_BCS",
    # state and assembly
    "state_size",
    "band_widths",
    "split_state",
    "join_state",
    "basic_node_entropy",
    "rhs",
    "diagnostics",
    "Diagnostics",
    "global_melt_fraction",
    "mass_weighted_melt_fraction",
    # the two submodels of the right-hand side (compile_mode "blocks")
    "StructureState",
    "structure_stage",
    "thermal_stage",
    "state_rate",
    "diagnostics_of",
    # heating
    "radiogenic_heating",
    "radiogenic_energy",
    "cell_heating",
    "earth_heating_inputs",
    "EARTH_RADIONUCLIDES",
    # boundary conditions
    "surface_entropy_for_temperature",
    "grey_body_flux",
    "utbl_radiating_temperature",
    "surface_flux",
    "quasi_steady_cmb_flux",
    "core_entropy_rate",
    # core modes "gradient" and "bower2018"
    "radial_basic_nodes",
    "conductive_cmb_flux",
    "core_temperature_rate",
    "gradient_layout",
    "entropy_layout",
    # transport
    "material_state",
    "conductive_flux",
    "mixing_length_diffusivity",
    "eddy_diffusivity",
    "thermal_eddy_diffusivity",
    "convective_flux",
    "porosity",
    "permeability",
    "gravitational_separation_flux",
    "mush_weight",
    "melt_weight",
    "donor_cell_weight",
    "phase_boundary_gradient",
    "mixing_onset_drive",
    "mixing_flux",
]
