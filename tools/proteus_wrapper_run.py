#!/usr/bin/env python
"""Drive PROTEUS's own Aragog coupling wrapper through a PROTEUS-like coupled run.

For humans only (never in CI): the measurement behind docs/compat.md, "What PROTEUS
reads", with PROTEUS's real ``AragogRunner`` (FormingWorlds/PROTEUS,
``src/proteus/interior_energetics/aragog.py``) imported from a checkout of PROTEUS at run
time (nothing of PROTEUS is in this repository). Run it once with this package's
interpreter and once with an interpreter that has the upstream fwl-aragog, then compare
with ``tools/proteus_wrapper_compare.py``::

    export PROTEUS_SRC=/path/to/PROTEUS/src             # a checkout (e.g. commit 84b029b)
    export ARAGOG_PROTEUS_ROOT=/tmp/aragog_proteus      # scratch: fwl_data/, site/, work_*/
    pip install --target $ARAGOG_PROTEUS_ROOT/site attrs cattrs tomlkit   # proteus.config needs them
    .venv/bin/python tools/proteus_wrapper_run.py --out ours.json --calls 30 --dt-cap 8192
    /path/to/upstream/venv/bin/python tools/proteus_wrapper_run.py --out up.json --calls 30 --dt-cap 8192
    python tools/proteus_wrapper_compare.py ours.json up.json

The case (issue "Through the mush", case 1): SPIDER RTmelt tables (``../shared/data/
spider-RTmelt`` beside this repository, or ``$ARAGOG_RTMELT``), PROTEUS's defaults (80
levels, JAX backend, CVODE, energy-balance core, mass coordinates, radiogenic heating),
a fixed atmosphere flux of 1e4 W/m2, T_eqm 280 K, a 4000 K adiabatic start.

What is real PROTEUS code (imported from the checkout /tmp/proteus_src/src, unmodified):
  * proteus.config (attrs/cattrs schema + read_config_object) -> the Config object
  * proteus.interior_struct.dummy.solve_dummy_structure     -> R_int, R_core, M_core, g, ...
  * proteus.interior_energetics.wrapper.run_interior         -> the interior dispatcher
      -> AragogRunner(config, dirs, hf_row, hf_all, interior_o)   (setup_or_update_solver,
         setup_solver, update_structure, update_solver, JAX CVODE factory, entropy IC)
      -> AragogRunner.run_solver -> _solve_with_retry -> _build_helpfile_output
         -> _write_output_ncdf
      -> output copied into hf_row, update_rheology, step limiters, dt bookkeeping
  * proteus.utils.coupler.ZeroHelpfileRow / CreateHelpfileFromDict / ExtendHelpfile
      (ExtendHelpfile calls _populate_energy_residual on the running DataFrame)
  * proteus.interior_energetics.wrapper._rectangularize_spider_ps_file (table provisioning)

What is stubbed / replaced (and why) -- see STUBS below and the JSON 'harness' block:
  * the top-level package ``proteus`` (its __init__ imports the whole Proteus class with
    every module: janus, mors, calliope, zephyrus, juliacall ...): replaced by an empty
    package module whose __path__ is the checkout, so submodules import normally;
  * ``proteus.outgas.lavatmos`` (imports calliope.oxygen_fugacity; LavAtmos is an
    external code): minimal module with a ``run_vapourisation`` that raises;
  * ``proteus.utils.data`` (imports osfclient, an OSF/Zenodo download client): minimal
    module with ``GetFWLData`` (same definition: FWL_DATA path) and a no-op downloader;
  * ``proteus.interior_struct.zalmoxis`` (imports the zalmoxis package, not installed):
    ``generate_spider_tables`` returns None (what it returns for a non-PALEOS mantle EOS);
    other names raise ImportError so PROTEUS's own ImportError fallbacks are taken;
  * the time-step controller ``next_step`` (in proteus.interior_energetics.timestep and
    the name bound in proteus.interior_energetics.aragog): wrapped so that evolving calls
    (ic == 2) use the brief's schedule dt = dt0 * 2**k (capped); the real next_step is
    still called and its value recorded as ``dt_proteus_next_step``. With
    ``--windows proteus`` the wrapper returns the real value (PROTEUS's own windows);
  * a spy on AragogRunner._build_helpfile_output that calls the original unchanged and
    records its input SolverOutput status/dt_actual and its returned dict (raw, before
    run_interior's step limiters);
  * spies on the solver's ``solve``, ``get_state``, ``reset``, ``initialize`` and
    ``set_initial_entropy`` (CallTimer: each calls the original unchanged and adds its
    wall time).

Per call the record holds, besides the helpfile fields, ``wall_s`` (the whole
``run_interior`` call) and ``timing``: ``solve_s`` (inside the solver's ``solve()``, every
attempt of the wrapper's retry ladder), ``get_state_s`` (inside ``get_state()``),
``wrapper_s`` = ``total_s`` - both (PROTEUS's own work, with the solver's ``reset`` and
``initialize`` itemised in ``in_wrapper_s``), ``solve_attempts`` and per attempt its
window, times and status; ``process_cpu_s`` (the call's), ``solve_cpu_s`` and
``get_state_cpu_s`` (all threads: beside the wall time, how many cores a call kept busy)
and ``loadavg_1min`` (before, after: whether other processes shared the machine; they
move wall and CPU times alike, a multi-threaded solve's by up to 2x on 2 cores);
``window_yr`` the window first asked, ``Phi_in`` the global melt fraction the call
starts from. tools/proteus_wrapper_compare.py
prints them side by side (issue 37, item 5). PROTEUS's own windows, as a PROTEUS run
would take them::

    .venv/bin/python tools/proteus_wrapper_run.py --out ours.json --calls 8 --windows proteus
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
import types
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(os.environ.get("ARAGOG_PROTEUS_ROOT", "/tmp/aragog_proteus"))  # scratch folder
PROTEUS_SRC = Path(os.environ.get("PROTEUS_SRC", "/tmp/proteus_src/src"))
RTMELT = Path(os.environ.get("ARAGOG_RTMELT", REPO.parent / "shared" / "data" / "spider-RTmelt"))
COMPAT = REPO / "tests" / "compat"  # helpers (_tables.py: melting curves from the table set)
FWL_DATA = HERE / "fwl_data"
MELTING_NAME = "RTmelt-PS"  # interior_struct.melting_dir (folder in FWL_DATA)
LEGACY_LOOKUP = FWL_DATA / "interior_lookup_tables" / "1TPa-dK09-elec-free" / "MgSiO3_Wolf_Bower_2018_1TPa"
MELTING_DIR = FWL_DATA / "interior_lookup_tables" / "Melting_curves" / MELTING_NAME

PS_PHASE_FILES = (
    "temperature_melt.dat", "temperature_solid.dat", "density_melt.dat", "density_solid.dat",
    "heat_capacity_melt.dat", "heat_capacity_solid.dat", "adiabat_temp_grad_melt.dat",
    "adiabat_temp_grad_solid.dat", "thermal_exp_melt.dat", "thermal_exp_solid.dat",
)
PS_MELT_FILES = ("solidus_P-S.dat", "liquidus_P-S.dat")

# Fixed atmosphere: F_atm and T_eqm (the "atmosphere module" of this harness)
F_ATM = 1.0e4
T_EQM = 280.0

RECORD_FIELDS = (
    "T_magma", "T_cmb", "T_pot", "Phi_global", "Phi_global_vol", "F_cmb", "F_int", "F_atm", "F_radio",
    "F_tidal", "RF_depth", "E_th_mantle", "Cp_eff", "M_mantle", "M_mantle_liquid", "M_mantle_solid",
    "M_core", "E_state_J", "E_state_cons_J", "Q_radio_W", "Q_tidal_W",
    "step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J",
    "step_dE_Q_radio_cons_J", "step_dE_Q_tidal_cons_J", "step_solver_residual_J",
    "step_dE_compression_J", "step_dE_state_heat_J",
    "E_state_heat_cons_J", "dE_predicted_cons_J", "E_residual_cons_J", "E_residual_cons_frac",
    "solver_residual_J", "R_int", "R_core", "gravity", "core_density",
)

CONFIG_TOML = f"""
# PROTEUS config for the harness: schema defaults except where the brief fixes a value.
config_version = "3.0"

