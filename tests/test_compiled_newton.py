"""CVODE's Newton solve in one compiled call per step (aragog/programs/_corrector.py,
aragog/solver/backends/_cvode_newton.py; docs/solver.md, "One compiled call per step").

The subject is the integrator's hot path (a bound pair's programs as CVODE's problem), which
follows JAX's setting: the module runs in float64, as the solver calls it.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from aragog.solver.backends import cvode_available, integrate

pytestmark = [pytest.mark.usefixtures("x64_module"),
              pytest.mark.skipif(not cvode_available(), reason="no CVODE library")]

N, D = 24, 400.0  # cells, diffusion rate [1/time]: stiffness ratio ~ 4 D = 1600


def _forced_diffusion(t, y, args):
    """dy/dt = D (y_{i+1} - 2 y_i + y_{i-1}) + sin(t) (zero outside), a stiff linear
    system with an exact solution (:func:`_exact`)."""
    import jax.numpy as jnp

    lap = jnp.concatenate([y[1:], jnp.zeros(1)]) + jnp.concatenate([jnp.zeros(1), y[:-1]]) - 2.0 * y
    return args["D"] * lap + jnp.sin(t)


def _exact(t: float, y0: np.ndarray) -> np.ndarray:
    """The solution at ``t``: the forcing as two more states (s' = c, c' = -s, s(0) = 0,
    c(0) = 1), so that z' = B z with B constant and z(t) = expm(B t) z(0)."""
    A = D * (np.diag(-2.0 * np.ones(N)) + np.diag(np.ones(N - 1), 1) + np.diag(np.ones(N - 1), -1))
    B = np.zeros((N + 2, N + 2))
    B[:N, :N] = A
    B[:N, N] = 1.0
    B[N, N + 1], B[N + 1, N] = 1.0, -1.0
    z0 = np.concatenate([y0, [0.0, 1.0]])
    return (scipy.linalg.expm(B * t) @ z0)[:N]


@pytest.fixture(scope="module")
def pair():
    from aragog.solver import JitPair

    return JitPair(_forced_diffusion, N, {"D": np.float64(D)}, 1, 1, corrector=(4, True), name="test_newton")


def _solve(problem, newton, t_end=2.0, **kw):
    y0 = np.linspace(1.0, 2.0, N)
    t_eval = np.linspace(0.0, t_end, 5)
    return integrate(problem, t_eval, y0, rtol=1e-8, atol=1e-10, newton=newton, **kw), y0, t_eval


def test_compiled_newton_matches_the_exact_solution(pair):
    """Both Newton solvers against expm: every output within 20 x rtol of the solution's
    scale (the global error of a BDF integration at rtol 1e-8 is a few local tolerances),
    and in about the same number of steps (the same CVODE; only the linear algebra and the
    rounding differ: within 10 %)."""
    bound = pair.bind({"D": np.float64(D)})
    results = {}
    for newton in ("compiled", "callbacks"):
        res, y0, t_eval = _solve(bound, newton)
        assert res.status == 0, res.message
        assert res.info["newton"] == newton
        exact = np.array([_exact(t, y0) for t in t_eval])
        assert np.max(np.abs(res.y - exact)) < 20 * 1e-8 * np.max(np.abs(exact))
        results[newton] = res
    c, b = results["compiled"], results["callbacks"]
    assert abs(c.nsteps - b.nsteps) <= 0.1 * b.nsteps


def test_one_crossing_per_step_attempt(pair):
    """The problem's rhs program is called by CVODE itself only to start (its first
    derivative and first step size: a handful of calls), the corrector once per step
    attempt (steps + failed attempts) and once more after a failure on an old Jacobian,
    and the Jacobian program once per new Jacobian."""
    from aragog.solver import ProgramStats

    calls = {name: ProgramStats() for name in ("rhs", "jac", "corrector")}
    bound = pair.bind({"D": np.float64(D)}, calls)
    res, _, _ = _solve(bound, "compiled")
    info = res.info
    assert res.status == 0
    assert calls["rhs"].calls <= 5
    assert calls["jac"].calls == info["NumJacEvals"] == res.njev
    assert calls["corrector"].calls == info["CorrectorCalls"]
    attempts = info["NumSteps"] + info["NumErrTestFails"] + info["NumNonlinSolvConvFails"]
    # (a second call per attempt only after a new Jacobian mid-attempt: at most one per Jacobian)
    assert info["NumSteps"] <= info["CorrectorCalls"] <= attempts + info["NumJacEvals"]
    # every right-hand side the corrector evaluated is counted as the problem's
    assert res.nfev == calls["rhs"].calls + info["CorrectorRhsEvals"]
    assert info["NumJacEvals"] >= 1 and info["NumLinSolvSetups"] >= info["NumJacEvals"]


