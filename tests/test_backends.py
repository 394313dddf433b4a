"""Integrator back ends: CVODE (ctypes binding of SUNDIALS) and scipy BDF/Radau behind one interface."""

from __future__ import annotations

import logging
import sys

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from aragog.solver import backends
from aragog.solver.backends import (
    IntegrationResult,
    IntegratorFallbackWarning,
    OdeProblem,
    cvode_available,
    integrate,
)
from aragog.solver.backends import dense_to_band
from aragog.solver import JitPair

needs_cvode = pytest.mark.skipif(not cvode_available(), reason="SUNDIALS CVODE library not loadable")

BACKENDS = [
    pytest.param("cvode", marks=needs_cvode),
    "scipy-bdf",
    "scipy-radau",
]


def decay_problem(k=2.0, n=3):
    """dy/dt = -k y (diagonal: ml = mu = 0), band Jacobian."""

    def rhs_into(t, y, out):
        out[:] = -k * y

    def jac_into(t, y, out):
        out[0, :] = -k

    return OdeProblem(rhs_into, jac_into, n, 0, 0)


def diffusion_matrix(n, d=50.0):
    """Stiff tridiagonal A (1-D diffusion, Dirichlet): eigenvalues in (-4d, 0)."""
    return d * (np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1))


# --------------------------------------------------------------------------- accuracy
@pytest.mark.parametrize("method", BACKENDS)
def test_exponential_decay(method):
    k = 2.0
    t_eval = np.linspace(0.0, 3.0, 7)
    res = integrate(decay_problem(k), t_eval, np.ones(3), method=method, rtol=1e-9, atol=1e-12)
    assert isinstance(res, IntegrationResult)
    assert res.status == 0 and res.reason == "success", res.message
    assert res.integrator == method
    np.testing.assert_array_equal(res.t, t_eval)
    # global error of an adaptive method is a small multiple of rtol: 1e-9 -> 1e-7 bound
    np.testing.assert_allclose(res.y[:, 0], np.exp(-k * t_eval), rtol=1e-7, atol=1e-12)
    assert res.nfev > 0 and res.njev > 0 and res.nsteps > 0
    assert res.wall_seconds > 0 and set(res.callback_seconds) >= {"rhs", "jac"}
    assert res.t_event is None and res.success


@pytest.mark.parametrize(
    "method, linsolver",
    [
        pytest.param("cvode", "band", marks=needs_cvode),
        pytest.param("cvode", "dense", marks=needs_cvode),  # band Jacobian expanded to dense
        ("scipy-bdf", "band"),
        ("scipy-radau", "band"),
    ],
)
def test_stiff_linear_banded_system(method, linsolver):
    """y' = A y with a stiff tridiagonal A (stiffness ratio ~1e3): y(t) = expm(A t) y0."""
    n = 20
    A = diffusion_matrix(n)
    band = dense_to_band(A, 1, 1)

    def rhs_into(t, y, out):
        out[:] = A @ y

    def jac_into(t, y, out):
        out[...] = band

    y0 = np.sin(np.linspace(0, 3 * np.pi, n)) + 1.0
    t_eval = np.array([0.0, 0.01, 0.1, 1.0])
    res = integrate(
        OdeProblem(rhs_into, jac_into, n, 1, 1), t_eval, y0, method=method,
        rtol=1e-8, atol=1e-10, linsolver=linsolver,
    )
    assert res.status == 0, res.message
    exact = np.array([scipy.linalg.expm(A * t) @ y0 for t in t_eval])
    # rtol 1e-8 per step; accumulated global error stays below 1e-6 of the state scale (~1)
    np.testing.assert_allclose(res.y, exact, atol=1e-6)


def _robertson(pair_mode):
    """Robertson's stiff kinetics as a JitPair (dense 3x3 band: ml = mu = 2)."""

    def rhs(t, y, args):
        k1, k2, k3 = args["k"]
        return jnp.stack([
            -k1 * y[0] + k3 * y[1] * y[2],
            k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
            k2 * y[1] ** 2,
        ])

    args = {"k": jnp.array([0.04, 3e7, 1e4])}
    pair = JitPair(rhs, 3, args, ml=2, mu=2, jacobian=pair_mode)
    return pair.bind(args)


