"""Checks of the Python environment this package was imported into.

The upstream aragog's distribution (PyPI ``fwl-aragog``, which PROTEUS requires) installs
the same import package, ``aragog``. Installed into one environment, the two overwrite each
other's files, and uninstalling either removes files the other needs. At import this
package warns when that distribution is installed too (docs/compat.md, "Using this package
in PROTEUS", says how to install the two apart).
"""

from __future__ import annotations

import warnings

__all__ = ["SharedImportPackageWarning", "other_distributions", "warn_if_shared"]

#: Distributions known to install the import package ``aragog`` besides this one.
KNOWN_OTHERS = ("fwl-aragog",)


class SharedImportPackageWarning(UserWarning):
    """Another installed distribution also provides the ``aragog`` import package."""


def other_distributions() -> list[tuple[str, str]]:
    """``(name, version)`` of each installed distribution of :data:`KNOWN_OTHERS` (a
    metadata lookup by name: well under a millisecond, no scan of the environment)."""
    from importlib.metadata import PackageNotFoundError, distribution

    found = []
    for name in KNOWN_OTHERS:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        found.append((str(dist.metadata["Name"] or name), str(dist.version)))
    return found


def warn_if_shared(version: str, location: str) -> None:
    """One :class:`SharedImportPackageWarning` naming this package (``version``, imported
    from ``location``) and every other distribution of the ``aragog`` import package."""
    others = other_distributions()
    if not others:
        return
    names = ", ".join(f"{n} {v}" for n, v in others)
    warnings.warn(
        f"aragog {version} (imported from {location}) and {names} both install the import "
        f"package 'aragog' in this environment: their files overwrite each other, and "
        f"uninstalling either breaks the other. Keep one (docs/compat.md, 'Using this "
        f"package in PROTEUS': pip uninstall fwl-aragog, then reinstall this package)",
        SharedImportPackageWarning, stacklevel=3)
