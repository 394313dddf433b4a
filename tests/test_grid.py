"""aragog.grid: grid files, validation before work, the output folder, and real runs on a
local Dask cluster (one compile per static key, results equal to a standalone run,
failures recorded, resume, Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from aragog.errors import ConfigError
from aragog.grid import grid_from_dict, load_grid
from aragog.grid._spec import point_parameters  # private: the runner's validated Config of every point
from aragog.grid import GridFolder

ROOT = Path(__file__).resolve().parents[1]
EARTH = ROOT / "tests" / "earth_toy.toml"  # tests/_configs.py
#: a small, fast planet run: 20 nodes, 20 yr
FAST = {"mesh.number_of_nodes": 20, "solver.end_time": 20.0, "solver.output_points": 5}


def _grid(tmp_path, axes, mode="product", extra_set=None, **top) -> Path:
    """A grid file in tmp_path over tests/earth_toy.toml (absolute base path)."""
    import tomli_w

    data = {"base": str(EARTH), "mode": mode, "axes": axes, "set": {**FAST, **(extra_set or {})}, **top}
    path = tmp_path / "grid.toml"
    path.write_bytes(tomli_w.dumps(data).encode())
    return path


# ----------------------------------------------------------------------------- the grid file
def test_example_grid_file_expands_in_product_order():
    """The shipped example: 3 radii x 4 temperatures, the first axis varying slowest, linspace
    ends included; every point's config validates."""
    spec = load_grid(ROOT / "input" / "grid_radius_tsurf.toml")
    points = spec.points()
    assert spec.shape == (3, 4) and len(points) == 12
    assert points[0].values == {"mesh.outer_radius": 5.5e6, "initial_condition.surface_temperature": 3400.0}
    assert points[1].values["mesh.outer_radius"] == 5.5e6
    assert points[4].values["mesh.outer_radius"] == 6.0e6
    assert [p.values["initial_condition.surface_temperature"] for p in points[:4]] == [3400.0, 3600.0, 3800.0, 4000.0]
    assert points[0].overrides["solver.end_time"] == 2000.0
    params = point_parameters(spec)
    assert params[11].mesh.outer_radius == 6.371e6 and params[11].initial_condition.surface_temperature == 4000.0


def test_generators_zip_and_subtables():
    """logspace is 10**x, geomspace and values as NumPy; zip pairs values; a TOML sub-table
    of [axes] is a section of dotted keys."""
    spec = grid_from_dict({"base": str(EARTH), "mode": "zip",
                           "axes": {"energy.tidal_power": {"logspace": [-12, -10, 3]},
                                    "boundary_conditions": {"emissivity": {"geomspace": [0.25, 1.0, 3]}},
                                    "mesh.number_of_nodes": {"values": [20, 30, 40]}}})
    assert spec.shape == (3,)
    pts = spec.points()
    assert pts[1].values == {"energy.tidal_power": pytest.approx(1e-11), "boundary_conditions.emissivity": 0.5,
                             "mesh.number_of_nodes": 30}


def test_zip_axes_may_repeat_values_but_points_may_not_and_no_axes_is_one_point():
    """In a zip grid an axis may repeat a value (only whole points must differ); a grid
    without axes is the single point of [set]."""
    spec = grid_from_dict({"base": str(EARTH), "mode": "zip",
                           "axes": {"energy.tidal": [True, False, True], "mesh.number_of_nodes": [20, 30, 40]}})
    assert [p.values["energy.tidal"] for p in spec.points()] == [True, False, True]
    with pytest.raises(ConfigError, match="zip points 0 and 2 are the same"):
        grid_from_dict({"base": str(EARTH), "mode": "zip",
                        "axes": {"energy.tidal": [True, False, True], "mesh.number_of_nodes": [20, 30, 20]}})
    single = grid_from_dict({"base": str(EARTH), "set": {"mesh.number_of_nodes": 20}})
    assert single.size == 1 and [p.id for p in single.points()] == ["p00000"]
    assert single.points()[0].overrides == {"mesh.number_of_nodes": 20}


