"""Exceptions a user can cause.

Every error that bad input can trigger (a malformed config, a missing or broken table,
a structure file that does not cover the mesh) is raised as an :class:`AragogError`
subclass whose message is one line naming the key, file or value at fault. The CLI prints
that line without a traceback and exits non-zero.
"""

from __future__ import annotations


class AragogError(Exception):
    """Base class of all user-facing aragog errors (message: one line)."""


class ConfigError(AragogError, ValueError):
    """A configuration key is unknown, missing, of the wrong type or out of range."""


class EOSError(AragogError, ValueError):
    """An equation-of-state table file or table set is missing or malformed."""


class StructureError(AragogError, ValueError):
    """The planet structure (mesh, structure file) is inconsistent."""


class MissingDependencyError(AragogError, OSError):
    """A library or tool the run needs, named by the user or by the chosen back end (a CVODE
    library set by ``ARAGOG_SUNDIALS_CVODE``, Slurm's ``sbatch``), is missing or cannot be
    used: the message names it and how to get it."""


def describe(exc: BaseException) -> str:
    """``"TypeName: first line of the message"`` (the type alone for an empty message): one
    line for a record, a log or a failure message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text and text[0] else type(exc).__name__


def format_indices(bad) -> str:
    """``"0-3, 7, 10-12"`` for the True entries of a boolean array (at most 6 ranges): the
    cells or nodes an error message names."""
    import numpy as np

    idx = np.flatnonzero(np.asarray(bad))
    ranges: list[tuple[int, int]] = []
    for i in idx.tolist():
        if ranges and i == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], i)
        else:
            ranges.append((i, i))
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:6]]
    if len(ranges) > 6:
        parts.append("...")
    return ", ".join(parts)
