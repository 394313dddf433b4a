"""Wrappers of the integrator's problem (:class:`~aragog.programs._jitpair.BoundPair`) that
:meth:`EntropySolver.solve <aragog.solver._entropy_solver.EntropySolver.solve>` applies:
no analytic Jacobian (``solver.jacobian = "fd"``), a wall-clock limit
(``solver.wall_time_limit``), and progress reports (``solve(progress=...)``)."""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from aragog.errors import AragogError

__all__ = ["WallTimeLimitReached", "WallClockLimit", "NoJacobian", "SolveProgress", "ProgressProbe"]


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
        _forward_corrector(self, problem, self._corrector)

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

    def _corrector(self, t, y_pred, vectors, scalars, held):
        self._check(t)
        return self._problem.corrector(t, y_pred, vectors, scalars, held)


def _forward_corrector(wrapper, problem, corrector) -> None:
    """Give ``wrapper`` the problem's compiled Newton solve (``corrector``, its layout and
    check; :mod:`aragog.programs._corrector`) through ``corrector``, or none when the problem
    has none."""
    has = getattr(problem, "corrector", None) is not None
    wrapper.corrector = corrector if has else None
    wrapper.corrector_layout = getattr(problem, "corrector_layout", None) if has else None
    wrapper.corrector_check = getattr(problem, "corrector_check", None) if has else None


class NoJacobian:
    """A problem without an analytic Jacobian (``solver.jacobian = "fd"``): the integrator
    builds it by finite differences."""

    def __init__(self, bound):
        self.n, self.ml, self.mu = bound.n, bound.ml, bound.mu
        self.rhs_into = bound.rhs_into
        self.jac_into = None


class SolveProgress(NamedTuple):
    """Where a running solve is: model time ``t`` [yr] in [``t_start``, ``t_end``],
    ``T_magma`` [K] and ``Phi_global`` at the integrator's current state (a trial state of
    the step being taken, not yet an accepted one), ``rhs_calls`` so far and ``wall`` [s]
    since the solve started. ``done`` is True for the last report, at the solve's end."""

    t: float
    t_start: float
    t_end: float
    T_magma: float
    Phi_global: float
    rhs_calls: int
    wall: float
    done: bool = False


class ProgressProbe:
    """A problem that calls ``report(SolveProgress)`` from a right-hand-side call once
    ``interval`` seconds of wall time have passed since the last report (the first one
    ``interval`` seconds into the solve). ``measure(t, y) -> (T_magma, Phi_global)``
    evaluates the state only then, so between reports a call costs one clock read."""

    def __init__(self, problem, report: Callable[[SolveProgress], None], measure, t_start: float, t_end: float,
                 interval: float, wall0: float):
        self.n, self.ml, self.mu = problem.n, problem.ml, problem.mu
        self.jac_layout = getattr(problem, "jac_layout", "band")
        self.jac_into = problem.jac_into
        self._problem, self._report, self._measure = problem, report, measure
        self._span, self._interval, self._wall0 = (float(t_start), float(t_end)), float(interval), wall0
        self._next = wall0 + self._interval
        self.rhs_calls = 0
        _forward_corrector(self, problem, self._corrector)

    def rhs_into(self, t, y, out) -> None:
        self._problem.rhs_into(t, y, out)
        self.rhs_calls += 1
        now = time.perf_counter()
        if now >= self._next:
            self.send(float(t), y, now)
            self._next = time.perf_counter() + self._interval

    def _corrector(self, t, y_pred, vectors, scalars, held):
        out = self._problem.corrector(t, y_pred, vectors, scalars, held)
        info = np.asarray(out[2])
        self.rhs_calls += int(info[self.corrector_layout.info_index("rhs")])  # the right-hand sides it evaluated
        now = time.perf_counter()
        if now >= self._next:
            self.send(float(t), y_pred + np.asarray(out[0]), now)
            self._next = time.perf_counter() + self._interval
        return out

    def send(self, t: float, y, now: float | None = None, done: bool = False) -> None:
        """One report at (t, y)."""
        now = time.perf_counter() if now is None else now
        T_magma, phi = self._measure(t, y)
        self._report(SolveProgress(t, *self._span, float(T_magma), float(phi), self.rhs_calls, now - self._wall0, done))
