"""Enthalpy, heat content and compression work of the mantle cells (NumPy, no compiling).

These need T(P, S) and ρ(P, S) away from the (P, S) points of the mesh's state, at many
quadrature points. Inside a compiled program that would be a second EOS evaluation (it
doubled the "diagnostics" compile time, 6.6 s -> 14 s on the demo); the EOS blend is
cheap in NumPy instead. :class:`NumpyEOS` mirrors :func:`aragog.eos.evaluate_phase` and
:func:`aragog.eos.evaluate_constant` for T and ρ only (same cell search, same
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

__all__ = ["NumpyEOS", "specific_enthalpy", "heat_content_change", "compression_work",
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


def _cell(axis, x):
    """Cell index i (axis[i] <= x < axis[i+1], clipped to [0, n-2]) and fraction t of ``x``
    clipped to the axis range: ``aragog.eos.lookup.cell_bounds``."""
    xc = np.clip(x, axis[0], axis[-1])
    i = np.clip(np.searchsorted(axis, xc, side="right") - 1, 0, axis.size - 2)
    x0, x1 = axis[i], axis[i + 1]
    return i, (xc - x0) / (x1 - x0)


def _bilinear(values, cp_, cs_):
    i, tp = cp_
    j, ts = cs_
    lo = (1.0 - tp) * values[j, i] + tp * values[j, i + 1]
    hi = (1.0 - tp) * values[j + 1, i] + tp * values[j + 1, i + 1]
    return (1.0 - ts) * lo + ts * hi


class NumpyEOS:
    """T(P, S) [K] and ρ(P, S) [kg/m3] of the solver's EOS, in NumPy.

    Args:
        eos: the ``PhysicsInputs.eos`` leaf: an :class:`aragog.eos.EOSTables` (two-phase
            tables) or an :class:`aragog.eos.ConstantParams` (``constant``).
        smooth_width: the blend width w (``MaterialParams.smooth_width``; tables only).
        constant: ``PhysicsOptions.constant_properties``.
    """

    def __init__(self, eos, smooth_width=None, constant: bool = False):
        self.constant = bool(constant)
        f = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        if self.constant:
            self.rho, self.cp, self.T_ref, self.S_ref = (float(f(getattr(eos, k))) for k in ("rho", "cp", "T_ref", "S_ref"))
            self.anchor = (0.0, self.S_ref)
            return
        self.melt = {k: f(getattr(eos.melt, k)) for k in ("P", "S", "T", "rho")}
        self.solid = {k: f(getattr(eos.solid, k)) for k in ("P", "S", "T", "rho")}
        self.sol = (f(eos.solidus.P), f(eos.solidus.S))
        self.liq = (f(eos.liquidus.P), f(eos.liquidus.S))
        self.w = float(smooth_width)
        #: (P_a, S_a): where the enthalpy is 0 (the table corner)
        self.anchor = (min(self.melt["P"][0], self.solid["P"][0]), min(self.melt["S"][0], self.solid["S"][0]))
        #: highest tabulated entropy (end of the isobar panel grid)
        self.S_top = max(self.melt["S"][-1], self.solid["S"][-1])
        self._isobar = None

    def __call__(self, P, S):
        """(T, ρ) at (P, S) (any broadcastable shapes)."""
        P, S = np.broadcast_arrays(np.asarray(P, dtype=np.float64), np.asarray(S, dtype=np.float64))
        if self.constant:
            return self.T_ref * np.exp((S - self.S_ref) / self.cp), np.full(S.shape, self.rho)
        m, s = self.melt, self.solid

        def boundary(b):
            i, t = _cell(b[0], P)
            return (1.0 - t) * b[1][i] + t * b[1][i + 1]

        S_sol, S_liq = boundary(self.sol), boundary(self.liq)
        g = (S - S_sol) / (S_liq - S_sol)
        phi = np.clip(g, 0.0, 1.0)
        cp_m, cp_s = _cell(m["P"], P), _cell(s["P"], P)
        T_liq = _bilinear(m["T"], cp_m, _cell(m["S"], S_liq))
        rho_liq = _bilinear(m["rho"], cp_m, _cell(m["S"], S_liq))
        cs_sol = _cell(s["S"], S_sol)
        T_sol, rho_sol = _bilinear(s["T"], cp_s, cs_sol), _bilinear(s["rho"], cp_s, cs_sol)
        T_mix = phi * T_liq + (1.0 - phi) * T_sol
        rho_mix = 1.0 / (phi / rho_liq + (1.0 - phi) / rho_sol)
        melt_side = g > 0.5
        cs_m, cs_s = _cell(m["S"], S), _cell(s["S"], S)
        T_one = np.where(melt_side, _bilinear(m["T"], cp_m, cs_m), _bilinear(s["T"], cp_s, cs_s))
        rho_one = np.where(melt_side, _bilinear(m["rho"], cp_m, cs_m), _bilinear(s["rho"], cp_s, cs_s))
        th = np.tanh(np.where(melt_side, g - 1.0, g) * (1.0 / self.w))
        W = np.where(melt_side, 1.0 - 0.5 * (1.0 + th), 0.5 * (1.0 + th))
        return W * T_mix + (1.0 - W) * T_one, W * rho_mix + (1.0 - W) * rho_one

    def isobar_integrals(self, n_panels: int):
        """(dS, cumulative ∫ T(P_a, s) ds over the fixed panels [S_a + k dS, S_a + (k+1) dS],
        shape (n_panels + 1,)): the state-independent part of :func:`specific_enthalpy`,
        computed once per EOS and panel count."""
        if self._isobar is None or self._isobar[0] != n_panels:
            P_a, S_a = self.anchor
            dS = (self.S_top - S_a) / n_panels
            edges = S_a + dS * np.arange(n_panels + 1)
            x, w = gauss_panels(edges[:-1], edges[1:], 1)
            cum = np.concatenate([[0.0], np.cumsum(np.sum(w * self(P_a, x)[0], axis=-1))])
            self._isobar = (n_panels, dS, cum)
        return self._isobar[1], self._isobar[2]


def specific_enthalpy(eos: NumpyEOS, P, S, n_panels: int = 64):
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
    h = cum[k] + np.sum(ws * eos(P_a, xs)[0], axis=-1)
    xp, wp = gauss_panels(np.full(P.shape, P_a), P, n_panels)
    return h + np.sum(wp / eos(xp, S[..., None])[1], axis=-1)


def heat_content_change(eos: NumpyEOS, P, V, S0, S1, n_panels: int = 32):
    """V_i ∫_{S0_i}^{S1_i} ρ(P_i, s) T(P_i, s) ds per cell [J], shape (N,) (P, V, S0, S1
    shape (N,)); ``n_panels`` equal panels with 4 Gauss points each (the integrand has
    kinks where s crosses a table node, so the error falls as panel^2 there)."""
    x, w = gauss_panels(S0, S1, n_panels)
    T, rho = eos(np.asarray(P, dtype=np.float64)[:, None], x)
    return np.asarray(V, dtype=np.float64) * np.sum(w * rho * T, axis=-1)


def compression_work(eos: NumpyEOS, P_old, P_new, S, mass, n_panels: int = 4) -> float:
    """Σ m_i ∫_{P_old,i}^{P_new,i} dp/ρ(p, S_i) [J] (module docstring); 0 when the
    pressures are equal. All arrays shape (N,)."""
    P_old, P_new = np.asarray(P_old, dtype=np.float64), np.asarray(P_new, dtype=np.float64)
    if np.array_equal(P_old, P_new):
        return 0.0
    x, w = gauss_panels(P_old, P_new, n_panels)
    return float(np.sum(np.asarray(mass) * np.sum(w / eos(x, np.asarray(S)[:, None])[1], axis=-1)))
