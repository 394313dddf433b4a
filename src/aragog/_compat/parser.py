"""The upstream aragog's parameter classes (``aragog.parser``), over :mod:`aragog.config`.

Code written for the upstream aragog (PyPI ``fwl-aragog``) — PROTEUS's coupling wrapper
above all — builds its parameters from these dataclasses and passes them to
``EntropySolver(parameters, entropy_eos)``::

    from aragog.parser import Parameters, _SolverParameters, _MeshParameters, ...
    params = Parameters(boundary_conditions=..., energy=..., initial_condition=..., mesh=...,
                        phase_solid=..., phase_liquid=..., phase_mixed=..., radionuclides=[...],
                        solver=...)

The classes keep the upstream's field names, defaults and checks, and the upstream's
in-place normalisation (radionuclide concentrations given in ppm become mass fractions;
an unused inner boundary value becomes 0). They hold values only:
:meth:`Parameters.to_config` turns them into this package's own
:class:`aragog.config.Config`, which the solver runs. Every difference in meaning is
listed in ``docs/compat.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aragog import config as _config
from aragog.errors import ConfigError
from aragog.units import PPM  # concentrations are given in ppm; Parameters stores mass fractions (upstream)

__all__ = [
    "Parameters",
    "_BoundaryConditionsParameters",
    "_EnergyParameters",
    "_InitialConditionParameters",
    "_MeshParameters",
    "_PhaseMixedParameters",
    "_PhaseParameters",
    "_Radionuclide",
    "_SolverParameters",
]

logger = logging.getLogger("aragog.parser")

_CORE_BC = ("energy_balance", "quasi_steady", "gradient", "bower2018")

_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def _path_text(value: Any) -> Any:
    """A ``pathlib.Path`` as text (the upstream accepts both); other values unchanged."""
    return str(value) if isinstance(value, Path) else value


@dataclass
class _BoundaryConditionsParameters:
    """``[boundary_conditions]`` (upstream field names and defaults).

    ``outer_boundary_condition``: 1 grey body, 4 prescribed flux [W/m²], 5 prescribed
    temperature [K]; ``inner_boundary_condition``: 1 core cooling (mode ``core_bc``),
    2 prescribed flux [W/m²], 3 prescribed temperature [K].
    """

    outer_boundary_condition: int
    outer_boundary_value: float
    inner_boundary_condition: int
    inner_boundary_value: float
    emissivity: float
    equilibrium_temperature: float
    core_heat_capacity: float
    tfac_core_avg: float = 1.147
    param_utbl: bool = False
    param_utbl_const: float = 1.0e-7
    core_bc: str = "energy_balance"
    core_module_params: dict | None = None
    top_node: str = "linear"

    def normalize(self) -> None:
        """The upstream's normalisation (idempotent): ``param_utbl_const`` = 0 without the
        UTBL, ``inner_boundary_value`` = 0 for core cooling; unknown codes are refused."""
        if not self.param_utbl:
            self.param_utbl_const = 0.0
        if self.inner_boundary_condition == 1:
            self.inner_boundary_value = 0.0
        elif self.inner_boundary_condition not in (2, 3):
            raise ConfigError(f"boundary_conditions.inner_boundary_condition = {self.inner_boundary_condition!r} "
                              "is unknown (1 core cooling, 2 prescribed flux, 3 prescribed temperature)")
        if self.outer_boundary_condition == 2:
            raise ConfigError("boundary_conditions.outer_boundary_condition = 2 (Zahnle steam atmosphere) is not "
                              "implemented (neither upstream); use 1 grey body, 4 prescribed flux or 5 temperature")
        if self.outer_boundary_condition not in (1, 4, 5):
            raise ConfigError(f"boundary_conditions.outer_boundary_condition = {self.outer_boundary_condition!r} "
                              "is unknown (1 grey body, 4 prescribed flux, 5 prescribed temperature)")
        if self.core_bc == "core_module":
            raise ConfigError("boundary_conditions.core_bc = 'core_module' (the upstream's stratified core "
                              f"evolution) is not available here; use one of {_CORE_BC}")
        if self.core_bc not in _CORE_BC:
            raise ConfigError(f"boundary_conditions.core_bc = {self.core_bc!r} is unknown; use one of {_CORE_BC}")
        if self.top_node not in ("linear", "limited"):
            raise ConfigError(f"boundary_conditions.top_node = {self.top_node!r} is unknown ('linear' or 'limited')")


@dataclass
class _EnergyParameters:
    """``[energy]`` (upstream field names and defaults). ``solver_method`` chooses the
    integrator; ``phi_step_cap``, ``temperature_step_cap`` [K] and ``entropy_step_cap``
    [J/kg/K] end a solve early (None or ≤ 0: off)."""

    conduction: bool
    convection: bool
    gravitational_separation: bool
    mixing: bool
    radionuclides: bool
    tidal: bool
    eddy_diffusivity_chemical: float = 1.0
    eddy_diffusivity_thermal: float = 1.0
    kappah_floor: float = 10.0
    convective_threshold: float = 0.0
    bottom_up_grav_sep: bool = True
    phase_smoothing: str = "tanh"
    solver_method: str = "cvode"
    use_jax_jacobian: bool = True
    phi_step_cap: float | None = None
    temperature_step_cap: float | None = None
    entropy_step_cap: float | None = None
    eos_floor_margin: float | None = 0.0
    phase_boundary_entropy_margin: float = 200.0
    phase_boundary_cap: str | None = None
    tidal_array: Any = field(default_factory=lambda: np.array([0.0]))

    def __post_init__(self):
        if self.solver_method not in ("cvode", "bdf", "radau"):
            raise ConfigError(f"energy.solver_method = {self.solver_method!r} is unknown ('cvode', 'bdf' or 'radau')")
        if self.phase_smoothing not in ("tanh", "cubic_hermite"):
            raise ConfigError(f"energy.phase_smoothing = {self.phase_smoothing!r} is unknown "
                              "('tanh' or 'cubic_hermite')")
        if self.phase_boundary_cap not in (None, "fixed", "rate"):
            raise ConfigError(f"energy.phase_boundary_cap = {self.phase_boundary_cap!r} is unknown "
                              "(None, 'fixed' or 'rate')")


@dataclass
class _InitialConditionParameters:
    """``[initial_condition]`` (upstream defaults). Through this API the solver does not set
    its state from these values: call ``set_initial_entropy`` (see ``docs/compat.md``)."""

    initial_condition: int = 1
    surface_temperature: float = 4000.0
    basal_temperature: float = 4000.0
    init_file: str = ""


@dataclass
class _MeshParameters:
    """``[mesh]`` (upstream field names and defaults; SI units)."""

    outer_radius: float
    inner_radius: float
    number_of_nodes: int
    mixing_length_profile: str
    core_density: float
    eos_method: int = 1
    surface_density: float = 4078.95095544
    gravitational_acceleration: float = 9.81
    adiabatic_bulk_modulus: float = 260e9
    adams_williamson_beta: float = 0.0
    surface_pressure: float = 0.0
    mass_coordinates: bool = True
    eos_file: str = ""
    mixing_length_constant_fraction: float = 0.25


@dataclass
class _PhaseMixedParameters:
    """``[phase_mixed]`` (upstream field names and defaults, incl. the constant-property
    mode's explicit ``const_*`` defaults)."""

    latent_heat_of_fusion: float
    rheological_transition_melt_fraction: float
    rheological_transition_width: float
    solidus: str
    liquidus: str
    phase: str
    phase_transition_width: float
    grain_size: float
    matprop_smooth_width: float = 0.0
    separation_viscosity: str = "melt"
    separation_buoyancy: str = "mixture"
    cp_blend: str = "latent"
    const_properties: bool = False
    const_rho: float = 4000.0
    const_Cp: float = 1000.0
    const_alpha: float = 1e-5
    const_cond: float = 4.0
    const_log10visc: float = 2.0
    const_T_ref: float = 3500.0
    const_S_ref: float = 3000.0


@dataclass
class _PhaseParameters:
    """``[phase_liquid]`` / ``[phase_solid]``. A property given as a file name (text or
    ``pathlib.Path``) names an upstream P-T lookup table; here the P-S tables of the
    ``EntropyEOS`` supply ρ, c_p and α, so such names are accepted and not read."""

    density: float | str
    heat_capacity: float | str
    melt_fraction: float
    thermal_conductivity: float | str
    thermal_expansivity: float | str
    viscosity: float | str
    entropy: float | str = ""


@dataclass
class _Radionuclide:
    """One radionuclide. ``concentration`` is given in ppm of the element; after
    :class:`Parameters` is built it holds the mass fraction (as upstream)."""

    name: str
    t0_years: float
    abundance: float
    concentration: float
    heat_production: float
    half_life_years: float

    def get_heating(self, time):
        """Heat production [W/kg of mantle] at ``time`` [yr] (float or array); a zero
        amplitude gives exactly 0, also where the decay factor would overflow."""
        amplitude = self.heat_production * self.abundance * self.concentration
        arg = np.log(2.0) * (self.t0_years - np.asarray(time, dtype=float)) / self.half_life_years
        value = amplitude * np.exp(np.where(amplitude != 0.0, arg, 0.0))
        return float(value) if np.ndim(value) == 0 else value


@dataclass
class _SolverParameters:
    """``[solver]`` (upstream defaults). ``atol`` is in J/kg/K (floored at 1e-8 as
    upstream)."""

    start_time: float
    end_time: float
    atol: float = 1e-8
    rtol: float = 1e-8
    tsurf_poststep_change: float = 30.0
    cvode_output_points: int = 65
    max_steps: int = 100000
    tcore_change_limit: float | None = None


@dataclass(kw_only=True)
class Parameters:
    """All parameters, as the upstream assembles them (SI units, times in years).

    Building it normalises in place as upstream does: boundary codes are checked,
    radionuclide concentrations [ppm] become mass fractions. :meth:`to_config` gives
    this package's own parameters.
    """

    boundary_conditions: _BoundaryConditionsParameters
    energy: _EnergyParameters
    initial_condition: _InitialConditionParameters
    mesh: _MeshParameters
    phase_solid: _PhaseParameters
    phase_liquid: _PhaseParameters
    phase_mixed: _PhaseMixedParameters
    radionuclides: list = field(default_factory=list)
    solver: _SolverParameters

    def __post_init__(self):
        self.boundary_conditions.normalize()
        if self.initial_condition.initial_condition == 2 and not self.initial_condition.init_file:
            raise ConfigError("initial_condition.initial_condition = 2 needs an init_file")
        if self.mesh.eos_method == 2 and not self.mesh.eos_file:
            raise ConfigError("mesh.eos_method = 2 needs an eos_file (the structure file)")
        for r in self.radionuclides:
            _check_radionuclide(r, float(self.solver.start_time), self.energy.radionuclides)
        for r in self.radionuclides:
            r.concentration = r.concentration * PPM

    @staticmethod
    def aragog_solver_class():
        """The solver class that serves these parameters: ``EntropySolver(parameters, eos)``
        answers with it (:class:`aragog._compat.solver.UpstreamEntropySolver`, loaded here
        on first use so that reading parameters does not start JAX)."""
        from aragog._compat.solver import UpstreamEntropySolver

        return UpstreamEntropySolver

    @classmethod
    def from_file(cls, *filenames) -> Parameters:
        """Read a config file (TOML, or INI ``.cfg``/``.ini`` by extension; several INI
        files are merged in order, later ones winning)."""
        if not filenames:
            raise ConfigError("Parameters.from_file needs at least one config file name")
        sections: dict[str, dict] = {}
        for name in filenames:
            for section, values in _config.read_config_file(name).items():
                sections.setdefault(section, {}).update(values if isinstance(values, dict) else {})
        base = Path(filenames[0]).expanduser().resolve().parent
        return cls.from_dict(sections, base_dir=base, source=str(filenames[0]))

    @classmethod
    def from_dict(cls, sections: dict, base_dir=None, source: str = "config") -> Parameters:
        """Build from ``{section: {key: value}}`` with the upstream's classes (unknown keys
        are refused naming the section; relative ``eos_file``/``init_file`` resolved against
        ``base_dir``)."""
        built: dict[str, Any] = {}
        for section, klass in _SECTIONS.items():
            if section not in sections:
                raise ConfigError(f"{source}: missing section [{section}]")
            values = dict(sections[section])
            for path_key in ("eos_file", "init_file"):
                if values.get(path_key) and base_dir is not None and not Path(values[path_key]).is_absolute():
                    values[path_key] = str((Path(base_dir) / values[path_key]).resolve())
            built[section] = _make(klass, values, f"{source} [{section}]")
        built["radionuclides"] = [_make(_Radionuclide, dict(v), f"{source} [{s}]")
                                  for s, v in sections.items() if s.startswith("radionuclide_")]
        return cls(**built)

    # ------------------------------------------------------------------ conversion
    def to_config(self, eos_dir: str | Path | None = None, atol_scale: float = 1.0,
                  max_steps: int | None = None) -> _config.Config:
        """This package's validated :class:`aragog.config.Config` for these values.

        Args:
            eos_dir: directory of the P-S tables (an ``EntropyEOS``'s); ``None``: the
                bundled table model (or constant properties, if set).
            atol_scale: factor on the absolute tolerance (the upstream retry ladder's
                ``_atol_sf``).
            max_steps: the step budget instead of ``solver.max_steps`` (the upstream
                solver's ``_max_steps``, which PROTEUS raises in its retry ladder).
        """
        bc, en, mesh, pm, sp = self.boundary_conditions, self.energy, self.mesh, self.phase_mixed, self.solver
        self.boundary_conditions.normalize()
        _warn_unimplemented(self)
        native = _config.Config(
            solver=_config.SolverParams(
                start_time=float(sp.start_time), end_time=float(sp.end_time),
                atol=max(float(sp.atol), 1e-8) * float(atol_scale), rtol=float(sp.rtol),
                tsurf_poststep_change=float(sp.tsurf_poststep_change),
                max_steps=int(sp.max_steps if max_steps is None else max_steps),
                output_points=int(sp.cvode_output_points), method=en.solver_method),
            boundary_conditions=_config.BoundaryConditionsParams(
                outer_boundary_condition=int(bc.outer_boundary_condition),
                outer_boundary_value=float(bc.outer_boundary_value),
                inner_boundary_condition=int(bc.inner_boundary_condition),
                inner_boundary_value=float(bc.inner_boundary_value), emissivity=float(bc.emissivity),
                equilibrium_temperature=float(bc.equilibrium_temperature),
                core_heat_capacity=float(bc.core_heat_capacity), tfac_core_avg=float(bc.tfac_core_avg),
                core_bc=bc.core_bc, param_utbl=bool(bc.param_utbl),
                param_utbl_const=float(bc.param_utbl_const) if bc.param_utbl else 1.0e-7),
            mesh=_config.MeshParams(
                outer_radius=float(mesh.outer_radius), inner_radius=float(mesh.inner_radius),
                number_of_nodes=int(mesh.number_of_nodes), mixing_length_profile=mesh.mixing_length_profile,
                mixing_length_constant_fraction=float(mesh.mixing_length_constant_fraction),
                core_density=float(mesh.core_density), mass_coordinates=bool(mesh.mass_coordinates),
                eos_method=int(mesh.eos_method), eos_file=_path_text(mesh.eos_file) or "",
                surface_density=float(mesh.surface_density),
                gravitational_acceleration=float(mesh.gravitational_acceleration),
                adiabatic_bulk_modulus=float(mesh.adiabatic_bulk_modulus),
                adams_williamson_beta=float(mesh.adams_williamson_beta),
                surface_pressure=float(mesh.surface_pressure)),
            energy=_config.EnergyParams(
                conduction=bool(en.conduction), convection=bool(en.convection),
                gravitational_separation=bool(en.gravitational_separation), mixing=bool(en.mixing),
                radionuclides=bool(en.radionuclides), tidal=bool(en.tidal),
                tidal_array=[float(x) for x in np.atleast_1d(np.asarray(en.tidal_array, dtype=float))],
                kappah_floor=float(en.kappah_floor),
                eddy_diffusivity_thermal=float(en.eddy_diffusivity_thermal),
                eddy_diffusivity_chemical=float(en.eddy_diffusivity_chemical),
                phi_step_cap=_cap(en.phi_step_cap), **_step_caps(en)),
            # The state is set by set_initial_entropy through this API (docs/compat.md).
            initial_condition=_config.InitialConditionParams(
                initial_condition=1, surface_temperature=float(self.initial_condition.surface_temperature),
                basal_temperature=float(self.initial_condition.basal_temperature), init_file=""),
            phase_liquid=_phase(self.phase_liquid, "phase_liquid"),
            phase_solid=_phase(self.phase_solid, "phase_solid"),
            phase_mixed=_config.PhaseMixedParams(
                latent_heat_of_fusion=float(pm.latent_heat_of_fusion),
                rheological_transition_melt_fraction=float(pm.rheological_transition_melt_fraction),
                rheological_transition_width=float(pm.rheological_transition_width),
                solidus=str(_path_text(pm.solidus)), liquidus=str(_path_text(pm.liquidus)), phase=pm.phase,
                phase_transition_width=float(pm.phase_transition_width), grain_size=float(pm.grain_size),
                separation_buoyancy=pm.separation_buoyancy, separation_viscosity=pm.separation_viscosity,
                matprop_smooth_width=float(pm.matprop_smooth_width) if pm.matprop_smooth_width > 0 else 0.01,
                const_properties=bool(pm.const_properties),
                **({k: float(getattr(pm, k)) for k in _CONST_KEYS} if pm.const_properties else {})),
            radionuclides=[_config.RadionuclideParams(
                name=str(r.name), t0_years=float(r.t0_years), abundance=float(r.abundance),
                concentration=float(r.concentration) / PPM, heat_production=float(r.heat_production),
                half_life_years=float(r.half_life_years)) for r in self.radionuclides],
            eos=_config.EOSParams(dir="" if eos_dir is None or pm.const_properties else str(eos_dir)),
        )
        return native.validate()


_SECTIONS = {
    "solver": _SolverParameters,
    "boundary_conditions": _BoundaryConditionsParameters,
    "mesh": _MeshParameters,
    "energy": _EnergyParameters,
    "initial_condition": _InitialConditionParameters,
    "phase_liquid": _PhaseParameters,
    "phase_solid": _PhaseParameters,
    "phase_mixed": _PhaseMixedParameters,
}
_CONST_KEYS = ("const_rho", "const_Cp", "const_alpha", "const_cond", "const_log10visc", "const_T_ref", "const_S_ref")
#: Nominal ρ, c_p, α for a phase given by table names: unused, the P-S tables supply them.
_TABLE_PLACEHOLDER = {"density": 4000.0, "heat_capacity": 1000.0, "thermal_expansivity": 1.0e-5}


def _make(klass, values: dict, where: str):
    names = {f.name for f in dataclasses.fields(klass)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(names))})")
    try:
        return klass(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_radionuclide(r: _Radionuclide, t_start: float, active: bool) -> None:
    """The upstream's checks on a radionuclide given in ppm, plus overflow of the decay
    factor for a non-zero amplitude (ConfigError naming the nuclide)."""
    if not active:
        return
    if not r.half_life_years > 0.0:
        raise ConfigError(f"radionuclide {r.name}: half_life_years must be > 0, got {r.half_life_years}")
    if min(r.heat_production, r.abundance, r.concentration) < 0.0:
        raise ConfigError(f"radionuclide {r.name}: heat_production, abundance and concentration must be >= 0")
    amplitude = r.heat_production * r.abundance * r.concentration * PPM
    exponent = math.log(2.0) * (r.t0_years - t_start) / r.half_life_years
    if amplitude != 0.0 and exponent + math.log(amplitude) > 709.0:
        raise ConfigError(f"radionuclide {r.name}: heating overflows at the start time {t_start} yr "
                          f"(t0_years = {r.t0_years}, half_life_years = {r.half_life_years}); "
                          "set its abundance or concentration to 0 or check t0_years")


def _cap(value) -> float:
    return 0.0 if value is None or not float(value) > 0.0 else float(value)


def _step_caps(en: _EnergyParameters) -> dict:
    """The per-cell temperature and entropy caps, where this package's schema has them."""
    fields = {f.name for f in dataclasses.fields(_config.EnergyParams)}
    out = {}
    for name in ("temperature_step_cap", "entropy_step_cap"):
        value = _cap(getattr(en, name))
        if name in fields:
            out[name] = value
        elif value > 0.0:
            raise ConfigError(f"energy.{name} is not available in this version")
    return out


def _phase(p: _PhaseParameters, label: str) -> _config.SinglePhaseParams:
    values = {}
    for name in ("density", "heat_capacity", "thermal_expansivity", "thermal_conductivity", "viscosity"):
        value = _path_text(getattr(p, name))
        if isinstance(value, str):
            if name not in _TABLE_PLACEHOLDER:
                raise ConfigError(f"{label}.{name} must be a number here (got the file name {value!r}); "
                                  "only density, heat_capacity and thermal_expansivity come from the tables")
            value = _TABLE_PLACEHOLDER[name]
        values[name] = float(value)
    return _config.SinglePhaseParams(melt_fraction=float(p.melt_fraction), **values)


#: Upstream settings without an effect here, with their upstream defaults.
_NO_EFFECT = {
    ("energy", "convective_threshold"): 0.0,
    ("energy", "bottom_up_grav_sep"): True,
    ("energy", "phase_smoothing"): "tanh",
    ("energy", "eos_floor_margin"): 0.0,
    ("energy", "phase_boundary_entropy_margin"): 200.0,
    ("energy", "phase_boundary_cap"): None,
    ("boundary_conditions", "top_node"): "linear",
    ("phase_mixed", "cp_blend"): "latent",
    ("solver", "tcore_change_limit"): None,
}


def _warn_unimplemented(params: Parameters) -> None:
    """One warning per process for each upstream setting that differs from the upstream
    default and has no effect here (the list and the reasons: docs/compat.md)."""
    for (section, key), default in _NO_EFFECT.items():
        value = getattr(getattr(params, section), key)
        if value != default:
            _warn_once(f"{section}.{key}", f"{section}.{key} = {value!r} has no effect in this version "
                       "(see docs/compat.md)")
