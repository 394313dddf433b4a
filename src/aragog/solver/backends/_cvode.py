"""SUNDIALS CVODE (BDF + Newton, band or dense direct linear solver), called through the
ctypes binding of :mod:`aragog.solver.backends._sundials`.

The callbacks handed to CVODE are thin: they fill CVODE's own arrays in place (NumPy views
of the N_Vector and SUNMatrix data) and return 0, or 1 (a *recoverable* failure: CVODE
retries with a smaller step) when the problem's function raised or produced a non-finite
value. CVODE's return flags become an
:class:`~aragog.solver.backends._common.IntegrationResult` with a plain-words message
(:data:`FLAG_MESSAGES`).

Nonlinear convergence (docs/solver.md, "Integrator accuracy"): CVODE stops its Newton
iteration when the estimated remaining error of the corrector is below ``nlscoef`` times
the local error tolerance, and accepts the last iterate without evaluating the residual
there. Across the convective switch of the flux laws (dS/dr = 0) both let unconverged
correctors through, and the errors compound: on the upstream aragog's two-phase test case
CVODE returned status 0 with states 10-90 % off at rtol 1e-6. This back end uses
:data:`NONLIN_CONV_COEF` = 1e-3 (CVODE's default: 0.1) and checks the accepted iterate
(:meth:`_Run.verify_newton`).

Warm start (docs/solver.md, "Warm start"; :mod:`._cvode_warm`): a :class:`WarmStart` passed as ``warm`` keeps
the CVODE memory from one integration to the next. An integration that continues the last
one (same start time as its end, same state, same options) and whose right-hand side at the
start differs from the last one's by less than the tolerance (:data:`WARM_JUMP_TOL`)
continues CVODE's history: its step size, order and Jacobian, instead of a restart at
order 1 with CVODE's tiny first step. Otherwise the kept memory is re-initialised
(``CVodeReInit``: the same integration as a fresh memory, without the allocations). A
continued integration that fails is redone from a fresh memory.
"""

from __future__ import annotations

import ctypes
import logging
import math
import time

import numpy as np

from aragog.solver.backends import _sundials as sd
from aragog.solver.backends._sundials import FLAG_MESSAGES, FLAG_REASONS
from aragog.solver.backends._common import CallbackFailure, CallbackGuard, IntegrationResult
from aragog.solver.backends._cvode_newton import CompiledNewton, compiled_newton_available
from aragog.solver.backends._cvode_warm import WARM_JUMP_TOL, WarmStart, _Signature

__all__ = ["integrate_cvode", "WarmStart", "FLAG_MESSAGES", "FLAG_REASONS", "NONLIN_CONV_COEF", "NEWTON_CHECK",
           "WARM_JUMP_TOL"]

logger = logging.getLogger("aragog.solver.backends.cvode")

#: CVODE's nonlinear convergence coefficient (``CVodeSetNonlinConvCoef``; CVODE's own
#: default is 0.1). Measured on abe_mixed (tools/accuracy_matrix.py, 30-120 nodes, three
#: kappah_floor values): 0.1 and 0.01 return status 0 with cell errors up to 90 % at
#: rtol 1e-6; 1e-3 together with the checked Newton iterate keeps every case within 4e-6,
#: in no more steps than scipy BDF.
NONLIN_CONV_COEF = 1e-3
#: CVODE's own largest step growth factor after its first steps (``etamx3``; SUNDIALS 6-7).
CVODE_MAX_STEP_GROWTH = 10.0
#: Newton iterations per attempt (CVODE's default is 3).
MAX_NEWTON_ITERS = 4
#: Whether the accepted Newton iterate is checked by default (``integrate(...,
#: newton_check=None)``); docs/solver.md, "Integrator accuracy".
NEWTON_CHECK = True
_NLS_CONTINUE = 901  # SUN_NLS_CONTINUE


