#!/usr/bin/env python
"""PROTEUS's coupled-run call sequence against whichever ``aragog`` this interpreter imports.

Standalone: it imports only the upstream aragog's names, exactly as PROTEUS's coupling
wrapper (``proteus/interior_energetics/aragog.py``, ``AragogRunner``) imports them, and it
follows that wrapper's call sequence. Run it with this package's interpreter to test the
compatibility adapters, or with an interpreter that has the upstream ``fwl-aragog``
installed to get the reference numbers (``tools/compare_upstream.py`` does both).

The sequence (PROTEUS method in brackets):

1. set-up [setup_solver]: the ``_*Parameters`` dataclasses built field by field as
   PROTEUS builds them for a ``dummy`` structure (Adams-Williamson mesh,
   ``initial_condition = 3``, ``basal_temperature = 7000``, ``start_time = end_time = 0``,
   prescribed surface flux ``outer_boundary_condition = 4``, ``core_bc =
   'energy_balance'``, radionuclides and tides on); ``EntropySolver(param, entropy_eos)``
   with ``entropy_eos = None`` in constant-property mode; ``initialize()``;
   [_maybe_install_jax_cvode_factory] for ``--backend jax``; [_set_entropy_ic] uniform
   ``S_target`` plus the ``ini_dsdr`` linear perturbation, ``set_initial_entropy``;
2. the equilibration call over [0, 0] [run_solver -> _solve_with_retry];
3. coupled calls [setup_or_update_solver: update_structure, update_solver, reset,
   set_initial_entropy(last entropy)] with F_atm, T_eqm, outer radius, gravity and the
   tidal array changing between them;
4. one call through the retry ladder [_solve_with_retry]: the first attempt is rejected
   (as PROTEUS rejects a status-0 attempt whose core temperature jumped), so the ladder
   restores the pre-solve state (``set_initial_dSdr_cmb(snapshot)``, ``reset()``,
   ``set_initial_entropy``), halves dt, raises ``_atol_sf`` and solves again; afterwards
   ``_atol_sf = 1`` and ``set_initial_dSdr_cmb(None)``;
5. a final ``get_state()``.

Output (``--out``, JSON): per call ``T_magma, T_core, Phi_global, status, dt_actual``
(plus wall time, window, inputs and diagnostics), the retry snapshots, the final state,
and, on failure, the stage, the exception and its traceback.

Structure (``--structure``): ``dummy`` (default) is PROTEUS's dummy module without a mesh
file, i.e. the Adams-Williamson mesh (``eos_method = 1``); ``zalmoxis`` writes a
Zalmoxis-style ``data/zalmoxis_output.dat`` (r, P, rho, g) before set-up and again before
every coupled call (a structure re-solve for the new radius), which PROTEUS passes as
``eos_method = 2`` / ``eos_file`` and ``reset()`` re-reads, with the core-density echo-back
through ``derive_core_density_from_mesh`` (resolve_core_density, update_structure).
``--tsurf`` sets ``planet.tsurf_init`` of table mode (default 3500 K: fully molten).

Inputs: ``--eos-dir`` (P-S tables, SPIDER format: ``aragog eos generate DIR``),
``--lookup-dir`` (PROTEUS's P-T phase tables) and ``--melting-dir`` (``solidus_P-T.dat``,
``liquidus_P-T.dat``); ``tests/compat/_tables.py ROOT`` writes all three with this
package. ``--prepare ROOT`` does the same when this interpreter has this package.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

import numpy as np

log = logging.getLogger("proteus_sequence")

# ---------------------------------------------------------------------------------------
# The PROTEUS configuration the sequence stands for (config keys as PROTEUS names them).
# ---------------------------------------------------------------------------------------
CONFIG = {
    # [interior_energetics]
    "num_levels": 50,
    "mixing_length": "nearest",
    "adams_williamson_rhos": 4078.95095544,
    "adiabatic_bulk_modulus": 260e9,
    "adams_williamson_beta": 0.0,
    "rtol": 1e-6,
    "surface_bc_mode": "flux",
    "core_tfac_avg": 1.147,
    "param_utbl": False,
    "param_utbl_const": 1e-7,
    "trans_conduction": True,
    "trans_convection": True,
    "trans_grav_sep": True,
    "trans_mixing": True,
    "heat_radiogenic": True,
    "heat_tidal": True,
    "kappah_floor": 10.0,
    "eddy_diffusivity_thermal": 1.0,
    "eddy_diffusivity_chemical": 1.0,
    "melt_log10visc": 2.0,
    "solid_log10visc": 22.0,
    "melt_cond": 2.0,
    "solid_cond": 5.0,
    "latent_heat_of_fusion": 4e6,
    "rfront_loc": 0.4,
    "rfront_wid": 0.15,
    "phase_transition_width": 0.1,
    "grain_size": 0.1,
    "matprop_smooth_width": 1e-2,  # [interior_energetics.spider]
    "const_rho": 4000.0,
    "const_Cp": 1000.0,
    "const_alpha": 1e-5,
    "const_cond": 4.0,
    "const_log10visc": 2.0,
    "const_T_ref": 3500.0,
    "const_S_ref": 3000.0,
    "radio_tref": 4.55,  # Gyr
    "radio_K": 310.0,  # ppmw
    "radio_U": 0.031,
    "radio_Th": 0.124,
    "radio_Al": 0.0,
    "radio_Fe": 0.0,
    # [interior_energetics.aragog]
    "atol_temperature_equivalent": 0.01,
    "core_bc": "energy_balance",
    "mass_coordinates": True,
    "phase_smoothing": "tanh",
    "solver_method": "cvode",
    "phi_step_cap": 0.0,
    "temperature_step_cap": 0.0,
    "entropy_step_cap": 0.0,
    "phase_boundary_entropy_margin": 200.0,
    # [interior_struct] (module = "dummy"), [planet], [star]
    "core_density": 10738.33,
    "core_heatcap": 880.0,
    "tsurf_init": 3500.0,  # K, table mode: S_target = EntropyEOS.invert_temperature(1e5, T)
    "ini_entropy": 2845.8,  # J/kg/K, constant-property mode (temperature_mode = isentropic)
    "ini_dsdr": -4.698e-6,  # J/kg/K/m, the CHILI protocol perturbation
    "age_ini": 0.1,  # Gyr
}

# radnuc_data (proteus.utils.constants): abundance, heat production [W/kg], half-life [yr]
RADNUC = {
    "k40": (1.1668e-4, 2.8761e-5, 1248e6),
    "th232": (1.0, 2.6368e-5, 14000e6),
    "u235": (0.0072045, 5.68402e-4, 704e6),
    "u238": (0.9927955, 9.4946e-5, 4468e6),
}

# The initial helpfile row (dummy structure: Earth).
HF_ROW0 = {
    "Time": 0.0,
    "F_atm": 2.0e5,
    "T_eqm": 280.0,
    "R_int": 6.371e6,
    "R_core": 3.504e6,
    "gravity": 9.81,
    "P_surf": 0.0,  # bar
    "M_core": 1.94e24,
}

# Coupled calls: (dt [yr], F_atm [W/m2], T_eqm [K], R_int factor, gravity factor,
# tidal heating [W/kg] on every cell (None: the scalar [0.0] array), retry?)
CALLS = [
    (0.5, 2.0e5, 280.0, 1.0, 1.0, None, False),
    (0.5, 1.5e5, 285.0, 1.0 - 2e-4, 1.0 + 3e-4, 1e-7, False),
    (1.0, 1.0e5, 290.0, 1.0 - 4e-4, 1.0 + 6e-4, 1e-7, False),
    (1.0, 1.0e5, 290.0, 1.0 - 4e-4, 1.0 + 6e-4, 2e-7, True),
    (1.0, 8.0e4, 295.0, 1.0 - 5e-4, 1.0 + 7e-4, None, False),
]

#: ``--freeze``: after CALLS, PROTEUS's coupled calls at a fixed atmosphere flux through the
#: crystallisation of the base (issue "Through the mush", case 1): F_atm [W/m2] and T_eqm [K]
#: fixed, the planet at HF_ROW0, no tides, dt doubling from ``dt0`` [yr] up to ``dt_max``,
#: until Phi_global < ``phi_stop`` or ``max_calls`` calls.
FREEZE = {"F_atm": 1.0e4, "T_eqm": 280.0, "dt0": 10.0, "dt_max": 10240.0, "phi_stop": 0.5, "max_calls": 60}

#: the per-call energies PROTEUS's coupler sums (``_populate_energy_residual``): the budget
#: ``step_dE_state_heat_J = step_dE_F_int_J + step_dE_F_cmb_J + step_dE_Q_radio_J +
#: step_dE_Q_tidal_J`` of each call [J]
ENERGY_FIELDS = ("step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J",
                 "step_dE_state_heat_J", "step_solver_residual_J")

#: SolverOutput fields PROTEUS reads (run_solver, _build_helpfile_output, _estimate_T_pot,
#: _write_output_ncdf).
PROTEUS_OUTPUT_FIELDS = (
    "status dt_actual T_magma T_core Phi_global Phi_global_vol RF_depth M_mantle "
    "M_mantle_liquid M_mantle_solid E_th E_state E_state_cons Cp_eff F_cmb "
    "Q_radio_total Q_tidal_total step_dE_F_int_J step_dE_F_cmb_J step_dE_Q_radio_J "
    "step_dE_Q_tidal_J step_dE_Q_radio_cons_J step_dE_Q_tidal_cons_J step_solver_residual_J "
    "step_dE_compression_J step_dE_state_heat_J r_basic r_stag P_stag S_final T_stag phi_stag "
    "rho_stag visc_stag mass_stag heating heat_flux eddy_diff jcond_b jconv_b jgrav_b jmix_b "
    "dSdr_b phi_basic T_basic cp_basic rho_basic"
).split()


def write_structure_file(path, R_core: float, R_int: float, M_core: float,
                         rho_mantle: float = 4500.0, n: int = 200) -> None:
    """A Zalmoxis-style structure file (``zalmoxis_output.dat``): columns r [m] (CMB to
    surface), P [Pa], rho [kg/m3], g [m/s2] of a uniform-density mantle over a point-mass
    core: g = G M(r) / r^2, P(r) = integral of rho g from r to the surface (trapezoid)."""
    G = 6.6743e-11
    r = np.linspace(R_core, R_int, n)
    M = M_core + 4.0 / 3.0 * math.pi * rho_mantle * (r**3 - R_core**3)
    g = G * M / r**2
    dP = 0.5 * (rho_mantle * g[1:] + rho_mantle * g[:-1]) * np.diff(r)
    P = np.concatenate([np.cumsum(dP[::-1])[::-1], [0.0]])
    np.savetxt(path, np.column_stack([r, P, np.full(n, rho_mantle), g]))


class SequenceError(RuntimeError):
    """A stage of the sequence failed; ``stage`` names it."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {type(exc).__name__}: {exc}")
        self.stage = stage
        self.exc = exc


