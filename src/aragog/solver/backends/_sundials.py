"""A ctypes binding to the SUNDIALS CVODE shared library (SUNDIALS 6.x, double precision,
64-bit indices): the few C functions :mod:`aragog.solver.backends._cvode` calls.

Why not scikits.odes: its ``CVODE`` wrapper (3.0.0) truncates ``nonlin_conv_coef`` to an
integer (so CVODE's nonlinear convergence coefficient cannot be set) and exposes neither
the Jacobian evaluation frequency nor the nonlinear solver. CVODE's default coefficient
(0.1) returns wrong answers with status 0 on this package's right-hand side (docs/solver.md,
"Integrator accuracy"); calling the library directly gives every option of the C API.

The library is found with :func:`ctypes.util.find_library` (``sundials_cvode``), then by
its Debian/Ubuntu soname; ``ARAGOG_SUNDIALS_CVODE`` names a library file explicitly. The
CVODE library of SUNDIALS 6 also carries the serial N_Vector, the band and dense matrices
and linear solvers used here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

__all__ = [
    "FLAG_MESSAGES",
    "FLAG_REASONS",
    "load_library",
    "library_available",
    "CVRhsFn",
    "CVRootFn",
    "CVLsJacFn",
    "CVErrHandlerFn",
    "CV_BDF",
    "CV_NORMAL",
    "CV_ONE_STEP",
    "CV_SUCCESS",
    "CV_TSTOP_RETURN",
    "CV_ROOT_RETURN",
]

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


CV_BDF = 2
CV_NORMAL = 1
CV_ONE_STEP = 2
CV_TOO_MUCH_WORK = -1
CV_SUCCESS = 0
CV_TSTOP_RETURN = 1
CV_ROOT_RETURN = 2

_real = ctypes.c_double
_index = ctypes.c_int64  # SUNDIALS_INDEX_TYPE of the Debian build (int64_t)
_ptr = ctypes.c_void_p
_long = ctypes.c_long
_int = ctypes.c_int

#: int f(realtype t, N_Vector y, N_Vector ydot, void *user_data)
CVRhsFn = ctypes.CFUNCTYPE(_int, _real, _ptr, _ptr, _ptr)
#: int g(realtype t, N_Vector y, realtype *gout, void *user_data)
CVRootFn = ctypes.CFUNCTYPE(_int, _real, _ptr, ctypes.POINTER(_real), _ptr)
#: int jac(realtype t, N_Vector y, N_Vector fy, SUNMatrix J, void *user_data, N_Vector tmp1..3)
CVLsJacFn = ctypes.CFUNCTYPE(_int, _real, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr)
#: int ctest(SUNNonlinearSolver NLS, N_Vector ycor, N_Vector del, realtype tol, N_Vector ewt,
#:           void *ctest_data)
SUNNonlinSolConvTestFn = ctypes.CFUNCTYPE(_int, _ptr, _ptr, _ptr, _real, _ptr, _ptr)
#: int sys(N_Vector ycor, N_Vector F, void *mem)
SUNNonlinSolSysFn = ctypes.CFUNCTYPE(_int, _ptr, _ptr, _ptr)
#: int lsolve(N_Vector b, void *mem)
SUNNonlinSolLSolveFn = ctypes.CFUNCTYPE(_int, _ptr, _ptr)
#: void eh(int error_code, const char *module, const char *function, char *msg, void *data)
CVErrHandlerFn = ctypes.CFUNCTYPE(None, _int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _ptr)

# name -> (restype, argtypes)
_SIGNATURES = {
    "SUNContext_Create": (_int, [_ptr, ctypes.POINTER(_ptr)]),
    "SUNContext_Free": (_int, [ctypes.POINTER(_ptr)]),
    "N_VNew_Serial": (_ptr, [_index, _ptr]),
    "N_VDestroy": (None, [_ptr]),
    "N_VGetArrayPointer": (_ptr, [_ptr]),  # the data address
    "SUNBandMatrix": (_ptr, [_index, _index, _index, _ptr]),
    "SUNBandMatrix_Data": (_ptr, [_ptr]),
    "SUNBandMatrix_LDim": (_index, [_ptr]),
    "SUNBandMatrix_StoredUpperBandwidth": (_index, [_ptr]),
    "SUNDenseMatrix": (_ptr, [_index, _index, _ptr]),
    "SUNDenseMatrix_Data": (_ptr, [_ptr]),
    "SUNMatDestroy": (None, [_ptr]),
    "SUNLinSol_Band": (_ptr, [_ptr, _ptr, _ptr]),
    "SUNLinSol_Dense": (_ptr, [_ptr, _ptr, _ptr]),
    "SUNLinSolFree": (_int, [_ptr]),
    "CVodeCreate": (_ptr, [_int, _ptr]),
    "CVodeInit": (_int, [_ptr, CVRhsFn, _real, _ptr]),
    "CVodeReInit": (_int, [_ptr, _real, _ptr]),
    "CVodeFree": (None, [ctypes.POINTER(_ptr)]),
    "CVodeSStolerances": (_int, [_ptr, _real, _real]),
    "CVodeSVtolerances": (_int, [_ptr, _real, _ptr]),
    "CVodeSetLinearSolver": (_int, [_ptr, _ptr, _ptr]),
    "CVodeSetJacFn": (_int, [_ptr, CVLsJacFn]),
    "CVodeSetErrHandlerFn": (_int, [_ptr, CVErrHandlerFn, _ptr]),
    "CVodeSetMaxNumSteps": (_int, [_ptr, _long]),
    "CVodeSetStopTime": (_int, [_ptr, _real]),
    "CVodeSetInitStep": (_int, [_ptr, _real]),
    "CVodeSetMaxStep": (_int, [_ptr, _real]),
    "CVodeSetMinStep": (_int, [_ptr, _real]),
    "CVodeSetMaxOrd": (_int, [_ptr, _int]),
    "CVodeSetNonlinConvCoef": (_int, [_ptr, _real]),
    "CVodeRootInit": (_int, [_ptr, _int, CVRootFn]),
    "CVodeSetNonlinearSolver": (_int, [_ptr, _ptr]),
    "CVodeSetMaxNonlinIters": (_int, [_ptr, _int]),
    "SUNNonlinSol_Newton": (_ptr, [_ptr, _ptr]),
    "SUNNonlinSolSetConvTestFn": (_int, [_ptr, SUNNonlinSolConvTestFn, _ptr]),
    "SUNNonlinSolGetCurIter": (_int, [_ptr, ctypes.POINTER(_int)]),
    "SUNNonlinSolFree": (_int, [_ptr]),
    "N_VWrmsNorm": (_real, [_ptr, _ptr]),
    "N_VScale": (None, [_real, _ptr, _ptr]),
    "CVode": (_int, [_ptr, _real, _ptr, ctypes.POINTER(_real), _int]),
    "CVodeGetDky": (_int, [_ptr, _real, _int, _ptr]),
}

#: CVODE counters read after a solve: CVodeGet<name>(mem, long *)
COUNTERS = (
    "NumSteps", "NumRhsEvals", "NumJacEvals", "NumLinSolvSetups", "NumErrTestFails",
    "NumNonlinSolvIters", "NumNonlinSolvConvFails", "NumGEvals",
)
for _name in COUNTERS:
    _SIGNATURES["CVodeGet" + _name] = (_int, [_ptr, ctypes.POINTER(_long)])
_SIGNATURES["CVodeGetLastStep"] = (_int, [_ptr, ctypes.POINTER(_real)])
_SIGNATURES["CVodeGetLastOrder"] = (_int, [_ptr, ctypes.POINTER(_int)])
_SIGNATURES["CVodeGetCurrentStep"] = (_int, [_ptr, ctypes.POINTER(_real)])
_SIGNATURES["CVodeGetCurrentOrder"] = (_int, [_ptr, ctypes.POINTER(_int)])
_SIGNATURES["CVodeGetCurrentTime"] = (_int, [_ptr, ctypes.POINTER(_real)])


class NewtonContent(ctypes.Structure):
    """The head of ``struct _SUNNonlinearSolverContent_Newton`` (sunnonlinsol_newton.h,
    SUNDIALS 6): the functions CVODE attaches to its Newton solver."""

    _fields_ = [
        ("Sys", _ptr), ("LSetup", _ptr), ("LSolve", _ptr), ("CTest", _ptr), ("delta", _ptr),
        ("jcur", _int), ("curiter", _int), ("maxiters", _int), ("niters", _long),
        ("nconvfails", _long), ("ctest_data", _ptr),
    ]


def newton_content(nls: int) -> NewtonContent:
    """The content of a SUNNonlinSol_Newton object (its first member is the content
    pointer: ``struct _generic_SUNNonlinearSolver { void *content; ... }``)."""
    content = ctypes.cast(nls, ctypes.POINTER(_ptr))[0]
    return ctypes.cast(content, ctypes.POINTER(NewtonContent))[0]


def _candidates() -> list[str]:
    names = []
    explicit = os.environ.get("ARAGOG_SUNDIALS_CVODE")
    if explicit:
        names.append(explicit)
    found = ctypes.util.find_library("sundials_cvode")
    if found:
        names.append(found)
    names += ["libsundials_cvode.so.6", "libsundials_cvode.so"]
    return names


class _Library:
    """The CVODE shared library with typed functions as attributes."""

    def __init__(self, cdll: ctypes.CDLL, path: str):
        self.path = path
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(cdll, name)  # AttributeError: not a SUNDIALS 6 CVODE library
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)


@functools.lru_cache(maxsize=1)
def load_library() -> _Library:
    """The CVODE library (loaded once). Raises ``OSError`` naming what was tried when no
    SUNDIALS 6 CVODE library can be loaded."""
    errors = []
    for name in _candidates():
        try:
            return _Library(ctypes.CDLL(name), name)
        except (OSError, AttributeError) as exc:
            errors.append(f"{name}: {exc}")
    raise OSError("no SUNDIALS 6 CVODE library could be loaded (" + "; ".join(errors) + ")")


def library_available() -> bool:
    """Whether :func:`load_library` succeeds."""
    try:
        load_library()
    except OSError:
        return False
    return True
