"""Progress of a running solve: ``EntropySolver.solve(progress=...)`` and what ``aragog run``
shows (aragog/_run_progress.py)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from aragog import EntropySolver, load_config
# private: `aragog run`'s progress display, which has no public name
from aragog._run_progress import RunProgress, log_fraction
from aragog.cli import main
from aragog.solver import SolveProgress
from _configs import TOY_EARTH

#: 10 yr of the toy planet on 20 nodes: ~10^3 steps, enough for reports every millisecond
END = 10.0
SMALL = {"mesh.number_of_nodes": 20, "solver.end_time": END, "solver.output_points": 4}


def test_log_fraction():
    assert log_fraction(0.0, 0.0, 1e6) == 0.0
    assert log_fraction(1e6, 0.0, 1e6) == 1.0
    assert log_fraction(1e3, 0.0, 1e6) == pytest.approx(math.log1p(1e3) / math.log1p(1e6))
    assert log_fraction(5.0, 10.0, 20.0) == 0.0 and log_fraction(30.0, 10.0, 20.0) == 1.0
    assert log_fraction(3.0, 3.0, 3.0) == 1.0  # an empty window is done


def _report(t, done=False):
    return SolveProgress(t=t, t_start=0.0, t_end=1e6, T_magma=3000.0, Phi_global=0.5, rhs_calls=1234,
                         wall=12.0, done=done)


def test_terminal_line_is_rewritten_in_place_and_ends_with_a_newline():
    out = io.StringIO()
    shown = RunProgress(out, live=True)
    shown(_report(1e3))
    shown(_report(1e6, done=True))
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    first, last = text.split("\r")[1:]
    assert first.startswith("[" + "#" * round(24 * math.log1p(1e3) / math.log1p(1e6)))
    assert last.startswith("[" + "#" * 24 + "]") and "1,234 RHS calls" in last and "T_magma 3000.0 K" in last


def test_log_file_gets_plain_lines():
    out = io.StringIO()
    shown = RunProgress(out, live=False)
    assert shown.interval == 10.0
    shown(_report(1e3))
    shown(_report(1e6, done=True))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("aragog run: ") for line in lines)
    assert lines[1].endswith("(done)") and "100.0 %" in lines[1]


@pytest.fixture(scope="module")
def small_params():
    return load_config(TOY_EARTH, overrides=SMALL)


def test_reports_do_not_change_the_integration(small_params):
    """The probe only reads: the same steps and the same end state, bitwise, with reports
    every 1 ms as without any; the last report is the end of the solve."""
    plain = EntropySolver(small_params)
    plain.initialize()
    plain.solve()
    a = plain.get_state()
    got = []
    watched = EntropySolver(small_params)
    watched.initialize()
    watched.solve(progress=got.append, progress_interval=1e-3)
    b = watched.get_state()
    assert a.nsteps == b.nsteps and a.nfev == b.nfev
    np.testing.assert_array_equal(a.S_final, b.S_final)
    assert len(got) >= 2 and got[-1].done and not any(p.done for p in got[:-1])
    assert got[-1].t == pytest.approx(END) and got[-1].T_magma == pytest.approx(a.T_magma)
    assert got[-1].Phi_global == pytest.approx(a.Phi_global)
    assert all(0.0 <= p.t <= END for p in got) and got[-1].rhs_calls == b.nfev


def test_cli_quiet_and_plain_progress(tmp_path, capsys):
    args = ["run", str(TOY_EARTH), "--out", str(tmp_path / "a.nc")]
    args += [f"--set={k}={v}" for k, v in SMALL.items()]
    assert main(args + ["--quiet"]) == 0
    assert "aragog run:" not in capsys.readouterr().err
    assert main(args) == 0  # stderr is not a terminal here: plain lines
    err = capsys.readouterr().err.splitlines()
    assert err and err[-1].startswith("aragog run: 100.0 %") and err[-1].endswith("(done)")


def test_log_output_spacing_reaches_the_stored_times(tmp_path):
    """solver.output_spacing = "log": the solve stores the times of solver.output_times, and
    the netCDF file has them."""
    from aragog.io import read_netcdf
    from aragog.solver import output_times

    params = load_config(TOY_EARTH, overrides=SMALL | {"solver.output_spacing": "log"})
    s = EntropySolver(params)
    s.initialize()
    s.solve()
    stored = read_netcdf(s.write_netcdf(tmp_path / "log.nc")).time
    np.testing.assert_array_equal(stored, output_times(0.0, END, 4, "log"))