def proteus_imports() -> SimpleNamespace:
    """The module-level imports of proteus/interior_energetics/aragog.py, verbatim."""
    from aragog import aragog_file_logger
    from aragog.eos.entropy import EntropyEOS
    from aragog.mesh import derive_core_density_from_mesh
    from aragog.solver import EntropySolver, SolverOutput
    from aragog.parser import (
        Parameters,
        _BoundaryConditionsParameters,
        _EnergyParameters,
        _InitialConditionParameters,
        _MeshParameters,
        _PhaseMixedParameters,
        _PhaseParameters,
        _Radionuclide,
        _SolverParameters,
    )

    return SimpleNamespace(**{k: v for k, v in locals().items()})


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else repr(v)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    return repr(x)


def _jit_stats(solver):
    stats = getattr(getattr(solver, "native", solver), "jit_stats", None)  # this package's counters
    if stats is None:
        return None
    try:
        return _jsonable({k: dict(v) if isinstance(v, dict) else v for k, v in dict(stats).items()})
    except Exception as exc:  # recorded, not fatal: upstream has no jit_stats
        return {"error": repr(exc)}


class Sequence:
    """One coupled run; ``run()`` returns the JSON-able record."""

    def __init__(self, mode: str, backend: str, eos_dir, lookup_dir, melting_dir, workdir,
                 num_levels: int | None = None, reject_first_attempt: bool = True,
                 tsurf_init: float | None = None, structure: str = "dummy", freeze: bool = False):
        if mode not in ("const", "table"):
            raise ValueError(f"mode must be const or table, got {mode!r}")
        if structure not in ("dummy", "zalmoxis"):
            raise ValueError(f"structure must be dummy or zalmoxis, got {structure!r}")
        self.structure = structure
        self.freeze = bool(freeze)
        if backend not in ("jax", "numpy"):
            raise ValueError(f"backend must be jax or numpy, got {backend!r}")
        self.mode, self.backend = mode, backend
        self.eos_dir = str(eos_dir) if eos_dir else ""
        self.lookup_dir = Path(lookup_dir)
        self.melting_dir = Path(melting_dir)
        self.workdir = Path(workdir)
        self.cfg = dict(CONFIG)
        if num_levels:
            self.cfg["num_levels"] = int(num_levels)
        if tsurf_init:
            self.cfg["tsurf_init"] = float(tsurf_init)
        self.cfg["const_properties"] = mode == "const"
        self.reject_first_attempt = reject_first_attempt
        self.stage = "init"
        self.record: dict = {
            "mode": mode,
            "backend": backend,
            "structure": structure,
            "config": dict(self.cfg),
            "calls": [],
            "warnings": [],
        }
        self.solver = None
        self.tides = None
        self.last_entropy = None
        self.hf_row = dict(HF_ROW0)

    # ------------------------------------------------------------------ helpers
    def _at(self, stage: str):
        self.stage = stage
        log.info("stage %s", stage)

    def _warn(self, msg: str):
        log.warning(msg)
        self.record["warnings"].append(msg)

    # ------------------------------------------------------------------ structure
    @property
    def structure_file(self) -> Path:
        return self.workdir / "data" / "zalmoxis_output.dat"

    def write_structure(self):
        """The structure module's output for the current hf_row (a Zalmoxis re-solve)."""
        if self.structure != "zalmoxis":
            return
        self.structure_file.parent.mkdir(parents=True, exist_ok=True)
        write_structure_file(self.structure_file, self.hf_row["R_core"], self.hf_row["R_int"],
                             self.hf_row["M_core"])

    def resolve_core_density(self) -> float:
        """proteus.interior_energetics.aragog.resolve_core_density."""
        rho_core = float(self.cfg["core_density"])
        M_core = float(self.hf_row.get("M_core", 0.0))
        if M_core > 0.0 and self.structure_file.is_file():
            self._at("resolve_core_density: derive_core_density_from_mesh")
            rho_mesh = float(self.A.derive_core_density_from_mesh(str(self.structure_file), M_core))
            if 1000.0 <= rho_mesh <= 30000.0:
                self.hf_row["core_density"] = rho_mesh
                return rho_mesh
        return rho_core

    # ------------------------------------------------------------------ set-up
    def setup_solver(self):
        """AragogRunner.setup_solver for interior_struct.module = 'dummy'."""
        A, cfg, hf_row = self.A, self.cfg, self.hf_row
        self._at("setup_solver: _SolverParameters")
        solver_p = A._SolverParameters(
            start_time=0,
            end_time=0,
            atol=float(cfg["atol_temperature_equivalent"]),
            rtol=float(cfg["rtol"]),
        )
        self._at("setup_solver: _BoundaryConditionsParameters")
        bc = A._BoundaryConditionsParameters(
            outer_boundary_condition=1 if cfg["surface_bc_mode"] == "grey_body" else 4,
            outer_boundary_value=hf_row["F_atm"],
            inner_boundary_condition=(1),
            inner_boundary_value=(4000),
            emissivity=1,
            equilibrium_temperature=hf_row["T_eqm"],
            core_heat_capacity=cfg["core_heatcap"],
            tfac_core_avg=cfg["core_tfac_avg"],
            param_utbl=cfg["param_utbl"],
            param_utbl_const=cfg["param_utbl_const"],
            core_bc=cfg["core_bc"],
        )
        self._at("setup_solver: _MeshParameters")
        R_core_hf = hf_row.get("R_core", 0)
        inner_radius = R_core_hf if R_core_hf and R_core_hf > 0 else 0.55 * hf_row["R_int"]
        mesh = A._MeshParameters(
            outer_radius=hf_row["R_int"],
            inner_radius=inner_radius,
            number_of_nodes=cfg["num_levels"],
            mixing_length_profile=(
                "nearest_boundary" if cfg["mixing_length"] == "nearest" else "constant"
            ),
            core_density=self.resolve_core_density(),
            eos_method=1,
            surface_density=cfg["adams_williamson_rhos"],
            gravitational_acceleration=hf_row["gravity"],
            adiabatic_bulk_modulus=cfg["adiabatic_bulk_modulus"],
            adams_williamson_beta=cfg["adams_williamson_beta"],
            mass_coordinates=cfg["mass_coordinates"],
            surface_pressure=float(hf_row.get("P_surf", 0.0)) * 1e5,
        )
        if self.structure == "zalmoxis":
            mesh.eos_method = 2  # User-defined EOS based on Zalmoxis
            mesh.eos_file = str(self.structure_file)
        self._at("setup_solver: _EnergyParameters")
        energy_kwargs = dict(
            conduction=cfg["trans_conduction"],
            convection=cfg["trans_convection"],
            gravitational_separation=(cfg["trans_grav_sep"]),
            mixing=cfg["trans_mixing"],
            radionuclides=cfg["heat_radiogenic"],
            tidal=cfg["heat_tidal"],
            tidal_array=self.tides,
            kappah_floor=cfg["kappah_floor"],
            eddy_diffusivity_thermal=float(cfg["eddy_diffusivity_thermal"]),
            phase_smoothing=cfg["phase_smoothing"],
            solver_method=cfg["solver_method"],
            use_jax_jacobian=(self.backend == "jax"),
            phi_step_cap=cfg["phi_step_cap"],
            temperature_step_cap=cfg["temperature_step_cap"],
            entropy_step_cap=cfg["entropy_step_cap"],
            phase_boundary_entropy_margin=float(cfg["phase_boundary_entropy_margin"]),
        )
        # PROTEUS drops the three newest keys when the installed aragog's signature lacks
        # them (a warning when a non-default value is dropped); record what was dropped.
        import inspect

        fields = set(inspect.signature(A._EnergyParameters).parameters)
        unsupported = {"temperature_step_cap", "entropy_step_cap", "phase_boundary_entropy_margin"} - fields
        if unsupported:
            self._warn(f"_EnergyParameters lacks {sorted(unsupported)} (PROTEUS drops them)")
        for key in unsupported:
            energy_kwargs.pop(key, None)
        energy = A._EnergyParameters(**energy_kwargs)

        self._at("setup_solver: _InitialConditionParameters")
        initial_condition = A._InitialConditionParameters(
            initial_condition=3,
            surface_temperature=cfg["tsurf_init"],
            basal_temperature=7000.0,
            init_file=os.path.join(str(self.workdir), ""),
        )

        self._at("setup_solver: lookup tables")
        LOOK_UP_DIR = self.lookup_dir
        if not (LOOK_UP_DIR / "heat_capacity_melt.dat").is_file():
            raise FileNotFoundError(f"Aragog lookup data not found at {LOOK_UP_DIR}")
        solidus_path = self.melting_dir / "solidus_P-T.dat"
        liquidus_path = self.melting_dir / "liquidus_P-T.dat"
        entropy_melt = LOOK_UP_DIR / "entropy_melt.dat"
        entropy_solid = LOOK_UP_DIR / "entropy_solid.dat"
        entropy_melt_arg = str(entropy_melt) if entropy_melt.is_file() else ""
        entropy_solid_arg = str(entropy_solid) if entropy_solid.is_file() else ""

        self._at("setup_solver: _PhaseParameters")
        phase_liquid = A._PhaseParameters(
            density=LOOK_UP_DIR / "density_melt.dat",
            viscosity=10.0 ** float(cfg["melt_log10visc"]),
            heat_capacity=LOOK_UP_DIR / "heat_capacity_melt.dat",
            melt_fraction=1,
            thermal_conductivity=float(cfg["melt_cond"]),
            thermal_expansivity=LOOK_UP_DIR / "thermal_exp_melt.dat",
            entropy=entropy_melt_arg,
        )
        phase_solid = A._PhaseParameters(
            density=LOOK_UP_DIR / "density_solid.dat",
            viscosity=10.0 ** float(cfg["solid_log10visc"]),
            heat_capacity=LOOK_UP_DIR / "heat_capacity_solid.dat",
            melt_fraction=0,
            thermal_conductivity=float(cfg["solid_cond"]),
            thermal_expansivity=LOOK_UP_DIR / "thermal_exp_solid.dat",
            entropy=entropy_solid_arg,
        )
        self._at("setup_solver: _PhaseMixedParameters")
        phase_mixed = A._PhaseMixedParameters(
            latent_heat_of_fusion=float(cfg["latent_heat_of_fusion"]),
            rheological_transition_melt_fraction=cfg["rfront_loc"],
            rheological_transition_width=cfg["rfront_wid"],
            solidus=solidus_path,
            liquidus=liquidus_path,
            phase="mixed",
            phase_transition_width=float(cfg["phase_transition_width"]),
            grain_size=cfg["grain_size"],
            matprop_smooth_width=float(cfg["matprop_smooth_width"]),
            const_properties=bool(cfg["const_properties"]),
            const_rho=float(cfg["const_rho"]),
            const_Cp=float(cfg["const_Cp"]),
            const_alpha=float(cfg["const_alpha"]),
            const_cond=float(cfg["const_cond"]),
            const_log10visc=float(cfg["const_log10visc"]),
            const_T_ref=float(cfg["const_T_ref"]),
            const_S_ref=float(cfg["const_S_ref"]),
        )

        self._at("setup_solver: _Radionuclide")
        radionuclides = []
        if cfg["heat_radiogenic"]:
            radio_t0 = (cfg["radio_tref"] - cfg["age_ini"]) * 1e9

            def _append_radnuc(_iso, _cnc):
                abundance, heatprod, halflife = RADNUC[_iso]
                radionuclides.append(
                    A._Radionuclide(
                        name=_iso,
                        t0_years=radio_t0,
                        abundance=abundance,
                        concentration=_cnc,
                        heat_production=heatprod,
                        half_life_years=halflife,
                    )
                )

            if cfg["radio_K"] > 0.0:
                _append_radnuc("k40", cfg["radio_K"])
            if cfg["radio_Th"] > 0.0:
                _append_radnuc("th232", cfg["radio_Th"])
            if cfg["radio_U"] > 0.0:
                _append_radnuc("u235", cfg["radio_U"])
                _append_radnuc("u238", cfg["radio_U"])

        self._at("setup_solver: Parameters")
        param = A.Parameters(
            boundary_conditions=bc,
            energy=energy,
            initial_condition=initial_condition,
            mesh=mesh,
            phase_solid=phase_solid,
            phase_liquid=phase_liquid,
            phase_mixed=phase_mixed,
            radionuclides=radionuclides,
            solver=solver_p,
        )

        self._at("setup_solver: EntropyEOS")
        if cfg["const_properties"]:
            entropy_eos = None
        else:
            if not (self.eos_dir and os.path.isdir(self.eos_dir)):
                raise FileNotFoundError(f"P-S tables not found: {self.eos_dir!r}")
            entropy_eos = A.EntropyEOS(Path(self.eos_dir))
        self._at("setup_solver: EntropySolver(param, entropy_eos)")
        self.solver = A.EntropySolver(param, entropy_eos)

    def maybe_install_jax_cvode_factory(self):
        """AragogRunner._maybe_install_jax_cvode_factory (backend = 'jax' only).

        PROTEUS logs a warning and falls back on any failure here; the sequence does the
        same but records the exception (``jax_factory_install_error``).
        """
        self.record["jax_factory_installed"] = False
        if self.backend != "jax":
            return
        solver, cfg = self.solver, self.cfg
        solver._jax_factory_call_count = 0
        self._at("jax factory: imports")
        try:
            import jax.numpy as jnp
            from aragog.jax.phase import MeshArrays, PhaseParams
            from aragog.jax.solver import BoundaryParams
            from aragog.solver.cvode_jax import build_jax_rhs_and_jacobian
        except ImportError as exc:
            self.record["jax_factory_install_error"] = f"ImportError: {exc}"
            self._warn(f"Option Z requested but JAX stack is not importable ({exc})")
            return
        try:
            self._at("jax factory: EntropyEOS_JAX")
            # PROTEUS: interior_o._spider_eos_dir, '' in constant-property mode here.
            eos_dir = self.eos_dir if self.mode == "table" else ""
            from aragog.jax.eos import EntropyEOS_JAX

            eos_jax = EntropyEOS_JAX(str(eos_dir))
            self._at("jax factory: PhaseParams")
            params_jax = PhaseParams(
                phi_rheo=cfg["rfront_loc"],
                phi_width=cfg["rfront_wid"],
                viscosity_solid=10.0 ** float(cfg["solid_log10visc"]),
                viscosity_liquid=10.0 ** float(cfg["melt_log10visc"]),
                grain_size=cfg["grain_size"],
                k_solid=float(cfg["solid_cond"]),
                k_liquid=float(cfg["melt_cond"]),
                matprop_smooth_width=float(cfg["matprop_smooth_width"]),
                conduction=cfg["trans_conduction"],
                convection=cfg["trans_convection"],
                grav_sep=cfg["trans_grav_sep"],
                mixing=cfg["trans_mixing"],
                eddy_diff_thermal=float(cfg["eddy_diffusivity_thermal"]),
                eddy_diff_chemical=float(cfg["eddy_diffusivity_chemical"]),
                kappah_floor=float(cfg["kappah_floor"]),
                bottom_up_grav_sep=True,
                phase_smoothing=cfg["phase_smoothing"],
                phase_smoothing_width=0.01,
                separation_viscosity="melt",  # PROTEUS 26.10 passes it (84b029b did not)
            )
            self._at("jax factory: MeshArrays.from_numpy_mesh(solver.evaluator.mesh)")
            mesh_jax = MeshArrays.from_numpy_mesh(solver.evaluator.mesh)
            n_stag = solver._n_stag

            def factory(scales, core_bc_mode):
                solver._jax_factory_call_count += 1
                bc_cfg = solver.parameters.boundary_conditions
                bc_jax_live = BoundaryParams(
                    outer_bc_type=bc_cfg.outer_boundary_condition,
                    outer_bc_value=bc_cfg.outer_boundary_value,
                    emissivity=bc_cfg.emissivity,
                    T_eq=bc_cfg.equilibrium_temperature,
                    inner_bc_type=(
                        5 if solver._core_bc == "energy_balance" else bc_cfg.inner_boundary_condition
                    ),
                    inner_bc_value=bc_cfg.inner_boundary_value,
                    core_density=solver.parameters.mesh.core_density,
                    core_heat_capacity=bc_cfg.core_heat_capacity,
                    tfac_core_avg=getattr(bc_cfg, "tfac_core_avg", 1.147),
                    cmb_area=float(getattr(solver, "_cmb_area", 0.0)),
                    core_M=float(getattr(solver, "_core_M", 0.0)),
                    cmb_dr_cmb=float(getattr(solver, "_cmb_dr_cmb", 0.0)),
                    param_utbl=bool(getattr(bc_cfg, "param_utbl", False)),
                    param_utbl_const=float(getattr(bc_cfg, "param_utbl_const", 0.0)),
                )
                heating_static = jnp.zeros(n_stag)
                tidal_arr = np.asarray(getattr(solver.parameters.energy, "tidal_array", [0.0]))
                if tidal_arr.size == n_stag:
                    heating_static = jnp.asarray(tidal_arr)
                elif tidal_arr.size == 1 and tidal_arr[0] != 0.0:
                    heating_static = jnp.full(n_stag, float(tidal_arr[0]))
                radionuclides = getattr(solver.parameters, "radionuclides", [])
                if radionuclides:
                    radio_isotope_params = (
                        np.array([float(r.heat_production) for r in radionuclides]),
                        np.array([float(r.abundance) for r in radionuclides]),
                        np.array([float(r.concentration) for r in radionuclides]),
                        np.array([float(r.t0_years) for r in radionuclides]),
                        np.array([float(r.half_life_years) for r in radionuclides]),
                    )
                else:
                    radio_isotope_params = ()
                rhs_fn, jac_fn, _info = build_jax_rhs_and_jacobian(
                    eos_jax,
                    params_jax,
                    mesh_jax,
                    bc_jax_live,
                    np.asarray(heating_static),
                    scales,
                    core_bc_mode=core_bc_mode,
                    radio_isotope_params=radio_isotope_params,
                    # PROTEUS 26.10 passes these in every mode (None and 0 outside core_module)
                    core_module_budget=None,
                    core_module_q_radio=0.0,
                    core_module_ra_crit_cmb=None,
                )
                return rhs_fn, jac_fn

            self._at("jax factory: set_jax_cvode_factory")
            solver.set_jax_cvode_factory(factory)
            self.record["jax_factory_installed"] = True
        except Exception as exc:
            self.record["jax_factory_install_error"] = f"{self.stage}: {type(exc).__name__}: {exc}"
            self._warn(f"Option Z factory install failed ({exc}); falling back")

    def set_entropy_ic(self):
        """AragogRunner._set_entropy_ic with compute_initial_entropy's two branches."""
        solver, cfg = self.solver, self.cfg
        self._at("_set_entropy_ic: S_target")
        if self.mode == "table":
            # compute_initial_entropy: P-S inversion at 1 bar on the solver's own tables.
            eos = self.A.EntropyEOS(self.eos_dir)
            S_target = float(eos.invert_temperature(1e5, cfg["tsurf_init"]))
        else:
            # temperature_mode = 'isentropic': planet.ini_entropy verbatim.
            S_target = float(cfg["ini_entropy"])
        self.record["S_target"] = S_target
        self._at("_set_entropy_ic: _P_stag_flat / _r_basic_flat")
        P_stag = solver._P_stag_flat
        N = len(P_stag)
        S_init = np.full(N, float(S_target))
        ini_dsdr = float(cfg["ini_dsdr"])
        if ini_dsdr != 0.0:
            r_basic = np.asarray(solver._r_basic_flat, dtype=float)
            r_stag = 0.5 * (r_basic[:-1] + r_basic[1:])
            if len(r_stag) == N:
                r_surf = float(r_basic[-1])
                S_init = S_init + ini_dsdr * (r_stag - r_surf)
            else:
                self._warn(f"ini_dsdr perturbation skipped: r_stag length {len(r_stag)} != {N}")
        self._at("_set_entropy_ic: set_initial_entropy")
        solver.set_initial_entropy(S_init)
        self.record["n_stag"] = int(N)
        self.record["P_stag_range"] = [float(np.min(P_stag)), float(np.max(P_stag))]

    # ------------------------------------------------------------------ coupling
    def update_structure(self):
        solver, hf_row = self.solver, self.hf_row
        solver.parameters.mesh.outer_radius = hf_row["R_int"]
        solver.parameters.mesh.gravitational_acceleration = hf_row["gravity"]
        R_core_hf = hf_row.get("R_core", 0)
        if R_core_hf and R_core_hf > 0:
            solver.parameters.mesh.inner_radius = R_core_hf
        else:
            solver.parameters.mesh.inner_radius = 0.55 * hf_row["R_int"]
        eos_file = getattr(solver.parameters.mesh, "eos_file", "") or ""
        M_core = float(hf_row.get("M_core", 0.0))
        if self.structure == "zalmoxis" and M_core > 0.0 and eos_file and os.path.isfile(eos_file):
            rho_core_mesh = self.A.derive_core_density_from_mesh(eos_file, M_core)
            if 1000.0 <= rho_core_mesh <= 30000.0:
                solver.parameters.mesh.core_density = rho_core_mesh
                hf_row["core_density"] = rho_core_mesh

    def update_solver(self, dt: float):
        solver, hf_row = self.solver, self.hf_row
        solver.parameters.solver.start_time = hf_row["Time"]
        solver.parameters.solver.end_time = hf_row["Time"] + dt
        sol = solver.solution
        if sol is not None and sol.y.size > 0:
            S_block = solver.entropy_staggered
            S_field = S_block[:, -1] if S_block.ndim > 1 else S_block
        else:
            S_field = None
        if S_field is not None:
            self.last_entropy = np.array(S_field, dtype=float)
        solver.parameters.boundary_conditions.outer_boundary_value = hf_row["F_atm"]
        solver.parameters.boundary_conditions.equilibrium_temperature = hf_row["T_eqm"]
        solver.parameters.energy.tidal_array = self.tides

    def setup_or_update_solver(self, dt: float):
        """The ``else`` branch of setup_or_update_solver (solver exists, ic == 2)."""
        self._at("update_structure")
        self.update_structure()
        self._at("update_solver")
        self.update_solver(dt)
        self._at("reset")
        self.solver.reset()
        if self.last_entropy is not None:
            self._at("set_initial_entropy(last entropy)")
            self.solver.set_initial_entropy(self.last_entropy)

    def solve_with_retry(self, reject_attempts=()) -> tuple:
        """AragogRunner._solve_with_retry; attempts in ``reject_attempts`` are rejected.

        A rejected attempt goes down the same branch as PROTEUS's rejection of a status-0
        attempt whose core temperature jumped more than the sanity threshold.
        """
        solver = self.solver
        max_attempts = 6
        atol_sf_max = 5.0
        sanity_dT_core = 3000.0
        t_start = float(solver.parameters.solver.start_time)
        t_end = float(solver.parameters.solver.end_time)
        dt_requested = t_end - t_start
        S_ic = self.last_entropy.copy() if self.last_entropy is not None else None
        self._at("retry: get_current_dSdr_cmb")
        dSdr_snapshot = None
        if hasattr(solver, "get_current_dSdr_cmb"):
            dSdr_snapshot = solver.get_current_dSdr_cmb()
        if dSdr_snapshot is None:
            dSdr_snapshot = getattr(solver, "_dSdr_cmb_init", None)
        dSdr_ic = dSdr_snapshot
        T_core_pre = float(self.hf_row.get("T_cmb", 0.0))
        retry = {"attempts": [], "dSdr_snapshot": dSdr_snapshot,
                 "S0_pre": np.array(getattr(solver, "_S0", []), dtype=float)}
        solver._atol_sf = 1.0
        out = None
        try:
            for attempt in range(1, max_attempts + 1):
                self._at(f"solve (attempt {attempt})")
                t0 = time.perf_counter()
                solver.solve()
                wall = time.perf_counter() - t0
                self._at(f"get_state (attempt {attempt})")
                out = solver.get_state()
                retry["attempts"].append({
                    "attempt": attempt,
                    "t_start": float(solver.parameters.solver.start_time),
                    "t_end": float(solver.parameters.solver.end_time),
                    "atol_sf": float(getattr(solver, "_atol_sf", float("nan"))),
                    "status": int(out.status),
                    "dt_actual": float(out.dt_actual),
                    "T_magma": float(out.T_magma),
                    "T_core": float(out.T_core),
                    "Phi_global": float(out.Phi_global),
                    "wall_s": wall,
                    "rejected": attempt in reject_attempts,
                })
                if out.status == 0 and attempt not in reject_attempts:
                    dT = abs(float(out.T_core) - T_core_pre) if T_core_pre > 0 else 0.0
                    if dT <= sanity_dT_core:
                        return out, retry
                if attempt >= max_attempts:
                    raise RuntimeError(f"retry ladder exhausted: status={out.status}")
                dt_new = dt_requested * (0.5**attempt)
                atol_sf_new = min(atol_sf_max, 1.0 + (atol_sf_max - 1.0) * (attempt / 2.0))
                self._at(f"retry restore (after attempt {attempt})")
                solver.parameters.solver.start_time = t_start
                solver.parameters.solver.end_time = t_start + dt_new
                solver._atol_sf = atol_sf_new
                if dSdr_ic is not None:
                    if hasattr(solver, "set_initial_dSdr_cmb"):
                        solver.set_initial_dSdr_cmb(dSdr_ic)
                    else:
                        self._warn("solver has no set_initial_dSdr_cmb; PROTEUS sets _dSdr_cmb_init")
                        solver._dSdr_cmb_init = dSdr_ic
                solver.reset()
                if S_ic is not None:
                    solver.set_initial_entropy(S_ic)
                retry.setdefault("S0_restored", np.array(getattr(solver, "_S0", []), dtype=float))
        finally:
            solver._atol_sf = 1.0
            if hasattr(solver, "set_initial_dSdr_cmb"):
                solver.set_initial_dSdr_cmb(None)
            else:
                solver._dSdr_cmb_init = None
        return out, retry

    def _call_record(self, label, t0_yr, t1_yr, out, wall, retry) -> dict:
        rec = {
            "label": label,
            "core_density": float(self.solver.parameters.mesh.core_density),
            "t_start": t0_yr,
            "t_end": t1_yr,
            "F_atm": self.hf_row["F_atm"],
            "T_eqm": self.hf_row["T_eqm"],
            "R_int": self.hf_row["R_int"],
            "gravity": self.hf_row["gravity"],
            "T_magma": float(out.T_magma),
            "T_core": float(out.T_core),
            "Phi_global": float(out.Phi_global),
            "status": int(out.status),
            "dt_actual": float(out.dt_actual),
            "wall_s": wall,
            "attempts": len(retry["attempts"]),
            "jit_stats": _jit_stats(self.solver),
            "jax_factory_calls": getattr(self.solver, "_jax_factory_call_count", None),
        }
        for name in ("M_mantle", "F_cmb", "Q_radio_total", "Q_tidal_total", "E_th", "RF_depth", "Cp_eff",
                     "E_state", "E_state_cons", *ENERGY_FIELDS):
            v = getattr(out, name, None)
            rec[name] = None if v is None else _jsonable(np.asarray(v, dtype=float).item()
                                                         if np.ndim(v) == 0 else None)
        r_basic = getattr(out, "r_basic", None)
        rec["r_basic0"] = None if r_basic is None else float(np.asarray(r_basic, dtype=float).ravel()[0])
        for name in ("heat_flux", "eddy_diff", "jcond_b", "jconv_b", "jgrav_b", "jmix_b", "dSdr_b"):
            v = getattr(out, name, None)  # the two bottom and the top basic nodes (diagnostics)
            v = None if v is None else np.asarray(v, dtype=float).ravel()
            rec[name + "_ends"] = None if v is None or v.size < 3 else [v[0], v[1], v[-1]]
        for name in ("mass_stag", "T_stag", "r_stag", "T_basic", "phi_stag"):
            v = getattr(out, name, None)
            rec[name] = None if v is None else np.asarray(v, dtype=float).ravel().tolist()
        try:
            S = np.asarray(self.solver.entropy_staggered)
            S = S[:, -1] if S.ndim > 1 else S
            rec["S_stag_final"] = S.tolist()
        except Exception as exc:
            rec["S_stag_final"] = None
            self._warn(f"entropy_staggered after {label}: {type(exc).__name__}: {exc}")
        missing = [f for f in PROTEUS_OUTPUT_FIELDS if not hasattr(out, f)]
        if missing:
            rec["missing_output_fields"] = missing
        return rec

    def coupled_call(self, label, dt, reject_attempts=()):
        """run_solver: the retry ladder, then Time += dt_actual and T_cmb for the guard."""
        t0_yr = float(self.solver.parameters.solver.start_time)
        t1_yr = float(self.solver.parameters.solver.end_time)
        start = time.perf_counter()
        out, retry = self.solve_with_retry(reject_attempts)
        wall = time.perf_counter() - start
        rec = self._call_record(label, t0_yr, t1_yr, out, wall, retry)
        if reject_attempts:
            rec["retry"] = _jsonable(retry)
        self.record["calls"].append(rec)
        self.hf_row["Time"] = self.hf_row["Time"] + float(out.dt_actual)
        self.hf_row["T_cmb"] = float(out.T_core)
        return out

    def freeze_calls(self):
        """Coupled calls at the fixed flux of :data:`FREEZE` until the mantle is half frozen."""
        self.hf_row.update(F_atm=FREEZE["F_atm"], T_eqm=FREEZE["T_eqm"], R_int=HF_ROW0["R_int"],
                           gravity=HF_ROW0["gravity"])
        self.tides = np.zeros(1)
        dt = FREEZE["dt0"]
        for i in range(1, FREEZE["max_calls"] + 1):
            self._at(f"freeze call {i}")
            self.write_structure()
            self.setup_or_update_solver(dt)
            out = self.coupled_call(f"freeze{i}", dt)
            if int(out.status) < 0 or float(out.Phi_global) < FREEZE["phi_stop"]:
                break
            dt = min(2.0 * dt, FREEZE["dt_max"])

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._at("import")
            self.A = proteus_imports()
            import aragog

            self.record["aragog_file"] = getattr(aragog, "__file__", None)
            self.record["aragog_version"] = str(getattr(aragog, "__version__", None))
            self._at("aragog_file_logger")
            self.A.aragog_file_logger(
                console_level=logging.WARNING, file_level=logging.INFO, log_dir=str(self.workdir)
            )
            self._at("derive_core_density_from_mesh")
            # The Zalmoxis echo-back (resolve_core_density): a 4-column r, P, rho, g file.
            mesh_file = self.workdir / "zalmoxis_output.dat"
            r = np.linspace(HF_ROW0["R_core"], HF_ROW0["R_int"], 20)
            np.savetxt(mesh_file, np.column_stack([r, np.linspace(135e9, 0.0, 20),
                                                   np.full(20, 4500.0), np.full(20, 9.81)]))
            rho = float(self.A.derive_core_density_from_mesh(str(mesh_file), HF_ROW0["M_core"]))
            self.record["core_density_from_mesh"] = rho
            self.record["core_density_expected"] = HF_ROW0["M_core"] / (4.0 / 3.0 * math.pi * HF_ROW0["R_core"] ** 3)

            self.tides = np.zeros(1)  # interior_o.tides before the first tides call
            self.write_structure()
            t = time.perf_counter()
            self.setup_solver()
            self._at("initialize")
            self.solver.initialize()
            self.maybe_install_jax_cvode_factory()
            self.set_entropy_ic()
            self.record["setup_wall_s"] = time.perf_counter() - t
            self.record["S0_initial_len"] = int(np.size(getattr(self.solver, "_S0", [])))

            # The equilibration call over [0, 0].
            self.coupled_call("equilibrate", 0.0)

            n_stag = self.record["n_stag"]
            for i, (dt, F_atm, T_eqm, fR, fg, tidal, retry) in enumerate(CALLS, start=1):
                self.hf_row["F_atm"] = F_atm
                self.hf_row["T_eqm"] = T_eqm
                self.hf_row["R_int"] = HF_ROW0["R_int"] * fR
                self.hf_row["gravity"] = HF_ROW0["gravity"] * fg
                self.tides = np.zeros(1) if tidal is None else np.full(n_stag, float(tidal))
                self._at("structure re-solve (writes the structure file)")
                self.write_structure()
                self.setup_or_update_solver(dt)
                reject = (1,) if (retry and self.reject_first_attempt) else ()
                self.coupled_call(f"call{i}" + ("-retry" if retry else ""), dt, reject)

            if self.freeze:
                self.freeze_calls()

            self._at("final get_state")
            final = self.solver.get_state()
            self.record["final_state"] = {
                "T_magma": float(final.T_magma),
                "T_core": float(final.T_core),
                "Phi_global": float(final.Phi_global),
                "status": int(final.status),
                "dt_actual": float(final.dt_actual),
            }
            missing = [f for f in PROTEUS_OUTPUT_FIELDS if not hasattr(final, f)]
            self.record["missing_output_fields"] = missing
            self.record["jit_stats_final"] = _jit_stats(self.solver)
            self.record["ok"] = True
        except Exception as exc:
            self.record["ok"] = False
            self.record["error"] = {
                "stage": self.stage,
                "type": type(exc).__name__,
                "message": str(exc),
                "traceback": traceback.format_exc(),
            }
            raise SequenceError(self.stage, exc) from exc
        return self.record


