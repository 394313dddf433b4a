"""Atomic file output, the one implementation every writer of aragog uses: write a
temporary file in the target's directory, then rename it onto the target.

A reader never sees a half-written file, and a failed write leaves an existing file at the
target untouched and no temporary file behind.

This module imports nothing from aragog but :mod:`aragog.errors`, so every layer can use
it (:mod:`aragog.eos._spider_format`, :mod:`aragog.io`, :mod:`aragog.grid`, the CLI);
:mod:`aragog.io._atomic` re-exports it. (:mod:`aragog._executable_store` keeps its own few
lines: that package imports nothing from aragog.)
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from aragog.errors import AragogError

__all__ = ["atomic_output", "write_text_atomically", "TEMP_SUFFIX"]

logger = logging.getLogger("aragog.io")

#: Temporary files are named ``.<target name>.<random>.tmp`` beside the target.
TEMP_SUFFIX = ".tmp"


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _create_temporary(target: Path, what: str, error: type[AragogError]) -> Path:
    """A new, empty, uniquely named file beside ``target`` (what :func:`tempfile.mkstemp`
    does: a random name opened with ``O_CREAT | O_EXCL``, retried on a collision), created
    with mode 0o666 so that the kernel applies the umask as for any new output file
    (``mkstemp`` would give 0o600, and reading the umask is not thread-safe)."""
    directory = target.parent
    for _ in range(100):
        candidate = directory / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise error(
                f"cannot write {what} '{target}': directory '{directory}' is not writable ({_describe(exc)})"
            ) from None
        os.close(fd)
        return candidate
    raise error(  # pragma: no cover - 100 collisions of 32 random bits
        f"cannot write {what} '{target}': no free temporary file name in '{directory}'")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, what: str, error: type[AragogError] = AragogError) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on success rename it onto ``path``.

    The body writes the temporary file (it exists, empty, with the permissions a new file
    would get under the current umask). On a clean exit the file is flushed to disk and
    renamed onto ``path`` with :func:`os.replace`; if the body raises (anything, including
    ``KeyboardInterrupt``), the temporary file is removed and the exception propagates,
    leaving any existing ``path`` untouched.

    Args:
        path: the target file.
        what: what the file is, for messages (e.g. ``"netCDF output"``).
        error: the :class:`~aragog.errors.AragogError` subclass raised for the failures
            below (e.g. :class:`~aragog.errors.EOSError` for EOS tables).

    Raises:
        AragogError: (``error``) if the directory does not exist or is not writable, if
            ``path`` is a directory, or if writing or the final rename fails with an
            :class:`OSError`; one line naming ``path``.
    """
    target = Path(path)
    directory = target.parent
    if target.is_dir():
        raise error(f"cannot write {what} '{target}': it is a directory")
    if not directory.is_dir():
        raise error(f"cannot write {what} '{target}': directory '{directory}' does not exist")
    tmp = _create_temporary(target, what, error)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, AragogError):
            raise error(f"cannot write {what} '{target}': {_describe(exc)}") from exc
        raise
    logger.debug("wrote %s %s", what, target)


def write_text_atomically(path: str | os.PathLike, text: str, what: str, *, encoding: str = "utf-8",
                          error: type[AragogError] = AragogError) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_output`); returns the path.

    An encoding failure, like any other, leaves ``path`` as it was and no temporary file.
    """
    target = Path(path)
    with atomic_output(target, what, error) as tmp:
        with open(tmp, "w", encoding=encoding) as fh:
            fh.write(text)
    return target
