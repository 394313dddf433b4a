"""What every back end shares: the problem interface, the result, and guarded callbacks."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from aragog.errors import describe
from aragog.programs._band import BandConverter

__all__ = [
    "OdeProblem",
    "OdeProblemLike",
    "Backend",
    "IntegrationResult",
    "CallbackGuard",
    "CallbackFailure",
]

logger = logging.getLogger("aragog.solver.backends")


@runtime_checkable
class OdeProblemLike(Protocol):
    """What :func:`aragog.solver.backends.integrate` needs from a problem.

    ``rhs_into(t, y, out)`` writes ``dy/dt`` (float64 ``(n,)``) into ``out``;
    ``jac_into(t, y, out)`` writes ``d(dy/dt)/dy`` in the layout named by the optional
    attribute ``jac_layout`` (``"band"``: ``(ml + mu + 1, n)`` with
    ``out[mu + i - j, j] = J[i, j]``, the default; or ``"dense"``: ``(n, n)``). ``jac_into``
    may be ``None`` (the integrator then builds the Jacobian by finite differences).
    A :class:`aragog.programs._jitpair.BoundPair` satisfies this protocol.
    """

    n: int
    ml: int
    mu: int

    def rhs_into(self, t: float, y: np.ndarray, out: np.ndarray) -> None: ...

    def jac_into(self, t: float, y: np.ndarray, out: np.ndarray) -> None: ...


class Backend(Protocol):
    """One integrator back end, as :data:`aragog.solver.backends.BACKENDS` holds it.

    :func:`aragog.solver.backends.integrate` checks the arguments, resolves the method name
    and the CVODE fallback, then calls the back end with every option as a keyword; a back
    end ignores the options it has no use for (the scipy back ends: ``linsolver``,
    ``nonlin_conv_coef``, ``newton_check``, ``warm``, ``newton``, ``max_step_growth``) and
    returns an :class:`IntegrationResult` whose ``integrator`` is its name in ``BACKENDS``.
    """

    def __call__(
        self,
        problem: OdeProblemLike,
        t_eval: np.ndarray,
        y0: np.ndarray,
        *,
        rtol: float,
        atol: Any,
        max_steps: int,
        event: Callable[[float, np.ndarray], float] | None,
        linsolver: str,
        first_step: float | None,
        max_step: float | None,
        nonlin_conv_coef: float | None,
        newton_check: bool | None,
        warm: Any,
        trace: bool,
        newton: str,
        max_step_growth: float | None,
    ) -> "IntegrationResult": ...


@dataclass
class OdeProblem:
    """A problem from plain callables (see :class:`OdeProblemLike` for the contract)."""

    rhs_into: Callable[[float, np.ndarray, np.ndarray], Any]
    jac_into: Callable[[float, np.ndarray, np.ndarray], Any] | None
    n: int
    ml: int
    mu: int
    jac_layout: str = "band"

    @classmethod
    def from_functions(
        cls,
        rhs: Callable[[float, np.ndarray], np.ndarray],
        jac: Callable[[float, np.ndarray], np.ndarray] | None,
        n: int,
        ml: int | None = None,
        mu: int | None = None,
        jac_layout: str = "dense",
    ) -> "OdeProblem":
        """Wrap returning functions ``rhs(t, y) -> (n,)`` and ``jac(t, y) -> matrix``.

        ``ml``/``mu`` default to ``n - 1`` (a full band).
        """
        ml = n - 1 if ml is None else ml
        mu = n - 1 if mu is None else mu

        def rhs_into(t, y, out):
            out[:] = rhs(t, y)

        jac_into = None
        if jac is not None:

            def jac_into(t, y, out):
                out[...] = jac(t, y)

        return cls(rhs_into, jac_into, int(n), int(ml), int(mu), jac_layout)


@dataclass
class IntegrationResult:
    """Outcome of :func:`aragog.solver.backends.integrate` (in the style of ``solve_ivp``).

    Attributes:
        t: output times reached, ``(m,)``; ``t[0]`` is the start time.
        y: states at those times, ``(m, n)``.
        status: 0 the end time was reached, 1 an event stopped the integration, < 0 failure
            (for CVODE the CVODE return flag, e.g. -1 too much work; for scipy -1; -22 when
            the integrator rejected its input).
        message: what happened, in plain words.
        reason: short machine-readable cause: ``"success"``, ``"event"``, ``"max_steps"``,
            ``"too_much_accuracy"``, ``"error_test"``, ``"convergence"``,
            ``"linear_solver"``, ``"rhs_failure"``, ``"jac_failure"`` (scipy only),
            ``"event_failure"``, ``"step_size"``,
            ``"illegal_input"``, ``"other"``.
        t_event, y_event: time and state of the event (``None`` without one).
        nfev, njev: calls of the problem's rhs / Jacobian made by the integrator.
        nsteps: internal steps taken.
        integrator: ``"cvode"``, ``"scipy-bdf"`` or ``"scipy-radau"`` (what actually ran).
        wall_seconds: total wall time of the integration.
        callback_seconds: wall time inside the problem's callbacks (``"rhs"``, ``"jac"``,
            ``"event"``).
        t_failure: time reached when a failure stopped the integration (else ``None``).
        y_failure: the state at ``t_failure``, the end of the last step the integrator
            completed, where it can tell (CVODE; else ``None``): past the last output time,
            e.g. what a wall-time limit leaves.
        n_callback_errors: callbacks that raised or returned non-finite values.
        trace: ``(t (M,), y (M, n))``, the start and the end of every step the integrator
            accepted, in order (with ``integrate(..., trace=True)``; else ``None``): the
            nodes of its trajectory, for time integrals along it.
    """

    t: np.ndarray
    y: np.ndarray
    status: int
    message: str
    t_event: float | None
    nfev: int
    njev: int
    nsteps: int
    integrator: str
    wall_seconds: float
    callback_seconds: dict[str, float]
    reason: str = "success"
    y_event: np.ndarray | None = None
    t_failure: float | None = None
    y_failure: np.ndarray | None = None
    n_callback_errors: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    trace: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def success(self) -> bool:
        """``status >= 0`` (end reached or stopped by an event)."""
        return self.status >= 0

    @property
    def t_final(self) -> float:
        """The last time with a known state (event time if an event stopped the run)."""
        if self.t_event is not None:
            return float(self.t_event)
        return float(self.t[-1])

    @property
    def y_final(self) -> np.ndarray:
        """The state at :attr:`t_final`."""
        if self.y_event is not None:
            return self.y_event
        return self.y[-1]


class CallbackFailure(Exception):
    """Raised by :class:`CallbackGuard` in *raising* mode (scipy back end) to stop a solve.

    ``where`` is ``"rhs"``, ``"jac"`` or ``"event"``; :attr:`reason` the matching
    :attr:`IntegrationResult.reason`.
    """

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where

    @property
    def reason(self) -> str:
        return {"rhs": "rhs_failure", "jac": "jac_failure", "event": "event_failure"}[self.where]


class CallbackGuard:
    """Wraps a problem's callbacks: timing, counting, exception capture, non-finite check.

    ``rhs(t, y, out)``, ``jac(t, y, out)`` and ``event(t, y)`` return an integer flag in
    the CVODE sense (0 success, 1 recoverable failure); a failure is recorded (count, last
    time, description) and logged once at debug level with its traceback. With
    ``raise_on_failure=True`` a failure raises :class:`CallbackFailure` instead (the scipy
    back end cannot retry).

    The Jacobian is converted between band and dense storage when the problem's layout
    differs from the one the integrator wants (``want_jac="band"|"dense"``).
    """

    def __init__(self, problem, event=None, *, want_jac: str = "band", raise_on_failure: bool = False):
        self.problem = problem
        self.n = int(problem.n)
        self.ml = int(problem.ml)
        self.mu = int(problem.mu)
        self._rhs_into = problem.rhs_into
        self._jac_into = getattr(problem, "jac_into", None)
        self.jac_layout = getattr(problem, "jac_layout", "band")
        if self.jac_layout not in ("band", "dense"):
            raise ValueError(f"problem.jac_layout must be 'band' or 'dense', got {self.jac_layout!r}")
        self.want_jac = want_jac
        self._event = event
        self.raise_on_failure = raise_on_failure
        self.nfev = 0
        self.njev = 0
        self.nevents = 0
        self.seconds = {"rhs": 0.0, "jac": 0.0, "event": 0.0}
        self.n_errors = 0
        self.last_error: str | None = None
        self.last_error_t: float | None = None
        self._logged = False
        self._conv = None
        self._tmp = None
        if self._jac_into is not None and self.jac_layout != want_jac:
            self._conv = BandConverter(self.n, self.ml, self.mu)
            self._tmp = self._conv.new_band() if self.jac_layout == "band" else self._conv.new_dense()

    @property
    def has_jac(self) -> bool:
        return self._jac_into is not None

    # ----------------------------------------------------------------- failure record
    def fail(self, where: str, t: float, what: str, exc: BaseException | None = None) -> int:
        """Record a failed call of the ``where`` callback ("rhs" or "jac") at ``t``
        (logged once; raised as :class:`CallbackFailure` with ``raise_on_failure``); returns
        1, SUNDIALS' recoverable failure."""
        self.n_errors += 1
        self.last_error = f"{where}: {what}"
        self.last_error_t = float(t)
        if not self._logged:
            self._logged = True
            logger.debug("%s callback failed at t = %r: %s", where, t, what, exc_info=exc)
        if self.raise_on_failure:
            raise CallbackFailure(f"the {where} callback failed at t = {t:.6g}: {what}", where)
        return 1

    def error_summary(self) -> str:
        """``""`` or a clause like ``"; the rhs callback failed 3 times (last at t = 1: ...)"``."""
        if not self.n_errors:
            return ""
        times = "once" if self.n_errors == 1 else f"{self.n_errors} times"
        return f"; callbacks failed {times} (last at t = {self.last_error_t:.6g}, {self.last_error})"

    # ----------------------------------------------------------------- callbacks
    def rhs(self, t, y, out) -> int:
        t0 = time.perf_counter()
        self.nfev += 1
        try:
            self._rhs_into(t, y, out)
        except Exception as exc:  # noqa: BLE001 - any failure of user code is recoverable
            self.seconds["rhs"] += time.perf_counter() - t0
            return self.fail("rhs", t, describe(exc), exc)
        self.seconds["rhs"] += time.perf_counter() - t0
        if not math.isfinite(out.sum()) and not np.isfinite(out).all():
            bad = int(np.count_nonzero(~np.isfinite(out)))
            return self.fail("rhs", t, f"non-finite value in {bad} of {out.size} components")
        return 0

    def jac(self, t, y, out) -> int:
        t0 = time.perf_counter()
        self.njev += 1
        try:
            if self._conv is None:
                self._jac_into(t, y, out)
            else:
                tmp = self._tmp
                self._jac_into(t, y, tmp)
                if self.want_jac == "dense":
                    out.fill(0.0)
                    self._conv.to_dense_into(tmp, out)
                else:
                    self._conv.to_band_into(tmp, out)
        except Exception as exc:  # noqa: BLE001
            self.seconds["jac"] += time.perf_counter() - t0
            return self.fail("jac", t, describe(exc), exc)
        self.seconds["jac"] += time.perf_counter() - t0
        if not math.isfinite(out.sum()) and not np.isfinite(out).all():
            bad = int(np.count_nonzero(~np.isfinite(out)))
            return self.fail("jac", t, f"non-finite value in {bad} of {out.size} Jacobian entries")
        return 0

    def event(self, t, y) -> float:
        """The event function's value; raises :class:`CallbackFailure` on failure."""
        t0 = time.perf_counter()
        self.nevents += 1
        try:
            value = float(self._event(t, y))
        except Exception as exc:  # noqa: BLE001
            self.seconds["event"] += time.perf_counter() - t0
            self._fail_event(t, describe(exc), exc)
        self.seconds["event"] += time.perf_counter() - t0
        if not math.isfinite(value):
            self._fail_event(t, f"non-finite value {value!r}")
        return value

    def _fail_event(self, t, what, exc=None):
        self.n_errors += 1
        self.last_error = f"event: {what}"
        self.last_error_t = float(t)
        if not self._logged:
            self._logged = True
            logger.debug("event callback failed at t = %r: %s", t, what, exc_info=exc)
        raise CallbackFailure(f"the event function failed at t = {t:.6g}: {what}", "event")
