"""The package version, in one place: calendar versioning, ``YY.MM.DD`` of the release (as
the upstream aragog numbers its releases, so version checks written for it, such as
PROTEUS's ``fwl-aragog>=26.07.04``, compare correctly).

``__version__`` is the installed distribution's version (package metadata), written
``YY.MM.DD``; when aragog is not installed (a source tree on ``sys.path``) it is this
tree's release, :data:`RELEASE`. The CLI (``--version``), the solver and ``aragog.io``
import it from here, and :func:`provenance_attrs` is the one place that stamps it into
the files aragog writes. This module imports only the standard library, so every layer
can use it without an import cycle.
"""

from __future__ import annotations

from importlib import metadata as _metadata

__all__ = ["__version__", "RELEASE", "provenance_attrs"]

#: This source tree's release. pyproject.toml takes the package version from
#: ``aragog._version.__version__``, and setuptools reads that name statically, from its
#: first assignment: this literal. The build therefore never depends on an aragog that
#: happens to be installed already.
__version__ = "26.12.01"
RELEASE = __version__


def _installed_version(fallback: str) -> str:
    """The installed distribution's version as ``YY.MM.DD``, else ``fallback``."""
    try:
        version = _metadata.version("aragog")
    except _metadata.PackageNotFoundError:
        return fallback  # not installed: running from a source tree
    parts = version.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        # The metadata holds the PEP 440 normal form, which drops the zero padding
        # (26.12.01 -> 26.12.1); give back the calendar form.
        return ".".join(f"{int(p):02d}" for p in parts)
    return version


__version__ = _installed_version(RELEASE)


def provenance_attrs(created: str, verb: str, by: str, detail: str = "") -> dict[str, str]:
    """The CF ``source`` and ``history`` global attributes of a file aragog writes.

    ``history`` reads ``"{created}: {verb} by aragog {version} ({by}){detail}"``, e.g.
    ``provenance_attrs(now, "written", "aragog.io.write_netcdf")``.
    """
    return {
        "source": f"aragog {__version__}",
        "history": f"{created}: {verb} by aragog {__version__} ({by}){detail}",
    }
