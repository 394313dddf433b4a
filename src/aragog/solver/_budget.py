"""The per-solve energy budget of :class:`~aragog.solver._output.SolverOutput`, computed lazily.

Nothing here is compiled and nothing runs during :meth:`EntropySolver.solve`: at
:meth:`~EntropySolver.get_state` the existing "diagnostics" program is called at the
solve's stored output times (``solver.output_points`` of them, the latest solve of the
solver's :class:`~aragog.solver._records.SolveRecords`), and the integrals are NumPy on
what it returns; the enthalpy and the heat content are NumPy on the EOS
(:mod:`aragog.physics._heat_content`). The result is cached per solve. What a
``get_state`` of a coupling loop pays for it (docs/solver.md, "What get_state costs"):
the "powers" program at every quadrature node, compiled for chunks of states
(``BoundPair.call_many``: one call per chunk instead of one per node), one "diagnostics"
call for the window's first state (the last is the state ``get_state`` evaluated anyway),
and the NumPy quadratures.

Step fields (energies in J over the solve window [t0, t1], positive into the mantle;
upstream aragog's definitions, fwl-aragog 26.10.22, ``_compute_step_energy_integrals``,
``_step_powers``, ``_step_heat_content``, ``_compute_compression_work``):

* step_dE_F_int_J = -∫ F_N A_N dt (surface), step_dE_F_cmb_J = ∫ F_0 A_0 dt (CMB; F_0 > 0
  out of the core), with the boundary fluxes the entropy equation used. Where the state
  carries the core's energy, step_dE_F_cmb_J is the core's energy change, exact whatever
  the output times (:func:`cmb_energy`): with core_bc "energy_balance" the core follows the
  CMB node's entropy S_b0 as M_c c_c f dT = -F_0 A_0 dt with dT = (T/c_p) dS_b0 at the CMB
  pressure, so ∫ F_0 A_0 dt = -M_c c_c f ∫_{S_b0(t0)}^{S_b0(t1)} T/c_p dS; "quasi_steady"
  the same with the lowest cell's entropy and pressure; "bower2018" -M_c c_c ΔT_core;
  "flux" (a constant F_0) is integrated exactly by the quadrature below;
* step_dE_Q_radio_J, step_dE_Q_tidal_J = ∫ Σ ρ_i V_i H_i dt with the EOS density (the live
  mass: what the entropy equation receives), step_dE_Q_*_cons_J the same with the
  structural mass m_i = mesh.mass_stag;
* step_solver_residual_J = ∫ [Σ ρ_i T_i V_i dS_i/dt - (F_0 A_0 - F_N A_N + Σ ρ_i H_i V_i)] dt:
  the discrete entropy equation's own energy identity, zero to rounding (a non-zero value
  is a bug in the flux divergence, not an integration error);
* step_dE_state_heat_J = Σ_i V_i ∫_{S_i(t0)}^{S_i(t1)} ρ T dS at the cells' static
  pressures, from the two end states alone (Gauss quadrature in S on the EOS): the change
  of the heat content the entropy equation transports. Integrating
  ρ_i T_i V_i dS_i/dt = (F A)_i - (F A)_{i+1} + ρ_i H_i V_i over the window and summing
  over the cells (the interior fluxes cancel) gives the budget identity
  step_dE_state_heat_J = step_dE_F_int_J + step_dE_F_cmb_J + step_dE_Q_radio_J
  + step_dE_Q_tidal_J (+ step_solver_residual_J), exact for the true trajectory; the
  computed sides differ by the time-quadrature error, the integrator's defect and the
  S-quadrature error (tests/test_energy_budget.py);
* step_dE_compression_J = Σ m_i (h(P_new,i, S_i) - h(P_old,i, S_i)): the adiabatic work of
  a change of the static structure between the previous solve and this one, at the
  carried entropy and the old structural mass; 0 when the pressures did not change (and
  for the first solve). Informational: not part of the identity above.

Time quadrature (every other power, and the CMB with core_bc "temperature" or "gradient"):
the integrals over [t0, t1] are exact for the piecewise cubic that interpolates the
powers at the nodes (4 neighbouring points per interval, fewer at the window's ends and
with fewer than 4 nodes): error O(Δt^4) where the powers are smooth. The nodes of
:meth:`EnergyBook.step_fields` are the integrator's own steps (every accepted step's end,
``integrate(..., trace=True)``) together with the output times, whenever a boundary flux
is not carried exactly otherwise (:func:`needs_step_trace`: a surface flux that depends on
the state, or core_bc "temperature" or "gradient"), so a transient between two output
times is resolved by the steps inside it; otherwise (a prescribed surface flux with any
other core mode: only the slowly varying source powers are left) the output times. The
per-output-interval fields of :meth:`EnergyBook.history_fields` use the output times
(``solver.output_points`` must resolve the powers' variation there).
"""

