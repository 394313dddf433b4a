"""Build a :class:`Mesh` from radii, node count and a structure (host side).

:func:`build_mesh` is the programmatic entry point; :func:`mesh_from_params` reads the
``[mesh]`` configuration section (docs/config.md) from any object carrying its key names as
attributes.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from aragog.errors import StructureError
from aragog.structure._adams_williamson import (
    DEFAULT_BULK_MODULUS,
    DEFAULT_GRAVITY,
    DEFAULT_SURFACE_DENSITY,
    DEFAULT_SURFACE_PRESSURE,
    AdamsWilliamson,
)
from aragog.structure._geometry import Mesh
from aragog.structure._mesh import mass_coordinate_nodes, radius_mesh_nodes
from aragog.structure._structure_file import StructureProfile

__all__ = ["build_mesh", "mesh_from_params", "mixing_length", "MIXING_LENGTH_PROFILES"]

MIXING_LENGTH_PROFILES = ("nearest_boundary", "constant")


def _positive_finite(key: str, value) -> float:
    if isinstance(value, bool):
        raise StructureError(f"{key} must be a number > 0, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise StructureError(f"{key} must be a number > 0, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise StructureError(f"{key} must be finite and > 0, got {value!r}")
    return v


def mixing_length(
    r, inner_radius: float, outer_radius: float, profile: str, constant_fraction: float
) -> np.ndarray:
    """Mixing length [m] at radii ``r``.

    ``"nearest_boundary"``: min(r − r_c, R − r) (zero on the boundaries);
    ``"constant"``: ``constant_fraction`` × (R − r_c) everywhere.
    """
    r = np.asarray(r, dtype=np.float64)
    if profile == "nearest_boundary":
        return np.maximum(np.minimum(r - inner_radius, outer_radius - r), 0.0)
    if profile == "constant":
        return np.full_like(r, constant_fraction * (outer_radius - inner_radius))
    raise StructureError(
        f"mesh.mixing_length_profile must be one of {', '.join(map(repr, MIXING_LENGTH_PROFILES))}, "
        f"got {profile!r}"
    )


def build_mesh(
    outer_radius: float,
    inner_radius: float,
    number_of_nodes: int,
    *,
    core_density: float,
    mass_coordinates: bool = True,
    mixing_length_profile: str = "nearest_boundary",
    mixing_length_constant_fraction: float = 0.25,
    structure: AdamsWilliamson | StructureProfile | None = None,
) -> Mesh:
    """Build the static mesh and structure.

    Args:
        outer_radius: planet radius R [m].
        inner_radius: core–mantle boundary radius r_c [m], 0 < r_c < R.
        number_of_nodes: basic nodes N + 1 (≥ 2; N cells).
        core_density: ρ_core [kg/m³] (core mass 4/3 π r_c³ ρ_core).
        mass_coordinates: True for a mesh uniform in mass coordinate ξ (default), False
            for a mesh uniform in radius.
        mixing_length_profile: "nearest_boundary" or "constant".
        mixing_length_constant_fraction: fraction of R − r_c for "constant" (> 0).
        structure: ``AdamsWilliamson(...)`` (default: its defaults) or a
            ``StructureProfile`` (e.g. ``StructureProfile.from_file(path)``), which must
            cover [r_c, R].

    Returns:
        Mesh (float64 NumPy arrays; ``Mesh.from_numpy(as_jax=True, ...)``
        makes JAX ones).

    Raises:
        StructureError: invalid input (one-line message naming the key and value).
    """
    if isinstance(number_of_nodes, bool) or not isinstance(number_of_nodes, numbers.Integral):
        raise StructureError(
            f"mesh.number_of_nodes must be an integer >= 2, got {number_of_nodes!r}"
        )
    if number_of_nodes < 2:
        raise StructureError(
            f"mesh.number_of_nodes must be >= 2 (basic nodes; cells = nodes - 1), "
            f"got {number_of_nodes}"
        )
    R = _positive_finite("mesh.outer_radius", outer_radius)
    r_c = _positive_finite("mesh.inner_radius", inner_radius)
    if not r_c < R:
        raise StructureError(
            f"mesh.inner_radius must be < mesh.outer_radius, got inner_radius = "
            f"{inner_radius!r} m, outer_radius = {outer_radius!r} m"
        )
    rho_core = _positive_finite("mesh.core_density", core_density)
    if mixing_length_profile not in MIXING_LENGTH_PROFILES:
        raise StructureError(
            f"mesh.mixing_length_profile must be one of "
            f"{', '.join(map(repr, MIXING_LENGTH_PROFILES))}, got {mixing_length_profile!r}"
        )
    fraction = _positive_finite(
        "mesh.mixing_length_constant_fraction", mixing_length_constant_fraction
    )
    if structure is None:
        structure = AdamsWilliamson()
    for method in ("covering", "density", "pressure", "gravity_at", "enclosed_mass"):
        if not callable(getattr(structure, method, None)):
            raise StructureError(
                f"structure must be an AdamsWilliamson or StructureProfile, got "
                f"{type(structure).__name__}"
            )
    structure = structure.covering(r_c, R)

    n_cells = int(number_of_nodes) - 1
    if mass_coordinates:
        nodes, mantle_mass, mean_density = mass_coordinate_nodes(structure, r_c, R, n_cells)
    else:
        nodes = radius_mesh_nodes(r_c, R, n_cells)
        mantle_mass = float(structure.enclosed_mass(np.array(R), r_c, R))
        mean_density = mantle_mass / (4.0 / 3.0 * np.pi * (R**3 - r_c**3))
    r_b, r_s, xi_b, xi_s = nodes

    rho_b, rho_s = structure.density(r_b, R), structure.density(r_s, R)
    if np.any(rho_b <= 0) or np.any(rho_s <= 0):
        raise StructureError(f"structure density is not > 0 on the mesh [{r_c!r}, {R!r}] m")
    if mass_coordinates:
        dxidr_b = rho_b * r_b**2 / (mean_density * xi_b**2)
        dxidr_s = rho_s * r_s**2 / (mean_density * xi_s**2)
    else:
        dxidr_b, dxidr_s = np.ones_like(r_b), np.ones_like(r_s)

    # Cell masses: differences of the enclosed mass, computed as M(r_{i+1}) − M(r_i).
    m_b = structure.enclosed_mass(r_b, r_c, R)
    m_b[0] = 0.0
    mass_stag = np.diff(m_b)
    volume = 4.0 / 3.0 * np.pi * (r_b[1:] - r_b[:-1]) * (
        r_b[1:] ** 2 + r_b[1:] * r_b[:-1] + r_b[:-1] ** 2
    )
    return Mesh.from_numpy(
        r_basic=r_b,
        r_stag=r_s,
        xi_basic=xi_b,
        xi_stag=xi_s,
        area_basic=4.0 * np.pi * r_b**2,
        volume_stag=volume,
        mass_stag=mass_stag,
        P_basic=structure.pressure(r_b, R),
        P_stag=structure.pressure(r_s, R),
        g_basic=structure.gravity_at(r_b, R),
        g_stag=structure.gravity_at(r_s, R),
        rho_basic=rho_b,
        rho_stag=rho_s,
        dxidr_basic=dxidr_b,
        dxidr_stag=dxidr_s,
        mixing_length_basic=mixing_length(r_b, r_c, R, mixing_length_profile, fraction),
        mixing_length_stag=mixing_length(r_s, r_c, R, mixing_length_profile, fraction),
        inner_radius=r_c,
        outer_radius=R,
        core_mass=4.0 / 3.0 * np.pi * r_c**3 * rho_core,
        mantle_mass=mantle_mass,
        mean_density=mean_density,
        surface_pressure=float(structure.pressure(np.array(R), R)),
    )


_MISSING = object()

# Optional [mesh] keys and their docs/config.md defaults (used when the object lacks them).
_MESH_DEFAULTS = {
    "mixing_length_constant_fraction": 0.25,
    "mass_coordinates": True,
    "eos_method": 1,
    "eos_file": "",
    "surface_density": DEFAULT_SURFACE_DENSITY,
    "gravitational_acceleration": DEFAULT_GRAVITY,
    "adiabatic_bulk_modulus": DEFAULT_BULK_MODULUS,
    "adams_williamson_beta": 0.0,
    "surface_pressure": DEFAULT_SURFACE_PRESSURE,
}


def _get(params, key: str):
    value = getattr(params, key, _MISSING)
    if value is _MISSING:
        if key in _MESH_DEFAULTS:
            return _MESH_DEFAULTS[key]
        raise StructureError(f"mesh.{key} is required but missing")
    return value


def mesh_from_params(mesh_params) -> Mesh:
    """Build the mesh from a ``[mesh]`` section object (duck typed, docs/config.md names).

    Reads ``outer_radius, inner_radius, number_of_nodes, mixing_length_profile,
    mixing_length_constant_fraction, core_density, mass_coordinates, eos_method``
    (1 Adams–Williamson, 2 structure file), ``eos_file`` (path; the config loader makes
    it absolute), ``surface_density, gravitational_acceleration, adiabatic_bulk_modulus,
    adams_williamson_beta, surface_pressure``. Optional keys missing from the object take
    their docs/config.md defaults.
    """
    method = _get(mesh_params, "eos_method")
    if isinstance(method, bool) or method not in (1, 2):
        raise StructureError(
            f"mesh.eos_method must be 1 (Adams-Williamson) or 2 (structure file), got {method!r}"
        )
    if method == 1:
        structure = AdamsWilliamson(
            surface_density=_get(mesh_params, "surface_density"),
            gravity=_get(mesh_params, "gravitational_acceleration"),
            bulk_modulus=_get(mesh_params, "adiabatic_bulk_modulus"),
            beta=_get(mesh_params, "adams_williamson_beta"),
            surface_pressure=_get(mesh_params, "surface_pressure"),
        )
    else:
        path = _get(mesh_params, "eos_file")
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise StructureError(
                f"mesh.eos_file must name a structure file when mesh.eos_method = 2, got {path!r}"
            )
        structure = StructureProfile.from_file(path)
    return build_mesh(
        _get(mesh_params, "outer_radius"),
        _get(mesh_params, "inner_radius"),
        _get(mesh_params, "number_of_nodes"),
        core_density=_get(mesh_params, "core_density"),
        mass_coordinates=bool(_get(mesh_params, "mass_coordinates")),
        mixing_length_profile=_get(mesh_params, "mixing_length_profile"),
        mixing_length_constant_fraction=_get(mesh_params, "mixing_length_constant_fraction"),
        structure=structure,
    )
