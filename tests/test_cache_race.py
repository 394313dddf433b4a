"""Concurrent processes on one cache directory (a parameter grid's workers starting together).

Every test here races real processes (forked from a server process that imported aragog
once, started together behind a ``multiprocessing.Barrier``), never threads: the property
under test is what several interpreters see through the file system. What is raced:

- aragog's :class:`~aragog._executable_store.ExecutableStore` (temporary file + ``os.replace``
  in the same directory, so a reader gets one writer's whole entry or none);
- whole solvers on one ``solver.jax_cache_dir`` (aragog's store) and one bundled-EOS cache (``XDG_CACHE_HOME``), then a later process that must
  load every program without tracing;
- the write probe that decides whether the cache directory is usable;
- the bundled EOS cache (a directory built aside and renamed into place).

The tests assert on contents, counters and log records, never on wall time. Child
processes name their cache directories explicitly (``solver.jax_cache_dir``, which beats
the suite's shared store in ``ARAGOG_JAX_CACHE_DIR``, tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import multiprocessing as mp
import os
import pickle
import queue as queue_module
import shutil
import time
import traceback
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from _configs import TOY_EARTH

# About the persistent cache itself: no shared store (tests/conftest.py).
pytestmark = pytest.mark.cold_compiles

EARTH = TOY_EARTH
#: The racers are forked from one server process that has imported what they all use
#: (multiprocessing's "forkserver" context, the server started without a JAX backend): each
#: is still a process of its own, with its own memory, file handles and JAX backend, so what
#: is raced is what separate interpreters see through the file system, but none imports JAX
#: and aragog again (20 racers in this module: ~50 s of CPU as spawned interpreters).
_CTX = mp.get_context("forkserver")
_CTX.set_forkserver_preload([__name__, "aragog", "aragog.solver", "aragog._executable_store",
                             "aragog.programs._disk_cache", "aragog.eos"])
BARRIER_S = 240.0  # a child waiting longer than this for the others fails (never a hang)
RACE_TIMEOUT_S = 600.0


# ----------------------------------------------------------------------- the harness --
class _Collect(logging.Handler):
    """Warnings logged in a child process (any logger), as ``"name: message"``."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _collect_warnings() -> _Collect:
    handler = _Collect()
    logging.getLogger().addHandler(handler)
    warnings.simplefilter("always")
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
        warnings.simplefilter("ignore", category)  # libraries' API notices: nothing raced
    logging.captureWarnings(True)  # JAX reports cache read/write errors with warnings.warn
    return handler


def _child(fn, index, barrier, results, args):
    try:
        value = fn(index, barrier, *args)
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails the test
        barrier.abort()  # the others stop waiting at once
        results.put((index, "error", traceback.format_exc()))
        return
    results.put((index, "ok", value))


def _race(fn, arg_lists):
    """Run ``fn(index, barrier, *args)`` for each of ``arg_lists`` in its own spawned
    process, all sharing one barrier; the results in order. A child that raises, or dies
    without a result, fails the test with its traceback or exit code."""
    barrier = _CTX.Barrier(len(arg_lists))
    results = _CTX.Queue()
    procs = [_CTX.Process(target=_child, args=(fn, i, barrier, results, tuple(args)))
             for i, args in enumerate(arg_lists)]
    for proc in procs:
        proc.start()
    out: dict[int, object] = {}
    deadline = time.monotonic() + RACE_TIMEOUT_S
    try:
        while len(out) < len(procs):
            try:
                index, status, value = results.get(timeout=1.0)
            except queue_module.Empty:
                if time.monotonic() > deadline:
                    pytest.fail(f"racing processes gave no result within {RACE_TIMEOUT_S:.0f} s")
                dead = [i for i, p in enumerate(procs) if i not in out and not p.is_alive()]
                if dead and results.empty():
                    time.sleep(1.0)  # a result may still be in the pipe
                    if results.empty():
                        pytest.fail(f"processes {dead} died without a result (exit codes "
                                    f"{[procs[i].exitcode for i in dead]})")
                continue
            if status != "ok":
                pytest.fail(f"racing process {index} raised:\n{value}")
            out[index] = value
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return [out[i] for i in range(len(procs))]


