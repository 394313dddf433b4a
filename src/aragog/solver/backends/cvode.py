"""SUNDIALS CVODE (BDF + Newton, band or dense direct linear solver) through scikits.odes.

The callbacks handed to CVODE are thin: they fill CVODE's preallocated arrays in place
and return 0, or 1 (a *recoverable* failure: CVODE retries with a smaller step) when the
problem's function raised or produced a non-finite value. CVODE's return flags become an
:class:`~aragog.solver.backends.common.IntegrationResult` with a plain-words message
(:data:`FLAG_MESSAGES`).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from aragog.solver.backends.common import CallbackFailure, CallbackGuard, IntegrationResult

__all__ = ["integrate_cvode", "FLAG_MESSAGES", "FLAG_REASONS"]

logger = logging.getLogger("aragog.solver.backends.cvode")

#: CVODE return flags (SUNDIALS 6, cvode.h) -> plain words. ``{t}`` is where CVODE stopped.
FLAG_MESSAGES: dict[int, str] = {
    0: "reached the end time",
    1: "reached the stop time",
    2: "an event (root of the event function) stopped the integration at t = {t}",
    99: "reached the end time with a warning",
    -1: "too many steps (max_steps = {max_steps}) before reaching t = {t_next}; stopped at t = {t}",
    -2: "too much accuracy requested (rtol = {rtol}, atol = {atol}) for the machine precision at t = {t}",
    -3: "error test failed repeatedly (or the step size hit its minimum) at t = {t}",
    -4: "Newton iteration failed to converge repeatedly (or the step size hit its minimum) at t = {t}",
    -5: "the linear solver's initialisation failed",
    -6: "the linear solver setup (Jacobian evaluation or LU factorisation) failed unrecoverably at t = {t}",
    -7: "the linear solve failed unrecoverably at t = {t}",
    -8: "the right-hand side failed unrecoverably at t = {t}",
    -9: "the right-hand side failed at its first call (t = {t})",
    -10: "the right-hand side had repeated recoverable errors at t = {t}",
    -11: "the right-hand side had a recoverable error but CVODE could not recover at t = {t}",
    -12: "the event function failed at t = {t}",
    -13: "the nonlinear solver's initialisation failed",
    -14: "the nonlinear solver setup failed unrecoverably at t = {t}",
    -15: "inequality constraints could not be met at t = {t}",
    -16: "the nonlinear solver failed unrecoverably at t = {t}",
    -20: "a memory allocation failed",
    -21: "the CVODE memory block was missing",
    -22: "the input was rejected",
    -23: "the CVODE memory block was not allocated",
    -24: "bad derivative order requested",
    -25: "output time outside the last step",
    -26: "output derivative vector missing",
    -27: "the first output time is too close to the start time",
    -28: "a vector operation failed",
    -99: "unrecognised CVODE error",
}

#: CVODE return flag -> :attr:`IntegrationResult.reason`.
FLAG_REASONS: dict[int, str] = {
    0: "success",
    1: "success",
    99: "success",
    2: "event",
    -1: "max_steps",
    -2: "too_much_accuracy",
    -3: "error_test",
    -4: "convergence",
    -5: "linear_solver",
    -6: "linear_solver",
    -7: "linear_solver",
    -8: "rhs_failure",
    -9: "rhs_failure",
    -10: "rhs_failure",
    -11: "rhs_failure",
    -12: "event_failure",
    -13: "convergence",
    -14: "convergence",
    -16: "convergence",
    -22: "illegal_input",
    -27: "illegal_input",
}


class _SundialsLog:
    """CVODE error-handler target: keeps the last error text, logs everything at debug."""

    def __init__(self):
        self.last: str | None = None

    def handler(self, error_code, module, function, msg):
        text = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        func = function.decode(errors="replace") if isinstance(function, bytes) else str(function)
        logger.debug("SUNDIALS %s (%d): %s", func, error_code, text)
        if error_code < 0:
            self.last = f"{func}: {text}"


class _CvodeCallbacks:
    """Bound methods with the exact arity scikits.odes inspects (t, y, out)."""

    def __init__(self, guard: CallbackGuard):
        self.guard = guard

    def rhs(self, t, y, ydot):
        return self.guard.rhs(t, y, ydot)

    def jac(self, t, y, fy, J):
        return self.guard.jac(t, y, J)

    def root(self, t, y, g):
        try:
            g[0] = self.guard.event(t, y)
        except CallbackFailure:
            return 1
        return 0


def _fmt(x) -> str:
    if x is None:
        return "?"
    if np.ndim(x) == 0:
        return f"{float(x):.6g}"
    x = np.asarray(x)
    return f"[{x.min():.3g}..{x.max():.3g}]"


def integrate_cvode(
    problem,
    t_eval: np.ndarray,
    y0: np.ndarray,
    *,
    rtol: float,
    atol,
    max_steps: int,
    event=None,
    linsolver: str = "band",
    first_step: float | None = None,
    max_step: float | None = None,
    min_step: float | None = None,
    max_order: int | None = None,
    stop_at_end: bool = True,
) -> IntegrationResult:
    """Integrate with CVODE; see :func:`aragog.solver.backends.integrate` for the arguments.

    ``linsolver`` is ``"band"`` (SUNDIALS band LU with the problem's band Jacobian) or
    ``"dense"`` (dense LU; the band Jacobian is expanded). Without a ``jac_into`` CVODE
    builds the Jacobian by difference quotients. ``max_steps`` is CVODE's ``mxstep``: the
    most internal steps between two consecutive output times (0: CVODE's default 500;
    negative: no limit). ``stop_at_end`` sets CVODE's stop time to ``t_eval[-1]`` (when it is
    positive and after the start) so the right-hand side is never evaluated past the end.
    """
    # The CVODE class itself (what ``scikits.odes.ode("cvode", ...)`` wraps): importing
    # ``scikits.odes.ode`` would also import every other integrator of the package.
    from scikits_odes_sundials.cvode import CVODE  # availability is checked by the caller

    wall0 = time.perf_counter()
    if linsolver not in ("band", "dense"):
        raise ValueError(f"integrate: linsolver must be 'band' or 'dense', got {linsolver!r}")
    guard = CallbackGuard(problem, event, want_jac=linsolver)
    cbs = _CvodeCallbacks(guard)
    sundials = _SundialsLog()
    n = guard.n
    atol_opt = float(atol) if np.ndim(atol) == 0 else np.ascontiguousarray(atol, dtype=np.float64)
    options = dict(
        lmm_type="BDF",
        nonlinsolver="newton",
        linsolver=linsolver,
        rtol=float(rtol),
        atol=atol_opt,
        max_steps=int(max_steps),
        old_api=False,
        err_handler=sundials.handler,
    )
    if linsolver == "band":
        options.update(lband=int(guard.ml), uband=int(guard.mu))
    if guard.has_jac:
        options["jacfn"] = cbs.jac
    if event is not None:
        options.update(rootfn=cbs.root, nr_rootfns=1)
    if first_step:
        options["first_step_size"] = float(first_step)
    if max_step:
        options["max_step_size"] = float(max_step)
    if min_step:
        options["min_step_size"] = float(min_step)
    if max_order:
        options["order"] = int(max_order)
    t_end = float(t_eval[-1])
    if stop_at_end and t_end > float(t_eval[0]) and t_end > 0.0:
        options["tstop"] = t_end

    def result(t, y, status, message, reason, **kw):
        return IntegrationResult(
            t=np.asarray(t, dtype=np.float64),
            y=np.asarray(y, dtype=np.float64).reshape(-1, n),
            status=int(status),
            message=message,
            t_event=kw.pop("t_event", None),
            nfev=guard.nfev,
            njev=guard.njev,
            nsteps=kw.pop("nsteps", 0),
            integrator="cvode",
            wall_seconds=time.perf_counter() - wall0,
            callback_seconds=dict(guard.seconds),
            reason=reason,
            n_callback_errors=guard.n_errors,
            **kw,
        )

    try:
        solver = CVODE(cbs.rhs, **options)
        soln = solver.solve(np.asarray(t_eval, dtype=np.float64), np.array(y0, dtype=np.float64))
    except Exception as exc:  # noqa: BLE001 - CVODE set-up rejects input with ValueError etc.
        logger.debug("CVODE set-up failed", exc_info=True)
        detail = sundials.last or f"{type(exc).__name__}: {exc}"
        return result(
            t_eval[:1], np.asarray(y0)[None, :], -22,
            f"CVODE: the input was rejected ({detail})", "illegal_input",
        )

    flag = int(soln.flag)
    t_out = soln.values.t
    y_out = soln.values.y
    try:
        info = solver.get_info()
    except Exception:  # noqa: BLE001
        info = {}
    nsteps = int(info.get("NumSteps", 0))
    info = {k: (float(v) if isinstance(v, float) else v) for k, v in info.items()}

    if flag in (0, 1, 99):
        msg = f"CVODE: reached t = {_fmt(t_out[-1])} in {nsteps} steps"
        if flag == 99:
            msg += f" (with a warning: {sundials.last})" if sundials.last else " (with a warning)"
        return result(t_out, y_out, 0, msg, "success", nsteps=nsteps, info=info)
    if flag == 2:
        t_ev = float(np.asarray(soln.roots.t).ravel()[0])
        y_ev = np.array(soln.roots.y[0], dtype=np.float64)
        return result(
            t_out, y_out, 1, f"CVODE: event at t = {_fmt(t_ev)}", "event",
            nsteps=nsteps, t_event=t_ev, y_event=y_ev, info=info,
        )

    t_err = soln.errors.t
    n_reached = len(t_out)
    t_next = t_eval[n_reached] if n_reached < len(t_eval) else t_eval[-1]
    template = FLAG_MESSAGES.get(flag, f"CVODE failed with flag {flag}")
    eff_max_steps = int(max_steps) if int(max_steps) != 0 else 500
    text = template.format(
        t=_fmt(t_err), t_next=_fmt(t_next), max_steps=eff_max_steps, rtol=_fmt(rtol), atol=_fmt(atol)
    )
    message = f"CVODE: {text}{guard.error_summary()}"
    if sundials.last and flag not in (-1,):
        message += f" [SUNDIALS {sundials.last}]"
    return result(
        t_out, y_out, flag, message, FLAG_REASONS.get(flag, "other"),
        nsteps=nsteps, t_failure=None if t_err is None else float(t_err), info=info,
    )
