"""``Mesh``: the static mesh and structure as one JAX pytree.

Every field is a float64 JAX array (no static data besides array shapes), so a
``Mesh`` can be passed as a traced argument to a jitted function and a new mesh
of the same size never triggers a retrace (docs/design.md, "The performance idea").

Index 0 is the core–mantle boundary, increasing outward; N is the number of cells, so
basic-node arrays have shape (N+1,) and staggered (cell) arrays shape (N,).
"""

from __future__ import annotations

import dataclasses
import numpy as np

from aragog._jax import jax, jnp
from aragog.fields import MESH_FIELDS, FieldMeta

__all__ = ["Mesh", "FieldDoc", "MESH_FIELDS"]

#: The documentation record of a ``Mesh`` field: :class:`aragog.fields.FieldMeta`
#: (``dim``, ``units``, ``long_name``; ``.shape`` gives ``"(N+1,)"``, ``"(N,)"`` or ``"()"``).
FieldDoc = FieldMeta


@dataclasses.dataclass(frozen=True, eq=False)  # array fields: no elementwise ==
class Mesh:
    """Static mesh and structure of the mantle (a JAX pytree; all fields float64).

    N = number of cells = number of basic nodes − 1. Basic nodes r_0 = r_c < … < r_N = R;
    cell i spans [r_i, r_{i+1}] and has its staggered node between them. Radial
    derivatives on either mesh: d/dr = (d/dξ)(dξ/dr).

    Fields (shape, units):
        r_basic (N+1,) m, r_stag (N,) m: node radii.
        xi_basic (N+1,) m, xi_stag (N,) m: mass coordinate ξ (ξ = r on a radius mesh);
            uniform in ξ on a mass-coordinate mesh, staggered ξ at the basic midpoints.
        area_basic (N+1,) m²: 4π r².
        volume_stag (N,) m³: 4/3 π (r_{i+1}³ − r_i³).
        mass_stag (N,) kg: ∫ 4π r² ρ dr over each cell (structure density).
        P_basic (N+1,), P_stag (N,) Pa: static pressure.
        g_basic (N+1,), g_stag (N,) m/s²: gravity (magnitude, pointing inward).
        rho_basic (N+1,), rho_stag (N,) kg/m³: static structure density.
        dxidr_basic (N+1,), dxidr_stag (N,) dimensionless: ρ r²/(ρ̄ ξ²) (1 on a radius mesh).
        mixing_length_basic (N+1,), mixing_length_stag (N,) m: mixing length l.
        inner_radius, outer_radius () m: r_c, R.
        core_mass () kg: 4/3 π r_c³ ρ_core.
        mantle_mass () kg: M(R).
        mean_density () kg/m³: ρ̄ = M_mantle / (4/3 π (R³ − r_c³)).
        surface_pressure () Pa: P(R).

    ``MESH_FIELDS`` holds the same information as data.
    """

    r_basic: jax.Array
    r_stag: jax.Array
    xi_basic: jax.Array
    xi_stag: jax.Array
    area_basic: jax.Array
    volume_stag: jax.Array
    mass_stag: jax.Array
    P_basic: jax.Array
    P_stag: jax.Array
    g_basic: jax.Array
    g_stag: jax.Array
    rho_basic: jax.Array
    rho_stag: jax.Array
    dxidr_basic: jax.Array
    dxidr_stag: jax.Array
    mixing_length_basic: jax.Array
    mixing_length_stag: jax.Array
    inner_radius: jax.Array
    outer_radius: jax.Array
    core_mass: jax.Array
    mantle_mass: jax.Array
    mean_density: jax.Array
    surface_pressure: jax.Array

    @property
    def number_of_cells(self) -> int:
        """N (static: read from an array shape)."""
        return self.r_stag.shape[-1]

    @property
    def number_of_nodes(self) -> int:
        """N + 1 basic nodes."""
        return self.r_basic.shape[-1]

    @classmethod
    def from_numpy(cls, *, as_jax: bool = False, **fields) -> "Mesh":
        """Build from host arrays/scalars as float64 arrays, checking shapes against
        ``MESH_FIELDS``. The leaves stay NumPy (host) arrays unless ``as_jax``:
        they enter compiled programs as arguments, and a solver that rebuilds its mesh
        between solves then pays no per-array device transfer."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = sorted(set(names) - set(fields))
        extra = sorted(set(fields) - set(names))
        if missing or extra:
            raise TypeError(f"Mesh.from_numpy: missing {missing}, unexpected {extra}")
        n = np.shape(fields["r_stag"])[0]
        expected = {"(N+1,)": (n + 1,), "(N,)": (n,), "()": ()}
        out = {}
        for name in names:
            arr = np.asarray(fields[name], dtype=np.float64)
            want = expected[MESH_FIELDS[name].shape]
            if arr.shape != want:
                raise ValueError(f"Mesh.{name}: shape {arr.shape}, expected {want}")
            out[name] = jnp.asarray(arr, dtype=jnp.float64) if as_jax else arr
        return cls(**out)

    def to_numpy(self) -> dict[str, np.ndarray]:
        """All fields as host NumPy arrays (0-d arrays for the scalars)."""
        return {f.name: np.asarray(getattr(self, f.name)) for f in dataclasses.fields(self)}


jax.tree_util.register_dataclass(
    Mesh,
    data_fields=[f.name for f in dataclasses.fields(Mesh)],
    meta_fields=[],
)

assert list(MESH_FIELDS) == [f.name for f in dataclasses.fields(Mesh)]