# ----------------------------------------------------- a. the store, raced directly --
PAYLOAD_BYTES = 4_000_000
HEADER = 32  # "writer:iteration:" padded


def _fake_serializer():
    """Stand-in for ``jax.experimental.serialize_executable``: the "executable" is the raw
    payload, so the store's own file handling (pickle, temporary file, rename, read,
    touch, eviction) is what runs, on payloads of several MB."""
    return types.SimpleNamespace(serialize=lambda payload: (payload, None, None),
                                 deserialize_and_load=lambda payload, in_tree, out_tree: payload)


def _store_worker(index, barrier, directory, role, keys, n_iter, max_bytes, writers_done, n_writers):
    import aragog._executable_store as executable_store  # private: the store class, with serialize_executable faked

    executable_store.serialize_executable = _fake_serializer()
    store = executable_store.ExecutableStore(directory, max_bytes)
    collect = _collect_warnings()
    barrier.wait(timeout=BARRIER_S)
    if role == "writer":
        block = np.random.default_rng(1000 + index).bytes(PAYLOAD_BYTES)  # this writer's own bytes
        for it in range(n_iter):
            for key in keys:
                body = f"{index}:{it}:".encode().ljust(HEADER) + block
                store.save(key, hashlib.sha256(body).digest() + body)
        with writers_done.get_lock():
            writers_done.value += 1
        return {"warnings": collect.messages}
    seen = dict.fromkeys(keys, False)
    stats = {"complete": 0, "during_writes": 0, "misses_after_first": 0, "corrupt": 0, "writers": set()}
    while True:
        finished = writers_done.value >= n_writers  # read before the pass: a last full pass follows
        for key in keys:
            data = store.load(key)
            if data is None:
                stats["misses_after_first"] += seen[key]
                continue
            seen[key] = True
            digest, body = data[:32], data[32:]
            if len(body) != HEADER + PAYLOAD_BYTES or hashlib.sha256(body).digest() != digest:
                stats["corrupt"] += 1
                continue
            stats["complete"] += 1
            stats["during_writes"] += not finished
            stats["writers"].add(int(body.split(b":", 1)[0]))
        if finished:
            break
    return {"warnings": collect.messages, **stats}


@pytest.mark.parametrize("evicting", [False, True], ids=["same-key", "evicting"])
def test_store_race_never_tears_an_entry(tmp_path, evicting):
    """Two writers save 4 MB entries (different bytes per writer and per save, a SHA-256
    of the body embedded in front) 25 times each while two readers load in a loop.

    Proves: every load returns one writer's complete payload (checksum and length match),
    never a partial one, and no warning is logged; "same-key": once the entry exists a
    load never misses (``os.replace`` swaps whole files, the path is never absent);
    "evicting": the two writers use two keys under a cap that holds one entry, so every
    save evicts the other key while readers read it - a load may miss, but never sees a
    half file and never logs a vanished file as a corrupt entry. No ``*.tmp`` is left.

    Fails if a save wrote the entry in place (a reader then unpickles a prefix:
    corrupt / "unusable" warning, or finds the path missing), if eviction truncated
    instead of unlinking, if a vanished entry is reported as unusable, or if temporary
    files are leaked.
    """
    directory = tmp_path / "store"
    writers_done = _CTX.Value("i", 0)
    if evicting:
        keys, max_bytes = (["a"], ["b"]), int(1.5 * PAYLOAD_BYTES)
    else:
        keys, max_bytes = (["same"], ["same"]), None
    read_keys = sorted({k for ks in keys for k in ks})
    results = _race(_store_worker, [
        (str(directory), "writer", keys[0], 25, max_bytes, writers_done, 2),
        (str(directory), "writer", keys[1], 25, max_bytes, writers_done, 2),
        (str(directory), "reader", read_keys, 0, max_bytes, writers_done, 2),
        (str(directory), "reader", read_keys, 0, max_bytes, writers_done, 2),
    ])
    for i, res in enumerate(results):
        assert res["warnings"] == [], (i, res["warnings"])
    readers = results[2:]
    for res in readers:
        assert res["corrupt"] == 0, res
        assert res["complete"] >= 1, res
        assert res["writers"] <= {0, 1}, res
        if not evicting:
            assert res["misses_after_first"] == 0, res
    # the readers really read while the writers were writing (else nothing was raced)
    assert sum(res["during_writes"] for res in readers) >= 1, readers
    assert not list(directory.glob("*.tmp")), sorted(p.name for p in directory.iterdir())
    for entry in directory.glob("*.exe"):  # what is left is whole
        payload = pickle.loads(entry.read_bytes())[0]
        assert hashlib.sha256(payload[32:]).digest() == payload[:32]


