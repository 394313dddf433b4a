"""Adams–Williamson static structure of a mantle in closed form (constant gravity).

Equations (PHYSICS.md, "Static structure"; Bower et al. 2018, PEPI 274, 49–62):

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
# φ_k(a) = Σ_n a^n / (n! (n + k + 1)): coefficients per k, highest order first (Horner).
_SERIES_TERMS = {k: [float(c) for c in (_INV_FACTORIALS / (np.arange(_NSERIES) + k + 1.0))[::-1]]
                 for k in (0, 1, 2)}


def _phi(k: int, a: np.ndarray) -> np.ndarray:
    """φ_k(a) = ∫_0^1 u^k e^{a u} du for k = 0, 1, 2 (elementwise, stable near a = 0)."""
    a = np.asarray(a, dtype=np.float64)
    small = np.abs(a) < 1.0
    if k not in (0, 1, 2):  # pragma: no cover - internal use only
        raise ValueError(f"_phi: k must be 0, 1 or 2, got {k}")
    # Series branch (on a clipped argument, selected where |a| < 1); skipped when no
    # element needs it, and the closed form likewise (mesh building calls this often).
    series = 0.0
    if small.any():
        a_s = np.where(small, a, 0.0)
        series = np.full_like(a_s, _SERIES_TERMS[k][0])
        for coef in _SERIES_TERMS[k][1:]:  # Horner in a
            series = series * a_s + coef
        if small.all():
            return series
    # Closed-form branch: no damaging cancellation once |a| >= 1.
    a_c = np.where(small, 1.0, a)
    e = np.exp(a_c)
    if k == 0:
        closed = np.expm1(a_c) / a_c
    elif k == 1:
        closed = (e * (a_c - 1.0) + 1.0) / a_c**2
    else:
        closed = (e * (a_c * a_c - 2.0 * a_c + 2.0) - 2.0) / a_c**3
    return np.where(small, series, closed)


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
    bracket = r * r * h * _phi(0, a) - 2.0 * r * h * h * _phi(1, a) + h**3 * _phi(2, a)
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
    def check_covers(self, inner_radius: float, outer_radius: float) -> None:
        """Closed forms hold for any radii: nothing to check."""

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
