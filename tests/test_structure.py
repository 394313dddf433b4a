"""Static structure: Adams–Williamson closed forms, meshes, Mesh, builder API."""

from __future__ import annotations

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

from aragog.errors import StructureError
from aragog.structure import (
    MESH_FIELDS,
    AdamsWilliamson,
    Mesh,
    adams_williamson_enclosed_mass,
    build_mesh,
    mass_coordinate,
    mesh_from_params,
)

R_EARTH = 6371e3
R_CMB = 3504e3  # Earth-like CMB (a thick mantle: a = β(R − r_c) ≈ 0.44 for the defaults)
RHO_CORE = 10738.33
RHO_S, K_S, G = 4078.95095544, 260e9, 9.81
BETA = RHO_S * G / K_S  # ≈ 1.539e-7 1/m
EPS = np.finfo(float).eps


def closed_mass_G(r, r_c, R, rho_s, beta):
    """M(r) = 4π ρ_s [G(r_c) − G(r)], G(x) = e^{β(R−x)}(x²/β + 2x/β² + 2/β³): the direct
    antiderivative, written independently of the implementation's φ_k form."""

    def Gf(x):
        return np.exp(beta * (R - x)) * (x**2 / beta + 2 * x / beta**2 + 2 / beta**3)

    return 4 * np.pi * rho_s * (Gf(r_c) - Gf(r))


def mesh(n=41, **kw):
    kw.setdefault("core_density", RHO_CORE)
    return build_mesh(R_EARTH, R_CMB, n, **kw)


def np_mesh(*a, **kw):
    return mesh(*a, **kw).to_numpy()


# --------------------------------------------------------------------------------------
# Adams–Williamson closed forms
# --------------------------------------------------------------------------------------


def test_aw_beta_default_and_override():
    assert AdamsWilliamson().effective_beta == pytest.approx(BETA, rel=1e-15)
    assert AdamsWilliamson(beta=2e-7).effective_beta == 2e-7


def test_aw_density_and_pressure_closed_forms():
    aw = AdamsWilliamson(surface_pressure=1e5)
    r = np.linspace(R_CMB, R_EARTH, 57)
    # Independent evaluation; rtol 1e-13: both are a few flops from the same exponent,
    # differing only in rounding (the implementation uses expm1(x)/x, or its series).
    np.testing.assert_allclose(aw.density(r, R_EARTH), RHO_S * np.exp(BETA * (R_EARTH - r)), rtol=1e-13)
    p_ref = 1e5 + RHO_S * G / BETA * np.expm1(BETA * (R_EARTH - r))
    np.testing.assert_allclose(aw.pressure(r, R_EARTH), p_ref, rtol=1e-13)
    assert aw.pressure(np.array(R_EARTH), R_EARTH) == 1e5


def test_aw_hydrostatic():
    # dP/dr = −ρ g. Central difference with h = 10 m: truncation ~ (βh)²/6 ~ 4e-13,
    # rounding ~ ε P/(h ρ g) ~ 1e-16·1.4e11/(10·4e4) ~ 4e-11; rtol 1e-8 is safe.
    aw = AdamsWilliamson()
    r = np.linspace(R_CMB + 100, R_EARTH - 100, 11)
    h = 10.0
    dpdr = (aw.pressure(r + h, R_EARTH) - aw.pressure(r - h, R_EARTH)) / (2 * h)
    np.testing.assert_allclose(dpdr, -aw.density(r, R_EARTH) * G, rtol=1e-8)


def test_aw_enclosed_mass_vs_direct_closed_form():
    aw = AdamsWilliamson()
    r = np.linspace(R_CMB, R_EARTH, 101)[1:]
    m = aw.enclosed_mass(r, R_CMB, R_EARTH)
    ref = closed_mass_G(r, R_CMB, R_EARTH, RHO_S, BETA)
    # The G form cancels: its terms are ~4πρ_s·2/β³ ~ 3e25 kg while the smallest M here is
    # ~4e22 kg, so it carries a relative error up to ~1e3 ε ~ 2e-13; rtol 1e-11.
    np.testing.assert_allclose(m, ref, rtol=1e-11)
    assert aw.enclosed_mass(np.array(R_CMB), R_CMB, R_EARTH) == 0.0


