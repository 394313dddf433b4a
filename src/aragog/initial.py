"""Initial-condition files: an entropy profile, one value per cell.

Format: plain text, whitespace- or newline-separated numbers in J/kg/K, ordered from the
core-mantle boundary outward (cell 0 first); lines starting with ``#`` are comments.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aragog.errors import ConfigError


def read_entropy_profile(path: str | Path, n_cells: int) -> np.ndarray:
    """Read an initial entropy profile.

    Args:
        path: the file (``initial_condition.init_file``).
        n_cells: the number of cells of the mesh (``mesh.number_of_nodes - 1``).

    Returns:
        float64 array of shape ``(n_cells,)``, J/kg/K.

    Raises:
        ConfigError: missing or unreadable file, wrong number of values, a value that is
            not finite.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"initial_condition.init_file: file not found: {path}")
    try:
        values = np.loadtxt(path, comments="#", dtype=np.float64, ndmin=1).ravel()
    except ValueError as exc:
        raise ConfigError(f"initial_condition.init_file {path}: not a list of numbers ({exc})") from None
    if values.size != n_cells:
        raise ConfigError(
            f"initial_condition.init_file {path}: has {values.size} values, the mesh has {n_cells} cells"
        )
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ConfigError(
            f"initial_condition.init_file {path}: value {values[bad[0]]!r} at cell {bad[0]} "
            "is not finite"
        )
    return values
