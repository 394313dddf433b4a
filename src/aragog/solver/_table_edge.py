"""The EOS tables' edge: one rule from the start of a solve to the next start.

Beyond the tables' entropy range (the lowest to the highest entropy of the two phase
tables) and beyond their pressure range, the evaluators hold every property at the
table's edge, so the model has no state there (docs/physics.md, "Equation of state").
The solver holds its states to the tables with one band, :data:`EDGE_BAND` of the
entropy range's span on either side (a rounding allowance, not a physical margin: 1e-6
of the span is 3.3 mJ/kg/K on SPIDER's RTmelt tables):

- a start (``[initial_condition]``, :meth:`EntropySolver.set_initial_entropy`) with a
  cell beyond the band is refused (:class:`~aragog.errors.ConfigError`), and so is an
  isentrope through a temperature the tables do not reach at that pressure, and a mesh
  whose pressures leave the tables' pressure range (beyond :data:`PRESSURE_BAND` of its
  span);
- during a solve, a cell that reaches the band's outer side ends the solve there (an
  event of the integrator, located to rounding): status :data:`STATUS_OUTSIDE_TABLES`,
  a one-line message naming the cells, their entropy, the range and the time; the state
  at that time is the solver's, with its cells put back on the band
  (:meth:`TableEdge.onto_band`: a change of the order of the event's rounding), so the
  solver can start again from it.

So a state the solver returns, with status 0 or not, is always accepted as a start.
"""

from __future__ import annotations

import numpy as np

from aragog.errors import ConfigError, format_indices

__all__ = ["TableEdge", "EDGE_BAND", "PRESSURE_BAND", "STATUS_OUTSIDE_TABLES"]

#: Half-width of the entropy band around the tables' range, as a fraction of its span.
EDGE_BAND = 1.0e-6
#: Pressures of a mesh may exceed the tables' pressure range by this fraction of its span
#: (a structure file's rounding, a surface at 1 bar on a table that starts there).
PRESSURE_BAND = 1.0e-3
#: The status of a solve that a cell leaving the tables' entropy range ended.
STATUS_OUTSIDE_TABLES = -40
#: Cells put back on the band after an event sit this fraction of the band inside its
#: outer side, so that the event function is strictly negative at the next start.
_INSIDE = 1.0e-6


