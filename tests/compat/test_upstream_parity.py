"""The PROTEUS sequence against the upstream aragog (fwl-aragog) in a subprocess.

Runs only where an interpreter with the upstream installed is available: the one named by
``ARAGOG_UPSTREAM_PYTHON``, else ``/work/upvenv/bin/python`` when it exists. CI has no
upstream, so these tests are skipped there. The same script (``proteus_sequence.py``) runs
in both interpreters; ``tools/compare_upstream.py`` prints the side-by-side table.

Agreement asked for: T_magma and T_core within 0.5 % relative per call, Phi_global within
0.005 absolute (0.5 % of its [0, 1] range; a relative bound is meaningless near 0). The two
codes discretise the same equations (Bower et al. 2018) on the same mesh from the same
tables, but differ in details PROTEUS does not fix (surface and CMB boundary stencils,
eddy diffusivity at the boundary nodes, the integrator's error control), which over the
few years of the sequence move temperatures by tenths of a percent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "proteus_sequence.py"
REPO = HERE.parents[1]
DEFAULT_UPSTREAM_PYTHON = "/work/upvenv/bin/python"

REL_T = 5e-3  # T_magma, T_core: 0.5 % relative
ABS_PHI = 5e-3  # Phi_global: 0.005 absolute


def upstream_python() -> str | None:
    exe = os.environ.get("ARAGOG_UPSTREAM_PYTHON") or DEFAULT_UPSTREAM_PYTHON
    return exe if Path(exe).is_file() and os.access(exe, os.X_OK) else None


def upstream_env() -> dict:
    """The environment without anything that would put this package on the upstream's path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_upstream(exe: str, mode: str, backend: str, inputs: dict, workdir: Path,
                 structure: str = "dummy", timeout: float = 900) -> dict:
    """Run the sequence script under ``exe``; returns its JSON record (``ok`` False on failure)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "record.json"
    cmd = [exe, str(SCRIPT), "--mode", mode, "--backend", backend,
           "--eos-dir", inputs["eos_dir"], "--lookup-dir", inputs["lookup_dir"],
           "--melting-dir", inputs["melting_dir"], "--structure", structure,
           "--workdir", str(workdir), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=str(workdir), env=upstream_env(), capture_output=True,
                          text=True, timeout=timeout)
    if not out.is_file():
        raise AssertionError(f"upstream run wrote no record (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    record = json.loads(out.read_text())
    record["_stderr_tail"] = proc.stderr[-4000:]
    return record


_UPSTREAM_CACHE: dict = {}


@pytest.fixture(scope="session")
def upstream_runs(request, tmp_path_factory):
    exe = upstream_python()
    if exe is None:
        wanted = os.environ.get("ARAGOG_UPSTREAM_PYTHON") or DEFAULT_UPSTREAM_PYTHON
        pytest.skip(f"no upstream aragog interpreter ({wanted} is not an executable): set "
                    "ARAGOG_UPSTREAM_PYTHON to a python with fwl-aragog installed; CI has none")
    sequence_inputs = request.getfixturevalue("sequence_inputs")

    def get(mode: str, backend: str, structure: str = "dummy") -> dict:
        key = (mode, backend, structure)
        if key not in _UPSTREAM_CACHE:
            _UPSTREAM_CACHE[key] = run_upstream(
                exe, mode, backend, sequence_inputs,
                tmp_path_factory.mktemp(f"up_{mode}_{backend}_{structure}"), structure)
        return _UPSTREAM_CACHE[key]

    return get


# The upstream's first JAX call compiles for about a minute; table mode is slow here anyway.
CASES = [
    pytest.param("const", "numpy", "dummy", id="const-numpy"),
    pytest.param("const", "jax", "dummy", id="const-jax"),
    pytest.param("const", "numpy", "zalmoxis", id="const-numpy-structure-file"),
    pytest.param("table", "numpy", "dummy", id="table-numpy", marks=pytest.mark.slow),
    pytest.param("table", "jax", "dummy", id="table-jax", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_upstream_parity(upstream_runs, sequence_runs, mode, backend, structure):
    up = upstream_runs(mode, backend, structure)
    assert up.get("ok"), f"the sequence failed against the upstream: {up.get('error')}"
    assert str(REPO) not in str(up.get("aragog_file")), "the upstream interpreter imported this package"
    ours, _ = sequence_runs.get(mode, backend, structure)
    assert [c["label"] for c in ours["calls"]] == [c["label"] for c in up["calls"]]
    failures = []
    for o, u in zip(ours["calls"], up["calls"]):
        assert (o["status"], u["status"]) == (0, 0), o["label"]
        assert o["dt_actual"] == pytest.approx(u["dt_actual"], rel=1e-9, abs=1e-12), o["label"]
        for key in ("T_magma", "T_core"):
            rel = abs(o[key] - u[key]) / abs(u[key])
            if rel > REL_T:
                failures.append(f"{o['label']}: {key} ours {o[key]:.2f} upstream {u[key]:.2f} ({rel:.2%})")
        if abs(o["Phi_global"] - u["Phi_global"]) > ABS_PHI:
            failures.append(f"{o['label']}: Phi_global ours {o['Phi_global']:.4f} "
                            f"upstream {u['Phi_global']:.4f}")
    assert not failures, "\n".join(failures)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-m", ""]))
