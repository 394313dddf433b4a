"""Static planet structure: radial mesh (radius or mass coordinate), pressure, gravity,
density (Adams–Williamson closed forms or a structure file), as a JAX pytree.

Public names:

* :func:`build_mesh`, :func:`mesh_from_params` -> :class:`Mesh`
* :class:`AdamsWilliamson`, :class:`StructureProfile` (structure sources)
* :data:`MESH_FIELDS` (shape, units, long name of every Mesh field)

See docs/structure.md.
"""

from __future__ import annotations

from aragog.structure._adams_williamson import (
    AdamsWilliamson,
    adams_williamson_beta,
    adams_williamson_density,
    adams_williamson_enclosed_mass,
    adams_williamson_pressure,
)
from aragog.structure._builder import (
    MIXING_LENGTH_PROFILES,
    build_mesh,
    mesh_from_params,
    mixing_length,
)
from aragog.structure._geometry import MESH_FIELDS, FieldDoc, Mesh
from aragog.structure._mesh import (
    NodeRadii,
    mass_coordinate,
    mass_coordinate_nodes,
    radius_mesh_nodes,
)
from aragog.structure._structure_file import (
    StructureProfile,
    read_structure_file,
    write_structure_file,
)

__all__ = [
    "AdamsWilliamson",
    "FieldDoc",
    "MESH_FIELDS",
    "MIXING_LENGTH_PROFILES",
    "Mesh",
    "NodeRadii",
    "StructureProfile",
    "adams_williamson_beta",
    "adams_williamson_density",
    "adams_williamson_enclosed_mass",
    "adams_williamson_pressure",
    "build_mesh",
    "mass_coordinate",
    "mass_coordinate_nodes",
    "mesh_from_params",
    "mixing_length",
    "radius_mesh_nodes",
    "read_structure_file",
    "write_structure_file",
]
