"""The on-disk store of serialized executables, under keys the caller chooses.

:class:`ExecutableStore` keeps compiled executables (``jax.experimental.serialize_executable``)
in a directory, one file per key, with a size cap (least recently used entries evicted
first). :func:`set_executable_store` makes one the active store of the process, which
:func:`aragog._compiling.compile_keyed` (and so a region or schedule with a
``store_key``) consults before tracing. The key of an entry is the caller's key plus the
compiler options (:func:`options_key`) and the JAX installation and device
(:func:`environment_key`).

aragog's solver keeps its store in the persistent compilation cache directory
(:mod:`aragog.programs._disk_cache`), beside JAX's own entries.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import pickle
import tempfile

import jax
import jaxlib
from jax.experimental import serialize_executable

logger = logging.getLogger("aragog")


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


def full_key(key: str, compiler_options) -> str:
    """The name of ``key``'s entry: with ``compiler_options`` and the :func:`environment_key`."""
    return key + "|" + options_key(compiler_options) + "|" + environment_key()


def store_has(key: str | None, compiler_options=None, store: "ExecutableStore | None" = None) -> bool:
    """Whether the active store (or ``store``) has an entry for ``key`` (as
    :func:`aragog._compiling.store_lookup` finds it; it may still turn out unusable). Cheap: no read."""
    store = executable_store() if store is None else store
    return store is not None and key is not None and store._path(full_key(key, compiler_options)).is_file()