from __future__ import annotations

import numpy as np

from aragog._jax import jax
from aragog.physics._heat_content import (EnthalpyEOS, compression_work, core_temperature_change, heat_content_change,
                                          specific_enthalpy)

__all__ = ["STEP_FIELDS", "EnergyBook", "quadrature_weights", "interval_weights", "powers", "power_columns",
           "node_powers", "cmb_energy", "needs_step_trace"]

#: SolverOutput / FIELD_META names of the per-solve energies [J].
STEP_FIELDS = ("step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J",
               "step_dE_Q_radio_cons_J", "step_dE_Q_tidal_cons_J", "step_solver_residual_J",
               "step_dE_compression_J", "step_dE_state_heat_J")
#: the step fields that are time integrals of :func:`powers` (same order as its columns)
_POWER_FIELDS = STEP_FIELDS[:7]


def _interval_stencils(t) -> tuple[np.ndarray, np.ndarray]:
    """``(idx, w)``, both (K-1, m) with m = min(K, 4): the samples ``idx[k]`` and their weights
    ``w[k]`` in the integral over [t_k, t_{k+1}] (:func:`interval_weights`); K >= 2."""
    K = t.size
    m = min(K, 4)
    k = np.arange(K - 1)
    idx = np.clip(k - 1, 0, K - m)[:, None] + np.arange(m)  # (K-1, m) stencil of interval k
    h = t[1:] - t[:-1]
    # Lagrange basis of each stencil at the two Gauss points of [t_k, t_{k+1}] (exact for the
    # cubic), in the coordinate tau = (t - t_k)/h (no cancellation at large t).
    tau = (t[idx] - t[:-1, None]) / h[:, None]  # (K-1, m)
    gx = 0.5 * np.array([1.0 - 1.0 / np.sqrt(3.0), 1.0 + 1.0 / np.sqrt(3.0)])
    diff = tau[:, :, None] - tau[:, None, :]  # (K-1, a, b): tau_a - tau_b
    eye = np.eye(m, dtype=bool)
    denom = np.prod(np.where(eye, 1.0, diff), axis=2)  # (K-1, a)
    num = gx[None, None, :, None] - tau[:, None, None, :]  # (K-1, 1, g, b): x_g - tau_b
    num = np.where(eye[None, :, None, :], 1.0, num)  # (K-1, a, g, b), b != a
    basis = np.prod(num, axis=3) / denom[:, :, None]  # (K-1, a, g)
    return idx, 0.5 * h[:, None] * basis.sum(axis=2)


def interval_weights(t) -> np.ndarray:
    """(K-1, K) matrix W: (W @ f)[k] ≈ ∫_{t_k}^{t_{k+1}} f dt for samples f (K,) at the
    strictly increasing times ``t`` (K,), exact for the local interpolating cubic through
    t_{k-1}..t_{k+2} (shifted inside at the ends; the interpolant of all K points when K < 4).
    Dense: for the output times of one solve (:meth:`EnergyBook.history_fields`); the
    whole window's weights are :func:`quadrature_weights`, O(K).
    """
    t = np.asarray(t, dtype=np.float64)
    K = t.size
    W = np.zeros((max(K - 1, 0), K))
    if K < 2:
        return W
    idx, w = _interval_stencils(t)
    np.add.at(W, (np.arange(K - 1)[:, None], idx), w)
    return W


def quadrature_weights(t) -> np.ndarray:
    """(K,) weights w: w @ f ≈ ∫_{t_0}^{t_{K-1}} f dt: the columns of :func:`interval_weights`
    summed, interval by interval in order (the same numbers as ``interval_weights(t).sum(0)``,
    without the (K-1, K) matrix: a solve's quadrature nodes include every integrator step,
    10^4 of them in a long solve)."""
    t = np.asarray(t, dtype=np.float64)
    K = t.size
    q = np.zeros(K)
    if K < 2:
        return q
    idx, w = _interval_stencils(t)
    np.add.at(q, idx.ravel(), w.ravel())  # row by row: each column's terms in interval order
    return q


