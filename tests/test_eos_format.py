"""SPIDER table format: bit-exact round trips and every malformed-input error."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from aragog import eos
from aragog.eos import _spider_format as sf  # private: exact_scaled, the writer's bit-exact column values
# private: the file names a set's melting curves are read from
from aragog.eos._tables import LIQUIDUS_FILE, SOLIDUS_FILE
from aragog.errors import EOSError

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RTMELT = SHARED_DATA / "spider-RTmelt"
needs_rtmelt = pytest.mark.skipif(not RTMELT.is_dir(), reason=f"reference tables not at {RTMELT}")


def _bits(a) -> np.ndarray:
    """uint64 view: equality of bits (distinguishes -0.0/0.0, exact to the last ulp)."""
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.uint64)


def assert_sets_bit_equal(a: eos.EOSTables, b: eos.EOSTables) -> None:
    for (name, x), (_, y) in zip(a._arrays(), b._arrays()):
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert np.array_equal(_bits(x), _bits(y)), name


@pytest.fixture(scope="module")
def small_set() -> eos.EOSTables:
    return eos.generate_default_tables(np_=7, ns=5)


@pytest.fixture
def small_dir(tmp_path, small_set) -> Path:
    return eos.write_table_set(small_set, tmp_path / "set")


# ----------------------------------------------------------------------------- round trips


def test_generated_set_round_trip_bit_exact(tmp_path):
    gen = eos.generate_default_tables(np_=31, ns=23)
    d1 = eos.write_table_set(gen, tmp_path / "a")
    back = eos.load_table_set(d1)
    assert_sets_bit_equal(gen, back)
    assert back.identity() == gen.identity()
    # write -> read -> write gives byte-identical files
    d2 = eos.write_table_set(back, tmp_path / "b")
    for f in sorted(d1.iterdir()):
        assert f.read_bytes() == (d2 / f.name).read_bytes(), f.name


def test_generated_files_have_spider_layout(small_dir, small_set):
    lines = (small_dir / "temperature_melt.dat").read_text().splitlines()
    assert lines[0] == "# 5 7 5"
    assert all(line.startswith("#") for line in lines[:5])
    assert lines[4].split()[1:] == ["1.0", "1.0", "1.0"]
    rows = np.array([[float(x) for x in line.split()] for line in lines[5:]])
    assert rows.shape == (35, 3)
    # P varies fastest, S slowest
    assert np.array_equal(rows[:7, 0], small_set.melt.P)
    assert np.all(rows[:7, 1] == small_set.melt.S[0])
    assert np.array_equal(rows[7:14, 1], np.full(7, small_set.melt.S[1]))
    one_d = (small_dir / SOLIDUS_FILE).read_text().splitlines()
    assert one_d[0] == "# 5 7"
    assert len(one_d[5].split()) == 2


@needs_rtmelt
def test_rtmelt_read_write_read_bit_exact(tmp_path):
    first = eos.load_table_set(RTMELT)
    out = eos.write_table_set(first, tmp_path / "rt")
    second = eos.load_table_set(out)
    assert_sets_bit_equal(first, second)
    assert second.identity() == first.identity()
    # The files are written with the scale factors they were read with.
    orig = np.array((RTMELT / "density_melt.dat").read_text().splitlines()[4][1:].split(), dtype=float)
    new = np.array((out / "density_melt.dat").read_text().splitlines()[4][1:].split(), dtype=float)
    assert np.array_equal(orig, new)


@needs_rtmelt
def test_rtmelt_loads_with_expected_grid():
    t = eos.load_table_set(RTMELT)
    assert t.melt.shape == (100, 101) and t.solid.shape == (100, 101)  # (NS, NP)
    assert t.solidus.size == 301 and t.liquidus.size == 301
    assert t.melt.has_alpha and t.solid.has_alpha
    # melt and solid have different S axes in this set
    assert t.melt.S[0] != t.solid.S[0]
    assert t.melt.P[-1] == pytest.approx(200e9, rel=1e-12)
    # P is uniform (quarter-cell criterion), the S axes are not
    assert t.melt.P_uniform and not t.melt.S_uniform


@needs_rtmelt
def test_rtmelt_alternative_boundary_files():
    t = eos.load_table_set(RTMELT, solidus="solidus_stixrude2009.dat", liquidus="liquidus_stixrude2009.dat")
    ref = eos.read_table_1d(RTMELT / "solidus_stixrude2009.dat")
    assert np.array_equal(t.solidus.S, ref[1])


def test_exact_scaled_recovers_products():
    rng = np.random.default_rng(1)
    c = rng.random(20000) * 3.0
    for scale in (5.569262893282327e10, 2993.025100070677, 7.242622862093208e-08, 0.1, 3.0):
        si = c * scale
        back = sf.exact_scaled(si, scale)
        assert np.array_equal(back * scale, si)


def test_round_trip_with_awkward_scales(tmp_path):
    rng = np.random.default_rng(2)
    P = np.sort(rng.random(9)) * 1e11
    S = np.sort(rng.random(6)) * 3e3
    Q = rng.random((6, 9)) * 4e3
    scales = (5.569262893282327e10, 2993.025100070677, 4.613109568155063e3)
    sf.write_table_2d(tmp_path / "q.dat", P, S, Q, scales=scales)
    P2, S2, Q2, sc2 = sf.read_table_2d(tmp_path / "q.dat")
    # SI values that were not made as column*scale may be off by an ulp (documented);
    # they are within 2 ulp, and a second write/read cycle is then bit-exact.
    np.testing.assert_allclose(Q2, Q, rtol=4.5e-16, atol=0)
    sf.write_table_2d(tmp_path / "r.dat", P2, S2, Q2, scales=sc2)
    P3, S3, Q3, _ = sf.read_table_2d(tmp_path / "r.dat")
    assert np.array_equal(_bits(Q3), _bits(Q2)) and np.array_equal(P3, P2) and np.array_equal(S3, S2)


@pytest.mark.usefixtures("x64")  # to_jax: the tables as float64 JAX arrays, as a user makes them
def test_read_scales_are_kept_and_are_no_pytree_field(small_dir):
    """The column factors a table was read with survive the set's copies (to_jax, to_numpy)
    and are no pytree field: every __init__ field of a table is a data or meta field, the
    contract every JAX version checks (0.9's ``drop_fields`` handling is broken, so the
    tables must not need it), and a tree_map'ed copy simply has none."""
    import dataclasses

    import jax

    from aragog.eos import PhaseBoundary, PhaseTable

    back = eos.load_table_set(small_dir)
    assert back.melt.scales and back.solidus.scales
    for copy in (back.to_jax(), back.to_numpy()):
        assert copy.melt.scales == back.melt.scales and copy.liquidus.scales == back.liquidus.scales
    for cls, table in ((PhaseTable, back.melt), (PhaseBoundary, back.solidus)):
        leaves, treedef = jax.tree_util.tree_flatten(table)
        n_data = len(leaves)
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init}
        assert "scales" not in init_fields
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
        assert rebuilt.scales is None and len(jax.tree_util.tree_leaves(rebuilt)) == n_data
        assert all(np.array_equal(a, b) for a, b in zip(leaves, jax.tree_util.tree_leaves(rebuilt)))


