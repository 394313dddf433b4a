"""tools/profile_solves.py: its stages run in-process on a tiny mesh (the first-solve stage's
subprocesses are exercised by running the tool; here its worker runs in this process),
checking what each measures, the JSON it writes, and that a stage whose measurement cannot
be made fails alone, in one line."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from conftest import REPO
from _configs import TOY_EARTH

# The tool reports each program's compiles and their source: no shared store (tests/conftest.py).
pytestmark = pytest.mark.cold_compiles

CONFIG = str(TOY_EARTH)


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("profile_solves", REPO / "tools" / "profile_solves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def test_stages_write_what_they_measure(tool, tmp_path, capsys):
    out = tmp_path / "times.json"
    stages = ["callbacks", "repeated-solves", "energy"]
    rc = tool.main(["--stages", ",".join(stages), "--config", CONFIG, "--nodes", "8", "--solves", "4",
                    "--window", "1", "--calls", "20", "--jacobians", "banded", "--modes", "fused,blocks",
                    "--json", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    report = json.loads(out.read_text())
    assert list(report["stages"]) == stages and report["stages_asked"] == stages
    assert all("error" not in report["stages"][s] for s in stages), printed
    for name in stages:
        assert f"{name}:" in printed  # each stage printed its table

    # callbacks: the integrator callbacks and the bare compiled calls, in us
    (cb,) = report["stages"]["callbacks"]["cases"]
    assert cb["nodes"] == 8 and cb["jacobian"] == "banded" and positive_int(cb["n_state"])
    for key in ("rhs_callback_us", "rhs_bare_us", "jac_callback_us", "jac_bare_us", "jac_in_rhs_calls",
                "jac_compile_s"):
        assert cb[key] > 0, key

    # repeated-solves: both modes side by side; the mesh (radius) changed every solve and
    # nothing was traced or compiled again
    rep = report["stages"]["repeated-solves"]
    assert rep["solves"] == 4 and rep["vary"] == ["flux", "tidal", "radius"]
    assert [c["mode"] for c in rep["cases"]] == ["fused", "blocks"]
    for case in rep["cases"]:
        assert case["nodes"] == 8 and len(case["rows"]) == 4 and case["all_status_0"]
        assert not case["retraced"] and all(v == [0, 0] for v in case["new_after_first"].values())
        # the compiled Newton solve may be built once after the first solve (in the
        # background from the second: docs/solver.md, "One compiled call per step")
        assert set(case["built_after_first"]) <= {"corrector"}
        assert all(v == [1, 1] for v in case["built_after_first"].values())
        for row in case["rows"]:
            assert positive_int(row["nfev"]) and positive_int(row["nsteps"]) and row["njev"] >= 0
        for row in case["rows"][1:]:
            parts = row["rhs_s"] + row["jac_s"] + row["cvode_s"] + row["overhead_s"]
            assert parts == pytest.approx(row["wall_s"], rel=1e-9)  # the breakdown adds up
            assert row["reset_s"] + row["solve_s"] == pytest.approx(row["wall_s"], rel=1e-9)
        assert case["cumulative_s"] == sorted(case["cumulative_s"]) and len(case["cumulative_s"]) == 4
        built = case["first_solve"]
        assert built and "initial" not in built  # the initial state is NumPy, never compiled
        assert all(v["compiles"] == 1 and v["source"] == "compiled" for v in built.values()), built
        if case["mode"] == "fused":  # kernels of each compiled program of the pair
            assert all(positive_int(built[k]["kernels"]) for k in ("rhs", "jac", "diagnostics")), built

    # energy: the first solve and get_state, then 3 coupling steps; the budget closes
    (en,) = report["stages"]["energy"]["cases"]
    assert en["nodes"] == 8 and en["steps"] == 3 and en["has_budget"]
    assert en["diagnostics_compile_s"] > 0 and en["first_get_state_s"] > 0
    assert en["get_state_cached_median_s"] < en["get_state_median_s"]
    assert abs(en["last_closure_rel"]) < 1e-4


def test_bare_calls_where_the_bound_programs_have_none(tool, monkeypatch):
    """Bound programs without ``bare_executables`` (the blocks' have none): the callback
    figures stay and the bare ones give way to one line saying so."""
    from aragog import EntropySolver

    solver = EntropySolver(tool.params_for(CONFIG, 8))
    solver.initialize()
    with tool.float64():
        bound = solver.programs.bind(solver.inputs)
    y = tool.state_vector(solver)
    assert y.dtype == np.float64 and y.shape == (bound.n,)
    real = tool.call_costs(bound, y, 20)
    assert "bare_error" not in real, real.get("bare_error")
    assert all(real[k] > 0 for k in ("rhs_bare_us", "jac_bare_us", "diagnostics_bare_us", "rhs_callback_us"))

    def missing(bound, names):
        raise tool.StageUnavailable("bare calls not measured: BoundPair.bare_executables is missing")

    monkeypatch.setattr(tool, "bare_programs", missing)
    row = tool.call_costs(bound, y, 20)
    assert row["rhs_callback_us"] > 0 and row["jac_callback_us"] > 0
    assert "rhs_bare_us" not in row and "missing" in row["bare_error"] and "\n" not in row["bare_error"]


def test_a_failing_stage_fails_alone(tool, tmp_path, capsys):
    out = tmp_path / "times.json"
    assert tool.main(["--stages", "warm-start", "--solves", "1", "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["stages"]["warm-start"]["error"] == "warm-start: needs --solves >= 2"
    assert "warm-start: FAILED: warm-start: needs --solves >= 2" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        tool.main(["--stages", "first-solve,nonsense"])


def test_first_solve_worker_reports_every_part(tool, capsys):
    """The first-solve stage's worker (issue 11): the first solve split into derive, initial
    state and programs, per-program trace/compile and kernels, per-call costs."""
    out = tool.first_solve_worker(dict(config=CONFIG, nodes=8, window=1.0, cache="none", mode=None, calls=20))
    assert out["ok"] and out["status"] == 0 and out["mode"] == "fused" and out["nodes"] == 8
    assert positive_int(out["nfev"]) and positive_int(out["njev"]) and positive_int(out["nsteps"])
    parts = out["derive_s"] + out["initial_state_s"] + out["programs_wall_s"]
    assert parts == pytest.approx(out["initialize_s"], rel=1e-9)
    assert out["initialize_s"] + out["solve_s"] == pytest.approx(out["first_solve_s"], rel=1e-9)
    assert out["derive_s"] > 0 and out["initial_state_s"] > 0 and out["first_get_state_s"] > 0
    for name in ("rhs", "jac", "diagnostics"):
        prog = out["programs"][name]
        assert prog["source"] == "compiled" and prog["compiles"] == 1 and prog["compile_seconds"] > 0
        assert positive_int(prog["kernels"]) and prog["fusions"] <= prog["kernels"]
    assert "initial" not in out["programs"]  # NumPy: nothing compiled
    assert "bare_error" not in out["calls"]
    for key in ("rhs_bare_us", "rhs_callback_us", "jac_bare_us", "jac_callback_us", "diagnostics_bare_us"):
        assert out["calls"][key] > 0
    # the stage's summary and table of a (cold, warm) pair
    runs = {"cold": [out], "warm": [dict(out)]}
    res = {"window_yr": 1.0, "repeats": 1, "cache_dir": "none",
           "cases": [{"mode": "fused", "nodes": 8, "runs": runs, "median": tool.first_solve_summary(runs)}]}
    assert res["cases"][0]["median"]["warm_vs_cold"]["fraction"] == pytest.approx(1.0)
    tool.print_first_solve(res)
    printed = capsys.readouterr().out
    assert "first-solve:" in printed and "diagnostics" in printed
