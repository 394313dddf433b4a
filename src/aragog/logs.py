"""Logging set-up helpers. Library code only logs (``logging.getLogger("aragog....")``);
these functions attach handlers for applications that want aragog's messages on the
console and in a file.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["aragog_file_logger", "LOGGER_NAME"]

#: The package's logger; every module logs below it ("aragog.solver", "aragog.config", ...).
LOGGER_NAME = "aragog"

_CONSOLE_FORMAT = "[%(name)s %(levelname)s] %(message)s"
_FILE_FORMAT = "%(asctime)s %(name)s %(levelname)s %(funcName)s:%(lineno)d: %(message)s"


def aragog_file_logger(console_level=logging.INFO, file_level=logging.DEBUG, log_dir=None) -> logging.Logger:
    """Send aragog's log messages to the console and to ``<log_dir>/aragog.log``.

    The name and signature are those of the upstream aragog (PROTEUS calls it once per
    run). Calling it again replaces the handlers it installed before, so messages are
    never written twice.

    Args:
        console_level: level of the console handler (a ``logging`` level or its name).
        file_level: level of the file handler.
        log_dir: folder of the log file (default: the working directory); created if missing.

    Returns:
        The ``"aragog"`` logger.
    """
    console_level = logging._checkLevel(console_level)  # accepts names like "INFO"
    file_level = logging._checkLevel(file_level)
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, "_aragog_file_logger", False):
            logger.removeHandler(handler)
            handler.close()
    logger.setLevel(min(console_level, file_level))
    console = logging.StreamHandler()
    console.setLevel(console_level)
    console.setFormatter(logging.Formatter(_CONSOLE_FORMAT))
    folder = Path(log_dir if log_dir is not None else os.getcwd())
    folder.mkdir(parents=True, exist_ok=True)
    file = logging.FileHandler(folder / "aragog.log")
    file.setLevel(file_level)
    file.setFormatter(logging.Formatter(_FILE_FORMAT))
    for handler in (console, file):
        handler._aragog_file_logger = True
        logger.addHandler(handler)
    return logger
