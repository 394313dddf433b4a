"""Fallback back end: scipy's BDF or Radau stepper with the problem's Jacobian.

The driver loop is written here (instead of calling ``solve_ivp``) so that a failure keeps
the outputs reached so far, ``max_steps`` means what it means for CVODE (the most steps
between two output times), steps are counted, and a terminal event is located on the
stepper's dense output exactly as ``solve_ivp`` would.

scipy cannot retry a step after a failed function evaluation, so a callback that raises or
returns non-finite values ends the integration with status -1 and a message.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from scipy.integrate import BDF, Radau
from scipy.optimize import brentq

from aragog.solver.backends._common import CallbackFailure, CallbackGuard, IntegrationResult

__all__ = ["integrate_scipy", "SCIPY_METHODS"]

logger = logging.getLogger("aragog.solver.backends.scipy")

SCIPY_METHODS = {"scipy-bdf": BDF, "scipy-radau": Radau}

#: Above this state size the Jacobian is handed to scipy as a sparse (CSC) matrix.
SPARSE_THRESHOLD = 200


def integrate_scipy(
    problem,
    t_eval: np.ndarray,
    y0: np.ndarray,
    *,
    method: str = "scipy-bdf",
    rtol: float,
    atol,
    max_steps: int,
    event=None,
    first_step: float | None = None,
    max_step: float | None = None,
    trace: bool = False,
) -> IntegrationResult:
    """Integrate with ``scipy.integrate.BDF`` or ``Radau``; arguments as for ``integrate``
    (``trace``: the accepted steps' ends as ``result.trace``, up to an event's time)."""
    wall0 = time.perf_counter()
    stepper = SCIPY_METHODS[method]
    guard = CallbackGuard(problem, event, want_jac="band", raise_on_failure=True)
    n = guard.n
    ml, mu = guard.ml, guard.mu
    t_eval = np.asarray(t_eval, dtype=np.float64)
    t0, t_end = float(t_eval[0]), float(t_eval[-1])
    direction = 1.0 if t_end > t0 else -1.0
    limit = 500 if int(max_steps) == 0 else int(max_steps)  # CVODE's default; < 0: none

    def fun(t, y):
        out = np.empty(n)  # fresh array: the stepper keeps references to returned values
        guard.rhs(t, y, out)
        return out

    jac = None
    if guard.has_jac:
        band = np.empty((ml + mu + 1, n))
        if n > SPARSE_THRESHOLD:
            from scipy.sparse import dia_matrix

            offsets = np.array([mu - d for d in range(ml + mu + 1)])

            def jac(t, y):
                guard.jac(t, y, band)
                return dia_matrix((band.copy(), offsets), shape=(n, n)).tocsc()

        else:
            from aragog.programs._band import BandConverter

            conv = BandConverter(n, ml, mu)

            def jac(t, y):
                guard.jac(t, y, band)
                dense = conv.new_dense()
                conv.to_dense_into(band, dense)
                return dense

    ts = [t0]
    ys = [np.array(y0, dtype=np.float64)]
    steps = [(t0, ys[0])] if trace else None
    nsteps = 0
    name = method

    def trace_arrays():
        if steps is None:
            return None
        return np.array([s[0] for s in steps], dtype=np.float64), np.stack([s[1] for s in steps]).reshape(-1, n)

    def result(status, message, reason, **kw):
        return IntegrationResult(
            t=np.asarray(ts, dtype=np.float64),
            y=np.asarray(ys, dtype=np.float64).reshape(-1, n),
            status=status,
            message=message,
            t_event=kw.pop("t_event", None),
            nfev=guard.nfev,
            njev=guard.njev,
            nsteps=nsteps,
            integrator=name,
            wall_seconds=time.perf_counter() - wall0,
            callback_seconds=dict(guard.seconds),
            reason=reason,
            n_callback_errors=guard.n_errors,
            trace=trace_arrays(),
            **kw,
        )

    bad_tol = [
        label for label, value in (("rtol", rtol), ("atol", atol))
        if not np.all(np.isfinite(value)) or np.any(np.asarray(value) < 0)
    ]
    if bad_tol:
        return result(
            -22, f"{name}: the input was rejected (negative or non-finite {' and '.join(bad_tol)})",
            "illegal_input",
        )
    kwargs = dict(rtol=float(rtol), atol=atol if np.ndim(atol) else float(atol), jac=jac)
    if first_step:
        kwargs["first_step"] = float(first_step)
    if max_step:
        kwargs["max_step"] = float(max_step)
    try:
        solver = stepper(fun, t0, np.array(y0, dtype=np.float64), t_end, **kwargs)
        g_old = guard.event(t0, solver.y) if event is not None else None
    except CallbackFailure as exc:
        return result(-1, f"{name}: {exc}", exc.reason, t_failure=t0)
    except (ValueError, TypeError) as exc:
        logger.debug("%s set-up failed", name, exc_info=True)
        return result(-22, f"{name}: the input was rejected ({exc})", "illegal_input")

    i_next = 1  # next output index
    steps_since_output = 0
    while i_next < len(t_eval):
        t_old = solver.t
        try:
            msg = solver.step()
        except CallbackFailure as exc:
            return result(-1, f"{name}: {exc}", exc.reason, t_failure=float(solver.t))
        except (ValueError, np.linalg.LinAlgError, ArithmeticError) as exc:
            logger.debug("%s step failed", name, exc_info=True)
            return result(
                -1, f"{name}: the step failed at t = {solver.t:.6g} ({type(exc).__name__}: {exc})",
                "other", t_failure=float(solver.t),
            )
        if solver.status == "failed":
            reason = "step_size" if msg and "step size" in msg else "other"
            return result(
                -1, f"{name}: {msg} (at t = {solver.t:.6g}){guard.error_summary()}", reason,
                t_failure=float(solver.t),
            )
        nsteps += 1
        steps_since_output += 1
        t_new = solver.t
        sol = None

        # Event on (t_old, t_new]: a strict sign change, or an exact zero after a non-zero.
        t_ev = None
        if event is not None:
            try:
                g_new = guard.event(t_new, solver.y)
                if g_old != 0.0 and (g_new == 0.0 or np.sign(g_new) != np.sign(g_old)):
                    if g_new == 0.0:
                        t_ev = t_new
                    else:
                        sol = solver.dense_output()
                        t_ev = brentq(
                            lambda s: guard.event(s, sol(s)), t_old, t_new,
                            xtol=4 * np.finfo(float).eps * max(abs(t_old), abs(t_new), 1e-300),
                            rtol=4 * np.finfo(float).eps,
                        )
                if g_new != 0.0:
                    g_old = g_new
            except CallbackFailure as exc:
                return result(-1, f"{name}: {exc}", exc.reason, t_failure=float(t_new))

        if steps is not None and t_ev is None:
            steps.append((float(t_new), np.array(solver.y)))
        # Outputs on (t_old, min(t_new, t_ev)].
        t_reach = t_new if t_ev is None else t_ev
        while i_next < len(t_eval) and direction * (t_eval[i_next] - t_reach) <= 0.0:
            te = float(t_eval[i_next])
            if te == t_new:
                ys.append(np.array(solver.y))
            else:
                if sol is None:
                    sol = solver.dense_output()
                ys.append(np.asarray(sol(te), dtype=np.float64))
            ts.append(te)
            i_next += 1
            steps_since_output = 0

        if t_ev is not None:
            if t_ev == t_new:
                y_ev = np.array(solver.y)
            else:
                y_ev = np.asarray(sol(t_ev), dtype=np.float64)
            if steps is not None:
                steps.append((float(t_ev), y_ev))
            return result(
                1, f"{name}: event at t = {t_ev:.6g}", "event", t_event=float(t_ev), y_event=y_ev
            )
        if solver.status == "finished" and i_next < len(t_eval):  # pragma: no cover - roundoff
            ts.append(t_end)
            ys.append(np.array(solver.y))
            i_next = len(t_eval)
        if limit > 0 and steps_since_output >= limit and i_next < len(t_eval):
            return result(
                -1,
                f"{name}: too many steps (max_steps = {limit}) before reaching "
                f"t = {t_eval[i_next]:.6g}; stopped at t = {t_new:.6g}",
                "max_steps",
                t_failure=float(t_new),
            )

    return result(0, f"{name}: reached t = {ts[-1]:.6g} in {nsteps} steps", "success")