[params.out]
    path = "auto"
    logging = "INFO"

[star]
    module = "dummy"
    [star.dummy]
        radius = 1.0

[orbit]
    module = "dummy"        # no tides: interior_energetics.heat_tidal = false

[planet]
    mass_tot = 1.0
    temperature_mode = "adiabatic"   # surface-anchored IC at tsurf_init (liquidus_super needs Zalmoxis)
    tsurf_init = 4000.0
    volatile_mode = "elements"
    [planet.elements]
        O_mode = "ic_chemistry"
        H_mode = "ppmw"
        H_budget = 0.0

[interior_struct]
    module = "dummy"
    melting_dir = "{MELTING_NAME}"   # P-T melting curves derived from the RTmelt P-S boundaries

[interior_energetics]
    module = "aragog"
    num_levels = 80
    surface_bc_mode = "flux"
    heat_radiogenic = true
    heat_tidal = false
    flux_guess = {F_ATM}
    [interior_energetics.aragog]
        backend = "jax"
        solver_method = "cvode"
        core_bc = "energy_balance"
        mass_coordinates = true

[outgas]
    module = "dummy"

[atmos_clim]
    module = "dummy"
    surf_state = "fixed"
    rayleigh = false

[escape]
    module = "dummy"

[atmos_chem]
    module = "dummy"
    when = "offline"
"""


# ---------------------------------------------------------------------------------------
# JSON helpers
# ---------------------------------------------------------------------------------------
def jsonable(x):
    """``x`` as JSON-able values: the compat sequence's converter (tests/compat), which
    imports only the upstream's names, so it serves under either interpreter."""
    if str(COMPAT) not in sys.path:
        sys.path.insert(0, str(COMPAT))
    from proteus_sequence import _jsonable

    return _jsonable(x)


class CallTimeout(Exception):
    pass