# ----------------------------------------------- the "is the directory usable" probe --
def _probe_worker(index, barrier, directory, n):
    from aragog.programs._disk_cache import _usable  # private: the directory probe, raced alone

    barrier.wait(timeout=BARRIER_S)
    return [p for p in (_usable(Path(directory)) for _ in range(n)) if p is not None]


def test_usable_probe_races_are_harmless(tmp_path):
    """Four processes check the same cache directory 300 times each, together (what every
    solver does once when it turns the cache on).

    Proves: the directory is found usable every time and no probe file is left. Fails
    with a shared probe name: one process removes another's probe, whose ``unlink`` then
    raises ``FileNotFoundError`` and that process runs without the cache (a few per cent
    of the calls failed so before the fix)."""
    directory = tmp_path / "cache"
    results = _race(_probe_worker, [(str(directory), 300)] * 4)
    assert results == [[]] * 4, results
    assert list(directory.iterdir()) == []


# -------------------------------------------------- b. whole solvers on one directory --
OVERRIDES = {"mesh.number_of_nodes": 20, "solver.end_time": 10.0}


def _solve_worker(index, barrier, cache_dir, xdg):
    os.environ["XDG_CACHE_HOME"] = xdg  # the bundled EOS tables: generated (raced) here too
    collect = _collect_warnings()
    from aragog import EntropySolver, load_config
    from aragog.programs._disk_cache import active_cache  # private: the cache this process turned on

    barrier.wait(timeout=BARRIER_S)
    solver = EntropySolver(load_config(EARTH, overrides={**OVERRIDES, "solver.jax_cache_dir": cache_dir}))
    solver.initialize()
    solver.solve()
    out = solver.get_state()
    keep = ("source", "traces", "compiles", "loads")
    choice = active_cache()
    return {
        "status": out.status,
        "state": {name: np.asarray(getattr(out, name), dtype=np.float64).tobytes()
                  for name in ("time", "S_final", "T_basic", "T_magma", "T_core", "F_surface")},
        "stats": {name: {k: entry[k] for k in keep} for name, entry in solver.jit_stats.items()},
        "cache": None if choice is None else choice.directory,
        "warnings": collect.messages,
    }


@pytest.fixture(scope="module")
def raced_cache(tmp_path_factory):
    """Three solvers started together on one empty cache directory, then a fourth."""
    base = tmp_path_factory.mktemp("race")
    cache, xdg = base / "cache", base / "xdg"
    racers = _race(_solve_worker, [(str(cache), str(xdg))] * 3)
    (later,) = _race(_solve_worker, [(str(cache), str(xdg))])
    return {"cache": cache, "xdg": xdg, "racers": racers, "later": later}


def test_racing_solvers_agree_and_a_later_process_loads_without_tracing(raced_cache):
    """Three processes build, initialize and solve the same 20-node model at the same
    moment on one empty ``solver.jax_cache_dir`` and one empty bundled-EOS cache; then a
    fourth does the same.

    Proves: every racer used the shared cache (none fell back to "not usable"), logged no
    warning (no torn or vanished entry was read from aragog's store), and
    all three give the same state bit for bit; the fourth loads rhs, jac and diagnostics
    from aragog's store without tracing (source "disk", traces 0, compiles 0) and gives
    the racers' state bit for bit; no temporary file or directory is left.

    Fails if a racer lost a race on the directory probe or the EOS rename (another table
    set -> another static key -> traced in the fourth), if a store entry was torn (a
    warning, then a compile in the fourth), or if the loaded executables differ from the
    compiled ones.
    """
    cache, racers, later = raced_cache["cache"], raced_cache["racers"], raced_cache["later"]
    for res in [*racers, later]:
        assert res["status"] == 0
        assert res["cache"] == str(cache)
        assert res["warnings"] == [], res["warnings"]
    for res in racers[1:]:
        assert res["state"] == racers[0]["state"]
    assert later["state"] == racers[0]["state"]
    for name in ("rhs", "jac", "diagnostics"):
        entry = later["stats"][name]
        assert entry["source"] == "disk" and entry["traces"] == 0 and entry["compiles"] == 0, (name, entry)
        for res in racers:  # each racer compiled it or loaded a racer's entry
            assert res["stats"][name]["source"] in ("compiled", "disk"), res["stats"][name]
    store = cache / "aragog-executables"
    assert len(list(store.glob("*.exe"))) >= 3
    assert not list(store.glob("*.tmp"))
    eos_dir = raced_cache["xdg"] / "aragog" / "eos"
    assert [p.name for p in eos_dir.iterdir() if p.name.startswith(".")] == []  # no build dirs left


