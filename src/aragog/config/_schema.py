"""The configuration schema: every section and key aragog reads, in docs/config.md order.

Each key is a :class:`Key`: its type, default (or :data:`REQUIRED`), allowed values or
range, unit and a one-line meaning. The section dataclasses in :mod:`._params` take their
defaults from here, the checks (:mod:`._normalise`) their rules, the TOML writer its order
and ``docs/config.md`` its tables — one source of truth.

Units: SI throughout; times in years (Julian, 31 557 600 s).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aragog.integrator_names import CONFIG_METHODS

__all__ = [
    "REQUIRED",
    "Key",
    "SCHEMA",
    "SECTION_ORDER",
    "RADIONUCLIDE_PREFIX",
    "RADIONUCLIDE_KEYS",
    "LEGACY_MAPPED",
    "LEGACY_IGNORED",
    "LEGACY_SECTIONS",
    "PATH_KEYS",
    "CONST_KEYS",
    "USED_ONLY_WITH",
    "ALWAYS_GIVEN",
    "keys_of",
]


class _Required:
    """Sentinel: the key has no default and must be given."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

# Key kinds: "float", "int", "bool", "str", "path" (a string resolved against the config
# file's folder when relative), "floatlist" (a non-empty list of floats).
KINDS = ("float", "int", "bool", "str", "path", "floatlist")


@dataclasses.dataclass(frozen=True)
class Key:
    """One configuration key.

    Attributes:
        kind: one of ``float, int, bool, str, path, floatlist``.
        default: the default value, :data:`REQUIRED`, or ``None`` (optional, no default).
        unit: SI unit (``"-"`` dimensionless, ``""`` not a quantity).
        doc: one-line meaning.
        choices: allowed values (for codes and names), or ``None``.
        labels: a short meaning of each choice (same order), or ``None``.
        lo, hi: inclusive bounds, or ``None``.
        lo_open, hi_open: make the bound exclusive (``> lo`` / ``< hi``).
        nonempty: for strings, the empty (or blank) string is not allowed.
    """

    kind: str
    default: Any
    unit: str
    doc: str
    choices: tuple | None = None
    labels: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nonempty: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def choices_text(self) -> str:
        """The allowed values in words, e.g. ``1 (grey body), 4 (prescribed flux)``."""
        items = [f'"{c}"' if isinstance(c, str) else str(c) for c in self.choices or ()]
        if self.labels:
            items = [f"{item} ({label})" for item, label in zip(items, self.labels)]
        return ", ".join(items)

    def range_text(self) -> str:
        """The allowed range in words, e.g. ``"> 0"``, ``"in [0, 1]"``; empty if none."""
        if self.lo is not None and self.hi is not None:
            left = "(" if self.lo_open else "["
            right = ")" if self.hi_open else "]"
            return f"in {left}{_num(self.lo)}, {_num(self.hi)}{right}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {_num(self.lo)}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {_num(self.hi)}"
        return ""


def _num(x: float) -> str:
    return f"{x:g}"


def _pos(unit: str, doc: str, default: Any = REQUIRED) -> Key:
    """A float that must be > 0."""
    return Key("float", default, unit, doc, lo=0.0, lo_open=True)


def _nonneg(unit: str, doc: str, default: Any = REQUIRED) -> Key:
    """A float that must be >= 0."""
    return Key("float", default, unit, doc, lo=0.0)


def _frac(doc: str, default: Any = REQUIRED) -> Key:
    """A float in [0, 1]."""
    return Key("float", default, "-", doc, lo=0.0, hi=1.0)


def _any(unit: str, doc: str, default: Any = REQUIRED) -> Key:
    """Any finite float."""
    return Key("float", default, unit, doc)


def _bool(doc: str, default: Any = REQUIRED) -> Key:
    return Key("bool", default, "", doc)


