"""S(T, P): the EOS inverted at one point in NumPy, for the initial state.

:meth:`~aragog.solver.EntropySolver.entropy_at` needs the entropy with T(P, S) = T at one
pressure, once per initial condition. Compiling :func:`aragog.physics.surface_entropy_for_temperature`
for that one call cost ~1.5 s of a cold first solve (trace 0.2-0.3 s, XLA compile 1.0-1.3 s),
against a few milliseconds for the same root in NumPy on
:class:`aragog.physics._heat_content.EnthalpyEOS` (the evaluator's mirror for T and ρ).

Same root as the compiled inversion (tests/test_solver.py checks the two agree to 1e-12
relative over the tables' range):

- constant-property mode: S = S_ref + c_p ln(T/T_ref) (the exact inverse, the same formula);
- table mode: T(P, ·) on the same :data:`~aragog.physics._boundary.INVERSION_GRID` entropies
  uniform over the tables' S range brackets the root to one grid interval (the last grid
  point with T <= target and the next one), then Brent's method refines it to a few
  rounding errors of S. A target outside the range of T(P, ·) gives the end of the
  bracket nearest to it (the compiled inversion converges to that end; its fixed
  iteration count stops within interval / 2^13 of it).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from aragog.physics._boundary import INVERSION_GRID
from aragog.physics._heat_content import EnthalpyEOS

__all__ = ["entropy_of_temperature"]


def entropy_of_temperature(T: float, P: float, eos: EnthalpyEOS, grid: int = INVERSION_GRID) -> float:
    """Entropy [J/kg/K] with T(P, S) = ``T`` [K] at pressure ``P`` [Pa] (scalars), from the
    NumPy EOS ``eos``. NaN when T or P is not finite (the caller reports it)."""
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