@pytest.mark.parametrize("beta", [0.0, 1e-6])  # 1e-6: a = β h up to 2.9, both branches
def test_aw_enclosed_mass_vs_quadrature(beta):
    aw = AdamsWilliamson(beta=beta)
    b = aw.effective_beta
    for r in np.linspace(R_CMB, R_EARTH, 9)[1:]:
        ref, err = quad(
            lambda x: 4 * np.pi * x * x * RHO_S * np.exp(b * (R_EARTH - x)),
            R_CMB, r, epsabs=0, epsrel=1e-13,
        )
        # quad (21-point Gauss–Kronrod, epsrel 1e-13) on this smooth integrand converges to
        # ~1e-15 in practice; rtol 1e-12 leaves room above its requested epsrel.
        assert aw.enclosed_mass(np.array(r), R_CMB, R_EARTH) == pytest.approx(ref, rel=1e-12)


def test_aw_enclosed_mass_limits():
    r = np.linspace(R_CMB, R_EARTH, 33)
    # β → 0: uniform density, M = 4/3 π ρ_s (r³ − r_c³). With β = 1e-22 the exact relative
    # deviation is ~β(R − r_c) ~ 3e-16, so rtol 1e-13 tests the series branch's rounding.
    m = adams_williamson_enclosed_mass(r, R_CMB, R_EARTH, RHO_S, 1e-22)
    np.testing.assert_allclose(m[1:], 4 / 3 * np.pi * RHO_S * (r[1:] ** 3 - R_CMB**3), rtol=1e-13)
    assert m[0] == 0.0
    # Thin shell: M ≈ 4π r_c² ρ(r_c) h for h → 0 (relative correction ~ h/r_c + βh ~ 1e-6).
    h = 1.0
    m = adams_williamson_enclosed_mass(np.array(R_CMB + h), R_CMB, R_EARTH, RHO_S, BETA)
    rho_c = RHO_S * np.exp(BETA * (R_EARTH - R_CMB))
    assert m == pytest.approx(4 * np.pi * R_CMB**2 * rho_c * h, rel=1e-6)
    # dM/dr = 4π r² ρ: central difference, h = 10 m (truncation ~ (h/r)² ~ 1e-11,
    # rounding ~ ε M/(h dM/dr) ~ 1e-16·4e24/(10·2e18) ~ 2e-11); rtol 1e-8.
    r = np.linspace(R_CMB + 1e3, R_EARTH - 1e3, 7)
    f = lambda x: adams_williamson_enclosed_mass(x, R_CMB, R_EARTH, RHO_S, BETA)
    dmdr = (f(r + 10) - f(r - 10)) / 20
    np.testing.assert_allclose(dmdr, 4 * np.pi * r**2 * RHO_S * np.exp(BETA * (R_EARTH - r)), rtol=1e-8)


# --------------------------------------------------------------------------------------
# Meshes
# --------------------------------------------------------------------------------------


def test_mass_coordinate_mesh_cells_hold_equal_mass_in_xi():
    """Uniform in ξ (docs/physics.md, "Grid"): cell i holds 4/3 π ρ̄ (ξ_{i+1}³ − ξ_i³), i.e. the mass of
    the same Δξ-shell in a uniform-density mantle; cells of equal Δξ hold equal mass per
    unit of ξ³. The cell masses come from the closed-form M(r) at the inverted radii."""
    m = np_mesh(81)
    xi = m["xi_basic"]
    # Inversion to ~1e-15 in r; the difference of two masses ~4e24 for a cell ~5e22
    # amplifies rounding by ~1e2, so ~1e-13 — rtol 1e-10 (the requirement) is generous.
    np.testing.assert_allclose(
        m["mass_stag"], 4 / 3 * np.pi * m["mean_density"] * (xi[1:] ** 3 - xi[:-1] ** 3), rtol=1e-10
    )
    # per unit of ξ³ the cells are equal
    per = m["mass_stag"] / (xi[1:] ** 3 - xi[:-1] ** 3)
    np.testing.assert_allclose(per, per[0], rtol=1e-10)
    # masses add up to the mantle: rtol 1e-13 (a telescoping sum of rounded differences)
    assert m["mass_stag"].sum() == pytest.approx(float(m["mantle_mass"]), rel=1e-13)
    ref_total = closed_mass_G(R_EARTH, R_CMB, R_EARTH, RHO_S, BETA)
    assert float(m["mantle_mass"]) == pytest.approx(ref_total, rel=1e-12)
    assert float(m["mean_density"]) == pytest.approx(
        ref_total / (4 / 3 * np.pi * (R_EARTH**3 - R_CMB**3)), rel=1e-12
    )