def power_columns(d) -> tuple:
    """The 7 powers [W] of one state's ``Diagnostics`` ``d`` (NumPy or traced JAX values):
    -F_N A_N, F_0 A_0, Q_radio_live, Q_tidal_live, Q_radio_total, Q_tidal_total, and the
    residual energy_rate - (F_0 A_0 - F_N A_N + heating_power) (columns in
    :data:`STEP_FIELDS` order). Compiled as the solver's "powers" program, so the budget
    reads one small array per output time instead of every diagnostic field."""
    e = d.energy
    resid = d.energy_rate - (d.cmb_power - d.surface_power + d.heating_power)
    return (-d.surface_power, d.cmb_power, e.Q_radio_live, e.Q_tidal_live, d.Q_radio_total, d.Q_tidal_total, resid)


def powers(diags) -> np.ndarray:
    """(K, 7) powers [W] at K states from their ``Diagnostics`` (:func:`power_columns`)."""
    rows = [[float(v) for v in power_columns(d)] for d in diags]
    return np.array(rows, dtype=np.float64).reshape(-1, 7)


def needs_step_trace(options) -> bool:
    """Whether a boundary energy of the budget is a time integral of a state-dependent
    flux (module docstring): then the solver records the integrator's steps for it."""
    return options.outer_boundary_condition != 4 or options.core_bc in ("temperature", "gradient")


def _merge_nodes(t_out, y_out, trace):
    """The output times and the step ends within them (a failed solve's steps beyond its
    last output are left out), sorted, each time once: ``(t (M,), y (M, n))``."""
    t_out = np.asarray(t_out, dtype=np.float64)
    lo, hi = min(t_out[0], t_out[-1]), max(t_out[0], t_out[-1])
    inside = (trace[0] >= lo) & (trace[0] <= hi)
    t = np.concatenate([t_out, trace[0][inside]])
    y = np.concatenate([np.asarray(y_out).reshape(len(t_out), -1), trace[1][inside]])
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    keep = np.concatenate([[True], np.diff(t) != 0.0])
    return t[keep], y[keep]


def cmb_energy(eos: EnthalpyEOS, d0, d1, inputs, options, n_panels: int = 32) -> float | None:
    """∫ F_0 A_0 dt [J] between two states (their ``Diagnostics`` ``d0``, ``d1``) from the
    core's energy change, for the core modes whose state carries it (module docstring);
    ``None`` for the others ("flux", "temperature", "gradient")."""
    mesh, bp = inputs.mesh, inputs.boundary
    capacity = float(mesh.core_mass) * float(bp.core_heat_capacity)  # M_c c_c [J/K]
    if options.core_bc == "bower2018":  # the T_core slot, dT_core/dt = -F_0 A_0 / (M_c c_c)
        return -capacity * (float(d1.T_core) - float(d0.T_core))
    if options.core_bc == "energy_balance":
        P, S0, S1 = mesh.P_basic[0], d0.S_basic[0], d1.S_basic[0]
    elif options.core_bc == "quasi_steady":
        P, S0, S1 = mesh.P_stag[0], d0.S[0], d1.S[0]
    else:
        return None
    return -capacity * float(bp.tfac_core_avg) * core_temperature_change(eos, float(P), float(S0), float(S1), n_panels)


