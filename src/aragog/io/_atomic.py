"""Atomic file output: write to a temporary file in the target directory, then rename.

A reader never sees a half-written file, and a failed write leaves an existing file at
the target untouched and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from aragog.errors import AragogError

__all__ = ["atomic_output", "TEMP_SUFFIX"]

logger = logging.getLogger("aragog.io")

#: Temporary files are named ``.<target name>.<random>.tmp`` beside the target.
TEMP_SUFFIX = ".tmp"


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, what: str) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on success rename it onto ``path``.

    The body writes the temporary file (it exists, empty, with the permissions a new file
    would get under the current umask). On a clean exit the file is flushed to disk and
    renamed onto ``path`` with :func:`os.replace`; if the body raises, the temporary file
    is removed and the exception propagates, leaving any existing ``path`` untouched.

    Raises
    ------
    AragogError
        If the directory does not exist or is not writable, if ``path`` is a directory,
        or if the final rename fails; one line naming ``path`` (``what`` says what the
        file is, e.g. ``"netCDF output"``).
    """
    target = Path(path)
    directory = target.parent
    if target.is_dir():
        raise AragogError(f"cannot write {what} '{target}': it is a directory")
    if not directory.is_dir():
        raise AragogError(f"cannot write {what} '{target}': directory '{directory}' does not exist")
    tmp = None
    for _ in range(100):
        candidate = directory / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            # 0o666 & ~umask: the mode any newly created output file gets.
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise AragogError(
                f"cannot write {what} '{target}': directory '{directory}' is not writable ({_describe(exc)})"
            ) from None
        os.close(fd)
        tmp = candidate
        break
    if tmp is None:  # pragma: no cover - 100 collisions of 32 random bits
        raise AragogError(f"cannot write {what} '{target}': no free temporary file name in '{directory}'")

    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, AragogError):
            raise AragogError(f"cannot write {what} '{target}': {_describe(exc)}") from exc
        raise
    logger.debug("wrote %s %s", what, target)
