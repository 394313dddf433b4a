"""The MgSiO3 table model: RTpress melt, SLB bridgmanite and the Monteux et al. (2016)
melting curves, generated as SPIDER-style (P, S) tables (``eos.model = "mgsio3"``,
``aragog eos generate DIR --model mgsio3``; docs/eos_tables.md, "The MgSiO3 model").

Phases (each a Helmholtz free energy F(V, T) in JAX; every property by autodiff,
:mod:`._thermo`):

* melt: :class:`~.rtpress.RTpressMelt`, Wolf & Bower (2018) RTpress, their S11 fit;
* solid: :class:`~.bridgmanite.Bridgmanite`, Stixrude & Lithgow-Bertelloni (2011)
  Mie–Grüneisen–Debye MgSiO3 bridgmanite.

Melting curves: :data:`~.melting.SOLIDUS` and :data:`~.melting.LIQUIDUS`, converted to
entropy with each phase's own model, S_sol(P) = S_solid(P, T_sol(P)) and
S_liq(P) = S_melt(P, T_liq(P)).

Entropy reference
-----------------
The bridgmanite entropy is absolute (third law: the Debye model has S → 0 as T → 0). The
RTpress entropy is defined up to a constant (the paper sets S = 0 on its reference adiabat
through V0 and 3000 K). Only differences between the phases matter to the solver: the melt
fraction and the latent heat come from S_liq(P) − S_sol(P). The melt is given the constant
:attr:`MgSiO3Model.melt_entropy_offset`, 4047 J kg⁻¹ K⁻¹, as the ``S0`` of its free energy,
so every identity still holds exactly.

The value is the least-squares fit, over 0–135 GPa, of S_liq − S_sol to the same difference
in SPIDER's "1TPa-dK09-elec-free" set. That set has the same Andrault et al. (2011) /
Hamano et al. (2013) melting curves ("A11_H13"; Bower et al. 2018, 2022). The fit leaves
at most 77 J kg⁻¹ K⁻¹ between the two (RMS 31).

So S_liq − S_sol is 844 J kg⁻¹ K⁻¹ at 0 GPa, 660 at 25 GPa and 853 at 135 GPa. The
entropy of fusion at the solidus temperature is 520–630 J kg⁻¹ K⁻¹ of that, close to the
~1.5 k_B per atom (620 J kg⁻¹ K⁻¹) of MgSiO3 found by first-principles MD (Stixrude et al.
2009, EPSL 278, 226). The rest is the melt's sensible heat between T_sol and T_liq.
tools/eos_compare.py reports both.

Table ranges
------------
* P: uniform on [0, ``P_max``]. The default P_max is 150 GPa, beyond Earth's core–mantle
  boundary. Bridgmanite turns to post-perovskite above ~125 GPa, which is not modelled.
  :data:`P_FITTED` (150 GPa) is the top of the pressures the published fits cover (the
  RTpress melt's MD data, SLB2011's lower-mantle bridgmanite, the melting curves'
  experiments, all up to about Earth's core–mantle boundary). A planet whose mantle goes
  deeper gets tables to its base pressure (``eos.model = "mgsio3"`` with the solver), with a
  warning that the deeper properties are extrapolations.
* S, per phase: uniform between the entropies of the phase at P = 0 and
  :attr:`MgSiO3Model.T_solid` (150–4000 K) or :attr:`MgSiO3Model.T_melt` (1500–5000 K).
  At higher P the same entropies are hotter states: the solid reaches ~7600 K and the melt
  ~8700 K at 150 GPa.
* Every node must be a converged state of its phase, or generation fails with
  :class:`~aragog.errors.EOSError`. For example, bridgmanite has a spinodal at low pressure
  above ~4470 K, so the solid's range stops at 4000 K, as SPIDER's does.
"""

from __future__ import annotations

import dataclasses
import hashlib

from aragog.eos.models._bridgmanite import Bridgmanite
from aragog.eos.models._melting import LIQUIDUS, SOLIDUS, MeltingCurve
from aragog.eos.models._rtpress import RTpressMelt

__all__ = ["MgSiO3Model", "MGSIO3", "MODEL_NAME", "MODEL_VERSION", "DEFAULT_NP", "DEFAULT_NS", "P_FITTED"]

MODEL_NAME = "mgsio3"
#: Bump whenever the generator's numbers change for the same parameters (cache key).
MODEL_VERSION = "1"
#: Default table size: 200 pressures (0.75 GPa apart up to 150 GPa) x 200 entropies
#: (17 J/kg/K apart in the solid, 13 in the melt: bilinear error in T ~ 1e-5 relative).
DEFAULT_NP = 200
DEFAULT_NS = 200
#: Pa: the top of the pressures the published fits behind the model cover (module docstring).
P_FITTED = 150.0e9


@dataclasses.dataclass(frozen=True)
class MgSiO3Model:
    """Parameters of the generated MgSiO3 set (module docstring). Fields SI; frozen, so
    :meth:`digest` identifies the numbers it generates (with :data:`MODEL_VERSION`)."""

    #: the melt's Helmholtz model, before the entropy offset (RTpress S11)
    melt_eos: RTpressMelt = RTpressMelt()
    #: the solid's Helmholtz model (SLB2011 bridgmanite)
    solid_eos: Bridgmanite = Bridgmanite()
    solidus: MeltingCurve = SOLIDUS
    liquidus: MeltingCurve = LIQUIDUS
    #: J/kg/K added to the melt's entropy (module docstring, "Entropy reference")
    melt_entropy_offset: float = 4047.0
    #: K: the solid's entropy axis spans S_solid(0, T) for T in this range (a cooled
    #: surface approaches the equilibrium temperature, 273 K in the demo: the table
    #: reaches below it; 4000 K is below the spinodal)
    T_solid: tuple[float, float] = (150.0, 4000.0)
    #: K: the melt's entropy axis spans S_melt(0, T) for T in this range
    T_melt: tuple[float, float] = (1500.0, 5000.0)
    #: Pa: default top of the pressure axis
    P_max: float = 150.0e9

    @property
    def melt(self) -> RTpressMelt:
        """The melt phase with the entropy offset in its free energy (S0 = offset x M)."""
        base = self.melt_eos
        return dataclasses.replace(base, S0=base.S0 + self.melt_entropy_offset * base.molar_mass)

    @property
    def solid(self) -> Bridgmanite:
        return self.solid_eos

    def phase(self, name: str):
        """``"melt"`` or ``"solid"``: that phase's Helmholtz model."""
        return {"melt": self.melt, "solid": self.solid}[name]

    def temperature_range(self, name: str) -> tuple[float, float]:
        return {"melt": self.T_melt, "solid": self.T_solid}[name]

    def digest(self) -> str:
        """SHA-256 (16 hex digits) of every parameter and :data:`MODEL_VERSION`; the
        dataclass repr prints floats exactly (shortest round-trip repr)."""
        return hashlib.sha256(f"{MODEL_NAME}-v{MODEL_VERSION}:{self!r}".encode()).hexdigest()[:16]


#: The published-parameter model ``eos.model = "mgsio3"`` uses.
MGSIO3 = MgSiO3Model()
