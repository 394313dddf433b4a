"""Integrator back ends behind one interface (in the style of ``scipy.integrate.solve_ivp``).

``integrate(problem, t_eval, y0, method="cvode", rtol=..., atol=..., max_steps=...)`` runs
SUNDIALS CVODE through a ctypes binding of its C library (``method="cvode"``) or scipy's BDF / Radau steppers
(``"scipy-bdf"``, ``"scipy-radau"``) and returns an :class:`IntegrationResult` with the same
fields whichever ran. When CVODE is asked for but no library can be loaded, the
integration falls back to scipy BDF *loudly* (an :class:`IntegratorFallbackWarning` and a
logging warning, both naming the fallback) and the result records
``integrator="scipy-bdf"``; when the library ``ARAGOG_SUNDIALS_CVODE`` names cannot be
loaded, it stops with :class:`aragog.errors.MissingDependencyError` (no replacement for
what the user named).

Failures never escape as exceptions: a callback that raises or returns non-finite values,
an exhausted step budget, a rejected tolerance all become ``status < 0`` and a message.
Only caller mistakes (wrong ``y0`` length, unsorted ``t_eval``, unknown method) raise
``ValueError``.

The implementation modules are private (``_common``, ``_cvode``, ``_cvode_warm``,
``_sundials``, ``_scipy_ivp``; the band storage is :mod:`aragog.programs._band`, shared
with the Jacobian programs); their public names are re-exported here:
import them from ``aragog.solver.backends``. ``NONLIN_CONV_COEF``, ``NEWTON_CHECK`` (CVODE) and
``SPARSE_THRESHOLD`` (scipy) import their back end on first use, so that importing this
package stays light.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from aragog._lazy import lazy_names
from aragog.integrator_names import INTEGRATORS
from aragog.programs._band import BandConverter, band_indices, band_to_dense, dense_to_band
from aragog.solver.backends._common import (
    Backend,
    CallbackFailure,
    CallbackGuard,
    IntegrationResult,
    OdeProblem,
    OdeProblemLike,
)
from aragog.solver.backends._cvode_warm import WarmStart

__all__ = [
    "integrate",
    "cvode_available",
    "compiled_newton_runs",
    "refuse_a_named_library",
    "cvode_library_info",
    "IntegrationResult",
    "OdeProblem",
    "OdeProblemLike",
    "Backend",
    "IntegratorFallbackWarning",
    "BACKENDS",
    "METHODS",
    "CallbackGuard",
    "CallbackFailure",
    "WarmStart",
    "NONLIN_CONV_COEF",
    "NEWTON_CHECK",
    "SPARSE_THRESHOLD",
    "BandConverter",
    "band_indices",
    "band_to_dense",
    "dense_to_band",
]

# public names of the back ends that import on first use (scipy, the CVODE binding)
_LAZY = {
    "NONLIN_CONV_COEF": "aragog.solver.backends._cvode",
    "NEWTON_CHECK": "aragog.solver.backends._cvode",
    "SPARSE_THRESHOLD": "aragog.solver.backends._scipy_ivp",
}

__getattr__ = lazy_names(__name__, _LAZY, globals())[0]  # (dir() lists the eager names only)

logger = logging.getLogger("aragog.solver.backends")


def _cvode(problem, t_eval, y0, *, rtol, atol, max_steps, event, linsolver, first_step, max_step,
           nonlin_conv_coef, newton_check, warm, trace, newton, max_step_growth) -> IntegrationResult:
    from aragog.solver.backends._cvode import integrate_cvode

    extra = {} if nonlin_conv_coef is None else {"nonlin_conv_coef": float(nonlin_conv_coef)}
    if max_step_growth is not None:
        extra["max_step_growth"] = float(max_step_growth)
    return integrate_cvode(
        problem, t_eval, y0, rtol=rtol, atol=atol, max_steps=max_steps, event=event,
        linsolver=linsolver, first_step=first_step, max_step=max_step, warm=warm,
        verify_newton=newton_check, trace=trace, newton=newton, **extra,
    )


def _scipy(name: str) -> Backend:
    def run(problem, t_eval, y0, *, rtol, atol, max_steps, event, linsolver, first_step, max_step,
            nonlin_conv_coef, newton_check, warm, trace, newton, max_step_growth) -> IntegrationResult:
        # scipy imports on first use, so that importing this package stays light
        from aragog.solver.backends._scipy_ivp import integrate_scipy

        return integrate_scipy(
            problem, t_eval, y0, method=name, rtol=rtol, atol=atol, max_steps=max_steps,
            event=event, first_step=first_step, max_step=max_step, trace=trace,
        )

    run.__name__ = run.__qualname__ = "integrate_" + name.replace("-", "_")
    return run


#: back end name -> the back end (a :class:`Backend`): the one registry. Its names and
#: their order are :data:`aragog.integrator_names.INTEGRATORS` (NumPy-free, so that the
#: configuration's ``solver.method`` choices come from there without importing the solver).
BACKENDS: dict[str, Backend] = {
    "cvode": _cvode,
    "scipy-bdf": _scipy("scipy-bdf"),
    "scipy-radau": _scipy("scipy-radau"),
}
if list(BACKENDS) != list(INTEGRATORS):  # pragma: no cover - a back end added to one table only
    raise ImportError(
        f"aragog.solver.backends.BACKENDS {list(BACKENDS)} and "
        f"aragog.integrator_names.INTEGRATORS {list(INTEGRATORS)} must name the same back ends"
    )

#: accepted ``method`` names -> canonical integrator name (each back end's name, then its
#: short name from :data:`aragog.integrator_names.INTEGRATORS`)
METHODS: dict[str, str] = {}
for _name, _short in INTEGRATORS.items():
    METHODS[_name] = _name
    METHODS[_short] = _name
del _name, _short


class IntegratorFallbackWarning(RuntimeWarning):
    """CVODE was requested but is unavailable; another integrator ran instead."""


def cvode_available() -> bool:
    """Whether the SUNDIALS CVODE library loads."""
    from aragog.solver.backends._sundials import library_available

    return library_available()


def refuse_a_named_library() -> None:
    """Raise :class:`aragog.errors.MissingDependencyError` when CVODE is missing because the
    library ARAGOG_SUNDIALS_CVODE names does not load: what the user named is replaced by
    neither another library nor another integrator. ``integrate`` calls it before it would
    fall back to another integrator, and :meth:`aragog.EntropySolver.reset` before it builds
    the programs of a CVODE solve, so that a run stops before anything compiles."""
    from aragog.errors import MissingDependencyError
    from aragog.solver.backends._sundials import load_library

    try:
        load_library()
    except MissingDependencyError:
        raise
    except OSError:
        pass


def compiled_newton_runs() -> bool:
    """Whether CVODE's Newton solve of a step can run as one compiled call here: the CVODE
    library loads and lets a nonlinear solver of the package's own be attached
    (``integrate(..., newton="compiled")``; docs/solver.md, "One compiled call per step")."""
    from aragog.solver.backends._cvode_newton import compiled_newton_available
    from aragog.solver.backends._sundials import load_library

    try:
        return compiled_newton_available(load_library())
    except OSError:
        return False


def cvode_library_info() -> dict:
    """The CVODE library in use (docs/solver.md, "The CVODE library"): ``{"available": True,
    "version", "index_bits", "path", "source"}``, or ``{"available": False, "error"}``."""
    from aragog.solver.backends._sundials import library_info

    return library_info()


def integrate(
    problem,
    t_eval,
    y0,
    *,
    method: str = "cvode",
    rtol: float = 1e-6,
    atol=1e-9,
    max_steps: int = 5000,
    event=None,
    linsolver: str = "band",
    first_step: float | None = None,
    max_step: float | None = None,
    nonlin_conv_coef: float | None = None,
    newton_check: bool | None = None,
    warm=None,
    trace: bool = False,
    newton: str = "auto",
    max_step_growth: float | None = None,
) -> IntegrationResult:
    """Integrate ``dy/dt = f(t, y)`` from ``t_eval[0]`` and report at every ``t_eval``.

    Args:
        problem: an :class:`OdeProblemLike` (``rhs_into``, ``jac_into`` [band storage by
            default, or dense when ``problem.jac_layout == "dense"``, or ``None``], ``n``,
            ``ml``, ``mu``), e.g. ``JitPair.bind(args)``.
        t_eval: output times, strictly monotonic, at least two; ``t_eval[0]`` is the start
            time (and is the first output).
        y0: initial state ``(n,)``.
        method: ``"cvode"`` (default), ``"scipy-bdf"`` (alias ``"bdf"``) or
            ``"scipy-radau"`` (``"radau"``).
        rtol: relative tolerance (scalar).
        atol: absolute tolerance, scalar or ``(n,)``.
        max_steps: most internal steps between two consecutive output times (CVODE's
            ``mxstep``; 0 means CVODE's default 500, negative means no limit). The scipy
            back ends count steps the same way.
        event: ``None`` or ``g(t, y) -> float``; the integration stops (status 1) at the first
            sign change of ``g`` (either direction; a zero at the start is not an event).
            An event function that depends on the state alone (not on where the
            integration started) may say so with an attribute ``state_only``, a hashable
            that is equal for equal functions: a warm-started CVODE then continues its
            history across calls with the same function (its root-finding state stays
            valid); any other event restarts it.
        linsolver: CVODE only: ``"band"`` (default) or ``"dense"``.
        first_step, max_step: optional initial / maximum step size.
        nonlin_conv_coef: CVODE only: its nonlinear convergence coefficient (``None``:
            :data:`NONLIN_CONV_COEF`, 1e-3; CVODE's own
            default, 0.1, returns wrong states on this package's problems).
        newton_check: CVODE only: check every accepted Newton iterate by one more residual
            and correction (one RHS and one band solve per step; docs/solver.md,
            "Integrator accuracy"). ``None``: :data:`NEWTON_CHECK`.
        warm: CVODE only: a :class:`WarmStart` that keeps the
            CVODE memory from one call to the next, so that a call continuing the last
            one (same start time as its end, same state) can continue CVODE's step size,
            order and Jacobian (``info["warm_start"]`` says how it started; docs/solver.md,
            "Warm start"). ``None``: every call starts afresh. The scipy back ends ignore
            it (each call starts at order 1).
        trace: also return the integrator's step nodes, ``result.trace`` = (t, y) at the
            start and at the end of every accepted step (CVODE then steps with
            ``CV_ONE_STEP``: same steps, same outputs).
        newton: CVODE only: how each step's corrector equation is solved: ``"compiled"``
            in one call of the problem's ``corrector`` program per step attempt,
            ``"callbacks"`` by SUNDIALS' Newton solver calling ``rhs_into`` / ``jac_into``,
            ``"auto"`` (default) compiled where the problem has one (docs/solver.md, "One
            compiled call per step"). The scipy back ends ignore it.
        max_step_growth: CVODE only: the largest factor by which a step may exceed the one
            before (``CVodeSetEtaMax``, SUNDIALS >= 6.2; ``None``: CVODE's own, 10). The
            scipy back ends ignore it.

    Returns:
        :class:`IntegrationResult`; ``integrator`` names what actually ran.

    Raises:
        ValueError: unknown ``method``/``linsolver``, ``y0`` not of length ``problem.n``,
            ``t_eval`` not 1-D, shorter than 2, non-finite or not strictly monotonic.
    """
    try:
        name = METHODS[method.lower()]
    except (KeyError, AttributeError):
        raise ValueError(
            f"integrate: unknown method {method!r} (choose from {', '.join(METHODS)})"
        ) from None
    if linsolver not in ("band", "dense"):
        raise ValueError(f"integrate: linsolver must be 'band' or 'dense', got {linsolver!r}")
    t_eval = np.asarray(t_eval, dtype=np.float64)
    if t_eval.ndim != 1 or t_eval.size < 2:
        raise ValueError(f"integrate: t_eval must be 1-D with at least 2 times, got shape {t_eval.shape}")
    if not np.all(np.isfinite(t_eval)):
        raise ValueError("integrate: t_eval contains non-finite times")
    steps = np.diff(t_eval)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        raise ValueError("integrate: t_eval must be strictly increasing (or strictly decreasing)")
    y0 = np.array(y0, dtype=np.float64)
    if y0.shape != (int(problem.n),):
        raise ValueError(f"integrate: y0 has shape {y0.shape}, the problem has n = {problem.n}")

    if nonlin_conv_coef is not None and not 0.0 < float(nonlin_conv_coef) < 1.0:
        raise ValueError(f"integrate: nonlin_conv_coef must be in (0, 1), got {nonlin_conv_coef!r}")
    if max_step_growth is not None and not float(max_step_growth) > 1.0:
        raise ValueError(f"integrate: max_step_growth must be > 1, got {max_step_growth!r}")
    if name == "cvode" and not cvode_available():
        refuse_a_named_library()
        fallback = "scipy-bdf"
        text = (
            "the SUNDIALS CVODE library cannot be loaded; integrating with the fallback "
            f"integrator {fallback} (scipy.integrate.BDF) instead of cvode"
        )
        warnings.warn(text, IntegratorFallbackWarning, stacklevel=2)
        logger.warning(text)
        name = fallback

    return BACKENDS[name](
        problem, t_eval, y0, rtol=rtol, atol=atol, max_steps=max_steps, event=event,
        linsolver=linsolver, first_step=first_step, max_step=max_step,
        nonlin_conv_coef=nonlin_conv_coef, newton_check=newton_check, warm=warm, trace=bool(trace),
        newton=newton, max_step_growth=max_step_growth,
    )