def test_mass_coordinate_mesh_nodes():
    m = np_mesh(41)
    xi_b, xi_s, r_b, r_s = m["xi_basic"], m["xi_stag"], m["r_basic"], m["r_stag"]
    assert r_b[0] == R_CMB and r_b[-1] == R_EARTH
    assert np.all(np.diff(r_b) > 0) and np.all((r_s > r_b[:-1]) & (r_s < r_b[1:]))
    # basic ξ uniform, staggered ξ at the midpoints (exact arithmetic up to rounding: 1e-14)
    np.testing.assert_allclose(np.diff(xi_b), (R_EARTH - R_CMB) / 40, rtol=1e-9)
    np.testing.assert_allclose(xi_s, 0.5 * (xi_b[1:] + xi_b[:-1]), rtol=1e-14)
    # ξ recomputed from the independent closed form at the inverted radii: the inversion
    # is to ~1e-13 relative (requirement); the G-form rounding adds ~1e-13 near r_c.
    mbar = float(m["mean_density"])
    for r, xi in ((r_b[1:], xi_b[1:]), (r_s, xi_s)):
        xi_chk = mass_coordinate(r, closed_mass_G(r, R_CMB, R_EARTH, RHO_S, BETA), R_CMB, mbar)
        np.testing.assert_allclose(xi_chk, xi, rtol=1e-13)
    # density decreases outward, so inner cells are thinner in r than in ξ
    assert r_b[1] - r_b[0] < xi_b[1] - xi_b[0]


def test_dxidr_matches_finite_difference():
    m = np_mesh(21)
    mbar = float(m["mean_density"])
    xi = lambda r: mass_coordinate(r, adams_williamson_enclosed_mass(r, R_CMB, R_EARTH, RHO_S, BETA), R_CMB, mbar)
    # Central difference, h = 1 m: truncation ~ (h/r)² ~ 1e-13, rounding ~ ε ξ/h ~ 1e-9.
    h = 1.0
    for r, d in ((m["r_basic"][1:-1], m["dxidr_basic"][1:-1]), (m["r_stag"], m["dxidr_stag"])):
        np.testing.assert_allclose((xi(r + h) - xi(r - h)) / (2 * h), d, rtol=1e-8)
    # At the surface ξ = R and ρ = ρ_s: dξ/dr = ρ_s/ρ̄ exactly (up to rounding).
    assert m["dxidr_basic"][-1] == pytest.approx(RHO_S / mbar, rel=1e-14)


def test_radius_mesh_uniform():
    m = np_mesh(33, mass_coordinates=False)
    r_b, r_s = m["r_basic"], m["r_stag"]
    # uniform spacing; rtol 1e-9: dr ≈ 9e4 m from radii ≈ 6e6 m, rounding ~1e-16·6e6/9e4
    np.testing.assert_allclose(np.diff(r_b), (R_EARTH - R_CMB) / 32, rtol=1e-9)
    np.testing.assert_allclose(r_s, 0.5 * (r_b[1:] + r_b[:-1]), rtol=1e-15)
    np.testing.assert_array_equal(m["xi_basic"], r_b)
    np.testing.assert_array_equal(m["xi_stag"], r_s)
    np.testing.assert_array_equal(m["dxidr_basic"], 1.0)
    np.testing.assert_array_equal(m["dxidr_stag"], 1.0)
    # cell masses from the closed form (rtol 1e-11, as for the G-form comparison above)
    ref = closed_mass_G(r_b, R_CMB, R_EARTH, RHO_S, BETA)
    np.testing.assert_allclose(m["mass_stag"], np.diff(ref), rtol=1e-11)


@pytest.mark.parametrize("mass_coordinates", [True, False])
def test_geometry_and_structure_fields(mass_coordinates):
    m = np_mesh(17, mass_coordinates=mass_coordinates, structure=AdamsWilliamson(surface_pressure=2e5))
    r_b, r_s = m["r_basic"], m["r_stag"]
    np.testing.assert_allclose(m["area_basic"], 4 * np.pi * r_b**2, rtol=1e-15)
    np.testing.assert_allclose(m["volume_stag"], 4 / 3 * np.pi * (r_b[1:] ** 3 - r_b[:-1] ** 3), rtol=1e-12)
    # total volume: rtol 1e-13 (sum of 16 positive terms)
    assert m["volume_stag"].sum() == pytest.approx(4 / 3 * np.pi * (R_EARTH**3 - R_CMB**3), rel=1e-13)
    for r, P, rho, g in ((r_b, m["P_basic"], m["rho_basic"], m["g_basic"]), (r_s, m["P_stag"], m["rho_stag"], m["g_stag"])):
        np.testing.assert_allclose(rho, RHO_S * np.exp(BETA * (R_EARTH - r)), rtol=1e-13)
        np.testing.assert_allclose(P, 2e5 + RHO_S * G / BETA * np.expm1(BETA * (R_EARTH - r)), rtol=1e-13)
        np.testing.assert_array_equal(g, G)
    assert float(m["surface_pressure"]) == 2e5
    assert float(m["inner_radius"]) == R_CMB and float(m["outer_radius"]) == R_EARTH
    assert float(m["core_mass"]) == pytest.approx(4 / 3 * np.pi * R_CMB**3 * RHO_CORE, rel=1e-15)