class _SundialsLog:
    """CVODE error-handler target: keeps the last error text, logs everything at debug."""

    def __init__(self):
        self.last: str | None = None

    def handler(self, error_code, function, msg):
        text = msg.decode(errors="replace") if msg else ""
        func = function.decode(errors="replace") if function else "?"
        logger.debug("SUNDIALS %s (%d): %s", func, error_code, text)
        if error_code < 0:
            self.last = f"{func}: {text}"


def _fmt(x) -> str:
    if x is None:
        return "?"
    if np.ndim(x) == 0:
        return f"{float(x):.6g}"
    x = np.asarray(x)
    return f"[{x.min():.3g}..{x.max():.3g}]"


class _Run:
    """One CVODE integration: the SUNDIALS objects, NumPy views of their data and the
    ctypes callbacks (kept referenced for as long as CVODE may call them). ``close()``
    frees everything."""

    def __init__(self, lib, guard: CallbackGuard, y0: np.ndarray, linsolver: str, corrector=None):
        self.lib, self.guard, self.n = lib, guard, guard.n
        self.newton: CompiledNewton | None = None
        self.ctx = ctypes.c_void_p()
        self.mem = self.y = self.A = self.LS = self.atol_vec = None
        self._arrays: dict[int, np.ndarray] = {}
        if lib.create_context(ctypes.byref(self.ctx)) != 0:
            raise MemoryError("SUNContext_Create failed")
        self.y = lib.N_VNew_Serial(self.n, self.ctx)
        self.y_arr = self.vector(self.y)
        self.y_arr[:] = y0
        self.mem = lib.CVodeCreate(sd.CV_BDF, self.ctx)
        if not self.mem:
            raise MemoryError("CVodeCreate failed")
        n, ml, mu = self.n, guard.ml, guard.mu
        if corrector is not None:  # the corrector program solves its own linear systems
            self.jac_view = self.jac_fill = self.jac_buf = None
        elif linsolver == "band":
            self.A = lib.SUNBandMatrix(n, mu, ml, self.ctx)
            ldim = int(lib.SUNBandMatrix_LDim(self.A))
            smu = int(lib.SUNBandMatrix_StoredUpperBandwidth(self.A))
            data = self._view(lib.SUNBandMatrix_Data(self.A), n * ldim).reshape(n, ldim)
            # column j of the band matrix holds A[i, j] at data[j, smu + i - j]; rows above
            # smu - mu are the LU fill-in
            self.jac_view = data[:, smu - mu: smu + ml + 1]
            self.jac_fill = data[:, : smu - mu]
            self.jac_buf = np.zeros((ml + mu + 1, n))
            self.LS = lib.SUNLinSol_Band(self.y, self.A, self.ctx)
        else:
            self.A = lib.SUNDenseMatrix(n, n, self.ctx)
            self.jac_view = self._view(lib.SUNDenseMatrix_Data(self.A), n * n).reshape(n, n)
            self.jac_fill = None
            self.jac_buf = np.zeros((n, n))
            self.LS = lib.SUNLinSol_Dense(self.y, self.A, self.ctx)
        self.nls = self.residual = None
        self.n_verified = self.n_unconverged = 0
        self.log: _SundialsLog | None = None
        self.memo: tuple | None = None  # (t, y, f): the answer of the next rhs call at (t, y)
        # CVODE's last successful rhs call (t, y, f): at the end of an integration, the one
        # at the accepted state of the last step (the checked Newton test evaluates it)
        self.last_t = math.nan
        self.last_y, self.last_f = np.empty(self.n), np.empty(self.n)
        self.c_rhs = sd.CVRhsFn(self._rhs)
        self.c_jac = sd.CVLsJacFn(self._jac)
        self.c_root = sd.CVRootFn(self._root)
        if corrector is not None:
            self.newton = CompiledNewton(self, *corrector)

    # ------------------------------------------------------------------ views
    @staticmethod
    def _view(address: int, size: int) -> np.ndarray:
        return np.ctypeslib.as_array((ctypes.c_double * size).from_address(address))

    def vector(self, nv) -> np.ndarray:
        """A NumPy view of an N_Vector's data (cached per data address: CVODE passes a
        handful of vectors, over and over)."""
        address = self.lib.N_VGetArrayPointer(nv)
        arr = self._arrays.get(address)
        if arr is None:
            arr = self._arrays[address] = self._view(address, self.n)
        return arr

    def drop_vector(self, nv) -> None:
        """Forget the cached view of an N_Vector about to be destroyed (its data address may
        be reused by another vector)."""
        self._arrays.pop(self.lib.N_VGetArrayPointer(nv), None)

    # ------------------------------------------------------------------ callbacks
    def _rhs(self, t, y, ydot, _data):
        y_arr, f_arr = self.vector(y), self.vector(ydot)
        memo, self.memo = self.memo, None
        if memo is not None and t == memo[0] and np.array_equal(y_arr, memo[1]):
            f_arr[:] = memo[2]  # f(t0, y0), evaluated before a restart (warm start)
            flag = 0
        else:
            flag = self.guard.rhs(t, y_arr, f_arr)
        if flag == 0:
            self.last_t = t
            self.last_y[:] = y_arr
            self.last_f[:] = f_arr
        else:
            self.last_t = math.nan
        return flag

    def _jac(self, t, y, _fy, _J, _data, _t1, _t2, _t3):
        flag = self.guard.jac(t, self.vector(y), self.jac_buf)
        if flag == 0:
            if self.jac_fill is not None:
                self.jac_fill[...] = 0.0
            # both storages are column-major: the view is indexed [column, row]
            self.jac_view[...] = self.jac_buf.T
        return flag

    def _root(self, t, y, gout, _data):
        try:
            gout[0] = self.guard.event(t, self.vector(y))
        except CallbackFailure:
            return 1
        return 0

    # ------------------------------------------------------------------ Newton check
    def verify_newton(self, max_iters: int) -> int:
        """Attach a Newton solver whose convergence test also checks the accepted iterate.

        CVODE accepts the iterate y_(m+1) = y_m + delta_m when delta_m (computed from the
        residual at y_m) is small, without evaluating the residual at y_(m+1). Where the
        right-hand side switches (the convective onset at dS/dr = 0), a tiny last correction
        can move a node across the switch, and y_(m+1) then solves the corrector equation
        badly. This test runs CVODE's own test first (it keeps CVODE's bookkeeping); when
        that accepts, it evaluates the residual at y_(m+1), solves for the next correction
        with the current matrix and accepts only when that correction also passes (else the
        iteration continues, or fails and CVODE retries with a new Jacobian or a smaller
        step). Cost: one right-hand side and one band solve per step. Returns CVODE's flag.
        """
        lib = self.lib
        self.nls = lib.SUNNonlinSol_Newton(self.y, self.ctx)
        flag = lib.CVodeSetNonlinearSolver(self.mem, self.nls)
        if flag != 0:
            return flag
        content = sd.newton_content(self.nls)
        self._cvode_test = sd.SUNNonlinSolConvTestFn(content.CTest)
        self._residual_fn = self._lsolve = None  # CVODE attaches them at its first step
        self.residual = lib.N_VNew_Serial(self.n, self.ctx)
        self.c_test = sd.SUNNonlinSolConvTestFn(self._checked_test)
        # ctest_data: CVODE's memory block, as CVodeSetNonlinearSolver sets it (see sd.NewtonContent)
        flag = lib.SUNNonlinSolSetConvTestFn(self.nls, self.c_test, self.mem)
        return flag or lib.CVodeSetMaxNonlinIters(self.mem, int(max_iters))

    def _checked_test(self, nls, ycor, delta, tol, ewt, data):
        flag = self._cvode_test(nls, ycor, delta, tol, ewt, data)
        if flag != 0:
            return flag
        if self._lsolve is None:
            content = sd.newton_content(nls)
            self._residual_fn = sd.SUNNonlinSolSysFn(content.Sys)
            self._lsolve = sd.SUNNonlinSolLSolveFn(content.LSolve)
        res = self.residual
        flag = self._residual_fn(ycor, res, data)
        if flag != 0:
            return flag
        self.lib.N_VScale(-1.0, res, res)
        flag = self._lsolve(res, data)
        if flag != 0:
            return flag
        self.n_verified += 1
        if self.lib.N_VWrmsNorm(res, ewt) <= tol:
            return 0
        # Never accept an unconverged iterate: Newton goes on, or fails and CVODE retries
        # with a new Jacobian or a smaller step (docs/solver.md, "Integrator accuracy").
        self.n_unconverged += 1
        return _NLS_CONTINUE

    # ------------------------------------------------------------------ counters
    def counters(self) -> dict:
        info = {}
        value = ctypes.c_long()
        for name in sd.COUNTERS:
            if getattr(self.lib, "CVodeGet" + name)(self.mem, ctypes.byref(value)) == 0:
                info[name] = int(value.value)
        step, order = ctypes.c_double(), ctypes.c_int()
        if self.lib.CVodeGetLastStep(self.mem, ctypes.byref(step)) == 0:
            info["LastStep"] = float(step.value)
        if self.lib.CVodeGetLastOrder(self.mem, ctypes.byref(order)) == 0:
            info["LastOrder"] = int(order.value)
        if self.nls:
            info["NewtonChecks"] = self.n_verified
            info["NewtonChecksFailed"] = self.n_unconverged
        if self.newton is not None:
            info.update(self.newton.counters())
        return info

    def current(self, name: str) -> float:
        """``CVodeGet<name>`` for ``CurrentStep`` / ``CurrentTime`` (NaN on failure)."""
        value = ctypes.c_double()
        if getattr(self.lib, "CVodeGet" + name)(self.mem, ctypes.byref(value)) != 0:
            return math.nan
        return float(value.value)

    def close(self) -> None:
        lib = self.lib
        if self.mem:
            mem = ctypes.c_void_p(self.mem)
            lib.CVodeFree(ctypes.byref(mem))
            self.mem = None
        if self.LS:
            lib.SUNLinSolFree(self.LS)
            self.LS = None
        if self.A:
            lib.SUNMatDestroy(self.A)
            self.A = None
        if self.nls:
            lib.SUNNonlinSolFree(self.nls)
            self.nls = None
        if self.newton is not None:  # after CVodeFree: CVODE does not own it
            self.newton.free()
            self.newton = None
        for name in ("y", "atol_vec", "residual"):
            if getattr(self, name):
                lib.N_VDestroy(getattr(self, name))
                setattr(self, name, None)
        if self.ctx:
            lib.SUNContext_Free(ctypes.byref(self.ctx))
            self.ctx = None


