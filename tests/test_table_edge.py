"""The EOS tables' edge (aragog.solver._table_edge, docs/physics.md "Equation of state"):
a cell leaving the tables' entropy range ends the solve there with status -40, the state
it returns is accepted as a start, and starts or meshes outside the tables are refused.

The toy tables (tests/earth_toy.toml) span S = 0..3700 J/kg/K, so the band is
1e-6 x 3700 = 3.7e-3 J/kg/K. A prescribed heating flux of 1e7 W/m2 at the surface drives
the top cell past 3700 J/kg/K within ~8 yr."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aragog import EntropySolver, eos, load_config
from aragog.errors import ConfigError
from aragog.solver import STATUS_OUTSIDE_TABLES

TOY = Path(__file__).resolve().with_name("earth_toy.toml")  # tests/_configs.py
HEATED = {"mesh.number_of_nodes": 12, "solver.end_time": 1000.0,
          "boundary_conditions.outer_boundary_condition": 4, "boundary_conditions.outer_boundary_value": -1.0e7}
LO, HI = 0.0, 3700.0
BAND = 1e-6 * (HI - LO)


def solver_for(**overrides) -> EntropySolver:
    solver = EntropySolver(load_config(TOY, overrides={**HEATED, **overrides}))
    solver.initialize()
    return solver


@pytest.mark.parametrize("method", ["cvode", "bdf"])
def test_a_cell_leaving_the_tables_ends_the_solve_at_the_edge(method):
    solver = solver_for(**{"solver.method": method})
    solver.solve()
    out = solver.get_state()
    assert out.status == STATUS_OUTSIDE_TABLES
    assert 0.0 < out.dt_actual < 1000.0 and out.time == pytest.approx(out.dt_actual)
    assert "cells 10 of 11 reached above the EOS tables' range [0, 3700] J/kg/K at t = " in out.message
    # the state is that at the edge: within the band, to the event's rounding
    assert HI - 1.0 < out.S_final.max() <= HI + BAND
    assert out.S_final.min() >= LO
    history = solver.history()
    assert float(history.time[-1]) == pytest.approx(out.time, rel=1e-12)
    # the state the solver returned is accepted as a start; under the same heating the next
    # solve ends at once (the cell is at the edge), under cooling it runs to its end
    solver.set_initial_entropy(out.S_final)
    p = solver.parameters
    p.solver.start_time, p.solver.end_time = out.time, out.time + 10.0
    solver.reset()
    solver.solve()
    again = solver.get_state()
    assert again.status == STATUS_OUTSIDE_TABLES and again.dt_actual < 1e-6
    p.boundary_conditions.outer_boundary_value = 1.0e3
    p.solver.start_time, p.solver.end_time = again.time, again.time + 10.0
    solver.reset()
    solver.solve()
    cooled = solver.get_state()
    assert cooled.status == 0 and cooled.S_final.max() < HI


def test_the_edge_and_a_step_cap_end_the_solve_whichever_comes_first():
    """Step caps share the integrator's event with the edge: a loose cap leaves it to the
    edge (status -40), a tight one ends the solve first (status 1, inside the tables)."""
    loose = solver_for(**{"energy.entropy_step_cap": 1.0e4})
    loose.solve()
    assert loose.get_state().status == STATUS_OUTSIDE_TABLES
    tight = solver_for(**{"energy.entropy_step_cap": 20.0})
    tight.solve()
    out = tight.get_state()
    assert out.status == 1 and out.S_final.max() < HI


def test_warm_start_continues_under_the_edge_event():
    """The edge's event depends on the state alone, so a coupling loop keeps CVODE's history
    from one solve to the next (before, any event restarted it)."""
    solver = solver_for(**{"boundary_conditions.outer_boundary_value": 1.0e3, "solver.end_time": 1.0})
    modes = []
    for i in range(3):
        p = solver.parameters
        p.solver.start_time, p.solver.end_time = float(i), float(i + 1)
        solver.reset()
        solver.solve()
        assert solver.get_state().status == 0
        modes.append(solver.integration_result.info["warm_start"])
    assert modes == ["new", "continue", "continue"]


def test_a_start_beyond_the_tables_is_refused():
    from aragog.validation import check_inputs

    hot = {"initial_condition.surface_temperature": 1.0e6}
    with pytest.raises(ConfigError, match=r"initial_condition.surface_temperature = 1e\+06 K is above what the "
                                          r"EOS tables reach at P = 0 GPa \(6\d{3}\.\d+ K at their highest entropy\)"):
        solver_for(**hot)
    with pytest.raises(ConfigError, match="initial_condition.surface_temperature = 1e"):
        check_inputs(load_config(TOY, overrides={**HEATED, **hot}))


def test_a_mesh_beyond_the_tables_pressure_is_refused(tmp_path):
    """Tables that stop at 100 GPa under an Earth whose CMB is at ~135 GPa: refused by the
    solver and by `aragog validate`, naming the base pressure and the tables' range."""
    from aragog.validation import check_inputs

    shallow = eos.write_default_tables(tmp_path / "to100", np_=21, ns=41, pmax=100e9)
    params = load_config(TOY, overrides={**HEATED, "eos.dir": str(shallow)})
    message = r"mesh: the mantle reaches P = 1\d\d(\.\d+)? GPa at its base, beyond the EOS tables' pressure range 0..100 GPa"
    with pytest.raises(ConfigError, match=message):
        EntropySolver(params).initialize()
    with pytest.raises(ConfigError, match=message):
        check_inputs(params, rhs=False)


