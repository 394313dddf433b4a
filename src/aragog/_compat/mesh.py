"""The upstream aragog's ``aragog.mesh`` names that PROTEUS imports, over :mod:`aragog.structure`."""

from __future__ import annotations

import math
import os

from aragog.errors import StructureError
from aragog.structure import read_structure_file

__all__ = ["derive_core_density_from_mesh"]


def derive_core_density_from_mesh(mesh_file, M_core: float) -> float:
    """Mean core density [kg/m³] that puts the core mass ``M_core`` [kg] inside the CMB
    radius of a structure file: ρ_core = M_core / (4/3 π R_cmb³).

    ``R_cmb`` is the smallest radius of the file (its first row in the ascending layout
    Zalmoxis writes; 4 or 5 columns r, P, ρ, g[, T]). The file is read and checked as
    ``mesh.eos_file`` is.

    Raises:
        FileNotFoundError: ``mesh_file`` does not exist.
        ValueError: ``M_core`` is not positive, or the file is malformed
            (:class:`~aragog.errors.StructureError`, a ``ValueError``).
    """
    if not os.path.isfile(os.fspath(mesh_file)):
        raise FileNotFoundError(f"structure file not found: {mesh_file}")
    if not float(M_core) > 0.0:
        raise ValueError(f"M_core must be > 0 kg, got {M_core}")
    r_cmb = float(read_structure_file(mesh_file)[0, 0])
    if not r_cmb > 0.0:
        raise StructureError(f"{mesh_file}: the CMB radius (first row) must be > 0 m, got {r_cmb}")
    return float(M_core) / (4.0 / 3.0 * math.pi * r_cmb**3)
