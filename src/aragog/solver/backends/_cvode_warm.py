"""The CVODE memory kept between integrations (``integrate(..., warm=WarmStart())``).

:class:`WarmStart` holds one CVODE memory across a sequence of integrations of the same
problem shape (a coupling loop); :meth:`WarmStart.begin` decides, per integration, whether it
continues CVODE's history, re-initialises the kept memory or builds a new one (the modes
are described on :class:`WarmStart`; docs/solver.md, "Warm start"). The integration itself
is :func:`aragog.solver.backends._cvode.integrate_cvode`.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, NamedTuple

import numpy as np

from aragog.solver.backends._common import CallbackGuard

__all__ = ["WarmStart", "WARM_JUMP_TOL"]

#: Warm start: the largest jump of the right-hand side at the start of a continued
#: integration, ``||h (f_new(t0, y0) - f_old(t0, y0))||`` in CVODE's error norm (``h``: the
#: step CVODE would take next), for which CVODE's history is kept. Below 1 the first step's
#: error from the kink is within CVODE's error test. Measured on the toy planet (tests/earth_toy.toml, 60 and
#: 100 nodes, 10-yr solves, tools/profile_solves.py stage warm-start, docs/solver.md): continuing saves
#: 10-70 % of the right-hand-side calls at jumps up to ~0.5, breaks even at ~1-2 and costs
#: ~3 % more at 10-25 (a 0.1 % flux change per solve at rtol 1e-8), where a restart at
#: order 1 resolves the transient the change starts as cheaply.
WARM_JUMP_TOL = 1.0
#: Warm start: how close (CVODE's error norm, in units of the tolerance) the start state
#: must be to the last integration's end state to count as the same state.
_SAME_STATE_TOL = 1e-6


class _Signature(NamedTuple):
    """What a kept CVODE memory was configured for (a continued or re-initialised
    integration must match it)."""

    n: int
    ml: int
    mu: int
    linsolver: str
    has_jac: bool
    rtol: float
    atol: float | bytes
    max_steps: int
    has_event: bool
    first_step: float | None
    max_step: float | None
    min_step: float | None
    max_order: int | None
    nonlin_conv_coef: float
    verify_newton: bool
    tstop: bool
    compiled_newton: bool
    max_step_growth: float | None



class WarmStart:
    """The CVODE memory kept from one integration to the next (``integrate(..., warm=...)``).

    One object serves one sequence of integrations of problems of the same size and band
    (a coupling loop: one per solver). Each integration starts in one of these modes,
    reported as ``IntegrationResult.info["warm_start"]``:

    - ``"new"``: a fresh CVODE memory (the first integration; the options, size, band or
      event changed; the last integration failed);
    - ``"restart"``: the kept memory re-initialised at ``t_eval[0]`` (``CVodeReInit``):
      order 1, CVODE's own first step (or ``first_step``), a new Jacobian: the same
      integration as ``"new"``. Used when the integration does not continue the last one
      (another start time or state, or the last one ended at an event) or the right-hand
      side at the start jumped by more than ``jump_tol``;
    - ``"continue"``: CVODE's history is kept (step size, order, Nordsieck array, Jacobian):
      the start time and state are the last integration's end (its state to a millionth of
      the tolerance), no event function or the same state-only one (``event.state_only``),
      the same options, and the jump
      ``||h (f_new(t0, y0) - f_old(t0, y0))||`` (CVODE's weighted RMS norm, ``h`` the step
      CVODE would take next; ``info["rhs_jump"]``) is at most ``jump_tol``. f_old is the
      last step's own evaluation at the end state (the checked Newton test makes it; else
      one call of the last problem); f_new costs one call, which a restart reuses as
      CVODE's first: a restart calls the right-hand side as often as a fresh memory, a
      continued integration once more than it would (none with the same problem object);
    - ``"fallback"``: a continued integration failed and was redone from a fresh memory
      (the counters include both attempts).

    :meth:`close` frees the memory (also done when the object is garbage collected).
    """

    def __init__(self, jump_tol: float = WARM_JUMP_TOL):
        if not jump_tol >= 0.0:
            raise ValueError(f"WarmStart: jump_tol must be >= 0, got {jump_tol!r}")
        self.jump_tol = float(jump_tol)
        self._slot: list = [None]  # the kept _Run; the finalizer holds the list, not self
        self._finalizer = weakref.finalize(self, _close_slot, self._slot)
        self._signature = None
        self._end: tuple | None = None  # (t, y) where the last integration ended, if continuable
        self._guard: CallbackGuard | None = None  # the last integration's callbacks
        self._event_key = None  # the last integration's event's ``state_only`` key (None: none or other)

    @property
    def active(self) -> bool:
        """Whether a CVODE memory is kept."""
        return self._slot[0] is not None

    def close(self) -> None:
        """Free the kept CVODE memory; the next integration starts ``"new"``."""
        _close_slot(self._slot)
        self._signature = self._end = self._guard = self._event_key = None

    def forget_end(self) -> None:
        """Forget where the last integration ended (it stopped at an event, past which CVODE
        stepped): the next one restarts."""
        self._end = self._guard = self._event_key = None

    def record_end(self, t: float, y: np.ndarray, guard: CallbackGuard, event_key) -> None:
        """Record where a successful integration ended, so that the next one may continue it."""
        self._end, self._guard, self._event_key = (float(t), y.copy()), guard, event_key

    def begin(self, guard: CallbackGuard, t_eval, y0, signature, rtol, atol, setup,
              event_key=None) -> tuple[Any, str, float | None]:
        """Pick the start mode (see the class) and make the CVODE memory ready to march: the
        CVODE back end's call at the start of each integration; returns ``(run, mode,
        jump)``. ``setup()`` returns a fresh, configured
        :class:`aragog.solver.backends._cvode._Run` (raises ``ValueError``; not imported
        here: cvode imports this module). ``event_key``:
        the event function's ``state_only`` key (``None``: no event, or one that depends on
        the start): CVODE's history continues only under the same event function as the
        last integration's, whose root-finding state it keeps."""
        run = self._slot[0]
        if run is None or self._signature != signature:
            self.close()
            run = self._slot[0] = setup()
            self._signature = signature
            return run, "new", None
        lib, t0, t_end = run.lib, float(t_eval[0]), float(t_eval[-1])
        run.log.last = None
        mode, jump, f_new = "restart", None, None
        end, old_guard = self._end, self._guard
        span = max(abs(t0), abs(t_end - t0))
        same_event = not signature.has_event or (event_key is not None and event_key == self._event_key)
        if (end is not None and old_guard is not None and same_event
                and abs(t0 - end[0]) <= 1e-12 * span and abs(run.current("CurrentTime") - t0) <= 1e-12 * span
                and _wrms(y0 - end[1], _weights(end[1], rtol, atol)) <= _SAME_STATE_TOL):
            h = run.current("CurrentStep")
            w = _weights(y0, rtol, atol)
            if old_guard.problem is guard.problem:
                jump = 0.0
            elif math.isfinite(h) and h != 0.0:
                f_new, f_old = np.empty(run.n), None
                if guard.rhs(t0, y0, f_new) != 0:
                    f_new = None
                elif abs(run.last_t - t0) <= 1e-12 * span and np.array_equal(run.last_y, y0):
                    # the last step's own evaluation, at the end state (exactly: with a stiff
                    # Jacobian, h J dy turns a rounding of y into a jump of order one)
                    f_old = run.last_f
                else:
                    f_old = np.empty(run.n)
                    guard.nfev += 1  # counted in this integration
                    if old_guard.rhs(t0, y0, f_old) != 0:
                        f_old = None
                if f_old is not None:
                    jump = abs(h) * _wrms(f_new - f_old, w)
            if jump is not None and jump <= self.jump_tol:
                mode = "continue"
        run.guard = guard
        if mode == "restart":
            run.y_arr[:] = y0
            flag = lib.CVodeReInit(run.mem, t0, run.y)
            if flag != 0:
                raise ValueError(f"CVodeReInit returned {flag}")
            if f_new is not None:
                run.memo = (t0, y0.copy(), f_new)
        if signature.tstop and t_end != t0:
            flag = lib.CVodeSetStopTime(run.mem, t_end)
            if flag != 0:
                raise ValueError(f"CVodeSetStopTime returned {flag}")
        return run, mode, jump


def _close_slot(slot: list) -> None:
    run, slot[0] = slot[0], None
    if run is not None:
        run.close()


def _weights(y: np.ndarray, rtol: float, atol) -> np.ndarray:
    """CVODE's error weights 1 / (rtol |y| + atol)."""
    return 1.0 / (rtol * np.abs(y) + np.asarray(atol, dtype=np.float64))


def _wrms(v: np.ndarray, w: np.ndarray) -> float:
    return float(np.sqrt(np.mean((v * w) ** 2)))
