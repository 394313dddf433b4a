"""The persistent compilation cache (aragog's executable store): which directory
(precedence and opt-outs), JAX's settings left alone, the size cap with
least-recently-used eviction, ``aragog cache info|clear``, and loading across processes.

The store is process-wide (the first directory turned on stays): the resolution is tested
as pure functions here, and everything that turns the cache on runs in fresh Python
processes whose environment names temporary directories only (tests/conftest.py turns the
cache off for the rest of the suite).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aragog.cli import main
# private: the directory resolution and size cap, tested as pure functions
from aragog.programs import _disk_cache as cc

from conftest import REPO
from _configs import TOY_EARTH

# About the persistent cache itself: no shared store (tests/conftest.py).
pytestmark = pytest.mark.cold_compiles

EARTH = TOY_EARTH
CACHE_VARS = ("ARAGOG_JAX_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
              "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "JAX_COMPILATION_CACHE_MAX_SIZE")

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

# The cache set up as a solver does, then one small jitted function; prints the directory
# in use and JAX's settings. argv: solver.jax_cache_dir, JSON of jax.config updates the
# calling code makes first (as PROTEUS does).
LIGHT = r"""
import json, sys, logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
import jax
for name, value in json.loads(sys.argv[2]).items():
    jax.config.update(name, value)
from aragog.solver import configure_compilation_cache
used = configure_compilation_cache(sys.argv[1] or None)
import jax.numpy as jnp
jax.jit(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3)).block_until_ready()
names = ["jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
         "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size"]