class Capture(logging.Handler):
    """Collect WARNING+ records (PROTEUS 'fwl.*' and aragog loggers) per coupled call."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        try:
            self.records.append(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception as exc:  # pragma: no cover
            self.records.append(f"<unformattable log record: {exc!r}>")

    def take(self):
        out, self.records = self.records, []
        return out


# ---------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------
def prepare_fwl_data(record):
    """FWL_DATA tree: the shipped-EOS folder (PROTEUS's LOOK_UP_DIR when eos_dir is None) holding
    the RTmelt P-S files (as Zenodo 19473625 does), and the P-T melting curves folder."""
    LEGACY_LOOKUP.mkdir(parents=True, exist_ok=True)
    for f in PS_PHASE_FILES + PS_MELT_FILES:
        dst = LEGACY_LOOKUP / f
        if not dst.exists():
            dst.symlink_to(RTMELT / f)
    if not ((MELTING_DIR / "solidus_P-T.dat").is_file() and (MELTING_DIR / "liquidus_P-T.dat").is_file()):
        # tests/compat/_tables.py: T_sol(P) = T(P, S_sol(P)), T_liq(P) = T(P, S_liq(P))
        sys.path.insert(0, str(COMPAT))
        from _tables import melting_from_table_set

        tmp = MELTING_DIR.with_name(MELTING_NAME + ".tmp")
        melting_from_table_set(str(RTMELT), tmp)
        tmp.rename(MELTING_DIR)
        record["harness"]["melting_curves_made_by"] = sys.executable
    record["harness"]["melting_dir"] = str(MELTING_DIR)


def provide_spider_eos(outdir, dirs, W):
    """outdir/data/spider_eos as PROTEUS's _provide_spider_eos_tables (Case 2) fills it:
    the 10 phase files through _rectangularize_spider_ps_file, the 2 P-S melting curves
    copied. (Its melting_dir override of the P-S curves is NOT applied: the RTmelt P-S
    boundaries are kept verbatim.)"""
    target = Path(outdir) / "data" / "spider_eos"
    target.mkdir(parents=True, exist_ok=True)
    for f in PS_PHASE_FILES:
        if not (target / f).is_file():
            W._rectangularize_spider_ps_file(str(RTMELT / f), str(target / f))
    for f in PS_MELT_FILES:
        if not (target / f).is_file():
            shutil.copy2(RTMELT / f, target / f)
    dirs["spider_eos_dir"] = str(target)
    dirs["spider_solidus_ps"] = str(target / "solidus_P-S.dat")
    dirs["spider_liquidus_ps"] = str(target / "liquidus_P-S.dat")


# ---------------------------------------------------------------------------------------
# PROTEUS import with stubs
# ---------------------------------------------------------------------------------------
def import_proteus(record):
    stubs = record["harness"]["stubs"]
    sys.path.insert(0, str(PROTEUS_SRC))
    site = HERE / "site"  # attrs / cattrs / tomlkit for proteus.config (appended: never shadows)
    if site.is_dir():
        sys.path.append(str(site))

    pkg = types.ModuleType("proteus")
    pkg.__path__ = [str(PROTEUS_SRC / "proteus")]
    pkg.__file__ = str(PROTEUS_SRC / "proteus" / "__init__.py")
    pkg.__version__ = "0.0.0+harness"
    sys.modules["proteus"] = pkg
    stubs.append("proteus (package __init__: imports Proteus and every coupled module)")

    lav = types.ModuleType("proteus.outgas.lavatmos")

    def run_vapourisation(*a, **k):
        raise RuntimeError("harness stub: LavAtmos vapourisation is not available")

    lav.run_vapourisation = run_vapourisation
    sys.modules["proteus.outgas.lavatmos"] = lav
    stubs.append("proteus.outgas.lavatmos (needs calliope + LavAtmos)")

    fwl = Path(os.environ["FWL_DATA"])
    try:  # an installed PROTEUS has its data module's own dependencies
        data = importlib.import_module("proteus.utils.data")
    except ImportError:
        data = types.ModuleType("proteus.utils.data")

    def GetFWLData():
        return Path(fwl).absolute()

    def download_sufficient_data(*a, **k):
        return None

    data.GetFWLData = GetFWLData
    data.download_sufficient_data = download_sufficient_data
    data.FWL_DATA_DIR = fwl
    sys.modules["proteus.utils.data"] = data
    stubs.append("proteus.utils.data: GetFWLData -> FWL_DATA, no downloads (the module itself where importable)")

    zal = types.ModuleType("proteus.interior_struct.zalmoxis")

    def generate_spider_tables(config, outdir):
        return None  # what PROTEUS returns for a non-PALEOS mantle EOS

    def __getattr__(name):
        raise ImportError(f"harness stub: proteus.interior_struct.zalmoxis.{name} (zalmoxis not installed)")

    zal.generate_spider_tables = generate_spider_tables
    zal.__getattr__ = __getattr__
    sys.modules["proteus.interior_struct.zalmoxis"] = zal
    stubs.append("proteus.interior_struct.zalmoxis (needs the zalmoxis package; "
                 "generate_spider_tables -> None, other names -> ImportError)")

    import proteus.config as C
    import proteus.interior_energetics.aragog as A
    import proteus.interior_energetics.timestep as TS
    import proteus.interior_energetics.wrapper as W
    import proteus.interior_struct.dummy as D
    import proteus.utils.coupler as CP
    from proteus.interior_energetics.common import Interior_t

    if hasattr(A, "require_cvode") and importlib.util.find_spec("aragog.solver.backends") is not None:
        # PROTEUS >= 26.10 checks that scikits_odes_sundials imports before it builds a
        # "cvode" solver; this package brings its own CVODE binding and never imports it.
        original = A.require_cvode

        def require_cvode(config):
            try:
                return original(config)
            except ImportError:
                return None

        A.require_cvode = require_cvode
        stubs.append("require_cvode: scikits_odes_sundials not required (this package's own CVODE)")

    return types.SimpleNamespace(C=C, A=A, TS=TS, W=W, D=D, CP=CP, Interior_t=Interior_t)


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------
def upstream_parameters(solver) -> dict | str:
    """The wrapper's ``aragog.parser.Parameters`` as {section: {field: value}} (values as
    text), to compare what two PROTEUS versions set."""
    import dataclasses

    try:
        params = solver.parameters
        return {f.name: ({g.name: repr(getattr(section, g.name)) for g in dataclasses.fields(section)}
                         if dataclasses.is_dataclass(section) else repr(section))
                for f in dataclasses.fields(params) for section in [getattr(params, f.name)]}
    except Exception as exc:  # noqa: BLE001 - a diagnostic
        return f"unavailable: {type(exc).__name__}: {exc}"


def first_last_state(solver) -> list | None:
    """The solver's first and last state of the call, [S_0..S_N-1, dS/dr_cmb] each (the
    upstream layout), to compare the two codes' trajectories call by call."""
    import numpy as np

    sol = getattr(solver, "solution", None)
    if sol is None or np.size(sol.t) < 1:
        return None
    y = np.asarray(sol.y, dtype=float)
    return [y[:, 0].tolist(), y[:, -1].tolist()]


