"""Node placement: meshes uniform in radius or in mass coordinate (host-side NumPy).

docs/physics.md, "Grid": basic nodes r_0 = r_c (core–mantle boundary) < … < r_N = R (surface)
bound N cells; the staggered node of cell i lies between r_i and r_{i+1}.

Mass coordinate (Bower et al. 2018; SPIDER):
    ρ̄ = M_mantle / (4/3 π (R³ − r_c³)),
    ξ(r) = (r_c³ + 3 M(r) / (4π ρ̄))^{1/3},      ξ(r_c) = r_c, ξ(R) = R,
    dξ/dr = ρ(r) r² / (ρ̄ ξ²)                     (differentiate ξ³ and use dM/dr = 4π r² ρ),
i.e. ξ is the radius the mass M(r) would reach in a mantle of uniform density ρ̄. Basic
nodes are uniform in ξ, staggered nodes at the ξ midpoints; r(ξ) is found by solving
M(r) = 4/3 π ρ̄ (ξ³ − r_c³) with a vectorised, bracketed Newton iteration
(dM/dr = 4π r² ρ). Consequently cell i holds the mass 4/3 π ρ̄ (ξ_{i+1}³ − ξ_i³): the
mass it would have in a uniform-density mantle meshed uniformly in radius.

For the radius mesh, ξ = r and dξ/dr = 1, so the same flux formulas serve both.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from aragog.errors import StructureError

__all__ = [
    "NodeRadii",
    "radius_mesh_nodes",
    "mass_coordinate_nodes",
    "mass_coordinate",
    "invert_increasing",
]

_FOUR_THIRDS_PI = 4.0 * np.pi / 3.0


class NodeRadii(NamedTuple):
    """Node positions of a mesh (host NumPy, float64)."""

    r_basic: np.ndarray  # (N+1,) m
    r_stag: np.ndarray  # (N,) m
    xi_basic: np.ndarray  # (N+1,) m
    xi_stag: np.ndarray  # (N,) m


def _cube_difference(a, b):
    """a³ − b³ written as (a − b)(a² + ab + b²): no cancellation when a ≈ b."""
    return (a - b) * (a * a + a * b + b * b)


def radius_mesh_nodes(inner_radius: float, outer_radius: float, n_cells: int) -> NodeRadii:
    """Mesh uniform in radius; staggered nodes at the midpoints; ξ = r."""
    r_basic = inner_radius + (outer_radius - inner_radius) * np.arange(n_cells + 1) / n_cells
    r_basic[0], r_basic[-1] = inner_radius, outer_radius
    r_stag = 0.5 * (r_basic[:-1] + r_basic[1:])
    return NodeRadii(r_basic, r_stag, r_basic.copy(), r_stag.copy())


def mass_coordinate(r, enclosed_mass, inner_radius: float, mean_density: float):
    """ξ(r) = (r_c³ + 3 M(r)/(4π ρ̄))^{1/3} [m] given M(r) = ``enclosed_mass`` [kg]."""
    return np.cbrt(inner_radius**3 + np.asarray(enclosed_mass) / (_FOUR_THIRDS_PI * mean_density))


def invert_increasing(
    f: Callable[[np.ndarray], np.ndarray],
    fprime: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
    lo: float,
    hi: float,
    x0: np.ndarray,
    *,
    rtol: float = 4.0 * np.finfo(np.float64).eps,
    maxiter: int = 100,
) -> np.ndarray:
    """Solve f(x) = target elementwise for a strictly increasing f on [lo, hi].

    Newton steps x ← x − (f(x) − target)/f'(x), kept inside a per-element bracket that
    shrinks with the sign of the residual; a step leaving the bracket is replaced by
    bisection. Stops when every |Δx| ≤ rtol · max(|lo|, |hi|).
    """
    target = np.asarray(target, dtype=np.float64)
    a = np.full_like(target, lo)
    b = np.full_like(target, hi)
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    scale = max(abs(lo), abs(hi))
    for _ in range(maxiter):
        res = f(x) - target
        a = np.where(res < 0, x, a)
        b = np.where(res > 0, x, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            xn = x - res / fprime(x)
        outside = ~np.isfinite(xn) | (xn < a) | (xn > b)
        xn = np.where(outside, 0.5 * (a + b), xn)
        step = np.abs(xn - x)
        x = xn
        if np.all(step <= rtol * scale):
            return x
    raise StructureError(
        f"mass-coordinate mesh: Newton inversion of M(r) did not converge in {maxiter} "
        f"iterations (largest step {float(step.max())!r} m)"
    )


def mass_coordinate_nodes(
    structure, inner_radius: float, outer_radius: float, n_cells: int
) -> tuple[NodeRadii, float, float]:
    """Mesh uniform in mass coordinate ξ.

    Args:
        structure: an object with ``enclosed_mass(r, inner_radius, outer_radius)`` [kg]
            and ``density(r, outer_radius)`` [kg/m³] (AdamsWilliamson, StructureProfile).
        inner_radius, outer_radius: r_c and R [m].
        n_cells: N.

    Returns:
        (nodes, mantle_mass [kg], mean_density ρ̄ [kg/m³]).
    """
    r_c, R = float(inner_radius), float(outer_radius)
    mantle_mass = float(structure.enclosed_mass(np.array(R), r_c, R))
    if not (np.isfinite(mantle_mass) and mantle_mass > 0):
        raise StructureError(
            f"mass-coordinate mesh: mantle mass between r = {r_c!r} and {R!r} m is "
            f"{mantle_mass!r} kg (must be finite and > 0)"
        )
    mean_density = mantle_mass / (_FOUR_THIRDS_PI * _cube_difference(R, r_c))

    xi_basic = r_c + (R - r_c) * np.arange(n_cells + 1) / n_cells
    xi_basic[0], xi_basic[-1] = r_c, R
    xi_stag = 0.5 * (xi_basic[:-1] + xi_basic[1:])

    def mass(r):
        return structure.enclosed_mass(r, r_c, R)

    def dmass(r):
        return 4.0 * np.pi * r * r * structure.density(r, R)

    def invert(xi):
        target = _FOUR_THIRDS_PI * mean_density * _cube_difference(xi, r_c)
        # ξ itself is the exact answer for a uniform-density mantle: a close first guess.
        return invert_increasing(mass, dmass, target, r_c, R, xi)

    r_basic = np.empty(n_cells + 1)
    r_basic[0], r_basic[-1] = r_c, R
    if n_cells > 1:
        r_basic[1:-1] = invert(xi_basic[1:-1])
    r_stag = invert(xi_stag)
    return NodeRadii(r_basic, r_stag, xi_basic, xi_stag), mantle_mass, mean_density
