"""The integrator's absolute tolerance per state component (aragog/solver/_tolerances.py,
docs/solver.md "Error weights"): the energy-balance slot's error is weighed by the core
energy it moves, a cell's by its own."""

from __future__ import annotations

import numpy as np
import pytest

from aragog import eos, physics as ph
# private: absolute_tolerances and slot_atol_factor, the solver's per-component atol
from aragog.solver._tolerances import absolute_tolerances, slot_atol_factor
from aragog.structure import build_mesh
from _configs import material_params

# the physics inputs and the tolerance rule are pure functions: float64 as a user calls them
pytestmark = pytest.mark.usefixtures("x64_module")


def _inputs(n_nodes=41):
    mesh = build_mesh(6371e3, 3504e3, n_nodes, core_density=10738.33)
    depth = float(mesh.outer_radius) - float(mesh.inner_radius)
    return ph.PhysicsInputs(
        mesh=mesh, eos=None, material=material_params(), transport=ph.TransportInputs(grain_size=1e-3),
        boundary=ph.BoundaryInputs(outer_boundary_value=0.0, equilibrium_temperature=0.0, emissivity=1.0, core_heat_capacity=880.0), heating=ph.earth_heating_inputs(mesh.number_of_cells),
        scales=ph.Scales(S=1000.0, dSdr=1000.0 / depth))


def test_slot_factor_matches_core_and_cell_energy_errors():
    """An error δ in the slot moves as much core energy as an error δ / factor moves in the
    lowest cell. Checked on the physics itself: move the slot by δ and take the CMB node's
    entropy change ΔS_b0 from physics.basic_node_entropy; the core's energy change
    f M_c c ΔT, ΔT = (T/c) ΔS_b0, must equal the lowest cell's m_0 T ΔS for
    ΔS = δ / factor (one specific heat c on both sides, the factor's convention). To 5 %:
    the factor is rounded to two digits."""
    inputs = _inputs()
    options = ph.PhysicsOptions(core_bc="energy_balance")
    factor = slot_atol_factor(inputs)
    sc, mesh, bp = inputs.scales, inputs.mesh, inputs.boundary
    S = np.linspace(3000.0, 2900.0, mesh.number_of_cells)

    def S_b0(slot):  # J/kg/K
        S_b, _ = ph.basic_node_entropy(S, slot * sc.dSdr, 0.0, mesh, options)
        return float(S_b[0])

    delta = 1e-3
    core_energy_per_T = float(bp.tfac_core_avg) * float(mesh.core_mass) * abs(S_b0(-2e-6 + delta) - S_b0(-2e-6))
    cell_energy_per_T = float(mesh.mass_stag[0]) * (delta / factor) * sc.S
    assert core_energy_per_T == pytest.approx(cell_energy_per_T, rel=0.05)
    # an Earth-like planet: a few, whatever the resolution (g grows as m_0 shrinks)
    assert 1.0 < factor < 10.0
    assert slot_atol_factor(_inputs(81)) == pytest.approx(factor, rel=0.2)


def test_absolute_tolerances_per_component():
    inputs = _inputs()
    atol = 1e-8  # J/kg/K
    n = inputs.mesh.number_of_cells
    plain = atol / inputs.scales.S
    # no slot, or the core-temperature slot (order one in its own scale): one scalar
    for core_bc in ("quasi_steady", "bower2018", "temperature"):
        got = absolute_tolerances(atol, n + (core_bc == "bower2018"), inputs, ph.PhysicsOptions(core_bc=core_bc))
        assert np.ndim(got) == 0 and got == pytest.approx(plain, rel=1e-15)
    got = absolute_tolerances(atol, n + 1, inputs, ph.PhysicsOptions(core_bc="energy_balance"))
    assert got.shape == (n + 1,)
    np.testing.assert_array_equal(got[1:], plain)
    assert got[0] == pytest.approx(plain * slot_atol_factor(inputs), rel=1e-15)


def test_gain_is_stable_under_a_rounding_move_of_the_mesh():
    """Two-digit rounding: a coupled solve whose mesh moved by rounding keeps its
    tolerances (a CVODE warm start requires them unchanged)."""
    a = slot_atol_factor(_inputs())
    mesh = build_mesh(6371e3 * (1 + 1e-12), 3504e3, 41, core_density=10738.33)
    depth = float(mesh.outer_radius) - float(mesh.inner_radius)
    b = slot_atol_factor(ph.PhysicsInputs(mesh=mesh, eos=None, material=None, transport=None,
                                          boundary=ph.BoundaryInputs(outer_boundary_value=0.0, equilibrium_temperature=0.0, emissivity=1.0, core_heat_capacity=880.0),
                                          heating=None, scales=ph.Scales(S=1000.0, dSdr=1000.0 / depth)))
    assert a == b