print(json.dumps({"used": used, **{n: getattr(jax.config, n) for n in names}}))
"""


def clean_env(tmp_path, **extra):
    """The test process's environment without any cache setting, the user cache directory
    in ``tmp_path/xdg``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARS}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_worker(cache, modes=("fused",), env_cache=None, env=None):
    if env is None:  # only the cache the test names (solver.jax_cache_dir beats the variable)
        env = {**{k: v for k, v in os.environ.items() if k not in CACHE_VARS}, "ARAGOG_JAX_CACHE_DIR": "none"}
    env = dict(env)
    if env_cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = str(env_cache)
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(EARTH), str(cache or ""), ",".join(modes)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def run_light(env, configured="", jax_updates=None):
    proc = subprocess.run([sys.executable, "-c", LIGHT, configured, json.dumps(jax_updates or {})],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def jax_entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*-cache")) if directory.is_dir() else []


def built(stats):
    """Programs this process compiled or loaded."""
    return {k: v for k, v in stats.items() if v["compiles"] + v["loads"] > 0}


@pytest.fixture(scope="module")
def cold_store(tmp_path_factory):
    """One cold process's store, both compile modes: (its result, the directory). Tests copy
    the directory before they use it, so that each starts from what a first process left."""
    cache = tmp_path_factory.mktemp("cold") / "xla-cache"
    cold, _ = run_worker(cache, ("fused", "blocks"))
    return cold, cache


def copy_of(cold_store, where: Path) -> Path:
    shutil.copytree(cold_store[1], where)
    return where


def test_second_process_loads_every_program_from_the_cache(tmp_path, cold_store):
    cold = cold_store[0]
    cache = copy_of(cold_store, tmp_path / "xla-cache")
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
    assert any((cache / "aragog-executables").glob("*.exe"))
    assert jax_entries(cache) == []  # aragog turns on no JAX cache of its own


def test_standard_environment_variable_is_honoured(tmp_path, cold_store):
    """A first process's store in JAX's standard variable's directory: the next process
    finds it there."""
    cache = copy_of(cold_store, tmp_path / "env-cache")
    env = clean_env(tmp_path)
    warm, _ = run_worker(None, env_cache=cache, env=env)
    assert warm["fused"]["stats"]["rhs"]["source"] == "disk"
    assert not (tmp_path / "xdg" / "aragog" / "jax").exists()  # the user's JAX cache, not aragog's default


def test_unusable_cache_directory_is_a_warning_not_a_failure(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    result, stderr = run_worker(blocker / "cache")
    assert result["fused"]["status"] == 0
    assert "not usable" in stderr and "compiling without it" in stderr
    assert result["fused"]["stats"]["rhs"]["source"] == "compiled"


def test_corrupt_cache_entries_are_recompiled_with_a_warning(tmp_path, cold_store):
    cold = cold_store[0]
    cache = copy_of(cold_store, tmp_path / "xla-cache")
    stored = list((cache / "aragog-executables").glob("*.exe"))
    assert stored, "aragog's own entries (loaded without tracing) were written"
    for entry in cache.rglob("*"):
        if entry.is_file():
            entry.write_bytes(b"corrupt")
    again, stderr = run_worker(cache)
    assert again["fused"]["status"] == 0 and again["fused"]["T"] == cold["fused"]["T"]
    assert again["fused"]["stats"]["rhs"]["source"] == "compiled"
    assert "compilation cache entry" in stderr and "is unusable" in stderr  # aragog's store


# ------------------------------------------------------------- which directory (pure) --
def test_precedence_config_then_env_then_users_jax_then_default(tmp_path):
    default = tmp_path / "default"
    full = {"ARAGOG_JAX_CACHE_DIR": str(tmp_path / "aragog-env"),
            "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-env")}

    def resolve(configured=None, environ=full, jax_dir=None, **kw):
        return cc.resolve_cache_dir(configured, environ=environ, jax_dir=jax_dir, default=default, **kw)

    choice = resolve(tmp_path / "cfg", jax_dir=str(tmp_path / "proteus"))
    assert (choice.directory, choice.source) == (str(tmp_path / "cfg"), "config")
    assert "solver.jax_cache_dir" in choice.reason
    assert resolve(tmp_path / "cli", origin="cli").reason == "set by --jax-cache"
    choice = resolve("", jax_dir=str(tmp_path / "proteus"))
    assert (choice.directory, choice.source) == (str(tmp_path / "aragog-env"), "env")
    env_jax = {"JAX_COMPILATION_CACHE_DIR": full["JAX_COMPILATION_CACHE_DIR"]}
    # the caller's jax.config beats the JAX variable (JAX itself uses the config)
    choice = resolve(None, environ=env_jax, jax_dir=str(tmp_path / "proteus"))
    assert (choice.directory, choice.source, choice.users_jax) == (str(tmp_path / "proteus"), "jax-config", True)
    # JAX copies its variable into jax.config at import: the same value is the variable's
    choice = resolve(None, environ=env_jax, jax_dir=full["JAX_COMPILATION_CACHE_DIR"])
    assert (choice.source, choice.users_jax) == ("jax-env", True)
    assert resolve(None, environ=env_jax).directory == str(tmp_path / "jax-env")
    choice = resolve(None, environ={})
    assert (choice.directory, choice.source, choice.users_jax) == (str(default), "default", False)
    assert "none" in choice.reason  # says how to opt out


def test_opt_outs(tmp_path):
    everything = {"ARAGOG_JAX_CACHE_DIR": str(tmp_path / "a"), "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "j")}
    for off in ("none", "None", " NONE "):
        choice = cc.resolve_cache_dir(off, environ=everything, jax_dir=str(tmp_path / "j"))
        assert choice.directory is None and choice.source == "config", off
    assert cc.resolve_cache_dir("none", origin="cli", environ={}).reason.startswith("turned off by --jax-cache")
    choice = cc.resolve_cache_dir(None, environ={**everything, "ARAGOG_JAX_CACHE_DIR": "none"})
    assert choice.directory is None and choice.source == "env"
    # an explicit directory beats the variable's opt-out
    assert cc.resolve_cache_dir(tmp_path / "c", environ={"ARAGOG_JAX_CACHE_DIR": "none"}).directory == str(tmp_path / "c")


def test_relative_and_home_directories_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cc.resolve_cache_dir("rel", environ={}).directory == str(tmp_path / "rel")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cc.resolve_cache_dir("~/c", environ={}).directory == str(tmp_path / "home" / "c")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux convention")
def test_default_is_the_user_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cc.default_cache_dir() == tmp_path / "xdg" / "aragog" / "jax"


def test_cap_is_aragogs_store_in_bytes():
    assert cc.cap_bytes(1024) == 1024 * 10**6
    assert cc.cap_bytes(0) is None and cc.cap_bytes(None) is None


# ------------------------------------------------- aragog's store: cap, LRU eviction --
def _compiled(k: float):
    import jax

    return jax.jit(lambda x: x * k + 1.0).lower(1.0).compile()


def _size(compiled) -> int:
    from jax.experimental import serialize_executable

    return len(pickle.dumps(serialize_executable.serialize(compiled)))


def test_executable_store_evicts_least_recently_used(tmp_path, caplog):
    # private: the store class itself: its size cap and LRU eviction
    from aragog._executable_store import ExecutableStore

    progs = {name: _compiled(k) for name, k in (("a", 2.0), ("b", 3.0), ("c", 4.0))}
    sizes = {name: _size(c) for name, c in progs.items()}
    store = ExecutableStore(tmp_path / "exe", max_bytes=sum(sizes.values()) - 1)  # two fit, three do not
    store.save("a", progs["a"])
    store.save("b", progs["b"])
    old = 1_000_000_000 * 10**9
    os.utime(store._path("a"), ns=(old, old))          # a: saved first ...
    os.utime(store._path("b"), ns=(old + 1, old + 1))
    assert store.load("a") is not None                  # ... but used last: b is the least recent
    assert store._path("a").stat().st_mtime_ns > old + 1
    with caplog.at_level(logging.INFO, logger="aragog"):
        store.save("c", progs["c"])
    assert store.load("b") is None
    assert store.load("a") is not None and store.load("c") is not None
    assert "evicted 1 of aragog's executables" in caplog.text
    assert sum(size for _, size, _ in store.entries()) <= store.max_bytes


def test_executable_store_cap_edge_cases(tmp_path):
    from aragog._executable_store import ExecutableStore  # private: the store class itself: its cap's edge cases

    prog = _compiled(5.0)
    tiny = ExecutableStore(tmp_path / "tiny", max_bytes=_size(prog) - 1)
    tiny.save("k", prog)  # larger than the cap: not stored, not an error
    assert tiny.entries() == [] and tiny.load("k") is None
    free = ExecutableStore(tmp_path / "free")  # no cap: nothing evicted
    for i in range(3):
        free.save(f"k{i}", prog)
    assert len(free.entries()) == 3 and free.evict() == 0
    free.max_bytes = 1  # the entry just written is never the one evicted
    free.evict(keep=free._path("k2"))
    assert [p for _, _, p in free.entries()] == [free._path("k2")]


# ------------------------------------------------------------- aragog cache info|clear --
def _fake_cache(directory: Path) -> None:
    directory.mkdir(parents=True)
    (directory / "jit_aragog_rhs-abc-cache").write_bytes(b"x" * 1000)
    (directory / "jit_aragog_rhs-abc-atime").write_bytes(b"t" * 8)
    (directory / "jit_other-def-cache").write_bytes(b"y" * 500)
    (directory / "unrelated.txt").write_text("not a cache entry")
    (directory / cc.EXECUTABLES).mkdir()
    (directory / cc.EXECUTABLES / "0123.exe").write_bytes(b"z" * 2000)


def test_cache_info_and_clear_command(tmp_path, monkeypatch, capsys):
    directory = tmp_path / "c"
    _fake_cache(directory)
    monkeypatch.setenv("ARAGOG_JAX_CACHE_DIR", str(directory))
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(directory) in out and "set by $ARAGOG_JAX_CACHE_DIR" in out
    assert "JAX's entries: 2 (1.5 kB)" in out and "aragog's executables (aragog-executables/): 1 (2.0 kB)" in out
    assert "cap (solver.jax_cache_max_mb): 1024 MB" in out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert "removed 1 of aragog's executables" in out and "removed 2 of JAX's entries" in out
    assert sorted(p.name for p in directory.rglob("*") if p.is_file()) == ["unrelated.txt"]
    monkeypatch.setenv("ARAGOG_JAX_CACHE_DIR", "none")
    assert main(["cache", "info"]) == 0
    assert "compilation cache: off (turned off by $ARAGOG_JAX_CACHE_DIR=none)" in capsys.readouterr().out


def test_cache_commands_with_dir_and_config(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARAGOG_JAX_CACHE_DIR", "none")
    other = tmp_path / "other"
    _fake_cache(other)
    assert main(["cache", "info", "--dir", str(other)]) == 0
    out = capsys.readouterr().out
    assert "set by --dir" in out and "JAX's entries: 2" in out
    assert main(["cache", "info", "--config", str(EARTH)]) == 0  # the demo leaves it unset: the variable's "none"
    assert "compilation cache: off" in capsys.readouterr().out
    config = tmp_path / "c.toml"
    config.write_text(EARTH.read_text().replace(
        "[solver]\n", f"[solver]\njax_cache_dir = '{tmp_path / 'from-config'}'\njax_cache_max_mb = 10\n", 1))
    assert main(["cache", "info", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "from-config") in out and "set by solver.jax_cache_dir" in out
    assert "not created yet" in out and "cap (solver.jax_cache_max_mb): 10 MB" in out
    assert main(["cache", "clear", "--dir", str(other)]) == 0
    assert "removed 2 of JAX's entries" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "nothing to clear" in capsys.readouterr().out


def test_cache_clear_keeps_the_users_own_jax_entries(tmp_path, monkeypatch, capsys):
    directory = tmp_path / "proteus-cache"
    _fake_cache(directory)
    monkeypatch.delenv("ARAGOG_JAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(directory))
    assert main(["cache", "info"]) == 0
    assert "the user's own JAX cache" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert "removed 1 of aragog's executables" in out and "kept JAX's 2 entries" in out
    assert len(list(directory.glob("*-cache"))) == 2
    assert main(["cache", "clear", "--all"]) == 0
    assert "removed 2 of JAX's entries" in capsys.readouterr().out
    assert list(directory.glob("*-cache")) == []


def test_cache_clear_user_error_is_one_line(tmp_path, capsys):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    assert main(["cache", "clear", "--dir", str(not_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aragog: error:") and "not a directory" in err and "Traceback" not in err


def test_run_cache_options_reach_the_configuration(monkeypatch, tmp_path):
    """--no-jax-cache / --jax-cache DIR, as solver.jax_cache_dir from the command line
    (the run stops right after the cache is configured)."""
    from aragog.errors import AragogError

    seen = []

    def fake(directory, max_mb=None, *, origin="config"):
        seen.append((directory, max_mb, origin))
        raise AragogError("stop here")

    monkeypatch.setattr(cc, "configure_compilation_cache", fake)
    assert main(["run", str(EARTH), "--no-jax-cache"]) == 1
    assert main(["run", str(EARTH), "--jax-cache", str(tmp_path / "d")]) == 1
    assert main(["run", str(EARTH), "--set", f"solver.jax_cache_dir={tmp_path / 'e'}",
                 "--set", "solver.jax_cache_max_mb=7"]) == 1
    assert seen == [("none", 1024, "cli"), (str(tmp_path / "d"), 1024, "cli"), (str(tmp_path / "e"), 7, "config")]
    with pytest.raises(SystemExit):
        main(["run", str(EARTH), "--no-jax-cache", "--jax-cache", "x"])  # one or the other


# ------------------------------------------------------ end to end, fresh processes --
def test_default_cache_is_on_in_the_user_cache_directory(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("XDG_CACHE_HOME is the Linux convention")
    env = clean_env(tmp_path)
    cold, stderr = run_worker(None, env=env)
    default = tmp_path / "xdg" / "aragog" / "jax"
    assert cold["fused"]["stats"]["rhs"]["source"] == "compiled"
    assert list((default / "aragog-executables").glob("*.exe")) and jax_entries(default) == []
    warm, _ = run_worker(None, env=env)
    assert warm["fused"]["stats"]["rhs"]["source"] == "disk" and warm["fused"]["T"] == cold["fused"]["T"]


def test_opt_outs_and_explicit_directories_in_a_fresh_process(tmp_path):
    default = tmp_path / "xdg" / "aragog" / "jax"
    out, _ = run_light(clean_env(tmp_path, ARAGOG_JAX_CACHE_DIR="none"))
    assert out["used"] is None and out["jax_compilation_cache_dir"] is None
    out, _ = run_light(clean_env(tmp_path, ARAGOG_JAX_CACHE_DIR=tmp_path / "e"), configured="none")
    assert out["used"] is None
    assert not default.exists() and not (tmp_path / "e").exists()
    out, stderr = run_light(clean_env(tmp_path, ARAGOG_JAX_CACHE_DIR=tmp_path / "e"))
    assert out["used"] == str(tmp_path / "e") and (tmp_path / "e").is_dir()
    # JAX's settings as JAX has them: no cache directory, its own thresholds and no cap
    assert out["jax_compilation_cache_dir"] is None and jax_entries(tmp_path / "e") == []
    assert out["jax_persistent_cache_min_compile_time_secs"] == 1.0
    assert out["jax_persistent_cache_min_entry_size_bytes"] == 0
    assert out["jax_compilation_cache_max_size"] == -1


def test_users_jax_settings_are_left_as_they_are(tmp_path):
    """The calling code's own JAX cache (as PROTEUS may set it): aragog's store goes in the
    same directory, and JAX's settings stay the user's."""
    proteus = tmp_path / "proteus"
    env = clean_env(tmp_path, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=3600,
                    JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=12)
    out, stderr = run_light(env, jax_updates={"jax_compilation_cache_dir": str(proteus)})
    assert out["used"] == out["jax_compilation_cache_dir"] == str(proteus)  # not redirected
    assert proteus.is_dir()  # made usable for aragog's store
    assert out["jax_persistent_cache_min_compile_time_secs"] == 3600.0
    assert out["jax_persistent_cache_min_entry_size_bytes"] == 12
    assert out["jax_compilation_cache_max_size"] == -1
    assert jax_entries(proteus) == []  # the user's threshold (an hour of compiling) applies
    assert not (tmp_path / "xdg" / "aragog" / "jax").exists()


# `aragog validate`'s probe with the cache in argv[2]; prints how many programs this
# process traced and compiled (aot_compile calls) and the probe's summary.
PROBE = r"""
import json, sys
from aragog import _compiling
calls = []
original = _compiling.aot_compile
def counted(*args, **kwargs):
    calls.append(kwargs.get("label") or (args[2] if len(args) > 2 else ""))
    return original(*args, **kwargs)
_compiling.aot_compile = counted
from aragog import load_config
from aragog.validation import check_inputs
lines = check_inputs(load_config(sys.argv[1], overrides={"solver.jax_cache_dir": sys.argv[2],
                                                         "mesh.number_of_nodes": 10}))
print(json.dumps({"compiled": calls, "last": lines[-1]}))
"""


def test_validate_probe_is_loaded_from_the_store_in_a_later_process(tmp_path):
    """The probe's program goes through aragog's store like the solver's: the first
    process compiles it, a later one on the same directory loads it (no trace, no
    compile) and reports the same initial state."""
    cache = tmp_path / "cache"
    env = {**{k: v for k, v in os.environ.items() if k not in CACHE_VARS}, "ARAGOG_JAX_CACHE_DIR": "none"}
    out = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", PROBE, str(EARTH), str(cache)], capture_output=True,
                              text=True, env=env, cwd=REPO, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert out[0]["compiled"] == ["probe:_fast"]
    assert out[1]["compiled"] == [] and out[1]["last"] == out[0]["last"]
    assert list((cache / "aragog-executables").glob("*.exe"))
