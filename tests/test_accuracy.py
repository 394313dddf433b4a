"""Integrator accuracy at the user's tolerance (issue 9): the fast, small cases of
tools/accuracy_matrix.py. The default path (CVODE with the JAX Jacobian) at
rtol = atol = 1e-6 must end with status 0 and cell temperatures within 1e-3 (relative)
of a reference computed here at rtol = atol = 1e-10.

Why these numbers:

- **1e-3 at tolerance 1e-6** is the issue's target. The integrator controls the local
  error per step, and the global error it leaves after hundreds of steps is typically
  10-100x the tolerance, so 1e-3 leaves a wide margin for honest error accumulation; a
  silently wrong answer (issue 9: CVODE returned status 0 with cell temperatures up to
  90 % off in abe_mixed) is far outside it.
- **The reference** is scipy BDF, an integrator independent of the CVODE path under
  test, at 1e-10: its own error is below 1e-8 (tools/accuracy_matrix.py: on abe_mixed,
  BDF at 1e-10 is within 6e-9 of a 1e-11 reference that BDF and Radau agree on to 8e-10),
  negligible against 1e-3. 1e-10 and not tighter: the reference costs most of the
  test's time.

The solvers are shared per static configuration (method, Jacobian, tolerances and
kappah_floor are not static: nothing is compiled again between cases).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import INPUT, REPO

TOL = 1e-6  # the user's tolerance (rtol = atol), as in the upstream abe_mixed config
REF_TOL = 1e-10  # reference tolerance (scipy BDF)
COUPLED_REF_TOL = 1e-8  # reference of the coupled loop (see its test)
ERR_MAX = 1e-3  # largest acceptable max |T / T_ref - 1| at TOL (issue 9)
# Step budget per solve: the default path needs a few thousand steps here at most (the
# reference fewer than 4000); a lower budget than the config's 100000 only makes a
# failing solve fail faster.
STEP_BUDGET = {"solver.max_steps": 20000}


def load_tool():
    """tools/accuracy_matrix.py as a module (its runners and error measure are tested here)."""
    name = "accuracy_matrix"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tools" / "accuracy_matrix.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def tool():
    return load_tool()


@pytest.fixture(scope="module")
def abe(tool):
    """One solver for abe_mixed (input/abe_mixed.toml), compared at 5 output times, and the
    config's kappah_floor."""
    solver = tool.make_solver(tool.Scenario("abe_mixed", INPUT / "abe_mixed.toml", dict(STEP_BUDGET)),
                              output_points=5)
    return solver, solver.parameters.energy.kappah_floor


def assert_accurate(tool, case: dict, ref: dict, what: str) -> None:
    """Status 0 for both, and the case within ERR_MAX of the reference."""
    assert ref["status"] == 0, f"{what}: the reference failed: {ref['message']}"
    assert case["status"] == 0, f"{what}: status {case['status']}: {case['message']}"
    err = tool.rel_error(case, ref)
    assert err is not None and err <= ERR_MAX, (
        f"{what}: max relative cell-T error {err:.3g} > {ERR_MAX:g} at rtol = atol = {TOL:g} "
        f"({case['nsteps']} steps, {case['nfev']} RHS, {case['njev']} Jacobian calls; "
        f"reference {ref['nsteps']} steps): a wrong answer reported as a success")


@pytest.mark.parametrize("floor", ["default", pytest.param(0.0, marks=pytest.mark.slow),
                                   pytest.param(1.0e3, marks=pytest.mark.slow)])
def test_abe_mixed_default_integrator_within_1e3(tool, abe, floor):
    """abe_mixed (two-phase, separation and mixing, 200 yr) with energy.kappah_floor at the
    config's default (10 m2/s), 0 and 1e3: the default integrator is right at 1e-6. Each
    case needs a scipy-BDF reference at 1e-10 (15-20 s): the other floors run with
    ``-m slow``."""
    solver, default_floor = abe
    solver.parameters.energy.kappah_floor = default_floor if floor == "default" else floor
    ref = tool.run_single(solver, "bdf", "jax", REF_TOL)
    case = tool.run_single(solver, *tool.INTEGRATORS[tool.DEFAULT_PATH], TOL)
    assert_accurate(tool, case, ref, f"abe_mixed, kappah_floor = {solver.parameters.energy.kappah_floor:g}")
    assert case["times"][-1] == pytest.approx(200.0) and len(case["times"]) == 5


def test_coupled_loop_default_integrator_within_1e3(tool):
    """A reduced PROTEUS-style loop (12 cells, 8 solves of 3 yr, one solver, reset() +
    solve() with a new prescribed surface flux each time) from a fully molten isentrope
    through the liquidus: every solve's final state within 1e-3 of the same loop at 1e-8.

    The reference is scipy BDF at 1e-8 here, not REF_TOL: with the CMB node's eddy
    diffusivity taken from the interior (docs/physics.md) the core heats the crystallising
    base strongly, and BDF at 1e-10 needs more than 20,000 steps per 3-yr solve. 1e-8 is
    five orders of magnitude below the 1e-3 acceptance (BDF at 1e-8 and CVODE at 1e-6
    end this loop with Phi_global equal to 4e-10)."""
    sc = tool.coupled_scenario("coupled_test", nodes=13, solves=8, window=3.0)
    sc.overrides.update(STEP_BUDGET)
    solver = tool.make_solver(sc, output_points=2)
    assert solver.get_state().Phi_global == pytest.approx(1.0)  # starts fully molten
    ref = tool.run_coupled(solver, sc.coupled, "bdf", "jax", COUPLED_REF_TOL)
    assert ref["phi_final"] < 0.95  # ... and the loop cools through the liquidus
    case = tool.run_coupled(solver, sc.coupled, *tool.INTEGRATORS[tool.DEFAULT_PATH], TOL)
    assert_accurate(tool, case, ref, "coupled loop")
    assert len(case["times"]) == sc.coupled["solves"]