_SOLVER = {
    "start_time": _any("yr", "model time at the start of a solve"),
    "end_time": _any("yr", "model time at the end of a solve (>= start_time)"),
    "atol": _pos("J/kg/K", "absolute integrator tolerance (state: specific entropy)", 1e-8),
    "rtol": Key("float", 1e-8, "-", "relative integrator tolerance", lo=0.0, hi=1.0,
                lo_open=True, hi_open=True),
    "tsurf_poststep_change": _any("K", "accepted for compatibility; unused in this version", 30.0),
    "max_steps": Key("int", 100000, "", "integrator step budget per solve", lo=1),
    "max_step_growth": Key("float", 2.0, "-", "cvode: the largest factor by which a step may exceed the one "
                           "before (CVodeSetEtaMax; CVODE's own default is 10). 2 keeps CVODE from cycling "
                           "between long steps whose Newton iteration fails at a melt front and cuts "
                           "(docs/solver.md, \"Step growth at a melt front\")", lo=1.0, lo_open=True),
    "warm_start": _bool("cvode: a solve that continues the previous one (its start time and state) "
                        "keeps CVODE's step size, order and Jacobian when the right-hand side at the "
                        "start changed by less than the tolerance (docs/solver.md, \"Warm start\")", True),
    "wall_time_limit": Key("float", 0.0, "s", "wall-clock limit of one solve: past it the solve stops with "
                           "status < 0 and a message saying so, keeping the state it reached (0: no limit)",
                           lo=0.0),
    "output_points": Key("int", 65, "", "times stored per solve", lo=1),
    "output_spacing": Key("str", "linear", "", "spacing of the stored times: linear, or log (even in "
                          "log(t - start_time) from min(1 yr, window/1000) to the end, for evolutions that "
                          "span decades)", choices=("linear", "log")),
    "method": Key("str", "cvode", "", "time integrator", choices=CONFIG_METHODS),
    "jacobian": Key("str", "jax", "", "Jacobian: analytic (JAX) or finite differences",
                    choices=("jax", "fd")),
    "jax_cache_dir": Key("str", "", "", "persistent compilation cache directory (empty: $ARAGOG_JAX_CACHE_DIR, "
                         "the user's own JAX cache, else the user cache directory; \"none\": off)"),
    "jax_cache_max_mb": Key("int", 1024, "MB", "size cap of the persistent compilation cache (least recently "
                            "used entries evicted first; 0: no cap)", lo=0),
    "compile_mode": Key("str", "fused", "", "\"fused\": RHS and Jacobian each one XLA program; \"blocks\": structure, thermal and diagnostics submodels compiled as separate shared blocks (docs/solver.md)",
                        choices=("fused", "blocks")),
    "newton": Key("str", "callbacks", "", "cvode: how each step's corrector equation is solved: \"compiled\" "
                  "in one call of a compiled program per step attempt (docs/solver.md, \"One compiled call "
                  "per step\"; needs compile_mode \"fused\" and the JAX Jacobian); \"callbacks\" by SUNDIALS' "
                  "Newton solver calling the right-hand-side and Jacobian programs; \"auto\": compiled where "
                  "it can run, else callbacks (decided by the config and the CVODE library, the same for "
                  "every solve)", choices=("auto", "compiled", "callbacks")),
}

_BOUNDARY = {
    "outer_boundary_condition": Key(
        "int", REQUIRED, "", "surface: 1 grey body, 4 prescribed flux, 5 prescribed temperature",
        choices=(1, 4, 5), labels=("grey body", "prescribed flux", "prescribed temperature")),
    "outer_boundary_value": _any("W/m² or K", "surface flux (code 4, W/m²) or temperature (code 5, K)"),
    "inner_boundary_condition": Key(
        "int", REQUIRED, "", "core-mantle boundary: 1 core cooling (mode from core_bc), 2 prescribed flux, "
        "3 prescribed temperature",
        choices=(1, 2, 3), labels=("core cooling", "prescribed flux", "prescribed temperature")),
    "inner_boundary_value": _any("W/m² or K", "CMB heat flux for code 2 (W/m², positive outward) or "
                                 "temperature for code 3 (K, > 0)"),
    "emissivity": _frac("grey-body emissivity of the surface"),
    "equilibrium_temperature": _nonneg("K", "radiative equilibrium temperature of the grey body"),
    "core_heat_capacity": _pos("J/kg/K", "specific heat capacity of the core"),
    "tfac_core_avg": _pos("-", "mean core temperature / CMB temperature", 1.147),
    "core_bc": Key("str", "energy_balance", "", "core cooling mode for inner_boundary_condition = 1",
                   choices=("energy_balance", "quasi_steady", "gradient", "bower2018")),
    "param_utbl": _bool("ultra-thin thermal boundary layer at the surface", False),
    "param_utbl_const": _nonneg("K⁻²", "ultra-thin boundary layer constant (ΔT = c·T³)", 1e-7),
}