def test_thermal_exp_optional(small_dir, small_set):
    (small_dir / "thermal_exp_melt.dat").unlink()
    t = eos.load_table_set(small_dir)
    assert t.melt.alpha is None and t.solid.has_alpha
    assert t.identity().has_alpha == (False, True)
    assert t.identity() != small_set.identity()
    # Writing a set without alpha removes a stale thermal_exp file in the target.
    target = eos.write_table_set(small_set, small_dir.parent / "other")
    assert (target / "thermal_exp_melt.dat").exists()
    eos.write_table_set(t, target)
    assert not (target / "thermal_exp_melt.dat").exists()
    assert eos.load_table_set(target).melt.alpha is None


def test_blank_lines_and_trailing_spaces_are_accepted(small_dir, small_set):
    path = small_dir / "density_solid.dat"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:5] + [line + " " for line in lines[5:8]] + [""] + lines[8:]) + "\n\n")
    assert np.array_equal(eos.load_table_set(small_dir).solid.rho, small_set.solid.rho)


# ----------------------------------------------------------------------------- errors


def _rewrite(path: Path, edit) -> None:
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")


def _load_error(directory) -> str:
    with pytest.raises(EOSError) as info:
        eos.load_table_set(directory)
    msg = str(info.value)
    assert "\n" not in msg, "error messages are one line"
    return msg


