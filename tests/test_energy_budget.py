"""The per-solve energy budget of SolverOutput (aragog.solver._budget) closes.

The identity (aragog.solver._budget, docs/output.md "Energy budget"): summing
ρ_i T_i V_i dS_i/dt = (F A)_i - (F A)_{i+1} + ρ_i H_i V_i over the cells and integrating
over the solve window gives

    E(t1) - E(t0) = step_dE_F_int_J + step_dE_F_cmb_J + step_dE_Q_radio_J
                    + step_dE_Q_tidal_J + step_solver_residual_J

with E the heat content the entropy equation transports, E = Σ_i V_i ∫^{S_i} ρ T dS at the
cells' static pressures: E(t1) - E(t0) = step_dE_state_heat_J, computed from the window's
two end states alone, while the right-hand side integrates the boundary and source
powers along the integrator's trajectory.
"""

from __future__ import annotations

import numpy as np
import pytest

from aragog import EntropySolver, load_config
# private: the budget's NumPy EOS and heat-content pieces, checked alone
from aragog.physics._heat_content import EnthalpyEOS, compression_work, heat_content_change, specific_enthalpy
# private: the budget's step-field list and time quadrature, checked alone
from aragog.solver._budget import STEP_FIELDS, interval_weights, quadrature_weights
from aragog.solver import FIELD_META, SolverOutput

from _configs import TOY_EARTH, constant_params

EARTH = TOY_EARTH
SOURCES = ("step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J")


@pytest.fixture(scope="module")
def demo_window():
    """The demo on 30 nodes: 1000 yr through the initial transient (rtol 1e-8, end state
    only), then the window [1000, 2000] yr (mantle 28 % molten, cooling through the mush)
    at rtol = atol = 1e-10 with 257 output times. Returns (solver, output)."""
    params = load_config(EARTH, overrides={"mesh.number_of_nodes": 30, "solver.end_time": 1000.0,
                                           "solver.output_points": 2})
    solver = EntropySolver(params)
    solver.initialize()
    solver.solve()
    sp = solver.parameters.solver
    sp.start_time, sp.end_time, sp.output_points, sp.rtol, sp.atol = 1000.0, 2000.0, 257, 1e-10, 1e-10
    solver.reset()
    solver.solve()
    out = solver.get_state(energy_budget=True)
    assert out.status == 0
    return solver, out


def test_budget_closes_on_the_demo(demo_window):
    """|ΔE - Σ sources| <= 1e-6 |ΔE|. The error budget, measured on this window: the heat
    content's S quadrature (32 panels x 4 Gauss points per cell) agrees with 512 panels to
    5e-9; the integrator's defect at rtol 1e-10 is ~1e-8 (at rtol 1e-8 it is ~2e-6); the
    time quadrature on the output times is O(Δt^2) where a cell crosses a kink of the
    bilinear tables or the convective switch: 1.4e-6 with 65 outputs, 3.2e-7 with 129,
    7e-8 with 257 (before commit 01a2f93 changed the CMB node's eddy diffusivity: 3.5e-6,
    1.2e-6, 1.5e-7). So 1e-6 holds with a margin of >6 and would catch a missing source
    (the CMB term is a large fraction of ΔE, radiogenic heating 2e-4 of it) or a wrong sign."""
    _, out = demo_window
    dE = out.step_dE_state_heat_J
    sources = sum(getattr(out, k) for k in SOURCES) + out.step_solver_residual_J
    assert dE < 0 and out.step_dE_F_int_J < 0 < out.step_dE_Q_radio_J
    assert abs(dE - sources) <= 1e-6 * abs(dE)


def test_solver_residual_and_compression_vanish(demo_window):
    """The discrete entropy equation's energy identity holds to rounding at every state; the
    structure did not change between the two solves, so no compression work."""
    _, out = demo_window
    assert abs(out.step_solver_residual_J) <= 1e-12 * abs(out.step_dE_state_heat_J)
    assert out.step_dE_compression_J == 0.0
    assert out.step_dE_Q_tidal_J == 0.0 and out.step_dE_Q_tidal_cons_J == 0.0
    # the structural-mass radiogenic energy differs from the EOS-mass one by the mass ratio
    assert out.step_dE_Q_radio_cons_J == pytest.approx(
        out.step_dE_Q_radio_J * out.M_mantle / np.sum(out.rho_stag * _volumes(demo_window[0])), rel=1e-3)