@pytest.mark.usefixtures("x64")  # the test's own JAX model; a BoundPair's callbacks run in the caller's x64 mode, as the solver's do
@pytest.mark.parametrize("pair_mode", ["banded", "dense"])
def test_backends_agree_on_robertson(pair_mode):
    problem = _robertson(pair_mode)
    t_eval = np.array([0.0, 1e-2, 1.0, 1e2, 1e4])
    y0 = np.array([1.0, 0.0, 0.0])
    atol = np.array([1e-10, 1e-14, 1e-10])
    results = {}
    methods = ["scipy-bdf", "scipy-radau"] + (["cvode"] if cvode_available() else [])
    for method in methods:
        res = integrate(problem, t_eval, y0, method=method, rtol=1e-8, atol=atol)
        assert res.status == 0, res.message
        # mass conservation is exact for the ODE; the integrators keep it to ~rtol
        np.testing.assert_allclose(res.y.sum(axis=1), 1.0, atol=1e-7)
        results[method] = res.y
    ref = results["scipy-radau"]
    for method, y in results.items():
        # independent integrators at rtol 1e-8 agree to ~1e-6 relative (scaled by atol)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-11, err_msg=method)


@pytest.mark.parametrize("method", BACKENDS)
def test_backward_integration(method):
    t_eval = np.array([1.0, 0.5, 0.0])
    res = integrate(decay_problem(1.0, 2), t_eval, np.full(2, np.exp(-1.0)), method=method,
                    rtol=1e-9, atol=1e-12)
    assert res.status == 0, res.message
    np.testing.assert_allclose(res.y[:, 0], np.exp(-t_eval), rtol=1e-7)


# --------------------------------------------------------------------------- events
@pytest.mark.parametrize("method", BACKENDS)
def test_event_stops_integration(method):
    k = 2.0
    t_eval = np.linspace(0.0, 3.0, 7)
    res = integrate(decay_problem(k), t_eval, np.ones(3), method=method, rtol=1e-10, atol=1e-12,
                    event=lambda t, y: y[0] - 0.5)
    assert res.status == 1 and res.reason == "event", res.message
    # crossing of exp(-k t) = 0.5 at ln 2 / k; located to the solution's accuracy (~1e-9)
    assert res.t_event == pytest.approx(np.log(2.0) / k, abs=1e-7)
    assert res.y_event[0] == pytest.approx(0.5, abs=1e-7)
    assert res.t_final == res.t_event
    np.testing.assert_array_equal(res.t, t_eval[t_eval <= res.t_event])


@pytest.mark.parametrize("method", BACKENDS)
def test_event_zero_at_start_is_ignored(method):
    res = integrate(decay_problem(1.0), [0.0, 1.0], np.ones(3), method=method,
                    rtol=1e-8, atol=1e-10, event=lambda t, y: y[0] - 1.0)
    assert res.status == 0, res.message


# --------------------------------------------------------------------------- step trace
@pytest.mark.parametrize("method", BACKENDS)
def test_trace_returns_the_steps_and_changes_nothing(method):
    """``trace=True``: the same steps and, bitwise, the same outputs (CVODE steps with
    CV_ONE_STEP and interpolates at the outputs as CV_NORMAL does; its first step size
    depends on the first output time, which both pass); the trace starts at t_0, has one
    node per step, increases strictly, ends at the end time and lies on the solution."""
    k = 2.0
    t_eval = np.linspace(0.0, 3.0, 7)
    plain = integrate(decay_problem(k), t_eval, np.ones(3), method=method, rtol=1e-9, atol=1e-12)
    traced = integrate(decay_problem(k), t_eval, np.ones(3), method=method, rtol=1e-9, atol=1e-12, trace=True)
    assert plain.trace is None and traced.status == 0, traced.message
    np.testing.assert_array_equal(traced.y, plain.y)
    assert traced.nsteps == plain.nsteps
    t, y = traced.trace
    assert t.shape == (traced.nsteps + 1,) and y.shape == (t.size, 3)
    assert t[0] == 0.0 and t[-1] == 3.0 and np.all(np.diff(t) > 0)
    np.testing.assert_allclose(y[:, 0], np.exp(-k * t), rtol=1e-7, atol=1e-12)