def _configure(run: _Run, t0, rtol, atol, *, max_steps, event, first_step, max_step, min_step,
               max_order, tstop, nonlin_conv_coef, verify_newton, log: _SundialsLog,
               max_step_growth=None) -> None:
    """Initialise CVODE and set its options; raises ``ValueError`` naming the call that
    rejected its input."""
    lib, mem = run.lib, run.mem

    def check(flag, what):
        if flag != 0:
            detail = f" ({log.last})" if log.last else ""
            raise ValueError(f"{what} returned {flag}{detail}")

    run.log = log
    flag, run.c_err = lib.set_error_handler(run.ctx, mem, log.handler)
    check(flag, "the CVODE error handler")
    check(lib.CVodeInit(mem, run.c_rhs, float(t0), run.y), "CVodeInit")
    if np.ndim(atol) == 0:
        check(lib.CVodeSStolerances(mem, float(rtol), float(atol)), "CVodeSStolerances")
    else:
        run.atol_vec = lib.N_VNew_Serial(run.n, run.ctx)
        run.vector(run.atol_vec)[:] = np.asarray(atol, dtype=np.float64)
        check(lib.CVodeSVtolerances(mem, float(rtol), run.atol_vec), "CVodeSVtolerances")
    if run.newton is not None:
        check(run.newton.attach(mem), "the compiled Newton solver")
    else:
        check(lib.CVodeSetLinearSolver(mem, run.LS, run.A), "CVodeSetLinearSolver")
        if run.guard.has_jac:
            check(lib.CVodeSetJacFn(mem, run.c_jac), "CVodeSetJacFn")
    check(lib.CVodeSetMaxNumSteps(mem, int(max_steps)), "CVodeSetMaxNumSteps")
    if verify_newton and run.newton is None:
        check(run.verify_newton(MAX_NEWTON_ITERS), "the checked Newton solver")
    check(lib.CVodeSetNonlinConvCoef(mem, float(nonlin_conv_coef)), "CVodeSetNonlinConvCoef")
    if max_step_growth is not None:
        if lib.CVodeSetEtaMax is not None:
            check(lib.CVodeSetEtaMax(mem, float(max_step_growth)), "CVodeSetEtaMax")
        elif max_step_growth != CVODE_MAX_STEP_GROWTH:  # (an older library grows by its own 10)
            raise ValueError(f"max_step_growth needs CVodeSetEtaMax (SUNDIALS >= 6.2); {lib.describe()} has none")
    if event is not None:
        check(lib.CVodeRootInit(mem, 1, run.c_root), "CVodeRootInit")
    if first_step:
        check(lib.CVodeSetInitStep(mem, float(first_step)), "CVodeSetInitStep")
    if max_step:
        check(lib.CVodeSetMaxStep(mem, float(max_step)), "CVodeSetMaxStep")
    if min_step:
        check(lib.CVodeSetMinStep(mem, float(min_step)), "CVodeSetMinStep")
    if max_order:
        check(lib.CVodeSetMaxOrd(mem, int(max_order)), "CVodeSetMaxOrd")
    if tstop is not None:
        check(lib.CVodeSetStopTime(mem, float(tstop)), "CVodeSetStopTime")


