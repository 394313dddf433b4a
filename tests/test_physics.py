"""aragog.physics: state layout, energy identity, boundary conditions, flux laws,
Jacobian (vs finite differences and its band), no retrace on new input values.

Meshes are small (N = 5-6 cells, plus one N = 100 run) with the bundled EOS tables.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import eos
from aragog import physics as ph
# private: the RF_depth helper of the right-hand side, checked alone
from aragog.physics._rhs import _rheological_front_depth
from aragog.structure import build_mesh
from _configs import constant_params, material_params

# the physics functions are pure: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

R, RC, RHO_CORE = 6371e3, 3504e3, 10738.33
# The core modes "temperature", "gradient", "bower2018" are checked in tests/test_core_modes.py.
ALL_COMBOS = [(s, c) for s in ph.SURFACE_BCS for c in ("flux", "quasi_steady", "energy_balance")]


@functools.lru_cache(maxsize=None)
def _tables():
    return eos.default_table_set().to_jax()


@functools.lru_cache(maxsize=None)
def _mesh(n_nodes=7, mass_coordinates=True, outer_radius=R):
    return build_mesh(outer_radius, RC, n_nodes, core_density=RHO_CORE, mass_coordinates=mass_coordinates)


def make_inputs(constant=False, n_nodes=7, mass_coordinates=True, outer_radius=R, boundary=None, transport=None):
    mesh = _mesh(n_nodes, mass_coordinates, outer_radius)
    n = mesh.number_of_cells
    bp = dict(outer_boundary_value=1.0e5, equilibrium_temperature=300.0, emissivity=0.9, param_utbl_const=1e-7,
              cmb_flux=50.0, core_heat_capacity=880.0, tfac_core_avg=1.147)
    bp.update(boundary or {})
    tp = dict(kappah_floor=10.0, eddy_diffusivity_thermal=1.0, eddy_diffusivity_chemical=1.0, grain_size=1e-3)
    tp.update(transport or {})
    return ph.as_float64(ph.PhysicsInputs(
        mesh=mesh,
        eos=constant_params() if constant else _tables(),
        material=material_params(),
        transport=ph.TransportInputs(**tp),
        boundary=ph.BoundaryInputs(**bp),
        heating=ph.earth_heating_inputs(n, tidal=jnp.linspace(1e-10, 3e-10, n)),
        scales=ph.Scales(S=1000.0, t=ph.SECONDS_PER_YEAR, dSdr=1e-4),
    ))


def all_on(outer_boundary_condition=1, core_bc="energy_balance", constant=False, **kw):
    opts = dict(conduction=True, convection=True, gravitational_separation=True, mixing=True,
                radionuclides=True, tidal=True, outer_boundary_condition=outer_boundary_condition, utbl=outer_boundary_condition == 1,
                core_bc=core_bc, constant_properties=constant)
    opts.update(kw)
    return ph.PhysicsOptions(**opts)


def random_state(inputs, options, seed=0):
    """Entropy decreasing outward (convecting) with noise; in table mode it spans solid,
    mush and melt (S_sol ~ 1930-2760, S_liq ~ 2490-3130 J/kg/K from surface to CMB)."""
    rng = np.random.default_rng(seed)
    n = inputs.mesh.number_of_cells
    if options.constant_properties:
        S = np.linspace(2300.0, 1900.0, n) + rng.uniform(-30, 30, n)
    else:
        S = np.linspace(2950.0, 2300.0, n) + rng.uniform(-60, 60, n)
    return ph.join_state(jnp.asarray(S), rng.uniform(-3e-4, 1e-4), inputs, options)


_diag = jax.jit(ph.diagnostics, static_argnums=3)
_rhs = jax.jit(ph.rhs, static_argnums=3)
_state = jax.jit(ph.material_state, static_argnums=3)  # eager EOS calls are slow (op by op)


# ----------------------------------------------------------------------------- state layout


@pytest.mark.parametrize("core_bc", ph.CORE_BCS)
def test_state_layout_round_trip(core_bc):
    options = all_on(core_bc=core_bc)
    inputs = make_inputs()
    n = inputs.mesh.number_of_cells
    S = jnp.linspace(2500.0, 2400.0, n)
    y = ph.join_state(S, -2e-4, inputs, options)
    assert y.shape == (ph.state_size(n, options),)
    S2, slot = ph.split_state(y, inputs, options)
    np.testing.assert_allclose(np.asarray(S2), np.asarray(S), rtol=1e-15)
    if core_bc == "bower2018":  # the T_core slot [K] (Scales.T = 1000 K), tridiagonal
        assert y.shape == (n + 1,) and float(slot) == pytest.approx(-2e-4) and ph.band_widths(options) == (1, 1)
    elif core_bc in ("energy_balance", "gradient"):
        assert y.shape == (n + 1,) and float(y[0]) == pytest.approx(-2.0) and float(slot) == pytest.approx(-2e-4)
        assert ph.band_widths(options) == (1, 2)
        # None: the gradient of the two lowest cells.
        y0 = ph.join_state(S, None, inputs, options)
        r = inputs.mesh.r_stag
        assert float(y0[0]) * 1e-4 == pytest.approx(float((S[1] - S[0]) / (r[1] - r[0])), rel=1e-14)
    else:
        assert slot is None and y.shape == (n,) and ph.band_widths(options) == (1, 1)


def test_options_are_validated_and_hashable():
    with pytest.raises(ValueError, match="outer_boundary_condition"):
        ph.PhysicsOptions(outer_boundary_condition=2)
    with pytest.raises(ValueError, match="core_bc"):
        ph.PhysicsOptions(core_bc="core_module")
    assert hash(all_on()) == hash(all_on()) and all_on() == all_on()


def test_basic_node_interpolation_is_linear_in_xi():
    inputs, options = make_inputs(), all_on(outer_boundary_condition=4, core_bc="flux")
    mesh = inputs.mesh
    # S linear in ξ: interpolation and extrapolation are exact, gradient = slope × dξ/dr.
    a, b = 3000.0, -2e-4
    S = a + b * mesh.xi_stag
    S_b, dSdr_b = ph.basic_node_entropy(S, None, None, mesh, options)
    np.testing.assert_allclose(np.asarray(S_b), np.asarray(a + b * mesh.xi_basic), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(dSdr_b), np.asarray(b * mesh.dxidr_basic), rtol=1e-9)


# ----------------------------------------------------------------------------- energy identity


def _identity_error(d, inputs):
    """|Σ ρTV dS/dt - (F_0 A_0 - F_N A_N + Σ ρHV)| relative to the sum of the magnitudes of
    the terms that enter it (the flux of every node times its area, and the heating)."""
    A = np.asarray(inputs.mesh.area_basic)
    scale = np.sum(np.abs(np.asarray(d.heat_flux) * A)) + abs(float(d.heating_power))
    resid = float(d.energy_rate) - (float(d.cmb_power) - float(d.surface_power) + float(d.heating_power))
    return abs(resid) / scale



@pytest.mark.parametrize("constant", [False, True], ids=["tables", "constant"])
@pytest.mark.parametrize("outer_boundary_condition,core_bc", ALL_COMBOS)
def test_energy_identity(outer_boundary_condition, core_bc, constant):
    inputs = make_inputs(constant=constant, boundary=dict(outer_boundary_value=2500.0 if outer_boundary_condition == 5 else 1.0e5))
    options = all_on(outer_boundary_condition, core_bc, constant)
    for seed in range(3):
        d = _diag(0.3 * seed, random_state(inputs, options, seed), inputs, options)
        # Telescoping sum: every cell's ρTV dS/dt reproduces its flux difference to a few ulp
        # of the |F A| involved, so the residual is ~N ε ≈ 1e-15 of the scale; 1e-13 is tight
        # enough to catch any missing term (a single wrong factor gives O(1)).
        err = _identity_error(d, inputs)
        assert err < 1e-13, (seed, err)
        assert np.all(np.isfinite(np.asarray(d.dSdt)))


def test_energy_identity_radius_mesh():
    inputs = make_inputs(mass_coordinates=False)
    options = all_on(1, "energy_balance")
    d = _diag(0.0, random_state(inputs, options, 7), inputs, options)
    assert _identity_error(d, inputs) < 1e-13


# ----------------------------------------------------------------------------- boundary conditions


@pytest.mark.parametrize("constant", [False, True], ids=["tables", "constant"])
@pytest.mark.parametrize("T_s", [400.0, 1700.0, 2200.0, 3500.0])
def test_prescribed_surface_temperature_is_enforced(T_s, constant):
    inputs = make_inputs(constant=constant, boundary=dict(outer_boundary_value=T_s))
    options = all_on(5, "quasi_steady", constant)
    d = _diag(0.0, random_state(inputs, options, 1), inputs, options)
    # Table mode: the safeguarded Newton inversion converges to ~1 ulp of T (the lookup is
    # linear in S inside a table cell); 1e-12 relative. Constant mode: exact log/exp.
    assert float(d.T_surface) == pytest.approx(T_s, rel=1e-12)
    # F_N is the flux law at the surface node (conduction + convection; grav/mix are 0 there).
    assert float(d.F_surface) == pytest.approx(float(d.jcond[-1] + d.jconv[-1]), rel=1e-14)
    assert float(d.jgrav[-1]) == 0.0 and float(d.jmix[-1]) == 0.0


def test_surface_entropy_inversion_across_phase_boundaries():
    inputs = make_inputs()
    options = all_on(5)
    P = jnp.linspace(0.0, 140e9, 15)
    probe = _state(P, jnp.full_like(P, 2000.0), inputs, options)
    # Targets on and around the solidus and liquidus (where the EOS blends phases) and far
    # inside each phase.
    targets = jnp.concatenate([probe.T_sol + dT for dT in (-30.0, -0.5, 0.0, 0.5, 30.0)] +
                              [probe.T_liq + dT for dT in (-30.0, -0.5, 0.0, 0.5, 30.0)] +
                              [jnp.full_like(P, 500.0), jnp.full_like(P, 5000.0)])
    PP = jnp.tile(P, 12)
    S = jax.jit(ph.surface_entropy_for_temperature, static_argnums=3)(targets, PP, inputs, options)
    T = _state(PP, S, inputs, options).T
    # Converged to rounding (see INVERSION_ITERATIONS); 1e-12 relative in T.
    np.testing.assert_allclose(np.asarray(T), np.asarray(targets), rtol=1e-12)


def test_surface_entropy_constant_mode_is_analytic():
    inputs, options = make_inputs(constant=True), all_on(5, constant=True)
    S = ph.surface_entropy_for_temperature(jnp.array([900.0, 1600.0, 4000.0]), 0.0, inputs, options)
    T = _state(0.0, S, inputs, options).T
    np.testing.assert_allclose(np.asarray(T), [900.0, 1600.0, 4000.0], rtol=1e-15)
    assert float(S[1]) == pytest.approx(2000.0, rel=1e-15)  # T_ref at S_ref


@pytest.mark.parametrize("utbl", [False, True])
def test_grey_body_surface_flux(utbl):
    inputs = make_inputs(constant=True)
    options = all_on(1, "flux", True, utbl=utbl)
    d = _diag(0.0, random_state(inputs, options, 2), inputs, options)
    T_s, c = float(d.T_surface), 1e-7
    T_rad = float(d.T_radiative)
    if utbl:
        # Bower et al. 2018 eq. 18: T_s = T_rad + c T_rad^3; the sinh form is accurate to ~1e-15.
        assert T_rad + c * T_rad**3 == pytest.approx(T_s, rel=1e-13)
        assert T_rad < T_s
    else:
        assert T_rad == T_s
    expected = 0.9 * ph.SIGMA_SB * (T_rad**4 - 300.0**4)
    assert float(d.F_surface) == pytest.approx(expected, rel=1e-14)


def test_utbl_root_limits():
    T = jnp.array([300.0, 1500.0, 3000.0, 6000.0])
    for c in (1e-12, 1e-9, 1e-7, 1e-5):
        x = np.asarray(ph.utbl_radiating_temperature(T, c))
        np.testing.assert_allclose(x + c * x**3, np.asarray(T), rtol=1e-13)  # cubic residual
    np.testing.assert_array_equal(np.asarray(ph.utbl_radiating_temperature(T, 0.0)), np.asarray(T))
    # Differentiable, also at c = 0 (guarded branch).
    g = jax.grad(lambda c: ph.utbl_radiating_temperature(3000.0, c))(0.0)
    assert np.isfinite(float(g))


def test_prescribed_surface_and_cmb_flux():
    inputs = make_inputs(boundary=dict(outer_boundary_value=1234.5, cmb_flux=67.8))
    options = all_on(4, "flux")
    d = _diag(0.0, random_state(inputs, options, 3), inputs, options)
    assert float(d.F_surface) == 1234.5 and float(d.F_cmb) == 67.8


@pytest.mark.parametrize("constant", [False, True], ids=["tables", "constant"])
def test_quasi_steady_core_energy_balance(constant):
    """The core (heat capacity M_c c_c f) loses F_0 A_0 and cools in step with cell 0:
    M_c c_c f (T_0/c_p,0) dS_0/dt = -F_0 A_0."""
    inputs = make_inputs(constant=constant)
    options = all_on(1, "quasi_steady", constant)
    d = _diag(0.0, random_state(inputs, options, 4), inputs, options)
    mesh, bp = inputs.mesh, inputs.boundary
    core = float(mesh.core_mass * bp.core_heat_capacity * bp.tfac_core_avg * d.T[0] / d.cp[0] * d.dSdt[0])
    # Algebraic identity of the formula: rounding only (a few ulp of F_1 A_1, 1e-12 margin).
    assert core == pytest.approx(-float(d.cmb_power), rel=1e-12)


@pytest.mark.parametrize("mass_coordinates", [True, False])
def test_energy_balance_core(mass_coordinates):
    """S_b0 = S_0 + (dS/dr)_cmb (r_0 - r_s0) changes at the core's rate
    dS_b0/dt = -F_0 A_0 c_p,b0/(c_c T_b0 f M_c), and F_0 is the flux law at the CMB node."""
    inputs = make_inputs(mass_coordinates=mass_coordinates)
    options = all_on(1, "energy_balance")
    y = random_state(inputs, options, 5)
    d = _diag(0.0, y, inputs, options)
    mesh, bp, sc = inputs.mesh, inputs.boundary, inputs.scales
    dy = _rhs(0.0, y, inputs, options)
    ddSdr = float(dy[0]) * float(sc.dSdr / sc.t)
    dSb0 = float(d.dSdt[0]) + float(mesh.r_basic[0] - mesh.r_stag[0]) * ddSdr
    cp_b0 = float(_state(mesh.P_basic[0], d.S_basic[0], inputs, options).cp)
    core = -float(d.cmb_power) * cp_b0 / float(bp.core_heat_capacity * d.T_basic[0] * bp.tfac_core_avg * mesh.core_mass)
    # Rounding of the two-term difference dS_0/dt - dS_b0/dt (both ~|dS_0/dt|): 1e-10 abs-rel.
    assert dSb0 == pytest.approx(core, rel=1e-9, abs=1e-10 * abs(float(d.dSdt[0])))
    assert float(d.F_cmb) == pytest.approx(float(d.jcond[0] + d.jconv[0]), rel=1e-14)
    S_b0 = float(d.S[0] + d.dSdr_cmb * (mesh.r_basic[0] - mesh.r_stag[0]))
    assert float(d.S_basic[0]) == pytest.approx(S_b0, rel=1e-15)


# ----------------------------------------------------------------------------- flux laws


def test_convection_vanishes_where_stable():
    inputs = make_inputs(n_nodes=11)
    options = all_on(4, "flux")
    n = inputs.mesh.number_of_cells
    S = np.linspace(2900.0, 2400.0, n)
    S[3:6] = [2600.0, 2650.0, 2700.0]  # a stably stratified layer (dS/dr > 0)
    d = _diag(0.0, ph.join_state(jnp.asarray(S), None, inputs, options), inputs, options)
    _, dSdr = ph.basic_node_entropy(jnp.asarray(S), None, None, inputs.mesh, options)
    stable = np.asarray(dSdr) >= 0
    assert stable.sum() >= 2 and (~stable).sum() >= 2
    assert np.all(np.asarray(d.jconv)[stable] == 0.0)
    assert np.all(np.asarray(d.jconv)[~stable][1:-1] > 0.0)


def test_gravitational_separation_and_mixing_only_in_the_mush():
    inputs = make_inputs(n_nodes=21)
    options = all_on(4, "flux")
    n = inputs.mesh.number_of_cells
    # Solid at depth, mush in the middle, melt at the top; S decreases outward except at the
    # jump to the melt (grav-sep needs no gradient; mixing needs dS/dr < 0 for kappa_c > 0).
    S = jnp.linspace(2600.0, 2350.0, n)
    S = S.at[-4:].set(jnp.linspace(2900.0, 2850.0, 4))
    d = _diag(0.0, ph.join_state(S, None, inputs, options), inputs, options)
    st = _state(inputs.mesh.P_basic, d.S_basic, inputs, options)
    g = np.asarray((d.S_basic - st.S_sol) / (st.S_liq - st.S_sol))
    jgrav, jmix = np.asarray(d.jgrav), np.asarray(d.jmix)
    assert jgrav[0] == jgrav[-1] == 0.0 and jmix[0] == jmix[-1] == 0.0
    outside = (g < -0.2) | (g > 1.2)  # beyond ~19 smoothing widths the tanh weight is exactly 0
    inside = (g > 0.05) & (g < 0.95)
    inside[[0, -1]] = False
    assert outside.sum() >= 3 and inside.sum() >= 3
    assert np.all(jgrav[outside] == 0.0) and np.all(jmix[outside] == 0.0)
    assert np.all(jgrav[inside] > 0.0)  # melt lighter than solid: latent heat carried upward
    convecting = np.asarray(ph.basic_node_entropy(S, None, None, inputs.mesh, options)[1]) < 0
    assert np.all(jmix[inside & convecting] != 0.0)
    assert np.all(jmix[~convecting] == 0.0)  # no eddy mixing without convection (kappa_c = 0)


def test_constant_mode_has_no_two_phase_fluxes():
    inputs, options = make_inputs(constant=True), all_on(1, "energy_balance", True)
    d = _diag(0.0, random_state(inputs, options), inputs, options)
    assert not np.any(np.asarray(d.jgrav)) and not np.any(np.asarray(d.jmix))
    assert float(d.Phi_global) == 1.0


def test_switched_off_terms_are_zero():
    inputs = make_inputs()
    options = ph.PhysicsOptions(conduction=True, convection=False, outer_boundary_condition=4, core_bc="flux")
    d = _diag(0.0, random_state(inputs, options), inputs, options)
    assert not np.any(np.asarray(d.jconv)) and not np.any(np.asarray(d.jgrav)) and not np.any(np.asarray(d.jmix))
    assert not np.any(np.asarray(d.H))
    np.testing.assert_array_equal(np.asarray(d.heat_flux[1:-1]), np.asarray(d.jcond[1:-1]))


def test_conduction_of_an_isentrope_is_the_adiabatic_flux():
    # Uniform S: dS/dr = 0, J_cond = -k (dT/dP)_S dP/dr = k (dT/dP)_S ρ g (outward), no convection.
    inputs, options = make_inputs(constant=True), all_on(4, "flux", True)
    n = inputs.mesh.number_of_cells
    d = _diag(0.0, ph.join_state(jnp.full((n,), 2100.0), None, inputs, options), inputs, options)
    p, mesh = inputs.eos, inputs.mesh
    T = np.asarray(d.T_basic)
    dTdP = float(p.const_alpha) * T / (float(p.const_rho) * float(p.const_Cp))
    expected = float(p.const_cond) * dTdP * np.asarray(mesh.rho_basic * mesh.g_basic)
    np.testing.assert_allclose(np.asarray(d.jcond), expected, rtol=1e-13)
    # No convection: zero up to the rounding of S through the state's scale (y = S / 1000,
    # read back as y * 1000 in fused code with or without FMA): |dS/dr| ~ 1e-18 J/kg/K/m at
    # the lowest nodes, times rho T kappa_h ~ 1e8, is ~1e-10 W/m2 against a conductive
    # flux of ~1e-3 W/m2.
    assert np.all(np.abs(np.asarray(d.jconv)) <= 1e-9)


def test_mixing_length_velocity_regimes():
    st = eos.evaluate_constant(constant_params(const_log10visc=2.0), 0.0, jnp.array([2000.0, 2000.0]))
    g, l = 10.0, jnp.array([1e-3, 1e5])
    dSdr = jnp.array([-1e-4, -1e-4])
    kappa = np.asarray(ph.mixing_length_diffusivity(st, dSdr, g, l))
    vp = g * 1e-5 * 1600.0 * 1e-4 / 1000.0
    nu = 100.0 / 4000.0
    # Tiny l: Re << 9/8, purely viscous: kappa = v_p l^4/(18 ν) (the inviscid weight ~e^-200).
    assert kappa[0] == pytest.approx(vp * 1e-12 / (18 * nu), rel=1e-12)
    # Large l: Re >> 9/8, purely inviscid: kappa = (l/4) sqrt(v_p) l.
    assert kappa[1] == pytest.approx(0.25 * 1e10 * np.sqrt(vp), rel=1e-12)
    # Stable or neutral: zero, with a finite derivative at dS/dr = 0 (guarded sqrt).
    assert float(ph.mixing_length_diffusivity(st, jnp.zeros(2), g, l)[1]) == 0.0
    der = jax.jacfwd(lambda s: ph.mixing_length_diffusivity(st, s, g, l))(jnp.zeros(2))
    assert np.all(np.isfinite(np.asarray(der)))


def test_eddy_diffusivity_constant_convention():
    kappa, dSdr = jnp.array([5.0, 5.0]), jnp.array([-1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(ph.eddy_diffusivity(kappa, 2.0, dSdr)), [10.0, 0.0])
    np.testing.assert_array_equal(np.asarray(ph.eddy_diffusivity(kappa, -3.0, dSdr)), [3.0, 0.0])


def test_permeability_branches():
    d = 1e-3
    K = lambda p: float(ph.permeability(p, d)) / d**2  # noqa: E731
    # Far (> 19 blend widths) from the crossovers each branch holds to rounding.
    assert K(0.02) == pytest.approx(0.02**2 / (1000 * 0.98**2), rel=1e-12)
    assert K(0.3) == pytest.approx(5 / 7 * 0.3**4.5, rel=1e-12)
    assert K(0.99) == pytest.approx(2 / 9, rel=1e-12)
    assert K(0.0) == 0.0 and np.isfinite(K(1.0))
    # Continuous; increasing through the lower crossover. Above 0.7716 Rumpf-Gupte exceeds
    # Stokes, so the tanh blend towards Stokes overshoots 2/9 by at most ~1.1 % (at p ~ 0.78)
    # before settling on it: bounded here.
    p = jnp.linspace(0.0, 1.0, 20001)
    Kp = np.asarray(ph.permeability(p, d)) / d**2
    low = np.asarray(p) < 0.5
    assert np.all(np.diff(Kp[low]) >= 0)
    assert Kp.max() <= (2 / 9) * 1.012
    assert np.max(np.abs(np.diff(Kp))) < 1e-3  # no jump (the largest step of the 5e-5 grid)
    dK = jax.vmap(jax.grad(lambda x: ph.permeability(x, d)))(p)
    assert np.all(np.isfinite(np.asarray(dK)))


def test_mixture_buoyancy_scales_the_matrix_branches_only():
    """separation_buoyancy = "mixture" (McKenzie 1984): BKC and RG times 1 - p, Stokes not;
    exact on each branch far from the crossovers, and 1 - p on the whole matrix part."""
    d = 1e-3
    K = lambda p, f=1.0: float(ph.permeability(p, d, f)) / d**2  # noqa: E731
    for p in (0.02, 0.3):  # pure BKC, pure RG
        assert K(p, 1.0 - p) == pytest.approx((1.0 - p) * K(p), rel=1e-14)
    assert K(0.99, 0.01) == pytest.approx(2 / 9, rel=1e-12)  # Stokes: no factor


def test_mixture_drag_viscosity_divides_the_separation_by_the_nodes_viscosity():
    """separation_viscosity = "mixture" (a static option): the drag viscosity is each
    basic node's own viscosity instead of the melt's, so J_grav scales by η_liq/η_node at
    every node (the donor weights are the same: the flux keeps its sign), exactly up to
    rounding; the other fluxes do not change."""
    options = all_on(1, "energy_balance")
    mixture = all_on(1, "energy_balance", separation_viscosity="mixture")
    melt = make_inputs(n_nodes=12)
    y = random_state(melt, options, 3)
    d0, d1 = _diag(0.0, y, melt, options), _diag(0.0, y, melt, mixture)
    s = jax.jit(ph.structure_stage, static_argnums=2)(y, melt, options)
    visc_basic = np.asarray(s.split()[1].visc)
    j0, j1 = np.asarray(d0.jgrav), np.asarray(d1.jgrav)
    assert np.count_nonzero(j0) >= 3  # the random state has a mush
    ratio = float(melt.material.phase_liquid.viscosity) / visc_basic
    np.testing.assert_allclose(j1, j0 * ratio, rtol=1e-12, atol=0.0)
    assert np.any(ratio < 0.5)  # a node past the rheological transition: a real change
    for name in ("jcond", "jconv", "jmix"):
        np.testing.assert_array_equal(np.asarray(getattr(d1, name)), np.asarray(getattr(d0, name)))


# ----------------------------------------------------------------------------- diagnostics


def test_diagnostics_bookkeeping():
    inputs = make_inputs()
    options = all_on(1, "energy_balance")
    y = random_state(inputs, options, 6)
    d = _diag(0.0, y, inputs, options)
    mesh = inputs.mesh
    m = np.asarray(mesh.mass_stag)
    assert float(d.M_mantle) == pytest.approx(float(mesh.mantle_mass), rel=1e-12)
    assert float(d.M_liquid + d.M_solid) == pytest.approx(float(d.M_mantle), rel=1e-15)
    phi_global = jax.jit(ph.global_melt_fraction, static_argnums=2)(y, inputs, options)
    assert float(d.Phi_global) == pytest.approx(float(phi_global), rel=1e-15)
    assert float(d.E_th) == pytest.approx(float(np.sum(m * np.asarray(d.cp * d.T))), rel=1e-14)
    assert float(d.T_core) == pytest.approx(1.147 * float(d.T_cmb), rel=1e-15)
    assert float(d.Q_radio_total) == pytest.approx(float(d.H_radio) * float(np.sum(m)), rel=1e-14)
    np.testing.assert_allclose(float(d.Q_tidal_total), np.sum(np.asarray(inputs.heating.tidal) * m), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(d.H), float(d.H_radio) + np.asarray(inputs.heating.tidal), rtol=1e-15)
    # Shapes for the output.
    n = mesh.number_of_cells
    for name in ("S", "T", "phi", "rho", "cp", "visc", "H", "dSdt"):
        assert getattr(d, name).shape == (n,), name
    for name in ("S_basic", "T_basic", "phi_basic", "jcond", "jconv", "jgrav", "jmix", "heat_flux"):
        assert getattr(d, name).shape == (n + 1,), name
    assert 0.0 <= float(d.RF_depth) <= 1.0


def test_rheological_front_depth():
    r = jnp.linspace(0.0, 1.0, 11)  # depth fraction = 1 - r
    front = lambda phi: float(_rheological_front_depth(jnp.asarray(phi), r, 0.4))  # noqa: E731
    assert front(np.ones(11)) == 0.0  # no rheologically solid region yet
    assert front(np.zeros(11)) == 0.0  # front at the surface
    phi = np.clip(np.linspace(-0.6, 1.4, 11), 0, 1)  # phi = 0.4 at r = 0.5: depth 0.5
    assert front(phi) == pytest.approx(0.5, rel=1e-12)
    phi = np.where(np.arange(11) <= 2, 0.0, 1.0)  # jumps between nodes 2 and 3
    assert front(phi) == pytest.approx(1 - (0.2 + 0.4 * 0.1), rel=1e-12)


# ----------------------------------------------------------------------------- Jacobian


_jac = jax.jit(jax.jacfwd(ph.rhs, argnums=1), static_argnums=3)
_jac_rev = jax.jit(jax.jacrev(ph.rhs, argnums=1), static_argnums=3)


@functools.lru_cache(maxsize=None)
def _jacobian_case(name):
    cases = {
        "constant_eb_utbl": (True, all_on(1, "energy_balance", True)),
        "tables_eb_bc5": (False, all_on(5, "energy_balance")),
        "tables_qs_bc1": (False, all_on(1, "quasi_steady")),
    }
    constant, options = cases[name]
    inputs = make_inputs(constant=constant, boundary=dict(outer_boundary_value=2000.0 if options.outer_boundary_condition == 5 else 1e5))
    y = random_state(inputs, options, 11)
    return inputs, options, y, np.asarray(_jac(0.0, y, inputs, options))


JACOBIAN_CASES = ["constant_eb_utbl", "tables_eb_bc5", "tables_qs_bc1"]


@pytest.mark.parametrize("name", JACOBIAN_CASES)
def test_jacobian_matches_finite_differences(name):
    inputs, options, y, J = _jacobian_case(name)
    assert np.all(np.isfinite(J))
    h = 1e-6  # y ~ O(1): ΔS = 1e-3 J/kg/K, 1e-4 of a table cell (10 J/kg/K)
    f = lambda yy: np.asarray(_rhs(0.0, yy, inputs, options))  # noqa: E731
    J_fd = np.empty_like(J)
    for j in range(y.shape[0]):
        e = jnp.zeros_like(y).at[j].set(h)
        J_fd[:, j] = (f(y + e) - f(y - e)) / (2 * h)
    # Central differences: truncation ~h^2 |f'''| ~ 1e-12 |J|, round-off ~ε |f|/h ~ 1e-10 |f|;
    # |f| <~ 10 |J| here, so 1e-7 of the largest entry bounds both with margin while a wrong
    # derivative (O(1) relative) fails. (Table mode: the lookup is piecewise bilinear; the
    # test state keeps every node >= h from a kink, which the agreement itself confirms.)
    scale = np.max(np.abs(J))
    np.testing.assert_allclose(J, J_fd, rtol=1e-6, atol=1e-7 * scale)


@pytest.mark.parametrize("name", JACOBIAN_CASES)
def test_band_widths_are_exact(name):
    inputs, options, y, J = _jacobian_case(name)
    lower, upper = ph.band_widths(options)
    n = J.shape[0]
    i, j = np.indices(J.shape)
    assert not np.any(J[(j - i > upper) | (i - j > lower)]), "entries outside the band"
    # Each outermost diagonal carries nonzero entries (the band is not wider than needed).
    assert np.any(np.diagonal(J, offset=upper)) and np.any(np.diagonal(J, offset=-lower))
    assert n == ph.state_size(inputs.mesh.number_of_cells, options)


def test_neutral_state_derivatives_are_finite():
    # Uniform S and zero CMB gradient: dS/dr = 0 at every node (the sqrt/branch guards).
    inputs, options, _, _ = _jacobian_case("tables_eb_bc5")
    n = inputs.mesh.number_of_cells
    y = ph.join_state(jnp.full((n,), 2600.0), 0.0, inputs, options)
    assert np.all(np.isfinite(np.asarray(_jac(0.0, y, inputs, options))))


def test_reverse_mode_matches_forward_mode():
    inputs, options = make_inputs(constant=True), all_on(1, "energy_balance", True)
    n = inputs.mesh.number_of_cells
    for y in (random_state(inputs, options, 3), ph.join_state(jnp.full((n,), 2100.0), 0.0, inputs, options)):
        Jf = _jac(0.0, y, inputs, options)
        Jr = _jac_rev(0.0, y, inputs, options)
        assert np.all(np.isfinite(np.asarray(Jr)))
        # Same derivative, different accumulation order: rounding only.
        np.testing.assert_allclose(np.asarray(Jr), np.asarray(Jf), rtol=1e-10,
                                   atol=1e-13 * np.max(np.abs(np.asarray(Jf))))


# ----------------------------------------------------------------------------- compilation


def test_new_input_values_do_not_retrace():
    options = all_on(5, "energy_balance")
    traces = []

    def counted(t, y, inputs):
        traces.append(1)
        return ph.rhs(t, y, inputs, options)

    f = jax.jit(counted)
    a = make_inputs(boundary=dict(outer_boundary_value=2000.0))
    # Every traced group changed: another mesh (other radius), scaled tables, material,
    # transport, boundary, heating and scales.
    b = make_inputs(outer_radius=6.0e6,
                    boundary=dict(outer_boundary_value=1800.0, equilibrium_temperature=250.0, core_heat_capacity=800.0),
                    transport=dict(kappah_floor=3.0, eddy_diffusivity_thermal=-1e3, grain_size=2e-3))
    b = dataclasses.replace(
        b,
        eos=b.eos._map(lambda x: x * 1.001),
        material=ph.as_float64(material_params(visc_liq=50.0)),
        heating=dataclasses.replace(b.heating, concentration=b.heating.concentration * 2.0),
        scales=ph.as_float64(ph.Scales(S=900.0, t=1e6, dSdr=2e-4)),
    )
    ya, yb = random_state(a, options, 1), random_state(b, options, 2)
    ra = f(0.0, ya, a)
    rb = f(1.0, yb, b)
    assert len(traces) == 1
    # The reused program gives the numbers of a fresh one (no stale closure).
    fresh = jax.jit(lambda t, y, inputs: ph.rhs(t, y, inputs, options))
    np.testing.assert_array_equal(np.asarray(rb), np.asarray(fresh(1.0, yb, b)))
    assert not np.allclose(np.asarray(ra), np.asarray(rb))


@pytest.mark.parametrize("n_nodes", [6, 101])
def test_mesh_sizes(n_nodes):
    inputs = make_inputs(n_nodes=n_nodes)
    options = all_on(1, "energy_balance")
    y = random_state(inputs, options, 3)
    dy = _rhs(0.0, y, inputs, options)
    assert dy.shape == (n_nodes,)  # N cells + 1 slot
    assert np.all(np.isfinite(np.asarray(dy)))
    if n_nodes > 50:  # (one compile less for the small mesh; the identity is tested above at N = 6)
        assert _identity_error(_diag(0.0, y, inputs, options), inputs) < 1e-13


def test_too_few_cells_is_an_error():
    inputs = make_inputs(n_nodes=2)
    options = all_on(4, "flux")
    with pytest.raises(ValueError, match="at least 2 cells"):
        ph.rhs(0.0, jnp.ones((1,)), inputs, options)


def test_input_fields_carry_the_config_names_and_their_one_default():
    """docs/design.md, "A new config key": a field of ``TransportInputs``, ``BoundaryInputs``,
    ``eos.MaterialParams`` or ``eos.PhaseProperties`` named as a key of its config sections
    has that key's schema default (and none where the schema requires the key): one name and
    one declared default from the file to the physics. And the config's value reaches the
    field by that name."""
    from aragog.config import SCHEMA, load_config
    from aragog.solver._from_config import derive  # private: the config -> physics inputs step itself

    from _configs import TOY_EARTH

    sections = {ph.TransportInputs: ("phase_mixed", "energy"), ph.BoundaryInputs: ("boundary_conditions",),
                eos.MaterialParams: ("phase_mixed",), eos.PhaseProperties: ("phase_liquid", "phase_solid"),
                eos.ConstantParams: ("phase_mixed",)}
    named = {}
    for cls, secs in sections.items():
        for f in dataclasses.fields(cls):
            key = next((SCHEMA[s][f.name] for s in secs if f.name in SCHEMA[s]), None)
            if key is None:  # transformed on the way (buoyancy_mixture, cmb_flux, ...) or a section's pytree
                continue
            named[f.name] = cls
            if key.required or key.default is None:  # required, or filled from other keys by the config
                assert f.default is dataclasses.MISSING, f"{cls.__name__}.{f.name} declares a default of its own"
            else:
                assert f.default == key.default, f"{cls.__name__}.{f.name} = {f.default} != schema {key.default}"
    assert len(named) == 23 and {"equilibrium_temperature", "kappah_floor", "grain_size", "viscosity",
                                 "rheological_transition_melt_fraction"} <= set(named)

    values = {"boundary_conditions.equilibrium_temperature": 271.5, "boundary_conditions.emissivity": 0.83,
              "boundary_conditions.core_heat_capacity": 851.0, "energy.kappah_floor": 7.5,
              "energy.eddy_diffusivity_chemical": 0.7, "phase_mixed.grain_size": 2.5e-3,
              "phase_mixed.rheological_transition_width": 0.12, "phase_liquid.viscosity": 55.0,
              "phase_solid.thermal_conductivity": 4.5}
    inputs = derive(load_config(TOY_EARTH, overrides=values))[3]
    groups = {ph.TransportInputs: inputs.transport, ph.BoundaryInputs: inputs.boundary,
              eos.MaterialParams: inputs.material}
    for dotted, value in values.items():
        section, name = dotted.split(".")
        group = getattr(inputs.material, section) if named[name] is eos.PhaseProperties else groups[named[name]]
        assert float(getattr(group, name)) == value, dotted
    constant = {"phase_mixed.const_properties": True, "phase_mixed.const_T_ref": 1650.0,
                "phase_mixed.const_S_ref": 2050.0, "phase_mixed.const_Cp": 1111.0}
    tables = derive(load_config(TOY_EARTH, overrides=constant))[3].eos
    assert (float(tables.const_T_ref), float(tables.const_S_ref), float(tables.const_Cp)) == (1650.0, 2050.0, 1111.0)
