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
from aragog.units import SECONDS_PER_YEAR

__all__ = [
    "SIGMA_SB",
    "SECONDS_PER_YEAR",
    "SURFACE_BCS",
    "CORE_BCS",
    "PhysicsOptions",
    "TransportInputs",
    "BoundaryInputs",
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




@data_pytree
class TransportInputs:
    """Transport parameters (0-d; traced).

    kappah_floor [m2/s]: minimum thermal eddy diffusivity where dS/dr < 0, modulated by
        tw(phi, phi_rheo, phi_width) so that it fades out as the mantle solidifies.
    eddy_thermal, eddy_chemical [-]: factors f_T, f_C on the mixing-length diffusivity;
        a value <= 0 means a constant diffusivity |value| m2/s instead (SPIDER convention).
    grain_size [m]: grain size of the permeability law (gravitational separation).
    buoyancy_mixture [-]: 1 for the separation buoyancy against the mixture (McKenzie 1984:
        the matrix terms of the permeability law carry a factor 1 - p), 0 against the
        solid (Abe 1995, SPIDER); ``phase_mixed.separation_buoyancy``.
    phi_rheo, phi_width [-]: rheological transition (centre, width) of the floor weight;
        pass the same values as ``MaterialParams.phi_rheo/phi_width``.
    mixing_onset_width [-]: w of the ramped drive of the chemical eddy diffusivity,
        Δ³/(Δ + w |c|)² (``physics.mixing_onset_drive``; 0: the plain mixing-length law).
    """

    kappah_floor: Any = 10.0
    eddy_thermal: Any = 1.0
    eddy_chemical: Any = 1.0
    grain_size: Any = 1.0e-3
    buoyancy_mixture: Any = 0.0
    phi_rheo: Any = 0.4
    phi_width: Any = 0.15
    mixing_onset_width: Any = 1.0e-3


@data_pytree
class BoundaryInputs:
    """Boundary-condition parameters (0-d; traced).

    outer_boundary_value: prescribed surface flux [W/m2] (outer_boundary_condition 4) or temperature [K]
        (outer_boundary_condition 5); unused for the grey body.
    T_eq [K]: equilibrium temperature of the grey body.
    emissivity [-]: grey-body emissivity.
    utbl_const [K^-2]: c of the ultra-thin boundary layer, T_magma = T_rad + c T_rad^3.
    cmb_flux [W/m2]: prescribed CMB flux (core_bc "flux").
    cmb_temperature [K]: prescribed CMB temperature (core_bc "temperature"; > 0).
    core_cp [J/kg/K]: core heat capacity c_c.
    tfac_core [-]: f, mean core temperature / CMB temperature.
    """

    outer_boundary_value: Any = 0.0
    T_eq: Any = 0.0
    emissivity: Any = 1.0
    utbl_const: Any = 1.0e-7
    cmb_flux: Any = 0.0
    core_cp: Any = 880.0
    tfac_core: Any = 1.147
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
