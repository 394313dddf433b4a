"""Melting curves of the mantle: solidus and liquidus temperatures against pressure, as the
piecewise Simon–Glatzel fits of Monteux et al. (2016, EPSL 448, 140–149, eqs. 10–13).

    T(P) = T₀ (P / a + 1)^(1/c)      [K; P in Pa]

Upper mantle, P ≤ 20 GPa (Monteux et al. 2016 eqs. 10–11, their fits to the peridotite
melting data of Herzberg & Zhang 1996; the same curves as the "smooth" upper-mantle curves
of Hamano et al. 2013, Nature 497, 607):

    solidus   1661.2 K (P / 1.336 GPa + 1)^(1/7.437)
    liquidus  1982.1 K (P / 6.594 GPa + 1)^(1/5.374)

Lower mantle, P > 20 GPa (Monteux et al. 2016 eqs. 12–13, their fits to the chondritic
mantle of Andrault et al. 2011, EPSL 304, 251):

    solidus   2081.8 K (P / 101.69 GPa + 1)^(1/1.226)
    liquidus  2006.8 K (P / 34.65 GPa + 1)^(1/1.844)

The pieces meet at 20 GPa to within 2 K (tested), so the curves are continuous there; their
slopes jump by a few per cent. :func:`entropy_curve` converts a T(P) curve into the P–S
curve of a phase model (S_sol(P) = S_solid(P, T_sol(P)), S_liq(P) = S_melt(P, T_liq(P))),
which is what SPIDER-format tables store.
"""

from __future__ import annotations

import dataclasses

from aragog._jax import jnp
from aragog.eos.models._thermo import HelmholtzPhase, properties_PT

__all__ = ["SimonGlatzel", "MeltingCurve", "SOLIDUS", "LIQUIDUS", "entropy_curve"]


@dataclasses.dataclass(frozen=True)
class SimonGlatzel:
    """T = ``T0`` (P / ``a`` + 1)^(1/``c``): ``T0`` [K], ``a`` [Pa], ``c`` [-]."""

    T0: float
    a: float
    c: float

    def __call__(self, P):
        return self.T0 * (jnp.asarray(P, dtype=jnp.float64) / self.a + 1.0) ** (1.0 / self.c)


@dataclasses.dataclass(frozen=True)
class MeltingCurve:
    """``low`` up to ``P_switch`` [Pa], ``high`` above; ``name`` for labels and files."""

    name: str
    low: SimonGlatzel
    high: SimonGlatzel
    P_switch: float = 20e9

    def temperature(self, P):
        """T [K] at pressure ``P`` [Pa] (arrays)."""
        P = jnp.asarray(P, dtype=jnp.float64)
        return jnp.where(P <= self.P_switch, self.low(P), self.high(P))


#: Monteux et al. (2016) eqs. 10 and 12 (Herzberg & Zhang 1996 / Andrault et al. 2011).
SOLIDUS = MeltingCurve("solidus (Monteux et al. 2016: Herzberg & Zhang 1996, Andrault et al. 2011)",
                       SimonGlatzel(1661.2, 1.336e9, 7.437), SimonGlatzel(2081.8, 101.69e9, 1.226))

#: Monteux et al. (2016) eqs. 11 and 13, A-chondritic (Herzberg & Zhang 1996 / Andrault et al. 2011).
LIQUIDUS = MeltingCurve("liquidus (Monteux et al. 2016: Herzberg & Zhang 1996, Andrault et al. 2011)",
                        SimonGlatzel(1982.1, 6.594e9, 5.374), SimonGlatzel(2006.8, 34.65e9, 1.844))


def entropy_curve(curve: MeltingCurve, phase: HelmholtzPhase, P):
    """The specific entropy [J/kg/K] of ``phase`` on ``curve`` at pressures ``P`` [Pa]:
    S(P, T_curve(P)) from the phase model (:func:`aragog.eos.models._thermo.properties_PT`)."""
    P = jnp.asarray(P, dtype=jnp.float64)
    return properties_PT(phase, P, curve.temperature(P))["S"]