@pytest.mark.parametrize("raw, needle", [
    ({"mode": "zip", "axes": {"a.b": [1, 2], "c.d": [1]}}, "equal length"),
    ({"mdoe": "zip"}, "did you mean `mode`"),
    ({"mode": "grid"}, "`mode` must be"),
    ({"axes": {"mesh.number_of_nodes": {"linspace": [20, 40]}}}, "linspace = [start, stop, n]"),
    ({"axes": {"mesh.number_of_nodes": {"linsapce": [20, 40, 3]}}}, "mesh.number_of_nodes"),
    ({"axes": {"mesh.number_of_nodes": []}}, "at least one value"),
    ({"axes": {"mesh.number_of_nodes": [20, 20]}}, "repeated values"),
    ({"axes": {"mesh.number_of_nodes": [20]}, "set": {"mesh.number_of_nodes": 30}}, "both an axis and in [set]"),
    ({"timeout": -1}, "`timeout`"),
])
def test_bad_grid_files_are_refused_with_the_key(raw, needle):
    """Each malformed grid is a one-line ConfigError naming the offending key or value."""
    with pytest.raises(ConfigError) as err:
        grid_from_dict({"base": str(EARTH), **raw})
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_missing_base_is_named(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('base = "nowhere.toml"\n')
    with pytest.raises(ConfigError, match="nowhere.toml"):
        load_grid(path)


def test_every_point_is_validated_before_anything_runs(tmp_path):
    """A bad value at one point names the point, the key and the value, and the output
    folder is not even created; an unknown axis key gets did-you-mean."""
    from aragog.grid import prepare_grid

    out = tmp_path / "out"
    path = _grid(tmp_path, {"boundary_conditions.emissivity": [0.5, 1.0, 1.5]})
    with pytest.raises(ConfigError) as err:
        prepare_grid(path, out, cache_dir="none")
    text = str(err.value)
    assert "point 2" in text and "boundary_conditions.emissivity" in text and "1.5" in text
    assert not out.exists()
    path = _grid(tmp_path, {"boundary_conditions.emisivity": [0.5]})
    with pytest.raises(ConfigError, match="did you mean `emissivity`"):
        prepare_grid(path, out, cache_dir="none")
    assert not out.exists()


def test_output_folder_of_another_grid_is_refused(tmp_path):
    """A folder holding a different grid is refused (the difference named), also with
    --resume; --force replaces it; the same grid with results needs --resume or --force."""
    from aragog.grid import prepare_grid
    from aragog.grid import PointRecord

    out = tmp_path / "out"
    first = _grid(tmp_path, {"boundary_conditions.emissivity": [0.5, 1.0]})
    prepared = prepare_grid(first, out, cache_dir="none")
    assert prepared.n_tasks == 2 and GridFolder(out).exists()
    GridFolder(out).write_record(PointRecord(index=0, id="p00000", values={}, status="done", message="ok"))
    with pytest.raises(ConfigError, match="--resume runs the missing ones"):
        prepare_grid(first, out, cache_dir="none")
    assert prepare_grid(first, out, resume=True, cache_dir="none").n_tasks == 1
    second = _grid(tmp_path, {"boundary_conditions.emissivity": [0.5, 0.9]})
    with pytest.raises(ConfigError, match=r"emissivity`: \[0.5, 1.0\] -> \[0.5, 0.9\]"):
        prepare_grid(second, out, resume=True, cache_dir="none")
    with pytest.raises(ConfigError, match="holds a different grid"):
        prepare_grid(second, out, cache_dir="none")
    assert prepare_grid(second, out, force=True, cache_dir="none").n_tasks == 2
    assert GridFolder(out).records() == {}


# ----------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def client():
    """The CLI's own local cluster: two pinned one-thread workers on 127.0.0.1."""
    from aragog.grid import open_client

    with open_client(n_workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def finished_grid(tmp_path_factory):
    """A 2 x 2 grid run on two new workers with a fresh shared cache (one static key).

    Its own cluster, not the module's ``client``: a worker process keeps the cache
    directory of the first grid it ran (JAX opens one per process) and the programs it
    already holds, so on workers that ran another grid of the same key first (the order
    pytest-xdist deals tests in) nothing would be compiled into this grid's cache."""
    from aragog.grid import open_client
    from aragog.grid import run_grid

    tmp = tmp_path_factory.mktemp("grid")
    path = _grid(tmp, {"boundary_conditions.emissivity": [0.5, 1.0],
                       "initial_condition.surface_temperature": [3800.0, 4000.0]})
    with open_client(n_workers=2) as fresh:
        ds = run_grid(path, fresh, out=tmp / "out", cache_dir=tmp / "cache", progress=False)
    return path, GridFolder(tmp / "out"), ds


def test_grid_runs_every_point_and_compiles_each_program_once(finished_grid):
    """Four points, one static key, two workers: the pilot compiles each program once,
    the other worker loads them from the shared cache (never compiles), the rest reuse."""
    _, folder, ds = finished_grid
    summary = folder.summary()
    assert (summary["done"], summary["failed"], summary["pending"]) == (4, 0, 0)
    records = folder.records()
    pilots = [r for r in records.values() if r.compile["compiled"]]
    assert len(pilots) == 1, [r.compile for r in records.values()]
    n_programs = pilots[0].compile["compiled"]
    assert summary["programs"]["compiled"] == n_programs
    assert summary["programs"]["loaded"] <= n_programs  # at most once more, by the second worker
    assert all(folder.netcdf(r.id).is_file() and r.static_key == pilots[0].static_key for r in records.values())
    assert ds["T_magma"].dims[:2] == ("emissivity", "surface_temperature")


def test_collected_grid_puts_each_point_at_its_axis_values(tmp_path, client):
    """Axes named out of alphabetical order keep the grid file's order (first slowest) in
    grid.json and grid.nc, and the value at each coordinate is that point's own run."""
    from aragog.grid import run_grid
    from aragog.io import read_netcdf

    path = _grid(tmp_path, {"mesh.outer_radius": [6.0e6, 6.371e6],
                            "initial_condition.surface_temperature": [3800.0, 3900.0, 4000.0]},
                 extra_set={"solver.end_time": 5.0})
    ds = run_grid(path, client, out=tmp_path / "out", progress=False)  # the suite's shared store
    assert ds["T_magma"].dims == ("outer_radius", "surface_temperature", "time")
    assert list(json.loads((tmp_path / "out" / "grid.json").read_text())["axes"]) == [
        "mesh.outer_radius", "initial_condition.surface_temperature"]
    folder = GridFolder(tmp_path / "out")
    for rec in folder.records().values():
        here = ds["T_magma"].sel(outer_radius=rec.values["mesh.outer_radius"],
                                 surface_temperature=rec.values["initial_condition.surface_temperature"])
        np.testing.assert_array_equal(here.values, read_netcdf(folder.netcdf(rec.id)).scalars["T_magma"])


def test_grid_point_equals_a_standalone_run(finished_grid):
    """A point run in a worker (a reused solver, loaded programs) gives the same series as
    a fresh solver in this process, to the last bit."""
    from aragog import EntropySolver, load_config
    from aragog.io import read_netcdf

    _, folder, _ = finished_grid
    rec = folder.records()[3]
    solver = EntropySolver(load_config(EARTH, overrides={**FAST, **rec.values, "solver.jax_cache_dir": "none"}))
    solver.initialize()
    solver.solve()
    mine = solver.history()
    theirs = read_netcdf(folder.netcdf(rec.id))
    np.testing.assert_array_equal(theirs.scalars["T_magma"], mine.scalars["T_magma"])
    np.testing.assert_array_equal(theirs.time, mine.time)


def test_programs_stored_sees_the_grid_cache(finished_grid, tmp_path):
    """After a grid, its cache holds every program of its key (a later grid submits the
    points without a compile task); an empty cache does not."""
    from aragog import EntropySolver, load_config

    path, folder, _ = finished_grid
    params = load_config(EARTH, overrides={**FAST, **folder.records()[0].values,
                                           "solver.jax_cache_dir": str(folder.root.parent / "cache")})
    solver = EntropySolver(params)
    assert solver.programs_stored()
    params.solver.jax_cache_dir = str(tmp_path / "empty")
    assert not solver.programs_stored(params)
    assert set(solver.jit_stats) == {"initial"}  # nothing was built, traced or compiled


def test_failing_point_is_recorded_and_the_grid_goes_on(tmp_path, client):
    """A point that exhausts its step budget is a "failed" record with the solver's
    message; the other point finishes; the run raises nothing."""
    from aragog.grid import run_grid

    path = _grid(tmp_path, {"solver.max_steps": [1, 100000]})
    run_grid(path, client, out=tmp_path / "out", progress=False, collect=False)  # the suite's shared store
    records = GridFolder(tmp_path / "out").records()
    assert records[0].status == "failed" and "too many steps" in records[0].message
    assert records[0].solver_status < 0 and records[0].stopped_early
    assert records[1].status == "done"


def test_resume_runs_only_what_is_missing(finished_grid, client):
    """Removing one point's record makes --resume run that point alone."""
    from aragog.grid import prepare_grid, run_grid

    path, folder, _ = finished_grid
    before = folder.records()
    folder.forget(before[2].id)
    assert prepare_grid(path, folder.root, resume=True, cache_dir="none").tasks.keys() == {before[2].static_key}
    run_grid(path, client, out=folder.root, resume=True, cache_dir=folder.root.parent / "cache",
             progress=False, collect=False)
    after = folder.records()
    assert after[2].status == "done" and after[2].compile["compiled"] == 0
    assert all(after[i].wall_seconds == before[i].wall_seconds for i in (0, 1, 3))  # untouched


def test_worker_that_died_twice_is_recorded(tmp_path):
    """A future that raises KilledWorker (its worker died on both attempts) becomes a failed
    record naming the cause."""
    distributed = pytest.importorskip("distributed")
    from aragog.grid._runner import _finish  # private: the runner's record of a dead worker
    from aragog.grid._worker import PointTask  # private: the worker's task, which _finish records as failed

    class Dead:
        def result(self):
            raise distributed.KilledWorker("aragog-grid-x-p00001", "tcp://127.0.0.1:1", 1)

    folder = GridFolder(tmp_path)
    task = PointTask(1, "p00001", {"a.b": 1}, str(EARTH), {}, str(tmp_path), "k", 10.0)
    assert _finish(Dead(), task, folder) is False
    rec = folder.records()[1]
    assert rec.status == "failed" and "died twice" in rec.message and rec.attempts == 2


def test_wall_time_limit_stops_a_solve_with_a_message():
    """solver.wall_time_limit: a solve past its limit stops with status < 0, says so, and
    keeps the state it reached (the grid's per-point timeout)."""
    from aragog import EntropySolver, load_config

    solver = EntropySolver(load_config(EARTH, overrides={**FAST, "solver.end_time": 1e9,
                                                         "solver.wall_time_limit": 1.0}))
    solver.initialize()
    solver.programs.compile()  # every program now: the limit below is the integration's
    solver.solve()
    state = solver.get_state()
    assert state.status < 0 and "wall-time limit of 1 s" in state.message
    assert np.all(np.isfinite(state.S_final))
    # the progress is kept: the last step the integrator completed (the first output time
    # after the start is 2.5e8 yr, far beyond what 1 s reaches), the history's last row
    assert "last step the integrator completed" in state.message
    assert state.time > 0.0 and solver.history().time[-1] == state.time
    # and it is that state: a solve to that time without the limit ends there too (the
    # same steps up to CVODE's last one, then a step that lands on the end: within rtol)
    again = EntropySolver(load_config(EARTH, overrides={**FAST, "solver.end_time": state.time}))
    again.initialize()
    again.solve()
    np.testing.assert_allclose(state.S_final, again.get_state().S_final, rtol=1e-6)


def test_ctrl_c_keeps_finished_points_and_resume_completes(tmp_path):
    """Ctrl-C at a terminal (SIGINT to the CLI's whole process group, its worker processes
    included) after the first point: exit 130 with a one-line hint and no traceback or dask
    log from any process, finished points kept; `--resume` runs only the rest and exits 0."""
    path = _grid(tmp_path, {"initial_condition.surface_temperature": [3700.0, 3800.0, 3900.0, 4000.0]},
                 extra_set={"solver.end_time": 40.0})
    out = tmp_path / "out"
    # The suite's shared compile store (tests/conftest.py): the points need not compile.
    cmd = [sys.executable, "-m", "aragog.cli", "grid", "run", str(path), "--out", str(out), "--workers", "1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # SIGINT as at a terminal: a suite started in the background of a non-interactive shell
    # ignores it, and an ignored signal stays ignored in every child (the CLI then, rightly,
    # never sees the Ctrl-C and finishes the grid). The child starts with the default.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)  # its own group, as a terminal's job
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and not list((out / "points").glob("p*.json")):
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err and " - distributed." not in err, err
    kept = GridFolder(out).records()
    assert 1 <= len(kept) < 4 and all(GridFolder(out).netcdf(r.id).is_file() for r in kept.values())
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    status = json.loads(subprocess.run([sys.executable, "-m", "aragog.cli", "grid", "status", str(out), "--json"],
                                       capture_output=True, text=True, timeout=60).stdout)
    assert (status["done"], status["failed"], status["pending"]) == (4, 0, 0)
    after = GridFolder(out).records()
    assert all(after[i].wall_seconds == r.wall_seconds for i, r in kept.items())  # not run again


@pytest.mark.slurm
def test_grid_on_real_slurm_jobs(tmp_path, slurm_available):
    """`aragog grid run --slurm` end to end on this machine's one-node Slurm: the points
    run in a Slurm job (each record names its job), all done, the key compiled once by
    the one worker, grid.nc written."""
    path = _grid(tmp_path, {"boundary_conditions.emissivity": [0.5, 1.0]})
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "aragog.cli", "grid", "run", str(path), "--out", str(out),
                           "--slurm", "--queue", "debug", "--walltime", "00:10:00", "--memory", "2GB",
                           "--interface", "lo", "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = GridFolder(out).summary()
    assert (summary["done"], summary["failed"]) == (2, 0)
    assert summary["programs"]["compiled"] >= 1 and summary["programs"]["loaded"] == 0  # one worker
    assert all("(slurm job " in r.worker for r in GridFolder(out).records().values())
    assert (out / "grid.nc").is_file()


def test_progress_plain_lines_and_summary_table():
    """Off a terminal the progress is plain lines (counts and ETA), one per interval and
    one at the end; the summary table lists counts, programs and failures."""
    import io

    # private: the progress display and summary, checked alone
    from aragog.grid._progress import GridProgress, summary_table

    stream = io.StringIO()
    bar = GridProgress(3, stream=stream, every=3600.0)
    bar.set_running(2)
    bar.point_finished(True)
    bar.point_finished(False)
    assert stream.getvalue() == ""  # within the interval: quiet
    bar.point_finished(True)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("3/3 points: 2 done, 1 failed, 2 running;") and "ETA 0 s" in lines[0]
    table = summary_table({"points": 3, "done": 2, "failed": 1, "pending": 0,
                           "programs": {"compiled": 3, "loaded": 0, "reused": 6},
                           "failures": [{"id": "p00001", "values": {"a.b": 1}, "message": "CVODE: boom"}]})
    assert "3 compiled, 0 loaded, 6 reused" in table and "failed p00001 (a.b=1): CVODE: boom" in table