_MESH = {
    "outer_radius": _pos("m", "planet (mantle surface) radius"),
    "inner_radius": _pos("m", "core radius (< outer_radius)"),
    "number_of_nodes": Key("int", REQUIRED, "", "basic nodes (cells = nodes - 1)", lo=3),
    "mixing_length_profile": Key("str", REQUIRED, "", "mixing length: distance to the nearest "
                                 "boundary, or a constant fraction of the mantle depth",
                                 choices=("nearest_boundary", "constant")),
    "mixing_length_constant_fraction": Key("float", 0.25, "-", "mixing length / mantle depth for "
                                           "\"constant\"", lo=0.0, hi=1.0, lo_open=True),
    "core_density": _pos("kg/m³", "mean core density"),
    "mass_coordinates": _bool("mesh uniform in mass coordinate (else in radius)", True),
    "eos_method": Key("int", 1, "", "static structure: 1 Adams-Williamson, 2 structure file",
                      choices=(1, 2), labels=("Adams-Williamson", "structure file")),
    "eos_file": Key("path", "", "", "structure file (columns r, P, ρ, g) for eos_method = 2"),
    "surface_density": _pos("kg/m³", "Adams-Williamson surface density ρ_s", 4078.95095544),
    "gravitational_acceleration": _pos("m/s²", "gravity g (constant in Adams-Williamson)", 9.81),
    "adiabatic_bulk_modulus": _pos("Pa", "adiabatic bulk modulus K_S", 260e9),
    "adams_williamson_beta": _nonneg("1/m", "β; > 0 overrides ρ_s g / K_S", 0.0),
    "surface_pressure": _nonneg("Pa", "pressure at the surface P_s", 0.0),
}

_ENERGY = {
    "conduction": _bool("conductive heat flux"),
    "convection": _bool("convective heat flux (mixing-length theory)"),
    "gravitational_separation": _bool("melt-solid separation flux"),
    "mixing": _bool("convective mixing flux"),
    "radionuclides": _bool("radiogenic heating from the [radionuclide_*] sections"),
    "tidal": _bool("tidal heating from tidal_array"),
    "tidal_array": Key("floatlist", (0.0,), "W/kg", "tidal heating: one value (all cells) or one per cell"),
    "kappah_floor": _nonneg("m²/s", "minimum eddy diffusivity in the molten region", 10.0),
    "eddy_diffusivity_thermal": _any("- or m²/s", "thermal eddy diffusivity factor "
                                     "(<= 0: constant, minus this value in m²/s)", 1.0),
    "eddy_diffusivity_chemical": _any("- or m²/s", "chemical eddy diffusivity factor "
                                      "(<= 0: constant, minus this value in m²/s)", 1.0),
    "mixing_onset_width": _nonneg("-", "width w of the mixing onset: the chemical eddy diffusivity "
                                  "follows a drive Δ³/(Δ + w|c|)², c the phase-boundary entropy "
                                  "gradient (0: the plain mixing-length law)", 1.0e-3),
    "phi_step_cap": _frac("stop a solve when the global melt fraction changed by this much "
                          "(0: off)", 0.0),
    "temperature_step_cap": _nonneg("K", "stop a solve when the temperature of any cell changed "
                                    "by this much (0: off)", 0.0),
    "entropy_step_cap": _nonneg("J/kg/K", "stop a solve when the entropy of any cell changed by "
                                "this much (0: off)", 0.0),
}

_INITIAL = {
    "initial_condition": Key("int", 1, "", "1 isentrope through surface_temperature, 2 from "
                             "init_file, 3 adiabat", choices=(1, 2, 3),
                             labels=("isentrope", "entropy file", "adiabat")),
    "surface_temperature": _pos("K", "surface temperature of the initial state", 4000.0),
    "basal_temperature": _pos("K", "basal temperature of the initial state", 4000.0),
    "init_file": Key("path", "", "", "initial entropy, one value per cell (J/kg/K)"),
}

_PHASE = {
    "density": _pos("kg/m³", "density"),
    "viscosity": _pos("Pa s", "dynamic viscosity"),
    "heat_capacity": _pos("J/kg/K", "specific heat capacity"),
    "melt_fraction": _frac("melt fraction of this phase (1 liquid, 0 solid)"),
    "thermal_conductivity": _pos("W/m/K", "thermal conductivity"),
    "thermal_expansivity": _any("1/K", "thermal expansivity"),
}

