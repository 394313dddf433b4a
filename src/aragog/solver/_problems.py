"""Wrappers of the integrator's problem (:class:`~aragog.solver._bound.BoundPair`) that
:meth:`EntropySolver.solve <aragog.solver._entropy_solver.EntropySolver.solve>` applies:
no analytic Jacobian (``solver.jacobian = "fd"``), and a wall-clock limit
(``solver.wall_time_limit``)."""

from __future__ import annotations

import time

from aragog.errors import AragogError

__all__ = ["WallTimeLimitReached", "WallClockLimit", "NoJacobian"]


class WallTimeLimitReached(AragogError, RuntimeError):
    """Raised by a callback past ``solver.wall_time_limit``: the integrator treats it as a
    failed call and stops; :meth:`EntropySolver.solve` then reports the limit."""


class WallClockLimit:
    """A problem whose callbacks fail once ``time.perf_counter()`` passes ``deadline`` [s],
    so that a solve stops within a few callback calls of its wall-clock limit (the
    integrators stop after repeated failures). ``expired_at``: the model time [yr] of the
    first refused call, or ``None``."""

    def __init__(self, problem, deadline: float):
        self.n, self.ml, self.mu = problem.n, problem.ml, problem.mu
        self.jac_layout = getattr(problem, "jac_layout", "band")
        self._problem, self._deadline = problem, deadline
        self.expired_at: float | None = None
        self.jac_into = None if problem.jac_into is None else self._jac_into

    def _check(self, t) -> None:
        if time.perf_counter() > self._deadline:
            if self.expired_at is None:
                self.expired_at = float(t)
            raise WallTimeLimitReached("solver.wall_time_limit reached")

    def rhs_into(self, t, y, out) -> None:
        self._check(t)
        self._problem.rhs_into(t, y, out)

    def _jac_into(self, t, y, out) -> None:
        self._check(t)
        self._problem.jac_into(t, y, out)


class NoJacobian:
    """A problem without an analytic Jacobian (``solver.jacobian = "fd"``): the integrator
    builds it by finite differences."""

    def __init__(self, bound):
        self.n, self.ml, self.mu = bound.n, bound.ml, bound.mu
        self.rhs_into = bound.rhs_into
        self.jac_into = None
