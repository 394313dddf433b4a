"""The persistent compilation cache: on by default, in the user's cache directory.

Because tables, mesh and parameters are traced arguments, a compiled program depends only
on the static key, so a second process with the same key loads it from the cache instead
of compiling. Two layers share one directory: JAX's own entries (``<name>-<hash>-cache``
files, keyed on the lowered program) and aragog's executables (``aragog-executables/``,
keyed on the static configuration and loaded without tracing;
:class:`aragog.csdl._executable_store.ExecutableStore`). Programs shared within one
process, in memory, are :mod:`aragog.solver._shared_programs`; :func:`programs_in_cache`
says whether a solver's programs are stored here.

Which directory (first match wins):

1. ``solver.jax_cache_dir`` (``aragog run --jax-cache DIR``); ``"none"`` (``--no-jax-cache``)
   turns the cache off;
2. the environment variable ``ARAGOG_JAX_CACHE_DIR`` (a directory, or ``none``);
3. the caller's own JAX setting: ``jax.config.jax_compilation_cache_dir`` set by the
   calling code (PROTEUS), or ``$JAX_COMPILATION_CACHE_DIR`` — used as it is, never
   redirected;
4. ``platformdirs.user_cache_dir("aragog")/jax`` (``~/.cache/aragog/jax`` on Linux).

aragog lowers JAX's storage thresholds so that its programs are stored, caps the size
(``solver.jax_cache_max_mb``, least recently used entries evicted first) and logs every
JAX setting it changes, old -> new, at INFO on the ``aragog.solver`` logger. A threshold
the user set (environment variable ``JAX_PERSISTENT_CACHE_...`` or a value other than
JAX's default) is kept. An unusable directory costs a warning, never a failed run.

The resolution (:func:`resolve_cache_dir`, :func:`plan_jax_settings`) is pure, so it can
be tested without touching JAX's process-wide configuration; :func:`cache_contents` and
:func:`clear_cache` (plain file operations) serve ``aragog cache info|clear``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

logger = logging.getLogger("aragog.solver")

ENV_VAR = "ARAGOG_JAX_CACHE_DIR"
JAX_ENV_VAR = "JAX_COMPILATION_CACHE_DIR"
OFF = "none"
DEFAULT_MAX_MB = 1024
EXECUTABLES = "aragog-executables"  # aragog's store, a folder of the cache directory
EXE_SUFFIX = ".exe"
# Of the cap, JAX's entries get this share and aragog's executables the rest: JAX
# compresses its entries (zstd), about a fifth of the size of aragog's for the same programs.
JAX_SHARE = 0.25

# JAX's own defaults (0.6 - 0.10): a value other than these was set by the user.
JAX_DEFAULTS: dict[str, object] = {
    "jax_persistent_cache_min_compile_time_secs": 1.0,
    "jax_persistent_cache_min_entry_size_bytes": 0,
    "jax_compilation_cache_max_size": -1,
}

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


def cap_bytes(max_mb: int | None) -> tuple[int | None, int | None]:
    """``(JAX's share, aragog's share)`` in bytes of a cap of ``max_mb`` MB (10^6 bytes); ``(None, None)``
    when ``max_mb`` is 0 or ``None`` (no cap)."""
    if not max_mb:
        return None, None
    total = int(max_mb) * 1_000_000
    jax_part = int(total * JAX_SHARE)
    return jax_part, total - jax_part


@dataclass
class JaxPlan:
    """What aragog does to JAX's settings: ``changes`` as ``(name, old, new, why)`` and
    ``kept`` as ``(name, value, why)`` (the user's own values)."""

    changes: list[tuple[str, object, object, str]] = field(default_factory=list)
    kept: list[tuple[str, object, str]] = field(default_factory=list)


def plan_jax_settings(current: Mapping[str, object], *, environ: Mapping[str, str] | None = None,
                      max_bytes: int | None = None, directory: str | None = None,
                      why: str = "aragog's compilation cache", filelock: bool = True) -> JaxPlan:
    """The JAX settings aragog wants, less those the user set.

    Args:
        current: the current values of the names in :data:`JAX_DEFAULTS` and of
            ``jax_compilation_cache_dir``.
        environ: the environment (default ``os.environ``): a ``JAX_...`` variable of a
            setting means the user set it.
        max_bytes: JAX's share of the cap (``None``: no cap).
        directory: the cache directory (``None``: leave ``jax_compilation_cache_dir``).
        why: why that directory (for the log).
        filelock: whether the ``filelock`` package, which JAX's size cap needs, is there.
    """
    environ = os.environ if environ is None else environ
    plan = JaxPlan()
    if directory is not None and current.get("jax_compilation_cache_dir") != directory:
        plan.changes.append(("jax_compilation_cache_dir", current.get("jax_compilation_cache_dir"),
                             directory, why))
    wanted: dict[str, tuple[object, str]] = {
        "jax_persistent_cache_min_compile_time_secs": (0.0, "store every aragog program"),
        "jax_persistent_cache_min_entry_size_bytes": (-1, "store every aragog program, however small"),
    }
    if max_bytes is not None:
        if filelock:
            wanted["jax_compilation_cache_max_size"] = (int(max_bytes),
                                                        "solver.jax_cache_max_mb: JAX's share of the cap")
        else:
            plan.kept.append(("jax_compilation_cache_max_size", current.get("jax_compilation_cache_max_size"),
                              "JAX's size cap needs the filelock package, which is not installed"))
    for name, (value, why) in wanted.items():
        old = current.get(name)
        env_name = name.upper()
        if env_name in environ:
            plan.kept.append((name, old, f"the user's setting (${env_name})"))
        elif old != JAX_DEFAULTS[name]:
            plan.kept.append((name, old, "the user's setting (not JAX's default)"))
        elif old != value:
            plan.changes.append((name, old, value, why))
    return plan


def apply_jax_settings(plan: JaxPlan, update: Callable[[str, object], None]) -> None:
    """Make ``plan``'s changes through ``update`` (``jax.config.update``), logging each
    at INFO, old -> new, and each kept user setting."""
    for name, old, new, why in plan.changes:
        update(name, new)
        logger.info("compilation cache: aragog sets %s: %r -> %r (%s)", name, old, new, why)
    for name, value, why in plan.kept:
        logger.info("compilation cache: keeping %s = %r (%s)", name, value, why)


# --------------------------------------------------------------------- configuring --
_state: dict[str, object] = {"directory": None, "choice": None}


def _jax_current(jax) -> dict[str, object]:
    names = ["jax_compilation_cache_dir", *JAX_DEFAULTS]
    return {name: getattr(jax.config, name) for name in names}


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


def _jax_cache_open_at() -> str | None:
    """Where JAX already opened its cache in this process, if it did (private JAX state,
    read defensively: ``None`` when unknown)."""
    try:
        from jax._src import compilation_cache as cc

        cache = getattr(cc, "_cache", None)
        path = getattr(cache, "_path", None) or getattr(cache, "path", None)
        return None if path is None else str(path)
    except Exception:  # noqa: BLE001 - only a hint for a log line
        return None


def configure_compilation_cache(directory: str | os.PathLike | None = None,
                                max_mb: int | None = DEFAULT_MAX_MB, *, origin: str = "config") -> str | None:
    """Turn on the persistent compilation cache (see the module docstring for which
    directory) before the first compile. Returns the directory in use, or ``None``.

    Programs compiled before this call are not stored. JAX opens one cache directory per
    process: the first call that turns the cache on decides it, and a later call with
    another directory (or ``"none"``) keeps it, with a warning. Unreadable or corrupt
    entries and failed writes are warnings, never errors: the program is compiled instead.
    """
    from aragog._jax import jax

    choice = resolve_cache_dir(directory, origin=origin, jax_dir=jax.config.jax_compilation_cache_dir)
    active = _state["directory"]
    if active is not None:
        if choice.directory != active and choice.source in ("config", "cli", "env"):
            logger.warning("compilation cache: this process already uses %s; %s (%s) is ignored "
                           "(JAX opens one cache directory per process)",
                           active, choice.directory or OFF, choice.reason)
        return active
    if choice.directory is None:
        logger.debug("compilation cache: %s", choice.reason)
        return None
    remote = "://" in choice.directory
    path = Path(choice.directory)
    if not remote:
        problem = _usable(path)
        if problem is not None:
            logger.warning("compilation cache directory %s is not usable (%s): compiling without it",
                           path, problem)
            return None
    jax_max, own_max = cap_bytes(max_mb)
    enabled = bool(jax.config.jax_enable_compilation_cache)
    if enabled:
        opened = _jax_cache_open_at()
        if opened is not None and opened != choice.directory:
            logger.warning("compilation cache: JAX's cache is already open at %s in this process; "
                           "JAX's entries stay there, aragog's executables go to %s", opened, path)
        # The user's own JAX cache may hold other programs' entries: its size is theirs to cap.
        plan = plan_jax_settings(_jax_current(jax), max_bytes=None if choice.users_jax else jax_max,
                                 directory=choice.directory, why=choice.reason,
                                 filelock=importlib.util.find_spec("filelock") is not None)
        apply_jax_settings(plan, jax.config.update)
        if choice.users_jax and jax_max is not None:
            logger.info("compilation cache: %s is the user's own JAX cache: jax_compilation_cache_max_size "
                        "is left as it is (%r); solver.jax_cache_max_mb caps aragog's executables only",
                        choice.directory, jax.config.jax_compilation_cache_max_size)
    else:
        logger.info("compilation cache: jax_enable_compilation_cache is False (the user's setting, kept): "
                    "only aragog's executables are stored")
    if not remote:
        from aragog.csdl._executable_store import set_executable_store

        # aragog's own store beside JAX's entries: programs keyed by the static
        # configuration, loaded in a later process without tracing.
        set_executable_store(path / EXECUTABLES, max_bytes=own_max)
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
    from aragog.csdl._executable_store import ExecutableStore

    directory = resolve_cache_dir(configured_dir, jax_dir=jax.config.jax_compilation_cache_dir).directory
    if directory is None or "://" in directory:
        return False
    store = ExecutableStore(Path(directory) / EXECUTABLES)
    return all(pair.stored(name, store) for name in names)