def _volumes(solver):
    return np.asarray(solver._inputs.mesh.volume_stag)


def test_state_fields_and_profiles(demo_window):
    solver, out = demo_window
    n = out.S_final.size
    for name in ("dSdr_b", "eddy_diff", "cp_basic", "rho_basic"):
        assert getattr(out, name).shape == (n + 1,)
    assert np.all(out.eddy_diff >= 0) and np.any(out.eddy_diff > 0)  # convecting mantle
    assert 0 < out.Phi_global_vol < 1 and np.isfinite(out.E_state) and np.isfinite(out.E_state_cons)
    V = _volumes(solver)
    live = out.rho_stag * V
    cp = solver._bound.call("diagnostics", out.time, solver._y0()).cp
    assert out.Cp_eff == pytest.approx(np.sum(live * cp) / out.M_mantle, rel=1e-12)


def test_history_intervals_sum_to_the_step_totals(demo_window, tmp_path):
    """history(): the latest solve's rows carry the energy of each output interval; they add
    up to get_state's totals; the netCDF file carries every new field."""
    from aragog.io import read_netcdf

    solver, out = demo_window
    history = read_netcdf(solver.write_netcdf(tmp_path / "run.nc"))
    # The solver residual is rounding noise of the large powers: get_state takes it from the
    # compiled "powers" program, history() from the host diagnostics, so the two agree to
    # the rounding of the surface power over the window (1e-12 of it), not relatively.
    noise = 1e-12 * abs(out.step_dE_F_int_J)
    for k in STEP_FIELDS[:7] + ("step_dE_state_heat_J",):
        tol = {"abs": noise} if k == "step_solver_residual_J" else {"rel": 1e-6, "abs": 1e-30}
        assert np.nansum(history.scalars[k][1:]) == pytest.approx(getattr(out, k), **tol), k
    for k in ("E_state", "E_state_cons", "Cp_eff", "Phi_global_vol"):
        assert history.scalars[k][-1] == pytest.approx(getattr(out, k), rel=1e-12)
    for k in ("dSdr_b", "eddy_diff", "cp_basic", "rho_basic"):
        np.testing.assert_allclose(history.profiles[k][-1], getattr(out, k), rtol=1e-12)


def test_new_fields_are_described():
    names = [f.name for f in SolverOutput.__dataclass_fields__.values()]
    for k in STEP_FIELDS + ("Phi_global_vol", "Cp_eff", "E_state", "E_state_cons", "dSdr_b", "eddy_diff",
                            "cp_basic", "rho_basic"):
        assert k in names and k in FIELD_META


def test_no_fluxes_and_no_heating_give_a_zero_budget():
    """An isentrope with both boundaries closed (zero prescribed fluxes), no conduction, no
    melt transport and no heating: nothing moves (the convective flux vanishes at dS/dr = 0),
    so every step energy is 0 up to rounding. (dS/dr of a uniform entropy is ~1e-19 J/kg/K/m
    of either sign after the basic-node interpolation; where it comes out negative, a
    convective flux of ~1e-10 W/m2 moves ~1e-3 J in 1000 yr: > 1e15 J is any real term.)"""
    solver = EntropySolver(load_config(EARTH, overrides={
        "mesh.number_of_nodes": 8, "solver.end_time": 1.0e3, "solver.output_points": 5,
        "energy.conduction": False, "energy.gravitational_separation": False, "energy.mixing": False,
        "energy.radionuclides": False, "energy.tidal": False,
        "boundary_conditions.outer_boundary_condition": 4, "boundary_conditions.outer_boundary_value": 0.0,
        "boundary_conditions.inner_boundary_condition": 2, "boundary_conditions.inner_boundary_value": 0.0}))
    solver.initialize()
    E0 = solver.get_state(energy_budget=True).E_state
    solver.solve()
    out = solver.get_state(energy_budget=True)
    for k in STEP_FIELDS:
        assert abs(getattr(out, k)) <= 1.0, k
    assert out.E_state == E0