def test_generated_tables_reach_the_base_of_a_super_earth():
    """The bundled models' tables follow the structure: a mantle down to ~346 GPa gets a
    pressure axis to 350 GPa at the default spacing (1 GPa for the toy model), without
    compiling anything."""
    from aragog.solver._from_config import derive  # private: the derivation alone, nothing compiled

    import jax

    params = load_config(TOY, overrides={**HEATED, "mesh.outer_radius": 1.1e7, "mesh.inner_radius": 5.5e6})
    with jax.enable_x64(True):  # as the solver derives (its entry points enter float64)
        derived = derive(params.validate())
    base = float(np.max(derived.mesh.P_basic))
    assert base > 300e9
    lo, hi = derived.inputs.eos.pressure_range()
    assert lo == 0.0 and hi == 350e9 >= base
    assert eos.table_range_for("default", base) == (351, 350e9)  # 1 GPa apart, as the default's 151 to 150 GPa
    assert eos.table_range_for("default", 135e9) == (None, None)  # within the default axis: the default set
    # the MgSiO3 model's fits stop at 150 GPa: beyond, the tables are extrapolations, and say so
    assert eos.extrapolation_note("mgsio3", 350e9) is not None
    assert eos.extrapolation_note("mgsio3", None) is None and eos.extrapolation_note("default", 350e9) is None


def test_the_band_and_the_event_function():
    """One rule: the event function is negative at every accepted start and zero on the
    band's outer side; a state put back on the band is accepted and strictly inside."""
    from aragog.solver import TableEdge

    edge = TableEdge((LO, HI), (0.0, 150e9))
    g = edge.event(lambda y: (np.asarray(y), None))
    assert g(0.0, np.array([LO, HI])) == pytest.approx(-1.0)
    assert g(0.0, np.array([HI + BAND])) == pytest.approx(0.0, abs=1e-9)
    edge.check_entropy(np.array([LO - 0.999 * BAND, HI + 0.999 * BAND]), "start")
    with pytest.raises(ConfigError, match=r"start: cells 1 of 2 have S = 3707.4..3707.4 J/kg/K"):
        edge.check_entropy(np.array([HI, HI + 2e3 * BAND]), "start")
    back = edge.onto_band(np.array([LO - 2 * BAND, HI + 5 * BAND, 1000.0]))
    edge.check_entropy(back, "start")
    assert g(0.0, back) < 0.0 and back[2] == 1000.0
