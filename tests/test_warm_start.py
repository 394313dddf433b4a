"""CVODE warm start across consecutive integrations (backends.WarmStart, solver.warm_start)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from aragog.solver.backends import OdeProblem, cvode_available, integrate

pytestmark = pytest.mark.skipif(not cvode_available(), reason="SUNDIALS CVODE library not loadable")

N = 12
RTOL, ATOL = 1e-8, 1e-10


def heat_problem(flux: float, n: int = N) -> OdeProblem:
    """A stiff 1-D diffusion chain (tridiagonal band Jacobian), slow decay in every cell and
    a boundary flux into the last cell: a coupling loop's problem in miniature (the flux is
    the value that changes between windows)."""
    d = 50.0

    def rhs_into(t, y, out):
        out[:] = -0.1 * y
        out[1:] += d * (y[:-1] - y[1:])
        out[:-1] += d * (y[1:] - y[:-1])
        out[-1] += flux

    def jac_into(t, y, out):  # band storage, ml = mu = 1: out[1 + i - j, j] = J[i, j]
        out[...] = 0.0
        out[1, :] = -0.1 - 2.0 * d
        out[1, 0] += d
        out[1, -1] += d
        out[0, 1:] = d  # J[j-1, j]
        out[2, :-1] = d  # J[j+1, j]

    return OdeProblem(rhs_into, jac_into, n, 1, 1)


def windows(k: int, width: float = 1.0, points: int = 5):
    return [np.linspace(i * width, (i + 1) * width, points) for i in range(k)]


def run_loop(fluxes, warm, y0=None, **kw):
    """Integrate consecutive windows, each from the last end state (a coupling loop)."""
    from aragog.solver.backends import WarmStart

    ws = WarmStart() if warm else None
    y = np.linspace(1.0, 2.0, N) if y0 is None else y0
    results = []
    for t_eval, flux in zip(windows(len(fluxes)), fluxes):
        res = integrate(heat_problem(flux), t_eval, y, rtol=RTOL, atol=ATOL, max_steps=5000, warm=ws, **kw)
        assert res.status == 0, res.message
        results.append(res)
        y = res.y[-1]
    if ws is not None:
        ws.close()
    return results


def reference_loop(fluxes):
    """The same loop at rtol 1e-12, no warm start."""
    y = np.linspace(1.0, 2.0, N)
    for t_eval, flux in zip(windows(len(fluxes)), fluxes):
        y = integrate(heat_problem(flux), t_eval, y, rtol=1e-12, atol=1e-14, max_steps=50000).y[-1]
    return y


def test_unchanged_problem_continues_with_fewer_steps_and_the_same_answer():
    fluxes = [1.0] * 8
    cold, warm = run_loop(fluxes, False), run_loop(fluxes, True)
    assert [r.info["warm_start"] for r in warm] == ["new"] + ["continue"] * 7
    assert all(r.info["rhs_jump"] == 0.0 for r in warm[1:])  # a new problem object: measured
    for c, w in zip(cold[1:], warm[1:]):  # every restart costs at least as much
        assert w.nsteps <= c.nsteps and w.nfev <= c.nfev
    assert sum(r.nfev for r in warm[1:]) < 0.7 * sum(r.nfev for r in cold[1:])
    assert sum(r.njev for r in warm[1:]) < sum(r.njev for r in cold[1:])
    ref = reference_loop(fluxes)
    scale = RTOL * np.abs(ref).max() + ATOL
    for res in (cold[-1], warm[-1]):  # both within a few tolerances of the reference
        assert np.abs(res.y[-1] - ref).max() < 100 * scale
    np.testing.assert_allclose(warm[-1].y[-1], cold[-1].y[-1], rtol=100 * RTOL, atol=100 * ATOL)


def test_small_input_change_continues_and_large_one_restarts_like_a_cold_start():
    from aragog.solver.backends import WarmStart

    ws = WarmStart()
    t1, t2 = windows(2)
    y0 = np.linspace(1.0, 2.0, N)
    first = integrate(heat_problem(1.0), t1, y0, rtol=RTOL, atol=ATOL, warm=ws)
    y1 = first.y[-1]
    # the last rhs call of CVODE was at the end state (the checked Newton test's): the
    # jump test reuses it as the old right-hand side
    run = ws._slot[0]
    f_end = np.empty(N)
    heat_problem(1.0).rhs_into(t1[-1], y1, f_end)
    assert run.last_t == t1[-1]
    np.testing.assert_allclose(run.last_y, y1, rtol=1e-15, atol=0)
    np.testing.assert_allclose(run.last_f, f_end, rtol=1e-12, atol=1e-12)
    # a flux change 1e-7 of the state's scale per unit time: a jump well below the tolerance
    small = integrate(heat_problem(1.0 + 1e-7), t2, y1, rtol=RTOL, atol=ATOL, warm=ws)
    assert small.info["warm_start"] == "continue" and 0.0 < small.info["rhs_jump"] <= ws.jump_tol
    ref = integrate(heat_problem(1.0 + 1e-7), t2, y1, rtol=1e-12, atol=1e-14).y[-1]
    assert np.abs(small.y[-1] - ref).max() < 100 * (RTOL * np.abs(ref).max() + ATOL)
    # a large change restarts: exactly the integration of a fresh memory, with as many rhs
    # calls (the new rhs at the start, evaluated for the jump, is CVODE's first call; the
    # old one's is the last step's own evaluation)
    t3 = np.linspace(2.0, 3.0, 5)
    y2 = small.y[-1]
    big = integrate(heat_problem(5.0), t3, y2, rtol=RTOL, atol=ATOL, warm=ws)
    cold = integrate(heat_problem(5.0), t3, y2, rtol=RTOL, atol=ATOL)
    assert big.info["warm_start"] == "restart" and big.info["rhs_jump"] > ws.jump_tol
    np.testing.assert_array_equal(big.y, cold.y)
    assert big.nsteps == cold.nsteps and big.njev == cold.njev and big.nfev == cold.nfev
    ws.close()
    assert not ws.active


def test_start_that_does_not_continue_restarts_or_builds_new_memory():
    from aragog.solver.backends import WarmStart

    ws = WarmStart()
    y0 = np.linspace(1.0, 2.0, N)
    p = heat_problem(1.0)
    r0 = integrate(p, np.linspace(0.0, 1.0, 5), y0, rtol=RTOL, atol=ATOL, warm=ws)
    assert r0.info["warm_start"] == "new"
    y1 = r0.y[-1]
    # another start time
    r = integrate(p, np.linspace(0.5, 1.5, 5), y1, rtol=RTOL, atol=ATOL, warm=ws)
    assert r.info["warm_start"] == "restart" and "rhs_jump" not in r.info
    # the state replaced (by more than a millionth of the tolerance)
    y2 = r.y[-1] * (1.0 + 1e-6)
    r = integrate(p, np.linspace(1.5, 2.5, 5), y2, rtol=RTOL, atol=ATOL, warm=ws)
    assert r.info["warm_start"] == "restart"
    # the same state set again (rounding of a unit conversion): continues
    y3 = (r.y[-1] * 3000.0) / 3000.0
    r = integrate(p, np.linspace(2.5, 3.5, 5), y3, rtol=RTOL, atol=ATOL, warm=ws)
    assert r.info["warm_start"] == "continue"
    # other options: a new memory
    r = integrate(p, np.linspace(3.5, 4.5, 5), r.y[-1], rtol=1e-7, atol=ATOL, warm=ws)
    assert r.info["warm_start"] == "new"
    # an event function: never continued
    r = integrate(p, np.linspace(4.5, 5.5, 5), r.y[-1], rtol=1e-7, atol=ATOL, warm=ws,
                  event=lambda t, y: 1.0)
    r = integrate(p, np.linspace(5.5, 6.5, 5), r.y[-1], rtol=1e-7, atol=ATOL, warm=ws,
                  event=lambda t, y: 1.0)
    assert r.status == 0 and r.info["warm_start"] == "restart"
    ws.close()


def test_failed_continuation_falls_back_to_a_cold_start(monkeypatch):
    from aragog.solver.backends import _cvode as cvode  # private: _march, patched so the continued history fails

    real = cvode._march
    calls = []

    def march(run, t_eval, y0, max_steps, trace):
        continued = run.counters().get("NumSteps", 0) > 0
        calls.append(continued)
        if continued:  # the continued history "fails" after the first output
            t_out, y_out, _, _ = real(run, t_eval[:2], y0, max_steps, trace)
            return t_out, y_out, -3, float(t_eval[1])
        return real(run, t_eval, y0, max_steps, trace)

    ws = cvode.WarmStart()
    y0 = np.linspace(1.0, 2.0, N)
    r0 = integrate(heat_problem(1.0), np.linspace(0.0, 1.0, 5), y0, rtol=RTOL, atol=ATOL, warm=ws)
    monkeypatch.setattr(cvode, "_march", march)
    t2 = np.linspace(1.0, 2.0, 5)
    r = integrate(heat_problem(1.0), t2, r0.y[-1], rtol=RTOL, atol=ATOL, warm=ws)
    monkeypatch.setattr(cvode, "_march", real)
    assert calls == [True, False]
    assert r.status == 0 and r.info["warm_start"] == "fallback", r.message
    cold = integrate(heat_problem(1.0), t2, r0.y[-1], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(r.y, cold.y)
    assert r.nfev > cold.nfev and r.nsteps > cold.nsteps  # both attempts counted
    # the fresh memory is kept: the next window continues it
    r2 = integrate(heat_problem(1.0), np.linspace(2.0, 3.0, 5), r.y[-1], rtol=RTOL, atol=ATOL, warm=ws)
    assert r2.info["warm_start"] == "continue"
    ws.close()


def test_failed_integration_drops_the_memory():
    from aragog.solver.backends import WarmStart

    ws = WarmStart()
    y0 = np.linspace(1.0, 2.0, N)
    bad = integrate(heat_problem(1.0), np.linspace(0.0, 100.0, 3), y0, rtol=RTOL, atol=ATOL,
                    max_steps=3, warm=ws)
    assert bad.status == -1 and not ws.active
    r = integrate(heat_problem(1.0), np.linspace(bad.t[-1], bad.t[-1] + 1.0, 3), bad.y[-1],
                  rtol=RTOL, atol=ATOL, max_steps=3, warm=ws)
    assert r.info["warm_start"] == "new"
    ws.close()


def test_memory_freed_with_its_owner():
    from aragog.solver.backends import WarmStart

    ws = WarmStart()
    integrate(heat_problem(1.0), np.linspace(0.0, 1.0, 3), np.ones(N), rtol=RTOL, atol=ATOL, warm=ws)
    run = ws._slot[0]
    assert run is not None and run.mem
    del ws
    gc.collect()
    assert not run.mem  # CVodeFree ran


@pytest.mark.parametrize("method", ["scipy-bdf", "scipy-radau"])
def test_scipy_back_ends_ignore_warm(method):
    from aragog.solver.backends import WarmStart

    ws = WarmStart()
    y0 = np.linspace(1.0, 2.0, N)
    a = integrate(heat_problem(1.0), np.linspace(0.0, 1.0, 5), y0, method=method, rtol=1e-6, atol=1e-9, warm=ws)
    b = integrate(heat_problem(1.0), np.linspace(0.0, 1.0, 5), y0, method=method, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(a.y, b.y)
    assert "warm_start" not in a.info and not ws.active


# ------------------------------------------------------------------ EntropySolver
def coupling_solvers(fluxes, **extra):
    """Two solvers of the demo at 12 nodes, warm start on and off, through the same
    coupling loop (prescribed surface flux, 10-yr windows); yields after each solve."""
    from _configs import TOY_EARTH

    from aragog import EntropySolver, load_config

    over = {"mesh.number_of_nodes": 12, "boundary_conditions.outer_boundary_condition": 4,
            "boundary_conditions.outer_boundary_value": fluxes[0], **extra}
    solvers = []
    for warm in (False, True):
        s = EntropySolver(load_config(TOY_EARTH, overrides={**over, "solver.warm_start": warm}))
        s.initialize()
        solvers.append(s)
    for i, flux in enumerate(fluxes):
        for s in solvers:
            p = s.parameters
            p.boundary_conditions.outer_boundary_value = flux
            p.solver.start_time, p.solver.end_time = 10.0 * i, 10.0 * (i + 1)
            s.reset()
            s.solve()
            assert s.get_state().status == 0
        yield solvers


def test_solver_warm_start_continues_unchanged_inputs():
    modes, steps = [], {False: 0, True: 0}
    for cold, warm in coupling_solvers([1.0e5] * 12):
        assert "warm_start" not in cold.integration_result.info  # off: every solve afresh
        modes.append(warm.integration_result.info["warm_start"])
        if len(modes) > 6:  # once the first solve's transient has passed
            steps[False] += cold.integration_result.nsteps
            steps[True] += warm.integration_result.nsteps
    assert modes == ["new"] + ["continue"] * 11
    assert steps[True] < steps[False]
    # the end states agree to the tolerance (rtol 1e-8 of ~3000 J/kg/K, a few steps' worth)
    np.testing.assert_allclose(warm._S, cold._S, rtol=0, atol=1e-3)


def test_solver_warm_start_restarts_after_a_large_change_exactly_like_a_cold_start():
    fluxes = [1.0e5 * (1.0 + 0.3 * np.sin(i)) for i in range(3)]
    for cold, warm in coupling_solvers(fluxes):
        pass
    assert warm.integration_result.info["warm_start"] == "restart"
    np.testing.assert_array_equal(warm._S, cold._S)
    assert warm.integration_result.nsteps == cold.integration_result.nsteps


def test_solver_state_replaced_or_option_changed():
    gen = coupling_solvers([1.0e5] * 5)
    cold, warm = next(gen)
    next(gen)
    assert warm.integration_result.info["warm_start"] == "continue"
    warm.set_initial_entropy(warm._S + 1.0)  # a new state: restart
    cold.set_initial_entropy(cold._S + 1.0)
    next(gen)
    assert warm.integration_result.info["warm_start"] == "restart"
    warm.set_initial_entropy(warm._S.copy())  # the same values again: continues
    next(gen)
    assert warm.integration_result.info["warm_start"] == "continue"
    warm.parameters.solver.warm_start = False  # switched off: a fresh memory per solve
    next(gen)
    assert "warm_start" not in warm.integration_result.info and warm._warm is None
