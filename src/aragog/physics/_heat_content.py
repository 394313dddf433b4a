"""Enthalpy, heat content and compression work of the mantle cells (NumPy, no compiling).

These need T(P, S) and ρ(P, S) away from the (P, S) points of the mesh's state, at many
quadrature points. Inside a compiled program that would be a second EOS evaluation (it
doubled the "diagnostics" compile time, 6.6 s -> 14 s on the demo); the EOS blend is
cheap in NumPy instead. :class:`EnthalpyEOS` mirrors :func:`aragog.eos.evaluate_phase` and
:func:`aragog.eos.evaluate_constant` for T, ρ and c_p only (same cell search, same
``(1 - t) a + t b`` interpolation, same blend; tests/test_energy_budget.py checks it
against the JAX evaluator to rounding).

Definitions (SI units; N cells at the static pressures P_i, volumes V_i):

* specific enthalpy h(P, S) [J/kg] (upstream aragog, fwl-aragog 26.10.22,
  ``EntropyEOS._build_enthalpy_table``): the fundamental relation dh = T dS + dP/ρ
  integrated from the table corner (P_a, S_a) (lowest tabulated pressure and entropy of
  the two phase tables; h = 0 there) first along the isobar P_a, then along the isentrope:
  h(P, S) = ∫_{S_a}^{S} T(P_a, s) ds + ∫_{P_a}^{P} dp / ρ(p, S). Upstream tabulates this
  on the table grid (trapezoids) and interpolates bilinearly; here it is integrated at
  each point with composite Gauss-Legendre rules (the isobar on a fixed panel grid, so the
  nodes do not move with S). Constant-property mode: h = c_p (T - T_ref) + P/ρ exactly
  (anchor (0, S_ref)). The two-phase EOS is not exactly thermodynamically consistent in
  the mush (T and ρ are separate blends), so there dh ≠ T dS + dP/ρ along other paths:
  an enthalpy difference is a monitor, not what the entropy equation conserves.
* core temperature change along the CMB entropy (:func:`core_temperature_change`):
  ∫ T(P, s)/c_p(P, s) ds at the CMB pressure.
* heat content change of cell i between entropies S0_i and S1_i [J] (upstream
  ``_step_heat_content``): V_i ∫_{S0_i}^{S1_i} ρ(P_i, s) T(P_i, s) ds. The entropy
  equation ρ_i T_i V_i dS_i/dt = (F A)_i - (F A)_{i+1} + ρ_i H_i V_i makes the sum over
  the cells of this change equal to the boundary and source energy (the budget closes).
* adiabatic compression work when the static pressures change from P_old to P_new at
  fixed entropy S and fixed mass m [J] (upstream ``_compute_compression_work``):
  Σ m_i (h(P_new,i, S_i) - h(P_old,i, S_i)) = Σ m_i ∫_{P_old,i}^{P_new,i} dp/ρ(p, S_i).
"""

from __future__ import annotations

import numpy as np

from aragog.eos._host import NumpyEOS as HostEOS

__all__ = ["EnthalpyEOS", "specific_enthalpy", "heat_content_change", "core_temperature_change", "compression_work",
           "gauss_panels", "GAUSS_POINTS"]

#: Gauss-Legendre points per panel of every composite rule here (exact for degree 7).
GAUSS_POINTS = 4
_GX, _GW = np.polynomial.legendre.leggauss(GAUSS_POINTS)


def gauss_panels(a, b, n_panels: int):
    """Nodes and weights of the composite Gauss-Legendre rule on [a, b]: arrays of shape
    ``broadcast(a, b).shape + (n_panels * GAUSS_POINTS,)``; ∫_a^b f ≈ Σ w f(x) (a > b
    gives negative weights, the oriented integral)."""
    a = np.asarray(a, dtype=np.float64)[..., None, None]
    b = np.asarray(b, dtype=np.float64)[..., None, None]
    h = (b - a) / n_panels
    k = np.arange(n_panels, dtype=np.float64)[:, None]
    x = a + h * (k + 0.5 * (1.0 + _GX))
    w = 0.5 * h * _GW * np.ones_like(x)
    shape = x.shape[:-2] + (n_panels * GAUSS_POINTS,)
    return x.reshape(shape), w.reshape(shape)


