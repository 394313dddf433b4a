"""Ahead-of-time compilation with counters.

:func:`compile_lowered` compiles a ``jax.stages.Lowered`` and reports how long it took
and where the executable came from: ``"compiled"`` (XLA compiled it) or ``"disk"`` (JAX
loaded it from its persistent compilation cache). The source is read from JAX's own
monitoring event ``/jax/compilation_cache/cache_hits``, so it is what JAX did, not a
guess. The event is counted per thread (JAX records it in the thread that compiles), so
compilations running concurrently in several threads are attributed correctly.

``compiler_options`` (per program, e.g. ``{"xla_backend_optimization_level": 0}``) are
passed to ``jax.stages.Lowered.compile``; they never touch the user's ``XLA_FLAGS`` and
are part of the key of an :class:`ExecutableStore` entry (JAX's own cache key includes
them too).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import pickle
import tempfile
import threading
import time
from dataclasses import dataclass

import jax
import jaxlib
from jax.experimental import serialize_executable

logger = logging.getLogger("aragog")

_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_hits = threading.local()  # per thread: JAX records the event in the compiling thread


def _thread_hits() -> int:
    return getattr(_hits, "n", 0)


def _on_event(event: str, **_kwargs) -> None:
    if event == _CACHE_HIT_EVENT:
        _hits.n = _thread_hits() + 1


jax.monitoring.register_event_listener(_on_event)


@dataclass
class CompileRecord:
    """One compilation: ``label``, seconds tracing + lowering, seconds compiling (or
    loading), and ``source``: ``"compiled"`` or ``"disk"``."""

    label: str
    lower_seconds: float
    compile_seconds: float
    source: str


def compile_lowered(lowered, label: str = "", lower_seconds: float = 0.0, compiler_options=None):
    """``(executable, CompileRecord)`` for ``lowered`` (a ``jax.stages.Lowered``), compiled
    with ``compiler_options`` (a mapping of XLA debug options; ``None`` or empty: XLA's
    defaults)."""
    before = _thread_hits()
    t0 = time.perf_counter()
    if compiler_options:
        try:
            compiled = lowered.compile(compiler_options=dict(compiler_options))
        except Exception as exc:  # noqa: BLE001 - only an option this XLA does not know
            if "No such compile option" not in str(exc):
                raise
            logger.warning("%s: XLA does not know the compiler options %s (%s); compiling with "
                           "its defaults", label or "program", options_key(compiler_options),
                           str(exc).splitlines()[0])
            compiled = lowered.compile()
    else:
        compiled = lowered.compile()
    seconds = time.perf_counter() - t0
    source = "disk" if _thread_hits() > before else "compiled"
    return compiled, CompileRecord(label, float(lower_seconds), seconds, source)


def lower(fn, specs, jit_kwargs=None):
    """``(lowered, seconds)``: ``jax.jit(fn, **jit_kwargs)`` traced and lowered for
    ``specs`` (Python work: it holds the GIL, unlike XLA's compile)."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn, **(jit_kwargs or {})).lower(*specs)
    return lowered, time.perf_counter() - t0


def aot_compile(fn, specs, label: str = "", jit_kwargs=None, compiler_options=None):
    """Trace, lower and compile ``jax.jit(fn, **jit_kwargs)`` for ``specs`` (a list of
    ``jax.ShapeDtypeStruct``): ``(executable, CompileRecord)``."""
    lowered, seconds = lower(fn, specs, jit_kwargs)
    return compile_lowered(lowered, label, seconds, compiler_options)


# ------------------------------------------------------------------ executable store --
class ExecutableStore:
    """Compiled executables serialized under ``directory``, one file per caller key.

    JAX's persistent cache is keyed on the lowered program, so a second process must
    trace and lower every program before it can look it up. A caller that knows a key
    which determines the program — its static configuration plus the identity of the code
    and of the JAX installation, see :func:`environment_key` — can load the executable
    from here without tracing. Entries are pickles (``jax.experimental.serialize_executable``
    payload and trees): like JAX's cache, the directory must be trusted. A missing,
    unreadable or corrupt entry returns ``None`` (with a warning for the last two); a
    failed write is a warning.

    With ``max_bytes``, the entries' total size is capped: a load marks its entry as
    used (its modification time), and a save that pushes the total over the cap removes
    the least recently used entries first (never the one just written). An entry larger
    than the cap is not stored.
    """

    def __init__(self, directory, max_bytes: int | None = None):
        self.directory = pathlib.Path(directory)
        self.max_bytes = None if max_bytes is None or max_bytes < 0 else int(max_bytes)

    def _path(self, key: str):
        return self.directory / (hashlib.sha256(key.encode()).hexdigest() + ".exe")

    def load(self, key: str):
        path = self._path(key)
        try:
            # One open and read: an entry is only ever replaced whole (``save``), so this
            # reads one writer's complete entry. Another process may evict or clear it
            # between a check and the read: gone is a plain miss, not a corrupt entry.
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None
        except OSError as exc:
            logger.warning("compilation cache entry %s is unreadable (%s): compiling instead",
                           path, exc.strerror or exc)
            return None
        try:
            payload, in_tree, out_tree = pickle.loads(data)
            compiled = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
        except Exception as exc:  # noqa: BLE001 - any bad entry means: compile instead
            logger.warning(
                "compilation cache entry %s is unusable (%s: %s): compiling instead",
                path, type(exc).__name__, exc)
            return None
        self._touch(path)
        return compiled

    @staticmethod
    def _touch(path) -> None:
        """Mark ``path`` as used now (what least-recently-used eviction orders by)."""
        try:
            os.utime(path)
        except OSError:  # a read-only cache still loads; its recency is just not kept
            pass

    def save(self, key: str, compiled) -> None:
        path = self._path(key)
        tmp = None
        try:
            data = pickle.dumps(serialize_executable.serialize(compiled))
            if self.max_bytes is not None and len(data) > self.max_bytes:
                logger.info("compilation cache entry %s not stored: %d bytes, more than the cap "
                            "of %d bytes for aragog's executables", path, len(data), self.max_bytes)
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)  # atomic: a reader never sees half an entry
        except Exception as exc:  # noqa: BLE001 - a cache write never fails a run
            logger.warning("could not write compilation cache entry %s (%s: %s)", path, type(exc).__name__, exc)
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            return
        self.evict(keep=path)

    def entries(self):
        """``[(mtime, size, path)]`` of the stored entries, least recently used first."""
        out = []
        try:
            candidates = list(self.directory.glob("*.exe"))
        except OSError:
            return out
        for entry in candidates:
            try:
                st = entry.stat()
            except OSError:  # removed by another process meanwhile
                continue
            out.append((st.st_mtime_ns, st.st_size, entry))
        out.sort(key=lambda item: (item[0], item[2].name))
        return out

    def evict(self, keep=None) -> int:
        """Remove least recently used entries until the total is within the cap (never
        ``keep``); returns the bytes removed. Another process evicting at the same time
        is harmless: an entry already gone is skipped."""
        if self.max_bytes is None:
            return 0
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = count = 0
        for _, size, entry in entries:
            if total <= self.max_bytes:
                break
            if keep is not None and entry == keep:
                continue
            try:
                entry.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                logger.warning("could not evict compilation cache entry %s (%s)", entry, exc.strerror or exc)
                continue
            total -= size
            removed += size
            count += 1
        if count:
            logger.info("compilation cache: evicted %d of aragog's executables (%d bytes), least recently "
                        "used first, to stay within the cap of %d bytes", count, removed, self.max_bytes)
        return removed