def reference_last_state(solver, rtol: float) -> list | str | None:
    """The call's last state by an independent integration of the same initial-value
    problem: scipy's BDF at ``rtol`` (atol 1e-6 rtol in each component) on the upstream's
    own right-hand side ``solver.dSdt(t [yr], y)``, from the call's first state over its
    time window. Only under the upstream (this package has no ``dSdt``); since the two
    right-hand sides agree (tests/compat), it is the reference for both codes' end states."""
    import numpy as np
    from scipy.integrate import solve_ivp

    sol = getattr(solver, "solution", None)
    if sol is None or not hasattr(solver, "dSdt") or np.size(sol.t) < 2:
        return None
    y0 = np.asarray(sol.y[:, 0], dtype=float)
    t0, t1 = float(sol.t[0]), float(sol.t[-1])
    atol = 1e-6 * rtol * np.maximum(np.abs(y0), 1e-300)
    ref = solve_ivp(lambda t, y: solver.dSdt(t, y), (t0, t1), y0, method="BDF", rtol=rtol, atol=atol)
    return ref.y[:, -1].tolist() if ref.status == 0 else f"scipy BDF: {ref.message}"


def core_energy_flux(solver, out) -> float | None:
    """The call's mean CMB heat flux [W/m2] from the core's energy change between the
    solver's first and last state of the call (energy-balance core, upstream state layout
    [S_0..S_N-1, dS/dr_cmb]): -M_c c_c f ∫ T/c_p dS_b0 at the CMB pressure over A dt, with
    the solver's own EOS (its ``entropy_eos.temperature`` and ``.heat_capacity``). The
    flux the integration used, averaged exactly; the reported F_cmb of either code can be
    checked against it. ``None`` when the solver does not expose what it needs."""
    import numpy as np

    try:
        sol = solver.solution
        dt = float(out["dt_actual"]) * 31_557_600.0 if out else 0.0
        if sol is None or np.size(sol.t) < 2 or not dt > 0.0:
            return None
        n = int(solver._n_stag)
        r_b0 = float(solver._r_basic_flat[0])
        r_stag = getattr(solver, "_r_stag_flat", None)
        r_s0 = float(r_stag[0]) if r_stag is not None else float(np.asarray(solver.evaluator.mesh.r_stag)[0])
        P_b = getattr(solver, "_P_basic_flat", None)
        P0 = float(P_b[0]) if P_b is not None else float(np.asarray(solver.evaluator.mesh.P_basic)[0])
        y0, y1 = np.asarray(sol.y[:, 0], dtype=float), np.asarray(sol.y[:, -1], dtype=float)
        S0, S1 = (y[0] + y[n] * (r_b0 - r_s0) for y in (y0, y1))
        x, w = np.polynomial.legendre.leggauss(8)
        edges = np.linspace(S0, S1, 33)
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            s = 0.5 * (b - a) * x + 0.5 * (a + b)
            P = np.full(s.shape, P0)
            T = np.asarray(solver.entropy_eos.temperature(P, s), dtype=float)
            cp = np.asarray(solver.entropy_eos.heat_capacity(P, s), dtype=float)
            total += 0.5 * (b - a) * float(np.sum(w * T / cp))
        bc = solver.parameters.boundary_conditions
        M_c = float(solver._core_M)
        return -M_c * float(bc.core_heat_capacity) * float(getattr(bc, "tfac_core_avg", 1.147)) * total / (
            4.0 * math.pi * r_b0 ** 2 * dt)
    except Exception as exc:  # noqa: BLE001 - a diagnostic: report, never stop the run
        return f"unavailable: {type(exc).__name__}: {exc}"


SPIED_METHODS = ("solve", "get_state", "reset", "initialize", "set_initial_entropy")


