"""Adams–Williamson static structure of a mantle in closed form (constant gravity).

Equations (docs/physics.md, "Static structure"; Bower et al. 2018, PEPI 274, 49–62):

* β = ρ_s g / K_S unless a positive β is given,
* ρ(r) = ρ_s e^{β(R−r)},
* P(r) = P_s + (ρ_s g/β)(e^{β(R−r)} − 1)    (hydrostatic: dP/dr = −ρ g),
* g constant.

Enclosed mantle mass (derived here). With the antiderivative
∫ x² e^{−βx} dx = −e^{−βx}(x²/β + 2x/β² + 2/β³),

    M(r) = ∫_{r_c}^{r} 4π x² ρ(x) dx = 4π ρ_s [G(r_c) − G(r)],
    G(x) = e^{β(R−x)} (x²/β + 2x/β² + 2/β³).

That form cancels catastrophically for small β h (h = r − r_c): the terms are O(1/β³)
while the result is O(h r²). We evaluate the algebraically identical form obtained by
substituting x = r − t, t ∈ [0, h]:

    M(r) = 4π ρ_s e^{β(R−r)} ∫_0^h (r − t)² e^{βt} dt
         = 4π ρ_s e^{β(R−r)} [r² h φ₀(a) − 2 r h² φ₁(a) + h³ φ₂(a)],   a = β h,

with φ_k(a) = ∫_0^1 u^k e^{a u} du, i.e. φ₀ = (e^a − 1)/a, φ₁ = (e^a(a − 1) + 1)/a²,
φ₂ = (e^a(a² − 2a + 2) − 2)/a³, summed as the series Σ_n a^n/(n! (n + k + 1)) for
|a| < 1. For β → 0 it tends to 4/3 π ρ_s (r³ − r_c³) (constant density), and
dM/dr = 4π r² ρ(r) exactly.

All functions here are host-side NumPy (the mesh is built once, outside the hot path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aragog.errors import StructureError

__all__ = [
    "AdamsWilliamson",
    "DEFAULT_SURFACE_DENSITY",
    "DEFAULT_BULK_MODULUS",
    "DEFAULT_GRAVITY",
    "DEFAULT_SURFACE_PRESSURE",
    "adams_williamson_beta",
    "adams_williamson_density",
    "adams_williamson_pressure",
    "adams_williamson_enclosed_mass",
]

DEFAULT_SURFACE_DENSITY = 4078.95095544  # kg/m³
DEFAULT_BULK_MODULUS = 260e9  # Pa (adiabatic bulk modulus K_S)
DEFAULT_GRAVITY = 9.81  # m/s²
DEFAULT_SURFACE_PRESSURE = 0.0  # Pa

# Series terms for |a| < 1: the remainder is below 1/_NSERIES! ~ 9e-22 of a leading term
# >= 1/3, far under 1 ulp (1.1e-16).
_NSERIES = 22
_INV_FACTORIALS = np.array([1.0 / math.factorial(n) for n in range(_NSERIES)])
# φ_k(a) = Σ_n a^n / (n! (n + k + 1)): row k holds the coefficients of a^0 .. a^(N-1).
_SERIES_COEFFS = np.array([_INV_FACTORIALS / (np.arange(_NSERIES) + k + 1.0) for k in (0, 1, 2)])


def _phi_all(a: np.ndarray) -> np.ndarray:
    """(φ_0, φ_1, φ_2)(a), shape (3,) + a.shape, φ_k(a) = ∫_0^1 u^k e^{a u} du (stable near
    a = 0): the power series for |a| < 1 (all three from one table of powers of a), the
    closed forms elsewhere (no damaging cancellation once |a| >= 1). Only the branches
    some element needs are evaluated (mesh building calls this often)."""
    a = np.asarray(a, dtype=np.float64)
    small = np.abs(a) < 1.0
    out = np.empty((3,) + a.shape)
    if small.any():
        a_s = np.where(small, a, 0.0).ravel()
        powers = np.empty((_NSERIES, a_s.size))
        powers[0] = 1.0
        np.cumprod(np.broadcast_to(a_s, (_NSERIES - 1, a_s.size)), axis=0, out=powers[1:])
        # ascending order: the terms fall off like 1/n!, the largest first
        series = (_SERIES_COEFFS @ powers).reshape((3,) + a.shape)
        if small.all():
            return series
        out[:] = series
    a_c = np.where(small, 1.0, a)
    e = np.exp(a_c)
    closed = (np.expm1(a_c) / a_c, (e * (a_c - 1.0) + 1.0) / a_c**2,
              (e * (a_c * a_c - 2.0 * a_c + 2.0) - 2.0) / a_c**3)
    for k in range(3):
        out[k] = np.where(small, out[k], closed[k]) if small.any() else closed[k]
    return out


def _phi(k: int, a: np.ndarray) -> np.ndarray:
    """φ_k(a) = ∫_0^1 u^k e^{a u} du for k = 0, 1, 2 (elementwise, stable near a = 0)."""
    if k not in (0, 1, 2):  # pragma: no cover - internal use only
        raise ValueError(f"_phi: k must be 0, 1 or 2, got {k}")
    return _phi_all(a)[k]


def adams_williamson_beta(
    surface_density: float, gravity: float, bulk_modulus: float, beta: float = 0.0
) -> float:
    """β [1/m]: ``beta`` if it is positive, else ρ_s g / K_S."""
    if beta > 0.0:
        return float(beta)
    return float(surface_density * gravity / bulk_modulus)


def adams_williamson_density(r, outer_radius: float, surface_density: float, beta: float):
    """ρ(r) = ρ_s e^{β(R−r)} [kg/m³]."""
    r = np.asarray(r, dtype=np.float64)
    return surface_density * np.exp(beta * (outer_radius - r))


def adams_williamson_pressure(
    r,
    outer_radius: float,
    surface_density: float,
    gravity: float,
    beta: float,
    surface_pressure: float = 0.0,
):
    """P(r) = P_s + (ρ_s g/β)(e^{β(R−r)} − 1) [Pa], written as ρ_s g d φ₀(β d), d = R − r."""
    r = np.asarray(r, dtype=np.float64)
    depth = outer_radius - r
    return surface_pressure + surface_density * gravity * depth * _phi(0, beta * depth)


def adams_williamson_enclosed_mass(
    r, inner_radius: float, outer_radius: float, surface_density: float, beta: float
):
    """Mantle mass between ``inner_radius`` and r [kg] (closed form, see module docstring)."""
    r = np.asarray(r, dtype=np.float64)
    h = r - inner_radius
    a = beta * h
    phi0, phi1, phi2 = _phi_all(a)
    bracket = r * r * h * phi0 - 2.0 * r * h * h * phi1 + h**3 * phi2
    return 4.0 * np.pi * surface_density * np.exp(beta * (outer_radius - r)) * bracket


@dataclass(frozen=True)
class AdamsWilliamson:
    """Adams–Williamson mantle structure (constant gravity).

    Attributes:
        surface_density: ρ_s [kg/m³].
        gravity: g [m/s²], constant through the mantle (positive, pointing inward).
        bulk_modulus: adiabatic bulk modulus K_S [Pa]; used only when ``beta`` is 0.
        beta: β [1/m]; 0 means "use ρ_s g / K_S".
        surface_pressure: P_s [Pa].

    The profile is anchored at the planet's outer radius R, which the mesh builder
    supplies (``outer_radius`` arguments below); the enclosed mass is counted from the
    core–mantle boundary ``inner_radius``.
    """

    surface_density: float = DEFAULT_SURFACE_DENSITY
    gravity: float = DEFAULT_GRAVITY
    bulk_modulus: float = DEFAULT_BULK_MODULUS
    beta: float = 0.0
    surface_pressure: float = DEFAULT_SURFACE_PRESSURE

    def __post_init__(self) -> None:
        checks = (
            ("mesh.surface_density", self.surface_density, lambda v: v > 0, "> 0"),
            ("mesh.gravitational_acceleration", self.gravity, lambda v: v > 0, "> 0"),
            ("mesh.adiabatic_bulk_modulus", self.bulk_modulus, lambda v: v > 0, "> 0"),
            ("mesh.adams_williamson_beta", self.beta, lambda v: v >= 0, ">= 0 (0: ρ_s g/K_S)"),
            ("mesh.surface_pressure", self.surface_pressure, lambda v: True, "finite"),
        )
        for key, value, ok, what in checks:
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise StructureError(f"{key} must be a number {what}, got {value!r}") from None
            if not (math.isfinite(v) and ok(v)):
                raise StructureError(f"{key} must be {what}, got {value!r}")

    @property
    def effective_beta(self) -> float:
        """β actually used [1/m]."""
        return adams_williamson_beta(
            self.surface_density, self.gravity, self.bulk_modulus, self.beta
        )

    # --- the structure interface shared with StructureProfile -------------------------
    def covering(self, inner_radius: float, outer_radius: float) -> "AdamsWilliamson":
        """Closed forms hold for any radii: itself."""
        return self

    def density(self, r, outer_radius: float):
        """ρ [kg/m³] at radii ``r`` [m]."""
        return adams_williamson_density(r, outer_radius, self.surface_density, self.effective_beta)

    def pressure(self, r, outer_radius: float):
        """P [Pa] at radii ``r`` [m]."""
        return adams_williamson_pressure(
            r,
            outer_radius,
            self.surface_density,
            self.gravity,
            self.effective_beta,
            self.surface_pressure,
        )

    def gravity_at(self, r, outer_radius: float):
        """g [m/s²] at radii ``r`` [m] (constant)."""
        return np.full(np.shape(r), float(self.gravity))

    def enclosed_mass(self, r, inner_radius: float, outer_radius: float):
        """Mantle mass between ``inner_radius`` and ``r`` [kg]."""
        return adams_williamson_enclosed_mass(
            r, inner_radius, outer_radius, self.surface_density, self.effective_beta
        )
