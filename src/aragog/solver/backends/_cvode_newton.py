"""CVODE's Newton solve in one compiled call per step: a SUNNonlinearSolver of aragog's own.

CVODE keeps what it does best: the step size and order, the error test, the interpolation
and the events. At each step attempt it asks its nonlinear solver for the correction that
solves the corrector equation (:mod:`aragog.programs._corrector`). The SUNDIALS Newton solver
answers with one call of the problem's right-hand side per iteration, one Jacobian call per
new matrix and a band LU in C, each call a crossing from C into Python and XLA. This solver
(:class:`CompiledNewton`) answers with one call of the problem's ``corrector``: a compiled
program that iterates the corrector, forms and factors ``I - gamma J`` when a new matrix is
due, and returns the correction. Per step that is one crossing instead of about four
(docs/solver.md, "One compiled call per step").

What CVODE would decide inside its linear-solver interface is decided here, by its rules
(cvode.c ``cvNls``, cvode_ls.c ``cvLsSetup``; CVODE itself cannot, having no linear solver
attached): a new matrix on the first step, after a failed step attempt (convergence or
error test), when ``gamma`` moved by more than 30 % since the last factorisation
(``DGMAX_LSETUP``) or 20 steps after it (``MSBP``); a new Jacobian with it on the first
step, after a convergence failure, or 51 steps after the last one (``MSBJ``). The program
applies the rest (redo with a new matrix after a failure with an old one).

The object is built from the SUNDIALS generic ``SUNNonlinSolNewEmpty`` with its operations
set from ctypes. Where each operation sits in the operations table differs between SUNDIALS
releases (7.x added members in the middle), so the table is read, not assumed
(:func:`operation_slots`): every member of a fresh table is given a recording function,
the library's own generic calls (``SUNNonlinSolGetType``, ``SUNNonlinSolSolve``, ...) are
made once, and each records which member it reached.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
import time

import numpy as np

from aragog.errors import describe

__all__ = ["CompiledNewton", "operation_slots", "compiled_newton_available", "DGMAX_LSETUP", "MSBP", "MSBJ"]

logger = logging.getLogger("aragog.solver.backends.cvode")

#: CVODE's rules for a new Newton matrix and a new Jacobian (cvode_impl.h, cvode_ls_impl.h):
#: a relative change of gamma, steps since the last factorisation, steps since the last
#: Jacobian.
DGMAX_LSETUP, MSBP, MSBJ = 0.3, 20, 51
_SUN_NLS_CONV_RECVR = 902  # recoverable: CVODE retries the step with a smaller h
_CV_RHSFUNC_FAIL = -8

_ptr = ctypes.c_void_p
_real = ctypes.c_double
_long = ctypes.c_long
_int = ctypes.c_int
#: the members CVODE calls that this solver provides, and the generic call that reaches each
_SolveFn = ctypes.CFUNCTYPE(_int, _ptr, _ptr, _ptr, _ptr, _real, _int, _ptr)
_GetTypeFn = ctypes.CFUNCTYPE(_int, _ptr)
_SetSysFn = ctypes.CFUNCTYPE(_int, _ptr, _ptr)
_GetCountFn = ctypes.CFUNCTYPE(_int, _ptr, ctypes.POINTER(_long))
_Recorder = ctypes.CFUNCTYPE(_int)


def _usable_size():
    """``size(address)``: the usable size of a ``malloc``ed block (glibc
    ``malloc_usable_size``, macOS ``malloc_size``), or ``None`` where neither exists."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    for name in ("malloc_usable_size", "malloc_size"):
        fn = getattr(libc, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_size_t, [_ptr]
            return fn
    return None


def _operations_table(nls, ctx, size_of) -> int:
    """The address of a fresh solver's operations table: the first member of the solver's
    struct that is neither NULL nor the context (``{content, ops, sunctx}`` in SUNDIALS 6
    and 7.0-7.5; 7.9 has one more member before ``ops``; the content of an empty solver is
    NULL)."""
    words = ctypes.cast(nls, ctypes.POINTER(_ptr))
    for k in range(int(size_of(nls)) // ctypes.sizeof(_ptr)):
        if words[k] and words[k] != ctx.value:
            return int(words[k])
    raise OSError("no operations table in an empty SUNNonlinearSolver")


@functools.lru_cache(maxsize=None)
def operation_slots(lib) -> dict[str, int]:
    """``{"gettype", "solve", "setsysfn", "getnumiters", "getnumconvfails": index}``: where
    those members sit in this library's ``SUNNonlinearSolver_Ops`` (pointer-sized slots).
    Raises ``OSError`` when the table cannot be read (no way to know its size, or a generic
    call that reached no member or several)."""
    size_of = _usable_size()
    if size_of is None:
        raise OSError("cannot tell the size of a SUNDIALS operations table on this platform")
    ctx = _ptr()
    if lib.create_context(ctypes.byref(ctx)) != 0:
        raise OSError("SUNContext_Create failed")
    nls = None
    try:
        nls = lib.SUNNonlinSolNewEmpty(ctx)
        if not nls:
            raise OSError("SUNNonlinSolNewEmpty failed")
        ops = _operations_table(nls, ctx, size_of)
        n_slots = int(size_of(ops)) // ctypes.sizeof(_ptr)
        table = (_ptr * n_slots).from_address(ops)
        reached: list[int] = []
        recorders = [_Recorder(functools.partial(lambda k: reached.append(k) or 0, k)) for k in range(n_slots)]
        for k, rec in enumerate(recorders):
            table[k] = ctypes.cast(rec, _ptr)
        count = _long()
        calls = {
            "gettype": lambda: lib.SUNNonlinSolGetType(nls),
            "solve": lambda: lib.SUNNonlinSolSolve(nls, None, None, None, 0.0, 0, None),
            "setsysfn": lambda: lib.SUNNonlinSolSetSysFn(nls, None),
            "getnumiters": lambda: lib.SUNNonlinSolGetNumIters(nls, ctypes.byref(count)),
            "getnumconvfails": lambda: lib.SUNNonlinSolGetNumConvFails(nls, ctypes.byref(count)),
        }
        slots = {}
        try:
            for name, call in calls.items():
                reached.clear()
                call()
                if len(reached) != 1:
                    raise OSError(f"SUNNonlinSol {name} reached {len(reached)} operations")
                slots[name] = reached[0]
        finally:
            for k in range(n_slots):
                table[k] = None
        if len(set(slots.values())) != len(slots):
            raise OSError(f"SUNNonlinSol operations share slots: {slots}")
        return slots
    finally:
        if nls:
            lib.SUNNonlinSolFree(nls)
        lib.SUNContext_Free(ctypes.byref(ctx))


def compiled_newton_available(lib) -> bool:
    """Whether :class:`CompiledNewton` can be attached to this library's CVODE."""
    try:
        operation_slots(lib)
    except (OSError, AttributeError) as exc:
        logger.debug("the compiled Newton solver is not available: %s", exc)
        return False
    return True


class CompiledNewton:
    """A SUNNonlinearSolver whose solve is one call of ``corrector`` (``problem.corrector``:
    ``corrector(t, y_pred, vectors, scalars, held) -> (c, f, info, held)``, see
    :func:`aragog.programs._corrector.make_corrector`; ``layout`` its
    :class:`~aragog.programs._corrector.CorrectorLayout`), with a call of ``jac_into(t, y,
    out)`` (the problem's band Jacobian) before it when a new Jacobian is due, and a second
    call of the corrector after a failure on an old Jacobian (5-8 % of the steps).

    The held matrix, the convergence rate and the step counts of the last factorisation and
    Jacobian persist from one step to the next, and from one integration to the next when
    the CVODE memory is kept (warm start). ``run`` is the CVODE integration
    (:class:`aragog.solver.backends._cvode._Run`): its vector views, its guard (counters and
    failures) and its record of the last right-hand side (warm start's jump test).
    ``counts``: iterations, right-hand sides, Jacobians, factorisations, checked iterates,
    failed checks and failed passes, over the solver's life; ``seconds`` the wall time in its
    solve (the corrector's call and the Python around it)."""

    def __init__(self, run, corrector, layout, jac_into):
        self.run, self.lib = run, run.lib
        self.corrector, self.layout, self.jac_into = corrector, layout, jac_into
        slots = operation_slots(self.lib)
        self.nls = self.lib.SUNNonlinSolNewEmpty(run.ctx)
        if not self.nls:
            raise MemoryError("SUNNonlinSolNewEmpty failed")
        self._table = (_ptr * (max(slots.values()) + 1)).from_address(
            _operations_table(self.nls, run.ctx, _usable_size()))
        table = self._table
        self._callbacks = {
            "gettype": _GetTypeFn(lambda _nls: 0),  # SUNNONLINEARSOLVER_ROOTFIND
            "solve": _SolveFn(self._solve),
            "setsysfn": _SetSysFn(lambda _nls, _fn: 0),  # the residual is the program's own
            "getnumiters": _GetCountFn(self._iters),
            "getnumconvfails": _GetCountFn(self._conv_fails),
        }
        for name, cb in self._callbacks.items():
            table[slots[name]] = ctypes.cast(cb, _ptr)
        n = layout.n
        self.vectors = np.empty((2, n))
        self.scalars = np.zeros(7)
        self.restart()
        self.counts = np.zeros(7)  # float: the program's info vector adds to it as it is
        self.calls = 0
        self.seconds = 0.0  # wall time in :meth:`_solve`, the corrector call included
        self._baseline = (np.zeros(7), 0, 0.0)
        self._views: dict[int, np.ndarray] = {}
        self._t, self._nst = _real(), _long()
        self._gamma, self._rl1 = _real(), _real()
        self._ypred, self._yn, self._fn, self._zn1, self._user = _ptr(), _ptr(), _ptr(), _ptr(), _ptr()
        self._y = np.empty(n)
        # the program's info vector, by name (the layout knows its order)
        at = layout.info_index
        self._at_flag, self._at_crate, self._at_delp = at("flag"), at("crate"), at("delp")
        self._counts = slice(at("iters"), at("conv_fails") + 1)  # the seven counters, in self.counts' order
        self._flag_rhs, self._flag_jac = layout.flag_rhs, layout.flag_jac
        self._at_passes = at("passes")
        self._system_data = tuple(ctypes.byref(x) for x in (self._t, self._ypred, self._yn, self._fn, self._gamma,
                                                            self._rl1, self._zn1, self._user))
        self._nst_ref = ctypes.byref(self._nst)

    def attach(self, mem) -> int:
        """``CVodeSetNonlinearSolver``; CVODE's flag."""
        return self.lib.CVodeSetNonlinearSolver(mem, self.nls)

    def _iters(self, _nls, out) -> int:
        out[0] = self.solve_iters
        return 0

    def _conv_fails(self, _nls, out) -> int:
        out[0] = self.solve_fails
        return 0

    def _setup_code(self, nst: int, gamma: float) -> int:
        """0 the held matrix, 1 a new factorisation, 2 a new Jacobian and factorisation
        (CVODE's rules, module docstring)."""
        retry = nst == self.last_nst  # the same step again: its last attempt failed
        conv_failed = retry and self.last_failed
        setup = (retry or nst == 0 or nst >= self.nst_setup + MSBP
                 or not abs(gamma / self.gamma_p - 1.0) <= DGMAX_LSETUP)
        if not setup:
            return 0
        return 2 if (nst == 0 or conv_failed or nst >= self.nst_jac + MSBJ) else 1

    def _solve(self, nls, y0, ycor, w, tol, call_setup, mem) -> int:
        t0 = time.perf_counter()
        try:
            return self._solve_step(y0, ycor, w, tol, mem)
        finally:
            self.seconds += time.perf_counter() - t0

    def _view(self, nv) -> np.ndarray:
        """A NumPy view of an N_Vector's data, by the vector's address (CVODE passes the
        same few vectors at every step; a serial vector's data never moves)."""
        arr = self._views.get(nv)
        if arr is None:
            arr = self._views[nv] = self.run.vector(nv)
        return arr

    def _solve_step(self, y0, ycor, w, tol, mem) -> int:
        run, lib = self.run, self.lib
        try:
            flag = lib.CVodeGetNonlinearSystemData(mem, *self._system_data)
            flag = flag or lib.CVodeGetNumSteps(mem, self._nst_ref)
            if flag != 0:
                return _CV_RHSFUNC_FAIL
            t, gamma, nst = self._t.value, self._gamma.value, int(self._nst.value)
            y_pred = self._view(y0)  # the predicted state, zn[0]
            code = self._setup_code(nst, gamma)
            self.vectors[0] = self._view(self._zn1.value)
            self.vectors[1] = self._view(w)
            held, scalars, jacobians = self.held, self.scalars, 0
            counts = np.zeros(7)
            passes = 0
            while True:
                self.calls += 1
                if code == 2:  # a new Jacobian at the predicted state, into the held matrix
                    held = np.array(held)
                    self.jac_into(t, y_pred, held[self.layout.jacobian_rows])
                    jacobians += 1
                scalars[:] = (self._rl1.value, gamma, tol, self.crate, code, self.delp, passes)
                c, f, info, held = self.corrector(t, y_pred, self.vectors, scalars, held)
                info = np.asarray(info)
                counts += info[self._counts]
                self.crate, self.delp = float(info[self._at_crate]), float(info[self._at_delp])
                passes = int(info[self._at_passes])
                if int(info[self._at_flag]) != self._flag_jac:
                    break
                code = 2  # failed on an old Jacobian: redo with a new one (cvLsSetup's rule)
        except Exception as exc:  # noqa: BLE001 - a failed call is recoverable (a smaller step)
            self.last_nst, self.last_failed = -1, True
            self.solve_iters, self.solve_fails = 0, 1
            run.guard.fail("rhs", self._t.value, describe(exc), exc)
            return _SUN_NLS_CONV_RECVR
        counts[2] = jacobians  # iterations, RHS, Jacobians, setups, checks, failed checks, failed passes
        self.counts += counts
        guard = run.guard
        guard.nfev += int(counts[1])
        self.held = held
        if counts[3]:  # factored in this call (the last factorisation's gamma and step)
            self.gamma_p = gamma
            self.nst_setup = nst
            if jacobians:
                guard.njev += jacobians
                self.nst_jac = nst
        self.solve_iters, self.solve_fails = int(counts[0]), int(counts[6])
        self.last_nst = nst
        status = int(info[self._at_flag])
        self.last_failed = status != 0
        if status != 0:
            if status == self._flag_rhs:  # record it as the rhs callback would
                guard.fail("rhs", t, "non-finite value in the right-hand side")
            run.last_t = math.nan
            return _SUN_NLS_CONV_RECVR
        c = np.asarray(c)
        self._view(ycor)[:] = c
        f = np.asarray(f)
        if f[0] == f[0]:  # the right-hand side at the accepted state (the checked iterate's)
            np.add(y_pred, c, out=self._y)
            run.last_t = t
            run.last_y[:] = self._y
            run.last_f[:] = f
        else:
            run.last_t = math.nan
        return 0

    def counters(self) -> dict:
        """The solver's counts for :meth:`aragog.solver.backends._cvode._Run.counters`."""
        names = ("NewtonIters", "CorrectorRhsEvals", "NumJacEvals", "NumLinSolvSetups", "NewtonChecks",
                 "NewtonChecksFailed", "NewtonPassesFailed")
        counts, calls = self.counts - self._baseline[0], self.calls - self._baseline[1]
        out = {name: int(v) for name, v in zip(names, counts)}
        out["CorrectorCalls"] = calls
        out["NewtonSeconds"] = self.seconds - self._baseline[2]
        return out

    def restart(self) -> None:
        """Forget the held matrix and what CVODE's rules carry from step to step, as a new
        solver would (with ``CVodeReInit``: a restarted integration is the same as one in a
        new memory, bit for bit)."""
        self.held = self.layout.initial_held()
        self.delp = 1.0  # CVODE's del_p: carried from one step to the next, as CVODE does
        self.crate = 1.0
        self.gamma_p = math.nan
        self.nst_setup = self.nst_jac = 0
        self.last_nst, self.last_failed = -1, False
        self.solve_iters = self.solve_fails = 0

    def mark(self) -> None:
        """Count from here (CVODE's counters restart with ``CVodeReInit``)."""
        self._baseline = (self.counts.copy(), self.calls, self.seconds)

    def free(self) -> None:
        if self.nls:
            for k in operation_slots(self.lib).values():
                self._table[k] = None
            self.lib.SUNNonlinSolFree(self.nls)
            self.nls = None
