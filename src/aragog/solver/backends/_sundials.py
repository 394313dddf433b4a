"""A ctypes binding to the SUNDIALS CVODE shared library (SUNDIALS 6.x or 7.x, double
precision, 32- or 64-bit indices): the few C functions :mod:`aragog.solver.backends._cvode`
calls.

Why not scikits.odes: its ``CVODE`` wrapper (3.0.0) truncates ``nonlin_conv_coef`` to an
integer (so CVODE's nonlinear convergence coefficient cannot be set) and exposes neither
the Jacobian evaluation frequency nor the nonlinear solver. CVODE's default coefficient
(0.1) returns wrong answers with status 0 on this package's right-hand side (docs/solver.md,
"Integrator accuracy"); calling the library directly gives every option of the C API.

Which library (docs/solver.md, "The CVODE library"): ``ARAGOG_SUNDIALS_CVODE`` (a library
file) if set; else the system's (:func:`ctypes.util.find_library` ``sundials_cvode``, then
the sonames of SUNDIALS 7 and 6); else the one that the scikit-sundae wheel ships
(``scikit_sundae.libs/``, SUNDIALS 7.9, a dependency of this package), so a plain
``pip install`` works without a system SUNDIALS. The CVODE library carries the serial
N_Vector, the band and dense matrices, their linear solvers and the Newton solver
(SUNDIALS 7 puts the context and the generic vector operations in ``libsundials_core``,
which the CVODE library loads).

What differs between the two majors, and is handled here: the context's communicator
argument (``void *`` in 6, an ``int`` SUNComm in 7), the error handler (per CVODE memory,
``CVodeSetErrHandlerFn``, in 6; a stack on the context, ``SUNContext_PushErrHandler``, in
7), and the index type (``sunindextype``: read from a band matrix's content, not assumed:
Debian's SUNDIALS 6 uses int64, the scikit-sundae wheel int32).
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
    "SUNErrHandlerFn",
    "library_info",
    "CV_BDF",
    "CV_NORMAL",
    "CV_ONE_STEP",
    "CV_SUCCESS",
    "CV_TSTOP_RETURN",
    "CV_ROOT_RETURN",
]

#: CVODE return flags (cvode.h, the same numbers in SUNDIALS 6 and 7) -> plain words. ``{t}``
#: is where CVODE stopped.
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
    -32: "the SUNDIALS context was missing or wrong",
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
class _index:  # noqa: N801 - a placeholder in _SIGNATURES for sunindextype (see _index_type)
    """sunindextype: c_int64 or c_int32, per library."""
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
#: SUNDIALS 6: void eh(int error_code, const char *module, const char *function, char *msg,
#: void *data)
CVErrHandlerFn = ctypes.CFUNCTYPE(None, _int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _ptr)
#: SUNDIALS 7: void eh(int line, const char *func, const char *file, const char *msg,
#: SUNErrCode err_code, void *err_user_data, SUNContext sunctx)
SUNErrHandlerFn = ctypes.CFUNCTYPE(None, _int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _int, _ptr,
                                   _ptr)

# name -> (restype, argtypes)
_SIGNATURES = {
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
    # a nonlinear solver of aragog's own (backends._cvode_newton)
    "SUNNonlinSolNewEmpty": (_ptr, [_ptr]),
    "SUNNonlinSolGetType": (_int, [_ptr]),
    "SUNNonlinSolSolve": (_int, [_ptr, _ptr, _ptr, _ptr, _real, _int, _ptr]),
    "SUNNonlinSolSetSysFn": (_int, [_ptr, _ptr]),
    "SUNNonlinSolGetNumIters": (_int, [_ptr, ctypes.POINTER(_long)]),
    "SUNNonlinSolGetNumConvFails": (_int, [_ptr, ctypes.POINTER(_long)]),
    "CVodeGetNonlinearSystemData": (_int, [_ptr, ctypes.POINTER(_real), ctypes.POINTER(_ptr), ctypes.POINTER(_ptr),
                                           ctypes.POINTER(_ptr), ctypes.POINTER(_real), ctypes.POINTER(_real),
                                           ctypes.POINTER(_ptr), ctypes.POINTER(_ptr)]),
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
    """The head of ``struct _SUNNonlinearSolverContent_Newton`` (sunnonlinsol_newton.h): the
    four functions CVODE attaches to its Newton solver. Only these four: they lead the
    struct in every SUNDIALS 6 and 7 release, while the members after them moved (SUNDIALS
    7.9 has more), so ``ctest_data`` is never read from here: CVODE sets it to its own
    memory block (cvode_nls.c, ``SUNNonlinSolSetConvTestFn(NLS, cvNlsConvTest, cvode_mem)``)."""

    _fields_ = [("Sys", _ptr), ("LSetup", _ptr), ("LSolve", _ptr), ("CTest", _ptr)]


def newton_content(nls: int) -> NewtonContent:
    """The content of a SUNNonlinSol_Newton object (its first member is the content
    pointer: ``struct _generic_SUNNonlinearSolver { void *content; ... }``)."""
    content = ctypes.cast(nls, ctypes.POINTER(_ptr))[0]
    return ctypes.cast(content, ctypes.POINTER(NewtonContent))[0]


#: Functions of one major only: name -> (restype, argtypes).
_MAJOR_SIGNATURES = {
    6: {
        "SUNContext_Create": (_int, [_ptr, ctypes.POINTER(_ptr)]),  # (void *comm, SUNContext *)
        "CVodeSetErrHandlerFn": (_int, [_ptr, CVErrHandlerFn, _ptr]),
    },
    7: {
        "SUNContext_Create": (_int, [_int, ctypes.POINTER(_ptr)]),  # (SUNComm comm, SUNContext *)
        "SUNContext_ClearErrHandlers": (_int, [_ptr]),
        "SUNContext_PushErrHandler": (_int, [_ptr, SUNErrHandlerFn, _ptr]),
    },
}

#: The sonames tried after find_library, newest first.
_SONAMES = ("libsundials_cvode.so.7", "libsundials_cvode.so.6", "libsundials_cvode.so")


def wheel_library() -> str | None:
    """The CVODE library file of the installed scikit-sundae wheel
    (``site-packages/scikit_sundae.libs/libsundials_cvode-<hash>.so.<version>``), found
    without importing the package; ``None`` when it is not installed."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("sksundae")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).resolve().parent.parent / "scikit_sundae.libs"
    found = sorted(folder.glob("libsundials_cvode-*.so*")) + sorted(folder.glob("libsundials_cvode*.dylib"))
    return str(found[0]) if found else None