def test_single_cell_mesh():
    m = np_mesh(2)
    assert m["r_basic"].shape == (2,) and m["r_stag"].shape == (1,)
    assert m["mass_stag"][0] == pytest.approx(float(m["mantle_mass"]), rel=1e-15)


# --------------------------------------------------------------------------------------
# Mixing length
# --------------------------------------------------------------------------------------


def test_mixing_length_nearest_boundary():
    m = np_mesh(26)
    for r, l in ((m["r_basic"], m["mixing_length_basic"]), (m["r_stag"], m["mixing_length_stag"])):
        np.testing.assert_allclose(l, np.minimum(r - R_CMB, R_EARTH - r), rtol=0, atol=1e-9)
    assert m["mixing_length_basic"][0] == 0 and m["mixing_length_basic"][-1] == 0


@pytest.mark.parametrize("fraction", [0.25, 0.1])
def test_mixing_length_constant(fraction):
    m = np_mesh(26, mixing_length_profile="constant", mixing_length_constant_fraction=fraction)
    depth = R_EARTH - R_CMB
    np.testing.assert_allclose(m["mixing_length_basic"], fraction * depth, rtol=1e-15)
    np.testing.assert_allclose(m["mixing_length_stag"], fraction * depth, rtol=1e-15)


def test_mixing_length_unknown_profile():
    with pytest.raises(StructureError, match="mixing_length_profile.*nearest_boundary.*constant.*'linear'"):
        mesh(mixing_length_profile="linear")


# --------------------------------------------------------------------------------------
# Mesh as a pytree
# --------------------------------------------------------------------------------------


def test_mesh_fields_and_dtypes():
    m = mesh(11)
    names = [f.name for f in dataclasses.fields(Mesh)]
    assert names == list(MESH_FIELDS)
    shapes = {"(N+1,)": (11,), "(N,)": (10,), "()": ()}
    for name in names:
        a = getattr(m, name)
        assert isinstance(a, np.ndarray) and a.dtype == np.float64, name  # host arrays (no per-array transfer)
        assert a.shape == shapes[MESH_FIELDS[name].shape], name
    leaves, treedef = jax.tree_util.tree_flatten(m)
    assert len(leaves) == len(names)
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(back, Mesh) and all(getattr(back, k) is getattr(m, k) for k in names)
    assert m.number_of_cells == 10 and m.number_of_nodes == 11


@pytest.mark.usefixtures("x64")  # the test's own jitted function of a Mesh, in float64 as a user runs it
def test_mesh_jit_no_retrace():
    traces = []

    @jax.jit
    def total_heat_capacity_proxy(mesh):
        traces.append(1)  # runs only while tracing
        return jnp.sum(mesh.mass_stag) + mesh.core_mass + jnp.sum(mesh.area_basic * mesh.dxidr_basic)

    a = mesh(21)
    b = build_mesh(7.0e6, 3.0e6, 21, core_density=9000.0, mass_coordinates=False,
                   mixing_length_profile="constant", structure=AdamsWilliamson(beta=2e-7))
    ra = total_heat_capacity_proxy(a)
    rb = total_heat_capacity_proxy(b)
    assert len(traces) == 1  # same shapes: no retrace for a different mesh
    # and the result is the new mesh's, not a stale constant (rtol 1e-14: summation order)
    nb = b.to_numpy()
    ref = nb["mass_stag"].sum() + nb["core_mass"] + np.sum(nb["area_basic"] * nb["dxidr_basic"])
    assert float(rb) == pytest.approx(ref, rel=1e-14)
    assert float(ra) != float(rb)
    total_heat_capacity_proxy(mesh(31))
    assert len(traces) == 2  # a new size retraces (the counter works)