def test_new_inputs_reach_the_kept_solver(pair):
    """A warm-started CVODE keeps its nonlinear solver from one integration to the next: the
    next integration's problem (other inputs, here another D) must be the one it solves,
    exactly as a fresh memory would."""
    from aragog.solver.backends import WarmStart

    warm = WarmStart(jump_tol=0.0)  # never continue: every integration a restart
    first = pair.bind({"D": np.float64(D)})
    _solve(first, "compiled", warm=warm)
    other = pair.bind({"D": np.float64(2 * D)})
    kept, _, _ = _solve(other, "compiled", warm=warm)
    fresh, _, _ = _solve(other, "compiled")
    assert kept.info["warm_start"] == "restart"
    np.testing.assert_array_equal(kept.y, fresh.y)
    assert kept.nsteps == fresh.nsteps


def test_a_non_finite_right_hand_side_fails_the_solve_with_a_message():
    """NaN from t = 0.5 on: CVODE's step attempts fail recoverably, it shrinks the step until
    it gives up; the result says so (status < 0, the time, the right-hand side named), and
    the state is the last one reached (before 0.5)."""
    import jax.numpy as jnp

    from aragog.solver import JitPair

    def rhs(t, y, args):
        return jnp.where(t > 0.5, jnp.nan, 1.0) * _forced_diffusion(t, y, args)

    bad = JitPair(rhs, N, {"D": np.float64(D)}, 1, 1, corrector=(4, True), name="test_newton_nan")
    res, _, _ = _solve(bad.bind({"D": np.float64(D)}), "compiled")
    assert res.status < 0
    assert "rhs" in res.message and "non-finite" in res.message, res.message
    assert res.t[-1] <= 0.5


def test_compiled_needs_a_corrector_program():
    from aragog.solver.backends import OdeProblem

    problem = OdeProblem.from_functions(lambda t, y: -y, None, 3)
    with pytest.raises(ValueError, match="newton='compiled' cannot run: the problem has no corrector"):
        integrate(problem, [0.0, 1.0], np.ones(3), newton="compiled")
    assert integrate(problem, [0.0, 1.0], np.ones(3), newton="auto").info["newton"] == "callbacks"
    with pytest.raises(ValueError, match="newton must be"):
        integrate(problem, [0.0, 1.0], np.ones(3), newton="fast")


def test_operation_slots_are_read_from_the_library():
    """Where gettype, solve, setsysfn and the two counters sit in this SUNDIALS's operations
    table: five distinct slots, each reached by exactly its generic call."""
    # private: the operations-table reader is the CVODE binding's own
    from aragog.solver.backends._cvode_newton import operation_slots
    # private: the binding's library loader, to read its table
    from aragog.solver.backends._sundials import load_library

    slots = operation_slots(load_library())
    assert set(slots) == {"gettype", "solve", "setsysfn", "getnumiters", "getnumconvfails"}
    assert len(set(slots.values())) == 5
    assert slots["gettype"] < slots["solve"] < slots["setsysfn"] < slots["getnumiters"] < slots["getnumconvfails"]


def test_config_refuses_compiled_newton_where_it_cannot_run():
    from _configs import TOY_EARTH

    from aragog import load_config
    from aragog.errors import ConfigError

    for key, value in (("solver.compile_mode", "blocks"), ("solver.jacobian", "fd"), ("solver.method", "bdf")):
        with pytest.raises(ConfigError, match=rf"solver.newton. = 'compiled' needs solver.{key.split('.')[1]}"):
            load_config(TOY_EARTH, overrides={"solver.newton": "compiled", key: value})
        load_config(TOY_EARTH, overrides={"solver.newton": "auto", key: value})


def test_auto_runs_one_newton_solver_for_every_solve():
    """``solver.newton = "auto"`` decides by the config and the CVODE library,
    never by what happens to be compiled: every solve of a config runs the same Newton
    solver, from the first one (the corrector is compiled beside the RHS when the solver is
    built, with the Jacobian program it calls for a new Jacobian), so two
    solvers of a config give bitwise-equal results; a config the compiled solve cannot run
    (blocks) runs SUNDIALS' Newton solver on every solve."""
    from _configs import TOY_EARTH

    from aragog import EntropySolver, load_config
    from aragog.solver import clear_shared_programs

    clear_shared_programs()  # this process's programs of the config: compiled here, counted below
    over = {"mesh.number_of_nodes": 11, "solver.end_time": 5.0, "solver.jax_cache_dir": "none",
            "solver.newton": "auto"}
    for extra, expect in (({}, "compiled"), ({"solver.compile_mode": "blocks"}, "callbacks")):
        ends = []
        for _ in range(2):
            solver = EntropySolver(load_config(TOY_EARTH, overrides={**over, **extra}))
            solver.initialize()
            modes = []
            for i in range(2):
                p = solver.parameters
                p.solver.start_time, p.solver.end_time = 5.0 * i, 5.0 * (i + 1)
                solver.reset()
                solver.solve()
                assert solver.get_state().status == 0
                modes.append(solver.integration_result.info["newton"])
            assert modes == [expect, expect]
            ends.append(np.asarray(solver.integration_result.y_final))
            if expect == "compiled" and len(ends) == 1:  # the first solver compiled the programs
                stats = solver.jit_stats
                assert stats["corrector"]["compiles"] + stats["corrector"]["loads"] >= 1
                assert stats["jac"]["compiles"] + stats["jac"]["loads"] >= 1
        np.testing.assert_array_equal(ends[0], ends[1])