class CallTimer:
    """Wall time inside the solver's methods as PROTEUS's wrapper calls them, per coupled call.

    The wrapper (``AragogRunner._solve_with_retry``) calls ``solver.solve()`` then
    ``solver.get_state()`` once per attempt of its retry ladder, on the object it built as
    ``aragog.solver.EntropySolver(Parameters, EntropyEOS)``: the upstream's
    ``aragog.solver.entropy_solver.EntropySolver``, or this package's upstream-interface
    adapter (``aragog._compat.solver.UpstreamEntropySolver``, which the parameters name and
    which holds a native ``EntropySolver``). Each class of the solver's MRO that defines one
    of ``SPIED_METHODS`` gets a spy that calls the original unchanged (same arguments, same
    return value, same exception) and adds its wall time; a spied method called from inside
    another (the adapter's ``solve`` calling the native solver's, a ``get_state`` inside
    ``solve``) counts once, in the outer one. ``reset``, ``initialize`` and ``set_initial_entropy`` are the wrapper's own work
    (``wrapper_s``), itemised beside it."""

    def __init__(self):
        self.depth = 0
        self.patched: list[str] = []
        self.begin()

    def begin(self):
        self.seconds = {m: 0.0 for m in SPIED_METHODS}
        self.cpu = {m: 0.0 for m in SPIED_METHODS}  # this process's CPU time, all threads
        self.counts = {m: 0 for m in SPIED_METHODS}
        self.attempts: list[dict] = []
        self.classes: set[str] = set()

    def cover(self, cls) -> None:
        """Spy on every method of ``SPIED_METHODS`` that a class of ``cls.__mro__`` defines."""
        for klass in cls.__mro__:
            if klass is object:
                continue
            for name in SPIED_METHODS:
                fn = klass.__dict__.get(name)
                if (fn is None or not callable(fn) or isinstance(fn, (staticmethod, classmethod))
                        or getattr(fn, "_harness_spy", False)):
                    continue
                setattr(klass, name, self._spy(name, fn))
                self.patched.append(f"{klass.__module__}.{klass.__qualname__}.{name}")

    def _spy(self, name, fn):
        timer = self

        @functools.wraps(fn)
        def spy(obj, *args, **kwargs):
            if timer.depth:
                return fn(obj, *args, **kwargs)
            window = None
            if name == "solve":
                try:
                    sp = obj.parameters.solver
                    window = [float(sp.start_time), float(sp.end_time)]
                except Exception:  # noqa: BLE001 - a diagnostic
                    pass
            ret = None
            timer.depth += 1
            c0 = time.process_time()
            t0 = time.perf_counter()
            try:
                ret = fn(obj, *args, **kwargs)
                return ret
            finally:
                dt = time.perf_counter() - t0
                timer.depth -= 1
                timer.seconds[name] += dt
                timer.cpu[name] += time.process_time() - c0
                timer.counts[name] += 1
                timer.classes.add(f"{type(obj).__module__}.{type(obj).__qualname__}")
                if name == "solve":
                    timer.attempts.append({"t_start": window[0] if window else None,
                                           "t_end": window[1] if window else None, "solve_s": dt})
                elif name == "get_state" and timer.attempts and "get_state_s" not in timer.attempts[-1]:
                    timer.attempts[-1]["get_state_s"] = dt
                    timer.attempts[-1]["status"] = getattr(ret, "status", None)

        spy._harness_spy = True
        return spy

    def report(self, total_s: float) -> dict:
        """The call's split: ``solve_s`` and ``get_state_s`` inside the solver, ``wrapper_s``
        the rest of ``run_interior`` (PROTEUS's own work: structure and solver updates,
        ``reset``, the helpfile row, the NetCDF file, step limiters)."""
        solve, state = self.seconds["solve"], self.seconds["get_state"]
        return {"total_s": total_s, "solve_s": solve, "get_state_s": state,
                "wrapper_s": total_s - solve - state, "solve_attempts": self.counts["solve"],
                "get_state_calls": self.counts["get_state"],
                "solve_cpu_s": self.cpu["solve"], "get_state_cpu_s": self.cpu["get_state"],
                "in_wrapper_s": {m: self.seconds[m] for m in SPIED_METHODS[2:]},
                "in_wrapper_calls": {m: self.counts[m] for m in SPIED_METHODS[2:]},
                "attempts": self.attempts, "solver_classes": sorted(self.classes)}


def solver_classes(A) -> list:
    """The classes PROTEUS's wrapper module may build its solver as: its ``EntropySolver``
    and, for parameter classes that name the class serving them (this package's
    ``aragog.parser.Parameters.aragog_solver_class()``), that class."""
    found = [A.EntropySolver]
    for obj in list(vars(A).values()):
        serving = getattr(obj, "aragog_solver_class", None) if isinstance(obj, type) else None
        if callable(serving):
            try:
                cls = serving()
            except Exception:  # noqa: BLE001 - the spies then cover it at the first call
                continue
            if isinstance(cls, type) and cls not in found:
                found.append(cls)
    return found