def _march(run: _Run, t_eval: np.ndarray, y0: np.ndarray, max_steps: int, trace: list | None):
    """Call CVODE for every output time; returns (t_out, y_out, flag, t_returned).

    With ``trace`` (a list), CVODE is stepped one step at a time (``CV_ONE_STEP``) and every
    accepted step's end ``(t_n, y_n)`` is appended to it, after ``(t_0, y_0)``: the
    integrator's own nodes, for quadratures of the trajectory (the energy budget). The
    outputs are CVODE's interpolant at ``t_eval`` as in ``CV_NORMAL`` (the same steps:
    CVODE chooses them without regard to the output times), and ``max_steps`` keeps its
    meaning (the most steps between two output times)."""
    lib = run.lib
    t_out, y_out = [float(t_eval[0])], [y0.copy()]
    tret = ctypes.c_double(float(t_eval[0]))
    flag = 0
    if trace is None:
        for tout in t_eval[1:]:
            flag = lib.CVode(run.mem, float(tout), run.y, ctypes.byref(tret), sd.CV_NORMAL)
            if flag < 0 or flag == sd.CV_ROOT_RETURN:
                break
            t_out.append(float(tout))
            y_out.append(run.y_arr.copy())
        run.memo = None
        return t_out, y_out, flag, float(tret.value)
    trace.append((float(t_eval[0]), y0.copy()))
    limit = 500 if int(max_steps) == 0 else int(max_steps)
    direction = 1.0 if t_eval[-1] > t_eval[0] else -1.0
    dky = lib.N_VNew_Serial(run.n, run.ctx)
    try:
        dky_arr = run.vector(dky)
        k, since = 1, 0
        while k < len(t_eval):
            # tout = the next output time, as CV_NORMAL passes it (CVODE's first step size
            # depends on it; the steps do not otherwise)
            flag = lib.CVode(run.mem, float(t_eval[k]), run.y, ctypes.byref(tret), sd.CV_ONE_STEP)
            if flag < 0:
                break
            tn = float(tret.value)
            trace.append((tn, run.y_arr.copy()))
            since += 1
            # the outputs this step passed (up to the root, where one stopped the step)
            while k < len(t_eval) and (float(t_eval[k]) - tn) * direction <= 0.0:
                tk = float(t_eval[k])
                if tk == tn:
                    y_out.append(run.y_arr.copy())
                else:
                    dky_flag = lib.CVodeGetDky(run.mem, tk, 0, dky)
                    if dky_flag != 0:
                        raise RuntimeError(f"CVodeGetDky returned {dky_flag} at t = {tk!r}")
                    y_out.append(dky_arr.copy())
                t_out.append(tk)
                k, since = k + 1, 0
            if flag == sd.CV_ROOT_RETURN:
                break
            if k < len(t_eval) and limit > 0 and since >= limit:
                flag = sd.CV_TOO_MUCH_WORK  # what CV_NORMAL returns after max_steps steps
                break
    finally:
        run.drop_vector(dky)
        lib.N_VDestroy(dky)
    run.memo = None
    return t_out, y_out, flag, float(tret.value)