def test_budget_of_a_fast_first_call_closes_with_two_output_times(demo_window):
    """The demo's first year from its initial state (30 nodes, rtol = atol = 1e-8): the CMB
    flux falls by orders of magnitude within the window, and the solve reports only its two
    ends. The CMB energy is the core's energy change (exact, aragog.solver._budget.cmb_energy)
    and the grey-body surface energy a quadrature over every step of the integrator
    (``result.trace``), so the budget closes to the integrator's accuracy: measured 1.3e-8
    of the largest term (with the output times alone, before: 7e-4 with 5 of them); 1e-7
    allowed."""
    solver = EntropySolver(load_config(EARTH, overrides={"mesh.number_of_nodes": 30, "solver.end_time": 1.0,
                                                         "solver.output_points": 2}))
    solver.initialize()
    solver.solve()
    out = solver.get_state(energy_budget=True)
    assert out.status == 0, out.message
    assert solver._trace[0].size == out.nsteps + 1 > 100  # the steps, not the 2 outputs
    terms = [getattr(out, k) for k in SOURCES]
    largest = max(abs(x) for x in terms + [out.step_dE_state_heat_J])
    assert abs(out.step_dE_state_heat_J - sum(terms)) <= 1e-7 * largest
    assert out.step_dE_F_cmb_J > 0 > out.step_dE_F_int_J


# ------------------------------------------------------------------ the NumPy pieces
def test_numpy_eos_matches_the_compiled_one(demo_window):
    """EnthalpyEOS mirrors eos.evaluate_phase (T, ρ, c_p): compare with the diagnostics program at
    the cells and the basic nodes of the demo state (mush, melt and solid cells)."""
    solver, out = demo_window
    inputs, options = solver._inputs, solver._options
    eos = EnthalpyEOS(inputs.eos, inputs.material.matprop_smooth_width, options.constant_properties)
    d = solver._bound.call("diagnostics", out.time, solver._y0())
    T, rho, cp = eos.evaluate(np.asarray(inputs.mesh.P_stag), d.S, ("T", "rho", "cp"))
    np.testing.assert_allclose(T, d.T, rtol=1e-13)
    np.testing.assert_allclose(rho, d.rho, rtol=1e-13)
    np.testing.assert_allclose(cp, d.cp, rtol=1e-13)
    assert np.any((d.phi > 0) & (d.phi < 1))  # the mixed-phase c_p is among them
    T_b, _ = eos(np.asarray(inputs.mesh.P_basic), d.S_basic)
    np.testing.assert_allclose(T_b, d.T_basic, rtol=1e-13)


def test_numpy_eos_lines_are_the_broadcast_evaluation(demo_window):
    """NumpyEOS evaluates what depends on P alone at P's shape and what depends on S alone
    at S's (``at_pressure`` / ``evaluate_at``: the budget's isentrope and isobar
    quadratures): the values are those of the points broadcast first, bit for bit."""
    solver, _ = demo_window
    inputs = solver._inputs
    eos = EnthalpyEOS(inputs.eos, inputs.material.matprop_smooth_width, False)
    rng = np.random.default_rng(3)
    keys = ("T", "rho", "cp")
    P = np.sort(rng.uniform(0.0, 1.4e11, 23))[:, None] * np.linspace(0.1, 1.0, 9)  # (23, 9)
    for S in (rng.uniform(1200.0, 3400.0, (23, 1)), rng.uniform(1200.0, 3400.0, (23, 9))):  # solid to melt
        broadcast = eos.evaluate(*np.broadcast_arrays(P, S), keys)
        for got in (eos.evaluate(P, S, keys), eos.evaluate_at(eos.at_pressure(P), S, keys)):
            for a, b in zip(got, broadcast):
                assert a.shape == b.shape and np.array_equal(a, b)


def _plain_enthalpy(eos, P, S, n_panels=64):
    """specific_enthalpy as it was written before its isentrope nodes were kept per mesh:
    every node evaluated at broadcast points."""
    from aragog.physics._heat_content import gauss_panels  # private: the budget's quadrature rule

    P_a, S_a = eos.anchor
    dS, cum = eos.isobar_integrals(n_panels)
    k = np.clip(np.floor((S - S_a) / dS), 0, n_panels - 1).astype(np.int64)
    xs, ws = gauss_panels(S_a + dS * k, S, 1)
    h = cum[k] + np.sum(ws * eos.T(*np.broadcast_arrays(P_a, xs)), axis=-1)
    xp, wp = gauss_panels(np.full(P.shape, P_a), P, n_panels)
    return h + np.sum(wp / eos.density(*np.broadcast_arrays(xp, S[..., None])), axis=-1)


