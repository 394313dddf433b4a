"""Shared fixtures: paths of the repository, its demo configs and the reference data."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# The persistent compilation cache is on by default (the user's cache directory). Tests
# count traces and compiles per program, so none of them may load a program that a
# developer's earlier run (or another test worker) stored: the suite runs without it, and
# tests of the cache name their own temporary directories (tests/test_cache.py). Set here,
# at collection, so that subprocesses the tests start inherit it; JAX's own variable is
# dropped before JAX is imported, so it cannot open a cache of its own either.
os.environ["ARAGOG_JAX_CACHE_DIR"] = "none"
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)

# Compiling is most of the suite's time. The suite, as the caller, compiles every program
# with XLA:CPU's older elemental fusion emitters, as aragog compiles its own right-hand
# side, Jacobian, diagnostics and energy-budget programs (aragog.solver._programs.
# COMPILER_OPTIONS): 0.55-0.7 of the compile time, the same results to rounding. The tests'
# own jax.jit of physics functions and the EOS models take most of the gain (180 -> 118 s
# for test_physics, test_core_modes and the EOS model tests on 2 cores). Set before JAX's
# CPU backend starts, so that the test workers and every subprocess inherit it.
#
# The tests' own programs are also compiled at LLVM level 0 without the expensive passes:
# each is called a few times, so its compile is nearly all of its cost (test_physics,
# test_core_modes, test_accuracy and test_mush: 130 -> 92 s on 2 cores). aragog's hot
# programs state XLA's full optimisation in their own compile options
# (aragog.solver._programs.COMPILER_OPTIONS), so the solves run as a user's do, with the
# same steps; the probe compiles at level 0 anyway.
_TEST_XLA_FLAGS = {"xla_cpu_use_fusion_emitters": "false", "xla_backend_optimization_level": "0",
                   "xla_llvm_disable_expensive_passes": "true"}
_flags = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(filter(None, [_flags] + [f"--{k}={v}" for k, v in _TEST_XLA_FLAGS.items()
                                                            if k not in _flags]))

REPO = Path(__file__).resolve().parents[1]
INPUT = REPO / "input"
# Third-party reference tables live beside the project, never inside it (shared/data/README.md).
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def float64_jax():
    """The session in JAX's x64 mode, as a user who calls the physics functions, the EOS
    evaluators or ``aragog.csdl`` directly runs them (``jax.enable_x64(True)``, entered
    before any module's fixtures build their arrays; aragog's own entry points enter it
    themselves, and tests/test_no_global_side_effects.py checks them from a process where
    it is off). tests/compat overrides this fixture for its tests: PROTEUS does not switch
    x64 on."""
    import jax

    with jax.enable_x64(True):
        yield


@pytest.fixture
def earth_config() -> Path:
    return INPUT / "earth.toml"


@pytest.fixture
def rtmelt_dir() -> Path:
    path = SHARED_DATA / "spider-RTmelt"
    if not path.is_dir():
        pytest.skip(f"reference table set not available at {path}")
    return path


@pytest.fixture(scope="session")
def slurm_available() -> None:
    """Skip unless ``sbatch`` is on PATH and a trivial job in partition debug succeeds
    (a one-node Slurm: ``bash scripts/slurm_local.sh start``)."""
    if shutil.which("sbatch") is None:
        pytest.skip("no sbatch on PATH (start one with: bash scripts/slurm_local.sh start)")
    probe = ["sbatch", "--wait", "-Q", "-p", "debug", "-t", "00:01:00", "-o", "/dev/null", "--wrap", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.skip("a trivial sbatch --wait job did not finish within 30 s (is Slurm up?)")
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        pytest.skip(f"a trivial sbatch --wait job failed: {reason[0]}")


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """A private XDG cache for each test (the bundled EOS tables' disk cache), and a cold
    in-memory cache of bundled table sets."""
    from aragog.eos import _bundled as bundled

    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    bundled._cached_set.cache_clear()
    yield home
    bundled._cached_set.cache_clear()
