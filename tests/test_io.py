"""Output layer (aragog.io): RunHistory, netCDF write/read, plot, summary.

Everything runs on synthetic histories (a cooling magma ocean built from closed forms),
so these tests need neither JAX nor an equation-of-state table.
"""

from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import aragog.io
from aragog.errors import AragogError
from aragog.io import RunHistory, plot_run, read_netcdf, select_snapshots, summarize, write_netcdf
from aragog.solver import FIELD_META
from aragog.fields import FieldMeta

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
R_CMB, R_SURF = 3.48e6, 6.371e6


def cooling_history(n_cells: int = 24, n_t: int = 80, n_s: int = 5, t_end: float = 1.0e6) -> RunHistory:
    """A synthetic magma-ocean cooling run: T_pot(t) = 1500 + 2500 / sqrt(1 + t / 30 yr)."""
    r_basic = np.linspace(R_CMB, R_SURF, n_cells + 1)
    r_stag = 0.5 * (r_basic[1:] + r_basic[:-1])
    time = np.concatenate([[0.0], np.logspace(0.0, np.log10(t_end), n_t - 1)])

    def depth(r):
        return (R_SURF - r) / (R_SURF - R_CMB)

    def temperature(t, r):
        return (1500.0 + 2500.0 / np.sqrt(1.0 + t / 30.0)) * (1.0 + 0.9 * depth(r))

    def melt_fraction(t, r):
        solidus = 1400.0 + 2600.0 * depth(r) ** 0.8
        return np.clip((temperature(t, r) - solidus) / 500.0, 0.0, 1.0)

    volume = r_basic[1:] ** 3 - r_basic[:-1] ** 3
    f_surface = 2.0e6 / (1.0 + time / 3.0) ** 1.2 + 0.08
    f_cmb = 4.0e3 / np.sqrt(1.0 + time / 1.0e3)
    idx = select_snapshots(time, n_s)
    ts = time[idx]
    return RunHistory(
        time=time,
        scalars={
            "T_magma": temperature(time, R_SURF),
            "T_core": temperature(time, R_CMB),
            "Phi_global": np.array([np.sum(melt_fraction(t, r_stag) * volume) / volume.sum() for t in time]),
            "F_surface": f_surface,
            "F_cmb": f_cmb,
            "n_steps": np.arange(n_t, dtype=float),
        },
        snapshot_time=ts,
        profiles={
            "T_stag": np.array([temperature(t, r_stag) for t in ts]),
            "phi_stag": np.array([melt_fraction(t, r_stag) for t in ts]),
            "T_basic": np.array([temperature(t, r_basic) for t in ts]),
            "heat_flux": np.array([np.linspace(f_cmb[i], f_surface[i], n_cells + 1) for i in idx]),
        },
        r_stag=r_stag,
        r_basic=r_basic,
        attrs={
            "aragog_version": "26.12.01",
            "integrator": "cvode",
            "status": 0,
            "message": "end time reached",
            "config": "[mesh]\nnumber_of_nodes = 25\n\n[solver]\nend_time = 1e6\n",
            "created": "2025-01-01T00:00:00+00:00",
            "rtol": 1.0e-8,
            "nsteps": 1234,
        },
        extra_meta={"n_steps": FieldMeta("scalar", "1", "cumulative number of integrator steps")},
    )


@pytest.fixture
def history() -> RunHistory:
    return cooling_history()


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --------------------------------------------------------------------------------------
# RunHistory and select_snapshots
# --------------------------------------------------------------------------------------


