"""The two-phase EOS in NumPy for T and ρ: answers at scattered points without compiling.

:class:`NumpyEOS` mirrors :func:`aragog.eos.evaluate_phase` and
:func:`aragog.eos.evaluate_constant` for T and ρ only (same cell search up to rounding, same
``(1 - t) a + t b`` interpolation, same blend; tests/test_energy_budget.py checks it against
the compiled evaluator to rounding). Used where a compiled program would cost more than it
saves: one-off point queries (:class:`aragog.eos.entropy.EntropyEOS`, the initial state's
inversion) and the energy budget's quadratures (:mod:`aragog.physics._heat_content`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from aragog.eos._packed import NODE_SNAP, axis_mode

__all__ = ["NumpyEOS", "PressureLines", "entropy_of_temperature", "INVERSION_GRID"]


class _Axis:
    """One table axis and its cell search: arithmetic when the axis is uniform to 1e-12 of a
    cell (with queries within :data:`~aragog.eos._packed.NODE_SNAP` of a node put on it), as
    the compiled evaluator does; a binary search otherwise."""

    __slots__ = ("x", "lo", "hi", "last", "inv", "exact")

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float64)
        self.lo, self.hi = float(self.x[0]), float(self.x[-1])
        self.last = self.x.size - 2  # highest cell index
        self.inv = (self.x.size - 1) / (self.hi - self.lo)
        self.exact = axis_mode(self.x) == "exact"

    def cell(self, x):
        """Cell index i (in [0, n-2]) and fraction t of ``x`` clipped to the axis range."""
        xc = np.clip(x, self.lo, self.hi)
        if self.exact:
            u = (xc - self.lo) * self.inv
            k = np.round(u)
            u = np.where(np.abs(u - k) <= NODE_SNAP, k, u)
            i = np.clip(np.floor(u).astype(np.intp), 0, self.last)
            return i, u - i
        i = np.clip(np.searchsorted(self.x, xc, side="right") - 1, 0, self.last)
        x0, x1 = self.x[i], self.x[i + 1]
        return i, (xc - x0) / (x1 - x0)


def _bilinear(flat, n_p, cp_, cs_):
    """Bilinear value from the flattened (NS, NP) table ``flat`` at located queries."""
    i, tp = cp_
    j, ts = cs_
    k = j * n_p + i
    lo = (1.0 - tp) * flat[k] + tp * flat[k + 1]
    hi = (1.0 - tp) * flat[k + n_p] + tp * flat[k + n_p + 1]
    return (1.0 - ts) * lo + ts * hi


class NumpyEOS:
    """T(P, S) [K], ρ(P, S) [kg/m3] and c_p(P, S) [J/kg/K] of the solver's EOS, in NumPy.

    Args:
        eos: the ``PhysicsInputs.eos`` leaf: an :class:`aragog.eos.EOSTables` (two-phase
            tables) or an :class:`aragog.eos.ConstantParams` (``constant``).
        smooth_width: the blend width w (``MaterialParams.matprop_smooth_width``; tables only).
        constant: ``PhysicsOptions.constant_properties``.
    """

    def __init__(self, eos, smooth_width=None, constant: bool = False):
        self.constant = bool(constant)
        f = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        if self.constant:
            self.rho, self.cp, self.T_ref, self.S_ref = (
                float(f(getattr(eos, k))) for k in ("const_rho", "const_Cp", "const_T_ref", "const_S_ref"))
            self.anchor = (0.0, self.S_ref)
            return
        self.melt = {k: f(getattr(eos.melt, k)) for k in ("P", "S", "T", "rho", "cp")}
        self.solid = {k: f(getattr(eos.solid, k)) for k in ("P", "S", "T", "rho", "cp")}
        self.sol = (f(eos.solidus.P), f(eos.solidus.S))
        self.liq = (f(eos.liquidus.P), f(eos.liquidus.S))
        # searches and flat tables for the evaluation (the dicts above stay the plain arrays)
        self._ax = {name: _Axis(arr) for name, arr in (("mP", self.melt["P"]), ("mS", self.melt["S"]),
                                                       ("sP", self.solid["P"]), ("sS", self.solid["S"]),
                                                       ("sol", self.sol[0]), ("liq", self.liq[0]))}
        self._flat = {(ph, k): np.ascontiguousarray(d[k]).ravel() for ph, d in (("m", self.melt), ("s", self.solid))
                      for k in ("T", "rho", "cp")}
        self._np = {"m": self.melt["P"].size, "s": self.solid["P"].size}
        self.w = float(smooth_width)
        #: (P_a, S_a): where the enthalpy is 0 (the table corner)
        self.anchor = (min(self.melt["P"][0], self.solid["P"][0]), min(self.melt["S"][0], self.solid["S"][0]))
        #: highest tabulated entropy (end of the isobar panel grid)
        self.S_top = max(self.melt["S"][-1], self.solid["S"][-1])
        self._isobar = None

    def __call__(self, P, S):
        """(T, ρ) at (P, S) (any broadcastable shapes)."""
        return self.evaluate(P, S, ("T", "rho"))

    def T(self, P, S):
        """T(P, S) [K] alone (half the table reads of :meth:`__call__`)."""
        return self.evaluate(P, S, ("T",))[0]

    def density(self, P, S):
        """ρ(P, S) [kg/m3] alone (half the table reads of :meth:`__call__`)."""
        return self.evaluate(P, S, ("rho",))[0]

    def evaluate(self, P, S, keys=("T", "rho")) -> tuple:
        """The quantities ``keys`` ("T" [K], "rho" [kg/m3], "cp" [J/kg/K]) at (P, S), in that
        order; only the tables of those quantities are read (and T's for the mixed c_p).

        ``P`` and ``S`` are not broadcast up front: what depends on the pressure alone (the
        phase boundaries, the pressure cells, the phase-boundary values:
        :meth:`at_pressure`) is computed at ``P``'s shape and what depends on the entropy
        alone at ``S``'s, so a quadrature along an isobar or an isentrope pays for the
        other coordinate once per line, not once per point. The values are those of the
        broadcast evaluation, bit for bit (the same operations on the same numbers)."""
        P, S = np.asarray(P, dtype=np.float64), np.asarray(S, dtype=np.float64)
        if self.constant:
            P, S = np.broadcast_arrays(P, S)
            values = {"T": lambda: self.T_ref * np.exp((S - self.S_ref) / self.cp),
                      "rho": lambda: np.full(S.shape, self.rho), "cp": lambda: np.full(S.shape, self.cp)}
            return tuple(values[k]() for k in keys)
        return self.evaluate_at(self.at_pressure(P), S, keys)

    def at_pressure(self, P) -> "PressureLines":
        """What :meth:`evaluate` needs of the pressures ``P`` alone (table mode), to evaluate
        at many entropies on the same pressures (:meth:`evaluate_at`)."""
        return PressureLines(self, np.asarray(P, dtype=np.float64))

    def evaluate_at(self, lines: "PressureLines", S, keys=("T", "rho")) -> tuple:
        """:meth:`evaluate` at the pressures of ``lines`` (:meth:`at_pressure`) and the
        entropies ``S`` (shapes broadcast against each other; table mode)."""
        S = np.asarray(S, dtype=np.float64)
        ax, pl = self._ax, lines
        g = (S - pl.S_sol) / pl.gap
        phi = np.clip(g, 0.0, 1.0)
        melt_side = g > 0.5
        cs_m, cs_s = ax["mS"].cell(S), ax["sS"].cell(S)
        th = np.tanh(np.where(melt_side, g - 1.0, g) * (1.0 / self.w))
        W = np.where(melt_side, 1.0 - 0.5 * (1.0 + th), 0.5 * (1.0 + th))
        out = []
        for key in keys:
            if key == "cp":  # the mush's c_p = ΔS_fus / ΔT_fus × the mean phase-boundary T
                mix = pl.cp_mix()
            else:
                liq, sol = pl.bounds(key)
                # T mixes linearly in the melt fraction, 1/rho (specific volume) too
                mix = phi * liq + (1.0 - phi) * sol if key == "T" else 1.0 / (phi / liq + (1.0 - phi) / sol)
            one = np.where(melt_side, self._table("m", key, pl.cp_m, cs_m), self._table("s", key, pl.cp_s, cs_s))
            out.append(W * mix + (1.0 - W) * one)  # the common shape: W depends on P and S
        return tuple(out)

    def _table(self, ph: str, key: str, cp_, cs_):
        return _bilinear(self._flat[(ph, key)], self._np[ph], cp_, cs_)


class PressureLines:
    """The pressure-only part of :meth:`NumpyEOS.evaluate` at pressures ``P``: the phase
    boundaries S_sol(P), S_liq(P) and their gap, the pressure cells of both tables, the
    entropy cells of the boundaries, and (on first use, per quantity) the melt value at the
    liquidus and the solid value at the solidus."""

    __slots__ = ("eos", "P", "S_sol", "S_liq", "gap", "cp_m", "cp_s", "cs_liq", "cs_sol", "_bounds", "_cp_mix")

    def __init__(self, eos: NumpyEOS, P: np.ndarray):
        ax = eos._ax

        def boundary(b, axis):
            i, t = axis.cell(P)
            return (1.0 - t) * b[1][i] + t * b[1][i + 1]

        self.eos, self.P = eos, P
        self.S_sol, self.S_liq = boundary(eos.sol, ax["sol"]), boundary(eos.liq, ax["liq"])
        self.gap = self.S_liq - self.S_sol
        self.cp_m, self.cp_s = ax["mP"].cell(P), ax["sP"].cell(P)
        self.cs_liq, self.cs_sol = ax["mS"].cell(self.S_liq), ax["sS"].cell(self.S_sol)
        self._bounds: dict[str, tuple] = {}
        self._cp_mix = None

    def bounds(self, key: str) -> tuple:
        """(melt value at (P, S_liq), solid value at (P, S_sol)) of quantity ``key``."""
        hit = self._bounds.get(key)
        if hit is None:
            eos = self.eos
            hit = self._bounds[key] = (eos._table("m", key, self.cp_m, self.cs_liq),
                                       eos._table("s", key, self.cp_s, self.cs_sol))
        return hit

    def cp_mix(self):
        """The mush's c_p, ΔS_fus / ΔT_fus × the mean phase-boundary T [J/kg/K]."""
        if self._cp_mix is None:
            T_liq, T_sol = self.bounds("T")
            self._cp_mix = self.gap / (T_liq - T_sol) * 0.5 * (T_liq + T_sol)
        return self._cp_mix


#: Entropies of the grid that brackets an S(T, P) root, uniform over the tables' S range
#: (the compiled inversion, :func:`aragog.physics.surface_entropy_for_temperature`, uses the
#: same grid).
INVERSION_GRID = 256


def entropy_of_temperature(T: float, P: float, eos: NumpyEOS, grid: int = INVERSION_GRID) -> float:
    """Entropy [J/kg/K] with T(P, S) = ``T`` [K] at pressure ``P`` [Pa] (scalars), from the
    NumPy EOS ``eos``: the one S(T, P) inversion in NumPy, for the solver's initial state
    (:meth:`aragog.solver.EntropySolver.entropy_at`), ``aragog validate``'s probe and
    ``EntropyEOS.invert_temperature``. NaN when T or P is not finite (the caller reports it).

    The same root as the compiled :func:`aragog.physics.surface_entropy_for_temperature`
    (tests/test_first_solve.py checks the two agree to 1e-12 relative over the tables):

    - constant-property mode: S = S_ref + c_p ln(T/T_ref), the exact inverse;
    - table mode: T(P, ·) on :data:`INVERSION_GRID` entropies uniform over the tables' S
      range brackets the root to one grid interval (the last grid point with T <= target
      and the next one), then Brent's method refines it to a few rounding errors of S. A
      target outside the range of T(P, ·) gives the end of the bracket nearest to it (the
      compiled inversion converges to that end).
    """
    T, P = float(T), float(P)
    if not (math.isfinite(T) and math.isfinite(P)):
        return math.nan
    if eos.constant:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(eos.S_ref + eos.cp * np.log(T / eos.T_ref))
    lo0 = min(eos.solid["S"][0], eos.melt["S"][0])
    hi0 = max(eos.solid["S"][-1], eos.melt["S"][-1])
    S_grid = lo0 + (hi0 - lo0) * np.linspace(0.0, 1.0, grid)
    T_grid = eos.T(P, S_grid)
    if not np.all(np.isfinite(T_grid)):
        return math.nan
    k = int(np.clip(np.count_nonzero(T_grid <= T) - 1, 0, grid - 2))
    lo, hi = float(S_grid[k]), float(S_grid[k + 1])
    f_lo, f_hi = float(T_grid[k]) - T, float(T_grid[k + 1]) - T
    if f_lo == 0.0:
        return lo
    if f_hi == 0.0:
        return hi
    if f_lo > 0.0:  # target below T(P, lowest grid entropy): the lower end
        return lo
    if f_hi < 0.0:  # target above T(P, highest grid entropy): the upper end
        return hi

    def f(S):
        return float(eos.T(P, S)) - T

    # xtol + rtol |S|: a few rounding errors of S (rtol is brentq's smallest, 4 eps).
    return float(brentq(f, lo, hi, xtol=1e-300, rtol=4.0 * np.finfo(float).eps, maxiter=200))