class TableEdge:
    """The range of a table set as the solver holds states to it.

    Args:
        S_range: the tables' entropy range (lowest, highest) [J/kg/K].
        P_range: the pressure range every table covers (lowest, highest) [Pa].
    """

    def __init__(self, S_range: tuple[float, float], P_range: tuple[float, float]):
        self.lo, self.hi = (float(v) for v in S_range)
        self.P_lo, self.P_hi = (float(v) for v in P_range)
        #: the band's half-width [J/kg/K]
        self.band = EDGE_BAND * (self.hi - self.lo)

    @classmethod
    def of(cls, eos) -> "TableEdge":
        """The edge of an EOS table set (``EOSTables`` or the packed tables)."""
        return cls(eos.entropy_range(), eos.pressure_range())

    def describe(self) -> str:
        return f"[{self.lo:.6g}, {self.hi:.6g}] J/kg/K"

    # ------------------------------------------------------------------ entropy
    def excess(self, S: np.ndarray) -> np.ndarray:
        """How far each entropy lies beyond the range [J/kg/K] (negative inside)."""
        S = np.asarray(S, dtype=np.float64)
        return np.maximum(self.lo - S, S - self.hi)

    def outside(self, S: np.ndarray) -> np.ndarray:
        """Cells beyond the band (bool mask)."""
        return self.excess(S) > self.band

    def check_entropy(self, S: np.ndarray, what: str) -> None:
        """Refuse a start with a cell beyond the band (one line: cells, values, range)."""
        S = np.asarray(S, dtype=np.float64)
        bad = self.outside(S)
        if np.any(bad):
            raise ConfigError(
                f"{what}: cells {format_indices(bad)} of {S.size} have S = {S[bad].min():.6g}..{S[bad].max():.6g} "
                f"J/kg/K, outside the EOS tables' entropy range {self.describe()}")

    def event(self, split):
        """The integrator's event function ``g(t, y)``: the largest excess of a cell over
        the band, divided by it, minus one. Negative at every accepted start, zero where
        the first cell reaches the band's outer side; it depends on the state alone, so a
        continued CVODE history keeps its root-finding state valid (``g.state_only``)."""
        lo, hi, band = self.lo, self.hi, self.band

        def g(t, y):
            S = split(y)[0]
            return max(lo - S.min(), S.max() - hi) / band - 1.0

        g.state_only = (lo, hi, band)  # the same function of y wherever these are equal
        return g

    def onto_band(self, S: np.ndarray) -> np.ndarray:
        """``S`` with the cells past the band put just inside its outer side (a state at an
        event, where the integrator located the crossing to rounding)."""
        reach = self.band * (1.0 - _INSIDE)
        return np.clip(np.asarray(S, dtype=np.float64), self.lo - reach, self.hi + reach)

    def left_message(self, S: np.ndarray, t: float, t0: float) -> str:
        """The message of a solve that the event ended at ``t`` [yr] (state ``S``)."""
        S = np.asarray(S, dtype=np.float64)
        bad = self.excess(S) >= self.band * (1.0 - 1e-3)
        if not bad.any():  # the event's rounding: name the cell nearest to the edge
            bad = self.excess(S) == self.excess(S).max()
        side = "below" if np.all(S[bad] < self.lo) else ("above" if np.all(S[bad] > self.hi) else "outside")
        return (f"the entropy of cells {format_indices(bad)} of {S.size} reached {side} the EOS tables' range "
                f"{self.describe()} at t = {t:.6g} yr (S = {S[bad].min():.8g}..{S[bad].max():.8g} J/kg/K): the "
                f"model has no state beyond it, so the solve ends there after {t - t0:.6g} yr (dt_actual); "
                "the state is that at the edge")

    # ------------------------------------------------------------------ pressure
    def check_pressure(self, mesh, what: str = "mesh") -> None:
        """Refuse a mesh whose nodes or cells leave the tables' pressure range (beyond
        :data:`PRESSURE_BAND` of its span)."""
        P = np.concatenate([np.asarray(mesh.P_basic, dtype=np.float64).ravel(),
                            np.asarray(mesh.P_stag, dtype=np.float64).ravel()])
        slack = PRESSURE_BAND * (self.P_hi - self.P_lo)
        top, bottom = float(P.max()), float(P.min())
        if top > self.P_hi + slack:
            raise ConfigError(
                f"{what}: the mantle reaches P = {top / 1e9:.4g} GPa at its base, beyond the EOS tables' pressure "
                f"range {self.P_lo / 1e9:.4g}..{self.P_hi / 1e9:.4g} GPa (properties would be held at the "
                "table's edge): use tables that reach the base pressure, or a smaller planet")
        if bottom < self.P_lo - slack:
            raise ConfigError(
                f"{what}: the mantle's pressure goes down to {bottom / 1e9:.4g} GPa, below the EOS tables' pressure "
                f"range {self.P_lo / 1e9:.4g}..{self.P_hi / 1e9:.4g} GPa")

    # ------------------------------------------------------------------ temperature
    @staticmethod
    def check_temperature(T: float, P: float, S: float, T_of_S, what: str) -> None:
        """Refuse an isentrope through (``T`` [K], ``P`` [Pa]) whose inverted entropy ``S``
        does not give ``T`` back (``T_of_S(P, S)``): the tables do not reach ``T`` at ``P``
        (the inversion then stops at the table's edge). The tolerance, 1e-6 relative, is far
        above the inversion's rounding (a few ulps of S) and far below a table's cell."""
        T_back = float(T_of_S(P, S))
        if not abs(T_back - T) <= 1e-6 * abs(T):
            side = "above" if T > T_back else "below"
            raise ConfigError(
                f"{what} = {T:g} K is {side} what the EOS tables reach at P = {P / 1e9:.4g} GPa "
                f"({T_back:.6g} K at their {'highest' if side == 'above' else 'lowest'} entropy)")
