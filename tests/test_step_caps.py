"""Step caps (energy.temperature_step_cap, energy.entropy_step_cap, combined with
energy.phi_step_cap): the solve ends where the first cap is reached, status 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aragog import EntropySolver, load_config

EARTH = Path(__file__).resolve().with_name("earth_toy.toml")  # tests/_configs.py
BASE = {"mesh.number_of_nodes": 16, "solver.end_time": 1.0e5}


def run(**overrides):
    solver = EntropySolver(load_config(EARTH, overrides={**BASE, **overrides}))
    solver.initialize()
    before = solver.get_state()
    solver.solve()
    return before, solver.get_state()


# The event is located by the integrator's root finder on its interpolant; its error is of
# the order of the local error (rtol 1e-6 in earth.toml on values of ~3e3), so a located
# change matches the cap to 1e-3 of the cap, well above that and well below a step's change.
REL = 1e-3


def test_entropy_cap_stops_at_the_largest_cell_change():
    before, out = run(**{"energy.entropy_step_cap": 20.0})
    assert out.status == 1 and 0 < out.dt_actual < 1.0e5
    assert np.max(np.abs(out.S_final - before.S_final)) == pytest.approx(20.0, rel=REL)


def test_temperature_cap_stops_at_the_largest_cell_change():
    before, out = run(**{"energy.temperature_step_cap": 50.0})
    assert out.status == 1 and 0 < out.dt_actual < 1.0e5
    assert np.max(np.abs(out.T_stag - before.T_stag)) == pytest.approx(50.0, rel=REL)


def test_the_first_cap_reached_ends_the_solve():
    """With a loose entropy cap and a tight temperature cap, the temperature cap ends the
    solve, earlier than the entropy cap alone would."""
    _, alone = run(**{"energy.entropy_step_cap": 40.0})
    before, both = run(**{"energy.entropy_step_cap": 40.0, "energy.temperature_step_cap": 20.0})
    assert both.status == 1 and both.dt_actual < alone.dt_actual
    assert np.max(np.abs(both.T_stag - before.T_stag)) == pytest.approx(20.0, rel=REL)
    assert np.max(np.abs(both.S_final - before.S_final)) < 40.0