def test_missing_directory(tmp_path):
    msg = _load_error(tmp_path / "nope")
    assert "not found" in msg and "nope" in msg


def test_missing_required_files_are_listed(small_dir):
    (small_dir / "density_melt.dat").unlink()
    (small_dir / LIQUIDUS_FILE).unlink()
    msg = _load_error(small_dir)
    assert "density_melt.dat" in msg and LIQUIDUS_FILE in msg and "lacks required" in msg


@pytest.mark.parametrize("line1", ["# 4 7 5", "# 5 7", "# 5 7 five", "5 7 5", "# 5 7 5 3", "# 5 1 5"])
def test_wrong_2d_header(small_dir, line1):
    path = small_dir / "temperature_melt.dat"
    _rewrite(path, lambda ls: [line1] + ls[1:])
    msg = _load_error(small_dir)
    assert "temperature_melt.dat" in msg and ("line 1" in msg or "header line 1" in msg)


def test_wrong_1d_header(small_dir):
    _rewrite(small_dir / SOLIDUS_FILE, lambda ls: ["# 5 7 5"] + ls[1:])
    msg = _load_error(small_dir)
    assert SOLIDUS_FILE in msg and "'# 5 N'" in msg


def test_missing_comment_line(small_dir):
    _rewrite(small_dir / "heat_capacity_solid.dat", lambda ls: ls[:2] + ls[3:])  # only 4 '#' lines
    msg = _load_error(small_dir)
    assert "heat_capacity_solid.dat" in msg and "header line 5" in msg


def test_row_count_disagrees_with_header(small_dir):
    _rewrite(small_dir / "density_melt.dat", lambda ls: ls[:-1])
    msg = _load_error(small_dir)
    assert "density_melt.dat" in msg and "7 * 5 = 35" in msg and "34" in msg


def test_header_only_file(small_dir):
    _rewrite(small_dir / "density_melt.dat", lambda ls: ls[:5])
    msg = _load_error(small_dir)
    assert "density_melt.dat" in msg and "no data rows" in msg


def test_wrong_scale_line(small_dir):
    _rewrite(small_dir / "density_melt.dat", lambda ls: ls[:4] + ["# 1.0 1.0"] + ls[5:])
    msg = _load_error(small_dir)
    assert "density_melt.dat" in msg and "line 5" in msg and "3" in msg


def test_zero_scale(small_dir):
    _rewrite(small_dir / "density_melt.dat", lambda ls: ls[:4] + ["# 1.0 0.0 1.0"] + ls[5:])
    assert "scale factor 0.0" in _load_error(small_dir)


def test_wrong_column_count(small_dir):
    def edit(ls):
        ls[9] = " ".join(ls[9].split()[:2])
        return ls

    _rewrite(small_dir / "adiabat_temp_grad_melt.dat", edit)
    msg = _load_error(small_dir)
    assert "adiabat_temp_grad_melt.dat" in msg and "line 10 has 2 columns, expected 3" in msg