def test_get_state_budget_is_the_direct_evaluation(demo_window):
    """get_state's energy budget (the "powers" program compiled for chunks of states, the
    window's last state taken from get_state's own diagnostics, the enthalpy's isentrope
    nodes kept per mesh) equals the direct evaluation, bit for bit: every quadrature node's
    powers by ``BoundPair.call_many``, both end states evaluated again, the EOS at broadcast
    points. And the batched powers are those of each state's own diagnostics (one call a
    state, :func:`power_columns` in NumPy) to 1e-12 of each column's largest value (of the
    largest power for the residual column, itself a rounding-level difference): the same
    arithmetic, vectorised over the chunk by XLA (measured ~1e-15; a wrong state or a padding
    row in the result would be off by O(1))."""
    # private: the quadrature's node merge and the budget's window integrals, the reference
    from aragog.solver._budget import EnergyBook, _merge_nodes, powers

    solver, out = demo_window
    powers_calls = solver.jit_stats["powers"]["calls"]  # get_state's, before the reference's own
    inputs, options = solver._inputs, solver._options
    t_rec, y_rec, inp = solver._records.latest
    assert inp is inputs and solver._trace is not None
    bound = solver._bound
    ends = [bound.call("diagnostics", float(t_rec[k]), y_rec[k]) for k in (0, -1)]
    t, y = _merge_nodes(t_rec, y_rec, solver._trace)
    P = bound.call_many("powers", t, y)
    one_by_one = powers([bound.call("diagnostics", float(tk), yk) for tk, yk in zip(t, y)])
    assert P.shape == one_by_one.shape == (len(t), 7) and len(t) % 32 != 0  # a padded last chunk
    for col in range(6):  # the six powers, each against its own scale
        np.testing.assert_allclose(P[:, col], one_by_one[:, col], rtol=1e-12,
                                   atol=1e-12 * np.max(np.abs(one_by_one[:, col])))
    # the residual (column 6) is the rounding of a difference of the powers: its scale is theirs
    np.testing.assert_allclose(P[:, 6], one_by_one[:, 6], rtol=0.0, atol=1e-12 * np.max(np.abs(one_by_one)))
    ref = EnergyBook().window_fields(t * float(inputs.scales.t), ends, inputs, options, P)
    for k, v in ref.items():
        assert getattr(out, k) == v, k
    host = EnthalpyEOS(inputs.eos, inputs.material.matprop_smooth_width, False)
    h = _plain_enthalpy(host, np.asarray(inputs.mesh.P_stag), ends[1].S)
    assert np.array_equal(h, specific_enthalpy(host, np.asarray(inputs.mesh.P_stag), ends[1].S))
    assert out.E_state_cons == float(np.sum(np.asarray(inputs.mesh.mass_stag) * h))
    assert out.E_state == float(np.sum(ends[1].rho * np.asarray(inputs.mesh.volume_stag) * h))
    assert powers_calls == -(-len(t) // 32)  # one call per chunk of 32 states, counted


def test_enthalpy_satisfies_dh_dP_at_fixed_S(demo_window):
    """∂h/∂P at fixed S is 1/ρ (the isentrope part). The composite rule on [P_a, P] moves
    its nodes with P, so a centred difference sees the rule's error (~1e-6 of 1/ρ across
    the tables' kinks with 64 panels): 1e-5."""
    solver, _ = demo_window
    inputs = solver._inputs
    eos = EnthalpyEOS(inputs.eos, inputs.material.matprop_smooth_width, False)
    P = np.array([2.0e10, 5.1e10, 1.02e11])
    S = np.array([1500.0, 2400.0, 3100.0])
    dP = 1e6
    dh = (specific_enthalpy(eos, P + dP, S) - specific_enthalpy(eos, P - dP, S)) / (2 * dP)
    np.testing.assert_allclose(dh, 1.0 / eos(P, S)[1], rtol=1e-5)


def test_constant_property_heat_content_enthalpy_and_compression():
    """Constant properties: T = T_ref exp((S - S_ref)/c_p), ρ constant, so
    ∫ ρ T dS = ρ c_p ΔT, h = c_p (T - T_ref) + P/ρ and the compression work is m ΔP/ρ."""
    p = constant_params()  # rho 4000 kg/m3, c_p 1000 J/kg/K, T_ref 1600 K at S_ref 2000 J/kg/K
    eos = EnthalpyEOS(p, constant=True)
    P = np.array([1e9, 5e10])
    S0, S1 = np.array([2000.0, 2100.0]), np.array([2300.0, 1900.0])
    V = np.array([2.0, 3.0])
    T = lambda S: 1600.0 * np.exp((S - 2000.0) / 1000.0)  # noqa: E731
    np.testing.assert_allclose(heat_content_change(eos, P, V, S0, S1), V * 4000.0 * 1000.0 * (T(S1) - T(S0)),
                               rtol=1e-12)
    np.testing.assert_allclose(specific_enthalpy(eos, P, S1), 1000.0 * (T(S1) - 1600.0) + P / 4000.0, rtol=1e-12)
    m = np.array([5.0, 7.0])
    assert compression_work(eos, P, P * 1.01, S1, m) == pytest.approx(np.sum(m * 0.01 * P / 4000.0), rel=1e-12)
    assert compression_work(eos, P, P, S1, m) == 0.0


def test_time_quadrature_is_exact_for_cubics():
    t = np.array([0.0, 0.3, 0.35, 1.0, 1.7, 2.0])
    f = lambda x: 2.0 - x + 3.0 * x**2 - 0.7 * x**3  # noqa: E731
    F = lambda x: 2.0 * x - x**2 / 2 + x**3 - 0.7 * x**4 / 4  # noqa: E731
    assert quadrature_weights(t) @ f(t) == pytest.approx(F(2.0) - F(0.0), rel=1e-13)
    np.testing.assert_allclose(interval_weights(t) @ f(t), F(t[1:]) - F(t[:-1]), rtol=1e-12, atol=1e-14)
    # two outputs: the trapezoid (exact for lines)
    assert quadrature_weights(np.array([1.0, 3.0])) @ np.array([1.0, 5.0]) == pytest.approx(6.0)


def test_window_weights_are_the_interval_weights_summed():
    """quadrature_weights (O(K): a long solve's nodes are its 10^4 steps) gives the columns
    of interval_weights summed, bit for bit, for every node count."""
    rng = np.random.default_rng(0)
    for K in [*range(0, 9), 65, 1000]:
        t = np.cumsum(rng.uniform(0.01, 3.0, K)) * 10.0 ** rng.uniform(-3, 8)
        assert np.array_equal(quadrature_weights(t), interval_weights(t).sum(axis=0))


def test_compression_work_of_a_structure_change(tmp_path):
    """A new structure between two solves (the structure file rewritten with lower gravity,
    so lower pressures): the second get_state reports the adiabatic work at the carried
    entropy, Σ m_old ∫_{P_old}^{P_new} dp/ρ(p, S) < 0 (expansion); the first reports 0."""
    from aragog.structure import AdamsWilliamson

    path = tmp_path / "structure.txt"

    def write(gravity):
        aw = AdamsWilliamson(gravity=gravity)
        r = np.linspace(3.4e6, 6.371e6, 400)
        np.savetxt(path, np.column_stack([r, aw.pressure(r, 6.371e6), aw.density(r, 6.371e6),
                                          np.full_like(r, gravity)]))

    write(9.81)
    solver = EntropySolver(load_config(EARTH, overrides={"mesh.number_of_nodes": 16, "solver.end_time": 5.0,
                                                         "solver.output_points": 5, "mesh.eos_method": 2,
                                                         "mesh.eos_file": str(path)}))
    solver.initialize()
    solver.solve()
    first = solver.get_state(energy_budget=True)
    assert first.step_dE_compression_J == 0.0
    inputs_old = solver._inputs
    write(9.0)
    solver.reset()
    solver.set_initial_entropy(first.S_final)
    solver.solve()
    out = solver.get_state(energy_budget=True)
    P_old, P_new = np.asarray(inputs_old.mesh.P_stag), np.asarray(solver._inputs.mesh.P_stag)
    assert np.all(P_new < P_old)
    eos = EnthalpyEOS(inputs_old.eos, inputs_old.material.matprop_smooth_width, False)
    trapezoid = np.sum(np.asarray(inputs_old.mesh.mass_stag) * (P_new - P_old) * 0.5
                       * (1.0 / eos(P_old, first.S_final)[1] + 1.0 / eos(P_new, first.S_final)[1]))
    assert out.step_dE_compression_J < 0
    assert out.step_dE_compression_J == pytest.approx(trapezoid, rel=1e-3)
