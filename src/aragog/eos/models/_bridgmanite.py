"""MgSiO3 bridgmanite (perovskite): Mie–Grüneisen–Debye Helmholtz free energy with the
parameters of Stixrude & Lithgow-Bertelloni (2011).

The form is that of Stixrude & Lithgow-Bertelloni (2005, Geophys. J. Int. 162, 610;
"SLB2005"), used unchanged by Stixrude & Lithgow-Bertelloni (2011, Geophys. J. Int. 184,
1180; "SLB2011"). With the Eulerian finite strain

    f = ((V0/V)^(2/3) - 1) / 2                      (> 0 under compression)

the molar Helmholtz free energy [J/mol] of volume V [m³/mol] and temperature T [K] is

    F(V, T) = F0 + 9 K0 V0 (f²/2 + a3 f³/6) + F_D(θ(V), T) - F_D(θ(V), T0),
    a3 = 3 (K0' - 4)                                 (SLB2005 eqs 28-29; third order)

whose cold pressure at T = T0 is the third-order Birch–Murnaghan
P = 3 K0 f (1 + 2f)^(5/2) (1 + 3/2 (K0' - 4) f). The Debye free energy of n atoms is

    F_D(θ, T) = 9 n R T (T/θ)³ ∫0^{θ/T} x² ln(1 - e^-x) dx
              = n R T (3 ln(1 - e^-t) - D3(t)),   t = θ/T,
    D3(t)     = (3/t³) ∫0^t x³/(e^x - 1) dx = 3 (u/t)³ ∫0^1 s² g(u s) ds,
    g(y) = y/(e^y - 1),   u = min(t, 60)

(integration by parts; the integrand beyond x = 60 is below 1e-20 of the integral). The
s-integral is a fixed 64-point Gauss–Legendre rule: g is analytic on the interval (poles
at y = 2πik), so D3 is accurate to rounding (checked against adaptive quadrature for
1e-3 ≤ t ≤ 700) and differentiable to any order through ``jnp``. The
Debye temperature follows SLB2005's finite-strain expansion of the squared frequency
(eqs 41, 47):

    θ(V) = θ0 sqrt(1 + a_ii f + a_iikk f²/2),
    a_ii = 6 γ0,   a_iikk = -12 γ0 + 36 γ0² - 18 q0 γ0,

so that γ = -d ln θ / d ln V = (1 + 2f)(a_ii + a_iikk f) / (6 (1 + a_ii f + a_iikk f²/2))
equals γ0 at V0 and q = d ln γ / d ln V equals q0 there (not the power law γ0 (V/V0)^q).
The shear parameter η_S0 enters only the shear modulus and is not needed. Every
property then follows by automatic differentiation (:mod:`aragog.eos.models._thermo`).

Range: at low pressure and high temperature the model has a spinodal: P(V) at fixed T has
a minimum P_sp(T) (K_T = 0 there), about 0 GPa at 4470 K, 6 GPa at 5100 K, 10.3 GPa at
5550 K and 14.5 GPa at 6000 K with these parameters; below it no volume gives P, and
:func:`~aragog.eos.models._thermo.volume` returns an unconverged V (check P, as
``properties_PT`` says). Elsewhere on 0-150 GPa x 300-6000 K the solve converges to
rounding from :meth:`Bridgmanite.volume_guess`.
BurnMan (``SLB_2011.mg_perovskite``, equation of state ``slb3``) implements the same
model; ``tools/eos_compare_burnman.py`` compares the two.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from aragog._jax import jax, jnp

__all__ = ["Bridgmanite", "debye_d3", "debye_helmholtz", "GAS_CONSTANT"]

#: Molar gas constant [J/mol/K]: N_A k, exact since SI 2019 (scipy.constants.gas_constant, as in BurnMan).
GAS_CONSTANT = 8.31446261815324

# 64-point Gauss–Legendre nodes and weights mapped from [-1, 1] to s ∈ [0, 1].
_U, _W = np.polynomial.legendre.leggauss(64)
_S = 0.5 * (_U + 1.0)
_WS2 = 0.5 * _W * _S**2  # weight × s² (the D3 integrand's polynomial factor)
_X_CUT = 60.0  # ∫_60^∞ x³/(e^x - 1) dx / ∫_0^∞ = 3e-21: the integral's upper limit is capped here


def _y_over_expm1(y):
    """y / (e^y - 1) for y > 0 without overflow: y e^-y / (1 - e^-y)."""
    return y * jnp.exp(-y) / -jnp.expm1(-y)


@jax.custom_jvp
def debye_d3(t):
    """Debye function D3(t) = (3/t³) ∫0^t x³/(e^x - 1) dx [-] of t > 0 (scalar or array;
    JAX-differentiable to any order). D3 → 1 as t → 0 and → π⁴/(5 t³) as t → ∞. The
    integral is cut at x = u = min(t, 60) (the rest is < 1e-20 of it), then taken on
    s = x/u ∈ [0, 1]. Derivatives use the exact rule D3'(t) = 3/(e^t - 1) - 3 D3(t)/t
    (differentiating under the integral), not the quadrature's own derivative: each order
    costs one quadrature instead of differentiating 64 nodes again (C_V, α and K_T need
    second derivatives of F, and the (P, S) inversion evaluates them ~10⁶ times)."""
    t = jnp.asarray(t)
    u = jnp.minimum(t, _X_CUT)
    integral = jnp.sum(jnp.asarray(_WS2) * _y_over_expm1(u[..., None] * jnp.asarray(_S)), axis=-1)
    return 3.0 * (u / t) ** 3 * integral


@debye_d3.defjvp
def _debye_d3_jvp(primals, tangents):
    (t,), (dt,) = primals, tangents
    d3 = debye_d3(t)
    return d3, (3.0 * jnp.exp(-t) / -jnp.expm1(-t) - 3.0 * d3 / t) * dt


def debye_helmholtz(T, theta, n):
    """Debye (quasi-harmonic) free energy [J/mol] of ``n`` atoms per formula unit at
    temperature ``T`` [K] and Debye temperature ``theta`` [K]:
    n R T (3 ln(1 - e^-t) - D3(t)), t = θ/T (zero-point energy excluded, as in SLB)."""
    t = theta / T
    return n * GAS_CONSTANT * T * (3.0 * jnp.log(-jnp.expm1(-t)) - debye_d3(t))


@dataclasses.dataclass(frozen=True)
class Bridgmanite:
    """MgSiO3 bridgmanite (orthorhombic perovskite, SLB2011 'mpv'), SI units.

    Defaults are the published values of Stixrude & Lithgow-Bertelloni (2011), Geophys. J.
    Int. 184, 1180, Table A1 (row 'mpv'), converted to SI; the same numbers are in BurnMan's
    ``SLB_2011.mg_perovskite`` up to 2016 (geodynamics/burnman commit 30361d7a~1). BurnMan
    now carries the unrounded values of the HeFESTo parameter file inv251010 behind the
    table (V0 24.445 cm³/mol, K0 250.5264 GPa, K0' 4.14, θ0 905.9412 K, γ0 1.56508,
    q0 1.10945, F0 -1368.283 kJ/mol): pass those as fields to reproduce it.
    """

    name: str = "MgSiO3 bridgmanite (SLB2011)"
    #: M [kg/mol]: MgSiO3 from IUPAC atomic masses Mg 24.305, Si 28.0855, O 15.9994 g/mol
    #: (BurnMan's formula_mass gives the same 100.3887 g/mol).
    molar_mass: float = 0.1003887
    #: F0 [J/mol]: Helmholtz energy at (V0, T0); SLB2011 Table A1, -1368 kJ/mol.
    F0: float = -1368.0e3
    #: V0 [m³/mol]: SLB2011 Table A1, 24.45 cm³/mol.
    V0: float = 24.45e-6
    #: K0 [Pa]: isothermal bulk modulus at (V0, T0); SLB2011 Table A1, 251 GPa.
    K0: float = 251.0e9
    #: K0' [-]: dK/dP at (V0, T0); SLB2011 Table A1, 4.1.
    K0p: float = 4.1
    #: θ0 [K]: Debye temperature at V0; SLB2011 Table A1, 905 K.
    theta0: float = 905.0
    #: γ0 [-]: Grüneisen parameter at V0; SLB2011 Table A1, 1.57.
    gamma0: float = 1.57
    #: q0 [-]: d ln γ / d ln V at V0; SLB2011 Table A1, 1.1.
    q0: float = 1.1
    #: n [-]: atoms per formula unit (Mg + Si + 3 O).
    n: float = 5.0
    #: T0 [K]: reference temperature of SLB2005/2011.
    T0: float = 300.0

    def strain(self, V):
        """Eulerian finite strain f = ((V0/V)^(2/3) - 1)/2 [-]."""
        return 0.5 * ((self.V0 / V) ** (2.0 / 3.0) - 1.0)

    def debye_temperature(self, V):
        """θ(V) [K] = θ0 sqrt(1 + a_ii f + a_iikk f²/2) (SLB2005 eqs 41, 47)."""
        f = self.strain(V)
        g0 = self.gamma0
        a_ii = 6.0 * g0
        a_iikk = -12.0 * g0 + 36.0 * g0 * g0 - 18.0 * self.q0 * g0
        return self.theta0 * jnp.sqrt(1.0 + a_ii * f + 0.5 * a_iikk * f * f)

    def helmholtz(self, V, T):
        """Molar Helmholtz free energy F [J/mol] at V [m³/mol], T [K] (module docstring)."""
        f = self.strain(V)
        cold = 9.0 * self.K0 * self.V0 * (0.5 * f * f + 0.5 * (self.K0p - 4.0) * f**3)  # a3/6 = (K0'-4)/2
        theta = self.debye_temperature(V)
        thermal = debye_helmholtz(T, theta, self.n) - debye_helmholtz(self.T0, theta, self.n)
        return self.F0 + cold + thermal

    def volume_guess(self, P, T):
        """Start for the V(P, T) solve [m³/mol]: the Murnaghan volume
        V0 (1 + K0' P/K0)^(-1/K0') at T0, elementwise over ``P`` [Pa] (``T`` [K] only
        broadcast). Thermal expansion is left out, so it lies on the compressed side of
        V(P, T) (where Newton's steps on the convex P(V) do not overshoot towards the
        spinodal) except at high P and low T, where it is up to ~1.5 % above the BM3
        volume (150 GPa, 300 K); within 25 % of V(P, T) on 0-150 GPa x 300-6000 K (the
        largest gap next to the spinodal, module docstring)."""
        P, T = jnp.broadcast_arrays(jnp.asarray(P, dtype=jnp.float64), jnp.asarray(T, dtype=jnp.float64))
        x = jnp.maximum(1.0 + self.K0p * P / self.K0, 0.5)
        return self.V0 * x ** (-1.0 / self.K0p)
