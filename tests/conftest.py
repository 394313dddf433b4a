"""Shared fixtures: paths of the repository, its demo configs and the reference data."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# The persistent compilation cache is on by default (the user's cache directory). The suite
# never reads a developer's cache: it runs with a store of its own, a temporary directory
# made by the first process that loads this file (pytest's controller, before it starts
# the pytest-xdist workers) and removed when that process ends. Every worker and every
# subprocess the tests start inherits it through $ARAGOG_JAX_CACHE_DIR, so a program of
# one static key is compiled once per run, not once per process (a grid's worker, the
# CLI, a second solver after a test cleared the in-memory programs). Set
# $ARAGOG_TEST_STORE to keep one between runs. Tests that count what they trace and
# compile, or that are about the cache itself, are marked ``cold_compiles``: they run as
# in a process with the cache off (the fixture ``_cold_compiles`` below). JAX's own
# variable is dropped before JAX is imported, so it cannot open a cache of its own.
_STORE_VAR = "ARAGOG_TEST_STORE"
_OWN_STORE = _STORE_VAR not in os.environ
if _OWN_STORE:
    os.environ[_STORE_VAR] = tempfile.mkdtemp(prefix="aragog-test-store-")
os.environ["ARAGOG_JAX_CACHE_DIR"] = os.environ[_STORE_VAR]
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)

# Compiling is most of the suite's time. The suite, as the caller, compiles every program
# with XLA:CPU's older elemental fusion emitters, as aragog compiles its own right-hand
# side, Jacobian, diagnostics and energy-budget programs (aragog.solver._fused_programs.
# COMPILER_OPTIONS): 0.55-0.7 of the compile time, the same results to rounding. The tests'
# own jax.jit of physics functions and the EOS models take most of the gain (180 -> 118 s
# for test_physics, test_core_modes and the EOS model tests on 2 cores). Set before JAX's
# CPU backend starts, so that the test workers and every subprocess inherit it.
#
# The tests' own programs are also compiled at LLVM level 0 without the expensive passes:
# each is called a few times, so its compile is nearly all of its cost (test_physics,
# test_core_modes, test_accuracy and test_mush: 130 -> 92 s on 2 cores). aragog's fused
# programs state their own level (aragog.solver._fused_programs.COMPILER_OPTIONS), so the
# suite asks for level 0 for them too, with ARAGOG_XLA_OPTIMIZATION_LEVEL: a suite's solves
# are short, so their compiles are most of their cost (the whole suite: 14.0 -> 10.0 min of
# CPU, 7.7 -> 5.6 min on 2 cores). The programs are the same; their results agree with full
# optimisation's to rounding (the checks' tolerances rest on the physics, not on the bits),
# and tools/accuracy_matrix.py and tools/mush_matrix.py, run with it unset, check the solves
# at full optimisation, as a user's run. A test about the level itself sets the variable.
os.environ.setdefault("ARAGOG_XLA_OPTIMIZATION_LEVEL", "0")
_TEST_XLA_FLAGS = {"xla_cpu_use_fusion_emitters": "false", "xla_backend_optimization_level": "0",
                   "xla_llvm_disable_expensive_passes": "true"}
_flags = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(filter(None, [_flags] + [f"--{k}={v}" for k, v in _TEST_XLA_FLAGS.items()
                                                            if k not in _flags]))

REPO = Path(__file__).resolve().parents[1]
INPUT = REPO / "input"
# Third-party reference tables live beside the project, never inside it (shared/data/README.md).
SHARED_DATA = REPO.parent / "shared" / "data"


def in_x64(fn):
    """``fn`` called inside ``jax.enable_x64(True)``, as a user calls JAX code of their own
    in float64: a test's plain-JAX reference, or one of aragog's pure functions (physics,
    the EOS evaluators), which follow JAX's setting (docs/design.md, "float64 everywhere").
    JAX arrays in the result come back as NumPy arrays, so that arithmetic on them after the
    call (``np.sum`` of a JAX array runs ``jnp.sum``) stays float64.

    The suite runs with JAX's default, x64 off, as a user's process does: aragog's entry
    points and ``aragog.csdl`` enter float64 themselves, so tests call them without it."""
    import functools

    import jax
    import numpy as np

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            out = fn(*args, **kwargs)
            return jax.tree.map(lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, out)

    return run


def pytest_unconfigure(config):
    if _OWN_STORE:
        shutil.rmtree(os.environ[_STORE_VAR], ignore_errors=True)


@pytest.fixture(autouse=True)
def _cold_compiles(request, monkeypatch):
    """For a test marked ``cold_compiles``: no persistent cache, as in a fresh process with
    it off: the process's active cache (directory and store) is set aside for the test and
    put back after it, and its subprocesses get ``ARAGOG_JAX_CACHE_DIR=none`` (a test may
    still name a directory of its own). Reads the two modules' private state: the cache is
    deliberately one per process, so no public call takes it back."""
    if request.node.get_closest_marker("cold_compiles") is None:
        yield
        return
    from aragog import _executable_store as executable_store  # private: the process's store, set aside and put back
    # private: _state, the active cache, saved and restored
    from aragog.programs import _disk_cache as persistent_cache

    state, store = dict(persistent_cache._state), executable_store.executable_store()
    persistent_cache._state.update(directory=None, choice=None)
    executable_store.set_executable_store(None)
    monkeypatch.setenv("ARAGOG_JAX_CACHE_DIR", "none")
    try:
        yield
    finally:
        persistent_cache._state.update(state)
        if store is None:
            executable_store.set_executable_store(None)
        else:
            executable_store.set_executable_store(store.directory, store.max_bytes)


@pytest.fixture
def x64():
    """JAX's x64 mode for one test whose subject is aragog's pure functions, in a module that
    also tests entry points (see :func:`x64_module`): ``@pytest.mark.usefixtures("x64")``."""
    import jax

    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def x64_module():
    """JAX's x64 mode for a whole module whose subject is aragog's pure functions (physics,
    the EOS evaluators and models, table lookups) or the compiled programs' hot-path calls,
    all of which follow JAX's setting: the module calls them in float64 as a user does
    (``jax.enable_x64(True)``; docs/design.md, "float64 everywhere"). Opted into with
    ``pytestmark = pytest.mark.usefixtures("x64_module")``, so that it is entered before the
    module's own module-scoped fixtures build their arrays, and left when the module ends.
    A module that also calls aragog's entry points (the solver, ``check_inputs``, the
    generator) enters x64 only around its pure calls (:func:`in_x64`), so that an entry
    point that forgot float64 fails there."""
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
    # private: _cached_set, the in-memory table cache, cleared around the test
    from aragog.eos import _bundled as bundled

    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    bundled._cached_set.cache_clear()
    yield home
    bundled._cached_set.cache_clear()