def _candidates() -> list[tuple[str, str]]:
    """(library, where it came from), in the order they are tried, each once."""
    names: list[tuple[str, str]] = []
    explicit = os.environ.get("ARAGOG_SUNDIALS_CVODE")
    if explicit:
        names.append((explicit, "ARAGOG_SUNDIALS_CVODE"))
    found = ctypes.util.find_library("sundials_cvode")
    if found:
        names.append((found, "system"))
    names += [(name, "system") for name in _SONAMES]
    wheel = wheel_library()
    if wheel:
        names.append((wheel, "scikit-sundae wheel"))
    return list(dict.fromkeys(names))


def _version(cdll: ctypes.CDLL) -> tuple[int, int, int, str]:
    """(major, minor, patch, label) from ``SUNDIALSGetVersionNumber`` (SUNDIALS >= 3)."""
    fn = cdll.SUNDIALSGetVersionNumber
    fn.restype = _int
    fn.argtypes = [ctypes.POINTER(_int)] * 3 + [ctypes.c_char_p, _int]
    major, minor, patch = _int(), _int(), _int()
    label = ctypes.create_string_buffer(32)
    if fn(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch), label, 32) != 0:
        raise AttributeError("SUNDIALSGetVersionNumber failed")
    return major.value, minor.value, patch.value, label.value.decode(errors="replace")


def _index_type(cdll: ctypes.CDLL, create_context) -> type:
    """ctypes type of the library's ``sunindextype``: the first two members of a band
    matrix's content are its row and column counts (``sunindextype M, N``), so a 5 x 5
    matrix reads 5 as one int64 only when the indices are 64-bit (as 5 + 5 * 2**32
    otherwise). Small arguments pass unchanged either way (x86-64 and arm64 pass them in
    full-width registers)."""
    ctx = _ptr()
    if create_context(ctypes.byref(ctx)) != 0:
        raise OSError("SUNContext_Create failed")
    band = cdll.SUNBandMatrix
    band.restype, band.argtypes = _ptr, [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _ptr]
    destroy = cdll.SUNMatDestroy
    destroy.restype, destroy.argtypes = None, [_ptr]
    free = cdll.SUNContext_Free
    free.restype, free.argtypes = _int, [ctypes.POINTER(_ptr)]
    A = band(5, 1, 1, ctx)
    try:
        if not A:
            raise OSError("SUNBandMatrix failed")
        content = ctypes.cast(A, ctypes.POINTER(_ptr))[0]
        first = ctypes.cast(content, ctypes.POINTER(ctypes.c_int64))[0]
    finally:
        if A:
            destroy(A)
        free(ctypes.byref(ctx))
    if first == 5:
        return ctypes.c_int64
    if first == 5 + (5 << 32):
        return ctypes.c_int32
    raise OSError(f"cannot tell the index type of this SUNDIALS build (read {first})")


