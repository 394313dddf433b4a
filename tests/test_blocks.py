"""compile_mode "blocks": the right-hand side recorded with aragog.csdl from the physics
functions and compiled as separate blocks, against the fused programs.

Tolerances. Per evaluation the two modes run the same float64 arithmetic, compiled in
different XLA programs; XLA contracts and vectorises the thermal arithmetic differently
inside the fused program, so about 40 % of the entries of dy/dt differ in the last bit:
1e-13 relative (to each array's largest entry) is rounding with margin. A whole solve
with CVODE's adaptive steps amplifies a last-bit difference to the integration error:
perturbing the *initial state* of the fused solver by one ulp moves the 10-yr state of
the demo by 6e-9 relative (521 -> 419 steps; measured), and the two modes differ by the
same amount. The solve check therefore uses 1e-6 relative (100x the measured spread,
well below the 1e-3 a physics mistake would cause), and the per-evaluation checks carry
the exactness.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from aragog import EntropySolver, csdl, load_config
from aragog.solver import clear_shared_programs

from conftest import INPUT
from _configs import TOY_EARTH

EARTH = TOY_EARTH
CONSTANT = INPUT / "constant_properties.toml"

CONFIGS = {
    "earth_energy_balance": (EARTH, {"mesh.number_of_nodes": 12}),
    "earth_flux_tidal_utbl": (EARTH, {
        "mesh.number_of_nodes": 12, "boundary_conditions.inner_boundary_condition": 2,
        "boundary_conditions.inner_boundary_value": 0.05, "energy.tidal": True,
        "energy.tidal_array": [2.0e-8], "boundary_conditions.param_utbl": True}),
    "earth_quasi_steady_prescribed_T": (EARTH, {
        "mesh.number_of_nodes": 12, "boundary_conditions.core_bc": "quasi_steady",
        "boundary_conditions.outer_boundary_condition": 5,
        "boundary_conditions.outer_boundary_value": 1500.0}),
    "constant_properties": (CONSTANT, {"mesh.number_of_nodes": 12}),
}


def solver_for(config, overrides, mode):
    solver = EntropySolver(load_config(config, overrides={**overrides, "solver.compile_mode": mode}))
    solver.initialize()
    return solver


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


#: configs whose blocks compile for 15-20 s more (other boundary options): ``-m slow``
SLOW_CONFIGS = ("earth_flux_tidal_utbl", "earth_quasi_steady_prescribed_T")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CONFIGS else n
                                  for n in CONFIGS])
def test_each_program_matches_the_fused_one(name):
    config, overrides = CONFIGS[name]
    fused, blocks = solver_for(config, overrides, "fused"), solver_for(config, overrides, "blocks")
    F, B = fused._bound, blocks._bound
    assert (B.n, B.ml, B.mu) == (F.n, F.ml, F.mu)
    rng = np.random.default_rng(7)
    y0 = fused._y0()
    for k in range(4):
        y = y0 * (1.0 + 0.03 * rng.standard_normal(y0.shape))
        t = 0.25 * k
        assert rel(B.rhs(t, y), F.rhs(t, y)) < 1e-13
        assert rel(B.jac(t, y), F.jac(t, y)) < 1e-13
        with jax.enable_x64(True):  # scalar_fn's g, like rhs_into, runs inside the solver's float64
            assert rel(B.scalar_fn("melt_fraction")(t, y), F.scalar_fn("melt_fraction")(t, y)) < 1e-13
        db, df = B.call("diagnostics", t, y), F.call("diagnostics", t, y)
        for field in ("T", "phi", "heat_flux", "jconv", "T_basic", "E_th", "RF_depth", "surface_power"):
            assert rel(getattr(db, field), getattr(df, field)) < 1e-12, field
        # (energy_rate, a cell sum with cancellation, is covered by test_physics's identity)


def test_blocks_solve_agrees_with_fused_to_the_integration_spread():
    overrides = {"solver.end_time": 10.0}
    out = {}
    for mode in ("fused", "blocks"):
        solver = solver_for(EARTH, overrides, mode)
        solver.solve()
        out[mode] = solver.get_state()
        assert out[mode].status == 0
    np.testing.assert_allclose(out["blocks"].S_final, out["fused"].S_final, rtol=1e-6)
    assert out["blocks"].T_magma == pytest.approx(out["fused"].T_magma, rel=1e-6)


@pytest.mark.cold_compiles
def test_blocks_compile_once_and_are_shared_between_solvers():
    clear_shared_programs()
    overrides = {"mesh.number_of_nodes": 12, "solver.end_time": 5.0}
    first = solver_for(EARTH, overrides, "blocks")
    first.solve()
    first.get_state()
    stats = first.jit_stats
    for block in ("structure", "thermal", "diagnostics", "vjp(structure)", "vjp(thermal)"):
        entry = stats[f"block:{block}"]
        assert entry["traces"] == 1 and entry["compiles"] + entry["loads"] == 1, (block, entry)
        assert entry["source"] in ("compiled", "disk")
    count = csdl.compiled_function_count()
    second = solver_for(EARTH, {**overrides, "mesh.outer_radius": 6.0e6}, "blocks")  # same static key
    assert second._pair is first._pair
    second.solve()
    second.get_state()
    assert csdl.compiled_function_count() == count  # no block compiled again
    for name, entry in second.jit_stats.items():
        if name.startswith("block:") or name == "jac":
            assert entry["source"] == "memory" and entry["compiles"] == 0 and entry["traces"] == 0, (name, entry)
    assert second.jit_stats["rhs"]["calls"] > 0 and second.jit_stats["rhs"]["calls"] != first.jit_stats["rhs"]["calls"]


def test_blocks_mode_is_selected_by_config_and_reported():
    solver = solver_for(EARTH, {"mesh.number_of_nodes": 12, "solver.end_time": 1.0}, "blocks")
    assert type(solver._pair).__name__ == "BlockPrograms"
    solver.solve()
    assert {"block:structure", "block:thermal"} <= set(solver.jit_stats)


@pytest.mark.cold_compiles
def test_log_reports_compiles_from_the_counters(caplog):
    """One INFO line per program actually compiled, none on later solves, and a reuse line
    for a second solver of the same static key."""
    import logging

    clear_shared_programs()
    overrides = {"mesh.number_of_nodes": 12, "solver.end_time": 2.0}
    with caplog.at_level(logging.INFO, logger="aragog.solver"):
        solver = solver_for(EARTH, overrides, "fused")
        solver.solve()
        first = [r.getMessage() for r in caplog.records if "compiled" in r.getMessage()]
        assert any(m.startswith("rhs compiled") for m in first) and any(m.startswith("jac compiled") for m in first)
        caplog.clear()
        p = solver.parameters
        p.solver.start_time, p.solver.end_time = 2.0, 4.0
        solver.reset()
        solver.solve()
        assert not [r for r in caplog.records if "compiled" in r.getMessage() or "loaded" in r.getMessage()]
        caplog.clear()
        again = solver_for(EARTH, overrides, "fused")
        again.solve()
        messages = [r.getMessage() for r in caplog.records]
        assert any("reusing the programs" in m for m in messages)
        assert not any(m.startswith(("rhs compiled", "jac compiled")) for m in messages)
