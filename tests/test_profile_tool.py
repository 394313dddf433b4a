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
    # the initial state's EOS inversion is NumPy, never a compiled program
    initial = out["first_solve"]["initial"]
    assert initial["source"] == "numpy" and initial["compiles"] + initial["loads"] + initial["traces"] == 0
