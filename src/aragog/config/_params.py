"""Typed, mutable parameter objects: one dataclass per config section, and :class:`Config`.

Attribute names are exactly the TOML key names (``docs/config.md``); defaults come from
:mod:`._schema`. Units are SI, times in years. The objects are plain mutable dataclasses so
a coupling framework can change inputs between solves::

    params.solver.end_time = 200.0
    params.validate()          # re-checks types, ranges and consistency; raises ConfigError
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError
from aragog.units import PPM

from ._normalise import (Overrides, apply_overrides, check_range, check_required, coerce_and_check, fmt, normalise,
                         parse_overrides, resolve_path, resolve_paths)
from ._schema import (ALWAYS_GIVEN, CONST_KEYS, RADIONUCLIDE_KEYS, RADIONUCLIDE_PREFIX, REQUIRED, SCHEMA,
                      SECTION_ORDER, USED_ONLY_WITH, keys_of)

__all__ = [
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
    "Config",
    "SECTION_CLASSES",
]

logger = logging.getLogger("aragog.config")

#: The bundled EOS models ``eos.model`` may name: the keys of ``aragog.eos.BUNDLED_MODELS``
#: (config sits below eos and cannot import it; ``tests/test_one_rule.py`` checks that the
#: two name the same models). :meth:`Config.validate` is the one place that checks it.
BUNDLED_EOS_MODELS = ("default", "mgsio3")


def _f(section: str, name: str) -> Any:
    """The dataclass field for ``section.name``, with the schema's default."""
    key = keys_of(section)[name]
    if key.required:
        return field()
    if isinstance(key.default, (list, tuple)):
        return field(default_factory=lambda d=key.default: list(d))
    return field(default=key.default)


@dataclass(kw_only=True)
class SolverParams:
    """``[solver]``: time window [yr], integrator tolerances and options."""

    start_time: float = _f("solver", "start_time")  # yr
    end_time: float = _f("solver", "end_time")  # yr
    atol: float = _f("solver", "atol")  # J/kg/K
    rtol: float = _f("solver", "rtol")  # -
    tsurf_poststep_change: float = _f("solver", "tsurf_poststep_change")  # K, unused
    max_steps: int = _f("solver", "max_steps")
    max_step_growth: float = _f("solver", "max_step_growth")  # -, CVODE's etamax
    warm_start: bool = _f("solver", "warm_start")
    wall_time_limit: float = _f("solver", "wall_time_limit")  # s, 0: no limit
    output_points: int = _f("solver", "output_points")
    output_spacing: str = _f("solver", "output_spacing")
    method: str = _f("solver", "method")  # "cvode" | "bdf" | "radau"
    jacobian: str = _f("solver", "jacobian")  # "jax" | "fd"
    jax_cache_dir: str = _f("solver", "jax_cache_dir")  # "": automatic, "none": off
    jax_cache_max_mb: int = _f("solver", "jax_cache_max_mb")  # MB (10^6 bytes), 0: no cap
    compile_mode: str = _f("solver", "compile_mode")  # "fused" | "blocks"
    newton: str = _f("solver", "newton")  # "auto" | "compiled" | "callbacks"


@dataclass(kw_only=True)
class BoundaryConditionsParams:
    """``[boundary_conditions]``: surface and core-mantle boundary conditions."""

    outer_boundary_condition: int = _f("boundary_conditions", "outer_boundary_condition")  # 1, 4, 5
    outer_boundary_value: float = _f("boundary_conditions", "outer_boundary_value")  # W/m² or K
    inner_boundary_condition: int = _f("boundary_conditions", "inner_boundary_condition")  # 1, 2, 3
    inner_boundary_value: float = _f("boundary_conditions", "inner_boundary_value")  # W/m² or K
    emissivity: float = _f("boundary_conditions", "emissivity")  # -
    equilibrium_temperature: float = _f("boundary_conditions", "equilibrium_temperature")  # K
    core_heat_capacity: float = _f("boundary_conditions", "core_heat_capacity")  # J/kg/K
    tfac_core_avg: float = _f("boundary_conditions", "tfac_core_avg")  # -
    core_bc: str = _f("boundary_conditions", "core_bc")  # energy_balance|quasi_steady|gradient|bower2018
    param_utbl: bool = _f("boundary_conditions", "param_utbl")
    param_utbl_const: float = _f("boundary_conditions", "param_utbl_const")  # K⁻²


