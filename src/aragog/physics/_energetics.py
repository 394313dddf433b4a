"""Energy diagnostics of one state that the compiled "diagnostics" program carries.

Pure JAX (arrays in, arrays out; ``options`` static, everything else traced), evaluated
inside the existing "diagnostics" program (:func:`aragog.physics.diagnostics_of` puts an
:class:`EnergyDiagnostics` on ``Diagnostics.energy``), so no compiled program is added.
It reuses the phase state the diagnostics already hold: no further EOS evaluation (a
second EOS evaluation in the program doubled its compile time, 6.6 s -> 14 s on the demo).
The enthalpy and the heat content, which need the EOS off the mesh's (P, S) points, are
NumPy (:mod:`aragog.physics._heat_content`).

N cells, N+1 basic nodes; SI units. The definitions follow the upstream aragog
(fwl-aragog 26.10.22, ``EntropySolver.get_state``), restated here:

* Cp_eff = Σ ρ_i V_i c_p,i / M_mantle [J/kg/K] (M_mantle = Σ m_i, m = mesh.mass_stag the
  structural cell mass; upstream's ratio of the EOS-mass-weighted heat capacity to the
  structural mantle mass).
* Phi_global_vol = Σ ψ_i V_i / Σ V_i: the melt volume fraction ψ = φ ρ_bulk / ρ_liq with
  1/ρ_bulk = φ/ρ_liq + (1 - φ)/ρ_sol (ρ_sol, ρ_liq the phase-boundary densities at P_i),
  clipped to [0, 1]; algebraically upstream's (ρ_sol - ρ_bulk)/(ρ_sol - ρ_liq) without
  its division by ρ_sol - ρ_liq (1 in constant-property mode).
* Q_radio_live, Q_tidal_live [W]: Σ ρ_i V_i H_i with the EOS density (the powers the
  entropy equation receives: Σ ρ T V dS/dt = F_0 A_0 - F_N A_N + Q_radio_live +
  Q_tidal_live); the structural-mass powers are ``Diagnostics.Q_radio_total`` and
  ``Q_tidal_total``.
* basic-node profiles: dSdr_basic (the entropy gradient the flux laws use), eddy_diff (the
  thermal eddy diffusivity κ_h of the convective flux, 0 where dS/dr >= 0 or with
  convection off), cp_basic, rho_basic (EOS c_p and density at the basic nodes).
"""

from __future__ import annotations

from typing import Any

from aragog._jax import jnp
from aragog._pytree import data_pytree
from aragog.physics._inputs import PhysicsInputs

__all__ = ["EnergyDiagnostics", "energy_diagnostics", "melt_volume_fraction"]


@data_pytree
class EnergyDiagnostics:
    """Energy quantities of one state (``Diagnostics.energy``); SI units.

    Basic nodes (N+1,): dSdr_basic [J/kg/K/m], eddy_diff [m2/s], cp_basic [J/kg/K],
    rho_basic [kg/m3]. Scalars: Phi_global_vol [-], Cp_eff [J/kg/K], Q_radio_live,
    Q_tidal_live [W]. Definitions: module docstring.
    """

    dSdr_basic: Any
    eddy_diff: Any
    cp_basic: Any
    rho_basic: Any
    Phi_global_vol: Any
    Cp_eff: Any
    Q_radio_live: Any
    Q_tidal_live: Any


def melt_volume_fraction(st):
    """ψ = clip(φ ρ_bulk/ρ_liq, 0, 1) with 1/ρ_bulk = φ/ρ_liq + (1 - φ)/ρ_sol (the volume
    fraction of melt of a mixture of melt and solid at their phase-boundary densities);
    ``st`` an :class:`aragog.eos.PhaseState`. Same shape as ``st.phi``."""
    rho_bulk = 1.0 / (st.phi / st.rho_liq + (1.0 - st.phi) / st.rho_sol)
    return jnp.clip(st.phi * rho_bulk / st.rho_liq, 0.0, 1.0)


def energy_diagnostics(st_c, st_b, dSdr_b, kappa_h, H_radio, H_tidal, inputs: PhysicsInputs) -> EnergyDiagnostics:
    """:class:`EnergyDiagnostics` of one state.

    Args:
        st_c, st_b: EOS and phase state at the N cells and the N+1 basic nodes.
        dSdr_b: (N+1,) entropy gradient at the basic nodes [J/kg/K/m].
        kappa_h: (N+1,) thermal eddy diffusivity the convective flux used [m2/s] (zeros
            with convection off).
        H_radio: radiogenic heating [W/kg], scalar or (N,); H_tidal: (N,) [W/kg].
    """
    mesh = inputs.mesh
    V, m = mesh.volume_stag, mesh.mass_stag
    live = st_c.rho * V  # EOS (live) cell mass [kg]
    M = jnp.sum(m)
    H_radio = jnp.broadcast_to(jnp.asarray(H_radio, dtype=jnp.float64), V.shape)
    return EnergyDiagnostics(
        dSdr_basic=dSdr_b, eddy_diff=kappa_h, cp_basic=st_b.cp, rho_basic=st_b.rho,
        Phi_global_vol=jnp.sum(melt_volume_fraction(st_c) * V) / jnp.sum(V),
        Cp_eff=jnp.sum(live * st_c.cp) / jnp.maximum(M, 1.0),
        Q_radio_live=jnp.sum(live * H_radio), Q_tidal_live=jnp.sum(live * H_tidal),
    )