@needs_cvode
def test_max_step_growth_bounds_every_step_ratio():
    """``max_step_growth`` g (CVodeSetEtaMax): after CVODE's first ten steps (where its own
    first-step rules apply), no accepted step exceeds g times the one before; the step sizes
    are read from the trace, so the bound is checked on every step, not on a summary. With
    CVODE's own 10 the decay's steps grow faster than 1.5 somewhere (so the check can fail),
    and both runs reach the solution to their tolerance. A value <= 1 is refused."""
    k = 2.0
    t_eval = np.array([0.0, 20.0])
    runs = {}
    for growth in (None, 1.5):
        res = integrate(decay_problem(k), t_eval, np.ones(3), method="cvode", rtol=1e-6, atol=1e-12, trace=True,
                        max_step_growth=growth)
        assert res.status == 0, res.message
        np.testing.assert_allclose(res.y[-1], np.exp(-k * 20.0), rtol=1e-4, atol=1e-11)
        h = np.diff(res.trace[0])
        runs[growth] = h[11:-1] / h[10:-2]  # the last step is cut to reach the stop time
    assert runs[None].max() > 1.5
    assert runs[1.5].max() <= 1.5 * (1.0 + 1e-12)
    with pytest.raises(ValueError, match="max_step_growth must be > 1"):
        integrate(decay_problem(k), t_eval, np.ones(3), method="cvode", max_step_growth=1.0)


@pytest.mark.parametrize("method", BACKENDS)
def test_trace_keeps_max_steps_and_events(method):
    """The trace ends where the integration ended: at the event, or at the step where
    ``max_steps`` (steps between two outputs, as CV_NORMAL counts them) ran out."""
    capped = integrate(decay_problem(), [0.0, 10.0], np.ones(3), method=method,
                       rtol=1e-10, atol=1e-12, max_steps=5, trace=True)
    assert capped.status < 0 and capped.reason == "max_steps", capped.message
    assert "too many steps (max_steps = 5)" in capped.message
    assert capped.trace[0].size == 6 and capped.trace[0][-1] == pytest.approx(capped.t_failure)
    ev = integrate(decay_problem(2.0), np.linspace(0.0, 3.0, 7), np.ones(3), method=method,
                   rtol=1e-10, atol=1e-12, event=lambda t, y: y[0] - 0.5, trace=True)
    assert ev.status == 1
    assert ev.trace[0][-1] == ev.t_event and np.array_equal(ev.trace[1][-1], ev.y_event)
    assert np.all(ev.trace[0][:-1] < ev.t_event)


# --------------------------------------------------------------------------- failures
def _problem(rhs, jac=None, n=3):
    return OdeProblem.from_functions(rhs, jac, n, 0, 0, jac_layout="band")


def _boom(t, y):
    raise ValueError("boom")


@pytest.mark.parametrize("method", BACKENDS)
def test_max_steps_too_small(method):
    res = integrate(decay_problem(), [0.0, 10.0], np.ones(3), method=method,
                    rtol=1e-10, atol=1e-12, max_steps=5)
    assert res.status < 0 and res.reason == "max_steps"
    assert "too many steps (max_steps = 5)" in res.message
    assert len(res.t) == 1 and res.t_failure is not None and 0.0 < res.t_failure < 10.0


@pytest.mark.parametrize("method", BACKENDS)
def test_rhs_always_raising(method):
    res = integrate(_problem(_boom), [0.0, 1.0], np.ones(3), method=method)
    assert res.status < 0 and res.reason == "rhs_failure"
    assert "ValueError: boom" in res.message
    assert res.n_callback_errors >= 1


