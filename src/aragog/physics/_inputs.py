"""Inputs of the physics functions: one static options object and traced parameter pytrees.

Everything that can change between two solves of the same compiled program is a *traced*
leaf of :class:`PhysicsInputs` (mesh arrays, EOS tables, material, transport, boundary
and heating parameters, nondimensional scales). Only :class:`PhysicsOptions` is static: it
is hashable and selects which code is traced (docs/design.md, "The performance idea").

Units are SI throughout (time in seconds); the one exception is
:attr:`HeatingInputs.concentration`, given in ppm of the element exactly as in the
``[radionuclide_*]`` sections (the factor 1e-6 is applied inside
:func:`aragog.physics.radiogenic_heating`).

Leaves may be Python floats or arrays. A jitted function retraces when the *type* of a
leaf changes (Python float vs float64 array), never when its value changes; pass inputs
through :func:`as_float64` once so every leaf is a float64 JAX array.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aragog._jax import jax, jnp
from aragog._pytree import data_pytree
from aragog.config import SCHEMA
from aragog.units import SECONDS_PER_YEAR

__all__ = [
    "SIGMA_SB",
    "SECONDS_PER_YEAR",
    "SURFACE_BCS",
    "CORE_BCS",
    "PhysicsOptions",
    "TransportInputs",
    "BoundaryInputs",
    "SEPARATION_BUOYANCY",
    "HeatingInputs",
    "Scales",
    "PhysicsInputs",
    "as_float64",
]

#: Stefan–Boltzmann constant [W m-2 K-4] (docs/physics.md; CODATA 2018).
SIGMA_SB = 5.670374419e-8

#: Surface boundary conditions (docs/config.md ``outer_boundary_condition``):
#: 1 grey body, 4 prescribed flux, 5 prescribed temperature.
SURFACE_BCS = (1, 4, 5)
#: Core-mantle boundary modes: "flux" (``inner_boundary_condition = 2``), "temperature"
#: (``inner_boundary_condition = 3``), and the core cooling modes of
#: ``inner_boundary_condition = 1`` selected by ``core_bc`` (docs/physics.md, "Core modes").
CORE_BCS = ("flux", "quasi_steady", "energy_balance", "temperature", "gradient", "bower2018")


@dataclasses.dataclass(frozen=True)
class PhysicsOptions:
    """Static switches (hashable: a jit static argument / part of a compiled-function key).

    conduction, convection, gravitational_separation, mixing: flux terms at the basic
        nodes; a term switched off contributes exactly zero and is not computed.
    radionuclides, tidal: heating terms.
    outer_boundary_condition: 1 grey body, 4 prescribed flux, 5 prescribed temperature.
    utbl: ultra-thin boundary layer correction of the radiating temperature (only has an
        effect with ``outer_boundary_condition == 1``; ignored otherwise).
    core_bc: "flux" (prescribed CMB flux), "temperature" (prescribed CMB temperature),
        "quasi_steady" (core cools in step with the lowest cell), "energy_balance" (extra
        state slot holding dS/dr at the CMB), "gradient" (the energy-balance slot with the
        upstream gradient formulation's radial stencils), "bower2018" (extra state slot
        holding T_core; F_cmb conducted across the bottom half cell).
    constant_properties: ``PhysicsInputs.eos`` is an ``eos.ConstantParams`` (no phase
        change: gravitational separation and mixing are identically zero) instead of an
        ``eos.EOSTables``.
    separation_viscosity: drag viscosity of gravitational separation, "melt" (η_liq,
        SPIDER) or "mixture" (each node's own rheological viscosity, the upstream's option);
        ``phase_mixed.separation_viscosity``. A model switch, so the default program is
        the one without it.
    """

    conduction: bool = True
    convection: bool = True
    gravitational_separation: bool = False
    mixing: bool = False
    radionuclides: bool = False
    tidal: bool = False
    outer_boundary_condition: int = 1
    utbl: bool = False
    core_bc: str = "energy_balance"
    constant_properties: bool = False
    separation_viscosity: str = "melt"

    def __post_init__(self):
        for name in ("conduction", "convection", "gravitational_separation", "mixing",
                     "radionuclides", "tidal", "utbl", "constant_properties"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"PhysicsOptions.{name} must be a bool, got {value!r}")
        if isinstance(self.outer_boundary_condition, bool) or self.outer_boundary_condition not in SURFACE_BCS:
            raise ValueError(f"PhysicsOptions.outer_boundary_condition must be one of {SURFACE_BCS}, "
                             f"got {self.outer_boundary_condition!r}")
        if self.core_bc not in CORE_BCS:
            raise ValueError(f"PhysicsOptions.core_bc must be one of {CORE_BCS}, got {self.core_bc!r}")
        if self.separation_viscosity not in ("melt", "mixture"):
            raise ValueError("PhysicsOptions.separation_viscosity must be 'melt' or 'mixture', "
                             f"got {self.separation_viscosity!r}")

    @property
    def energy_balance(self) -> bool:
        """True when the state carries the extra dS/dr_cmb slot ("energy_balance", "gradient")."""
        return self.core_bc in ("energy_balance", "gradient")

    @property
    def core_temperature_slot(self) -> bool:
        """True when the state carries the extra T_core slot ("bower2018")."""
        return self.core_bc == "bower2018"

    @property
    def extra_slots(self) -> int:
        """Number of state slots before the N cell entropies (0 or 1)."""
        return int(self.energy_balance or self.core_temperature_slot)




def _default(section: str, key: str):
    """The schema's default of ``[section] key`` (aragog.config.SCHEMA, docs/config.md): the
    one declaration of it. A key the schema requires has none, and neither has its field."""
    return SCHEMA[section][key].default


#: ``[phase_mixed] separation_buoyancy`` as :attr:`TransportInputs.buoyancy_mixture`.
SEPARATION_BUOYANCY = {"solid": 0.0, "mixture": 1.0}


@data_pytree
class TransportInputs:
    """Transport parameters (0-d; traced). Each field but ``buoyancy_mixture`` is the config
    key of its name (docs/config.md), with the schema's default where it has one.

    grain_size [m]: ``[phase_mixed]``, grain size of the permeability law (gravitational
        separation).
    kappah_floor [m2/s]: ``[energy]``, minimum thermal eddy diffusivity where dS/dr < 0,
        weighted by tw(phi, phi_rheo, phi_width) of the rheological transition
        (``MaterialParams``) so that it fades out as the mantle solidifies.
    eddy_diffusivity_thermal, eddy_diffusivity_chemical [-]: ``[energy]``, factors f_T, f_C
        on the mixing-length diffusivity; a value <= 0 means a constant diffusivity |value|
        m2/s instead (SPIDER convention).
    mixing_onset_width [-]: ``[energy]``, w of the ramped drive of the chemical eddy
        diffusivity, Δ³/(Δ + w |c|)² (``physics.mixing_onset_drive``; 0: the plain
        mixing-length law).
    buoyancy_mixture [-]: ``[phase_mixed] separation_buoyancy`` as a number
        (:data:`SEPARATION_BUOYANCY`): 1 for the separation buoyancy against the mixture
        (McKenzie 1984: the matrix terms of the permeability law carry a factor 1 - p), 0
        against the solid (Abe 1995, SPIDER).
    """

    grain_size: Any
    kappah_floor: Any = _default("energy", "kappah_floor")
    eddy_diffusivity_thermal: Any = _default("energy", "eddy_diffusivity_thermal")
    eddy_diffusivity_chemical: Any = _default("energy", "eddy_diffusivity_chemical")
    mixing_onset_width: Any = _default("energy", "mixing_onset_width")
    buoyancy_mixture: Any = SEPARATION_BUOYANCY[_default("phase_mixed", "separation_buoyancy")]


@data_pytree
class BoundaryInputs:
    """Boundary-condition parameters (0-d; traced). The first six fields are the
    ``[boundary_conditions]`` keys of their names (docs/config.md), with the schema's
    default where it has one; the last two are ``inner_boundary_value`` in the core mode
    that reads it.

    outer_boundary_value: prescribed surface flux [W/m2] (outer_boundary_condition 4) or
        temperature [K] (outer_boundary_condition 5); unused for the grey body.
    equilibrium_temperature [K]: equilibrium temperature of the grey body.
    emissivity [-]: grey-body emissivity.
    core_heat_capacity [J/kg/K]: core heat capacity c_c.
    param_utbl_const [K^-2]: c of the ultra-thin boundary layer, T_magma = T_rad + c T_rad^3.
    tfac_core_avg [-]: f, mean core temperature / CMB temperature.
    cmb_flux [W/m2]: prescribed CMB flux (core_bc "flux").
    cmb_temperature [K]: prescribed CMB temperature (core_bc "temperature"; > 0; unused
        elsewhere).
    """

    outer_boundary_value: Any
    equilibrium_temperature: Any
    emissivity: Any
    core_heat_capacity: Any
    param_utbl_const: Any = _default("boundary_conditions", "param_utbl_const")
    tfac_core_avg: Any = _default("boundary_conditions", "tfac_core_avg")
    cmb_flux: Any = 0.0
    cmb_temperature: Any = 4000.0


@data_pytree
class HeatingInputs:
    """Internal heating (traced).

    tidal (N,) [W/kg]: tidal heating per cell.
    Radionuclides, K isotopes (K may be 0: no radiogenic heating), arrays of shape (K,):
        heat_production [W per kg of isotope], abundance [-] (isotope/element),
        concentration [ppm of the element by mass; 1e-6 is applied inside],
        half_life [s], t0 [s] (model time at which the concentrations are given).
    """

    tidal: Any
    heat_production: Any
    abundance: Any
    concentration: Any
    half_life: Any
    t0: Any


@data_pytree
class Scales:
    """Nondimensionalisation (0-d; traced): y = S / S, y_slot = (dS/dr)_cmb / dSdr (or
    T_core / T with core_bc "bower2018"), t_seconds = t * t. Units: S [J/kg/K], t [s],
    dSdr [J/kg/K/m], T [K]."""

    S: Any = 1000.0
    t: Any = SECONDS_PER_YEAR
    dSdr: Any = 1.0e-3
    T: Any = 1000.0


@data_pytree
class PhysicsInputs:
    """Everything the physics functions read besides (t, y) and the static options.

    mesh: ``aragog.structure.Mesh`` (N cells).
    eos: ``aragog.eos.EOSTables`` (table mode) or ``aragog.eos.ConstantParams``
        (``options.constant_properties``).
    material: ``aragog.eos.MaterialParams`` (viscosities, conductivities, smoothing width,
        rheological transition; also used for the melt viscosity of gravitational
        separation and the mush weight of mixing). Unused in constant-property mode.
    transport: :class:`TransportInputs`; boundary: :class:`BoundaryInputs`;
    heating: :class:`HeatingInputs`; scales: :class:`Scales`.
    """

    mesh: Any
    eos: Any
    material: Any
    transport: Any
    boundary: Any
    heating: Any
    scales: Any


def as_float64(tree):
    """Copy of a pytree (e.g. :class:`PhysicsInputs`) with every leaf a float64 JAX array.

    Do this once per set of inputs: then changing any value keeps the jit cache key (leaf
    shapes and dtypes) and never retraces.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=jnp.float64), tree)
