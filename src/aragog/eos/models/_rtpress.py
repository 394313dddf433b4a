"""MgSiO3 liquid: the RTpress equation of state of Wolf & Bower (2018), as a Helmholtz free
energy F(V, T) in JAX (every property then follows by autodiff, :mod:`._thermo`).

Model (Wolf & Bower 2018, model section; the paper's symbols; here per mole of formula
units, n = 5 atoms, so per-atom energies are multiplied by n N_A)
------------------------------------------------------------------------------------------
Reference isotherm T0: the Vinet form,

    F(V, T0) = E0 + F_c(V),
    F_c(V) = 9 K0 V0 / η² [1 - (1 - η(1 - x)) exp(η(1 - x))],   x = (V/V0)^(1/3),
    P_c(V) = -dF_c/dV = 3 K0 (1 - x) / x² exp(η(1 - x)),         η = 3/2 (K0' - 1),

so P(V, T0) = P_c(V), P(V0, T0) = 0 and K_T(V0, T0) = K0 exactly.

Thermal part (generalised Rosenfeld–Tarazona): the potential energy scales as
b(V) (T/T0)^m with m = 3/5 and b(V) = Σ_k b_k (V/V0 - 1)^k (k = 0..4); with the kinetic
energy of the atoms, 3/2 n k_B T per formula unit (here C_kin = 3/2 n R per mole),

    E(V, T) - E(V, T0) = b(V) [(T/T0)^m - 1] + C_kin (T - T0),
    C_V(V, T) = b(V) (m / T0) (T/T0)^(m-1) + C_kin.

Reference adiabat: the Grüneisen parameter along the adiabat through (V0, T0)
has the finite-strain form, with f = [(V/V0)^(-2/3) - 1] / 2,

    T_0S(V) = T0 sqrt(1 + a1 f + a2 f² / 2),   a1 = 6 γ0,   a2 = -12 γ0 + 36 γ0² - 18 γ0',
    γ_0S(V) = -dln T_0S / dln V = (2f + 1)(a1 + a2 f) / [6 (1 + a1 f + a2 f² / 2)],

so γ_0S(V0) = γ0 and (dγ_0S/dln V)(V0) = γ0'.

Entropy (thermodynamic integration along an isochore from the reference adiabat, where
S = S0):

    S(V, T) = S0 + b(V) m / [(m - 1) T0] [(T/T0)^(m-1) - (T_0S/T0)^(m-1)] + C_kin ln(T / T_0S).

Free energy, F(V, T) = F(V, T0) - ∫_{T0}^{T} S(V, T') dT' (closed form, used here):

    F(V, T) = E0 + F_c(V) - S0 (T - T0)
              - b(V)/(m - 1) [(T/T0)^m - 1 - m (T_0S/T0)^(m-1) (T - T0)/T0]
              - C_kin [T ln(T/T_0S) - T0 ln(T0/T_0S) - (T - T0)].

This is the free energy whose derivatives are the paper's pressure (isothermal Vinet part
plus the thermal pressure of the Rosenfeld–Tarazona and adiabat terms), entropy, energy and
heat capacity. The electronic-excitation term that Wolf & Bower subtract from the de Koker
& Stixrude (2009) MD data before fitting is not part of this (electron-free) model.

Parameters: the paper fits RTpress to two MD data sets of MgSiO3 liquid and tabulates both
(per atom; :data:`PAPER_S11`, :data:`PAPER_DK09`; fixed in both: T0 = 3000 K, m = 3/5,
S0 = 0, P0 = 0):

* S11, classical MD of Spera et al. (2011): V0 = 12.949 Å³, K0 = 13.20 GPa, K0' = 8.238,
  E0 = -20.5953 eV, γ0 = 0.1899, γ0' = -1.940, b0..b4 = 0.9821, 0.615, 1.31, -3.0, -4.1 eV
  (RMS misfit 0.6 GPa, 0.006 eV/atom). **The defaults of** :class:`RTpressMelt`: it is the
  set the authors' code library ships as its MgSiO3 RTpress melt, and the closer of the two
  to SPIDER's legacy ``RTmelt`` tables (density 0.5 % RMS; tests/test_eos_rtpress.py).
* dK09, first-principles MD of de Koker & Stixrude (2009), electronic-excitation term
  removed before fitting: V0 = 14.74 Å³, K0 = 9.77 GPa, K0' = 7.42, E0 = -6.850 eV,
  γ0 = 0.282, γ0' = -1.35, b0..b4 = 1.118, -0.05, 2.1, 12.9, 15.5 eV (RMS misfit 3.5 GPa,
  0.043 eV/atom); :meth:`RTpressMelt.dekoker2009`. Its isotherms above ~3900 K have a
  pressure minimum > 0 (no liquid state at P = 0 there; 1.4 GPa at 5000 K).

The values (and the misfits) were checked against the authors' stored fits (github
aswolf/xmeos, examples/test-RTpress-MgSiO3) and the RTpress constants in SPIDER (github
djbower/spider, whose six reference pressures of the dK09 set this model reproduces to
1e-8 GPa). The paper's text was not available offline, so its equation, section and table numbers
are not quoted here.

References
----------
Wolf, A.S. and Bower, D.J. (2018), An equation of state for high pressure-temperature
liquids (RTpress) with application to MgSiO3 melt, Phys. Earth Planet. Inter. 278, 59-74,
doi:10.1016/j.pepi.2018.02.004.
de Koker, N. and Stixrude, L. (2009), Self-consistent thermodynamic description of silicate
liquids, with application to shock melting of MgSiO3 perovskite, Geophys. J. Int. 178,
162-179.
Rosenfeld, Y. and Tarazona, P. (1998), Density functional theory and the asymptotic high
density expansion of the free energy of classical solids and fluids, Mol. Phys. 95, 141-150.
Vinet, P. et al. (1989), Universal features of the equation of state of solids, J. Phys.:
Condens. Matter 1, 1941-1963.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from aragog._jax import jnp

__all__ = ["RTpressMelt", "N_ATOMS", "MOLAR_MASS_MGSIO3", "PAPER_S11", "PAPER_DK09", "from_per_atom"]

AVOGADRO = 6.02214076e23  # 1/mol (exact, SI 2019)
ELECTRON_VOLT = 1.602176634e-19  # J (exact)
GAS_CONSTANT = 8.314462618  # J/mol/K (N_A k_B)
N_ATOMS = 5  # atoms per MgSiO3 formula unit
MOLAR_MASS_MGSIO3 = 0.1003887  # kg/mol

_PER_ATOM = N_ATOMS * AVOGADRO  # (per atom) -> (per mole of formula units)
_A3 = 1e-30  # m³ per Å³


def _vol(v_A3_atom: float) -> float:
    """Å³/atom -> m³/mol (formula units)."""
    return v_A3_atom * _A3 * _PER_ATOM


def _energy(e_eV_atom: float) -> float:
    """eV/atom -> J/mol (formula units)."""
    return e_eV_atom * ELECTRON_VOLT * _PER_ATOM


# Wolf & Bower (2018), fitted-parameter table, per atom (V0 Å³, K0 GPa, E0 and b_k eV), as
# printed there (value(1σ) rounded to 2 significant digits of the error). Fixed, not fitted:
# T0 = 3000 K, m = 3/5, S0 = 0, P0 = 0 (both fits).
#: "S11": fit to the classical MD of Spera et al. (2011) (Oganov et al. 2000 potential).
PAPER_S11 = dict(V0=12.949, K0=13.20, K0p=8.238, E0=-20.5953, gamma0=0.1899, gamma0p=-1.940,
                 b=(0.9821, 0.615, 1.31, -3.0, -4.1))
#: "dK09": fit to the first-principles MD of de Koker & Stixrude (2009), electronic
#: excitation contribution removed before fitting.
PAPER_DK09 = dict(V0=14.74, K0=9.77, K0p=7.42, E0=-6.850, gamma0=0.282, gamma0p=-1.35,
                  b=(1.118, -0.05, 2.1, 12.9, 15.5))
_T0 = 3000.0  # T0 = 3000 K (reference temperature, fixed)
_M = 0.6  # m = 3/5 (Rosenfeld–Tarazona exponent, fixed)
_D = PAPER_S11  # the dataclass defaults (see RTpressMelt)


@dataclasses.dataclass(frozen=True)
class RTpressMelt:
    """MgSiO3 liquid, RTpress (Wolf & Bower 2018), a :class:`~.thermo.HelmholtzPhase`.

    All fields SI, per mole of formula units (MgSiO3, ``n_atoms`` = 5):
    ``V0`` [m³/mol], ``K0`` [Pa], ``K0p`` [-], ``E0`` [J/mol], ``S0`` [J/mol/K], ``T0`` [K],
    ``gamma0``, ``gamma0p`` [-], ``m`` [-], ``b`` (b0..b4) [J/mol], ``molar_mass`` [kg/mol].
    Defaults: the paper's S11 fit (:data:`PAPER_S11`); :meth:`dekoker2009` gives the
    dK09 fit (:data:`PAPER_DK09`). Module docstring for the equations.
    """

    name: str = "MgSiO3 melt (RTpress, Wolf & Bower 2018)"
    molar_mass: float = MOLAR_MASS_MGSIO3
    n_atoms: int = N_ATOMS
    V0: float = _vol(_D["V0"])
    K0: float = _D["K0"] * 1e9
    K0p: float = _D["K0p"]
    E0: float = _energy(_D["E0"])
    S0: float = 0.0
    T0: float = _T0
    gamma0: float = _D["gamma0"]
    gamma0p: float = _D["gamma0p"]
    m: float = _M
    b: tuple = tuple(_energy(x) for x in _D["b"])

    @classmethod
    def spera2011(cls) -> "RTpressMelt":
        """The paper's S11 fit (classical MD, Spera et al. 2011): the defaults."""
        return from_per_atom(**PAPER_S11)

    @classmethod
    def dekoker2009(cls) -> "RTpressMelt":
        """The paper's dK09 fit (first-principles MD, de Koker & Stixrude 2009)."""
        return from_per_atom(name="MgSiO3 melt (RTpress dK09, Wolf & Bower 2018)", **PAPER_DK09)

    # -- pieces (all scalar-or-array JAX, SI) ------------------------------------------
    @property
    def c_kin(self) -> float:
        """Kinetic heat capacity 3/2 n R [J/mol/K]."""
        return 1.5 * self.n_atoms * GAS_CONSTANT

    def b_of_V(self, V):
        """b(V) = Σ b_k (V/V0 - 1)^k [J/mol] (Horner)."""
        u = V / self.V0 - 1.0
        acc = jnp.zeros_like(u) + self.b[-1]
        for coef in self.b[-2::-1]:
            acc = acc * u + coef
        return acc

    def vinet_F(self, V):
        """F_c(V) - F_c(V0) on the reference isotherm [J/mol] (Vinet)."""
        eta = 1.5 * (self.K0p - 1.0)
        x = (V / self.V0) ** (1.0 / 3.0)
        u = eta * (1.0 - x)
        return 9.0 * self.K0 * self.V0 / eta**2 * (1.0 - (1.0 - u) * jnp.exp(u))

    def vinet_P(self, V):
        """P_c(V) = -dF_c/dV [Pa]."""
        eta = 1.5 * (self.K0p - 1.0)
        x = (V / self.V0) ** (1.0 / 3.0)
        return 3.0 * self.K0 * (1.0 - x) / x**2 * jnp.exp(eta * (1.0 - x))

    def adiabat_T(self, V):
        """T_0S(V): temperature on the reference adiabat through (V0, T0) [K]."""
        a1 = 6.0 * self.gamma0
        a2 = -12.0 * self.gamma0 + 36.0 * self.gamma0**2 - 18.0 * self.gamma0p
        f = 0.5 * ((V / self.V0) ** (-2.0 / 3.0) - 1.0)
        return self.T0 * jnp.sqrt(1.0 + a1 * f + 0.5 * a2 * f**2)

    def adiabat_gamma(self, V):
        """γ_0S(V) = -dln T_0S/dln V on the reference adiabat [-]."""
        a1 = 6.0 * self.gamma0
        a2 = -12.0 * self.gamma0 + 36.0 * self.gamma0**2 - 18.0 * self.gamma0p
        f = 0.5 * ((V / self.V0) ** (-2.0 / 3.0) - 1.0)
        return (2.0 * f + 1.0) * (a1 + a2 * f) / (6.0 * (1.0 + a1 * f + 0.5 * a2 * f**2))

    # -- the protocol --------------------------------------------------------------------
    def helmholtz(self, V, T):
        """Molar Helmholtz free energy F(V, T) [J/mol] of V [m³/mol], T [K] (module
        docstring); smooth (C^∞) for V > 0, T > 0."""
        T0, m = self.T0, self.m
        Ta = self.adiabat_T(V)
        bV = self.b_of_V(V)
        dT = T - T0
        pot = bV / (m - 1.0) * ((T / T0) ** m - 1.0 - m * (Ta / T0) ** (m - 1.0) * dT / T0)
        lnTa = jnp.log(Ta)
        kin = self.c_kin * (T * jnp.log(T) - T0 * np.log(T0) - dT * lnTa - dT)
        return self.E0 + self.vinet_F(V) - self.S0 * dT - pot - kin

    def volume_guess(self, P, T):
        """A start for the Newton solve of P(V, T) = P [m³/mol], arrays: the reference
        isotherm inverted approximately (Murnaghan form V0 (1 + K0' P/K0)^(-1/K0')) and
        a thermal expansion exp(α0 (T - T0) / (1 + K0' P / K0)) with α0 = 6e-5 /K. Within
        ~15 % of the solution over 0-150 GPa, 1500-6000 K (tests check a factor 2)."""
        P = jnp.asarray(P, dtype=jnp.float64)
        T = jnp.asarray(T, dtype=jnp.float64)
        s = 1.0 + self.K0p * jnp.maximum(P, 0.0) / self.K0
        return self.V0 * s ** (-1.0 / self.K0p) * jnp.exp(6e-5 * (T - self.T0) / s)


def from_per_atom(**kw) -> RTpressMelt:
    """An :class:`RTpressMelt` from parameters in the paper's per-atom units: ``V0``
    [Å³/atom], ``K0`` [GPa], ``E0`` and ``b`` [eV/atom], the rest as in the dataclass."""
    conv = {"V0": _vol, "K0": lambda k: k * 1e9, "E0": _energy,
            "b": lambda bs: tuple(_energy(x) for x in bs), "S0": lambda s: s * ELECTRON_VOLT * _PER_ATOM}
    return RTpressMelt(**{k: conv.get(k, lambda v: v)(v) for k, v in kw.items()})