def _loaded_file(name: str) -> str:
    """The file a loaded CVODE library came from (Linux: /proc/self/maps, where a soname
    such as ``libsundials_cvode.so.6`` becomes its real path); ``name`` elsewhere."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith("libsundials_cvode"):
                    return parts[5].strip()
    except OSError:
        pass
    return name


#: Functions of newer SUNDIALS 6 releases only: an attribute ``None`` where the library lacks
#: them (``CVodeSetEtaMax`` came with SUNDIALS 6.2).
_OPTIONAL_SIGNATURES = {
    "CVodeSetEtaMax": (_int, [_ptr, _real]),
}


class _Library:
    """The CVODE shared library with typed functions as attributes; ``version``
    (major, minor, patch, label), ``index_bits``, ``path`` and ``source`` (where it was
    found: "ARAGOG_SUNDIALS_CVODE", "system" or "scikit-sundae wheel")."""

    def __init__(self, cdll: ctypes.CDLL, path: str, source: str = "system"):
        self.source = source
        self.path = _loaded_file(path)
        self.version = _version(cdll)
        major = self.version[0]
        if major not in _MAJOR_SIGNATURES:
            raise AttributeError(f"SUNDIALS {'.'.join(map(str, self.version[:3]))} is not supported "
                                 f"(supported: {', '.join(f'{m}.x' for m in _MAJOR_SIGNATURES)})")
        signatures = dict(_MAJOR_SIGNATURES[major])
        create = getattr(cdll, "SUNContext_Create")  # AttributeError: not a CVODE library
        create.restype, create.argtypes = signatures["SUNContext_Create"]
        comm = None if major == 6 else 0  # no communicator: NULL (6), SUN_COMM_NULL (7)
        index = _index_type(cdll, lambda out: create(comm, out))
        self.index_bits = 8 * ctypes.sizeof(index)
        self._comm = comm
        for name, (restype, argtypes) in {**_SIGNATURES, **signatures}.items():
            fn = getattr(cdll, name)  # AttributeError: not a CVODE library
            fn.restype = index if restype is _index else restype
            fn.argtypes = [index if a is _index else a for a in argtypes]
            setattr(self, name, fn)
        for name, (restype, argtypes) in _OPTIONAL_SIGNATURES.items():  # None where the library has none
            fn = getattr(cdll, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)

    @property
    def major(self) -> int:
        return self.version[0]

    def create_context(self, out) -> int:
        """``SUNContext_Create`` without a communicator into ``out`` (a ``byref`` of a
        ``c_void_p``); 0 on success."""
        return self.SUNContext_Create(self._comm, out)

    def set_error_handler(self, ctx, mem, handler):
        """Route CVODE's error messages to ``handler(error_code, function, msg)`` (bytes or
        None for the texts) instead of standard error. Returns (flag, callback): keep the
        callback referenced while CVODE may call it."""
        if self.major == 6:
            def eh(code, _module, function, msg, _data):
                handler(code, function, msg)

            cb = CVErrHandlerFn(eh)
            return self.CVodeSetErrHandlerFn(mem, cb, None), cb

        def eh7(_line, function, _file, msg, code, _data, _ctx):
            handler(code, function, msg)

        cb = SUNErrHandlerFn(eh7)
        flag = self.SUNContext_ClearErrHandlers(ctx)  # SUNDIALS 7's default prints to stderr
        return flag or self.SUNContext_PushErrHandler(ctx, cb, None), cb

    def describe(self) -> str:
        """e.g. ``SUNDIALS 7.9.0 (32-bit indices), /path/libsundials_cvode.so.7 [system]``."""
        v = ".".join(map(str, self.version[:3])) + (f"-{self.version[3]}" if self.version[3] else "")
        return f"SUNDIALS {v} ({self.index_bits}-bit indices), {self.path} [{self.source}]"


@functools.lru_cache(maxsize=1)
def load_library() -> _Library:
    """The CVODE library (loaded once, the first of :func:`_candidates` that loads). Raises
    ``OSError`` naming what was tried when none can be loaded, and
    :class:`aragog.errors.MissingDependencyError` (an ``OSError`` too) when the library
    ``ARAGOG_SUNDIALS_CVODE`` names cannot be loaded: a library the user named is never
    replaced by another one."""
    errors = []
    for name, source in _candidates():
        try:
            return _Library(ctypes.CDLL(name), name, source)
        except (OSError, AttributeError) as exc:
            if source == "ARAGOG_SUNDIALS_CVODE":
                from aragog.errors import MissingDependencyError

                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise MissingDependencyError(
                    f"ARAGOG_SUNDIALS_CVODE={name} cannot be loaded ({reason}): point it at a SUNDIALS 6 "
                    "or 7 libsundials_cvode shared library, or unset it to use the system's or the "
                    "scikit-sundae wheel's") from None
            errors.append(f"{name}: {exc}")
    raise OSError("no SUNDIALS 6 or 7 CVODE library could be loaded (" + "; ".join(errors) + "); "
                  "pip install scikit-sundae provides one")


def library_available() -> bool:
    """Whether :func:`load_library` succeeds."""
    try:
        load_library()
    except OSError:
        return False
    return True


def library_info() -> dict:
    """What :func:`load_library` found: ``{"available": bool, "version", "index_bits",
    "path", "source"}`` or ``{"available": False, "error": str}``."""
    try:
        lib = load_library()
    except OSError as exc:
        return {"available": False, "error": str(exc)}
    return {"available": True, "version": ".".join(map(str, lib.version[:3])), "index_bits": lib.index_bits,
            "path": lib.path, "source": lib.source}