@pytest.mark.parametrize("method", BACKENDS)
def test_rhs_returning_nan(method):
    res = integrate(_problem(lambda t, y: np.full(3, np.nan)), [0.0, 1.0], np.ones(3), method=method)
    assert res.status < 0 and res.reason == "rhs_failure"
    assert "non-finite" in res.message


@needs_cvode
def test_cvode_rhs_failing_after_a_while_is_repeated_recoverable():
    calls = {"n": 0}

    def rhs(t, y):
        calls["n"] += 1
        if calls["n"] > 30:
            raise RuntimeError("gave up")
        return -y

    res = integrate(_problem(rhs), [0.0, 1.0], np.ones(3), method="cvode")
    assert res.status == -10  # CV_REPTD_RHSFUNC_ERR
    assert "repeated recoverable errors" in res.message and "RuntimeError: gave up" in res.message
    assert len(res.t) == 1 and res.t_failure > 0.0


@needs_cvode
def test_cvode_recovers_from_occasional_failures():
    """A recoverable failure (raise or NaN) makes CVODE retry with a smaller step.

    About one call in ten fails. (Every 7th and 11th call, as this test had before, fails
    a quarter of the calls: with the tight nonlinear convergence coefficient each step
    takes two or three calls, so most steps then failed and the step size collapsed.)"""
    state = {"n": 0}

    def rhs(t, y):
        state["n"] += 1
        if state["n"] % 17 == 0:
            raise ValueError("flaky")
        if state["n"] % 23 == 0:
            return np.full(3, np.nan)
        return -y

    res = integrate(_problem(rhs, lambda t, y: -np.ones((1, 3))), np.linspace(0, 1, 3), np.ones(3),
                    method="cvode", rtol=1e-8, atol=1e-10)
    assert res.status == 0, res.message
    assert res.n_callback_errors > 0
    np.testing.assert_allclose(res.y[-1], np.exp(-1.0), rtol=1e-6)


@pytest.mark.parametrize("method", BACKENDS)
def test_jacobian_raising(method):
    res = integrate(_problem(lambda t, y: -y, _boom), [0.0, 1.0], np.ones(3), method=method)
    assert res.status < 0, res.message
    assert "ValueError: boom" in res.message


@pytest.mark.parametrize("method", BACKENDS)
def test_event_raising(method):
    res = integrate(decay_problem(), [0.0, 1.0], np.ones(3), method=method, event=_boom)
    assert res.status < 0 and res.reason == "event_failure"
    assert "boom" in res.message


@needs_cvode
def test_cvode_rejects_zero_tolerances():
    res = integrate(decay_problem(), [0.0, 1.0], np.ones(3), method="cvode", rtol=0.0, atol=0.0)
    assert res.status == -22 and res.reason == "illegal_input"
    assert "rejected" in res.message and "ewt" in res.message


@needs_cvode
def test_cvode_too_much_accuracy():
    res = integrate(decay_problem(), [0.0, 1.0], np.ones(3), method="cvode", rtol=1e-30, atol=1e-300)
    assert res.status == -2 and res.reason == "too_much_accuracy"
    assert "too much accuracy" in res.message


@pytest.mark.parametrize("method", BACKENDS)
def test_negative_tolerance_rejected(method):
    res = integrate(decay_problem(), [0.0, 1.0], np.ones(3), method=method, rtol=-1.0, atol=1e-6)
    assert res.status == -22 and res.reason == "illegal_input" and "rejected" in res.message


def test_caller_mistakes_raise():
    p = decay_problem()
    with pytest.raises(ValueError, match="y0"):
        integrate(p, [0.0, 1.0], np.ones(4))
    with pytest.raises(ValueError, match="monotonic|increasing"):
        integrate(p, [0.0, 1.0, 0.5], np.ones(3))
    with pytest.raises(ValueError, match="at least 2"):
        integrate(p, [0.0], np.ones(3))
    with pytest.raises(ValueError, match="unknown method"):
        integrate(p, [0.0, 1.0], np.ones(3), method="rk45")