def proteus_checkout() -> dict:
    """Which PROTEUS this run imports: its source folder and, when that is a git checkout,
    the commit. Two runs compare only on the same PROTEUS: its defaults (tolerances, grain
    size, separation model, table layout) decide the case."""
    try:
        done = subprocess.run(["git", "-C", str(PROTEUS_SRC), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        commit = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        commit = None
    return {"src": str(PROTEUS_SRC), "commit": commit}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, default=12, help="evolving (ic=2) coupled calls")
    ap.add_argument("--dt0", type=float, default=1.0, help="first evolving dt [yr] (PROTEUS: 1 yr while Time < 2)")
    ap.add_argument("--dt-cap", type=float, default=1.0e4)
    ap.add_argument("--windows", choices=("doubling", "proteus"), default="doubling",
                    help="evolving calls' windows: dt0*2**k capped at --dt-cap (doubling), or the value "
                         "PROTEUS's own next_step returns (proteus; --dt0 and --dt-cap unused)")
    ap.add_argument("--call-timeout", type=float, default=900.0, help="wall limit of one call [s]")
    ap.add_argument("--budget", type=float, default=3300.0, help="stop starting calls after this wall [s]")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--initial-entropy", type=float, default=None,
                    help="S [J/kg/K] that PROTEUS's compute_initial_entropy returns (the same start "
                         "under both interpreters; default: PROTEUS's own inversion)")
    ap.add_argument("--rtol", type=float, default=None, help="interior_energetics.rtol (PROTEUS default: 1e-6)")
    ap.add_argument("--atol", type=float, default=None,
                    help="interior_energetics.aragog.atol_temperature_equivalent [K] (PROTEUS default: 0.01)")
    ap.add_argument("--reference-rtol", type=float, default=None,
                    help="under the upstream: each call also integrated by scipy BDF at this rtol on the "
                         "upstream's own right-hand side (reference_last)")
    ap.add_argument("--mantle-eos", default=None,
                    help='interior_struct.zalmoxis.mantle_eos (PROTEUS >= 26.10, whose default is PALEOS; '
                         '"WolfBower2018:MgSiO3" for the RTmelt tables of this run)')
    ap.add_argument("--radius-mesh", action="store_true",
                    help="interior_energetics.aragog.mass_coordinates = false (PROTEUS's default: true)")
    args = ap.parse_args(argv)

    os.environ["FWL_DATA"] = str(FWL_DATA)  # the harness FWL_DATA tree (fwl_data/)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    out_path = Path(args.out)
    tag = out_path.stem
    outdir = Path(args.workdir or (HERE / f"work_{tag}"))
    if outdir.exists():
        shutil.rmtree(outdir)
    (outdir / "data").mkdir(parents=True)

    record = {
        "interpreter": sys.executable,
        "argv": sys.argv,
        "proteus": proteus_checkout(),
        "harness": {"stubs": [], "F_atm": F_ATM, "T_eqm": T_EQM, "dt0": args.dt0, "dt_cap": args.dt_cap,
                    "windows": args.windows, "cpu_count": os.cpu_count(),
                    "outdir": str(outdir), "FWL_DATA": os.environ["FWL_DATA"]},
        "calls": [],
        "setup": {},
        "stopped": None,
    }
    t_run0 = time.perf_counter()

    def dump():
        record["total_wall_s"] = time.perf_counter() - t_run0
        tmp = out_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(jsonable(record), indent=1))
        tmp.replace(out_path)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        filename=str(outdir / "harness.log"))
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    logging.getLogger().addHandler(console)
    cap = Capture()
    logging.getLogger().addHandler(cap)
    warnings.simplefilter("default")
    pywarn = []
    _orig_showwarning = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        pywarn.append(f"{category.__name__}: {message} ({os.path.basename(filename)}:{lineno})")
        _orig_showwarning(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning

    stage = "import"
    try:
        prepare_fwl_data(record)
        P = import_proteus(record)
        import aragog
        import numpy as np

        record["aragog_file"] = aragog.__file__
        record["aragog_version"] = str(getattr(aragog, "__version__", None))
        try:
            import jax

            record["jax"] = {"version": jax.__version__, "backend": jax.default_backend(),
                             "x64": bool(jax.config.jax_enable_x64)}
        except Exception as exc:
            record["jax"] = repr(exc)

        stage = "config"
        cfg_path = outdir / "harness.toml"
        text = CONFIG_TOML if not args.radius_mesh else CONFIG_TOML.replace(
            "mass_coordinates = true", "mass_coordinates = false")
        if args.mantle_eos is not None:
            text = text.replace("    melting_dir = ", f"    zalmoxis.mantle_eos = {args.mantle_eos!r}\n    melting_dir = ")
        if args.rtol is not None:
            text = text.replace("    num_levels = 80\n", f"    num_levels = 80\n    rtol = {args.rtol!r}\n")
        if args.atol is not None:
            text = text.replace("        core_bc = ", f"        atol_temperature_equivalent = {args.atol!r}\n        core_bc = ")
        cfg_path.write_text(text)
        config = P.C.read_config_object(cfg_path)
        ie = config.interior_energetics
        record["config"] = {
            "num_levels": ie.num_levels, "rtol": ie.rtol, "atol_temperature_equivalent": ie.aragog.atol_temperature_equivalent,
            "backend": ie.aragog.backend, "solver_method": ie.aragog.solver_method, "core_bc": ie.aragog.core_bc,
            "mass_coordinates": ie.aragog.mass_coordinates, "heat_radiogenic": ie.heat_radiogenic,
            "heat_tidal": ie.heat_tidal, "surface_bc_mode": ie.surface_bc_mode, "flux_guess": ie.flux_guess,
            "tsurf_init": config.planet.tsurf_init, "temperature_mode": config.planet.temperature_mode,
            "ini_dsdr": config.planet.ini_dsdr, "struct_module": config.interior_struct.module,
            "core_frac": config.interior_struct.core_frac, "core_frac_mode": config.interior_struct.core_frac_mode,
            "melting_dir": config.interior_struct.melting_dir, "eos_dir": config.interior_struct.eos_dir,
            "radio": [ie.radio_K, ie.radio_U, ie.radio_Th, ie.radio_Al, ie.radio_Fe, ie.radio_tref],
            "age_ini": config.star.age_ini, "tmagma_atol": ie.tmagma_atol, "tmagma_rtol": ie.tmagma_rtol,
            "dt_initial": config.params.dt.initial, "dt_method": config.params.dt.method,
        }

        # ----- time-step schedule (wraps the real controller) -----
        real_next_step = P.TS.next_step
        sched = {"k": 0, "last_real": None, "returned": []}

        def next_step(config_, dirs_, hf_row_, hf_all_, step_sf, interior_o=None):
            real = real_next_step(config_, dirs_, hf_row_, hf_all_, step_sf, interior_o=interior_o)
            sched["last_real"] = float(real)
            if args.windows == "doubling" and interior_o is not None and interior_o.ic == 2:
                real = min(args.dt0 * 2.0 ** sched["k"], args.dt_cap) * step_sf
            sched["returned"].append(float(real))
            return real

        P.TS.next_step = next_step
        P.A.next_step = next_step
        if args.initial_entropy is not None:
            import proteus.interior_energetics.common as common

            common.compute_initial_entropy = lambda *a, **k: float(args.initial_entropy)
            record["harness"]["stubs"].append(f"compute_initial_entropy -> {args.initial_entropy!r}")
        record["harness"]["stubs"].append(
            "next_step wrapped: ic==2 -> dt0*2**k (capped); real value recorded"
            if args.windows == "doubling" else "next_step wrapped: returns the real value (--windows proteus)")

        # ----- spies on the solver's methods the wrapper calls (call the originals unchanged) -----
        timer = CallTimer()
        for cls in solver_classes(P.A):
            timer.cover(cls)
        record["harness"]["spied"] = timer.patched  # grows if a call builds another class
        record["harness"]["stubs"].append("spies on the solver's solve/get_state/reset/initialize/"
                                          "set_initial_entropy (time them, call the originals)")

        # ----- spy on _build_helpfile_output (calls the original unchanged) -----
        orig_build = P.A.AragogRunner.__dict__["_build_helpfile_output"].__func__
        spy = {"out": None, "ret": None}

        def _build_spy(out, hf_row, *args, **kwargs):  # whatever this PROTEUS passes
            ret = orig_build(out, hf_row, *args, **kwargs)
            spy["out"] = {"status": getattr(out, "status", None), "dt_actual": getattr(out, "dt_actual", None),
                          "T_core": getattr(out, "T_core", None)}
            spy["ret"] = dict(ret)
            return ret

        P.A.AragogRunner._build_helpfile_output = staticmethod(_build_spy)
        record["harness"]["stubs"].append("spy on AragogRunner._build_helpfile_output (records, calls original)")

        # ----- structure + initial helpfile row, as Proteus.start() -----
        stage = "structure"
        dirs = {"output": str(outdir), "spider": None}
        provide_spider_eos(outdir, dirs, P.W)
        hf_row = P.CP.ZeroHelpfileRow()
        hf_row["Time"] = 0.0
        hf_row["age_star"] = config.star.age_ini * 1e9
        hf_row["F_atm"] = F_ATM  # flux_guess >= 0
        hf_row["F_int"] = hf_row["F_atm"]
        hf_row["T_eqm"] = T_EQM
        P.D.solve_dummy_structure(config, hf_row, str(outdir), num_spider_nodes=0)
        hf_row["M_mantle"] = hf_row["M_int"] - hf_row["M_core"]
        record["setup"]["hf_row0"] = {k: hf_row[k] for k in ("R_int", "R_core", "M_int", "M_core", "gravity",
                                                              "core_density", "core_heatcap", "M_mantle")}
        record["setup"]["dirs"] = dict(dirs)

        interior_o = P.Interior_t(P.W.get_nlevb(config), spider_dir=None, eos_dir=config.interior_struct.eos_dir)
        interior_o.ic = 1
        hf_all = None
        loops_total, init_loops = 0, 3  # Proteus.loops['init_loops'] = 3
        init_stage = True
        n_evolving = 0
        dump()

        def on_alarm(signum, frame):
            raise CallTimeout(f"call exceeded {args.call_timeout:.0f} s wall")

        signal.signal(signal.SIGALRM, on_alarm)

        while True:
            if loops_total > 0:
                hf_row = hf_all.iloc[-1].to_dict()
            # "atmosphere" of this harness: fixed flux and T_eqm
            hf_row["F_atm"] = F_ATM
            hf_row["T_eqm"] = T_EQM
            ic_in = interior_o.ic
            if ic_in == 2 and n_evolving >= args.calls:
                record["stopped"] = f"done: {n_evolving} evolving calls"
                break
            if time.perf_counter() - t_run0 > args.budget:
                record["stopped"] = f"budget {args.budget:.0f} s exhausted before call {loops_total + 1}"
                break
            stage = f"call {loops_total + 1}"
            rec = {"call": loops_total + 1, "ic": ic_in, "Time_in": hf_row["Time"],
                   "Phi_in": hf_row.get("Phi_global") if loops_total > 0 else None}
            spy["out"] = spy["ret"] = None
            sched["returned"] = []
            if interior_o.aragog_solver is not None:
                timer.cover(type(interior_o.aragog_solver))
            timer.begin()
            cap.take()
            pywarn.clear()
            load_in = os.getloadavg()[0]
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            exc_info = None
            signal.setitimer(signal.ITIMER_REAL, args.call_timeout)
            try:
                P.W.run_interior(dirs, config, hf_all, hf_row, interior_o, atmos_o=None, write_data=True)
            except CallTimeout as exc:
                exc_info = exc
            except Exception as exc:
                exc_info = exc
                rec["traceback"] = traceback.format_exc()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            rec["wall_s"] = time.perf_counter() - t0
            rec["timing"] = timer.report(rec["wall_s"])
            # this process's CPU time over the call (all threads), and the 1-min load average
            # before and after it (other processes on the machine inflate the call's times)
            rec["timing"]["process_cpu_s"] = time.process_time() - cpu0
            rec["timing"]["loadavg_1min"] = [load_in, os.getloadavg()[0]]
            solver = interior_o.aragog_solver
            if solver is not None:
                try:
                    rec["t_start"] = float(solver.parameters.solver.start_time)
                    rec["t_end"] = float(solver.parameters.solver.end_time)
                except Exception as e:
                    rec["t_window_error"] = repr(e)
                rec["jax_factory_calls"] = getattr(solver, "_jax_factory_call_count", None)
                if "upstream_parameters" not in record["setup"]:  # what the wrapper set, once
                    record["setup"]["upstream_parameters"] = upstream_parameters(solver)
            rec["dt_proteus_next_step"] = sched["last_real"]
            rec["dt_next_step_returned"] = list(sched["returned"])
            attempts = rec["timing"]["attempts"]
            if attempts and attempts[0]["t_start"] is not None:
                rec["window_yr"] = attempts[0]["t_end"] - attempts[0]["t_start"]  # as first asked
            rec["solver_out"] = spy["out"]
            if solver is not None:
                rec["F_cmb_core_energy"] = core_energy_flux(solver, spy["out"])
                rec["state_first_last"] = first_last_state(solver)
                if args.reference_rtol is not None:
                    rec["reference_last"] = reference_last_state(solver, args.reference_rtol)
            rec["raw_output"] = {k: spy["ret"].get(k) for k in RECORD_FIELDS if k in spy["ret"]} if spy["ret"] else None
            if exc_info is not None:
                rec["exception"] = f"{type(exc_info).__name__}: {exc_info}"
                rec["warnings"] = cap.take() + pywarn[:]
                record["calls"].append(rec)
                record["stopped"] = f"exception in call {loops_total + 1}: {rec['exception']}"
                dump()
                break

            rec["interior_dt"] = interior_o.dt
            # Proteus main loop: advance time, loop counters, init stage, helpfile
            hf_row["Time"] += interior_o.dt
            hf_row["age_star"] += interior_o.dt
            hf_row["T_surf"] = hf_row["T_magma"]  # dummy atmosphere with surf_state = fixed
            hf_row["runtime"] = time.perf_counter() - t_run0
            loops_total += 1
            if loops_total > init_loops:
                init_stage = False
            if init_stage:
                hf_row["Time"] = 0.0
            else:
                interior_o.ic = 2
            if loops_total > 1:
                hf_all = P.CP.ExtendHelpfile(hf_all, hf_row)
            else:
                hf_all = P.CP.CreateHelpfileFromDict(hf_row)
            row = hf_all.iloc[-1].to_dict()
            rec["Time"] = row["Time"]
            rec["dt"] = interior_o.dt
            for k in RECORD_FIELDS:
                rec[k] = row.get(k)
            rec["warnings"] = cap.take() + pywarn[:]
            record["calls"].append(rec)
            if ic_in == 2:
                n_evolving += 1
                sched["k"] += 1
            dump()
            tm = rec["timing"]
            print(f"[{tag}] call {loops_total} ic={ic_in} t={rec['Time']:.4g} dt={rec['dt']:.4g} "
                  f"T_magma={rec['T_magma']:.2f} T_cmb={rec['T_cmb']:.2f} Phi={rec['Phi_global']:.5f} "
                  f"res_frac={rec['E_residual_cons_frac']:.3e} wall={rec['wall_s']:.1f}s "
                  f"(solve {tm['solve_s']:.2f} s in {tm['solve_attempts']}, get_state {tm['get_state_s']:.2f} s, "
                  f"wrapper {tm['wrapper_s']:.2f} s)",
                  flush=True)
            if rec["wall_s"] > args.call_timeout:
                record["stopped"] = f"call {loops_total} took {rec['wall_s']:.0f} s > {args.call_timeout:.0f} s"
                break
        if hf_all is not None:
            hf_all.to_csv(outdir / "runtime_helpfile.csv", sep="\t", index=False)
        record["ok"] = True
    except Exception as exc:
        record["ok"] = False
        record["error"] = {"stage": stage, "type": type(exc).__name__, "message": str(exc),
                           "traceback": traceback.format_exc()}
        print(f"FAILED at {stage}: {type(exc).__name__}: {exc}", file=sys.stderr)
    dump()
    return 0 if record.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
