"""Equation of state: SPIDER-format P-S tables, the bundled model, lookups, two-phase evaluator.

Modules: :mod:`~aragog.eos._spider_format` (one file), :mod:`~aragog.eos._tables` (the
table-set pytree, load/write, identity), :mod:`~aragog.eos._bundled` (the default model,
its generation and cache), :mod:`~aragog.eos._lookup` (pure-JAX interpolation),
:mod:`~aragog.eos._phase` (two-phase and constant-property evaluators),
:mod:`~aragog.eos._check` (table checks). ``docs/eos_tables.md`` describes the format and
the bundled model.

Typical use::

    from aragog import eos
    tables = eos.default_table_set().to_jax()        # or eos.load_table_set(dir).to_jax()
    key = tables.identity()                          # static key for compiled functions
    f = jax.jit(eos.evaluate_phase)
    material = eos.MaterialParams(phase_liquid=eos.PhaseProperties(viscosity=100.0, thermal_conductivity=4.0),
                                  phase_solid=eos.PhaseProperties(viscosity=1e21, thermal_conductivity=4.0),
                                  rheological_transition_melt_fraction=0.4, rheological_transition_width=0.15)
    state = f(tables, material, P, S)                # PhaseState of arrays shaped like P, S
"""

from __future__ import annotations

from aragog.eos._spider_format import read_table_1d, read_table_2d, write_table_1d, write_table_2d
from aragog.eos._tables import (
    EOSTables,
    PhaseBoundary,
    PhaseTable,
    TableIdentity,
    describe_table_set,
    load_table_set,
    write_table_set,
)
from aragog.eos._bundled import (
    BUNDLED_MODELS,
    DEFAULT_NP,
    DEFAULT_NS,
    DEFAULT_SIZES,
    MODEL_NAME,
    MODEL_VERSION,
    BundledModel,
    bundled_cache_root,
    clear_table_cache,
    default_table_dir,
    default_table_set,
    extrapolation_note,
    generate_default_tables,
    table_range_for,
    write_default_tables,
)
from aragog.eos._lookup import bilinear, interp1d, interp1d_slope, lookup_phase
from aragog.eos._phase import (
    ConstantParams,
    MaterialParams,
    PhaseProperties,
    PhaseState,
    evaluate_constant,
    evaluate_phase,
    tanh_weight,
)
from aragog.eos._check import TableCheckReport, check_table_set

__all__ = [
    "read_table_1d",
    "read_table_2d",
    "write_table_1d",
    "write_table_2d",
    "EOSTables",
    "PhaseBoundary",
    "PhaseTable",
    "TableIdentity",
    "describe_table_set",
    "load_table_set",
    "write_table_set",
    "BUNDLED_MODELS",
    "DEFAULT_SIZES",
    "DEFAULT_NP",
    "DEFAULT_NS",
    "MODEL_NAME",
    "MODEL_VERSION",
    "BundledModel",
    "default_table_dir",
    "bundled_cache_root",
    "clear_table_cache",
    "default_table_set",
    "table_range_for",
    "extrapolation_note",
    "generate_default_tables",
    "write_default_tables",
    "bilinear",
    "interp1d",
    "interp1d_slope",
    "lookup_phase",
    "ConstantParams",
    "MaterialParams",
    "PhaseProperties",
    "PhaseState",
    "evaluate_constant",
    "evaluate_phase",
    "tanh_weight",
    "TableCheckReport",
    "check_table_set",
]
