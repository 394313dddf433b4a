"""Structure file (r, P, ρ, g): reading, validation, PCHIP interpolation, coverage."""

from __future__ import annotations

import types

import numpy as np
import pytest

from aragog.errors import StructureError
from aragog.structure import (
    AdamsWilliamson,
    StructureProfile,
    build_mesh,
    mesh_from_params,
    read_structure_file,
    write_structure_file,
)

R_EARTH, R_CMB, RHO_CORE = 6371e3, 3504e3, 10738.33


def write_aw_file(path, n_rows=1777, r_lo=R_CMB, r_hi=R_EARTH, reverse=False, aw=None):
    aw = aw or AdamsWilliamson()
    r = np.linspace(r_lo, r_hi, n_rows)
    if reverse:
        r = r[::-1]
    write_structure_file(path, r, aw.pressure(r, R_EARTH), aw.density(r, R_EARTH), aw.gravity_at(r, R_EARTH))
    return path


def write_text(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("mass_coordinates", [True, False])
def test_file_from_aw_reproduces_aw_mesh(tmp_path, mass_coordinates):
    aw = AdamsWilliamson(surface_pressure=1e5)
    f = write_aw_file(tmp_path / "aw.dat", aw=aw)
    kw = dict(core_density=RHO_CORE, mass_coordinates=mass_coordinates)
    m_file = build_mesh(R_EARTH, R_CMB, 41, structure=StructureProfile.from_file(f), **kw).to_numpy()
    m_aw = build_mesh(R_EARTH, R_CMB, 41, structure=aw, **kw).to_numpy()
    # PCHIP tolerance: 1776 intervals of h ≈ 1.6 km (rows not aligned with the nodes),
    # β h ≈ 2.5e-4. PCHIP's derivative estimates are O(h²) accurate on a smooth monotone
    # profile, so its relative interpolation error is at most ~(β h)³ ~ 2e-11 (ρ, P, and
    # the mass integral). Observed: ≲ 2e-11 for P near the surface (where P is small),
    # ~1e-13 for ρ, dξ/dr and masses, ~1e-15 for the radii. rtol 1e-9 leaves margin.
    for k in ("r_basic", "r_stag", "xi_basic", "xi_stag", "P_basic", "P_stag", "rho_basic",
              "rho_stag", "mass_stag", "volume_stag", "dxidr_basic", "dxidr_stag",
              "mantle_mass", "mean_density", "g_basic", "g_stag"):
        np.testing.assert_allclose(m_file[k], m_aw[k], rtol=1e-9, err_msg=k)
    # surface pressure: P_s exactly at a table row (PCHIP interpolates the rows exactly)
    assert float(m_file["surface_pressure"]) == pytest.approx(1e5, rel=1e-12)
    if mass_coordinates:
        # equal mass per unit ξ³ on the file's own (PCHIP) density, to the 1e-10 requirement
        xi = m_file["xi_basic"]
        per = m_file["mass_stag"] / (4 / 3 * np.pi * (xi[1:] ** 3 - xi[:-1] ** 3))
        np.testing.assert_allclose(per, m_file["mean_density"], rtol=1e-10)


def test_descending_rows_and_comments(tmp_path):
    up = write_aw_file(tmp_path / "up.dat", n_rows=301)
    down = write_aw_file(tmp_path / "down.dat", n_rows=301, reverse=True)
    text = down.read_text().splitlines()
    text.insert(3, "")
    text.insert(5, "   # indented comment")
    text[7] = text[7] + "   # trailing comment"
    down.write_text("\n".join(text) + "\n")
    a = build_mesh(R_EARTH, R_CMB, 21, core_density=RHO_CORE, structure=StructureProfile.from_file(up)).to_numpy()
    b = build_mesh(R_EARTH, R_CMB, 21, core_density=RHO_CORE, structure=StructureProfile.from_file(down)).to_numpy()
    for k in a:  # same table, reordered: identical to rounding in the Newton iterate
        np.testing.assert_allclose(a[k], b[k], rtol=1e-14, err_msg=k)
    assert read_structure_file(down)[0, 0] == pytest.approx(R_CMB, rel=1e-15)


def test_extra_columns_ignored(tmp_path):
    # Zalmoxis writes a fifth column; the first four (r, P, rho, g) are used, as upstream.
    four = write_aw_file(tmp_path / "four.dat", n_rows=101)
    rows = np.loadtxt(four)
    five = tmp_path / "five.dat"
    np.savetxt(five, np.column_stack([rows, np.linspace(4000.0, 1500.0, rows.shape[0])]),
               header="r P rho g T", comments="# ")
    np.testing.assert_array_equal(read_structure_file(five), read_structure_file(four))
    a = build_mesh(R_EARTH, R_CMB, 11, core_density=RHO_CORE, structure=StructureProfile.from_file(four)).to_numpy()
    b = build_mesh(R_EARTH, R_CMB, 11, core_density=RHO_CORE, structure=StructureProfile.from_file(five)).to_numpy()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # extra columns are not parsed: a label there is fine, a bad number in the first four is not
    labelled = tmp_path / "labelled.dat"
    labelled.write_text("".join(f"{line} mantle\n" for line in four.read_text().splitlines() if line[:1] != "#"))
    np.testing.assert_array_equal(read_structure_file(labelled), read_structure_file(four))


def test_constant_density_and_linear_gravity_exact(tmp_path):
    # PCHIP reproduces constant and linear data exactly, so ρ̃ ≡ ρ0 and the mass is
    # 4/3 π ρ0 (r³ − r_c³), ξ = r (mass mesh = radius mesh), g linear. Tolerances: rounding.
    r = np.linspace(3.0e6, 6.5e6, 8)
    g = 4.0 + 1e-6 * r
    f = tmp_path / "const.dat"
    write_structure_file(f, r, 1e9 * (6.5e6 - r), np.full_like(r, 5000.0), g)
    m = build_mesh(6.4e6, 3.1e6, 11, core_density=RHO_CORE, structure=StructureProfile.from_file(f)).to_numpy()
    rb = m["r_basic"]
    np.testing.assert_allclose(rb, np.linspace(3.1e6, 6.4e6, 11), rtol=1e-14)
    np.testing.assert_allclose(m["mass_stag"], 4 / 3 * np.pi * 5000.0 * (rb[1:] ** 3 - rb[:-1] ** 3), rtol=1e-11)
    np.testing.assert_allclose(m["g_basic"], 4.0 + 1e-6 * rb, rtol=1e-14)
    np.testing.assert_allclose(m["P_basic"], 1e9 * (6.5e6 - rb), rtol=1e-13)
    np.testing.assert_allclose(m["dxidr_basic"], 1.0, rtol=1e-13)
    assert float(m["mean_density"]) == pytest.approx(5000.0, rel=1e-13)
    assert float(m["surface_pressure"]) == pytest.approx(1e14, rel=1e-13)


def test_file_not_covering_mesh(tmp_path):
    f = write_aw_file(tmp_path / "short.dat", n_rows=101, r_lo=4.0e6)
    prof = StructureProfile.from_file(f)
    with pytest.raises(StructureError, match=r"short\.dat.*covers r = \[4000000\.0, 6371000\.0\].*needs \[3504000\.0, 6371000\.0\]") as e:
        build_mesh(R_EARTH, R_CMB, 11, core_density=RHO_CORE, structure=prof)
    assert "\n" not in str(e.value)
    # the rows are 23.7 km apart: 19 km short at the top is more than half a spacing
    with pytest.raises(StructureError, match="covers.*half a row spacing"):
        build_mesh(R_EARTH * 1.003, 4.0e6, 11, core_density=RHO_CORE, structure=prof)
    # within the 1e-9 relative end tolerance the file still covers the mesh
    build_mesh(R_EARTH * (1 + 5e-10), 4.0e6 * (1 - 5e-10), 11, core_density=RHO_CORE, structure=prof)


def test_table_of_cell_centres_is_extended_linearly(tmp_path, caplog):
    """A table that stops half a row spacing inside the mesh at both ends (cell centres, as
    the upstream aragog 0.2.8's test structure file) is extended by one row on the line
    through its two end rows: P, ρ, g at the mesh's ends are exactly that line's values
    (PCHIP is linear across the added span), the interior is unchanged to the PCHIP
    change of the last interval's slope, and the span is logged."""
    import logging

    n, lo, hi = 99, 5.371e6, 6.371e6
    dr = (hi - lo) / n
    r = lo + dr * (np.arange(n) + 0.5)  # cell centres: half a spacing inside each end
    aw = AdamsWilliamson()
    f = tmp_path / "centres.dat"
    write_structure_file(f, r, aw.pressure(r, hi), aw.density(r, hi), aw.gravity_at(r, hi))
    prof = StructureProfile.from_file(f)
    with caplog.at_level(logging.INFO, logger="aragog.structure"):
        ext = prof.covering(lo, hi)
    assert ext is not prof and ext.radius[0] == lo and ext.radius[-1] == hi
    logged = " ".join(rec.getMessage() for rec in caplog.records)
    assert "extrapolated linearly" in logged and "5371000 m" in logged and "6371000 m" in logged
    for name, f_table in (("pressure", prof.pressure_table), ("density", prof.density_table),
                          ("gravity_at", prof.gravity_table)):
        line_top = f_table[-1] + (f_table[-1] - f_table[-2]) * 0.5
        line_bot = f_table[0] - (f_table[1] - f_table[0]) * 0.5
        tol = {"rel": 1e-12, "abs": 1e-12 * np.max(np.abs(f_table))}  # P at the top is ~0
        values = getattr(ext, name)(np.array([lo, hi]))
        assert values[1] == pytest.approx(line_top, **tol) and values[0] == pytest.approx(line_bot, **tol)
        # and linear across the added half spacing
        mid = getattr(ext, name)(np.array([hi - 0.25 * dr]))[0]
        assert mid == pytest.approx(0.5 * (f_table[-1] + line_top), **tol)
    assert prof.covering(r[0], r[-1]) is prof  # nothing to extend
    # the mesh builds, and it matches Adams-Williamson to the linear extrapolation's error
    mesh = build_mesh(hi, lo, 50, core_density=RHO_CORE, structure=prof).to_numpy()
    np.testing.assert_allclose(mesh["P_basic"], aw.pressure(np.asarray(mesh["r_basic"]), hi), rtol=2e-3, atol=2e6)
    with pytest.raises(StructureError, match="half a row spacing"):
        prof.covering(lo - 0.6 * dr, hi)


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("1 2 3\n4 5 6\n", r"line 1: expected at least 4 columns \(r P rho g; further columns are ignored\), found 3"),
        ("1 2 3 4\n5 6 7 8 9\n", r"line 2: found 5 columns, the rows before have 4"),
        ("1 2 3 4 5\n5 6 7 8\n", r"line 2: found 4 columns, the rows before have 5"),
        ("1 2 3 4\n5 6 x 8\n", r"line 2: not a number"),
        ("1 2 3 4\n2 nan 3 4\n", r"non-finite P = nan in data row 2"),
        ("1 2 3 4\n2 3 inf 4\n", r"non-finite rho = inf"),
        ("1 2 3 4\n3 2 3 4\n2 2 3 4\n", r"strictly monotone.*rows 2 and 3 have r = 3\.0 and 2\.0"),
        ("1 2 3 4\n1 2 3 4\n", r"strictly monotone.*rows 1 and 2"),
        ("1 2 3 4\n2 2 0 4\n", r"density must be > 0, got rho = 0\.0 at r = 2\.0"),
        ("1 2 -3 4\n2 2 3 4\n", r"density must be > 0, got rho = -3\.0 at r = 1\.0"),
        ("# only a comment\n1 2 3 4\n", r"has 1 data row\(s\); at least 2"),
        ("", r"has 0 data row"),
    ],
)
def test_bad_structure_files(tmp_path, text, pattern):
    f = write_text(tmp_path / "bad.dat", text)
    with pytest.raises(StructureError, match=pattern) as e:
        StructureProfile.from_file(f)
    msg = str(e.value)
    assert "bad.dat" in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(StructureError, match=r"nope\.dat.*does not exist"):
        StructureProfile.from_file(tmp_path / "nope.dat")


def test_mesh_from_params_with_file(tmp_path):
    f = write_aw_file(tmp_path / "aw.dat", n_rows=501)
    p = types.SimpleNamespace(
        outer_radius=R_EARTH, inner_radius=R_CMB, number_of_nodes=15,
        mixing_length_profile="nearest_boundary", mixing_length_constant_fraction=0.25,
        core_density=RHO_CORE, mass_coordinates=True, eos_method=2, eos_file=str(f),
        surface_density=1.0, gravitational_acceleration=1.0, adiabatic_bulk_modulus=1.0,
        adams_williamson_beta=0.0, surface_pressure=0.0,
    )
    a = mesh_from_params(p).to_numpy()
    b = build_mesh(R_EARTH, R_CMB, 15, core_density=RHO_CORE, structure=StructureProfile.from_file(f)).to_numpy()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    p.eos_file = str(tmp_path / "missing.dat")
    with pytest.raises(StructureError, match="missing.dat"):
        mesh_from_params(p)