class EnthalpyEOS(HostEOS):
    """:class:`aragog.eos._host.NumpyEOS` (T, ρ and c_p in NumPy) with the enthalpy's cached
    isobar integrals and isentrope nodes."""

    _isentrope = None  # (key, nodes, weights, their PressureLines) of the last pressures asked for

    def isentrope_nodes(self, P, n_panels: int):
        """``(nodes, weights, lines)``: the composite rule of ``n_panels`` panels on
        [P_a, P] for each pressure of ``P`` (shape ``P.shape + (4 n_panels,)``) and the
        pressure-only part of the EOS at those nodes (:meth:`~aragog.eos._host.NumpyEOS.at_pressure`),
        kept for the last ``P``: a solver's cells keep their static pressures from one
        state to the next, so only the entropy-dependent part is computed again."""
        P = np.asarray(P, dtype=np.float64)
        key = (P.shape, P.tobytes(), int(n_panels))
        if self._isentrope is None or self._isentrope[0] != key:
            x, w = gauss_panels(np.full(P.shape, self.anchor[0]), P, n_panels)
            self._isentrope = (key, x, w, self.at_pressure(x))
        return self._isentrope[1:]

    def isobar_integrals(self, n_panels: int):
        """(dS, cumulative ∫ T(P_a, s) ds over the fixed panels [S_a + k dS, S_a + (k+1) dS],
        shape (n_panels + 1,)): the state-independent part of :func:`specific_enthalpy`,
        computed once per EOS and panel count."""
        if self._isobar is None or self._isobar[0] != n_panels:
            P_a, S_a = self.anchor
            dS = (self.S_top - S_a) / n_panels
            edges = S_a + dS * np.arange(n_panels + 1)
            x, w = gauss_panels(edges[:-1], edges[1:], 1)
            cum = np.concatenate([[0.0], np.cumsum(np.sum(w * self.T(P_a, x), axis=-1))])
            self._isobar = (n_panels, dS, cum)
        return self._isobar[1], self._isobar[2]


def specific_enthalpy(eos: EnthalpyEOS, P, S, n_panels: int = 64):
    """h(P, S) [J/kg] (module docstring) at points of any common shape.

    Isobar: the cumulative integral over the whole fixed panels below S plus a 4-point
    rule on the partial panel; isentrope: ``n_panels`` equal panels of [P_a, P] with 4
    points each (error O(panel^2) across a kink of the bilinear tables, else far
    smaller). Cost: about ``4 (n_panels + 1)`` EOS evaluations per point.
    """
    P, S = np.broadcast_arrays(np.asarray(P, dtype=np.float64), np.asarray(S, dtype=np.float64))
    P_a, S_a = eos.anchor
    if eos.constant:
        return eos.cp * (eos(P, S)[0] - eos.T_ref) + (P - P_a) / eos.rho
    dS, cum = eos.isobar_integrals(n_panels)
    k = np.clip(np.floor((S - S_a) / dS), 0, n_panels - 1).astype(np.int64)
    xs, ws = gauss_panels(S_a + dS * k, S, 1)
    h = cum[k] + np.sum(ws * eos.T(P_a, xs), axis=-1)
    _, wp, lines = eos.isentrope_nodes(P, n_panels)  # the nodes of gauss_panels(P_a, P, n_panels)
    return h + np.sum(wp / eos.evaluate_at(lines, S[..., None], ("rho",))[0], axis=-1)


def heat_content_change(eos: EnthalpyEOS, P, V, S0, S1, n_panels: int = 32):
    """V_i ∫_{S0_i}^{S1_i} ρ(P_i, s) T(P_i, s) ds per cell [J], shape (N,) (P, V, S0, S1
    shape (N,)); ``n_panels`` equal panels with 4 Gauss points each (the integrand has
    kinks where s crosses a table node, so the error falls as panel^2 there)."""
    x, w = gauss_panels(S0, S1, n_panels)
    T, rho = eos(np.asarray(P, dtype=np.float64)[:, None], x)
    return np.asarray(V, dtype=np.float64) * np.sum(w * rho * T, axis=-1)


def core_temperature_change(eos: EnthalpyEOS, P, S0, S1, n_panels: int = 32) -> float:
    """∫_{S0}^{S1} T(P, s) / c_p(P, s) ds [K] at one pressure P [Pa]: the temperature change
    of the core whose CMB entropy goes from S0 to S1 [J/kg/K] (the core follows the CMB
    entropy as dT = (T/c_p) dS with the EOS's T and c_p; docs/physics.md, "Boundary
    conditions", CMB "energy_balance" and "quasi_steady"). Times -M_c c_c f it is the energy
    the core gave the mantle, whatever the path in time (module docstring of
    :mod:`aragog.solver._budget`)."""
    x, w = gauss_panels(float(S0), float(S1), n_panels)
    T, cp = eos.evaluate(np.full(x.shape, float(P)), x, ("T", "cp"))
    return float(np.sum(w * T / cp))


def compression_work(eos: EnthalpyEOS, P_old, P_new, S, mass, n_panels: int = 4) -> float:
    """Σ m_i ∫_{P_old,i}^{P_new,i} dp/ρ(p, S_i) [J] (module docstring); 0 when the
    pressures are equal. All arrays shape (N,)."""
    P_old, P_new = np.asarray(P_old, dtype=np.float64), np.asarray(P_new, dtype=np.float64)
    if np.array_equal(P_old, P_new):
        return 0.0
    x, w = gauss_panels(P_old, P_new, n_panels)
    return float(np.sum(np.asarray(mass) * np.sum(w / eos.density(x, np.asarray(S)[:, None]), axis=-1)))