def test_history_normalises_to_float64_copies(history):
    src = [1, 2, 3]
    h = RunHistory(time=src, r_stag=[1.0], r_basic=[0.5, 1.5], scalars={"T_magma": [3, 2, 1]})
    assert h.time.dtype == np.float64 and h.scalars["T_magma"].dtype == np.float64
    assert h.n_times == 3 and h.n_snapshots == 0 and h.n_cells == 1
    assert history.meta("T_stag") == FIELD_META["T_stag"]
    assert history.meta("n_steps").units == "1"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(r_basic=np.linspace(0, 1, 10)), r"r_basic: expected N\+1 = 25"),
        (dict(scalars={"T_magma": np.ones(3)}), r"scalars\['T_magma'\]: expected shape \(80,\)"),
        (dict(profiles={"T_stag": np.ones((5, 25))}), r"staggered field, expected shape \(n_snapshots, N\) = \(5, 24\)"),
        (dict(profiles={"heat_flux": np.ones((5, 24))}), r"basic field, expected shape \(n_snapshots, N\+1\) = \(5, 25\)"),
        (dict(profiles={"T_stag": np.ones(24)}), r"expected a 2-D array"),
        (dict(scalars={"not_a_field": np.ones(80)}), r"unknown variable 'not_a_field'"),
        (dict(scalars={"T_stag": np.ones(80)}), r"is a staggered profile, not a scalar"),
        (dict(profiles={"T_magma": np.ones((5, 24))}), r"is a scalar; put it in RunHistory.scalars"),
        (dict(attrs={"history": "x"}), r"'history' is written by aragog itself"),
        (dict(attrs={"Conventions": "x"}), r"reserved"),
        (dict(attrs={"ok": True}), r"booleans are not supported"),
        (dict(attrs={"ok": [1, 2]}), r"unsupported type list"),
        (dict(attrs={"_hidden": 1}), r"invalid attribute name"),
        (dict(time=np.r_[0.0, 2.0, 1.0] ), r"non-decreasing"),
        (dict(time=np.r_[0.0, np.nan]), r"finite"),
        (dict(time=np.zeros(0)), r"at least one output time"),
        (dict(extra_meta={"T_magma": FieldMeta("scalar", "K", "x")}), r"already described by FIELD_META"),
        (dict(extra_meta={"x": FieldMeta("volume", "K", "x")}), r"dim must be one of"),
        (dict(extra_meta={"time": FieldMeta("scalar", "yr", "t")}, scalars={"time": np.ones(80)}), r"coordinate variable"),
        (dict(extra_meta={"a b": FieldMeta("scalar", "1", "x")}, scalars={"a b": np.ones(80)}), r"invalid variable name"),
    ],
)
def test_history_validation_errors(history, change, match):
    fields = {f: getattr(history, f) for f in (
        "time", "scalars", "snapshot_time", "profiles", "r_stag", "r_basic", "attrs", "extra_meta")}
    if "time" in change:  # keep everything else consistent with the new time axis
        fields["scalars"] = {}
    fields.update(change)
    with pytest.raises(ValueError, match=match):
        RunHistory(**fields)


def test_history_accepts_plain_tuple_meta_and_numpy_attrs():
    h = RunHistory(
        time=[0.0, 1.0], r_stag=[1.0, 2.0], r_basic=[0.5, 1.5, 2.5],
        scalars={"x": [1.0, 2.0]}, extra_meta={"x": ("scalar", "m", "a length")},
        attrs={"i": np.int32(3), "f": np.float32(0.5), "s": "text"},
    )
    assert h.extra_meta["x"] == FieldMeta("scalar", "m", "a length")
    assert h.attrs == {"i": 3, "f": 0.5, "s": "text"}
    assert type(h.attrs["i"]) is int and type(h.attrs["f"]) is float


@pytest.mark.parametrize("n_t", [1, 2, 3, 7, 10, 101])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 200])
def test_select_snapshots(n_t, n):
    times = np.linspace(0.0, 1.0, n_t)
    idx = select_snapshots(times, n)
    assert idx.dtype.kind == "i"
    assert len(idx) == min(n, n_t)
    assert np.all(np.diff(idx) > 0), "indices strictly increasing (distinct)"
    assert idx[-1] == n_t - 1, "the last output time is always kept"
    if n >= 2:
        assert idx[0] == 0, "the first output time is kept"
    if n >= n_t:
        np.testing.assert_array_equal(idx, np.arange(n_t))
    else:
        # evenly spread: gaps differ by at most one index
        gaps = np.diff(idx)
        assert gaps.size == 0 or gaps.max() - gaps.min() <= 1


def test_select_snapshots_errors():
    with pytest.raises(ValueError, match="positive integer"):
        select_snapshots(np.arange(5.0), 0)
    with pytest.raises(ValueError, match="1-D"):
        select_snapshots(np.ones((2, 2)), 2)
    assert select_snapshots(np.zeros(0), 3).size == 0


# --------------------------------------------------------------------------------------
# netCDF: round trip and layout
# --------------------------------------------------------------------------------------


