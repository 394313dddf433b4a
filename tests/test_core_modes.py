"""The core modes taken over from the upstream aragog: inner_boundary_condition 3 (prescribed
CMB temperature, core_bc "temperature"), core_bc "gradient" and core_bc "bower2018".

Physics checks use small meshes (6-20 cells) with jitted physics functions; solver checks
use constant_properties.toml at 21 nodes over short windows, one compiled solver per mode
shared by the tests of this module. Each tolerance is stated and justified where used.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from aragog import EntropySolver, eos, load_config
from aragog import physics as ph
from aragog.errors import ConfigError
from aragog.physics import StructureState, thermal_stage
from aragog.solver import _from_config  # private: the solver's config -> physics options and inputs
from aragog.programs._jacobian import banded_jacobian  # private: the solver's colored-JVP band builder
from aragog.solver.backends import band_to_dense
from aragog.structure import build_mesh

from conftest import INPUT
from _configs import constant_params, material_params

CONSTANT = INPUT / "constant_properties.toml"
R, RC, RHO_CORE = 6371e3, 3504e3, 10738.33
NEW_MODES = ("temperature", "gradient", "bower2018")


@functools.lru_cache(maxsize=None)
def _tables():
    return eos.default_table_set().to_jax()


@functools.lru_cache(maxsize=None)
def _mesh(n_nodes, mass_coordinates=True):
    return build_mesh(R, RC, n_nodes, core_density=RHO_CORE, mass_coordinates=mass_coordinates)


def make_inputs(constant=False, n_nodes=7, mass_coordinates=True, **boundary):
    mesh = _mesh(n_nodes, mass_coordinates)
    n = mesh.number_of_cells
    bp = dict(outer_boundary_value=1.0e5, equilibrium_temperature=300.0, emissivity=0.9, param_utbl_const=1e-7,
              cmb_flux=50.0, core_heat_capacity=880.0, tfac_core_avg=1.147, cmb_temperature=4300.0)
    bp.update(boundary)
    return ph.as_float64(ph.PhysicsInputs(
        mesh=mesh, eos=constant_params() if constant else _tables(), material=material_params(),
        transport=ph.TransportInputs(grain_size=1e-3), boundary=ph.BoundaryInputs(**bp),
        heating=ph.earth_heating_inputs(n, tidal=jnp.linspace(1e-10, 3e-10, n)),
        scales=ph.Scales(S=1000.0, t=ph.SECONDS_PER_YEAR, dSdr=1e-4, T=1000.0),
    ))


def options_for(core_bc, outer_boundary_condition=1, constant=False, **kw):
    opts = dict(conduction=True, convection=True, gravitational_separation=not constant, mixing=not constant,
                radionuclides=True, tidal=True, outer_boundary_condition=outer_boundary_condition, utbl=outer_boundary_condition == 1,
                core_bc=core_bc, constant_properties=constant)
    opts.update(kw)
    return ph.PhysicsOptions(**opts)


def random_state(inputs, options, seed=0):
    """Entropy decreasing outward with noise (tables: across solid, mush and melt); the slot
    a CMB gradient in [-3e-4, 1e-4] J/kg/K/m or a T_core 0-400 K above the bottom cell."""
    rng = np.random.default_rng(seed)
    n = inputs.mesh.number_of_cells
    lo, hi, noise = (1900.0, 2300.0, 30.0) if options.constant_properties else (2300.0, 2950.0, 60.0)
    S = jnp.asarray(np.linspace(hi, lo, n) + rng.uniform(-noise, noise, n))
    if options.core_temperature_slot:
        T0 = float(_state(inputs.mesh.P_stag, S, inputs, options).T[0])
        return ph.join_state(S, T0 + rng.uniform(0.0, 400.0), inputs, options)
    return ph.join_state(S, rng.uniform(-3e-4, 1e-4), inputs, options)


_rhs = jax.jit(ph.rhs, static_argnums=3)
_state = jax.jit(ph.material_state, static_argnums=3)  # eager table lookups are slow (op by op)
_diag = jax.jit(ph.diagnostics, static_argnums=3)
_jac = jax.jit(jax.jacfwd(ph.rhs, argnums=1), static_argnums=3)


# ----------------------------------------------------------------------------- configuration


def test_config_selects_the_core_modes():
    base = {"mesh.number_of_nodes": 8}
    for over, core_bc in [({"boundary_conditions.inner_boundary_condition": 3,
                            "boundary_conditions.inner_boundary_value": 4100.0}, "temperature"),
                          ({"boundary_conditions.core_bc": "gradient"}, "gradient"),
                          ({"boundary_conditions.core_bc": "bower2018"}, "bower2018")]:
        params = load_config(CONSTANT, overrides={**base, **over})
        options = _from_config.physics_options(params)
        assert options.core_bc == core_bc
    mesh = _mesh(8)
    params = load_config(CONSTANT, overrides={**base, "boundary_conditions.inner_boundary_condition": 3,
                                              "boundary_conditions.inner_boundary_value": 4100.0})
    inputs = _from_config.physics_inputs(params, mesh, _from_config.load_tables(params))
    assert float(inputs.boundary.cmb_temperature) == 4100.0
    for bad in (0.0, -300.0):
        with pytest.raises(ConfigError, match=r"inner_boundary_value` is a temperature .* must be > 0 K"):
            load_config(CONSTANT, overrides={**base, "boundary_conditions.inner_boundary_condition": 3,
                                             "boundary_conditions.inner_boundary_value": bad})


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
def test_state_layouts():
    inputs = make_inputs(constant=True)  # the layouts do not depend on the EOS mode
    n = inputs.mesh.number_of_cells
    S = jnp.linspace(2600.0, 2500.0, n)
    expected = {"temperature": (n, (1, 1)), "gradient": (n + 1, (1, 2)), "bower2018": (n + 1, (1, 1))}
    for mode, (size, band) in expected.items():
        options = options_for(mode, constant=True)
        assert ph.state_size(n, options) == size and ph.band_widths(options) == band
        y = ph.join_state(S, 3456.0 if mode == "bower2018" else -2e-4, inputs, options)
        S2, slot = ph.split_state(y, inputs, options)
        np.testing.assert_allclose(np.asarray(S2), np.asarray(S), rtol=1e-15)
    # bower2018 without a T_core: the bottom cell's temperature (no CMB flux at the start).
    options = options_for("bower2018", constant=True)
    _, T_core = ph.split_state(ph.join_state(S, None, inputs, options), inputs, options)
    T0 = float(ph.material_state(inputs.mesh.P_stag, S, inputs, options).T[0])
    assert float(T_core) == pytest.approx(T0, rel=1e-15)


# ----------------------------------------------------------------------------- prescribed CMB temperature


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
def test_prescribed_cmb_slope_is_exact_for_quadratics():
    # S quadratic in ξ: the closure's slope (the quadratic through the CMB node and the two
    # lowest cells) is exact up to rounding (1e-10 of the slope: cancellation in the
    # differences of S ~ 3e3 over steps of ~1e5 m).
    mesh = _mesh(11)
    xi_b, xi_s = np.asarray(mesh.xi_basic), np.asarray(mesh.xi_stag)
    x0 = xi_s[0]
    a, b, c = 2800.0, -3e-4, 4e-10
    S_of = lambda x: a + b * (x - x0) + c * (x - x0) ** 2  # noqa: E731
    options = options_for("temperature", outer_boundary_condition=4)
    S_b, dSdr_b = ph.basic_node_entropy(jnp.asarray(S_of(xi_s)), None, None, mesh, options, S_cmb=S_of(xi_b[0]))
    assert float(S_b[0]) == S_of(xi_b[0])
    exact = (b + 2 * c * (xi_b[0] - x0)) * float(mesh.dxidr_basic[0])
    assert float(dSdr_b[0]) == pytest.approx(exact, rel=1e-10)


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("constant", [True, False], ids=["constant", "tables"])
def test_prescribed_cmb_node_temperature(constant):
    # The CMB node sits at T(P_0, S(T_cmb, P_0)) = T_cmb: exact inverse in constant mode
    # (1e-13: exp/log rounding); in table mode 12 safeguarded Newton steps on a bilinear
    # lookup converge to rounding (1e-9 K allows for the tables' ~1e-12 relative rounding).
    options = options_for("temperature", constant=constant)
    for T_cmb in (2500.0, 4300.0):
        inputs = make_inputs(constant=constant, cmb_temperature=T_cmb)
        d = _diag(0.0, random_state(inputs, options, 3), inputs, options)
        assert float(d.T_cmb) == pytest.approx(T_cmb, rel=1e-13, abs=1e-9)
        # F_0 is the flux laws' value at the node (the entropy equation uses it).
        F0 = float(d.jcond[0] + d.jconv[0] + d.jgrav[0] + d.jmix[0])
        assert float(d.F_cmb) == pytest.approx(F0, rel=1e-15)
        assert _identity_error(d, inputs) < 1e-13


def _identity_error(d, inputs):
    """|Σ ρTV dS/dt - (F_0 A_0 - F_N A_N + Σ ρHV)| relative to the magnitudes of the terms
    (every node's |F A| and the heating): rounding is ~N ε, so 1e-13 catches any missing
    term (a wrong factor gives O(1))."""
    A = np.asarray(inputs.mesh.area_basic)
    scale = np.sum(np.abs(np.asarray(d.heat_flux) * A)) + abs(float(d.heating_power))
    resid = float(d.energy_rate) - (float(d.cmb_power) - float(d.surface_power) + float(d.heating_power))
    return abs(resid) / scale


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("outer_boundary_condition", [1, 5])
def test_gradient_mode_energy_identity(outer_boundary_condition):
    inputs = make_inputs(constant=True, outer_boundary_value=1500.0 if outer_boundary_condition == 5 else 1e5)
    options = options_for("gradient", outer_boundary_condition, constant=True)
    for seed in range(3):
        d = _diag(0.1 * seed, random_state(inputs, options, seed), inputs, options)
        assert _identity_error(d, inputs) < 1e-13
        # F_0 = the flux laws at the CMB node with the slot gradient (as "energy_balance").
        assert float(d.dSdr_cmb) == pytest.approx(float(random_state(inputs, options, seed)[0]) * 1e-4, rel=1e-15)


# ----------------------------------------------------------------------------- bower2018


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("constant", [True, False], ids=["constant", "tables"])
def test_bower2018_flux_and_core_energy_identity(constant):
    options = options_for("bower2018", outer_boundary_condition=1, constant=constant)
    inputs = make_inputs(constant=constant)
    mesh = inputs.mesh
    A0 = float(mesh.area_basic[0])
    C_core = float(mesh.core_mass) * 880.0
    for seed in range(3):
        y = random_state(inputs, options, seed)
        d = _diag(0.0, y, inputs, options)
        dy = np.asarray(_rhs(0.0, y, inputs, options))
        T_core = float(y[0]) * 1000.0
        assert float(d.T_core) == pytest.approx(T_core, rel=1e-15)
        dr_half = 0.5 * float(mesh.r_basic[1] - mesh.r_basic[0])
        k0 = float(_state(mesh.P_stag, d.S, inputs, options).k[0])
        F0 = -k0 * (float(d.T[0]) - T_core) / dr_half
        assert float(d.F_cmb) == pytest.approx(F0, rel=1e-13)
        # Core + mantle: C dT_core/dt + Σ ρTV dS/dt = -F_N A_N + Σ ρHV, to rounding. The
        # terms are sums of ~N products of ~1e20 W; 1e-13 of their magnitude is ~N ε with margin.
        dTcore_dt = dy[0] * 1000.0 / ph.SECONDS_PER_YEAR
        lhs = C_core * dTcore_dt + float(d.energy_rate)
        rhs_ = -float(d.surface_power) + float(d.heating_power)
        scale = abs(C_core * dTcore_dt) + abs(float(d.surface_power)) + abs(float(d.heating_power)) \
            + np.sum(np.abs(np.asarray(d.heat_flux) * np.asarray(mesh.area_basic)))
        assert abs(lhs - rhs_) < 1e-13 * scale
        assert float(d.cmb_power) == pytest.approx(F0 * A0, rel=1e-13)


# ----------------------------------------------------------------------------- gradient


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("outer_boundary_condition", [1, 4])
def test_gradient_equals_energy_balance_on_a_radius_mesh(outer_boundary_condition):
    # With ξ = r the upstream's radial stencils are this package's energy-balance stencils;
    # only the surface gradient differs (copied vs quadratic), which enters the flux laws at
    # the surface node, replaced there by the boundary condition. So dy/dt agrees to rounding
    # (1e-12 of the largest rate: the two evaluate the same interpolation in a different order).
    # Constant properties: the stencils do not depend on the EOS, and it compiles fast.
    inputs = make_inputs(constant=True, mass_coordinates=False)
    eb = options_for("energy_balance", outer_boundary_condition, constant=True)
    gr = options_for("gradient", outer_boundary_condition, constant=True)
    for seed in range(3):
        y = random_state(inputs, eb, seed)
        a, b = np.asarray(_rhs(0.0, y, inputs, eb)), np.asarray(_rhs(0.0, y, inputs, gr))
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.max(np.abs(a)))
    # On a mass-coordinate mesh the stencils differ (the mode is not a renamed energy balance).
    inputs = make_inputs(constant=True)
    y = random_state(inputs, eb, 0)
    a, b = np.asarray(_rhs(0.0, y, inputs, eb)), np.asarray(_rhs(0.0, y, inputs, gr))
    assert np.max(np.abs(a - b)) > 1e-6 * np.max(np.abs(a))


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
def test_gradient_layout_round_trip():
    # Exact inverse up to the rounding of N-1 accumulated steps (1e-12 relative).
    mesh = _mesh(21)
    rng = np.random.default_rng(5)
    S = jnp.asarray(np.linspace(3000.0, 2400.0, 20) + rng.uniform(-50, 50, 20))
    y_g = ph.gradient_layout(S, -1.5e-4, mesh)
    assert y_g.shape == (22,) and float(y_g[-1]) == float(S[-1]) and float(y_g[-2]) == float(y_g[-3])
    S2, g0 = ph.entropy_layout(y_g, mesh)
    np.testing.assert_allclose(np.asarray(S2), np.asarray(S), rtol=1e-12)
    assert float(g0) == -1.5e-4


def _upstream_gradient_rhs(t, y_g, inputs, options):
    """The upstream "gradient" ODE in its own layout, y_g = [G_0..G_N, S_surf] scaled by
    (Scales.dSdr, Scales.S) (upstream ``_dSdt_single``, gradient branch): S rebuilt from the
    surface inward, the flux laws on the state's own gradients G (G_N included), and
    dG_j/dt = (dS_j/dt - dS_j-1/dt)/(r_s,j - r_s,j-1), dG_N/dt = dG_N-1/dt, dS_surf/dt =
    dS_N-1/dt, dG_0/dt by the core energy balance."""
    mesh, sc = inputs.mesh, inputs.scales
    G = y_g[:-1] * sc.dSdr
    S_surf = y_g[-1] * sc.S
    S, _ = ph.entropy_layout(jnp.concatenate([G, jnp.reshape(S_surf, (1,))]), mesh)
    r_s, r_b = mesh.r_stag, mesh.r_basic
    S_b = jnp.concatenate([jnp.reshape(S[0] + G[0] * (r_b[0] - r_s[0]), (1,)), S + G[1:] * (r_b[1:] - r_s)])
    st = ph.material_state(jnp.concatenate([mesh.P_stag, mesh.P_basic]), jnp.concatenate([S, S_b]), inputs, options)
    ev = thermal_stage(t, StructureState(S, G[0], S_b, G, st), inputs, options)
    dG = jnp.diff(ev.dSdt) / jnp.diff(r_s)
    rates_G = jnp.concatenate([jnp.reshape(ev.ddSdr_cmb_dt, (1,)), dG, dG[-1:]])
    return jnp.concatenate([rates_G * (sc.t / sc.dSdr), ev.dSdt[-1:] * (sc.t / sc.S)])


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
def test_gradient_mode_rebuilt_entropy_equals_the_entropy_state_run():
    # The upstream gradient ODE is a constant linear change of variables of this package's
    # "gradient" mode (the rebuild telescopes: dS_i/dt = dS_N-1/dt - Σ (dS_k/dt - dS_k-1/dt)),
    # so both integrations follow one trajectory and differ by integration error only. Both
    # run scipy BDF at rtol 1e-10 (analytic dense Jacobians); the rebuilt entropy agrees with
    # the entropy-state run to 1e-8 relative (measured 1e-10: about rtol, 10^2 margin) over
    # 3000 yr of grey-body cooling (the top cell changes by ~780 J/kg/K).
    n_nodes = 21
    inputs = make_inputs(constant=True, n_nodes=n_nodes)
    options = options_for("gradient", outer_boundary_condition=1, constant=True, radionuclides=False, tidal=False)
    mesh = inputs.mesh
    S0 = jnp.asarray(np.linspace(2400.0, 2350.0, n_nodes - 1))
    y0 = ph.join_state(S0, -1e-5, inputs, options)
    S_init, g0 = ph.split_state(y0, inputs, options)
    yg0 = ph.gradient_layout(S_init, g0, mesh)
    yg0 = jnp.concatenate([yg0[:-1] / inputs.scales.dSdr, yg0[-1:] / inputs.scales.S])

    def run(f, y_init):
        fj = jax.jit(lambda t, y: f(t, y, inputs, options))
        jj = jax.jit(jax.jacfwd(lambda t, y: f(t, y, inputs, options), argnums=1))
        sol = solve_ivp(lambda t, y: np.asarray(fj(t, y)), (0.0, 3000.0), np.asarray(y_init), method="BDF",
                        jac=lambda t, y: np.asarray(jj(t, y)), rtol=1e-10, atol=1e-12)
        assert sol.success, sol.message
        return sol.y[:, -1]

    y_end = run(ph.rhs, y0)
    yg_end = run(_upstream_gradient_rhs, yg0)
    S_ref, _ = ph.split_state(jnp.asarray(y_end), inputs, options)
    G_end = yg_end[:-1] * float(inputs.scales.dSdr)
    S_rebuilt, g_rebuilt = ph.entropy_layout(jnp.asarray(np.append(G_end, yg_end[-1] * 1000.0)), mesh)
    assert float(np.max(np.abs(np.asarray(S_ref) - np.asarray(S0)))) > 100.0  # it did evolve
    np.testing.assert_allclose(np.asarray(S_rebuilt), np.asarray(S_ref), rtol=1e-8)
    assert float(g_rebuilt) == pytest.approx(float(y_end[0]) * float(inputs.scales.dSdr), rel=1e-6, abs=1e-12)


# ----------------------------------------------------------------------------- Jacobians


@functools.lru_cache(maxsize=None)
def _jacobian_case(mode, constant):
    outer_boundary_condition = 5 if mode == "gradient" else 1
    inputs = make_inputs(constant=constant, outer_boundary_value=2000.0 if outer_boundary_condition == 5 else 1e5)
    options = options_for(mode, outer_boundary_condition, constant)
    y = random_state(inputs, options, 11)
    return inputs, options, y, np.asarray(_jac(0.0, y, inputs, options))


# Table mode for the two modes whose CMB flux reads the EOS in a new way (the prescribed
# node's flux laws, the conducted flux with k_0 and T_0); the gradient mode's stencils do
# not depend on the EOS (its table-mode compile alone takes ~35 s here).
JACOBIAN_CASES = [("temperature", False), ("temperature", True), ("gradient", True),
                  ("bower2018", False), ("bower2018", True)]


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("mode,constant", JACOBIAN_CASES)
def test_jacobian_matches_finite_differences(mode, constant):
    inputs, options, y, J = _jacobian_case(mode, constant)
    assert np.all(np.isfinite(J))
    h = 1e-6  # y ~ O(1): ΔS = 1e-3 J/kg/K, ΔT_core = 1e-3 K
    f = lambda yy: np.asarray(_rhs(0.0, yy, inputs, options))  # noqa: E731
    J_fd = np.empty_like(J)
    for j in range(y.shape[0]):
        e = jnp.zeros_like(y).at[j].set(h)
        J_fd[:, j] = (f(y + e) - f(y - e)) / (2 * h)
    # Central differences: truncation ~h^2 |f'''|, round-off ~ε |f|/h ~ 1e-10 |f|; 1e-7 of
    # the largest entry bounds both with margin, a wrong derivative is O(1) off.
    np.testing.assert_allclose(J, J_fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(J)))


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("mode,constant", JACOBIAN_CASES)
def test_banded_jacobian_within_the_declared_band(mode, constant):
    # The colored banded Jacobian the solver compiles equals the dense one exactly only if
    # no entry lies outside band_widths (entries outside would be folded into the band).
    inputs, options, y, J = _jacobian_case(mode, constant)
    ml, mu = ph.band_widths(options)
    i, j = np.indices(J.shape)
    assert not np.any(J[(j - i > mu) | (i - j > ml)])
    if not constant:
        return  # the band check above is the table-mode part; the compressed product below
        # does not depend on the EOS (and its table-mode compile takes ~20 s)
    band = jax.jit(banded_jacobian(lambda yy: ph.rhs(0.0, yy, inputs, options), ml, mu))(y)
    np.testing.assert_allclose(band_to_dense(np.asarray(band), ml, mu), J, rtol=1e-13, atol=1e-13 * np.max(np.abs(J)))


# ----------------------------------------------------------------------------- the solver


@functools.lru_cache(maxsize=None)
def _solver(mode, closed=False):
    """A solver of constant_properties.toml at 21 nodes (grey-body surface, 2000 yr) with
    core mode ``mode``; ``closed``: zero surface flux over 100 Myr instead."""
    over = {"mesh.number_of_nodes": 21, "solver.end_time": 2000.0, "solver.output_points": 5,
            "solver.rtol": 1e-9, "solver.atol": 1e-9, "energy.radionuclides": False}
    if mode == "temperature":
        over.update({"boundary_conditions.inner_boundary_condition": 3,
                     "boundary_conditions.inner_boundary_value": 4600.0})
    else:
        over["boundary_conditions.core_bc"] = mode
    if closed:
        # Core + mantle energy is then conserved. Conduction across the bottom half cell
        # (~70 km) is slow (~0.05 W/m2 for 800 K), hence 100 Myr.
        over.update({"boundary_conditions.outer_boundary_condition": 4,
                     "boundary_conditions.outer_boundary_value": 0.0, "solver.end_time": 1.0e8})
    solver = EntropySolver(load_config(CONSTANT, overrides=over))
    solver.initialize()
    return solver


def _run(solver, method, T_core=None):
    solver.parameters.solver.method = method
    solver.reset()
    solver.initialize()
    if T_core is not None:
        solver.set_initial_core_temperature(T_core)
    S_start = solver.get_state().S_final
    solver.solve()
    out = solver.get_state()
    assert out.status == 0, out.message
    assert np.max(np.abs(out.S_final - S_start)) > 0.1  # it did evolve (J/kg/K)
    return out


@pytest.mark.parametrize("mode", NEW_MODES)
def test_solver_methods_agree(mode):
    # cvode, bdf and radau at rtol = atol = 1e-9 on the same problem: the cell entropies agree
    # to 1e-6 relative (each method's global error is ~1e-8 here; 10^2 margin).
    solver = _solver(mode)
    T_core = None
    if mode == "bower2018":
        T_core = 4800.0  # above the bottom cell (~4300 K): heat flows into the mantle
    outs = {m: _run(solver, m, T_core) for m in ("cvode", "bdf", "radau")}
    ref = outs["cvode"]
    for m in ("bdf", "radau"):
        np.testing.assert_allclose(outs[m].S_final, ref.S_final, rtol=1e-6)
        assert outs[m].T_core == pytest.approx(ref.T_core, rel=1e-6)
    if mode == "gradient":
        assert ref.dSdr_cmb is not None
    else:
        assert ref.dSdr_cmb is None


def test_solver_prescribed_cmb_temperature_held_and_changed_without_retrace():
    solver = _solver("temperature")
    _run(solver, "cvode")
    hist = solver.history()
    # T at the CMB node at every output time: the exact inverse of constant mode (1e-12).
    np.testing.assert_allclose(hist.profiles["T_basic"][:, 0], 4600.0, rtol=1e-12)
    before = solver.get_state()
    assert before.F_cmb > 0.0  # the mantle cooled below 4600 K: the core heats it
    compiles = {k: v["compiles"] + v["traces"] for k, v in solver.jit_stats.items()}
    solver.parameters.boundary_conditions.inner_boundary_value = 3900.0
    solver.reset()
    now = solver.get_state()  # the same state with the new value: a smaller CMB flux
    assert now.T_basic[0] == pytest.approx(3900.0, rel=1e-12) and now.F_cmb < before.F_cmb
    solver.solve()  # continues from the current state with the new value
    out = solver.get_state()
    assert out.status == 0 and out.T_basic[0] == pytest.approx(3900.0, rel=1e-12)
    assert {k: v["compiles"] + v["traces"] for k, v in solver.jit_stats.items()} == compiles


@pytest.mark.parametrize("mode", ["energy_balance", "quasi_steady", "bower2018"])
def test_budget_cmb_energy_is_the_core_energy_change(mode):
    """step_dE_F_cmb_J of the modes whose state carries the core's energy is that energy's
    change (aragog.solver._budget.cmb_energy: exact whatever the output times, here 5 over
    2000 yr), and it equals the time integral of F_0 A_0 along the integrator's steps (the
    powers at every step end of ``result.trace``, cubic quadrature) to the integrator's
    accuracy: measured 1e-9 to 4e-8 relative at rtol 1e-9; 1e-6 allowed. The budget then
    closes: |ΔE - Σ sources| <= 1e-7 of the largest term (measured <= 3e-9)."""
    from aragog.solver._budget import quadrature_weights  # private: the budget's quadrature along the steps

    solver = _solver(mode)
    _run(solver, "cvode", 4800.0 if mode == "bower2018" else None)
    out = solver.get_state(energy_budget=True)
    t, y = solver._trace
    assert t.size == out.nsteps + 1
    P = solver._bound.call_many("powers", t, y)
    along_steps = quadrature_weights(t * float(solver._inputs.scales.t)) @ P[:, 1]
    assert abs(out.step_dE_F_cmb_J) > 0.0
    assert out.step_dE_F_cmb_J == pytest.approx(along_steps, rel=1e-6)
    terms = [out.step_dE_F_int_J, out.step_dE_F_cmb_J, out.step_dE_Q_radio_J, out.step_dE_Q_tidal_J]
    largest = max(abs(x) for x in terms + [out.step_dE_state_heat_J])
    assert abs(out.step_dE_state_heat_J - sum(terms)) <= 1e-7 * largest


def test_solver_bower2018_conserves_core_plus_mantle_energy():
    # Closed system (surface flux 0, no heating, constant properties): E = M_c c_c T_core +
    # Σ ρ V c_p T_i is conserved by the ODE (ρ T dS = ρ c_p dT; at every RHS call to rounding,
    # see test_bower2018_flux_and_core_energy_identity). E is nonlinear in S (T = T_ref
    # exp((S - S_ref)/c_p)), so the integrator keeps it to its error only: the drift over
    # 100 Myr stays below 1e-5 of the energy the core gave the mantle (measured 1.3e-6 with
    # CVODE at rtol = atol = 1e-9).
    solver = _solver("bower2018", closed=True)
    solver.parameters.solver.method = "cvode"
    solver.reset()
    solver.initialize()
    solver.set_initial_core_temperature(4800.0)
    pm = solver.parameters.phase_mixed
    C_core = float(solver._inputs.mesh.core_mass) * float(solver.parameters.boundary_conditions.core_heat_capacity)
    V = np.asarray(solver._inputs.mesh.volume_stag)

    def energy(o):
        return C_core * o.T_core + float(np.sum(pm.const_rho * V * pm.const_Cp * o.T_stag))

    out0 = solver.get_state()
    assert out0.T_core == 4800.0
    solver.solve()
    out1 = solver.get_state()
    assert out1.status == 0, out1.message
    exchanged = C_core * (out0.T_core - out1.T_core)
    assert exchanged > 0.0
    assert abs(energy(out1) - energy(out0)) < 1e-5 * exchanged
    # A second solve carries T_core over (hot start).
    solver.solve()
    assert solver.get_state().T_core < out1.T_core


@pytest.mark.parametrize("mode", NEW_MODES)
def test_blocks_compile_mode_matches_fused(mode):
    # compile_mode "blocks" records the same physics functions (structure/thermal stages):
    # per evaluation the two agree to rounding (1e-13 of each array's largest entry, the
    # tolerance of tests/test_blocks.py: XLA contracts the arithmetic differently).
    over = {"mesh.number_of_nodes": 12, "energy.radionuclides": False}
    if mode == "temperature":
        over.update({"boundary_conditions.inner_boundary_condition": 3,
                     "boundary_conditions.inner_boundary_value": 4600.0})
    else:
        over["boundary_conditions.core_bc"] = mode
    bound = {}
    for compile_mode in ("fused", "blocks"):
        solver = EntropySolver(load_config(CONSTANT, overrides={**over, "solver.compile_mode": compile_mode}))
        solver.initialize()
        if mode == "bower2018":
            solver.set_initial_core_temperature(4700.0)
        bound[compile_mode] = (solver._bound, solver._y0())
    (F, y0), (B, _) = bound["fused"], bound["blocks"]
    assert (B.n, B.ml, B.mu) == (F.n, F.ml, F.mu)
    rng = np.random.default_rng(3)
    for k in range(3):
        y = y0 * (1.0 + 0.03 * rng.standard_normal(y0.shape))
        for a, b in [(B.rhs(0.1 * k, y), F.rhs(0.1 * k, y)), (B.jac(0.1 * k, y), F.jac(0.1 * k, y))]:
            a, b = np.asarray(a), np.asarray(b)
            assert np.max(np.abs(a - b)) <= 1e-13 * np.max(np.abs(b))
        db, df = B.call("diagnostics", 0.0, y), F.call("diagnostics", 0.0, y)
        for field in ("T_core", "T_cmb", "F_cmb", "dSdr_cmb"):
            assert float(getattr(db, field)) == pytest.approx(float(getattr(df, field)), rel=1e-12), field


def test_solver_gradient_slot_is_the_energy_balance_slot():
    # "gradient" keeps the energy-balance slot semantics: set_initial_dSdr_cmb sets it, the
    # output reports it, and a solve carries it over.
    solver = _solver("gradient")
    solver.parameters.solver.method = "cvode"
    solver.reset()
    solver.initialize()
    solver.set_initial_dSdr_cmb(-2.5e-5)
    out = solver.get_state()
    assert out.dSdr_cmb == pytest.approx(-2.5e-5, rel=1e-15)
    assert solver._y0()[0] * float(solver._inputs.scales.dSdr) == pytest.approx(-2.5e-5, rel=1e-15)
    solver.solve()
    end = solver.get_state()
    assert end.status == 0 and end.dSdr_cmb != out.dSdr_cmb
    assert solver._y0()[0] * float(solver._inputs.scales.dSdr) == pytest.approx(end.dSdr_cmb, rel=1e-15)
