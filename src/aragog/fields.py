"""What every named field is: where it lives, its units and its CF-style long name.

One record type, :class:`FieldMeta`, and the two tables built from it:

* :data:`FIELD_META` — the fields a solve reports (:class:`aragog.solver.SolverOutput`,
  the variables of a run file written by :func:`aragog.io.write_netcdf`);
* :data:`MESH_FIELDS` — the fields of :class:`aragog.structure.Mesh`, in
  field order.

A field lives on the staggered nodes (cell centres, shape ``(N,)``), on the basic nodes
(cell boundaries, shape ``(N+1,)``) or is a scalar (shape ``()``; in a run file a time
series). The structure, the solver and the output layer all take their metadata from
here: this module imports nothing but the standard library, so ``aragog.io`` reads field
metadata without importing the solver (or JAX).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "DIMS",
    "SHAPES",
    "FieldMeta",
    "FIELD_META",
    "STAGGERED_FIELDS",
    "BASIC_FIELDS",
    "SCALAR_FIELDS",
    "MESH_FIELDS",
]

#: Where a field can live.
DIMS = ("scalar", "staggered", "basic")

#: The array shape of a field on each of :data:`DIMS` (N = number of cells).
SHAPES = {"scalar": "()", "staggered": "(N,)", "basic": "(N+1,)"}


class FieldMeta(NamedTuple):
    """Where a field lives (``"staggered"``, ``"basic"`` or ``"scalar"``), units, long name."""

    dim: str
    units: str
    long_name: str

    @property
    def shape(self) -> str:
        """The field's array shape: ``"(N,)"``, ``"(N+1,)"`` or ``"()"``."""
        return SHAPES[self.dim]


FIELD_META: dict[str, FieldMeta] = {
    # staggered nodes (cells), shape (N,)
    "r_stag": FieldMeta("staggered", "m", "radius of the cell centres"),
    "P_stag": FieldMeta("staggered", "Pa", "pressure at the cell centres"),
    "S_final": FieldMeta("staggered", "J kg-1 K-1", "specific entropy of the cells"),
    "T_stag": FieldMeta("staggered", "K", "temperature of the cells"),
    "phi_stag": FieldMeta("staggered", "1", "melt fraction (mass) of the cells"),
    "rho_stag": FieldMeta("staggered", "kg m-3", "density of the cells"),
    "visc_stag": FieldMeta("staggered", "Pa s", "dynamic viscosity of the cells"),
    "mass_stag": FieldMeta("staggered", "kg", "mass of the cells"),
    "heating": FieldMeta("staggered", "W kg-1", "internal heating (radiogenic + tidal)"),
    # basic nodes (cell boundaries), shape (N+1,)
    "r_basic": FieldMeta("basic", "m", "radius of the cell boundaries"),
    "heat_flux": FieldMeta("basic", "W m-2", "total outward heat flux"),
    "jcond_b": FieldMeta("basic", "W m-2", "conductive heat flux"),
    "jconv_b": FieldMeta("basic", "W m-2", "convective heat flux"),
    "jgrav_b": FieldMeta("basic", "W m-2", "heat flux of gravitational melt-solid separation"),
    "jmix_b": FieldMeta("basic", "W m-2", "heat flux of convective mixing"),
    "T_basic": FieldMeta("basic", "K", "temperature at the cell boundaries"),
    "phi_basic": FieldMeta("basic", "1", "melt fraction at the cell boundaries"),
    "dSdr_b": FieldMeta("basic", "J kg-1 K-1 m-1", "radial entropy gradient at the cell boundaries"),
    "eddy_diff": FieldMeta("basic", "m2 s-1", "thermal eddy diffusivity of the convective flux"),
    "cp_basic": FieldMeta("basic", "J kg-1 K-1", "heat capacity at the cell boundaries"),
    "rho_basic": FieldMeta("basic", "kg m-3", "density (EOS) at the cell boundaries"),
    # scalars
    "T_magma": FieldMeta("scalar", "K", "surface (magma ocean) temperature"),
    "T_core": FieldMeta("scalar", "K", "mean core temperature"),
    "Phi_global": FieldMeta("scalar", "1", "mass-weighted mantle melt fraction"),
    "M_mantle": FieldMeta("scalar", "kg", "mantle mass"),
    "M_mantle_liquid": FieldMeta("scalar", "kg", "molten mantle mass"),
    "M_mantle_solid": FieldMeta("scalar", "kg", "solid mantle mass"),
    "F_cmb": FieldMeta("scalar", "W m-2", "heat flux at the core-mantle boundary"),
    "F_surface": FieldMeta("scalar", "W m-2", "heat flux at the surface"),
    "Q_radio_total": FieldMeta("scalar", "W", "total radiogenic heating power"),
    "Q_tidal_total": FieldMeta("scalar", "W", "total tidal heating power"),
    "E_th": FieldMeta("scalar", "J", "thermal energy of the mantle"),
    "RF_depth": FieldMeta("scalar", "1", "depth of the rheological front (fraction of mantle depth)"),
    "dSdr_cmb": FieldMeta("scalar", "J kg-1 K-1 m-1", "entropy gradient at the core-mantle boundary"),
    # energy budget (aragog.solver._budget, aragog.physics._energetics / heat_content)
    "Phi_global_vol": FieldMeta("scalar", "1", "volume-weighted mantle melt (volume) fraction"),
    "Cp_eff": FieldMeta("scalar", "J kg-1 K-1", "effective heat capacity: EOS-mass-weighted c_p over the mantle mass"),
    "E_state": FieldMeta("scalar", "J", "mantle enthalpy sum(rho V h(P, S)) (EOS; table-corner anchor)"),
    "E_state_cons": FieldMeta("scalar", "J", "mantle enthalpy sum(m h(P, S)) with the structural cell mass"),
    "step_dE_F_int_J": FieldMeta("scalar", "J", "surface boundary energy over the solve, -int F_surface A dt"),
    "step_dE_F_cmb_J": FieldMeta("scalar", "J", "core-mantle boundary energy over the solve, int F_cmb A dt"),
    "step_dE_Q_radio_J": FieldMeta("scalar", "J", "radiogenic energy over the solve (EOS cell mass)"),
    "step_dE_Q_tidal_J": FieldMeta("scalar", "J", "tidal energy over the solve (EOS cell mass)"),
    "step_dE_Q_radio_cons_J": FieldMeta("scalar", "J", "radiogenic energy over the solve (structural cell mass)"),
    "step_dE_Q_tidal_cons_J": FieldMeta("scalar", "J", "tidal energy over the solve (structural cell mass)"),
    "step_solver_residual_J": FieldMeta("scalar", "J", "energy residual of the discrete entropy equation over the solve"),
    "step_dE_compression_J": FieldMeta("scalar", "J", "adiabatic compression work of the structure change before the solve"),
    "step_dE_state_heat_J": FieldMeta("scalar", "J", "heat content change over the solve, sum V int rho T dS"),
}

