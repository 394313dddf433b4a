"""``EntropyEOS_JAX`` (upstream name): a handle on a P-S table directory for the factory."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EntropyEOS_JAX"]


class EntropyEOS_JAX:
    """The table directory PROTEUS names for the JAX path. The solver's compiled programs
    already hold the tables (read once per process for its ``EntropyEOS``), so nothing is
    read or compiled here; the directory is only recorded (``""`` is allowed: the
    constant-property mode has no tables)."""

    def __init__(self, eos_dir):
        self.directory = Path(eos_dir).expanduser().resolve() if str(eos_dir) else None

    def __repr__(self) -> str:
        return f"EntropyEOS_JAX({str(self.directory or '')!r})"