# --------------------------------------------------------------------------------------
# Builder validation and mesh_from_params
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(number_of_nodes=0), r"number_of_nodes must be >= 2.*got 0"),
        (dict(number_of_nodes=1), r"number_of_nodes must be >= 2.*got 1"),
        (dict(number_of_nodes=2.5), r"number_of_nodes must be an integer.*2\.5"),
        (dict(number_of_nodes=True), r"number_of_nodes must be an integer"),
        (dict(outer_radius=-1.0), r"outer_radius must be finite and > 0, got -1\.0"),
        (dict(inner_radius=0.0), r"inner_radius must be finite and > 0, got 0\.0"),
        (dict(inner_radius=7e6), r"inner_radius must be < mesh.outer_radius.*7000000\.0.*6371000\.0"),
        (dict(inner_radius=R_EARTH), r"inner_radius must be < mesh.outer_radius"),
        (dict(outer_radius=float("nan")), r"outer_radius must be finite"),
        (dict(core_density=0.0), r"core_density must be finite and > 0, got 0\.0"),
        (dict(core_density="dense"), r"core_density must be a number > 0, got 'dense'"),
        (dict(mixing_length_constant_fraction=0.0), r"mixing_length_constant_fraction.*> 0"),
        (dict(structure="earth"), r"structure must be an AdamsWilliamson or StructureProfile"),
    ],
)
def test_build_mesh_errors(kwargs, pattern):
    args = dict(outer_radius=R_EARTH, inner_radius=R_CMB, number_of_nodes=11, core_density=RHO_CORE)
    args.update(kwargs)
    with pytest.raises(StructureError, match=pattern) as exc:
        build_mesh(args.pop("outer_radius"), args.pop("inner_radius"), args.pop("number_of_nodes"), **args)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "kwargs, key",
    [
        (dict(surface_density=0.0), "surface_density"),
        (dict(gravity=-9.81), "gravitational_acceleration"),
        (dict(bulk_modulus=float("inf")), "adiabatic_bulk_modulus"),
        (dict(beta=-1e-7), "adams_williamson_beta"),
        (dict(surface_pressure=float("nan")), "surface_pressure"),
    ],
)
def test_adams_williamson_errors(kwargs, key):
    with pytest.raises(StructureError, match=f"mesh.{key}"):
        AdamsWilliamson(**kwargs)


def mesh_section(**kw):
    base = dict(
        outer_radius=R_EARTH, inner_radius=R_CMB, number_of_nodes=25,
        mixing_length_profile="nearest_boundary", mixing_length_constant_fraction=0.25,
        core_density=RHO_CORE, mass_coordinates=True, eos_method=1, eos_file="",
        surface_density=RHO_S, gravitational_acceleration=G, adiabatic_bulk_modulus=K_S,
        adams_williamson_beta=0.0, surface_pressure=0.0,
    )
    base.update(kw)
    return types.SimpleNamespace(**base)


def assert_mesh_equal(a: Mesh, b: Mesh, rtol=0.0):
    da, db = a.to_numpy(), b.to_numpy()
    for k in da:
        np.testing.assert_allclose(da[k], db[k], rtol=rtol, atol=0, err_msg=k)


def test_mesh_from_params_matches_build_mesh():
    p = mesh_section(surface_pressure=1e5, adams_williamson_beta=1.8e-7,
                     mixing_length_profile="constant", mixing_length_constant_fraction=0.3)
    ref = build_mesh(R_EARTH, R_CMB, 25, core_density=RHO_CORE, mixing_length_profile="constant",
                     mixing_length_constant_fraction=0.3,
                     structure=AdamsWilliamson(RHO_S, G, K_S, beta=1.8e-7, surface_pressure=1e5))
    assert_mesh_equal(mesh_from_params(p), ref)
    ref_r = mesh(25, mass_coordinates=False)
    assert_mesh_equal(mesh_from_params(mesh_section(mass_coordinates=False)), ref_r)


def test_mesh_from_params_optional_keys_default():
    p = types.SimpleNamespace(outer_radius=R_EARTH, inner_radius=R_CMB, number_of_nodes=25,
                              mixing_length_profile="nearest_boundary", core_density=RHO_CORE)
    assert_mesh_equal(mesh_from_params(p), mesh(25))
    del p.core_density
    with pytest.raises(StructureError, match="mesh.core_density is required"):
        mesh_from_params(p)


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(eos_method=3), r"mesh.eos_method must be 1.*or 2.*got 3"),
        (dict(eos_method=2, eos_file=""), r"mesh.eos_file must name a structure file.*''"),
        (dict(number_of_nodes=1), r"mesh.number_of_nodes must be >= 2.*got 1"),
        (dict(mixing_length_profile="mlt"), r"mesh.mixing_length_profile.*'mlt'"),
    ],
)
def test_mesh_from_params_errors(kw, pattern):
    with pytest.raises(StructureError, match=pattern):
        mesh_from_params(mesh_section(**kw))