_PHASE_MIXED = {
    "latent_heat_of_fusion": _nonneg("J/kg", "latent heat of fusion (accepted for compatibility; the EOS tables carry it: no effect)"),
    "rheological_transition_melt_fraction": _frac("melt fraction φ_rheo of the rheological transition"),
    "rheological_transition_width": Key("float", REQUIRED, "-", "width Δφ of the rheological "
                                        "transition", lo=0.0, hi=1.0, lo_open=True),
    "solidus": Key("str", REQUIRED, "", "accepted for compatibility (the tables carry the solidus)"),
    "liquidus": Key("str", REQUIRED, "", "accepted for compatibility (the tables carry the liquidus)"),
    "phase": Key("str", REQUIRED, "", "phase model (accepted for compatibility; the melt fraction comes from the EOS: no effect)", choices=("liquid", "solid", "mixed")),
    "phase_transition_width": _pos("-", "width of the phase transition (accepted for compatibility; see matprop_smooth_width: no effect)"),
    "grain_size": _pos("m", "grain size (permeability of the mush)"),
    "separation_buoyancy": Key("str", "solid", "", "buoyancy of melt-solid separation: against the "
                               "solid (Abe 1995, SPIDER) or the mixture (McKenzie 1984)",
                               choices=("solid", "mixture")),
    "separation_viscosity": Key("str", "melt", "", "drag viscosity of melt-solid separation: the melt's "
                                "(SPIDER) or the mush's own rheological blend, so that separation "
                                "locks up with the bulk rheology (the upstream's 'mixture', PROTEUS's "
                                "default)", choices=("melt", "mixture")),
    "matprop_smooth_width": Key("float", 0.01, "-", "blending width near the phase boundaries",
                                lo=0.0, hi=1.0, lo_open=True),
    "const_properties": _bool("constant-property mode (const_* keys; no tables)", False),
    "const_rho": Key("float", None, "kg/m³", "density in constant-property mode "
                     "(default: phase_liquid.density)", lo=0.0, lo_open=True),
    "const_Cp": Key("float", None, "J/kg/K", "heat capacity in constant-property mode "
                    "(default: phase_liquid.heat_capacity)", lo=0.0, lo_open=True),
    "const_alpha": Key("float", None, "1/K", "thermal expansivity in constant-property mode "
                       "(default: phase_liquid.thermal_expansivity)"),
    "const_cond": Key("float", None, "W/m/K", "thermal conductivity in constant-property mode "
                      "(default: phase_liquid.thermal_conductivity)", lo=0.0, lo_open=True),
    "const_log10visc": Key("float", None, "log10(Pa s)", "log10 viscosity in constant-property "
                           "mode (default: log10(phase_liquid.viscosity))", lo=-10.0, hi=40.0),
    "const_T_ref": Key("float", None, "K", "reference temperature T_ref at S_ref "
                       "(required in constant-property mode)", lo=0.0, lo_open=True),
    "const_S_ref": Key("float", None, "J/kg/K", "reference entropy S_ref "
                       "(required in constant-property mode)"),
}

RADIONUCLIDE_KEYS = {
    "name": Key("str", REQUIRED, "", "isotope name, e.g. \"K40\"", nonempty=True),
    "t0_years": _nonneg("yr", "age at which the abundance and concentration are given"),
    "abundance": _frac("isotopic abundance (fraction of the element)"),
    "concentration": _nonneg("ppm", "element concentration in the mantle (ppm by mass)"),
    "heat_production": _nonneg("W/kg", "heat production per kg of the isotope"),
    "half_life_years": _pos("yr", "half-life"),
}

_EOS = {
    "dir": Key("path", "", "", "directory of SPIDER-format tables (empty: the bundled model)"),
    "model": Key("str", "default", "", "bundled table model used when dir is empty: \"default\" (toy two-phase) or \"mgsio3\" (docs/eos_tables.md)", nonempty=True),
}

_OUTPUT = {
    "file": Key("str", "", "", "netCDF output path (the CLI --out wins)"),
    "snapshots": Key("int", 20, "", "profiles stored over the run", lo=1),
}

#: Fixed sections in file order; radionuclide sections go between phase_mixed and eos.
SCHEMA: dict[str, dict[str, Key]] = {
    "solver": _SOLVER,
    "boundary_conditions": _BOUNDARY,
    "mesh": _MESH,
    "energy": _ENERGY,
    "initial_condition": _INITIAL,
    "phase_liquid": _PHASE,
    "phase_solid": _PHASE,
    "phase_mixed": _PHASE_MIXED,
    "eos": _EOS,
    "output": _OUTPUT,
}