def run_sequence(mode="table", backend="numpy", eos_dir=None, lookup_dir=None, melting_dir=None,
                 workdir=None, num_levels=None, return_solver=False, tsurf_init=None,
                 structure="dummy", freeze=False):
    """Run the sequence in this process; returns the JSON-able record (and the solver)."""
    workdir = workdir or tempfile.mkdtemp(prefix="proteus_seq_")
    seq = Sequence(mode, backend, eos_dir, lookup_dir, melting_dir, workdir, num_levels,
                   tsurf_init=tsurf_init, structure=structure, freeze=freeze)
    record = seq.run()
    record = _jsonable(record)
    return (record, seq.solver) if return_solver else record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("const", "table"), default="table")
    ap.add_argument("--backend", choices=("jax", "numpy"), default="numpy")
    ap.add_argument("--eos-dir", default=None, help="P-S tables (SPIDER format)")
    ap.add_argument("--lookup-dir", default=None, help="PROTEUS P-T phase tables (LOOK_UP_DIR)")
    ap.add_argument("--melting-dir", default=None, help="solidus_P-T.dat, liquidus_P-T.dat")
    ap.add_argument("--prepare", default=None, metavar="ROOT",
                    help="write the three inputs under ROOT with this package first")
    ap.add_argument("--workdir", default=None, help="log and scratch directory")
    ap.add_argument("--nodes", type=int, default=None, help="num_levels (default %d)" % CONFIG["num_levels"])
    ap.add_argument("--tsurf", type=float, default=None,
                    help="planet.tsurf_init [K] of table mode (default %g: fully molten; 3000 "
                         "starts partly crystallised at the base, slow for the upstream's numpy "
                         "path)" % CONFIG["tsurf_init"])
    ap.add_argument("--structure", choices=("dummy", "zalmoxis"), default="dummy",
                    help="dummy: Adams-Williamson mesh (eos_method 1); zalmoxis: a structure "
                         "file rewritten before every call and re-read by reset() (eos_method 2)")
    ap.add_argument("--freeze", action="store_true",
                    help="after the calls, continue at a fixed flux until the base has frozen and "
                         "Phi_global < %g (FREEZE)" % FREEZE["phi_stop"])
    ap.add_argument("--out", default=None, help="JSON output (default: stdout)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # the package logger passes INFO on
        handler.setLevel(logging.WARNING)
    if args.prepare:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _tables import prepare

        paths = prepare(args.prepare)
        args.eos_dir = args.eos_dir or paths["eos_dir"]
        args.lookup_dir = args.lookup_dir or paths["lookup_dir"]
        args.melting_dir = args.melting_dir or paths["melting_dir"]
    if not (args.lookup_dir and args.melting_dir):
        ap.error("--lookup-dir and --melting-dir are required (or --prepare ROOT)")
    workdir = args.workdir or tempfile.mkdtemp(prefix="proteus_seq_")
    seq = Sequence(args.mode, args.backend, args.eos_dir, args.lookup_dir, args.melting_dir,
                   workdir, args.nodes, tsurf_init=args.tsurf, structure=args.structure,
                   freeze=args.freeze)
    rc = 0
    try:
        seq.run()
    except SequenceError as exc:
        print(f"FAILED at {exc}", file=sys.stderr)
        rc = 1
    text = json.dumps(_jsonable(seq.record), indent=1)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