@dataclass(kw_only=True)
class MeshParams:
    """``[mesh]``: radii [m], node count, mixing length and static structure."""

    outer_radius: float = _f("mesh", "outer_radius")  # m
    inner_radius: float = _f("mesh", "inner_radius")  # m
    number_of_nodes: int = _f("mesh", "number_of_nodes")  # basic nodes; cells = nodes - 1
    mixing_length_profile: str = _f("mesh", "mixing_length_profile")
    mixing_length_constant_fraction: float = _f("mesh", "mixing_length_constant_fraction")  # -
    core_density: float = _f("mesh", "core_density")  # kg/m³
    mass_coordinates: bool = _f("mesh", "mass_coordinates")
    eos_method: int = _f("mesh", "eos_method")  # 1 Adams-Williamson, 2 structure file
    eos_file: str = _f("mesh", "eos_file")  # absolute path or ""
    surface_density: float = _f("mesh", "surface_density")  # kg/m³
    gravitational_acceleration: float = _f("mesh", "gravitational_acceleration")  # m/s²
    adiabatic_bulk_modulus: float = _f("mesh", "adiabatic_bulk_modulus")  # Pa
    adams_williamson_beta: float = _f("mesh", "adams_williamson_beta")  # 1/m
    surface_pressure: float = _f("mesh", "surface_pressure")  # Pa


@dataclass(kw_only=True)
class EnergyParams:
    """``[energy]``: switches of the energy-equation terms and their parameters."""

    conduction: bool = _f("energy", "conduction")
    convection: bool = _f("energy", "convection")
    gravitational_separation: bool = _f("energy", "gravitational_separation")
    mixing: bool = _f("energy", "mixing")
    radionuclides: bool = _f("energy", "radionuclides")
    tidal: bool = _f("energy", "tidal")
    tidal_array: list[float] = _f("energy", "tidal_array")  # W/kg, 1 value or one per cell
    kappah_floor: float = _f("energy", "kappah_floor")  # m²/s
    eddy_diffusivity_thermal: float = _f("energy", "eddy_diffusivity_thermal")  # - (≤ 0: m²/s)
    eddy_diffusivity_chemical: float = _f("energy", "eddy_diffusivity_chemical")  # - (≤ 0: m²/s)
    mixing_onset_width: float = _f("energy", "mixing_onset_width")  # -
    phi_step_cap: float = _f("energy", "phi_step_cap")  # -, 0 = off
    temperature_step_cap: float = _f("energy", "temperature_step_cap")  # K, 0 = off
    entropy_step_cap: float = _f("energy", "entropy_step_cap")  # J/kg/K, 0 = off


@dataclass(kw_only=True)
class InitialConditionParams:
    """``[initial_condition]``: how the initial entropy profile is made."""

    initial_condition: int = _f("initial_condition", "initial_condition")  # 1, 2, 3
    surface_temperature: float = _f("initial_condition", "surface_temperature")  # K
    basal_temperature: float = _f("initial_condition", "basal_temperature")  # K
    init_file: str = _f("initial_condition", "init_file")  # absolute path or ""


@dataclass(kw_only=True)
class SinglePhaseParams:
    """``[phase_liquid]`` or ``[phase_solid]``: single-phase material properties."""

    density: float = _f("phase_liquid", "density")  # kg/m³
    viscosity: float = _f("phase_liquid", "viscosity")  # Pa s
    heat_capacity: float = _f("phase_liquid", "heat_capacity")  # J/kg/K
    melt_fraction: float = _f("phase_liquid", "melt_fraction")  # -
    thermal_conductivity: float = _f("phase_liquid", "thermal_conductivity")  # W/m/K
    thermal_expansivity: float = _f("phase_liquid", "thermal_expansivity")  # 1/K


