"""``data_pytree``: a frozen dataclass whose fields are all JAX pytree data (traced leaves).

Used for every parameter and state container that is passed to compiled functions as an
argument (never closed over), so a change of values never retraces.
"""

from __future__ import annotations

import dataclasses

from aragog._jax import jax


def data_pytree(cls):
    """Decorator: make ``cls`` a frozen dataclass registered as a pytree with every field a
    data field (no static metadata)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])