_store: list = [None]


def set_executable_store(directory, max_bytes: int | None = None) -> None:
    """Use an :class:`ExecutableStore` at ``directory`` for keyed compilations
    (``None``: no store), its entries capped at ``max_bytes`` (``None``: no cap)."""
    _store[0] = None if directory is None else ExecutableStore(directory, max_bytes)


def executable_store():
    """The active :class:`ExecutableStore`, or ``None``."""
    return _store[0]


def environment_key() -> str:
    """What, besides the caller's own key, decides a compiled executable: the JAX and
    jaxlib versions, the device, float64 mode and ``XLA_FLAGS``."""
    dev = jax.devices()[0]
    return repr((jax.__version__, jaxlib.__version__, dev.platform, getattr(dev, "device_kind", ""),
                 bool(jax.config.jax_enable_x64), os.environ.get("XLA_FLAGS", "")))


def options_key(compiler_options) -> str:
    """The canonical text of ``compiler_options`` in a store key (empty: XLA's defaults)."""
    return repr(sorted((str(k), v) for k, v in (compiler_options or {}).items()))


def _full_key(key: str, compiler_options) -> str:
    return key + "|" + options_key(compiler_options) + "|" + environment_key()


def store_has(key: str | None, compiler_options=None, store: "ExecutableStore | None" = None) -> bool:
    """Whether the active store (or ``store``) has an entry for ``key`` (as
    :func:`store_lookup` finds it; it may still turn out unusable). Cheap: no read."""
    store = executable_store() if store is None else store
    return store is not None and key is not None and store._path(_full_key(key, compiler_options)).is_file()


def store_lookup(key: str | None, label: str = "", compiler_options=None):
    """``(executable, CompileRecord)`` from the active store for ``key`` (with
    ``compiler_options`` and the :func:`environment_key`), or ``None`` (no store, no key,
    or no usable entry)."""
    store = executable_store()
    if store is None or key is None:
        return None
    t0 = time.perf_counter()
    compiled = store.load(_full_key(key, compiler_options))
    if compiled is None:
        return None
    return compiled, CompileRecord(label, 0.0, time.perf_counter() - t0, "disk")


def store_save(key: str | None, compiled, record: CompileRecord, compiler_options=None) -> None:
    """Save a fresh compilation in the active store under ``key`` (as :func:`store_lookup`
    finds it); nothing without a store or a key, or for an executable JAX loaded from its
    own cache (re-serializing it can lose its object code)."""
    store = executable_store()
    if store is None or key is None or record.source != "compiled":
        return
    store.save(_full_key(key, compiler_options), compiled)


def compile_keyed(fn, specs, label: str = "", jit_kwargs=None, key: str | None = None, compiler_options=None):
    """:func:`aot_compile`, but first look ``key`` (with ``compiler_options`` and the
    :func:`environment_key`) up in the active store (no tracing at all on a hit: the
    record says ``"disk"``), and save a fresh compilation there."""
    hit = store_lookup(key, label, compiler_options)
    if hit is not None:
        return hit
    compiled, record = aot_compile(fn, specs, label, jit_kwargs, compiler_options)
    store_save(key, compiled, record, compiler_options)
    return compiled, record