#: Keys that act only under some settings of another key: ``"section.key": ("section.other",
#: values)``, the key has an effect only when ``other`` is one of ``values``. A key set
#: explicitly (in the file or by an override) under another setting gets one warning
#: naming the setting that makes it inert (:func:`aragog.config._params.Config.from_dict`),
#: and docs/config.md lists these rules. One table, so that the rule stays one rule.
USED_ONLY_WITH: dict[str, tuple[str, tuple]] = {
    "energy.tidal_array": ("energy.tidal", (True,)),
    "boundary_conditions.outer_boundary_value": ("boundary_conditions.outer_boundary_condition", (4, 5)),
    "boundary_conditions.emissivity": ("boundary_conditions.outer_boundary_condition", (1,)),
    "boundary_conditions.equilibrium_temperature": ("boundary_conditions.outer_boundary_condition", (1,)),
    "boundary_conditions.param_utbl": ("boundary_conditions.outer_boundary_condition", (1,)),
    "boundary_conditions.param_utbl_const": ("boundary_conditions.param_utbl", (True,)),
    "boundary_conditions.inner_boundary_value": ("boundary_conditions.inner_boundary_condition", (2, 3)),
    "boundary_conditions.core_bc": ("boundary_conditions.inner_boundary_condition", (1,)),
    "initial_condition.surface_temperature": ("initial_condition.initial_condition", (1,)),
    "initial_condition.basal_temperature": ("initial_condition.initial_condition", (3,)),
    "initial_condition.init_file": ("initial_condition.initial_condition", (2,)),
    "mesh.mixing_length_constant_fraction": ("mesh.mixing_length_profile", ("constant",)),
    "mesh.eos_file": ("mesh.eos_method", (2,)),
    "solver.warm_start": ("solver.method", ("cvode",)),
    "solver.newton": ("solver.method", ("cvode",)),
    "solver.max_step_growth": ("solver.method", ("cvode",)),
}
#: Keys of :data:`USED_ONLY_WITH` that a config file gives whatever the settings: the
#: upstream aragog's format requires both initial temperatures. Like a required key, one of
#: them is reported as inert only when an override sets it.
ALWAYS_GIVEN = frozenset({"initial_condition.surface_temperature", "initial_condition.basal_temperature"})


RADIONUCLIDE_PREFIX = "radionuclide_"

#: Order of sections in a written file; "radionuclide_*" stands for all of them.
SECTION_ORDER = (
    "solver", "boundary_conditions", "mesh", "energy", "initial_condition",
    "phase_liquid", "phase_solid", "phase_mixed", "radionuclide_*", "eos", "output",
)

#: Legacy keys read as a current key: (section, key) -> (section, key).
#: ``energy.use_jax_jacobian`` (bool) becomes ``solver.jacobian`` ("jax" / "fd").
LEGACY_MAPPED = {
    ("energy", "solver_method"): ("solver", "method"),
    ("solver", "cvode_output_points"): ("solver", "output_points"),
    ("energy", "use_jax_jacobian"): ("solver", "jacobian"),
}

#: Legacy keys accepted with one warning each: they have no effect in this version.
LEGACY_IGNORED = frozenset({
    ("energy", "phase_smoothing"),
    ("energy", "convective_threshold"),
    ("energy", "bottom_up_grav_sep"),
    ("energy", "eos_floor_margin"),
    ("energy", "phase_boundary_entropy_margin"),
    ("energy", "phase_boundary_cap"),
    ("energy", "dilatation"),
    ("solver", "tcore_change_limit"),
    ("boundary_conditions", "top_node"),
    ("boundary_conditions", "core_module_params"),
    ("phase_mixed", "cp_blend"),
})

#: Legacy keys accepted with one warning at the value where they had no effect either
#: (section, key) -> (that value, the error for any other value).
LEGACY_IGNORED_AT = {
    ("solver", "event_triggering"): (
        False,
        "`solver.event_triggering = true` (aragog 0.2.8: end the solve once the surface "
        "temperature has moved by solver.tsurf_poststep_change) is not supported; use "
        "energy.temperature_step_cap [K] (the largest temperature change of any cell) instead",
    ),
}

#: Legacy sections accepted (whole) with one warning.
LEGACY_SECTIONS = frozenset({"scalings"})

#: Keys holding file or directory paths (resolved against the config file's folder).
PATH_KEYS = tuple((s, k) for s, keys in SCHEMA.items() for k, key in keys.items() if key.kind == "path")

#: The constant-property keys of [phase_mixed] and the [phase_liquid] key each defaults to.
CONST_KEYS = {
    "const_rho": "density",
    "const_Cp": "heat_capacity",
    "const_alpha": "thermal_expansivity",
    "const_cond": "thermal_conductivity",
    "const_log10visc": "viscosity",  # log10 of it
    "const_T_ref": None,
    "const_S_ref": None,
}
USED_ONLY_WITH.update({f"phase_mixed.{key}": ("phase_mixed.const_properties", (True,)) for key in CONST_KEYS})


def keys_of(section: str) -> dict[str, Key]:
    """The key table of a section name (``radionuclide_X`` → the radionuclide keys)."""
    if section.startswith(RADIONUCLIDE_PREFIX):
        return RADIONUCLIDE_KEYS
    return SCHEMA[section]
