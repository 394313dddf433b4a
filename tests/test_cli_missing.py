"""What a newcomer meets when something is missing or the command is the wrong one (issue
38): one line naming what is missing and how to get it, at once, never a traceback or a
wait; a closed pipe loses no file the command writes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aragog import EntropySolver, load_config
from aragog.errors import MissingDependencyError

from test_cli import assert_one_line_error, run_cli
from _configs import TOY_EARTH

ROOT = Path(__file__).resolve().parents[1]
GRID_FILE = ROOT / "input" / "grid_radius_tsurf.toml"


def _env(**extra) -> dict:
    return {**os.environ, **extra}


def test_a_refused_cvode_library_named_by_the_user_stops_the_run(tmp_path):
    """ARAGOG_SUNDIALS_CVODE naming a file that does not load: `aragog info` says which
    library it tried and why it refused it, and a run stops with one line (no other CVODE
    library, no fallback integrator in its place)."""
    bogus = tmp_path / "libnot_cvode.so"
    bogus.write_text("not a shared library")
    env = _env(ARAGOG_SUNDIALS_CVODE=str(bogus))
    info = subprocess.run([sys.executable, "-m", "aragog", "info"], capture_output=True, text=True, timeout=120,
                          env=env)
    assert info.returncode == 0, info.stderr
    line = next(ln for ln in info.stdout.splitlines() if ln.startswith("sundials"))
    assert f"ARAGOG_SUNDIALS_CVODE={bogus} cannot be loaded" in line and "unset it" in line
    run = subprocess.run([sys.executable, "-m", "aragog", "run", str(TOY_EARTH), "--set", "solver.end_time=1",
                          "--set", "mesh.number_of_nodes=8", "--out", str(tmp_path / "out.nc")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert_one_line_error(run, f"ARAGOG_SUNDIALS_CVODE={bogus} cannot be loaded")
    assert not (tmp_path / "out.nc").exists()


def test_the_refusal_is_an_aragog_error_and_an_os_error(monkeypatch):
    """In the API: :class:`MissingDependencyError` from the loader (an ``OSError`` too, so
    ``cvode_available()`` is False), raised again by ``integrate`` instead of a fallback, and
    by a CVODE solver's ``initialize()`` before anything compiles."""
    import numpy as np

    # private: load_library's cache is cleared so that it reads the environment variable set here
    from aragog.solver.backends import _sundials, cvode_available, integrate

    monkeypatch.setenv("ARAGOG_SUNDIALS_CVODE", "/nonexistent/libsundials_cvode.so")
    _sundials.load_library.cache_clear()
    try:
        with pytest.raises(MissingDependencyError, match="ARAGOG_SUNDIALS_CVODE=/nonexistent"):
            _sundials.load_library()
        assert not cvode_available()
        class _Decay:  # dy/dt = -y
            n, ml, mu, jac_into = 1, 0, 0, None

            def rhs_into(self, t, y, out):
                out[:] = -y

        problem = _Decay()
        with pytest.raises(MissingDependencyError):
            integrate(problem, np.array([0.0, 1.0]), np.ones(1), method="cvode", rtol=1e-6, atol=1e-9,
                      max_steps=1000)
        # a solver stops at initialize(), before it builds (compiles) any program; a solver
        # of another integrator needs no CVODE
        solver = EntropySolver(load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 8}))
        with pytest.raises(MissingDependencyError, match="ARAGOG_SUNDIALS_CVODE=/nonexistent"):
            solver.initialize()
        assert solver.programs is None
        other = EntropySolver(load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 8, "solver.method": "bdf"}))
        assert other.initialize().programs is not None
    finally:
        monkeypatch.delenv("ARAGOG_SUNDIALS_CVODE")
        _sundials.load_library.cache_clear()
    assert cvode_available()  # the suite's library again


def test_slurm_without_sbatch_fails_in_one_line_at_once(tmp_path):
    """`aragog grid run ... --slurm` where no `sbatch` is on PATH: one line naming sbatch and
    what to do, within seconds (no tracebacks, no wait for workers that cannot come)."""
    env = _env(PATH=os.path.dirname(sys.executable))  # python, and no sbatch
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "aragog", "grid", "run", str(GRID_FILE), "--slurm",
                           "--out", str(tmp_path / "g")], capture_output=True, text=True, timeout=120, env=env)
    assert time.monotonic() - t0 < 60  # the import and the grid's plan, not join_timeout (600 s)
    assert_one_line_error(proc, "`sbatch`", "leave out --slurm")


def test_a_grid_file_given_to_run_points_to_grid_run():
    proc = run_cli("run", str(GRID_FILE))
    assert_one_line_error(proc, "grid file", "aragog grid run")
    proc = run_cli("validate", str(GRID_FILE))
    assert_one_line_error(proc, "grid file", "aragog grid run")


def test_a_grid_folder_given_to_plot_points_to_grid_plot(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "grid.json").write_text("{}")
    proc = run_cli("plot", str(folder))
    assert_one_line_error(proc, "grid's folder", f"aragog grid plot {folder}")


def test_a_closed_pipe_loses_no_file(tmp_path):
    """`aragog run ... --plot | head -1`: the reader goes after one line; the run still writes
    its netCDF file and its PNG and exits 0, with nothing about the pipe on stderr."""
    out = tmp_path / "run.nc"
    cmd = [sys.executable, "-m", "aragog", "run", str(TOY_EARTH), "--set", "solver.end_time=1",
           "--set", "mesh.number_of_nodes=8", "--plot", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()  # as head -1 does, then close the pipe
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err
    assert out.is_file() and out.with_suffix(".png").is_file()