def test_round_trip_is_exact(tmp_path, history):
    # Values a lossy path would change: NaN, inf, -0.0, a subnormal, a non-representable decimal.
    history.profiles["T_stag"][1, :4] = [np.nan, np.inf, -0.0, 5e-324]
    history.scalars["F_cmb"][3] = np.nan
    history.attrs["weird"] = "ünïcode, and\na second line"
    history.attrs["nan_attr"] = float("nan")
    history.validate()
    path = write_netcdf(tmp_path / "run.nc", history)
    assert path == tmp_path / "run.nc"
    back = read_netcdf(path)

    assert back.equals(history)
    for name in ("time", "snapshot_time", "r_stag", "r_basic"):
        a, b = getattr(history, name), getattr(back, name)
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    assert back.scalars.keys() == history.scalars.keys()
    assert back.profiles.keys() == history.profiles.keys()
    for name, values in {**history.scalars, **history.profiles}.items():
        np.testing.assert_array_equal(back.scalars.get(name, back.profiles.get(name)), values)
    # -0.0 keeps its sign bit, the subnormal survives
    assert math.copysign(1.0, back.profiles["T_stag"][1, 2]) == -1.0
    assert back.profiles["T_stag"][1, 3] == 5e-324
    # attributes with their Python types
    for key, value in history.attrs.items():
        assert type(back.attrs[key]) is type(value), key
        assert back.attrs[key] == value or (isinstance(value, float) and math.isnan(value))
    assert back.attrs.keys() == history.attrs.keys()
    assert back.extra_meta == {"n_steps": FieldMeta("scalar", "1", "cumulative number of integrator steps")}

    # A second round trip (read -> write -> read) is stable too; == is the exact comparison.
    again = read_netcdf(write_netcdf(tmp_path / "again.nc", back))
    assert again == history
    changed = read_netcdf(path)
    changed.scalars["T_magma"][-1] = np.nextafter(changed.scalars["T_magma"][-1], 0.0)
    assert changed != history, "one ulp differs"
    changed = read_netcdf(path)
    changed.attrs["status"] = 0.0  # same value, other type
    assert changed != history
    assert "n_times=80" in repr(history) and len(repr(history)) < 600


def test_round_trip_without_snapshots(tmp_path):
    h = RunHistory(time=[0.0, 10.0], r_stag=[1.0, 2.0], r_basic=[0.5, 1.5, 2.5],
                   scalars={"T_magma": [3000.0, 2900.0]})
    back = read_netcdf(write_netcdf(tmp_path / "empty.nc", h))
    assert back.equals(h) and back.n_snapshots == 0 and back.attrs == {}


def test_every_variable_has_units_and_long_name(tmp_path, history):
    path = write_netcdf(tmp_path / "run.nc", history)
    with netCDF4.Dataset(path) as ds:
        assert ds.variables, "file has variables"
        for name, var in ds.variables.items():
            attrs = var.ncattrs()
            assert "units" in attrs and "long_name" in attrs, name
            assert var.getncattr("long_name").strip(), name
        # global attributes
        assert ds.Conventions == "CF-1.8"
        assert ds.title
        assert ds.source == f"aragog {aragog.__version__}"
        assert "aragog" in ds.history
        for key, value in history.attrs.items():
            assert ds.getncattr(key) == value
        # dimensions
        assert ds.dimensions["time"].isunlimited() and len(ds.dimensions["time"]) == history.n_times
        assert len(ds.dimensions["snapshot"]) == history.n_snapshots
        assert len(ds.dimensions["staggered"]) == history.n_cells
        assert len(ds.dimensions["basic"]) == history.n_cells + 1
        # coordinates
        assert ds["time"].dimensions == ("time",) and ds["time"].units == "yr" and ds["time"].axis == "T"
        assert ds["snapshot_time"].dimensions == ("snapshot",) and ds["snapshot_time"].units == "yr"
        for name, dim in (("radius_staggered", "staggered"), ("radius_basic", "basic")):
            assert ds[name].dimensions == (dim,) and ds[name].units == "m" and ds[name].positive == "up"
        # data variables: dims, units and long names from FIELD_META
        for name in history.scalars:
            assert ds[name].dimensions == ("time",)
            assert ds[name].units == history.meta(name).units
            assert ds[name].long_name == history.meta(name).long_name
        assert ds["T_stag"].dimensions == ("snapshot", "staggered")
        assert ds["T_stag"].coordinates == "snapshot_time radius_staggered"
        assert ds["heat_flux"].dimensions == ("snapshot", "basic")
        assert ds["heat_flux"].coordinates == "snapshot_time radius_basic"
        assert ds["T_stag"].units == "K" and ds["heat_flux"].units == "W m-2"


