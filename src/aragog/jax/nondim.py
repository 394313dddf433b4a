"""``NonDimScales`` (upstream name): the state and time scales a solver integrates with."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

__all__ = ["NonDimScales"]


@dataclass(frozen=True)
class NonDimScales:
    """Scales of the integrated state: physical = ``state_offset + state_scale * y``, time
    [yr] = ``t_ref * t_nd``; ``rhs_scale = t_ref / state_scale`` (per component, as upstream).

    Attributes:
        state_scale: (n_state,) scale of each state component (J/kg/K for entropy,
            J/kg/K/m for a CMB gradient slot, K for a core temperature).
        state_offset: (n_state,) offsets (zero here).
        t_ref: time scale [yr] (1 here: this package integrates in years).
    """

    state_scale: np.ndarray
    state_offset: np.ndarray
    t_ref: float = 1.0
    _solver: object = field(default=None, repr=False, compare=False)

    @property
    def rhs_scale(self) -> np.ndarray:
        return self.t_ref / self.state_scale

    @classmethod
    def for_solver(cls, solver, state_scale) -> NonDimScales:
        """The scales of ``solver`` (kept as a weak reference, so the callbacks built from
        these scales resolve to that solver's compiled programs)."""
        scale = np.asarray(state_scale, dtype=float)
        return cls(state_scale=scale, state_offset=np.zeros_like(scale), t_ref=1.0, _solver=weakref.ref(solver))

    def solver(self):
        """The solver these scales belong to, or ``None``."""
        return None if self._solver is None else self._solver()
