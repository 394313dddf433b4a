"""``EntropySolver``: the public solver object (docs/design.md "Public interface").

One object serves a whole planet evolution: :meth:`EntropySolver.solve` may be called
10²–10⁴ times with inputs changed in between (``solver.parameters.…`` then
:meth:`~EntropySolver.reset`). The compiled right-hand side and Jacobian — one fused
:class:`~aragog.programs.JitPair` (``solver.compile_mode = "fused"``) or the
separately compiled blocks of :class:`~aragog.programs.BlockPrograms` ("blocks") —
are keyed on :func:`~aragog.solver._from_config.static_key` and the mode only, so a reset that
changes values — fluxes, times, radii, tables of the same shape — reuses them: no trace,
no compile; and another solver of the same process with the same key shares them
(:mod:`aragog.programs._shared`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from aragog._jax import in_float64
from aragog.eos._host import entropy_of_temperature
from aragog.errors import AragogError, ConfigError
from aragog.solver.backends import (METHODS, compiled_newton_runs as _compiled_newton_runs, integrate,
                                    refuse_a_named_library)
from aragog.solver._budget import EnergyBook, needs_step_trace
from aragog.solver._from_config import Derived, DerivedInputs, derive
from aragog.solver._output_times import output_times
from aragog.solver._tolerances import absolute_tolerances
from aragog.programs._counters import ProgramStats, compile_stats, log_new_compiles, solver_stats
from aragog.programs._disk_cache import configure_compilation_cache, programs_in_cache
from aragog.programs._shared import block_programs, shared_programs, store_key
from aragog.programs._jitpair import JitPair
from aragog.solver._fused_programs import fused_programs
from aragog.solver._output import SolverOutput
from aragog.solver._problems import NoJacobian, ProgressProbe, SolveProgress, WallClockLimit
from aragog.solver._history import run_history
from aragog.solver._records import SolveRecords
from aragog.solver._results import LastSolve, history_rows, join_state, output_fields, split_state, state_key
from aragog.solver._step_caps import step_cap_event
from aragog.solver._table_edge import STATUS_OUTSIDE_TABLES, TableEdge

logger = logging.getLogger("aragog.solver")


class SolverStateError(AragogError, RuntimeError):
    """The solver was used out of order (e.g. ``solve()`` before ``initialize()``)."""


class EntropySolver:
    """Integrates the entropy equation of a mantle (docs/physics.md) with CVODE or scipy.

    Args:
        params: validated :class:`aragog.config.Config`; kept as ``self.parameters``
            and re-validated by :meth:`reset`.
        eos_dir: directory of SPIDER tables overriding ``params.eos.dir`` (CLI ``--eos-dir``).
        compile_energy_budget: also compile the energy budget's program in the background
            from the first :meth:`reset` (beside the diagnostics), for a caller that asks
            ``get_state(energy_budget=True)`` after every solve.

    Typical use::

        solver = EntropySolver.from_file("input/earth.toml")
        solver.initialize()                 # mesh, tables, compiled programs, initial state
        solver.solve()
        out = solver.get_state()            # SolverOutput
    """

    def __new__(cls, params=None, *args, **kwargs):
        # The one hook for another interface: the upstream aragog's parameters
        # (aragog.parser.Parameters) name the object that serves them,
        # ``type(params).aragog_solver_class()``, because PROTEUS builds its solver as
        # ``aragog.solver.EntropySolver(Parameters, EntropyEOS)`` (the upstream's import path
        # and call). That object is not an EntropySolver: it holds one and uses its public
        # methods (docs/design.md, "Layers"); Python then skips __init__ here.
        serving = getattr(type(params), "aragog_solver_class", None)
        if cls is EntropySolver and serving is not None:
            interface = serving()
            if not isinstance(interface, type):
                raise TypeError(f"{type(params).__name__}.aragog_solver_class() must return a class, got {interface!r}")
            return interface(params, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, params, *, eos_dir: str | Path | None = None, compile_energy_budget: bool = False):
        self._params = params  # native Config (see the ``parameters`` property)
        self.eos_dir = eos_dir
        # programs compiled in a thread overlapping the first integration ("powers": the
        # energy budget's, for a caller that asks get_state(energy_budget=True) every solve)
        self._background_programs = ("diagnostics", "powers") if compile_energy_budget else ("diagnostics",)
        self._pair = None  # the compiled programs in use (JitPair or BlockPrograms)
        self._key = None
        self._baseline: dict | None = None  # compile stats when shared programs were taken
        self._calls: dict[str, ProgramStats] = {}  # this solver's calls per program
        self._logged: dict[str, int] = {}  # compiles + loads already reported in the log
        self._derived = DerivedInputs()  # the mesh and EOS data of the parameters, cached
        self._options = None
        self._inputs = None
        self._bound = None
        self._S: np.ndarray | None = None  # cell entropy [J/kg/K]
        self._dSdr_cmb: float | None = None  # energy-balance slot [J/kg/K/m]
        self._T_core: float | None = None  # bower2018 slot [K]; None: the bottom cell's T
        self._time: float | None = None  # model time of the state [yr]
        self._records = SolveRecords()  # the solves since initialize(), as the history needs them
        self._trace: tuple[np.ndarray, np.ndarray] | None = None  # the latest solve's step ends
        self._edges: tuple | None = None  # (table object, its TableEdge)
        self._last: LastSolve | None = None  # the last solve's end (None: none since initialize)
        self._warm = None  # the CVODE memory kept between solves (solver.warm_start)
        self._y_end = None  # (state key, S, y): the last solve's end state as integrated
        self._energy = EnergyBook()  # energy budget of get_state (aragog.solver._budget)
        self._compression_from = None  # the latest solve's final record when reset() was last called
        self._compression_J: float | None = None  # its compression work, once measured
        self._diagnostics_of: tuple | None = None  # (t, y, inputs, Diagnostics) last evaluated
        self._initial_stats = ProgramStats()  # entropy_at's NumPy EOS inversions ("initial")

    @property
    def parameters(self):
        """The :class:`aragog.config.Config` of this solver: change values here between
        solves, then call :meth:`reset`."""
        return self._params

    @parameters.setter
    def parameters(self, params) -> None:
        self._params = params

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_file(cls, path, eos_dir=None, overrides=None) -> "EntropySolver":
        """A solver for the config file ``path`` (with optional ``overrides``)."""
        from aragog.config import load_config

        return cls(load_config(path, overrides=overrides), eos_dir=eos_dir)

    @in_float64
    def initialize(self, initial_state: bool = True) -> "EntropySolver":
        """Build everything (:meth:`reset`), forget earlier solves, and set the initial state
        from ``[initial_condition]``; with ``initial_state=False`` set no state (the upstream
        aragog's ``initialize``): :meth:`set_initial_entropy` must come before a solve."""
        self.reset()
        self._records.clear()
        self._trace = None
        self._compression_from = None
        self._last = None
        self._y_end = None  # a new run: nothing to continue, no budget carried over
        self._energy.new_run()
        if not initial_state:
            self._S = self._dSdr_cmb = self._T_core = self._time = None
            return self
        ic = self._params.initial_condition
        n = self.n_cells
        mesh = self._inputs.mesh
        if ic.initial_condition == 2:
            from aragog.initial import read_entropy_profile

            S = read_entropy_profile(ic.init_file, n)
        else:  # an isentrope through basal_temperature at the CMB (3) or surface_temperature at the surface
            key, node = ("basal_temperature", 0) if ic.initial_condition == 3 else ("surface_temperature", -1)
            T, P = float(getattr(ic, key)), float(mesh.P_basic[node])
            S = self.entropy_at(T, P)
            if self._edge() is not None:
                host = self._energy.eos(self._inputs, self._options)
                TableEdge.check_temperature(T, P, S, host.T, f"initial_condition.{key}")
            S = np.full(n, S)
        S = np.asarray(S, dtype=np.float64)
        self._check_in_tables(S, f"initial entropy ([initial_condition] initial_condition = {ic.initial_condition})")
        self._S = S
        self._dSdr_cmb = 0.0
        self._T_core = None
        self._time = float(self._params.solver.start_time)
        return self

    @in_float64
    def reset(self) -> "EntropySolver":
        """Re-validate the parameters and refresh every derived input (mesh, tables, boundary
        values, heating, ...). Builds new compiled programs only when the static key changed
        (state size, boundary modes, physics switches, table identity, array shapes).

        Raises:
            ConfigError: invalid parameters.
            MissingDependencyError: ``solver.method = "cvode"`` and the CVODE library that
                ``ARAGOG_SUNDIALS_CVODE`` names does not load (before anything compiles).
        """
        params = self._params.validate()
        mode, options, mesh, inputs, key = self._derive(params)
        edge = self._edge(inputs, options)
        if edge is not None:  # before anything changes: a refused mesh leaves the solver as it was
            edge.check_pressure(mesh)
        if key != self._key:
            if METHODS[params.solver.method] == "cvode":
                refuse_a_named_library()  # a CVODE library the user named that does not load: before any compile
            configure_compilation_cache(params.solver.jax_cache_dir, params.solver.jax_cache_max_mb)
            if self._pair is not None:
                logger.info("static inputs changed: using new compiled programs")
            builder = fused_programs if mode == "fused" else block_programs
            self._pair, reused = shared_programs(key, lambda: builder(options, inputs, store=store_key(key)))
            if reused:
                self._pair.wait_background()  # its compiles are the first solver's, not ours
            else:
                self._pair.start(self._background_programs, newton=self._newton_program(params))
            self._baseline = compile_stats(self._pair) if reused else None
            self._logged = {}
            if reused:
                logger.info("compile_mode %r: reusing the programs another solver of this process "
                            "compiled for the same static key", mode)
            self._key = key
        if self._S is not None and self._S.shape[0] != mesh.number_of_cells:
            raise ConfigError(
                f"mesh.number_of_nodes changed from {self._S.shape[0] + 1} to {mesh.number_of_nodes}: "
                "set a new initial entropy with set_initial_entropy() (or call initialize())"
            )
        self._compression_from, self._compression_J = self._records.latest_final(), None
        self._options, self._inputs = options, inputs
        self._bound = self._pair.bind(inputs, self._calls)  # inputs packed and on the device once per reset
        return self

    @staticmethod
    def _newton_program(params) -> str:
        """The program CVODE's Newton iteration calls besides the RHS: ``"corrector"`` (its
        solve in one call, ``solver.newton`` "compiled", or "auto" where the compiled solve
        can run) or ``"jac"`` (SUNDIALS' Newton solver). Decided by the config and the CVODE
        library alone, so every solve of a config runs the same Newton solver
        (docs/solver.md, "One compiled call per step")."""
        s = params.solver
        if s.newton == "callbacks" or s.method != "cvode" or s.jacobian != "jax" or s.compile_mode != "fused":
            return "jac"
        if s.newton == "auto" and not _compiled_newton_runs():
            return "jac"
        return "corrector"

    def _derive(self, params) -> Derived:
        """What a solve of validated ``params`` runs on (mesh and EOS data cached)."""
        return derive(params, self.eos_dir, cache=self._derived)

    @in_float64
    def program_key(self, params=None) -> str:
        """A digest of what the compiled programs depend on (compile mode, physics switches,
        table identity, array shapes) for ``params`` (default: this solver's): two configs
        with the same digest run on the same programs, so changing anything else never
        compiles. Builds the mesh and loads the tables (cached), compiles nothing; the
        solver's state is untouched. Used by ``aragog grid`` to group points."""
        params = (self._params if params is None else params).validate()
        return store_key(self._derive(params)[-1])

    @in_float64
    def programs_stored(self, params=None) -> bool:
        """Whether every program a solve of ``params`` (default: this solver's) needs — the
        RHS, the Jacobian, the compiled Newton solve where it runs and the background
        programs — is in the persistent cache that
        ``params`` selects (``solver.jax_cache_dir`` as :meth:`reset` resolves it), so that
        a new process using that cache loads them all without tracing. Reads no entry,
        traces and compiles nothing, changes no setting; the solver's state is untouched.
        Always ``False`` for ``compile_mode = "blocks"`` or with the cache off."""
        params = (self._params if params is None else params).validate()
        mode, options, _, inputs, key = self._derive(params)
        newton = ("corrector",) if self._newton_program(params) == "corrector" else ()
        return mode == "fused" and programs_in_cache(fused_programs(options, inputs, store=store_key(key)),
                                                     ("rhs", "jac", *newton, *self._background_programs),
                                                     params.solver.jax_cache_dir)

    @in_float64
    def wait_for_programs(self) -> "EntropySolver":
        """Block until the programs that :meth:`reset` started compiling in the background
        (the diagnostics, which otherwise overlap the first integration) are ready and in
        the persistent cache; the RHS and the Newton iteration's program are ready when
        :meth:`reset` returns.
        ``aragog grid`` calls it so that other workers load every program of a static key
        instead of compiling one again."""
        self._require_inputs()
        wait = getattr(self._pair, "wait_background", None)
        if wait is not None:
            wait()
        return self

    @in_float64
    def fresh_programs(self, jacobian: str = "banded") -> JitPair:
        """A new fused :class:`~aragog.programs.JitPair` of the current options and inputs
        (compiled at first use): not shared, not stored in the persistent cache, not used by
        this solver (benchmarks compare it, e.g. ``jacobian="dense"``, with :attr:`programs`)."""
        self._require_inputs()
        return fused_programs(self._options, self._inputs, jacobian)

    # ------------------------------------------------------------------ read-only views
    @property
    def programs(self):
        """The compiled programs in use (read-only; maybe shared with other solvers of the same
        static key): a :class:`~aragog.programs.JitPair` (compile_mode "fused") or a
        :class:`~aragog.programs.BlockPrograms` ("blocks"); ``None`` before :meth:`reset`."""
        return self._pair

    @property
    def inputs(self):
        """The traced physics inputs (read-only): the pytree of arrays (mesh, scales, tables,
        boundary values) the programs are called with since :meth:`reset`; ``None`` before."""
        return self._inputs

    @property
    def options(self):
        """The static physics options of the last :meth:`reset` (read-only; part of the
        programs' static key); ``None`` before it."""
        return self._options

    # ------------------------------------------------------------------ state
    @property
    def n_cells(self) -> int:
        self._require_inputs()
        return int(self._inputs.mesh.number_of_cells)

    @in_float64
    def entropy_at(self, temperature: float, pressure: float) -> float:
        """Entropy [J/kg/K] with T(P, S) = ``temperature`` [K] at ``pressure`` [Pa] (the EOS
        inverted; the isentrope through that point). Computed in NumPy
        (:func:`aragog.eos._host.entropy_of_temperature`: the root the compiled
        :func:`aragog.physics.surface_entropy_for_temperature` finds, without compiling a
        program for one call)."""
        self._require_inputs()
        stats = self._initial_stats
        t0 = time.perf_counter()
        value = entropy_of_temperature(temperature, pressure, self._energy.eos(self._inputs, self._options))
        stats.calls += 1
        stats.call_seconds += time.perf_counter() - t0
        stats.source = "numpy"
        if not np.isfinite(value):
            raise AragogError(f"no entropy gives T = {temperature} K at P = {pressure} Pa in the EOS")
        return value

    @in_float64
    def set_initial_entropy(self, S) -> None:
        """Set the state: a scalar (an isentrope: the same entropy in every cell) or one value
        per cell [J/kg/K]. The energy-balance slot keeps its value (see
        :meth:`set_initial_dSdr_cmb`), and so does T_core with core_bc "bower2018" (see
        :meth:`set_initial_core_temperature`)."""
        self._require_inputs()
        n = self.n_cells
        arr = np.asarray(S, dtype=np.float64)
        if arr.ndim == 0:
            arr = np.full(n, float(arr))
        if arr.shape != (n,):
            raise ConfigError(f"initial entropy: expected a scalar or {n} values (one per cell), got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ConfigError("initial entropy: values must be finite")
        self._check_in_tables(arr, "initial entropy (set_initial_entropy)")
        self._S = arr.copy()
        if self._dSdr_cmb is None:
            self._dSdr_cmb = 0.0
        if self._time is None:
            self._time = float(self._params.solver.start_time)

    def _edge(self, inputs=None, options=None) -> TableEdge | None:
        """The EOS tables' edge as the solver holds states to it (``None`` in constant-property
        mode; :mod:`aragog.solver._table_edge`), for ``inputs`` (default: the current ones)."""
        inputs = self._inputs if inputs is None else inputs
        options = self._options if options is None else options
        if options.constant_properties:
            return None
        eos = inputs.eos  # one table object per table set across resets: read it once
        if self._edges is None or self._edges[0] is not eos:
            self._edges = (eos, TableEdge.of(eos))
        return self._edges[1]

    def _check_in_tables(self, S: np.ndarray, what: str) -> None:
        """Refuse cell entropies outside the EOS tables (one line: cells, values, range)."""
        edge = self._edge()
        if edge is not None:
            edge.check_entropy(S, what)

    @in_float64
    def set_initial_dSdr_cmb(self, value: float | None) -> None:
        """Set the energy-balance slot, dS/dr at the CMB [J/kg/K/m] (default: carried over
        from the previous solve; 0 after :meth:`initialize`). ``None``: recompute it from
        the current entropy, as the one-sided difference of the two bottom cells."""
        if value is None:
            self._require_inputs()
            S = self._S
            r = np.asarray(self._inputs.mesh.r_stag, dtype=float)
            self._dSdr_cmb = 0.0 if S is None or S.size < 2 else float((S[1] - S[0]) / (r[1] - r[0]))
            return
        value = float(value)
        if not np.isfinite(value):
            raise ConfigError(f"dSdr_cmb must be finite, got {value}")
        self._dSdr_cmb = value

    def set_initial_core_temperature(self, value: float | None) -> None:
        """Set the T_core slot of core_bc "bower2018" [K] (default: carried over from the
        previous solve; after :meth:`initialize`, or with ``None``, the bottom cell's
        temperature at the next solve, so the CMB flux starts at 0)."""
        if value is not None:
            value = float(value)
            if not (np.isfinite(value) and value > 0.0):
                raise ConfigError(f"core temperature must be finite and > 0 K, got {value}")
        self._T_core = value

    @property
    def entropy(self) -> np.ndarray | None:
        """The current cell entropy (N,) [J/kg/K] (a copy), or ``None`` before a state is set."""
        return None if self._S is None else self._S.copy()

    @property
    def time(self) -> float | None:
        """The model time of the current state [yr], or ``None`` before a state is set."""
        return self._time

    @in_float64
    def state(self) -> tuple[np.ndarray, float | None]:
        """The current state in physical units: ``(S, slot)``, the cell entropy (N,)
        [J/kg/K] and the boundary slot: dS/dr at the CMB [J/kg/K/m] with core_bc
        "energy_balance" or "gradient", T_core [K] with "bower2018" (the bottom cell's
        temperature while it is unset), else ``None``."""
        self._require_inputs()
        if self._S is None:
            raise SolverStateError("no state: call initialize() or set_initial_entropy() first")
        if self._options.core_temperature_slot:
            if self._T_core is None:
                self._y0()  # sets T_core to the bottom cell's temperature
            return self._S.copy(), float(self._T_core)
        return self._S.copy(), (float(self._dSdr_cmb) if self._options.energy_balance else None)

    @property
    def solve_status(self) -> tuple[int, str] | None:
        """``(status, message)`` of the last :meth:`solve` since :meth:`initialize`, or
        ``None`` when there was none (the status of :meth:`get_state`'s output, without
        evaluating the state)."""
        return None if self._last is None else (self._last.status, self._last.message)

    @in_float64
    def last_trajectory(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """The last solve's output times and states: ``(t, S, slot)`` with ``t`` (K,) [yr],
        ``S`` (K, N) the cell entropy [J/kg/K] and ``slot`` (K,) the boundary slot of
        :meth:`state` (``None`` without one), each converted with the inputs of that solve;
        ``None`` before the first solve since :meth:`initialize`."""
        if self._last is None or not self._records:
            return None
        t, y, inputs = self._records.latest
        rows = [split_state(row, inputs.scales, self._options) for row in np.atleast_2d(y)]
        S = np.array([S for S, _ in rows], dtype=np.float64).reshape(len(rows), -1)
        slot = None if not rows or rows[0][1] is None else np.array([v for _, v in rows], dtype=np.float64)
        return np.asarray(t, dtype=np.float64), S, slot

    @in_float64
    def reset_compression_work(self) -> float:
        """The compression work [J] of the structure change made by the last :meth:`reset`:
        Σ m (h(P_new, S) − h(P_old, S)) over the cells, with the entropy the solve before
        that reset ended with; 0 when the mesh's pressures did not change or before any
        solve. The next solve's ``step_dE_compression_J`` is the same work (docs/output.md,
        "Energy budget"); this gives it before that solve."""
        self._require_inputs()
        if self._compression_J is None:
            prev = self._compression_from
            self._compression_J = 0.0 if prev is None else float(
                self._energy.compression_since(prev, self._inputs, self._bind, self._options))
        return self._compression_J

    @property
    def bound_programs(self):
        """The compiled programs bound to the current inputs, as the integrator calls them
        (:class:`~aragog.programs.BoundPair` in compile mode "fused": ``rhs_into``,
        ``jac_into``, ``n``, ``ml``, ``mu``, ``jac_layout``); ``None`` before :meth:`reset`."""
        return self._bound

    def _require_inputs(self):
        if self._inputs is None:
            raise SolverStateError("call initialize() (or reset()) first")

    def _y0(self) -> np.ndarray:
        if self._S is None:
            raise SolverStateError("no initial state: call initialize() or set_initial_entropy() first")
        sc = self._inputs.scales
        end = self._y_end
        if end is not None and end[0] == self._state_key() and np.array_equal(end[1], self._S):
            return end[2].copy()  # the integrator's own end state, not S / scale (rounded)
        if self._options.core_temperature_slot and self._T_core is None:  # the bottom cell's T,
            t = self._time if self._time is not None else 0.0  # with a placeholder slot of 1
            y = np.concatenate([[1.0], self._S / float(sc.S)])
            self._T_core = float(self._bound.call("diagnostics", t, y).T[0])
        slot = self._dSdr_cmb if self._options.energy_balance else self._T_core
        return join_state(self._S, slot, sc, self._options)

    def _state_key(self) -> tuple:
        """What, besides the entropy, maps the state to the integrator's vector."""
        return state_key(self._inputs.scales, self._options, self._dSdr_cmb, self._T_core)

    # ------------------------------------------------------------------ solve
    @in_float64
    def solve(self, progress: Callable[[SolveProgress], None] | None = None,
              progress_interval: float = 1.0) -> None:
        """Integrate from ``parameters.solver.start_time`` to ``end_time`` [yr] from the current
        state; the final state becomes the current state. Then :meth:`get_state` returns it
        with the solve's status and message (``status`` < 0: the solve failed, and the state
        is the last one the integrator reached).

        ``progress``: called with a :class:`SolveProgress` (model time, T_magma, Phi_global,
        right-hand-side calls, wall time) every ``progress_interval`` seconds of wall time
        during the integration, and once at its end (``done=True``); ``None``: no reports
        and no cost. Between reports a right-hand-side call costs one clock read more; each
        report evaluates the state's diagnostics once."""
        self._require_inputs()
        wall0 = time.perf_counter()
        sp = self._params.solver
        t0, t1 = float(sp.start_time), float(sp.end_time)
        y0 = self._y0()
        bound = self._bound
        problem = bound
        if sp.jacobian == "fd":
            problem = NoJacobian(bound)
        limit = float(sp.wall_time_limit)
        clock = None
        if limit > 0.0:
            problem = clock = WallClockLimit(problem, wall0 + limit)
        probe = None
        if progress is not None:
            def measure(t, y):
                d = bound.call("diagnostics", t, y)
                return d.T_surface, d.Phi_global

            problem = probe = ProgressProbe(problem, progress, measure, t0, t1, progress_interval, wall0)
        caps = step_cap_event(self._params.energy, bound, self._split, t0, y0)
        edge = self._edge()
        at_edge = None if edge is None else edge.event(self._split)
        event = _either(caps, at_edge)
        method = METHODS[sp.method]
        if t1 <= t0:
            result = None
            t_out, y_out = np.array([t0]), y0[None, :]
            status, message, t_final, y_final = 0, "empty time window (end_time == start_time)", t0, y0
        else:
            n_out = max(int(sp.output_points), 2)
            t_eval = output_times(t0, t1, n_out, sp.output_spacing)
            # atol [J/kg/K] applies to the nondimensional state (entropy / Scales.S); the
            # energy-balance slot's, to the CMB entropy it sets (solver/_tolerances.py).
            atol = absolute_tolerances(float(sp.atol), len(y0), self._inputs, self._options)
            result = integrate(problem, t_eval, y0, method=method, rtol=float(sp.rtol), atol=atol,
                               max_steps=int(sp.max_steps), event=event, warm=self._warm_start(method),
                               trace=needs_step_trace(self._options), newton=sp.newton,
                               max_step_growth=float(sp.max_step_growth))
            t_out, y_out = result.t, result.y
            status, message = result.status, result.message
            t_final, y_final = result.t_final, result.y_final
            if clock is not None and clock.expired_at is not None:
                status = min(int(status), -1)
                reached = result.t_failure
                if (reached is not None and result.y_failure is not None
                        and (reached - float(t_final)) * (t1 - t0) > 0.0):
                    # keep the progress: the last step the integrator completed, past the
                    # last output time, becomes the last output
                    t_final, y_final = float(reached), np.array(result.y_failure, dtype=np.float64)
                    t_out, y_out = np.append(t_out, t_final), np.vstack([y_out, y_final])
                    where = "the state of the last step the integrator completed"
                else:
                    where = "the state of the last output time reached"
                message = (f"wall-time limit of {limit:g} s (solver.wall_time_limit) reached at "
                           f"t = {clock.expired_at:.6g} yr; kept {where}, t = {float(t_final):.6g} yr")
            if result.t_event is not None:
                y_event = result.y_event
                if at_edge is not None and (caps is None or at_edge(t_final, y_event) >= caps(t_final, y_event)):
                    S_event, slot = self._split(y_event)
                    status, message = STATUS_OUTSIDE_TABLES, edge.left_message(S_event, t_final, t0)
                    y_final = y_event = join_state(edge.onto_band(S_event), slot, self._inputs.scales, self._options)
                if len(t_out) == 0 or t_out[-1] != result.t_event:
                    t_out = np.append(t_out, result.t_event)
                    y_out = np.vstack([y_out, y_event])
                else:
                    y_out = np.vstack([y_out[:-1], y_event])
        self._records.add(t_out, y_out, self._inputs)  # earlier solves keep their final state only
        self._trace = None if result is None else result.trace  # the energy budget's nodes
        if len(t_out) > 0:  # a failed solve still moves to the last state reached
            S, slot = self._split(y_final)
            self._S, self._time = S, t_final
            if self._options.core_temperature_slot:
                self._T_core = slot
            elif slot is not None:
                self._dSdr_cmb = slot
            self._y_end = (self._state_key(), S.copy(), np.array(y_final, dtype=np.float64))
        self._last = LastSolve(status=int(status), message=message, t0=t0, t_final=float(t_final),
                               y=np.asarray(y_final), result=result, wall=time.perf_counter() - wall0)
        if probe is not None:
            probe.send(float(t_final), np.asarray(y_final), done=True)
        if status < 0:
            logger.warning("solve failed at t = %.6g yr: %s", t_final, message)
        self._log_compiles()

    def _warm_start(self, method: str):
        """The CVODE memory kept from one solve to the next (``solver.warm_start``;
        docs/solver.md, "Warm start"), or ``None`` (off, or not CVODE)."""
        if not self._params.solver.warm_start or method != "cvode":
            if self._warm is not None:
                self._warm.close()
                self._warm = None
            return None
        if self._warm is None:
            from aragog.solver.backends import WarmStart

            self._warm = WarmStart()
        return self._warm

    def _split(self, y):
        return split_state(y, self._inputs.scales, self._options)

    # ------------------------------------------------------------------ results
    @in_float64
    def get_state(self, energy_budget: bool = False) -> SolverOutput:
        """The current state as a :class:`SolverOutput` (after :meth:`solve`, its status).

        ``energy_budget=True`` also fills ``E_state``, ``E_state_cons`` and the ``step_*``
        energies of the last solve (docs/output.md, "Energy budget"; None otherwise),
        computed once per solve. They cost the small "powers" program at every quadrature
        node of the solve (its output times, and its steps where a boundary flux depends on
        the state; 32 states a call) plus NumPy quadratures, about 6 ms at 60 cells and 65
        output times against 0.3 ms without them (docs/solver.md, "What get_state costs"), so a
        coupling loop asks only if it uses them.
        """
        self._require_inputs()
        y = self._y0()
        t = self._time if self._time is not None else float(self._params.solver.start_time)
        d = self._diagnostics(t, y)
        self._log_compiles()
        last = self._last or LastSolve.not_integrated(t)
        res = last.result
        energy = {}
        if energy_budget:
            energy = self._energy.state_fields(d, self._inputs, self._options)
            energy.update(self._energy.step_fields(self._records, self._bind, self._options, self._last,
                                                   trace=self._trace, end=(t, y, self._inputs, d)))
        return SolverOutput(
            time=float(t), status=last.status, message=last.message, dt_actual=float(last.t_final - last.t0),
            **output_fields(d, self._inputs, self._options),
            nfev=res.nfev if res else 0, njev=res.njev if res else 0, nsteps=res.nsteps if res else 0,
            integrator=res.integrator if res else METHODS[self._params.solver.method],
            wall_seconds=float(last.wall), **energy,
        )

    @in_float64
    def diagnostics(self):
        """The physics :class:`aragog.physics.Diagnostics` of the current state: every
        quantity the right-hand side computes (per cell, per basic node, and the global
        scalars), in SI units; the same evaluation :meth:`get_state` made when the state
        has not changed since."""
        self._require_inputs()
        t = self._time if self._time is not None else float(self._params.solver.start_time)
        return self._diagnostics(t, self._y0())

    def _diagnostics(self, t: float, y: np.ndarray):
        """The diagnostics program at ``(t, y)`` with the current inputs (the last
        evaluation again when it was at the same state)."""
        last = self._diagnostics_of
        if last is not None and last[0] == t and last[2] is self._inputs and np.array_equal(last[1], y):
            return last[3]
        d = self._bound.call("diagnostics", t, y)
        self._diagnostics_of = (t, np.array(y, dtype=np.float64), self._inputs, d)
        return d

    def _bind(self, inputs):
        """The programs bound to ``inputs`` (the current binding when they are the current inputs)."""
        return self._bound if inputs is self._inputs else self._pair.bind(inputs, self._calls)

    @property
    def integration_result(self):
        """The back end's :class:`IntegrationResult` of the last solve (timings, counters)."""
        return None if self._last is None else self._last.result

    @property
    def jit_stats(self) -> dict:
        """Per program: traces, compiles, loads and their seconds caused by this solver, the
        program's source ("compiled", "disk", "memory", "none"; "numpy" for "initial"),
        and this solver's calls (:func:`aragog.programs._counters.solver_stats`)."""
        return solver_stats(self._pair, self._baseline, self._calls, self._initial_stats)

    def _log_compiles(self) -> None:
        """Log each program compiled or loaded since the last report."""
        log_new_compiles(self.jit_stats, self._logged, logger)

    @in_float64
    def history(self):
        """The run so far as an :class:`aragog.io.RunHistory`: every output time of the latest
        solve and the final state of each earlier solve since :meth:`initialize`, each
        evaluated with the inputs of its own solve (what the solver keeps for an earlier
        solve: its final state and the inputs that changed, about 0.6 KB at 60 nodes;
        docs/solver.md, "Memory of a long coupling loop"); profiles at ``output.snapshots``
        times. Write it with :func:`aragog.io.write_netcdf` (``write_netcdf(path,
        solver.history())``). Rows from :func:`aragog.solver._results.history_rows`,
        assembled by :func:`aragog.solver._history.run_history`."""
        if not self._records:
            raise SolverStateError("nothing to write: call solve() first")
        last = self._last or LastSolve(status=0, message="", t0=0.0, t_final=0.0)
        res, sp = last.result, self._params.solver
        rows = history_rows(self._records, self._bind, self._options, self._energy)
        return run_history(*rows, self._records.latest[2].mesh, self._params, status=last.status,
                           message=last.message, integrator=res.integrator if res else METHODS[sp.method])


    def write_netcdf(self, path) -> Path:
        """Write :meth:`history` to a CF-style netCDF file (atomically; :func:`aragog.io.write_netcdf`,
        imported on call: the one import of the solver from the layer above it, kept because
        the upstream aragog's ``EntropySolver`` has this method too)."""
        from aragog.io import write_netcdf

        return write_netcdf(path, self.history())


def _either(first, second):
    """One event function of two (either may be ``None``): ``max(g1, g2)`` crosses zero where
    the first of them does."""
    if first is None or second is None:
        return second if first is None else first
    return lambda t, y: max(first(t, y), second(t, y))