#: Names in :data:`FIELD_META` on each dimension, in table order.
STAGGERED_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "staggered")
BASIC_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "basic")
SCALAR_FIELDS = tuple(k for k, m in FIELD_META.items() if m.dim == "scalar")


#: Shape (``.shape``), units and meaning of every ``Mesh`` field, in field order
#: (also usable for netCDF attributes).
MESH_FIELDS: dict[str, FieldMeta] = {
    "r_basic": FieldMeta("basic", "m", "radius of the basic nodes (cell boundaries)"),
    "r_stag": FieldMeta("staggered", "m", "radius of the staggered nodes (cell centres)"),
    "xi_basic": FieldMeta("basic", "m", "mass coordinate xi at the basic nodes (= r on a radius mesh)"),
    "xi_stag": FieldMeta("staggered", "m", "mass coordinate xi at the staggered nodes (= r on a radius mesh)"),
    "area_basic": FieldMeta("basic", "m2", "spherical surface area 4 pi r^2 at the basic nodes"),
    "volume_stag": FieldMeta("staggered", "m3", "cell volume 4/3 pi (r_{i+1}^3 - r_i^3)"),
    "mass_stag": FieldMeta("staggered", "kg", "cell mass from the static structure density"),
    "P_basic": FieldMeta("basic", "Pa", "static pressure at the basic nodes"),
    "P_stag": FieldMeta("staggered", "Pa", "static pressure at the staggered nodes"),
    "g_basic": FieldMeta("basic", "m s-2", "gravitational acceleration (magnitude, inward) at the basic nodes"),
    "g_stag": FieldMeta("staggered", "m s-2", "gravitational acceleration (magnitude, inward) at the staggered nodes"),
    "rho_basic": FieldMeta("basic", "kg m-3", "static structure density at the basic nodes"),
    "rho_stag": FieldMeta("staggered", "kg m-3", "static structure density at the staggered nodes"),
    "dxidr_basic": FieldMeta("basic", "1", "d xi / d r at the basic nodes (1 on a radius mesh)"),
    "dxidr_stag": FieldMeta("staggered", "1", "d xi / d r at the staggered nodes (1 on a radius mesh)"),
    "mixing_length_basic": FieldMeta("basic", "m", "mixing length at the basic nodes"),
    "mixing_length_stag": FieldMeta("staggered", "m", "mixing length at the staggered nodes"),
    "inner_radius": FieldMeta("scalar", "m", "core-mantle boundary radius r_c"),
    "outer_radius": FieldMeta("scalar", "m", "planet (surface) radius R"),
    "core_mass": FieldMeta("scalar", "kg", "core mass 4/3 pi r_c^3 rho_core"),
    "mantle_mass": FieldMeta("scalar", "kg", "mantle mass between r_c and R (structure density)"),
    "mean_density": FieldMeta("scalar", "kg m-3", "mean mantle density M_mantle / (4/3 pi (R^3 - r_c^3))"),
    "surface_pressure": FieldMeta("scalar", "Pa", "static pressure at r = R"),
}
