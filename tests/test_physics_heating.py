"""Radiogenic heating (docs/physics.md "Heating") and the closed-box check ("Checks")."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

from aragog import eos
from aragog import physics as ph
from aragog.structure import build_mesh
from _configs import constant_params, material_params

# the heating functions are pure: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

GYR = 1e9 * ph.SECONDS_PER_YEAR


@pytest.fixture(scope="module")
def earth():
    return ph.earth_heating_inputs(4)


def test_radiogenic_heating_at_start(earth):
    # docs/physics.md quotes H(0) = 3.4236e-11 W/kg to 5 significant digits: half a unit in the
    # last digit is 1.5e-5 relative.
    assert float(ph.radiogenic_heating(0.0, earth)) == pytest.approx(3.4236e-11, rel=1.5e-5)


def test_radiogenic_energy_first_gyr(earth):
    # docs/physics.md: ∫_0^{1 Gyr} H dt = 8.3929e5 J/kg (5 digits: half a unit = 6e-6 relative).
    assert float(ph.radiogenic_energy(0.0, GYR, earth)) == pytest.approx(8.3929e5, rel=6e-6)


def test_radiogenic_energy_is_the_integral(earth):
    # Adaptive quadrature of the smooth integrand converges to ~1e-14; 1e-11 leaves margin.
    for t0, t1 in ((0.0, GYR), (2.0 * GYR, 2.0 * GYR + 3.0e13), (1.0e6, 1.0e6 + 1.0)):
        quad, _ = scipy.integrate.quad(lambda t: float(ph.radiogenic_heating(t, earth)), t0, t1,
                                       epsabs=0.0, epsrel=1e-13)
        assert float(ph.radiogenic_energy(t0, t1, earth)) == pytest.approx(quad, rel=1e-11)


def test_radiogenic_heating_decays_by_half_lives(earth):
    # One isotope only: H(t + τ) = H(t)/2 exactly up to rounding of exp (1e-14).
    one = ph.HeatingInputs(tidal=earth.tidal, heat_production=earth.heat_production[:1],
                           abundance=earth.abundance[:1], concentration=earth.concentration[:1],
                           half_life=earth.half_life[:1], t0=earth.t0[:1])
    tau = float(one.half_life[0])
    H0 = float(ph.radiogenic_heating(0.0, one))
    assert float(ph.radiogenic_heating(tau, one)) == pytest.approx(0.5 * H0, rel=1e-14)
    # At t = t0 the heating is h a c (the concentration is given at t0).
    h0 = float(one.heat_production[0] * one.abundance[0] * one.concentration[0] * 1e-6)
    assert float(ph.radiogenic_heating(float(one.t0[0]), one)) == pytest.approx(h0, rel=1e-15)


def test_no_isotopes_means_no_heating():
    empty = jnp.zeros((0,))
    h = ph.HeatingInputs(tidal=jnp.zeros(3), heat_production=empty, abundance=empty, concentration=empty,
                         half_life=empty, t0=empty)
    assert float(ph.radiogenic_heating(1e15, h)) == 0.0
    assert float(ph.radiogenic_energy(0.0, 1e15, h)) == 0.0


def _with_extinct(earth):
    """The Earth isotopes plus Al26 and Fe60 with abundance = concentration = 0, given at
    t0 = 4.55 Gyr (the upstream configs): exp(ln2 t0/tau) overflows for both."""
    yr = ph.SECONDS_PER_YEAR
    cat = lambda a, extra: jnp.concatenate([jnp.asarray(a), jnp.asarray(extra, dtype=jnp.float64)])  # noqa: E731
    return dataclasses.replace(
        earth, heat_production=cat(earth.heat_production, [0.3583, 3.6579e-2]),
        abundance=cat(earth.abundance, [0.0, 0.0]), concentration=cat(earth.concentration, [0.0, 0.0]),
        half_life=cat(earth.half_life, [0.717e6 * yr, 2.62e6 * yr]),
        t0=cat(earth.t0, [4.55e9 * yr, 4.55e9 * yr]))


def test_zero_amplitude_isotope_contributes_exactly_zero(earth):
    both = _with_extinct(earth)
    for t in (0.0, 1e6 * ph.SECONDS_PER_YEAR, GYR):
        assert float(ph.radiogenic_heating(t, both)) == float(ph.radiogenic_heating(t, earth))
        assert float(ph.radiogenic_energy(t, t + GYR, both)) == float(ph.radiogenic_energy(t, t + GYR, earth))
    # compiled, and differentiated in time: finite (the mask also guards the derivative)
    H = jax.jit(ph.radiogenic_heating)(jnp.float64(0.0), both)
    dH = jax.grad(lambda t: ph.radiogenic_heating(t, both))(jnp.float64(0.0))
    E = jax.jit(ph.radiogenic_energy)(jnp.float64(0.0), jnp.float64(GYR), both)
    assert np.isfinite(float(H)) and np.isfinite(float(dH)) and np.isfinite(float(E))
    assert float(dH) == pytest.approx(float(jax.grad(lambda t: ph.radiogenic_heating(t, earth))(0.0)), rel=1e-14)
    # a heat_production of 0 (with abundance and concentration set) masks the same way
    zero_h = dataclasses.replace(both, heat_production=both.heat_production.at[-2:].set(0.0),
                                 abundance=both.abundance.at[-2:].set(1e-5),
                                 concentration=both.concentration.at[-2:].set(1e4))
    assert float(ph.radiogenic_heating(0.0, zero_h)) == float(ph.radiogenic_heating(0.0, earth))


def test_cell_heating_switches(earth):
    tidal = dataclasses.replace(earth, tidal=jnp.arange(4.0) * 1e-9)
    H, Hr, Ht = ph.cell_heating(0.0, tidal, 4, radionuclides=True, tidal=True)
    np.testing.assert_array_equal(np.asarray(H), float(Hr) + np.arange(4.0) * 1e-9)
    H, Hr, Ht = ph.cell_heating(0.0, tidal, 4, radionuclides=False, tidal=False)
    assert not np.any(np.asarray(H)) and float(Hr) == 0.0


# ----------------------------------------------------------------------------- closed box


def _closed_box(mesh, constant_properties):
    n = mesh.number_of_cells
    options = ph.PhysicsOptions(conduction=False, convection=False, radionuclides=True, outer_boundary_condition=4,
                                core_bc="flux", constant_properties=constant_properties)
    material = constant_params() if constant_properties else eos.default_table_set().to_jax()
    inputs = ph.as_float64(ph.PhysicsInputs(
        mesh=mesh, eos=material, material=material_params(), transport=ph.TransportInputs(grain_size=1e-3),
        boundary=ph.BoundaryInputs(outer_boundary_value=0.0, equilibrium_temperature=0.0, emissivity=1.0, core_heat_capacity=880.0, cmb_flux=0.0),
        heating=ph.earth_heating_inputs(n), scales=ph.Scales(S=1000.0, t=ph.SECONDS_PER_YEAR, dSdr=1e-3)))
    return inputs, options


@pytest.mark.parametrize("constant_properties", [True, False])
def test_closed_box_rate_is_H_over_T(constant_properties):
    mesh = build_mesh(6371e3, 3504e3, 6, core_density=10738.33)
    inputs, options = _closed_box(mesh, constant_properties)
    S = jnp.linspace(2900.0, 2300.0, 5)
    y = ph.join_state(S, None, inputs, options)
    t = 123.0  # years
    dSdt = ph.rhs(t, y, inputs, options) * (inputs.scales.S / inputs.scales.t)
    T = ph.material_state(mesh.P_stag, S, inputs, options).T
    H = ph.radiogenic_heating(t * ph.SECONDS_PER_YEAR, inputs.heating)
    # Zero flux on both ends and no transport: the flux divergence is exactly 0, so
    # dS/dt = H/T up to the rounding of the nondimensionalisation (a few ulp).
    np.testing.assert_allclose(np.asarray(dSdt), np.asarray(H / T), rtol=1e-14, atol=0)


def test_closed_box_gains_the_radiogenic_energy():
    """Constant properties: E = c_p T per unit mass, dE/dt = c_p (T/c_p) dS/dt = H, so
    integrating the jitted rhs over 1 Gyr must add exactly ∫H dt = 8.3929e5 J/kg."""
    mesh = build_mesh(6371e3, 3504e3, 4, core_density=10738.33)
    inputs, options = _closed_box(mesh, True)
    f = jax.jit(ph.rhs, static_argnums=3)
    y0 = ph.join_state(jnp.array([2100.0, 2000.0, 1900.0]), None, inputs, options)
    sol = scipy.integrate.solve_ivp(lambda t, y: np.asarray(f(t, jnp.asarray(y), inputs, options)),
                                    (0.0, 1.0e9), np.asarray(y0), method="DOP853", rtol=1e-12, atol=1e-14)
    assert sol.success
    cp = float(inputs.eos.const_Cp)

    def energy(y):
        return cp * np.asarray(ph.material_state(mesh.P_stag, jnp.asarray(y) * inputs.scales.S, inputs, options).T)

    gained = energy(sol.y[:, -1]) - energy(sol.y[:, 0])
    exact = float(ph.radiogenic_energy(0.0, GYR, inputs.heating))
    # DOP853 at rtol 1e-12 on a smooth problem: global error ~1e-11 relative; 1e-9 leaves margin.
    np.testing.assert_allclose(gained, exact, rtol=1e-9)
    # The docs/physics.md number (5 significant digits).
    np.testing.assert_allclose(gained, 8.3929e5, rtol=6e-6)