def node_powers(bound, t, y) -> np.ndarray:
    """(K, 7) powers [W] (:func:`power_columns`) at the states ``y`` (K, n) at times ``t``
    (K,) [yr] with the programs ``bound`` (a bound program set of the solver).

    With a batched "powers" program (compile_mode "fused"): ``bound.call_many``, one call
    per chunk of states (:meth:`aragog.programs._jitpair.BoundPair.call_many`). Otherwise
    (compile_mode "blocks") from the full diagnostics of each state."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if "powers" in getattr(bound, "batched_programs", ()):
        return np.asarray(bound.call_many("powers", t, y), dtype=np.float64).reshape(len(t), 7)
    return powers([bound.call("diagnostics", float(tk), yk) for tk, yk in zip(t, y)])


class EnergyBook:
    """The solver's energy bookkeeping: NumPy EOS per table set, the step integrals of the
    latest solve (cached per solve) and the per-solve totals for :meth:`history_fields`
    (one row of :data:`STEP_FIELDS` a solve, in a growing array: 80 bytes a solve).

    Args:
        n_enthalpy: panels of :func:`~aragog.physics._heat_content.specific_enthalpy`.
        n_heat: panels of :func:`~aragog.physics._heat_content.heat_content_change`.
    """

    def __init__(self, n_enthalpy: int = 64, n_heat: int = 32):
        self.n_enthalpy, self.n_heat = int(n_enthalpy), int(n_heat)
        self._eos: tuple | None = None
        self._step: tuple | None = None  # (key of the solve, fields)
        self._totals = np.empty((0, 1 + len(STEP_FIELDS)))  # rows: final time [yr], the step fields
        self._n_totals = 0

    def new_run(self) -> None:
        """Forget the step integrals and per-solve totals (a new run starts); the NumPy EOS
        is kept."""
        self._step = None
        self._totals = np.empty((0, 1 + len(STEP_FIELDS)))
        self._n_totals = 0

    def _keep_totals(self, t_final: float, fields: dict) -> None:
        """Append a solve's step fields (its final time [yr] as the key)."""
        if self._n_totals == self._totals.shape[0]:
            grown = np.empty((max(16, 2 * self._n_totals), self._totals.shape[1]))
            grown[: self._n_totals] = self._totals[: self._n_totals]
            self._totals = grown
        self._totals[self._n_totals] = [t_final, *(fields[k] for k in STEP_FIELDS)]
        self._n_totals += 1

    def _totals_by_time(self) -> dict[float, np.ndarray]:
        """``{final time [yr]: step fields}`` of the solves whose fields were computed (a
        later solve with the same final time replaces an earlier one)."""
        rows = self._totals[: self._n_totals]
        return {float(r[0]): r[1:] for r in rows}

    def eos(self, inputs, options) -> EnthalpyEOS:
        """The NumPy EOS of ``inputs`` (rebuilt when a table array or the blend width
        changes; a reset rebuilds the table container around the same arrays, so the key is
        the arrays' identity, not the container's)."""
        width = None if options.constant_properties else float(inputs.material.matprop_smooth_width)
        key = (tuple(id(leaf) for leaf in jax.tree_util.tree_leaves(inputs.eos)), width, options.constant_properties)
        if self._eos is None or self._eos[0] != key:
            # the inputs are kept with the key so that the ids are not reused meanwhile; the
            # tables copied to the host in one go (EnthalpyEOS slicing device arrays leaf by
            # leaf dispatched one small JAX program per slice: 0.2-0.4 s on the first call)
            host = jax.device_get(inputs.eos)
            self._eos = (key, EnthalpyEOS(host, width, options.constant_properties), inputs)
        return self._eos[1]

    def state_fields(self, d, inputs, options) -> dict:
        """E_state = Σ ρ_i V_i h_i and E_state_cons = Σ m_i h_i [J] of one state (its
        ``Diagnostics`` ``d``; h at the cells' static pressures)."""
        mesh = inputs.mesh
        h = specific_enthalpy(self.eos(inputs, options), np.asarray(mesh.P_stag), d.S, self.n_enthalpy)
        return {"E_state": float(np.sum(d.rho * np.asarray(mesh.volume_stag) * h)),
                "E_state_cons": float(np.sum(np.asarray(mesh.mass_stag) * h))}

    def step_fields(self, records, bind, options, solve_key, trace=None, end=None) -> dict:
        """The :data:`STEP_FIELDS` of the latest solve (zeros before the first solve or for
        an empty window).

        Args:
            records: the solver's :class:`~aragog.solver._records.SolveRecords` (the latest
                solve's output times [yr] (K,), states (K, n) and inputs; the final state
                and inputs of the solve before it).
            bind: ``bind(inputs)`` -> a bound program set with ``call("diagnostics", t, y)``.
            solve_key: an object that identifies the latest solve (compared with ``is``; the
                result is cached under it).
            trace: the latest solve's step ends ``(t (M,), y (M, n))`` (the integrator's
                ``result.trace``), added to the quadrature nodes; ``None``: output times only.
            end: ``(t, y, inputs, Diagnostics)`` of a state the caller has evaluated: used
                for the window's last state when it is that state (same time, state and
                inputs), instead of evaluating it again.
        """
        if self._step is not None and self._step[0] is solve_key:
            return self._step[1]
        out = dict.fromkeys(STEP_FIELDS, 0.0)
        if records and len(records.latest[0]) >= 2:
            t_rec, y_rec, inp = records.latest
            bound = bind(inp)
            first = bound.call("diagnostics", float(t_rec[0]), y_rec[0])
            if (end is not None and end[2] is inp and float(end[0]) == float(t_rec[-1])
                    and np.array_equal(end[1], y_rec[-1])):
                last = end[3]
            else:
                last = bound.call("diagnostics", float(t_rec[-1]), y_rec[-1])
            t, y = (t_rec, y_rec) if trace is None or len(trace[0]) == 0 else _merge_nodes(t_rec, y_rec, trace)
            P = node_powers(bound, t, y)
            out.update(self.window_fields(np.asarray(t) * float(inp.scales.t), [first, last], inp, options, P))
            previous = records.previous_final()
            if previous is not None:
                out["step_dE_compression_J"] = self.compression_since(previous, inp, bind, options)
            self._keep_totals(float(t_rec[-1]), out)
        self._step = (solve_key, out)
        return out

    def window_fields(self, t_seconds, diags, inputs, options, power=None) -> dict:
        """The time integrals and the heat-content change over one window from the
        ``Diagnostics`` at its K output times ``t_seconds`` (K,) [s], or from the (K, 7)
        ``power`` at those times (:func:`power_columns`) and the ``Diagnostics`` of the
        first and last state."""
        power = powers(diags) if power is None else power
        out = dict(zip(_POWER_FIELDS, quadrature_weights(t_seconds) @ power))
        mesh = inputs.mesh
        dE = heat_content_change(self.eos(inputs, options), np.asarray(mesh.P_stag), np.asarray(mesh.volume_stag),
                                 diags[0].S, diags[-1].S, self.n_heat)
        out["step_dE_state_heat_J"] = float(np.sum(dE))
        exact = cmb_energy(self.eos(inputs, options), diags[0], diags[-1], inputs, options, self.n_heat)
        if exact is not None:
            out["step_dE_F_cmb_J"] = exact
        return {k: float(v) for k, v in out.items()}

    def compression_since(self, prev, inp_new, bind, options) -> float:
        """Compression work [J] of the structure change from the solve recorded in ``prev``
        (``(t, y, inputs)``; its last state is the carried entropy) to ``inp_new`` (module
        docstring); 0 on an unchanged mesh."""
        inp_old = prev[2]
        P_old, P_new = np.asarray(inp_old.mesh.P_stag), np.asarray(inp_new.mesh.P_stag)
        if P_old.shape != P_new.shape or np.array_equal(P_old, P_new):
            return 0.0
        S = bind(inp_old).call("diagnostics", float(prev[0][-1]), prev[1][-1]).S  # carried entropy
        return compression_work(self.eos(inp_new, options), P_old, P_new, S, np.asarray(inp_old.mesh.mass_stag))

    def history_fields(self, rows, n_latest: int, options) -> dict:
        """Step fields as time series for :meth:`EntropySolver.history`: for each of the
        latest solve's ``n_latest`` rows the energy over the interval from the previous
        row (0 at its first row), for each earlier solve's row (its final state) that
        solve's totals when :meth:`step_fields` computed them (else NaN).

        ``rows``: ``(t [yr], Diagnostics, inputs)`` in time order, the latest solve last.
        """
        n = len(rows)
        out = {k: np.full(n, np.nan) for k in STEP_FIELDS}
        totals = self._totals_by_time()
        for i, (t, _, _) in enumerate(rows[: n - n_latest]):
            row = totals.get(float(t))
            if row is not None:
                for k, v in zip(STEP_FIELDS, row):
                    out[k][i] = v
        latest = rows[n - n_latest:]
        if latest:
            inp = latest[-1][2]
            ts = np.array([r[0] for r in latest]) * float(inp.scales.t)
            diags = [r[1] for r in latest]
            inc = interval_weights(ts) @ powers(diags)
            eos, mesh = self.eos(inp, options), inp.mesh
            P, V = np.asarray(mesh.P_stag), np.asarray(mesh.volume_stag)
            heat = [float(np.sum(heat_content_change(eos, P, V, a.S, b.S, self.n_heat)))
                    for a, b in zip(diags[:-1], diags[1:])]
            cmb = [cmb_energy(eos, a, b, inp, options, self.n_heat) for a, b in zip(diags[:-1], diags[1:])]
            if cmb and cmb[0] is not None:
                inc[:, _POWER_FIELDS.index("step_dE_F_cmb_J")] = cmb
            for j, k in enumerate(_POWER_FIELDS):
                out[k][n - n_latest:] = np.concatenate([[0.0], inc[:, j]])
            out["step_dE_state_heat_J"][n - n_latest:] = np.concatenate([[0.0], heat])
            out["step_dE_compression_J"][n - n_latest:] = 0.0
            row = totals.get(float(latest[-1][0]))
            out["step_dE_compression_J"][n - n_latest] = (
                np.nan if row is None else row[STEP_FIELDS.index("step_dE_compression_J")])
        return out
