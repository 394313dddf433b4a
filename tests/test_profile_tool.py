"""tools/profile_solves.py: its coupling loop, run in-process on a tiny mesh (the tool's
own subprocess orchestration is exercised by running it; this checks what it measures)."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import INPUT, REPO


def load_tool():
    spec = importlib.util.spec_from_file_location("profile_solves", REPO / "tools" / "profile_solves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["fused", "blocks"])
def test_coupling_loop_records_and_recompiles_nothing(mode):
    tool = load_tool()
    cfg = dict(config=str(INPUT / "earth.toml"), window=1.0, nodes=8, mesh_change=True,
               mode=mode, solves=4, cache=None)
    out = tool.worker_loop(cfg)
    assert out["ok"] and out["nodes"] == 8 and len(out["rows"]) == 4
    # the mesh (radius) changed every solve, and nothing was traced or compiled again
    assert all(v == [0, 0] for v in out["new_after_first"].values()), out["new_after_first"]
    for row in out["rows"][1:]:
        assert row["nfev"] > 0 and row["integrate_s"] > 0
        parts = row["rhs_s"] + row["jac_s"] + row["cvode_s"] + row["overhead_s"]
        assert parts == pytest.approx(row["wall_s"], rel=1e-9)  # the breakdown adds up
    assert out["cumulative_s"] == sorted(out["cumulative_s"])
    built = {k for k, v in out["first_solve"].items() if v["compiles"] + v["loads"] > 0}
    assert built and "initial" not in built
    if mode == "fused":  # kernels of each compiled program of the pair
        assert all(out["first_solve"][k]["kernels"] > 0 for k in ("rhs", "jac")), out["first_solve"]
    # the initial state's EOS inversion is NumPy, never a compiled program
    initial = out["first_solve"]["initial"]
    assert initial["source"] == "numpy" and initial["compiles"] + initial["loads"] + initial["traces"] == 0


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_solver", REPO / "tools" / "bench_solver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_first_solve_worker_reports_every_stage(capsys):
    """tools/bench_solver.py section 0 (issue 11): the first solve split into tables, mesh,
    initial state and programs, per-program trace/compile and kernels, per-call costs."""
    from aragog import EntropySolver
    from aragog.solver import clear_shared_programs

    bench = load_bench()
    clear_shared_programs()
    from aragog.solver._derived import DerivedInputs

    timed = ((DerivedInputs, "eos"), (DerivedInputs, "mesh"), (EntropySolver, "entropy_at"))
    before = [cls.__dict__[name] for cls, name in timed]
    out = bench.first_solve_worker(dict(config=str(INPUT / "earth.toml"), nodes=8, window=1.0, cache="none",
                                        calls=20))
    assert [cls.__dict__[name] for cls, name in timed] == before  # timers removed again
    assert out["ok"] and out["status"] == 0 and out["nfev"] > 0 and out["njev"] > 0
    parts = out["tables_s"] + out["mesh_s"] + out["initial_state_s"] + out["programs_wall_s"]
    assert parts == pytest.approx(out["initialize_s"], rel=1e-9)
    assert out["initialize_s"] + out["solve_s"] == pytest.approx(out["first_solve_s"], rel=1e-9)
    for name in ("rhs", "jac", "diagnostics"):
        prog = out["programs"][name]
        assert prog["source"] == "compiled" and prog["compiles"] == 1 and prog["compile_seconds"] > 0
        assert prog["kernels"] > 0 and prog["fusions"] <= prog["kernels"]
    assert "initial" not in out["programs"]  # NumPy: nothing compiled
    for key in ("rhs_bare_us", "rhs_callback_us", "jac_bare_us", "jac_callback_us", "diagnostics_bare_us"):
        assert out["calls"][key] > 0
    fs = {"nodes": 8, "window_yr": 1.0, "repeats": 1, "cache_dir": "none",
          "runs": {"cold": [out], "warm": [dict(out)]},
          "median": {k: {kk: out[kk] for kk in ("import_s", "first_solve_s", "tables_s")} | {
              "programs": {n: {"trace_seconds": 0.0, "compile_seconds": 0.0} for n in out["programs"]}}
              for k in ("cold", "warm")}}
    bench.print_first_solves(fs)
    assert "first solve" in capsys.readouterr().out
