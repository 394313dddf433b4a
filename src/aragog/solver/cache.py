"""The persistent XLA compilation cache (``solver.jax_cache_dir``, ``--jax-cache``, or the
standard ``JAX_COMPILATION_CACHE_DIR``).

Because tables, mesh and parameters are traced arguments, a compiled program depends only
on the static key, so a second process with the same key loads it from the cache instead
of compiling. An unusable directory costs a warning, never a failed run.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from aragog._jax import jax
from aragog.csdl.compiling import set_executable_store

logger = logging.getLogger("aragog.solver")

_configured: list[str | None] = [None]


def configure_compilation_cache(directory: str | os.PathLike | None) -> str | None:
    """Point JAX's persistent compilation cache at ``directory`` (or at
    ``$JAX_COMPILATION_CACHE_DIR`` when ``directory`` is empty) with thresholds low enough
    that aragog's programs are stored. Returns the directory in use, or ``None``.

    Programs compiled before this call are not stored. JAX opens one cache directory per
    process: a later call with another directory keeps the first (with a warning).
    Unreadable or corrupt entries and failed writes are JAX's warnings, never errors: the
    program is compiled instead.
    """
    directory = directory or os.environ.get("JAX_COMPILATION_CACHE_DIR") or None
    if directory is None:
        return _configured[0]
    path = Path(directory).expanduser().absolute()
    if _configured[0] is not None:
        if str(path) != _configured[0]:
            logger.warning("compilation cache: this process already uses %s; %s is ignored "
                           "(JAX opens one cache directory per process)", _configured[0], path)
        return _configured[0]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".aragog-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        logger.warning("compilation cache directory %s is not usable (%s): compiling without it",
                       path, exc.strerror or exc)
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    # aragog's own store beside JAX's entries: programs keyed by the static configuration,
    # loaded in a later process without tracing (aragog.csdl.compiling.ExecutableStore).
    set_executable_store(path / "aragog-executables")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)  # -1: no size limit
    _configured[0] = str(path)
    logger.info("persistent compilation cache: %s", path)
    return str(path)