def _trace_arrays(steps, n: int):
    """``(t (M,), y (M, n))`` of a step list (:func:`_march`); empty arrays for none."""
    if not steps:
        return np.zeros(0), np.zeros((0, n))
    return np.array([s[0] for s in steps]), np.stack([s[1] for s in steps])


def _corrector_of(problem, newton: str, linsolver: str, verify_newton: bool, lib):
    """``(corrector, layout, jac_into)`` of the problem for :class:`CompiledNewton`, or ``None``: the
    callbacks' Newton solver (``newton``: see :func:`integrate_cvode`). Raises ``ValueError``
    for ``newton="compiled"`` where it cannot run."""
    if newton not in ("auto", "compiled", "callbacks"):
        raise ValueError(f"integrate: newton must be 'auto', 'compiled' or 'callbacks', got {newton!r}")
    if newton == "callbacks":
        return None
    corrector = getattr(problem, "corrector", None)
    why = None
    if corrector is None:
        why = "the problem has no corrector program"
    elif getattr(problem, "jac_into", None) is None:
        why = "the problem has no Jacobian"
    elif linsolver != "band":
        why = f"linsolver is {linsolver!r}"
    elif bool(getattr(problem, "corrector_check", True)) != bool(verify_newton):
        why = "its check of the accepted iterate differs from newton_check"
    elif not compiled_newton_available(lib):
        why = f"{lib.describe()} does not allow it"
    if why is None:
        return corrector, problem.corrector_layout, problem.jac_into
    if newton == "compiled":
        raise ValueError(f"integrate: newton='compiled' cannot run: {why}")
    return None


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
    nonlin_conv_coef: float = NONLIN_CONV_COEF,
    verify_newton: bool | None = None,
    warm: WarmStart | None = None,
    trace: bool = False,
    newton: str = "auto",
    max_step_growth: float | None = None,
) -> IntegrationResult:
    """Integrate with CVODE; see :func:`aragog.solver.backends.integrate` for the arguments.

    ``linsolver`` is ``"band"`` (SUNDIALS band LU with the problem's band Jacobian) or
    ``"dense"`` (dense LU; the band Jacobian is expanded). Without a ``jac_into`` CVODE
    builds the Jacobian by difference quotients. ``max_steps`` is CVODE's ``mxstep``: the
    most internal steps between two consecutive output times (0: CVODE's default 500;
    negative: no limit). ``stop_at_end`` sets CVODE's stop time to ``t_eval[-1]`` so the
    right-hand side is never evaluated past the end. ``nonlin_conv_coef`` is CVODE's
    nonlinear convergence coefficient; ``verify_newton`` checks every accepted Newton
    iterate (:meth:`_Run.verify_newton`; module docstring for why both are needed).
    ``warm``: a :class:`WarmStart` that keeps the CVODE memory for the next integration
    (``None``: a fresh memory, freed at the end). ``trace``: step one step at a time and
    return every accepted step's end as ``result.trace`` (:func:`_march`).
    ``newton``: ``"compiled"`` solves each step's corrector in one call of the problem's
    ``corrector`` program (:mod:`._cvode_newton`), ``"callbacks"`` with SUNDIALS' Newton
    solver and the band LU (one call of ``rhs_into`` per iteration, of ``jac_into`` per new
    Jacobian), ``"auto"`` compiled where the problem has a corrector program that checks
    its iterates as ``verify_newton`` says, ``linsolver`` is "band" and the library allows
    it (:func:`compiled_newton_available`); ``result.info["newton"]`` says which ran.
    ``max_step_growth``: CVODE's ``etamax`` (``CVodeSetEtaMax``), the largest ratio of a
    step to the one before (``None``: CVODE's own, 10); a library without the function
    (SUNDIALS < 6.2) takes only :data:`CVODE_MAX_STEP_GROWTH` and rejects any other value with
    status -22, naming it.
    """
    wall0 = time.perf_counter()
    if verify_newton is None:
        verify_newton = NEWTON_CHECK
    if linsolver not in ("band", "dense"):
        raise ValueError(f"integrate: linsolver must be 'band' or 'dense', got {linsolver!r}")
    lib = sd.load_library()  # availability is checked by the caller
    guard = CallbackGuard(problem, event, want_jac=linsolver)
    corrector = _corrector_of(problem, newton, linsolver, verify_newton, lib)
    n = guard.n
    log = _SundialsLog()
    t_eval = np.asarray(t_eval, dtype=np.float64)
    y0 = np.array(y0, dtype=np.float64)

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
            trace=_trace_arrays(steps, n) if trace else None,
            **kw,
        )

    t_end = float(t_eval[-1])
    tstop = t_end if stop_at_end and t_end != float(t_eval[0]) else None

    def setup() -> _Run:
        run = _Run(lib, guard, y0, linsolver, corrector)
        try:
            _configure(run, t_eval[0], rtol, atol, max_steps=max_steps, event=event,
                       first_step=first_step, max_step=max_step, min_step=min_step,
                       max_order=max_order, tstop=tstop, nonlin_conv_coef=nonlin_conv_coef,
                       verify_newton=verify_newton, max_step_growth=max_step_growth, log=log)
        except ValueError:
            run.close()
            raise
        return run

    def rejected(exc):
        logger.debug("CVODE set-up failed", exc_info=True)
        return result(t_eval[:1], y0[None, :], -22, f"CVODE: the input was rejected ({exc})",
                      "illegal_input")

    mode, jump, before = None, None, {}
    steps: list | None = None
    if warm is None:
        try:
            run = setup()
        except ValueError as exc:
            return rejected(exc)
    else:
        atol_key = float(atol) if np.ndim(atol) == 0 else np.asarray(atol, dtype=np.float64).tobytes()
        event_key = getattr(event, "state_only", None)
        signature = _Signature(n, guard.ml, guard.mu, linsolver, bool(guard.has_jac), float(rtol), atol_key,
                               int(max_steps), event is not None, first_step, max_step, min_step,
                               max_order, float(nonlin_conv_coef), bool(verify_newton), bool(stop_at_end),
                               corrector is not None, max_step_growth)
        try:
            run, mode, jump = warm.begin(guard, t_eval, y0, signature, rtol, atol, setup, event_key)
        except ValueError as exc:
            warm.close()
            return rejected(exc)
        if run.newton is not None:  # this integration's problem (its inputs), on the kept matrix
            run.newton.corrector, run.newton.jac_into = corrector[0], corrector[2]
            if mode != "continue":  # CVODE starts again: so does the solver, and its counters
                run.newton.restart()
                run.newton.mark()
        if mode == "continue":  # the memory's counters run on: report this integration's share
            before = run.counters()
    try:
        steps = [] if trace else None
        t_out, y_out, flag, t_ret = _march(run, t_eval, y0, max_steps, steps)
        if warm is not None and mode == "continue" and flag < 0:
            # the continued history failed: redo the integration from a fresh memory
            first = run.counters()
            first_steps = int(first.get("NumSteps", 0)) - int(before.get("NumSteps", 0))
            logger.debug("warm start: the continued integration failed (flag %d at t = %r); "
                         "restarting from a fresh CVODE memory", flag, t_ret)
            warm.close()
            try:
                run, mode, _ = warm.begin(guard, t_eval, y0, signature, rtol, atol, setup)
            except ValueError as exc:
                warm.close()
                return rejected(exc)
            mode, before = "fallback", {"NumSteps": -first_steps}
            steps = [] if trace else None
            t_out, y_out, flag, t_ret = _march(run, t_eval, y0, max_steps, steps)
        info = run.counters()
        for name, value in before.items():  # counters (not the last step's size and order)
            if name in info and name not in ("LastStep", "LastOrder"):
                info[name] -= value
        info["newton"] = "compiled" if corrector is not None else "callbacks"
        if warm is not None:
            info["warm_start"] = mode
            if jump is not None:
                info["rhs_jump"] = float(jump)
        nsteps = int(info.get("NumSteps", 0))
        if flag == sd.CV_ROOT_RETURN:
            t_ev = float(t_ret)
            if warm is not None:
                warm.forget_end()  # CVODE stepped past the event
            return result(t_out, y_out, 1, f"CVODE: event at t = {_fmt(t_ev)}", "event",
                          nsteps=nsteps, t_event=t_ev, y_event=run.y_arr.copy(), info=info)
        if flag >= 0:
            if warm is not None:
                warm.record_end(t_out[-1], y_out[-1], guard, event_key)
            return result(t_out, y_out, 0, f"CVODE: reached t = {_fmt(t_out[-1])} in {nsteps} steps",
                          "success", nsteps=nsteps, info=info)
        # on a failure CVODE returns its current time t_n, the end of the last step it
        # completed; the state there is its interpolant's (CVODE leaves yout unwritten)
        y_failure = None
        if lib.CVodeGetDky(run.mem, float(t_ret), 0, run.y) == 0:
            y_failure = run.y_arr.copy()
        if warm is not None:
            warm.close()
        n_reached = len(t_out)
        t_next = t_eval[n_reached] if n_reached < len(t_eval) else t_eval[-1]
        template = FLAG_MESSAGES.get(flag, f"CVODE failed with flag {flag}")
        eff_max_steps = int(max_steps) if int(max_steps) != 0 else 500
        text = template.format(t=_fmt(t_ret), t_next=_fmt(t_next), max_steps=eff_max_steps,
                               rtol=_fmt(rtol), atol=_fmt(atol))
        message = f"CVODE: {text}{guard.error_summary()}"
        last_error = run.log.last if run.log is not None else log.last
        if last_error and flag != -1:
            message += f" [SUNDIALS {last_error}]"
        return result(t_out, y_out, flag, message, FLAG_REASONS.get(flag, "other"),
                      nsteps=nsteps, t_failure=t_ret, y_failure=y_failure, info=info)
    except BaseException:
        if warm is not None:
            warm.close()
        raise
    finally:
        if warm is None:
            run.close()
