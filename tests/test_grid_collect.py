"""`aragog grid collect` / `plot` on synthetic grid folders (no solver runs).

Every run file is a :class:`RunHistory` written with :func:`aragog.io.write_netcdf`: its
scalars are simple functions of time, so the collected values can be checked exactly.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from aragog.errors import ConfigError
from aragog.grid import collect_grid
# private: resample, axis_names and the status codes collect_grid writes
from aragog.grid._collect import STATUS_CODES, axis_names, resample
from aragog.grid import plot_grid
from aragog.grid import grid_from_dict
from aragog.grid import GridFolder, PointRecord
from aragog.io import write_netcdf
from aragog.io import RunHistory

EARTH = Path(__file__).resolve().with_name("earth_toy.toml")  # tests/_configs.py
TIMES = [0.0, 10.0, 20.0, 50.0, 100.0]
EMISSIVITY = "boundary_conditions.emissivity"
T_SURF = "initial_condition.surface_temperature"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_grid(root: Path, mode: str, axes: dict, times=TIMES) -> tuple[GridFolder, list]:
    """A grid folder with grid.json as the runner writes it; returns it and its points."""
    spec = grid_from_dict({"base": str(EARTH), "mode": mode, "axes": axes})
    points = spec.points()
    folder = GridFolder(root)
    folder.create({
        "format": 1, "spec_hash": spec.hash(), "spec": spec.identity(), "grid_file": None, "mode": mode,
        "axes": {k: list(v) for k, v in spec.axes.items()}, "shape": list(spec.shape),
        "points": [{"index": p.index, "id": p.id, "values": p.values} for p in points],
        "times": list(times), "created": "2026-01-01T00:00:00+00:00", "aragog_version": "test",
    })
    return folder, points


def run_history(times, n_cells: int = 8, offset: float = 0.0) -> RunHistory:
    """A run: T_magma = 4000 - offset - 2 t (linear), F_surface = 1e5 / (1 + t), two snapshots."""
    t = np.asarray(times, dtype=float)
    r_basic = np.linspace(3.5e6, 6.371e6, n_cells + 1)
    last = np.arange(n_cells) + offset + 1000.0
    return RunHistory(
        time=t, r_stag=0.5 * (r_basic[1:] + r_basic[:-1]), r_basic=r_basic,
        scalars={"T_magma": 4000.0 - offset - 2.0 * t, "Phi_global": 1.0 - t / 200.0, "F_surface": 1e5 / (1.0 + t)},
        snapshot_time=t[[0, -1]],
        profiles={"T_stag": np.stack([last + 500.0, last]),
                  "heat_flux": np.stack([np.ones(n_cells + 1), np.linspace(1.0, 2.0, n_cells + 1)])},
    )


def finish(folder: GridFolder, point, history: RunHistory | None, status: str = "done", **fields) -> None:
    """Write a point's run file (unless None) then its record, as a worker does."""
    if history is not None:
        write_netcdf(folder.netcdf(point.id), history)
    folder.write_record(PointRecord(
        index=point.index, id=point.id, values=point.values, status=status, message=fields.pop("message", status),
        wall_seconds=1.5 + point.index, t_final=None if history is None else float(history.time[-1]),
        file=None if history is None else f"{point.id}.nc", **fields))


@pytest.fixture
def product(tmp_path):
    """2 x 3 grid: p0 done, p1 done on other times, p2 failed (no file), p3 stopped early,
    p4 done on a 12-cell mesh, p5 pending."""
    folder, pts = make_grid(tmp_path / "g", "product", {EMISSIVITY: [0.5, 1.0], T_SURF: [3000.0, 3500.0, 4000.0]})
    finish(folder, pts[0], run_history(TIMES))
    finish(folder, pts[1], run_history([0.0, 5.0, 10.0, 25.0, 100.0], offset=100.0))
    finish(folder, pts[2], None, status="failed", message="CVODE error -4: convergence test failed")
    finish(folder, pts[3], run_history([0.0, 10.0, 15.0, 30.0], offset=300.0), stopped_early=True,
           message="stopped: surface temperature reached its floor")
    finish(folder, pts[4], run_history(TIMES, n_cells=12, offset=400.0))
    return folder