@dataclass(kw_only=True)
class PhaseMixedParams:
    """``[phase_mixed]``: two-phase (mush) parameters and the constant-property mode.

    The ``const_*`` keys are ``None`` when unset. With ``const_properties = true``,
    :meth:`Config.validate` fills ``const_rho, const_Cp, const_alpha, const_cond`` from
    ``[phase_liquid]`` (density, heat_capacity, thermal_expansivity, thermal_conductivity)
    and ``const_log10visc`` from log10(phase_liquid.viscosity); ``const_T_ref`` [K] and
    ``const_S_ref`` [J/kg/K] (T = T_ref exp((S − S_ref)/c_p)) must be given.
    """

    latent_heat_of_fusion: float = _f("phase_mixed", "latent_heat_of_fusion")  # J/kg
    rheological_transition_melt_fraction: float = _f("phase_mixed", "rheological_transition_melt_fraction")
    rheological_transition_width: float = _f("phase_mixed", "rheological_transition_width")
    solidus: str = _f("phase_mixed", "solidus")  # compatibility only
    liquidus: str = _f("phase_mixed", "liquidus")  # compatibility only
    phase: str = _f("phase_mixed", "phase")  # "liquid" | "solid" | "mixed"
    phase_transition_width: float = _f("phase_mixed", "phase_transition_width")
    grain_size: float = _f("phase_mixed", "grain_size")  # m
    separation_buoyancy: str = _f("phase_mixed", "separation_buoyancy")  # "solid" | "mixture"
    separation_viscosity: str = _f("phase_mixed", "separation_viscosity")  # "melt" | "mixture"
    matprop_smooth_width: float = _f("phase_mixed", "matprop_smooth_width")
    const_properties: bool = _f("phase_mixed", "const_properties")
    const_rho: float | None = _f("phase_mixed", "const_rho")  # kg/m³
    const_Cp: float | None = _f("phase_mixed", "const_Cp")  # J/kg/K
    const_alpha: float | None = _f("phase_mixed", "const_alpha")  # 1/K
    const_cond: float | None = _f("phase_mixed", "const_cond")  # W/m/K
    const_log10visc: float | None = _f("phase_mixed", "const_log10visc")  # log10(Pa s)
    const_T_ref: float | None = _f("phase_mixed", "const_T_ref")  # K
    const_S_ref: float | None = _f("phase_mixed", "const_S_ref")  # J/kg/K


@dataclass(kw_only=True)
class RadionuclideParams:
    """One ``[radionuclide_NAME]`` section: a heat-producing isotope."""

    name: str = _f("radionuclide_", "name")
    t0_years: float = _f("radionuclide_", "t0_years")  # yr
    abundance: float = _f("radionuclide_", "abundance")  # - (isotope / element)
    concentration: float = _f("radionuclide_", "concentration")  # ppm of the element
    heat_production: float = _f("radionuclide_", "heat_production")  # W/kg of the isotope
    half_life_years: float = _f("radionuclide_", "half_life_years")  # yr


@dataclass(kw_only=True)
class EOSParams:
    """``[eos]``: which equation-of-state tables to use."""

    dir: str = _f("eos", "dir")  # absolute path or "" (bundled model)
    model: str = _f("eos", "model")


@dataclass(kw_only=True)
class OutputParams:
    """``[output]``: what the ``aragog run`` command writes."""

    file: str = _f("output", "file")
    snapshots: int = _f("output", "snapshots")


#: Section name -> dataclass, for the fixed sections.
SECTION_CLASSES: dict[str, type] = {
    "solver": SolverParams,
    "boundary_conditions": BoundaryConditionsParams,
    "mesh": MeshParams,
    "energy": EnergyParams,
    "initial_condition": InitialConditionParams,
    "phase_liquid": SinglePhaseParams,
    "phase_solid": SinglePhaseParams,
    "phase_mixed": PhaseMixedParams,
    "eos": EOSParams,
    "output": OutputParams,
}
assert list(SECTION_CLASSES) == list(SCHEMA)
for _name, _cls in SECTION_CLASSES.items():
    assert [f.name for f in dataclasses.fields(_cls)] == list(SCHEMA[_name]), _name


def validate_section(label: str, obj: Any, base_dir: Path | None = None, keys: dict | None = None) -> None:
    """Coerce and range-check every field of a section object in place.

    Args:
        label: the section name used in messages (``"mesh"``, ``"radionuclide_K40"``).
        obj: the section dataclass instance.
        base_dir: folder against which relative path keys are resolved (``None``: leave).
        keys: the key table (default: the one of ``label``).
    """
    keys = keys if keys is not None else keys_of(label)
    for name, key in keys.items():
        value = coerce_and_check(f"{label}.{name}", key, getattr(obj, name))
        if key.kind == "path" and base_dir is not None:
            value = resolve_path(value, base_dir)
        setattr(obj, name, value)


