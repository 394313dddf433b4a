"""Half-space cooling: the prescribed-temperature surface closure against the erf solution.

Set-up (the upstream aragog verification case): the top 100 km of an Earth-size shell,
constant properties (k = 4 W/m/K, ρ = 4000 kg/m3, c_p = 1000 J/kg/K: κ = 1e-6 m2/s),
conduction only, α = 0 (a uniform temperature is then an isentrope and the adiabatic term
vanishes), uniform 2000 K at t = 0, surface held at 1000 K (outer_boundary_condition 5), no flux through
the base; a radius mesh (uniform cells). The planar solution is
T = T_s + (T_0 - T_s) erf(z / (2 sqrt(κ t))), so the 1500 K isotherm lies at
z = 2 erfinv(1/2) sqrt(κ t) = A t^(1/2). The shell's exact solution follows from u = r (T - T_s),
which obeys the 1-D heat equation with u = 0 at the surface:
(T - T_s)/(T_0 - T_s) = (R erf(x / (2 sqrt(κ t))) - x)/(R - x), x = R - r the depth, exact
up to erfc(100 km / (2 sqrt(κ t))) < 1e-9 here (the base is then still at T_0).

The figures quoted below are for this code and are given in docs/physics.md.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf, erfinv

from aragog import EntropySolver, load_config
from aragog import physics as ph
from aragog.physics import SECONDS_PER_YEAR

from conftest import INPUT
from _configs import constant_params, material_params

CONSTANT = INPUT / "constant_properties.toml"
R, DEPTH = 6.371e6, 100.0e3
T0, TS, T_ISO = 2000.0, 1000.0, 1500.0
KAPPA = 4.0 / (4000.0 * 1000.0)  # k/(ρ c_p) of constant_properties.toml [m2/s]
TIMES = (1.0e6, 2.0e6, 4.0e6)  # [yr]
#: Planar prefactor of the 1500 K isotherm depth, z = A t^(1/2) with t in years [m/yr^0.5].
A_PLANAR = 2.0 * float(erfinv(0.5)) * math.sqrt(KAPPA * SECONDS_PER_YEAR)


@functools.lru_cache(maxsize=None)
def cooling(n_nodes: int):
    """One solver per resolution, solved 0 -> 1 -> 2 -> 4 Myr (one compile); per time the
    cell depths x = R - r_s (surface first), the cell temperatures and the surface flux."""
    solver = EntropySolver(load_config(CONSTANT, overrides={
        "mesh.number_of_nodes": n_nodes, "mesh.outer_radius": R, "mesh.inner_radius": R - DEPTH,
        "mesh.mass_coordinates": False, "solver.rtol": 1e-10, "solver.atol": 1e-10,
        "solver.output_points": 2, "energy.convection": False, "energy.radionuclides": False,
        "phase_mixed.const_alpha": 0.0,
        "boundary_conditions.outer_boundary_condition": 5, "boundary_conditions.outer_boundary_value": TS,
        "boundary_conditions.inner_boundary_condition": 2, "boundary_conditions.inner_boundary_value": 0.0,
        "initial_condition.surface_temperature": T0}))
    solver.initialize()
    runs, start = [], 0.0
    for end in TIMES:
        sp = solver.parameters.solver
        sp.start_time, sp.end_time = start, end
        solver.reset()
        solver.solve()
        out = solver.get_state()
        assert out.status == 0, out.message
        assert out.T_magma == pytest.approx(TS, rel=1e-12)
        runs.append((R - np.asarray(out.r_stag)[::-1], np.asarray(out.T_stag)[::-1], float(out.F_surface)))
        start = end
    return runs


def shell_temperature(x, t_years):
    """The exact temperature of the cooling shell at depth x [m] (module docstring)."""
    L = 2.0 * math.sqrt(KAPPA * t_years * SECONDS_PER_YEAR)
    return TS + (T0 - TS) * (R * erf(x / L) - x) / (R - x)


def isotherm_depth(x, T):
    """Depth of the 1500 K isotherm by linear interpolation through the surface node
    (x = 0, T_s) and the cell centres, as upstream measures it."""
    return float(np.interp(T_ISO, np.concatenate([[TS], T]), np.concatenate([[0.0], x])))


def fitted_power_law(depths):
    """(β, A) of the least-squares fit log z = log A + β log t (t in years)."""
    beta, log_a = np.polyfit(np.log(TIMES), np.log(depths), 1)
    return float(beta), math.exp(log_a)


def test_isotherm_prefactor_within_3_percent_at_100_nodes():
    """Upstream's criterion: A within 3 % of the planar erf prefactor at 100 nodes (99 cells
    of 1.01 km; the isotherm is 5.4, 7.6 and 10.7 km deep, i.e. 5-11 cells), β = 1/2 ± 0.02.

    Why 3 %: upstream aragog documents 5.0 / 2.5 / 1.2 % at 50 / 100 / 200 nodes and asserts
    3 % at 100; this code should do at least as well. The fit is sensitive: A =
    exp(intercept) at t ~ 1e6 yr, so an error δβ in the exponent moves A by about
    δβ ln(2e6) = 14.5 δβ, while the depths are within 0.15 % of the planar ones (0.7 % with
    the former closure). Two parts of the error are not the solver's: the shell's curvature
    (its exact solution fitted the same way gives A 0.88 % below the planar value) and the
    linear interpolation between cell centres (the exact solution sampled at the cells:
    +0.15 % at 100 nodes). Measured: -2.06 % (β = 0.5015) with the second-order surface
    closure, -6.71 % (β = 0.5046) with the former half-cell two-point gradient. Against the
    shell's exact solution fitted the same way: -1.19 % (formerly -5.88 %), asserted <= 2 %.
    """
    depths = [isotherm_depth(x, T) for x, T, _ in cooling(100)]
    beta, A = fitted_power_law(depths)
    assert abs(beta - 0.5) <= 0.02, beta
    assert abs(A / A_PLANAR - 1.0) <= 0.03, (A / A_PLANAR - 1.0, beta)

    exact = []
    for t in TIMES:  # the shell's isotherm depth, by bisection on the exact profile
        lo, hi = 0.0, DEPTH
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if shell_temperature(mid, t) < T_ISO else (lo, mid)
        exact.append(0.5 * (lo + hi))
    _, A_shell = fitted_power_law(exact)
    assert A_shell / A_PLANAR - 1.0 == pytest.approx(-0.0088, abs=2e-4)  # the curvature bias
    assert abs(A / A_shell - 1.0) <= 0.02, A / A_shell - 1.0


def test_halfspace_converges_at_second_order():
    """Observed order of the cell temperatures against the shell's exact solution at 50, 100
    and 200 nodes (49, 99, 199 cells): p = log(e_coarse/e_fine)/log(h_coarse/h_fine) with e
    the largest |T - T_exact| over the cells at 1, 2 and 4 Myr.

    Measured: e(1 Myr) = 4.77, 1.23, 0.315 K, p = 1.93, 1.95 (the former closure: 14.3,
    3.90, 1.08 K, p ~ 1.85: the solution was already second order by supraconvergence, with
    a three times larger constant from the O(h) gradient). Asserted: p >= 1.8 at each
    refinement and time, and e <= 2 K at 100 nodes and 1 Myr (which the former closure
    fails). The surface flux converges at the same order (tests/test_solver.py).
    """
    nodes = (50, 100, 200)
    h = [DEPTH / (n - 1) for n in nodes]
    errors = np.array([[np.max(np.abs(T - shell_temperature(x, t))) for (x, T, _), t in zip(cooling(n), TIMES)]
                       for n in nodes])  # (resolution, time)
    orders = np.log(errors[:-1] / errors[1:]) / np.log(np.array(h[:-1]) / np.array(h[1:]))[:, None]
    assert np.all(orders >= 1.8), (errors, orders)
    assert errors[1, 0] <= 2.0, errors
    # The prefactor error against the planar law falls towards the curvature bias (-0.88 %).
    planar = [fitted_power_law([isotherm_depth(x, T) for x, T, _ in cooling(n)])[1] / A_PLANAR - 1.0 for n in nodes]
    assert planar[0] < planar[1] < planar[2] < 0.0 and abs(planar[2]) < 0.015, planar


# ----------------------------------------------------------------------------- the closures


def _mesh_inputs(n_nodes):
    from aragog import eos
    from aragog.structure import build_mesh

    mesh = build_mesh(6371e3, 3504e3, n_nodes, core_density=10738.33, mass_coordinates=True)
    n = mesh.number_of_cells
    return ph.as_float64(ph.PhysicsInputs(
        mesh=mesh, eos=constant_params(), material=material_params(), transport=ph.TransportInputs(grain_size=1e-3),
        boundary=ph.BoundaryInputs(outer_boundary_value=1500.0, equilibrium_temperature=0.0, emissivity=1.0,
                                   core_heat_capacity=880.0), heating=ph.earth_heating_inputs(n),
        scales=ph.Scales(S=1000.0, t=SECONDS_PER_YEAR, dSdr=1e-4)))


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("outer_boundary_condition", [5, 4])
def test_boundary_gradients_are_exact_for_quadratics(outer_boundary_condition):
    """S quadratic in ξ: the one-sided boundary gradients reproduce it (second order), the
    prescribed surface one through (ξ_N, S_N) and two cells, the extrapolated ones through
    three cells; with two cells (one slope) they are exact for linear profiles."""
    options = ph.PhysicsOptions(conduction=True, outer_boundary_condition=outer_boundary_condition, core_bc="flux",
                                constant_properties=True)
    for n_nodes in (7, 3):
        mesh = _mesh_inputs(n_nodes).mesh
        xN = float(mesh.xi_basic[-1])
        curvature = 1e-10 if n_nodes > 3 else 0.0  # ~100 J/kg/K over the mantle

        def S_of(xi):
            return 3000.0 - 2e-4 * (xi - xN) + curvature * (xi - xN) ** 2

        def slope(xi):
            return -2e-4 + 2.0 * curvature * (xi - xN)

        S_b, dSdr_b = ph.basic_node_entropy(S_of(mesh.xi_stag), None, S_of(mesh.xi_basic[-1]), mesh, options)
        expected = slope(mesh.xi_basic) * mesh.dxidr_basic
        ends = np.asarray(dSdr_b)[[0, -1]]
        np.testing.assert_allclose(ends, np.asarray(expected)[[0, -1]], rtol=1e-8)
        if outer_boundary_condition == 5:
            assert float(S_b[-1]) == float(S_of(mesh.xi_basic[-1]))


@pytest.mark.usefixtures("x64")  # pure physics: float64 as a user calls it
@pytest.mark.parametrize("core_bc", ["flux", "energy_balance"])
def test_prescribed_surface_closure_keeps_the_band(core_bc):
    """F_N uses S_N-1 and S_N-2: row N-1 stays within the lower bandwidth 1; the Jacobian is
    finite (also at a uniform state) and matches reverse mode."""
    inputs = _mesh_inputs(8)
    options = ph.PhysicsOptions(conduction=True, convection=True, outer_boundary_condition=5, core_bc=core_bc,
                                constant_properties=True)
    n = inputs.mesh.number_of_cells
    jac = jax.jit(jax.jacfwd(ph.rhs, argnums=1), static_argnums=3)
    lower, upper = ph.band_widths(options)
    for S in (jnp.linspace(2300.0, 1900.0, n), jnp.full((n,), 2100.0)):
        y = ph.join_state(S, -1e-4, inputs, options)
        J = np.asarray(jac(0.0, y, inputs, options))
        assert np.all(np.isfinite(J))
        i, j = np.indices(J.shape)
        assert not np.any(J[(j - i > upper) | (i - j > lower)]), "entries outside the band"
        assert J[-1, -2] != 0.0 and J[-1, -1] != 0.0