def test_product_layout(product):
    """A product grid has one dimension per axis (short safe names, dotted key and units kept),
    the common time coordinate, the point mapping, and the CF global attributes."""
    ds = collect_grid(product)
    assert ds.T_magma.dims == ("emissivity", "surface_temperature", "time")
    assert ds.T_magma.shape == (2, 3, 5)
    assert ds.emissivity.values.tolist() == [0.5, 1.0]
    assert ds.surface_temperature.attrs == {"long_name": T_SURF, "config_key": T_SURF, "units": "K"}
    assert ds.time.values.tolist() == TIMES and ds.time.attrs["units"] == "yr"
    assert ds.point_index.values.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert ds.point_id.values[1, 2] == "p00005"
    assert ds.attrs["Conventions"] == "CF-1.8" and ds.attrs["points_done"] == 4
    assert ds.attrs["spec_hash"] == product.read_grid()["spec_hash"]
    assert ds.T_magma.attrs == {"units": "K", "long_name": "surface (magma ocean) temperature"}
    assert (product.root / "grid.nc").is_file()


def test_values_copied_and_interpolated(product):
    """Run times equal to the common times are copied bit for bit; other common times inside
    the run's range are interpolated linearly between the run's neighbouring times."""
    ds = collect_grid(product)
    h0 = run_history(TIMES)
    for name in ("T_magma", "Phi_global", "F_surface"):
        assert np.array_equal(ds[name].values[0, 0], h0.scalars[name])
    f = ds.F_surface.values[0, 1]  # run times 0, 5, 10, 25, 100
    assert f[0] == 1e5 and f[1] == 1e5 / 11.0 and f[4] == 1e5 / 101.0
    assert f[2] == pytest.approx(1e5 / 11.0 + (1e5 / 26.0 - 1e5 / 11.0) * (20.0 - 10.0) / 15.0, rel=1e-14)
    assert ds.T_magma.values[0, 1, 3] == pytest.approx(4000.0 - 100.0 - 100.0, rel=1e-14)


def test_nan_padding_and_flags(product):
    """Stopped-early, failed and pending points are NaN outside their own times, and their
    status, message, stopped_early, t_final and wall_seconds come from the records."""
    ds = collect_grid(product)
    t3 = ds.T_magma.values[1, 0]  # run times 0, 10, 15, 30
    assert np.isnan(t3[3:]).all() and t3[2] == pytest.approx(3700.0 - 40.0)
    assert np.isnan(ds.T_magma.values[0, 2]).all() and np.isnan(ds.T_magma.values[1, 2]).all()
    done, failed, pending = STATUS_CODES["done"], STATUS_CODES["failed"], STATUS_CODES["pending"]
    assert ds.status.values.tolist() == [[done, done, failed], [done, done, pending]]
    assert ds.status.attrs["flag_meanings"] == "done failed pending"
    assert ds.stopped_early.values.tolist() == [[False, False, False], [True, False, False]]
    assert ds.message.values[0, 2].startswith("CVODE error -4") and ds.message.values[1, 2] == ""
    assert ds.t_final.values[1, 0] == 30.0 and np.isnan(ds.t_final.values[1, 2])
    assert ds.wall_seconds.values[0, 1] == 2.5 and np.isnan(ds.wall_seconds.values[1, 2])


def test_end_profiles_padded_to_largest_mesh(product):
    """End-state profiles are the last snapshot on each point's own mesh, NaN-padded to the
    largest one, with each point's radii beside them."""
    ds = collect_grid(product)
    assert ds.T_stag.dims == ("emissivity", "surface_temperature", "staggered") and ds.T_stag.shape == (2, 3, 12)
    assert ds.heat_flux.shape == (2, 3, 13) and ds.radius_basic.shape == (2, 3, 13)
    assert np.array_equal(ds.T_stag.values[0, 0, :8], np.arange(8) + 1000.0)
    assert np.isnan(ds.T_stag.values[0, 0, 8:]).all()
    assert np.array_equal(ds.radius_staggered.values[1, 1], run_history(TIMES, n_cells=12).r_stag)
    assert np.isnan(ds.radius_staggered.values[0, 0, 8:]).all() and np.isnan(ds.T_stag.values[0, 2]).all()
    assert ds.profile_time.values[1, 0] == 30.0 and ds.radius_basic.attrs["units"] == "m"


def test_file_reads_back_identical(product):
    """xarray reads grid.nc back identical to the returned dataset: strings, booleans, int8
    codes, axis coordinates and attributes included."""
    ds = collect_grid(product)
    with xr.open_dataset(product.root / "grid.nc") as back:
        back.load()
    xr.testing.assert_identical(back, ds)
    assert back.message.values[1, 0] == "stopped: surface temperature reached its floor"
    assert back.stopped_early.dtype == bool