@dataclass(kw_only=True)
class Config:
    """All parameters of one aragog run (one attribute per TOML section).

    Attributes:
        radionuclides: one :class:`RadionuclideParams` per ``[radionuclide_NAME]`` section,
            in file order.
        config_path: the file these were read from (absolute), or ``None``. Not compared
            by ``==``.
    """

    solver: SolverParams
    boundary_conditions: BoundaryConditionsParams
    mesh: MeshParams
    energy: EnergyParams
    initial_condition: InitialConditionParams
    phase_liquid: SinglePhaseParams
    phase_solid: SinglePhaseParams
    phase_mixed: PhaseMixedParams
    radionuclides: list[RadionuclideParams] = field(default_factory=list)
    eos: EOSParams = field(default_factory=EOSParams)
    output: OutputParams = field(default_factory=OutputParams)
    config_path: Path | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ validation
    def validate(self) -> Config:
        """Re-check everything (types, ranges, consistency between keys); returns ``self``.

        Normalises in place: ints given for floats become floats, NumPy scalars and arrays
        become Python numbers and lists, relative paths are made absolute (against the
        config file's folder, else the working directory), and with ``const_properties``
        the unset ``const_*`` defaults are filled in from ``[phase_liquid]``.

        Raises:
            ConfigError: one line naming the key path and the value at fault.
        """
        if self.config_path is not None:
            self.config_path = Path(self.config_path)
        base_dir = self.config_path.parent if self.config_path is not None else Path.cwd()
        for name, cls in SECTION_CLASSES.items():
            obj = getattr(self, name)
            if not isinstance(obj, cls):
                raise ConfigError(f"`{name}` must be a {cls.__name__}, got {type(obj).__name__}")
            validate_section(name, obj, base_dir)
        if isinstance(self.radionuclides, tuple):
            self.radionuclides = list(self.radionuclides)
        if not isinstance(self.radionuclides, list):
            raise ConfigError(f"`radionuclides` must be a list, got {type(self.radionuclides).__name__}")
        seen: set[str] = set()
        for i, nuclide in enumerate(self.radionuclides):
            if not isinstance(nuclide, RadionuclideParams):
                raise ConfigError(f"`radionuclides[{i}]` must be a RadionuclideParams, got "
                                  f"{type(nuclide).__name__}")
            named = isinstance(nuclide.name, str) and nuclide.name.strip()
            label = f"{RADIONUCLIDE_PREFIX}{nuclide.name}" if named else f"radionuclides[{i}]"
            validate_section(label, nuclide, keys=RADIONUCLIDE_KEYS)
            if nuclide.name in seen:
                raise ConfigError(f"radionuclide name '{nuclide.name}' is used twice; names must be unique")
            seen.add(nuclide.name)
        if self.energy.radionuclides:
            _check_decay_factors(self.radionuclides, self.solver.start_time)
        self._check_consistency()
        return self

    def _check_consistency(self) -> None:
        s, bc, mesh, energy, ic = self.solver, self.boundary_conditions, self.mesh, self.energy, (
            self.initial_condition)
        if s.end_time < s.start_time:
            raise ConfigError(f"solver.end_time ({fmt(s.end_time)}) must be >= solver.start_time "
                              f"({fmt(s.start_time)})")
        if mesh.inner_radius >= mesh.outer_radius:
            raise ConfigError(f"mesh.inner_radius ({fmt(mesh.inner_radius)}) must be < mesh.outer_radius "
                              f"({fmt(mesh.outer_radius)})")
        if s.newton == "compiled":
            clash = ("compile_mode", s.compile_mode, "fused") if s.compile_mode != "fused" else (
                ("jacobian", s.jacobian, "jax") if s.jacobian != "jax" else (
                    ("method", s.method, "cvode") if s.method != "cvode" else None))
            if clash is not None:
                raise ConfigError(f"`solver.newton` = 'compiled' needs solver.{clash[0]} = '{clash[2]}', got "
                                  f"'{clash[1]}' (or set newton = 'auto')")
        if mesh.eos_method == 2 and not mesh.eos_file:
            raise ConfigError("`mesh.eos_method` = 2 (structure file) needs a non-empty `mesh.eos_file`")
        if ic.initial_condition == 2 and not ic.init_file:
            raise ConfigError("`initial_condition.initial_condition` = 2 (entropy file) needs a non-empty "
                              "`initial_condition.init_file`")
        if bc.outer_boundary_condition == 5 and bc.outer_boundary_value <= 0.0:
            raise ConfigError(f"`boundary_conditions.outer_boundary_value` is a temperature for "
                              f"outer_boundary_condition = 5 and must be > 0 K, got "
                              f"'{fmt(bc.outer_boundary_value)}'")
        if bc.inner_boundary_condition == 3 and bc.inner_boundary_value <= 0.0:
            raise ConfigError(f"`boundary_conditions.inner_boundary_value` is a temperature for "
                              f"inner_boundary_condition = 3 and must be > 0 K, got "
                              f"'{fmt(bc.inner_boundary_value)}'")
        n_cells = mesh.number_of_nodes - 1
        if len(energy.tidal_array) not in (1, n_cells):
            raise ConfigError(f"`energy.tidal_array` has {len(energy.tidal_array)} values; give 1 (all cells) "
                              f"or {n_cells} (mesh.number_of_nodes - 1, one per cell)")
        if self.eos.model not in BUNDLED_EOS_MODELS:
            raise ConfigError(f"eos.model: unknown bundled model {self.eos.model!r}; available: "
                              f"{', '.join(sorted(BUNDLED_EOS_MODELS))}")
        self._fill_const_properties()

    def _fill_const_properties(self) -> None:
        pm = self.phase_mixed
        if not pm.const_properties:
            return
        missing = [f"`phase_mixed.{k}`" for k, src in CONST_KEYS.items() if src is None and getattr(pm, k) is None]
        if missing:
            raise ConfigError(f"{' and '.join(missing)} must be given when `phase_mixed.const_properties` = true "
                              "(T = const_T_ref exp((S - const_S_ref)/const_Cp))")
        for key, source in CONST_KEYS.items():
            if source is None or getattr(pm, key) is not None:
                continue
            value = getattr(self.phase_liquid, source)
            if key == "const_log10visc":
                value = math.log10(value)
            check_range(f"phase_mixed.{key}", SCHEMA["phase_mixed"][key], value)
            setattr(pm, key, value)

    # ------------------------------------------------------------------ conversion
    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The parameters as a TOML-shaped dict: ``{section: {key: value}}``.

        Sections in file order, radionuclides as ``radionuclide_NAME`` sections; unset
        (``None``) keys are left out. ``Config.from_dict(p.to_dict()) == p``.
        """
        out: dict[str, dict[str, Any]] = {}
        for section in SECTION_ORDER:
            if section == RADIONUCLIDE_PREFIX + "*":
                for nuclide in self.radionuclides:
                    out[f"{RADIONUCLIDE_PREFIX}{nuclide.name}"] = _section_dict(nuclide)
            else:
                out[section] = _section_dict(getattr(self, section))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], base_dir: str | Path | None = None,
                  overrides: Overrides = None, config_path: Path | None = None) -> Config:
        """Build and validate parameters from a config-shaped dict (as a config file reads).

        Args:
            d: ``{section: {key: value}}`` (not modified); legacy keys are handled as in a
                file (:mod:`._normalise`).
            base_dir: folder for relative paths in ``d`` (default: the working directory).
            overrides: ``{"mesh.number_of_nodes": 80}`` or ``"section.key=value"`` strings.
            config_path: recorded in the result.

        Raises:
            ConfigError: as :func:`aragog.config.load_config`.
        """
        base = Path(base_dir).expanduser().absolute() if base_dir is not None else Path.cwd()
        if not isinstance(d, Mapping):
            raise ConfigError(f"a config must be a table of sections, got {type(d).__name__}")
        data = normalise(d)
        resolve_paths(data, base)
        apply_overrides(data, overrides)
        check_required(data)
        sections = {name: sec_cls(**data.get(name, {})) for name, sec_cls in SECTION_CLASSES.items()}
        nuclides = []
        for section, values in data.items():
            if section.startswith(RADIONUCLIDE_PREFIX):
                nuclide = RadionuclideParams(**values)
                validate_section(section, nuclide)  # messages name the section as written
                if nuclide.name != section[len(RADIONUCLIDE_PREFIX):]:
                    logger.warning("`[%s]` has name = '%s'; the radionuclide is known (and written) as "
                                   "[%s%s]", section, nuclide.name, RADIONUCLIDE_PREFIX, nuclide.name)
                nuclides.append(nuclide)
        params = cls(**sections, radionuclides=nuclides, config_path=config_path)
        params.validate()
        _warn_inert(data, params, overrides)
        if params.energy.radionuclides and not params.radionuclides:
            logger.warning("`energy.radionuclides` = true but there is no [radionuclide_NAME] section: "
                           "no radiogenic heating")
        return params


def _warn_inert(data: Mapping[str, Mapping[str, Any]], params: Config, overrides: Overrides) -> None:
    """One warning for each key set in ``data`` (the file and the overrides, before the
    defaults) that cannot act under the other settings of ``params`` (the schema's
    :data:`USED_ONLY_WITH`), naming the setting that makes it inert. A key a file gives
    whatever the settings (required, or :data:`ALWAYS_GIVEN`) is reported only when an
    override sets it, and a key at its default value never (a resolved config, ``aragog
    show-config``, writes every key)."""
    if overrides is None:
        overridden: set = set()
    else:
        overridden = set(overrides) if isinstance(overrides, Mapping) else set(parse_overrides(overrides))
    for name, (other, values) in USED_ONLY_WITH.items():
        section, key = name.split(".")
        if key not in data.get(section, {}):
            continue
        if (SCHEMA[section][key].default is REQUIRED or name in ALWAYS_GIVEN) and name not in overridden:
            continue
        if _is_default(getattr(params, section), key):
            continue  # (a resolved config writes every key: one at its default changes nothing)
        other_section, other_key = other.split(".")
        value = getattr(getattr(params, other_section), other_key)
        if value not in values:
            wanted = " or ".join(fmt(v) for v in values)
            logger.warning("`%s` has no effect: it is used only with %s = %s (here %s)", name, other, wanted,
                           fmt(value))


def _is_default(section_params: Any, key: str) -> bool:
    """Whether ``section_params.key`` holds its field's default value."""
    field_ = next(f for f in dataclasses.fields(section_params) if f.name == key)
    if field_.default is not dataclasses.MISSING:
        default = field_.default
    elif field_.default_factory is not dataclasses.MISSING:
        default = field_.default_factory()
    else:
        return False
    value = getattr(section_params, key)
    try:
        return bool(value == default)
    except ValueError:  # arrays
        import numpy as np

        return bool(np.array_equal(np.asarray(value), np.asarray(default)))


