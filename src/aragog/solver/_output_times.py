"""The times a solve stores (``solver.output_points``, ``solver.output_spacing``)."""

from __future__ import annotations

import numpy as np

__all__ = ["output_times"]


def output_times(t0: float, t1: float, n: int, spacing: str = "linear") -> np.ndarray:
    """``n`` (>= 2) increasing times [yr] from ``t0`` to ``t1`` (> t0), both included.

    "linear": evenly spaced. "log": ``t0``, then n - 1 times evenly spaced in
    log(t - t0) from min(1 yr, (t1 - t0)/1000) to t1 - t0, so that an evolution whose
    changes span decades (a magma ocean's first years against its last Myr) is sampled in
    each decade alike.
    """
    if spacing == "linear":
        return np.linspace(t0, t1, n)
    if spacing != "log":
        raise ValueError(f"output spacing must be 'linear' or 'log', got {spacing!r}")
    span = t1 - t0
    first = min(1.0, span / 1000.0)
    times = t0 + np.geomspace(first, span, n - 1)
    times[-1] = t1  # exactly, not t0 + span rounded
    return np.concatenate([[t0], times])