def test_zip_grid(tmp_path):
    """A zip grid lies along `point`, each axis (float, string, int) a coordinate along it,
    and reads back identical."""
    axes = {EMISSIVITY: [0.3, 0.6, 0.9], "eos.model": ["a", "b", "c"], "mesh.number_of_nodes": [9, 7, 5]}
    folder, pts = make_grid(tmp_path / "z", "zip", axes)
    for p in pts:
        finish(folder, p, run_history(TIMES, offset=10.0 * p.index))
    ds = collect_grid(folder, output=tmp_path / "other.nc")
    assert ds.T_magma.dims == ("point", "time") and ds.T_magma.shape == (3, 5)
    assert ds.emissivity.dims == ("point",) and ds.model.values.tolist() == ["a", "b", "c"]
    assert ds.number_of_nodes.values.tolist() == [9, 7, 5] and ds.number_of_nodes.dtype == np.int64
    assert ds.emissivity.attrs["units"] == "1" and "units" not in ds.number_of_nodes.attrs
    assert ds.T_magma.values[2, 0] == 3980.0
    assert not (folder.root / "grid.nc").exists()
    with xr.open_dataset(tmp_path / "other.nc") as back:
        xr.testing.assert_identical(back.load(), ds)


def test_unreadable_file_counts_as_failed(product):
    """A point whose run file cannot be read is failed with a message naming the file."""
    product.netcdf("p00004").write_bytes(b"not a netCDF file")
    ds = collect_grid(product)
    assert ds.status.values[1, 1] == STATUS_CODES["failed"]
    assert ds.message.values[1, 1].startswith("cannot read p00004.nc")
    assert np.isnan(ds.T_magma.values[1, 1]).all() and ds.T_stag.shape[-1] == 8


def test_clear_errors(tmp_path):
    """Not a grid folder, or a grid where no point has a run yet: a one-line ConfigError."""
    with pytest.raises(ConfigError, match="not a grid output folder"):
        collect_grid(tmp_path)
    folder, pts = make_grid(tmp_path / "g", "product", {EMISSIVITY: [0.5, 1.0]})
    finish(folder, pts[0], None, status="failed")
    with pytest.raises(ConfigError, match=r"no point has finished .*\(0 done, 1 failed, 1 pending\)"):
        collect_grid(folder)


def test_helpers():
    """resample copies exact times, interpolates inside and gives NaN outside; axis names are
    the last key part unless two axes share it."""
    out = resample(np.array([0.0, 1.0, 1.0, 3.0]), np.array([5.0, 6.0, 7.0, 9.0]), np.array([-1, 0, 1, 2, 3, 4.0]))
    assert np.array_equal(out, [np.nan, 5.0, 7.0, 8.0, 9.0, np.nan], equal_nan=True)
    names = axis_names(["a.x", "b.x", "c.time", "d.y"], {"time"})
    assert names == {"a.x": "a_x", "b.x": "b_x", "c.time": "c_time", "d.y": "y"}


def test_plots_are_pngs(product, tmp_path):
    """plot_grid writes a PNG for a 2-axis product grid (collecting grid.nc first) and for a
    zip grid, and collects again when a record is newer than grid.nc."""
    path = plot_grid(product.root)
    assert path == product.root / "grid.png" and path.read_bytes()[:8] == PNG_MAGIC
    assert (product.root / "grid.nc").is_file()
    old = os.stat(product.root / "grid.nc").st_mtime - 10.0
    os.utime(product.root / "grid.nc", (old, old))
    plot_grid(product, tmp_path / "again.png")
    assert os.stat(product.root / "grid.nc").st_mtime > old
    folder, pts = make_grid(tmp_path / "z", "zip", {EMISSIVITY: [0.3, 0.6, 0.9], "eos.model": ["a", "b", "c"]})
    for p in pts[:2]:
        finish(folder, p, run_history(TIMES, offset=10.0 * p.index))
    assert plot_grid(folder).read_bytes()[:8] == PNG_MAGIC


def test_bool_axis(tmp_path):
    """A boolean axis is a bool coordinate that reads back as bool, and a 1-axis grid plots."""
    folder, pts = make_grid(tmp_path / "b", "product", {"mesh.mass_coordinates": [True, False]})
    finish(folder, pts[0], run_history(TIMES))
    ds = collect_grid(folder)
    assert ds.mass_coordinates.values.tolist() == [True, False] and ds.T_magma.dims == ("mass_coordinates", "time")
    with xr.open_dataset(folder.root / "grid.nc") as back:
        xr.testing.assert_identical(back.load(), ds)
    assert plot_grid(folder).read_bytes()[:8] == PNG_MAGIC
