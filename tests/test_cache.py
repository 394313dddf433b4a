"""The persistent XLA compilation cache, across processes.

Each case runs in fresh Python processes: JAX opens one cache directory per process, and a
test worker that turned the cache on would turn later tests' compiles into loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


from conftest import INPUT, REPO

EARTH = INPUT / "earth.toml"

# One short solve per compile mode; prints jit_stats as JSON on the last line.
WORKER = r"""
import json, sys, logging
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
from aragog import EntropySolver, load_config
config, cache, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
result = {}
for mode in modes:
    overrides = {"solver.compile_mode": mode, "solver.end_time": 1.0, "mesh.number_of_nodes": 10}
    if cache:
        overrides["solver.jax_cache_dir"] = cache
    solver = EntropySolver(load_config(config, overrides=overrides))
    solver.initialize()
    solver.solve()
    out = solver.get_state()
    result[mode] = {"status": out.status, "T": out.T_magma, "stats": solver.jit_stats}
print(json.dumps(result))
"""


def run_worker(cache, modes=("fused",), env_cache=None):
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if env_cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = str(env_cache)
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(EARTH), str(cache or ""), ",".join(modes)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def built(stats):
    """Programs this process compiled or loaded."""
    return {k: v for k, v in stats.items() if v["compiles"] + v["loads"] > 0}


def test_second_process_loads_every_program_from_the_cache(tmp_path):
    cache = tmp_path / "xla-cache"
    cold, _ = run_worker(cache, ("fused", "blocks"))
    warm, _ = run_worker(cache, ("fused", "blocks"))
    for mode in ("fused", "blocks"):
        assert cold[mode]["status"] == warm[mode]["status"] == 0
        assert warm[mode]["T"] == cold[mode]["T"]  # the same executables: identical results
        cold_built, warm_built = built(cold[mode]["stats"]), built(warm[mode]["stats"])
        assert {"jac"} <= set(cold_built)
        for name, entry in cold_built.items():
            assert entry["compiles"] >= 1 and entry["source"] == "compiled", (mode, name, entry)
        assert set(warm_built) == set(cold_built), mode
        for name, entry in warm_built.items():
            assert entry["compiles"] == 0 and entry["loads"] >= 1 and entry["source"] == "disk", (mode, name, entry)
            assert entry["traces"] == 0, (mode, name, entry)  # loaded by static key: no tracing
    assert any(p.name.startswith("jit_aragog_rhs") for p in cache.iterdir())


def test_standard_environment_variable_is_honoured(tmp_path):
    cache = tmp_path / "env-cache"
    run_worker(None, env_cache=cache)
    warm, _ = run_worker(None, env_cache=cache)
    assert warm["fused"]["stats"]["rhs"]["source"] == "disk"


def test_unusable_cache_directory_is_a_warning_not_a_failure(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    result, stderr = run_worker(blocker / "cache")
    assert result["fused"]["status"] == 0
    assert "not usable" in stderr and "compiling without it" in stderr
    assert result["fused"]["stats"]["rhs"]["source"] == "compiled"


def test_corrupt_cache_entries_are_recompiled_with_a_warning(tmp_path):
    cache = tmp_path / "xla-cache"
    cold, _ = run_worker(cache)
    stored = list((cache / "aragog-executables").glob("*.exe"))
    assert stored, "aragog's own entries (loaded without tracing) were written"
    for entry in cache.rglob("*"):
        if entry.is_file():
            entry.write_bytes(b"corrupt")
    again, stderr = run_worker(cache)
    assert again["fused"]["status"] == 0 and again["fused"]["T"] == cold["fused"]["T"]
    assert again["fused"]["stats"]["rhs"]["source"] == "compiled"
    assert "compilation cache entry" in stderr and "is unusable" in stderr  # aragog's store
    assert "Error reading persistent compilation cache entry for 'jit_aragog_rhs'" in stderr  # JAX's
