"""The package version: calendar versioning, ``YY.MM.DD`` of the release (as the upstream
aragog numbers its releases, so version checks written for it, such as PROTEUS's
``fwl-aragog>=26.07.04``, compare correctly)."""

__version__ = "26.12.01"