def test_non_numeric_value(small_dir):
    def edit(ls):
        parts = ls[12].split()
        ls[12] = f"{parts[0]} {parts[1]} 1.2.3"
        return ls

    _rewrite(small_dir / "temperature_solid.dat", edit)
    msg = _load_error(small_dir)
    assert "temperature_solid.dat" in msg and "line 13" in msg and "1.2.3" in msg


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_non_finite_value_names_the_row(small_dir, bad):
    def edit(ls):
        parts = ls[20].split()
        ls[20] = f"{parts[0]} {parts[1]} {bad}"
        return ls

    _rewrite(small_dir / "heat_capacity_melt.dat", edit)
    msg = _load_error(small_dir)
    assert "heat_capacity_melt.dat" in msg and "non-finite" in msg and "line 21" in msg


def test_grid_not_rectangular_pressure(small_dir):
    def edit(ls):  # second S block (lines 13..19) gets a different P in its third row
        parts = ls[14].split()
        ls[14] = f"{float(parts[0]) * 1.001!r} {parts[1]} {parts[2]}"
        return ls

    _rewrite(small_dir / "density_solid.dat", edit)
    msg = _load_error(small_dir)
    assert "density_solid.dat" in msg and "not rectangular" in msg and "line 15" in msg


def test_grid_not_rectangular_entropy(small_dir):
    def edit(ls):
        parts = ls[15].split()
        ls[15] = f"{parts[0]} {float(parts[1]) + 1.0!r} {parts[2]}"
        return ls

    _rewrite(small_dir / "density_solid.dat", edit)
    msg = _load_error(small_dir)
    assert "density_solid.dat" in msg and "not rectangular" in msg and "S = " in msg


def test_pressure_axis_not_increasing(small_dir):
    # swap the first two P values in every S block (still rectangular)
    def edit(ls):
        body = [line.split() for line in ls[5:]]
        for b in range(5):
            r0, r1 = body[7 * b], body[7 * b + 1]
            r0[0], r1[0] = r1[0], r0[0]
        return ls[:5] + [" ".join(r) for r in body]

    _rewrite(small_dir / "temperature_melt.dat", edit)
    msg = _load_error(small_dir)
    assert "temperature_melt.dat" in msg and "pressure axis not strictly increasing" in msg


def test_entropy_axis_not_increasing(small_dir):
    def edit(ls):  # make block 2's S equal to block 1's
        body = [line.split() for line in ls[5:]]
        s0 = body[0][1]
        for r in body[7:14]:
            r[1] = s0
        return ls[:5] + [" ".join(r) for r in body]

    _rewrite(small_dir / "temperature_melt.dat", edit)
    msg = _load_error(small_dir)
    assert "temperature_melt.dat" in msg and "entropy axis not strictly increasing" in msg


def test_boundary_pressure_not_increasing(small_dir):
    def edit(ls):
        ls[6], ls[7] = ls[7], ls[6]
        return ls

    _rewrite(small_dir / LIQUIDUS_FILE, edit)
    msg = _load_error(small_dir)
    assert LIQUIDUS_FILE in msg and "pressure axis not strictly increasing" in msg


def test_phase_files_must_share_the_grid(small_dir, small_set):
    S = small_set.solid.S * 1.01
    sf.write_table_2d(small_dir / "density_solid.dat", small_set.solid.P, S, small_set.solid.rho)
    msg = _load_error(small_dir)
    assert "density_solid.dat" in msg and "entropy axis" in msg and "temperature_solid.dat" in msg


def test_missing_file_read_directly(tmp_path):
    with pytest.raises(EOSError, match="cannot read"):
        eos.read_table_2d(tmp_path / "x.dat")


def test_unwritable_target_is_an_eos_error(tmp_path, small_set):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(EOSError, match="cannot"):
        eos.write_table_set(small_set, blocker / "sub")


def test_rtmelt_copy_detects_truncation(tmp_path):
    if not RTMELT.is_dir():
        pytest.skip("reference tables absent")
    d = tmp_path / "rt"
    shutil.copytree(RTMELT, d, ignore=shutil.ignore_patterns("*.npz"))
    _rewrite(d / "thermal_exp_solid.dat", lambda ls: ls[:-3])
    msg = _load_error(d)
    assert "thermal_exp_solid.dat" in msg and "10100" in msg and "10097" in msg
