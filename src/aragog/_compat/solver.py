"""The upstream aragog's solver interface (``EntropySolver(parameters, entropy_eos)``).

``aragog.solver.EntropySolver`` built from the upstream's :class:`aragog.parser.Parameters`
returns an :class:`UpstreamEntropySolver` (the parameters name it:
``Parameters.aragog_solver_class``): this package's solver with the upstream's
methods, attributes and meanings, so PROTEUS's coupling code runs unchanged::

    solver = EntropySolver(params, entropy_eos)    # aragog.parser.Parameters, EntropyEOS or None
    solver.initialize()                            # builds; does not set the state
    solver.set_initial_entropy(S)                  # entropy per cell [J/kg/K]
    solver.solve(); out = solver.get_state()
    solver.parameters.boundary_conditions.outer_boundary_value = F_atm
    solver.reset(); solver.set_initial_entropy(solver.entropy_staggered[:, -1]); ...

``solver.parameters`` is the upstream object; every :meth:`reset` and :meth:`solve`
converts it (:meth:`aragog.parser.Parameters.to_config`) into the native parameters the
compiled programs run with, so changing values never recompiles. The differences in
meaning from the native solver (status of an early stop, ``F_cmb``, ``initialize``,
``set_initial_dSdr_cmb(None)``) are listed in ``docs/compat.md``.
"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np

from aragog._compat.jax_records import NonDimScales
from aragog._jax import in_float64
from aragog.errors import AragogError
from aragog.units import SECONDS_PER_YEAR
from aragog.solver import EntropySolver, SolverOutput, SolverStateError

#: ``EntropySolver`` and ``SolverOutput`` are the native classes: the upstream's import path
#: ``aragog.solver.entropy_solver`` names them, and ``EntropySolver(upstream parameters)``
#: answers with an :class:`UpstreamEntropySolver` (which holds a native one).
__all__ = ["EXTRA_STATE_SLOTS", "EntropySolver", "SolverOutput", "UpstreamEntropySolver", "UpstreamSolution",
           "upstream_mass_fields"]


#: The upstream's extended state: the slots after the N cell entropies, per core_bc, in
#: order (its ``aragog.solver.entropy_solver.EXTRA_STATE_SLOTS``, which PROTEUS reads to find
#: T_core in ``_S0``). "gradient" replaces the whole state, so it is absent as upstream;
#: "core_module" is refused (``aragog.parser``).
EXTRA_STATE_SLOTS: dict[str, tuple[str, ...]] = {
    "quasi_steady": (),
    "energy_balance": ("dSdr_cmb",),
    "bower2018": ("T_core",),
}


@dataclasses.dataclass
class UpstreamSolution:
    """The last solve's trajectory in the upstream layout.

    ``t`` (n_times,) [yr]; ``y`` (n_state, n_times) in physical units: the entropy of the
    N cells [J/kg/K] first, then the boundary state (dS/dr at the CMB [J/kg/K/m] for the
    energy-balance core). ``status`` as upstream (0 also for an early stop at a step cap).
    """

    t: np.ndarray
    y: np.ndarray
    status: int
    message: str

    @property
    def success(self) -> bool:
        return self.status >= 0


class UpstreamEntropySolver:
    """The upstream aragog's solver interface over a native :class:`EntropySolver` (see the
    module docstring), which it holds (:attr:`native`) and drives through its public
    methods only.

    Args:
        parameters: :class:`aragog.parser.Parameters` (kept as ``self.parameters``).
        entropy_eos: :class:`aragog.eos.entropy.EntropyEOS` whose tables the solver runs
            with, or ``None`` (constant-property mode, or the bundled tables).
    """

    @in_float64
    def __init__(self, parameters, entropy_eos=None):
        self._upstream = parameters
        self.entropy_eos = entropy_eos
        self._atol_sf = 1.0  # the upstream retry ladder's factor on atol
        self._jax_cvode_factory = None
        self._jax_factory_calls = 0
        self._dSdr_cmb_init: float | None = None  # set_initial_dSdr_cmb override
        self._solution_cache: UpstreamSolution | None = None
        self._max_steps = int(parameters.solver.max_steps)  # read once, as upstream
        self._compression_override: float | None = None  # _last_compression_J as set by the caller
        # get_state always asks for the energy budget: its program compiles from the start
        self._solver = EntropySolver(self._convert(), compile_energy_budget=True)

    @property
    def native(self) -> EntropySolver:
        """The native :class:`EntropySolver` this interface drives (its ``jit_stats``,
        ``programs``, ``history()``, ... are there)."""
        return self._solver

    # ------------------------------------------------------------------ parameters
    @property
    def parameters(self):
        """The upstream :class:`aragog.parser.Parameters` (change values, then ``reset()``)."""
        return self._upstream

    @parameters.setter
    def parameters(self, params) -> None:
        self._upstream = params

    def _convert(self):
        eos_dir = None if self.entropy_eos is None else self.entropy_eos.directory
        return self._upstream.to_config(eos_dir=eos_dir, atol_scale=float(self._atol_sf),
                                        max_steps=self._max_steps)

    def _sync(self) -> None:
        """Rebuild the native parameters from the upstream ones; reset when they changed."""
        native = self._convert()
        if native != self._solver.parameters:
            self._solver.parameters = native
            self._solver.reset()

    @in_float64
    def reset(self) -> UpstreamEntropySolver:
        """Re-read the upstream parameters (and ``_atol_sf``); no recompilation when only
        values changed."""
        self._solver.parameters = self._convert()
        self._solver.reset()
        self._compression_override = None
        return self

    @in_float64
    def initialize(self) -> UpstreamEntropySolver:
        """Build the mesh, tables and compiled programs. As upstream, the state is not set
        from ``[initial_condition]``: call :meth:`set_initial_entropy` next."""
        self._solver.parameters = self._convert()
        self._solver.initialize(initial_state=False)
        self._compression_override = None
        self._solution_cache = None
        return self

    # ------------------------------------------------------------------ the native solver's
    @property
    def n_cells(self) -> int:
        return self._solver.n_cells

    def write_netcdf(self, path):
        """Write the run so far to netCDF (the upstream solver's method;
        :meth:`EntropySolver.write_netcdf`)."""
        return self._solver.write_netcdf(path)

    # ------------------------------------------------------------------ state
    def _mesh(self):
        inputs = self._solver.inputs
        if inputs is None:
            raise SolverStateError("call initialize() (or reset()) first")
        return inputs.mesh

    @property
    def _core_bc(self) -> str:
        return self._solver.parameters.boundary_conditions.core_bc

    @property
    def _n_stag(self) -> int:
        return self._solver.n_cells

    @property
    def _P_stag_flat(self) -> np.ndarray:
        return np.asarray(self._mesh().P_stag, dtype=float)

    @property
    def _r_basic_flat(self) -> np.ndarray:
        return np.asarray(self._mesh().r_basic, dtype=float)

    @property
    def _P_basic_flat(self) -> np.ndarray:
        return np.asarray(self._mesh().P_basic, dtype=float)

    @property
    def _last_compression_J(self) -> float:
        """Compression work [J] of the structure change of the last :meth:`reset` (the
        upstream's name; PROTEUS reads it before each coupled call and puts it back after a
        retry's reset): :meth:`EntropySolver.reset_compression_work`, or the value set here
        since that reset."""
        if self._compression_override is not None:
            return self._compression_override
        return self._solver.reset_compression_work()

    @_last_compression_J.setter
    def _last_compression_J(self, value: float) -> None:
        self._compression_override = float(value)

    @property
    def _cmb_area(self) -> float:
        """Area of the core-mantle boundary, 4π r_cmb² [m²] (the upstream's name; PROTEUS's
        JAX factory reads it)."""
        return float(self._mesh().area_basic[0])

    @property
    def _core_M(self) -> float:
        """Core mass, (4/3)π r_cmb³ ρ_core [kg] (``mesh.core_density``; the upstream's name)."""
        return float(self._mesh().core_mass)

    @property
    def _cmb_dr_cmb(self) -> float:
        """Spacing of the two lowest basic nodes, r_1 - r_0 [m] (the upstream's name)."""
        r = self._r_basic_flat
        return float(r[1] - r[0])

    @property
    def evaluator(self):
        """``evaluator.mesh``: the mesh arrays (what PROTEUS hands to its JAX factory)."""
        return SimpleNamespace(mesh=self._mesh())

    def _has_slot(self) -> bool:
        options = self._solver.options
        return bool(options is not None and options.energy_balance)

    @staticmethod
    def _upstream_state(S, slot) -> np.ndarray:
        return np.concatenate([S, [slot]]) if slot is not None else np.asarray(S)

    @property
    def _S0(self) -> np.ndarray | None:
        """The current state in the upstream layout, physical units: the entropy of the
        cells, then the boundary slot (dS/dr at the CMB for "energy_balance" and
        "gradient", T_core for "bower2018")."""
        if self._solver.entropy is None:
            return None
        return self._upstream_state(*self._solver.state())

    @_S0.setter
    @in_float64
    def _S0(self, state) -> None:
        """Set the whole state in the upstream layout (PROTEUS's retry ladder restores the
        state a call started from this way): the cell entropies, then each slot of
        :data:`EXTRA_STATE_SLOTS` for this core_bc, taken as given."""
        self._mesh()
        arr = np.asarray(state, dtype=np.float64)
        n, slots = self.n_cells, EXTRA_STATE_SLOTS.get(self._core_bc, ())
        if arr.shape != (n + len(slots),):
            raise AragogError(f"_S0 needs {n} cell entropies then {list(slots) or 'no slot'} "
                              f"(core_bc = {self._core_bc!r}), got shape {arr.shape}")
        self._solver.set_initial_entropy(arr[:n])
        if "dSdr_cmb" in slots:
            self._solver.set_initial_dSdr_cmb(float(arr[n]))
        if "T_core" in slots:
            self._solver.set_initial_core_temperature(float(arr[n + slots.index("T_core")]))

    @in_float64
    def set_initial_entropy(self, S_init) -> None:
        """Entropy per cell [J/kg/K] (or a scalar; or the full upstream state with the CMB
        gradient last). The CMB gradient slot takes, in this order: the value of
        :meth:`set_initial_dSdr_cmb`, the last solve's final value, or the one-sided
        difference of the given entropy at the bottom (0 for an isentrope)."""
        self._mesh()
        native = self._solver
        arr = np.asarray(S_init, dtype=np.float64)
        n = self.n_cells
        if arr.ndim == 1 and arr.size == n + 1 and native.options.core_temperature_slot:
            native.set_initial_entropy(arr[:n])
            native.set_initial_core_temperature(float(arr[n]))
            return
        given_slot = None
        if arr.ndim == 1 and arr.size == n + 1 and self._has_slot():
            arr, given_slot = arr[:n], float(arr[n])
        native.set_initial_entropy(arr)
        if self._dSdr_cmb_init is not None:
            native.set_initial_dSdr_cmb(self._dSdr_cmb_init)
        elif given_slot is not None:
            native.set_initial_dSdr_cmb(given_slot)
        elif native.solve_status is None:
            native.set_initial_dSdr_cmb(None)  # the one-sided difference at the CMB

    def set_initial_dSdr_cmb(self, dSdr_cmb_init: float | None) -> None:
        """Override the CMB gradient slot [J/kg/K/m] used by the next
        :meth:`set_initial_entropy` (and from now on); ``None`` releases the override (the
        slot then carries over from the last solve, as upstream)."""
        if dSdr_cmb_init is None:
            self._dSdr_cmb_init = None
            return
        value = float(dSdr_cmb_init)
        if not math.isfinite(value):
            raise AragogError(f"dSdr_cmb must be finite, got {value}")
        self._dSdr_cmb_init = value
        self._solver.set_initial_dSdr_cmb(value)

    def get_current_dSdr_cmb(self) -> float | None:
        """The CMB gradient [J/kg/K/m] at the end of the last solve; ``None`` before the
        first solve or without the energy-balance slot."""
        if self._solver.solve_status is None or not self._has_slot():
            return None
        return float(self._solver.state()[1])

    # ------------------------------------------------------------------ JAX factory
    def set_jax_cvode_factory(self, factory) -> None:
        """Register PROTEUS's ``factory(scales, core_bc_mode) -> (rhs_fn, jac_fn)``; it is
        called once per :meth:`solve` (with ``energy.use_jax_jacobian``) and must return
        :func:`aragog.solver.cvode_jax.build_jax_rhs_and_jacobian`'s callbacks, which are
        this solver's compiled programs (``None`` unregisters)."""
        self._jax_cvode_factory = factory

    def _nondim_scales(self):
        native = self._solver
        sc, options = native.inputs.scales, native.options
        scale = np.full(native.bound_programs.n, float(sc.S))
        if options.energy_balance:
            scale[0] = float(sc.dSdr)
        elif options.core_temperature_slot:
            scale[0] = float(sc.T)
        return NonDimScales.for_solver(native, scale)

    def _call_factory(self) -> None:
        if self._jax_cvode_factory is None or not self._upstream.energy.use_jax_jacobian:
            return
        callbacks = self._jax_cvode_factory(self._nondim_scales(), self._core_bc)
        self._jax_factory_calls += 1
        rhs_fn = callbacks[0] if isinstance(callbacks, (tuple, list)) and callbacks else None
        if getattr(rhs_fn, "aragog_bound_programs", None) is not self._solver.bound_programs:
            raise AragogError("the JAX CVODE factory must return the callbacks of "
                              "aragog.solver.cvode_jax.build_jax_rhs_and_jacobian for this solver")

    # ------------------------------------------------------------------ solve and results
    @in_float64
    def solve(self) -> None:
        """Integrate ``start_time`` → ``end_time`` [yr] of the upstream parameters (re-read
        now, with ``_atol_sf``) from the current state."""
        self._sync()
        if self._solver.entropy is None:
            raise SolverStateError("no initial state: call set_initial_entropy() after initialize()")
        self._call_factory()
        self._solver.solve()
        self._solution_cache = None

    @property
    def solution(self) -> UpstreamSolution | None:
        """The last solve's trajectory (``.t``, ``.y`` upstream layout), or ``None``."""
        if self._solution_cache is None:
            trajectory = self._solver.last_trajectory()
            if trajectory is None:
                return None
            t, S, slot = trajectory
            y_up = S.T if slot is None else np.vstack([S.T, slot[None, :]])
            status, message = self._solver.solve_status
            self._solution_cache = UpstreamSolution(t=t, y=y_up, status=_upstream_status(status),
                                                    message=str(message))
        return self._solution_cache

    @property
    def entropy_staggered(self) -> np.ndarray:
        """Entropy of the cells over the last solve, (N, n_times) [J/kg/K]."""
        sol = self.solution
        if sol is None:
            raise SolverStateError("no solution yet: call solve() first")
        return sol.y[: self.n_cells]

    @in_float64
    def get_state(self) -> SolverOutput:
        """The native :class:`SolverOutput`, with the energy budget, and the upstream
        meanings: ``status`` 0 for an
        early stop at a step cap (``dt_actual`` says how far it got); ``F_cmb`` the mean
        CMB heat flux over the solve [W/m², out of the core] (the end-of-solve value is
        ``heat_flux[0]``); ``T_core`` the temperature of the bottom cell, ``T_stag[0]``
        (PROTEUS's ``T_cmb``), or the core temperature slot with ``core_bc = "bower2018"``
        (the native ``T_core`` is the mean core temperature, ``tfac_core_avg`` times the
        CMB node's)."""
        native = self._solver
        out = native.get_state(energy_budget=True)  # PROTEUS reads the budget every step
        d = native.diagnostics()  # the evaluation get_state made
        changes = {"status": _upstream_status(out.status)}
        if not native.options.core_temperature_slot:
            changes["T_core"] = float(out.T_stag[0])
        mean = _mean_cmb_flux(out)
        if mean is not None:
            changes["F_cmb"] = mean
        inputs = native.inputs
        changes.update(upstream_mass_fields(out, d, inputs.mesh, inputs.material.rheological_transition_melt_fraction))
        return dataclasses.replace(out, **changes)


def upstream_mass_fields(out, d, mesh, phi_rheo: float) -> dict:
    """The fields whose upstream definitions (fwl-aragog 26.10.22, ``get_state``) weight the
    cells by their EOS mass ρ_i V_i instead of the structural mass m_i (docs/compat.md,
    "What PROTEUS reads"): ``mass_stag`` = ρ_i V_i; ``Phi_global`` = Σ φ ρ V / Σ ρ V and
    ``M_mantle_liquid``/``_solid`` = Φ M_mantle, (1 - Φ) M_mantle; ``E_th`` = Σ ρ V c_p T;
    ``Q_radio_total``, ``Q_tidal_total`` = Σ H ρ V of each source [W]; and ``RF_depth`` =
    1 - r_f / R, r_f the CMB when Φ > 0.99, the surface when Φ < 0.01, else the basic node
    whose melt fraction (the cells' φ interpolated to the nodes, linear in the mesh
    coordinate, extrapolated at the ends) is nearest ``phi_rheo``."""
    V = np.asarray(mesh.volume_stag, dtype=float)
    mass = np.asarray(out.rho_stag, dtype=float) * V
    total = float(np.sum(mass))
    phi = np.asarray(out.phi_stag, dtype=float)
    Phi = float(np.sum(phi * mass) / total) if total > 0.0 else float(np.mean(phi))
    H_radio = float(d.H_radio)
    H_tidal = np.asarray(d.H, dtype=float) - H_radio
    r_b = np.asarray(mesh.r_basic, dtype=float)
    if Phi > 0.99:
        r_front = r_b[0]
    elif Phi < 0.01:
        r_front = r_b[-1]
    else:
        r_front = r_b[int(np.argmin(np.abs(_at_basic_nodes(phi, mesh) - phi_rheo)))]
    return {
        "mass_stag": mass, "Phi_global": Phi,
        "M_mantle_liquid": Phi * float(out.M_mantle), "M_mantle_solid": (1.0 - Phi) * float(out.M_mantle),
        "E_th": float(np.sum(mass * np.asarray(d.cp, dtype=float) * np.asarray(out.T_stag, dtype=float))),
        "Q_radio_total": H_radio * total, "Q_tidal_total": float(np.sum(H_tidal * mass)),
        "RF_depth": 1.0 - r_front / r_b[-1],
    }


def _at_basic_nodes(q, mesh) -> np.ndarray:
    """A cell quantity ``q`` (N,) at the N+1 basic nodes: linear in the mesh coordinate ξ
    between the two cells beside each interior node, extrapolated from the two nearest
    cells at the ends (the upstream's ``quantity_at_basic_nodes``)."""
    xs, xb = np.asarray(mesh.xi_stag, dtype=float), np.asarray(mesh.xi_basic, dtype=float)
    slope = np.diff(q) / np.diff(xs)
    k = np.clip(np.arange(xb.size) - 1, 0, slope.size - 1)  # the cell pair each node uses
    return q[k] + slope[k] * (xb - xs[k])


def _upstream_status(status: int) -> int:
    """Native status 1 (stopped early by a step cap) is a success, status 0, upstream."""
    return 0 if int(status) == 1 else int(status)


def _mean_cmb_flux(out) -> float | None:
    """Mean CMB heat flux over the solve [W/m²] from the step integral, if available."""
    energy = getattr(out, "step_dE_F_cmb_J", None)
    dt = float(out.dt_actual) * SECONDS_PER_YEAR
    if energy is None or not dt > 0.0:
        return None
    area = 4.0 * math.pi * float(out.r_basic[0]) ** 2
    return float(energy) / (area * dt)

