"""The persistent compilation cache: on by default, in the user's cache directory.

Because tables, mesh and parameters are traced arguments, a compiled program depends only
on the static key, so a second process with the same key loads it from the cache instead
of compiling. The cache is aragog's executable store (``aragog-executables/`` in the
directory; :class:`aragog._executable_store.ExecutableStore`): executables keyed on
the static configuration and loaded without tracing. aragog does not turn on JAX's own
persistent cache, nor change any of its settings (docs/design.md, "No global side
effects"); a directory shared with the user's JAX cache holds both. Programs shared within one
process, in memory, are :mod:`aragog.programs._shared`; :func:`programs_in_cache`
says whether a solver's programs are stored here.

Which directory (first match wins):

1. ``solver.jax_cache_dir`` (``aragog run --jax-cache DIR``); ``"none"`` (``--no-jax-cache``)
   turns the cache off;
2. the environment variable ``ARAGOG_JAX_CACHE_DIR`` (a directory, or ``none``);
3. the caller's own JAX setting: ``jax.config.jax_compilation_cache_dir`` set by the
   calling code (PROTEUS), or ``$JAX_COMPILATION_CACHE_DIR``: aragog's store goes in the
   same directory, beside JAX's entries;
4. ``platformdirs.user_cache_dir("aragog")/jax`` (``~/.cache/aragog/jax`` on Linux).

The store's size is capped (``solver.jax_cache_max_mb``, least recently used entries
evicted first). A remote or unusable directory costs a warning, never a failed run.

The resolution (:func:`resolve_cache_dir`) is pure; :func:`cache_contents` and
:func:`clear_cache` (plain file operations) serve ``aragog cache info|clear``.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

logger = logging.getLogger("aragog.solver")

ENV_VAR = "ARAGOG_JAX_CACHE_DIR"
JAX_ENV_VAR = "JAX_COMPILATION_CACHE_DIR"
OFF = "none"
DEFAULT_MAX_MB = 1024
EXECUTABLES = "aragog-executables"  # aragog's store, a folder of the cache directory
EXE_SUFFIX = ".exe"
SOURCE_TEXT = {
    "config": "solver.jax_cache_dir",
    "cli": "--jax-cache",
    "env": f"${ENV_VAR}",
    "jax-config": "the caller's jax.config.jax_compilation_cache_dir",
    "jax-env": f"${JAX_ENV_VAR}",
    "default": "aragog's default (the user cache directory)",
    "dir": "--dir",
}


@dataclass(frozen=True)
class CacheChoice:
    """Where the cache goes: ``directory`` (``None``: off), ``source`` (a key of
    :data:`SOURCE_TEXT`) and ``reason`` (one line for logs and ``aragog cache info``)."""

    directory: str | None
    source: str
    reason: str

    @property
    def users_jax(self) -> bool:
        """The directory is the user's own JAX cache (possibly shared with other programs)."""
        return self.source in ("jax-config", "jax-env")


def is_off(value: str | os.PathLike | None) -> bool:
    return value is not None and str(value).strip().lower() == OFF