# ------------------------------------------------------------- c. corrupt entries --
def test_corrupt_store_entry_is_a_miss_recompiled_and_replaced(tmp_path, monkeypatch, caplog):
    """A store entry truncated, overwritten with garbage, or empty (what a crash or a full
    disk leaves; a race cannot, see above) is looked up in this process.

    Proves: the lookup logs a warning naming the entry and compiles (no exception reaches
    the caller), the fresh executable replaces the entry, and the next lookup loads it
    (source "disk") with the same result. Fails if a bad entry raised, was silently used,
    or stayed in place (then every later process would warn and compile again).
    """
    import jax
    import jax.numpy as jnp

    # private: keyed compiles into a temporary store patched in, and the entry of a key
    from aragog import _compiling as compiling, _executable_store as executable_store

    store = executable_store.ExecutableStore(tmp_path / "store")
    monkeypatch.setattr(executable_store, "_store", [store])
    specs = [jax.ShapeDtypeStruct((3,), jnp.float64)]
    x = jnp.array([0.1, 0.2, 0.3])

    def fn(v):
        return jnp.sin(v) * 3.0 + v

    exe, record = compiling.compile_keyed(fn, specs, "race-test", key="corrupt-test")
    assert record.source == "compiled"
    expected = np.asarray(exe(x))
    # by name: a compile thread an earlier test left running may save another entry here
    entry = store._path(executable_store.full_key("corrupt-test", None))
    good = entry.read_bytes()
    for bad in (good[: len(good) // 2], b"\x00garbage" * 1000, b""):
        entry.write_bytes(bad)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aragog"):
            exe, record = compiling.compile_keyed(fn, specs, "race-test", key="corrupt-test")
        assert record.source == "compiled", bad[:20]
        assert any("is unusable" in r.getMessage() and str(entry) in r.getMessage() for r in caplog.records)
        assert np.array_equal(np.asarray(exe(x)), expected)
        assert entry.read_bytes() != bad
        pickle.loads(entry.read_bytes())  # replaced by a whole entry
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aragog"):
            exe, record = compiling.compile_keyed(fn, specs, "race-test", key="corrupt-test")
        assert record.source == "disk" and not caplog.records
        assert np.array_equal(np.asarray(exe(x)), expected)
    assert not list((tmp_path / "store").glob("*.tmp"))


def test_corrupt_entries_in_a_shared_directory_cost_a_warning_not_a_run(raced_cache, tmp_path):
    """A copy of the raced cache directory with every aragog store entry truncated; a
    fifth process solves on it.

    Proves: no exception reaches the user, each bad entry is named in a warning, and the
    state is bit for bit the racers'. (The programs are then traced and compiled again,
    and stored anew.)
    Fails if a corrupt entry raised or gave another result.
    """
    cache = tmp_path / "cache"
    shutil.copytree(raced_cache["cache"], cache)
    entries = sorted((cache / "aragog-executables").glob("*.exe"))
    for entry in entries:
        data = entry.read_bytes()
        entry.write_bytes(data[: len(data) // 3])
    (res,) = _race(_solve_worker, [(str(cache), str(raced_cache["xdg"]))])
    assert res["status"] == 0
    assert res["state"] == raced_cache["racers"][0]["state"]
    unusable = [m for m in res["warnings"] if "is unusable" in m]
    assert len(entries) >= 3  # rhs, jac, diagnostics: each one is looked up
    for entry in entries:
        assert any(entry.name in m for m in unusable), (entry.name, res["warnings"])
    for name in ("rhs", "jac", "diagnostics"):
        assert res["stats"][name]["source"] in ("disk", "compiled"), res["stats"][name]
        assert res["stats"][name]["traces"] == 1  # not loaded from the store: traced


# ------------------------------------------------------- d. the bundled EOS tables --
EOS_SIZE = (21, 31)


def _eos_worker(index, barrier, xdg):
    os.environ["XDG_CACHE_HOME"] = xdg
    collect = _collect_warnings()
    # private: generate_default_tables replaced in the module, DEFAULT_MODEL nudged
    from aragog.eos import _bundled as bundled

    original = bundled.generate_default_tables
    # Each process generates tables one ulp apart (T0 nudged index times): what another
    # CPU's exp/log can do, so whose copy a process ends up using is visible.
    t0 = bundled.DEFAULT_MODEL.T0
    for _ in range(index):
        t0 = float(np.nextafter(t0, np.inf))
    model = dataclasses.replace(bundled.DEFAULT_MODEL, T0=t0)
    own = {}

    def generate(np_=None, ns=None, model_=model):
        tables = original(np_, ns, model_)
        own["digest"] = tables.identity().digest
        barrier.wait(timeout=BARRIER_S)  # every process has missed the disk cache: all race to rename
        return tables

    bundled.generate_default_tables = generate
    barrier.wait(timeout=BARRIER_S)
    tables = bundled.default_table_set(*EOS_SIZE)
    return {"own": own.get("digest"), "used": tables.identity().digest, "warnings": collect.messages}


def test_racing_eos_generation_all_use_the_winners_tables(tmp_path):
    """Three processes miss the bundled-EOS disk cache together, each generates tables
    that differ from the others' by an ulp, and all rename their copy into the same place.

    Proves: exactly one copy lands, nobody fails or warns, and every process - the losers
    included - uses that copy (the same table identity, hence the same compiled-program
    key in every worker of a grid spread over machines whose libm differ). No temporary
    build directory is left. Fails if a loser raised on the rename, or kept its own
    in-memory tables.
    """
    from aragog.eos import _bundled as bundled  # private: _read_cache, the copy that landed on disk

    xdg = tmp_path / "xdg"
    results = _race(_eos_worker, [(str(xdg),)] * 3)
    assert len({res["own"] for res in results}) == 3  # the precondition: three different sets
    on_disk = bundled._read_cache(_eos_dir(xdg), *EOS_SIZE, warn=False)
    assert on_disk is not None
    assert {res["used"] for res in results} == {on_disk.identity().digest}
    for res in results:
        assert res["warnings"] == [], res["warnings"]
    assert [p.name for p in _eos_dir(xdg).parent.iterdir()] == [_eos_dir(xdg).name]


def _eos_dir(xdg: Path) -> Path:
    from aragog.eos import _bundled as bundled  # private: cache_dir, the set's cache folder

    return xdg / "aragog" / "eos" / bundled.cache_dir(*EOS_SIZE).name


def test_corrupt_eos_cache_is_regenerated_not_raised(tmp_path, monkeypatch, caplog):
    """The bundled-EOS cache with its binary copy (arrays.npz) truncated.

    Proves: loading the tables logs a warning and regenerates (then rewrites the cache)
    instead of raising. Fails if the reader lets ``zipfile.BadZipFile`` (not an
    ``OSError`` or ``ValueError``) through to the user, as it did.
    """
    from aragog.eos import _bundled as bundled  # private: _cached_set cleared, cache_dir's arrays.npz truncated

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    bundled._cached_set.cache_clear()
    try:
        first = bundled.default_table_set(*EOS_SIZE)
        npz = bundled.cache_dir(*EOS_SIZE) / "arrays.npz"
        good = npz.read_bytes()
        npz.write_bytes(good[: len(good) // 2])
        bundled._cached_set.cache_clear()
        with caplog.at_level(logging.WARNING, logger="aragog.eos"):
            again = bundled.default_table_set(*EOS_SIZE)
        assert again.identity() == first.identity()
        assert any("ignoring unusable EOS cache" in r.getMessage() for r in caplog.records)
        assert npz.read_bytes() == good  # rewritten whole
    finally:
        bundled._cached_set.cache_clear()