# --------------------------------------------------------------------------------------
# netCDF: atomic write and errors
# --------------------------------------------------------------------------------------


def test_write_leaves_no_temporary_file_and_replaces(tmp_path, history):
    target = tmp_path / "run.nc"
    write_netcdf(target, history)
    assert _files(tmp_path) == ["run.nc"]
    history.scalars["T_magma"] = history.scalars["T_magma"] + 1.0
    write_netcdf(str(target), history)  # overwrite; str paths accepted
    assert _files(tmp_path) == ["run.nc"]
    np.testing.assert_array_equal(read_netcdf(target).scalars["T_magma"], history.scalars["T_magma"])


def test_new_file_gets_umask_permissions(tmp_path, history):
    old = os.umask(0o022)
    try:
        path = write_netcdf(tmp_path / "run.nc", history)
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o644


def test_failure_mid_write_keeps_existing_file(tmp_path, history, monkeypatch):
    target = tmp_path / "run.nc"
    write_netcdf(target, history)
    before = target.read_bytes()

    import aragog.io._netcdf as nc  # private: _data_variable, patched to fail mid-write

    real = nc._data_variable
    calls = []

    def exploding(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 3:  # after the coordinates and two data variables
            raise RuntimeError("simulated failure in the middle of the write")
        return real(*args, **kwargs)

    monkeypatch.setattr(nc, "_data_variable", exploding)
    changed = cooling_history(n_t=50)
    with pytest.raises(AragogError, match="simulated failure") as info:
        write_netcdf(target, changed)
    assert str(target) in str(info.value) and "\n" not in str(info.value)
    assert len(calls) == 3
    assert _files(tmp_path) == ["run.nc"], "temporary file removed"
    assert target.read_bytes() == before, "existing file untouched"

    # A non-I/O exception (a bug) propagates unchanged, with the same clean-up.
    def buggy(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(nc, "_data_variable", buggy)
    with pytest.raises(KeyError):
        write_netcdf(target, changed)
    assert _files(tmp_path) == ["run.nc"] and target.read_bytes() == before


def test_invalid_history_is_rejected_before_any_file_is_created(tmp_path, history):
    history.scalars["T_magma"] = np.ones(3)  # mutated after construction
    with pytest.raises(ValueError, match="T_magma"):
        write_netcdf(tmp_path / "run.nc", history)
    assert _files(tmp_path) == []
    with pytest.raises(TypeError):
        write_netcdf(tmp_path / "run.nc", {"time": [0.0]})


def test_missing_directory_is_an_aragog_error(tmp_path, history):
    target = tmp_path / "no" / "such" / "run.nc"
    with pytest.raises(AragogError, match="does not exist") as info:
        write_netcdf(target, history)
    assert str(target) in str(info.value) and "\n" not in str(info.value)


def test_target_is_a_directory(tmp_path, history):
    (tmp_path / "run.nc").mkdir()
    with pytest.raises(AragogError, match="is a directory"):
        write_netcdf(tmp_path / "run.nc", history)


def test_unwritable_directory_is_an_aragog_error(tmp_path, history):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running with privileges that ignore directory permissions (root)")
        target = locked / "run.nc"
        with pytest.raises(AragogError, match="not writable") as info:
            write_netcdf(target, history)
        assert str(target) in str(info.value) and "\n" not in str(info.value)
        assert _files(locked) == []
    finally:
        locked.chmod(0o700)


def test_unwritable_directory_simulated(tmp_path, history, monkeypatch):
    # Same check that runs as root too: creating the temporary file is refused.
    import aragog.io._atomic as atomic  # private: its os.open, patched to refuse

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(atomic.os, "open", refuse)
    target = tmp_path / "run.nc"
    with pytest.raises(AragogError, match=r"is not writable \(Permission denied\)") as info:
        write_netcdf(target, history)
    assert str(target) in str(info.value) and "\n" not in str(info.value)


def test_read_missing_file(tmp_path):
    path = tmp_path / "missing.nc"
    with pytest.raises(AragogError, match="does not exist") as info:
        read_netcdf(path)
    assert str(path) in str(info.value)


def test_read_non_netcdf_file(tmp_path):
    path = tmp_path / "notes.nc"
    path.write_text("this is not a netCDF file\n")
    with pytest.raises(AragogError, match="not a readable netCDF file") as info:
        read_netcdf(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(AragogError, match="is a directory"):
        read_netcdf(tmp_path)


def test_read_netcdf_that_aragog_did_not_write(tmp_path):
    path = tmp_path / "other.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.source = "some other model"
        ds.createDimension("x", 3)
        ds.createVariable("x", "f8", ("x",))[:] = [1.0, 2.0, 3.0]
    with pytest.raises(AragogError, match="not aragog output") as info:
        read_netcdf(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_read_ignores_foreign_additions(tmp_path, history):
    # A file post-processed by another tool (extra variable, attribute, dimension) still reads.
    path = write_netcdf(tmp_path / "run.nc", history)
    with netCDF4.Dataset(path, "a") as ds:
        ds.setncattr("NCO", "netCDF Operators version 5")
        ds.setncattr("_odd", 1)
        ds.createDimension("band", 2)
        ds.createVariable("band_edges", "f8", ("band",))[:] = [1.0, 2.0]
    back = read_netcdf(path)
    assert back.attrs["NCO"] == "netCDF Operators version 5"
    back.attrs.pop("NCO")
    assert back.equals(history)


# --------------------------------------------------------------------------------------
# plot
# --------------------------------------------------------------------------------------


def _assert_png(path: Path, min_bytes: int = 20_000) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > min_bytes
    # IHDR: width and height (big-endian) of the 12 x 8.5 in figure at 150 dpi
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1800, 1275)


def test_plot_from_file_default_name(tmp_path, history):
    import matplotlib

    backend = matplotlib.get_backend()
    had_pyplot = "matplotlib.pyplot" in sys.modules
    nc = write_netcdf(tmp_path / "run.nc", history)
    png = plot_run(nc)
    assert png == tmp_path / "run.png"
    _assert_png(png)
    assert _files(tmp_path) == ["run.nc", "run.png"], "no temporary file left"
    assert matplotlib.get_backend() == backend, "the global backend is left alone"
    assert had_pyplot or "matplotlib.pyplot" not in sys.modules


def test_plot_history_needs_an_output_path(tmp_path, history):
    with pytest.raises(ValueError, match="out_png"):
        plot_run(history)
    _assert_png(plot_run(history, tmp_path / "fig.png"))
    with pytest.raises(TypeError):
        plot_run(42)


@pytest.mark.parametrize("case", ["linear_time_sign_changing_flux", "one_snapshot", "nothing_recorded"])
def test_plot_edge_cases(tmp_path, case):
    h = cooling_history(n_s=1 if case == "one_snapshot" else 5)
    if case == "linear_time_sign_changing_flux":
        h.time = np.linspace(0.0, 50.0, h.n_times)
        h.scalars["F_surface"] = 100.0 * np.cos(h.time / 8.0)
        h.snapshot_time = np.linspace(0.0, 50.0, h.n_snapshots)
    elif case == "nothing_recorded":
        h.scalars, h.profiles, h.snapshot_time = {}, {}, np.zeros(0)
    _assert_png(plot_run(h, tmp_path / f"{case}.png"), min_bytes=5_000)


def test_plot_errors(tmp_path, history):
    with pytest.raises(AragogError, match="does not exist"):
        plot_run(tmp_path / "missing.nc")
    with pytest.raises(AragogError, match="directory .* does not exist"):
        plot_run(history, tmp_path / "nowhere" / "fig.png")


# --------------------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------------------


def test_summarize_mentions_the_key_numbers(tmp_path, history):
    path = write_netcdf(tmp_path / "run.nc", history)
    text = summarize(path)
    assert str(path) in text
    for expected in (
        "26.12.01", "cvode", "end time reached", "80 output times", "5 profile snapshots",
        "N = 24 cells", "3480", "6371", "0 .. 1e+06 yr",
    ):
        assert expected in text, expected
    for name in ("T_magma", "T_core", "Phi_global", "F_surface", "F_cmb"):
        first, last = history.scalars[name][0], history.scalars[name][-1]
        line = next(line for line in text.splitlines() if line.strip().startswith(name + " "))
        assert f"{first:.6g}" in line and f"{last:.6g}" in line and "->" in line, line
    # T_magma: 1500 + 2500 = 4000 K at t = 0
    assert "4000" in text
    # variable list with dims and units
    assert any("T_stag" in line and "(snapshot, staggered)" in line and " K " in line for line in text.splitlines())
    assert any("F_surface" in line and "(time)" in line and "W m-2" in line for line in text.splitlines())
    assert any("n_steps" in line and "cumulative number" in line for line in text.splitlines())
    assert summarize(history).startswith("file           (in memory)")


def test_summarize_sparse_history_and_errors(tmp_path):
    h = RunHistory(time=[5.0], r_stag=[1.0e6], r_basic=[0.5e6, 1.5e6], scalars={"T_magma": [np.nan]})
    text = summarize(h)
    assert "unknown" in text and "nan -> nan" in text and "1 output time," in text
    with pytest.raises(AragogError):
        summarize(tmp_path / "missing.nc")


# --------------------------------------------------------------------------------------
# package hygiene
# --------------------------------------------------------------------------------------


def test_io_does_not_import_jax_or_the_solver():
    io_dir = Path(aragog.io.__file__).parent
    for source in io_dir.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert not name.split(".")[0] == "jax", f"{source.name} imports {name}"
                if name.startswith("aragog.solver"):
                    assert name == "aragog.solver._output", f"{source.name} imports {name}"


def test_import_is_light():
    # matplotlib is imported only when a plot is made (unless aragog itself imports it).
    code = (
        "import sys, aragog; before = 'matplotlib' in sys.modules; import aragog.io; "
        "assert before or 'matplotlib' not in sys.modules, 'aragog.io imported matplotlib'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_names():
    assert set(aragog.io.__all__) == {
        "RunHistory", "select_snapshots", "write_netcdf", "read_netcdf", "plot_run", "summarize"}


def test_plot_profiles_against_depth_and_pressure(tmp_path):
    """`against`: depth below the surface or pressure (the cells' P_stag) on the profile
    panels; pressure without P_stag profiles is refused in one line, as is an unknown axis."""
    from aragog.errors import AragogError

    h = cooling_history()
    _assert_png(plot_run(h, tmp_path / "depth.png", against="depth"))
    with pytest.raises(AragogError, match="no pressure profiles"):
        plot_run(h, tmp_path / "p.png", against="pressure")
    depth = (h.r_basic.max() - h.r_stag) / (h.r_basic.max() - h.r_basic.min())
    h.profiles["P_stag"] = np.array([135e9 * depth for _ in h.snapshot_time])
    h.scalars["RF_depth"] = np.clip(1.0 - h.scalars["Phi_global"], 0.0, 1.0)
    _assert_png(plot_run(h, tmp_path / "p.png", against="pressure"))
    with pytest.raises(AragogError, match="radius, depth, pressure"):
        plot_run(h, tmp_path / "x.png", against="temperature")


def test_output_times():
    """solver.output_spacing: "linear" is numpy's linspace; "log" starts at t0, then steps
    evenly in log(t - t0) from min(1 yr, window/1000), and ends exactly at t1."""
    from aragog.solver import output_times

    np.testing.assert_array_equal(output_times(5.0, 105.0, 11), np.linspace(5.0, 105.0, 11))
    t = output_times(100.0, 1.0e6 + 100.0, 7, "log")
    assert t[0] == 100.0 and t[-1] == 1.0e6 + 100.0 and len(t) == 7
    np.testing.assert_allclose(np.diff(np.log10(t[1:] - 100.0)), 1.2, rtol=1e-12)  # 1 yr .. 1e6 yr
    assert output_times(0.0, 10.0, 3, "log")[1] == pytest.approx(0.01)  # window/1000 below 1 yr
    with pytest.raises(ValueError, match="linear' or 'log"):
        output_times(0.0, 1.0, 3, "cubic")
