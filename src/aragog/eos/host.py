"""The two-phase EOS in NumPy for T and ρ: answers at scattered points without compiling.

:class:`NumpyEOS` mirrors :func:`aragog.eos.evaluate_phase` and
:func:`aragog.eos.evaluate_constant` for T and ρ only (same cell search up to rounding, same
``(1 - t) a + t b`` interpolation, same blend; tests/test_energy_budget.py checks it against
the compiled evaluator to rounding). Used where a compiled program would cost more than it
saves: one-off point queries (:class:`aragog.eos.entropy.EntropyEOS`, the initial state's
inversion) and the energy budget's quadratures (:mod:`aragog.physics.heat_content`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NumpyEOS"]


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