def default_cache_dir() -> Path:
    """``platformdirs.user_cache_dir("aragog")/jax``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("aragog", appauthor=False)) / "jax"


def _absolute(directory: str | os.PathLike) -> str:
    text = str(directory)
    if "://" in text:  # a remote JAX cache (gs://...): JAX's business, kept as written
        return text
    return str(Path(text).expanduser().absolute())


def resolve_cache_dir(configured: str | os.PathLike | None = None, *, origin: str = "config",
                      environ: Mapping[str, str] | None = None, jax_dir: str | None = None,
                      default: str | os.PathLike | None = None) -> CacheChoice:
    """The cache directory and why, by the precedence in the module docstring.

    Args:
        configured: ``solver.jax_cache_dir`` or the CLI's directory ("" or ``None``: not
            set; ``"none"``: off).
        origin: where ``configured`` came from (``"config"`` or ``"cli"``).
        environ: the environment (default ``os.environ``).
        jax_dir: the current ``jax.config.jax_compilation_cache_dir`` (set by the caller's
            code; ``None``: not set).
        default: the directory used when nothing is set (default :func:`default_cache_dir`).
    """
    environ = os.environ if environ is None else environ
    name = SOURCE_TEXT[origin]
    if configured is not None and str(configured).strip():
        if is_off(configured):
            return CacheChoice(None, origin, f"turned off by {name} = {OFF!r}")
        return CacheChoice(_absolute(configured), origin, f"set by {name}")
    value = environ.get(ENV_VAR, "").strip()
    if value:
        if is_off(value):
            return CacheChoice(None, "env", f"turned off by ${ENV_VAR}={value}")
        return CacheChoice(_absolute(value), "env", f"set by ${ENV_VAR}")
    value = environ.get(JAX_ENV_VAR, "").strip()
    # JAX reads $JAX_COMPILATION_CACHE_DIR into its config at import: the same value there
    # is the environment's; another one was set by the calling code, and JAX uses that.
    if jax_dir and jax_dir != value:
        return CacheChoice(_absolute(jax_dir), "jax-config",
                           "the caller's own JAX cache (jax.config.jax_compilation_cache_dir)")
    if value:
        return CacheChoice(_absolute(value), "jax-env", f"the user's own JAX cache (${JAX_ENV_VAR})")
    directory = default if default is not None else default_cache_dir()
    return CacheChoice(_absolute(directory), "default",
                       f"aragog's default; opt out with solver.jax_cache_dir = {OFF!r}, "
                       f"--no-jax-cache or {ENV_VAR}={OFF}")


def cap_bytes(max_mb: int | None) -> int | None:
    """The cap of aragog's store in bytes of ``max_mb`` MB (10^6 bytes); ``None`` when
    ``max_mb`` is 0 or ``None`` (no cap)."""
    if not max_mb:
        return None
    return int(max_mb) * 1_000_000


# --------------------------------------------------------------------- configuring --
_state: dict[str, object] = {"directory": None, "choice": None}


def _usable(path: Path) -> str | None:
    """``None`` if ``path`` can be created and written, else why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        # A probe of its own per call: with one fixed name, processes starting together on
        # a shared directory (a grid's workers) removed each other's probe, and the loser
        # ran without the cache ("not usable": FileNotFoundError).
        fd, probe = tempfile.mkstemp(prefix=".aragog-write-test.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def configure_compilation_cache(directory: str | os.PathLike | None = None,
                                max_mb: int | None = DEFAULT_MAX_MB, *, origin: str = "config") -> str | None:
    """Turn on the persistent compilation cache, aragog's executable store (see the module
    docstring for which directory), before the first compile. Returns the directory in
    use, or ``None``. JAX's configuration is not touched.

    Programs compiled before this call are not stored. The first call that turns the cache
    on decides the directory for the process; a later call with another directory (or
    ``"none"``) keeps it, with a warning. Unreadable or corrupt entries and failed writes
    are warnings, never errors: the program is compiled instead.
    """
    from aragog._jax import jax

    choice = resolve_cache_dir(directory, origin=origin, jax_dir=jax.config.jax_compilation_cache_dir)
    active = _state["directory"]
    if active is not None:
        if choice.directory != active and choice.source in ("config", "cli", "env"):
            logger.warning("compilation cache: this process already uses %s; %s (%s) is ignored "
                           "(one cache directory per process)",
                           active, choice.directory or OFF, choice.reason)
        return active
    if choice.directory is None:
        logger.debug("compilation cache: %s", choice.reason)
        return None
    if "://" in choice.directory:
        logger.warning("compilation cache directory %s is remote: aragog's store needs a local directory; "
                       "compiling without it", choice.directory)
        return None
    path = Path(choice.directory)
    problem = _usable(path)
    if problem is not None:
        logger.warning("compilation cache directory %s is not usable (%s): compiling without it",
                       path, problem)
        return None
    from aragog._executable_store import set_executable_store

    # Programs keyed by the static configuration, loaded in a later process without tracing.
    set_executable_store(path / EXECUTABLES, max_bytes=cap_bytes(max_mb))
    _state["directory"], _state["choice"] = choice.directory, choice
    logger.info("persistent compilation cache: %s (%s; cap %s)", choice.directory, choice.reason,
                f"{max_mb} MB" if max_mb else "none")
    return choice.directory


def active_cache() -> CacheChoice | None:
    """The cache this process uses (``None``: none yet)."""
    return _state["choice"]  # type: ignore[return-value]


# --------------------------------------------------------------- info and clearing --
@dataclass
class CacheContents:
    """Entries and bytes of the two layers in a directory."""

    jax_entries: int = 0
    jax_bytes: int = 0
    own_entries: int = 0
    own_bytes: int = 0


def _jax_files(directory: Path):
    """JAX's entry files (``*-cache``) and their access stamps (``*-atime``)."""
    if not directory.is_dir():
        return
    for path in directory.iterdir():
        if path.is_file() and (path.name.endswith("-cache") or path.name.endswith("-atime")):
            yield path


def _own_files(directory: Path):
    store = directory / EXECUTABLES
    if not store.is_dir():
        return
    for path in store.iterdir():
        if path.is_file() and (path.suffix == EXE_SUFFIX or path.suffix == ".tmp"):
            yield path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def cache_contents(directory: str | os.PathLike) -> CacheContents:
    directory = Path(directory)
    out = CacheContents()
    for path in _jax_files(directory):
        out.jax_bytes += _size(path)
        out.jax_entries += path.name.endswith("-cache")
    for path in _own_files(directory):
        out.own_bytes += _size(path)
        out.own_entries += path.suffix == EXE_SUFFIX
    return out


def clear_cache(directory: str | os.PathLike, *, jax_entries: bool = True) -> CacheContents:
    """Remove aragog's executables and (with ``jax_entries``) JAX's entries from
    ``directory``; nothing else there is touched. Returns what was removed."""
    directory = Path(directory)
    removed = CacheContents()
    files = list(_own_files(directory))
    if jax_entries:
        files += list(_jax_files(directory))
    for path in files:
        size = _size(path)
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        if path.parent.name == EXECUTABLES:
            removed.own_bytes += size
            removed.own_entries += path.suffix == EXE_SUFFIX
        else:
            removed.jax_bytes += size
            removed.jax_entries += path.name.endswith("-cache")
    return removed


def format_bytes(n: float) -> str:
    """Decimal units, as ``solver.jax_cache_max_mb`` (1 MB = 10^6 bytes)."""
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.2f} GB"


def programs_in_cache(pair, names, configured_dir) -> bool:
    """Whether every program ``names`` of the (lazy, untraced) ``pair`` has an entry in
    aragog's store of the cache directory that ``configured_dir`` (``solver.jax_cache_dir``)
    resolves to; reads no entry and activates nothing. ``False`` with the cache off or
    remote."""
    from aragog._jax import jax
    from aragog._executable_store import ExecutableStore

    directory = resolve_cache_dir(configured_dir, jax_dir=jax.config.jax_compilation_cache_dir).directory
    if directory is None or "://" in directory:
        return False
    store = ExecutableStore(Path(directory) / EXECUTABLES)
    return all(pair.stored(name, store) for name in names)
