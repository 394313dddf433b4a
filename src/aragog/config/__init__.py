"""aragog configuration: TOML or INI (.cfg) file → typed, validated, mutable parameters.

>>> from aragog.config import load_config, read_config_file, to_toml
>>> params = load_config("input/earth.toml", overrides={"mesh.number_of_nodes": 80})
>>> params.solver.end_time = 2.0e6        # mutable: a coupling framework changes inputs
>>> params.validate()                     # re-checks everything; raises ConfigError
>>> raw = read_config_file("old.cfg")        # {section: {key: value}} of either syntax

The keys, defaults and units are in ``docs/config.md`` (generated from :mod:`._schema`).
This package does not import JAX.
"""

from __future__ import annotations

from ._loader import build_parameters, config_syntax, load_config, parse_overrides, read_config_file
from ._params import (
    BoundaryConditionsParams,
    EnergyParams,
    EOSParams,
    InitialConditionParams,
    MeshParams,
    OutputParams,
    Config,
    PhaseMixedParams,
    SinglePhaseParams,
    RadionuclideParams,
    SolverParams,
)
from ._schema import RADIONUCLIDE_KEYS, SCHEMA, SECTION_ORDER, Key
from ._toml_writer import to_toml

__all__ = [
    # the schema: every key's type, default, range, unit and meaning (docs/config.md)
    "SCHEMA",
    "SECTION_ORDER",
    "RADIONUCLIDE_KEYS",
    "Key",
    "load_config",
    "read_config_file",
    "config_syntax",
    "parse_overrides",
    "build_parameters",
    "to_toml",
    "Config",
    "SolverParams",
    "BoundaryConditionsParams",
    "MeshParams",
    "EnergyParams",
    "InitialConditionParams",
    "SinglePhaseParams",
    "PhaseMixedParams",
    "RadionuclideParams",
    "EOSParams",
    "OutputParams",
]


def __getattr__(name: str):
    # Config was named Parameters up to release 26.12.01, the name of the upstream aragog's own class
    # (aragog.parser.Parameters, a different thing). The old name still resolves, with a
    # warning, for scripts written against those versions.
    if name == "Parameters":
        import warnings

        warnings.warn("aragog.config.Parameters is now aragog.config.Config (aragog.parser.Parameters is "
                      "the upstream aragog's class)", DeprecationWarning, stacklevel=2)
        return Config
    raise AttributeError(f"module 'aragog.config' has no attribute {name!r}")