# --------------------------------------------------------------------------- fallback
def test_fallback_when_cvode_missing(monkeypatch, caplog):
    monkeypatch.setattr(backends, "cvode_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="aragog.solver.backends"):
        with pytest.warns(IntegratorFallbackWarning, match="scipy-bdf"):
            res = integrate(decay_problem(), [0.0, 1.0], np.ones(3), method="cvode",
                            rtol=1e-8, atol=1e-10)
    assert res.integrator == "scipy-bdf" and res.status == 0
    assert any("scipy-bdf" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_cvode_available_false_when_library_missing(monkeypatch):
    # private: load_library's cache and _candidates, patched to a missing library
    from aragog.solver.backends import _sundials as sundials

    sundials.load_library.cache_clear()
    monkeypatch.setattr(sundials, "_candidates", lambda: [("/nonexistent/libsundials_cvode.so", "system")])
    try:
        assert cvode_available() is False
        with pytest.raises(OSError, match="nonexistent"):
            sundials.load_library()
        with pytest.warns(IntegratorFallbackWarning, match="fallback integrator scipy-bdf"):
            res = integrate(decay_problem(), [0.0, 1.0], np.ones(3))
    finally:
        monkeypatch.undo()
        sundials.load_library.cache_clear()
    assert res.integrator == "scipy-bdf"
    assert cvode_available() is True



# --------------------------------------------------------------------------- with a JitPair
@pytest.mark.usefixtures("x64")  # the test's own JAX model; a BoundPair's callbacks run in the caller's x64 mode, as the solver's do
@pytest.mark.parametrize("method", BACKENDS)
def test_bound_jitpair_as_problem(method):
    """A BoundPair is an OdeProblem: stiff diffusion with traced coefficients."""
    n = 16

    def rhs(t, y, args):
        d = args["d"]
        lap = jnp.concatenate([y[1:2] - 2 * y[:1], y[2:] - 2 * y[1:-1] + y[:-2], y[-2:-1] - 2 * y[-1:]])
        return d * lap

    y0 = np.linspace(1.0, 2.0, n)
    pair = JitPair(rhs, n, {"d": 1.0}, ml=1, mu=1)
    for d in (10.0, 50.0):
        res = integrate(pair.bind({"d": d}), [0.0, 0.05, 0.2], y0, method=method, rtol=1e-8, atol=1e-10)
        assert res.status == 0, res.message
        exact = scipy.linalg.expm(diffusion_matrix(n, d) * 0.2) @ y0
        np.testing.assert_allclose(res.y[-1], exact, atol=1e-6)  # rtol 1e-8, state ~1
    assert pair.stats["rhs"]["traces"] == 1 and pair.stats["jac"]["compiles"] == 1
    assert pair.stats["rhs"]["calls"] >= res.nfev


@pytest.mark.parametrize("method", BACKENDS)
def test_large_banded_system_uses_sparse_path(method):
    """n above scipy_ivp.SPARSE_THRESHOLD: scipy gets a sparse Jacobian; same answer."""
    from aragog.solver.backends import SPARSE_THRESHOLD

    n = SPARSE_THRESHOLD + 50
    A = diffusion_matrix(n, d=5.0)
    band = dense_to_band(A, 1, 1)

    def rhs_into(t, y, out):
        out[:] = A @ y

    def jac_into(t, y, out):
        out[...] = band

    y0 = np.cos(np.linspace(0, 2 * np.pi, n))
    res = integrate(OdeProblem(rhs_into, jac_into, n, 1, 1), [0.0, 0.5], y0, method=method,
                    rtol=1e-8, atol=1e-10)
    assert res.status == 0, res.message
    np.testing.assert_allclose(res.y[-1], scipy.linalg.expm(A * 0.5) @ y0, atol=1e-6)
