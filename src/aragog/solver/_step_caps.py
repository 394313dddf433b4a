"""Step caps: end a solve early once the state has moved by a set amount.

``energy.phi_step_cap`` (global melt fraction), ``energy.temperature_step_cap`` [K] and
``energy.entropy_step_cap`` [J/kg/K] (largest change of any cell) let a coupling
framework shorten its step before the interior crosses a threshold in one call. The
caps are combined into one event function for the integrator,

    g(t, y) = max_k |Δ_k(t, y)| / cap_k − 1,

which is continuous and crosses zero where the first cap is reached; the solve then ends
there with status 1 (``dt_actual`` says how far it got).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["step_cap_event"]


def step_cap_event(energy, bound, split, t0: float, y0: np.ndarray) -> Callable | None:
    """The combined event ``g(t, y)`` of the active caps, or ``None`` when all are off.

    Args:
        energy: the ``[energy]`` parameters (``phi_step_cap``, ``temperature_step_cap``,
            ``entropy_step_cap``; 0 = off).
        bound: the solver's bound programs (``scalar_fn("melt_fraction")``,
            ``call("diagnostics", t, y)``).
        split: ``split(y) -> (S (N,) [J/kg/K], slot)``, the solver's state split.
        t0, y0: start of the solve [yr] and the (scaled) initial state (n_state,).
    """
    measures = []
    cap = float(energy.phi_step_cap)
    if cap > 0.0:
        phi_fn = bound.scalar_fn("melt_fraction")
        phi0 = phi_fn(t0, y0)
        measures.append(lambda t, y, f=phi_fn, p0=phi0, c=cap: abs(f(t, y) - p0) / c)
    cap = float(getattr(energy, "entropy_step_cap", 0.0))
    if cap > 0.0:
        S0 = split(y0)[0]
        measures.append(lambda t, y, s0=S0, c=cap: float(np.max(np.abs(split(y)[0] - s0))) / c)
    cap = float(getattr(energy, "temperature_step_cap", 0.0))
    if cap > 0.0:
        T0 = np.asarray(bound.call("diagnostics", t0, y0).T)
        measures.append(lambda t, y, T0=T0, c=cap: float(np.max(np.abs(bound.call("diagnostics", t, y).T - T0))) / c)
    if not measures:
        return None
    if len(measures) == 1:
        only = measures[0]
        return lambda t, y: only(t, y) - 1.0
    return lambda t, y: max(m(t, y) for m in measures) - 1.0