#: Largest x with a finite exp(x) in float64.
_LOG_MAX = math.log(sys.float_info.max)


def _check_decay_factors(nuclides: list[RadionuclideParams], start_time: float) -> None:
    """Reject a radionuclide whose heating is not finite at ``start_time`` [yr].

    The heating is h a c 1e-6 exp(ln2 (t0_years - t)/half_life_years), largest at the
    start. A zero amplitude h a c contributes exactly 0 (the physics masks its factor, so
    an extinct isotope may carry any t0_years); a non-zero one needs a finite factor.
    """
    for nuclide in nuclides:
        amplitude = nuclide.heat_production * nuclide.abundance * nuclide.concentration
        if amplitude == 0.0:
            continue
        x = math.log(2.0) * (nuclide.t0_years - start_time) / nuclide.half_life_years
        if x > _LOG_MAX or math.log(amplitude) + math.log(PPM) + x > _LOG_MAX:
            section = f"{RADIONUCLIDE_PREFIX}{nuclide.name}"
            raise ConfigError(
                f"`[{section}]`: the heating is not finite at solver.start_time = {fmt(float(start_time))} yr: "
                f"the decay factor exp(ln2 (t0_years - start_time)/half_life_years) = exp({x:.4g}) overflows float64 "
                f"(`{section}.t0_years` = {fmt(nuclide.t0_years)}, `{section}.half_life_years` = "
                f"{fmt(nuclide.half_life_years)}) and the amplitude heat_production x abundance x "
                f"concentration is not 0; set `{section}.abundance` or `{section}.concentration` to 0, "
                f"or give t0_years closer to the start time")


def _section_dict(obj: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        out[f.name] = list(value) if isinstance(value, (list, tuple)) else value
    return out
