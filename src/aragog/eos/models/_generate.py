"""SPIDER-style (P, S) tables from Helmholtz phase models: the generator behind
``eos.model = "mgsio3"`` and ``aragog eos generate --model mgsio3``.

For each phase, on a grid uniform in P (shared) and in S (its own axis):

1. a first guess of T(P, S): the phase's S(P, T) forward on a coarse T ladder at every
   pressure of the axis (:func:`~.thermo.properties_PT`), inverted per pressure by
   linear interpolation in S;
2. the (P, S) → (V, T) Newton solve of :mod:`._inversion` from that guess (quadratic from
   within a few per cent: :data:`NEWTON_STEPS` steps reach rounding);
3. T, ρ, c_p, α and (∂T/∂P)_S at the converged (V, T) by autodiff of F.

All of it runs in one jitted program per phase (compiled once per process and table
shape). Every node must converge to a state of the phase: residuals at rounding, K_T, c_V,
c_p > 0. Otherwise :class:`~aragog.errors.EOSError` names the phase, how many nodes failed
and where (P and S ranges). The melting curves are sampled on the same P axis.
"""

from __future__ import annotations

import functools
import logging
import time

import numpy as np

from aragog._jax import in_float64, jax, jnp
from aragog.eos.models._inversion import solve_states
from aragog.eos.models._mgsio3 import DEFAULT_NP, DEFAULT_NS, MGSIO3, MgSiO3Model
from aragog.errors import EOSError

__all__ = ["generate_tables", "phase_arrays", "NEWTON_STEPS"]

log = logging.getLogger("aragog.eos")

#: Newton steps per solve: from the volume guess (fixed-T states, within 25 %) or the
#: interpolated T guess (fixed-S states, within a few per cent) rounding is reached in
#: <= 8 on the default grids; the rest is margin (~40 ms per step for 200 x 200 states).
NEWTON_STEPS = 12
#: Temperatures [K] of the forward ladder behind the first guess (log-spaced: T(S) is
#: close to exponential at fixed P).
LADDER = np.geomspace(150.0, 30000.0, 64)
#: Largest residuals accepted at a node: in P relative to max(|P|, K_T), in S absolute [J/kg/K].
P_TOL, S_TOL = 1e-9, 1e-6


@functools.partial(jax.jit, static_argnums=0)
def _solve_program(phase, P, target, fixed_T, T_guess):
    """:func:`~.inversion.solve_states` of ``phase`` (static: one compiled program per
    phase and input length, kept by JAX's own jit cache) on flat arrays (P, target,
    fixed_T, T_guess) of one length, from ``phase.volume_guess``."""
    return solve_states(phase, P, target, fixed_T, phase.volume_guess(P, T_guess), T_guess,
                        iterations=NEWTON_STEPS)


def _solve(phase, P, target, fixed_T, T_guess, length: int) -> dict[str, np.ndarray]:
    """:func:`_solve_program` on the flat inputs, padded to ``length`` (so that the
    forward and the table solves of a phase share one compiled program) with a benign
    state (P = 0 at T_guess[0]); NumPy results of the real entries, plus ``ok`` (a
    converged state of the phase)."""
    n = P.size
    pad = length - n
    cat = lambda a, fill: np.concatenate([np.asarray(a, dtype=np.float64), np.full(pad, fill, dtype=np.float64)])
    args = (cat(P, 0.0), cat(target, T_guess[0]), np.concatenate([fixed_T, np.ones(pad, bool)]),
            cat(T_guess, T_guess[0]))
    out = {k: np.asarray(v)[:n] for k, v in _solve_program(phase, *(jnp.asarray(a) for a in args)).items()}
    finite = np.all([np.isfinite(out[k]) for k in ("T", "rho", "cp", "cv", "alpha", "dTdP_S", "K_T")], axis=0)
    out["ok"] = (finite & (np.abs(out["P_error"]) < P_TOL) & (np.abs(out["S_error"]) < S_TOL)
                 & (out["K_T"] > 0) & (out["cv"] > 0) & (out["cp"] > 0))
    return out


def _guess_from_ladder(S_ladder: np.ndarray, ok: np.ndarray, S: np.ndarray, P: np.ndarray, name: str) -> np.ndarray:
    """T(P, S) [K], (ns, np): the forward S(P, T) ladder (nt, np), inverted by linear
    interpolation of ln T in S per pressure over its converged, increasing part (clamped
    at its ends)."""
    guess = np.empty((S.size, P.size))
    for j in range(P.size):
        s, t = S_ladder[ok[:, j], j], LADDER[ok[:, j]]
        rising = np.concatenate(([True], np.diff(s) > 0)) if s.size else s.astype(bool)
        s, t = s[rising], t[rising]
        if s.size < 2:
            raise EOSError(f"{name}: no state found at P = {P[j] / 1e9:.4g} GPa "
                           f"between {LADDER[0]:.0f} and {LADDER[-1]:.0f} K")
        guess[:, j] = np.exp(np.interp(S, s, np.log(t)))
    return guess


def _span(values: np.ndarray) -> str:
    return f"{values.min():.6g}-{values.max():.6g}" if values.size else "-"


@in_float64
def phase_arrays(phase, P: np.ndarray, T_range, curve, ns: int) -> dict[str, np.ndarray]:
    """Tables of ``phase`` on the pressure axis ``P`` [Pa] and ``ns`` entropies uniform
    between S(0, ``T_range``[0]) and S(0, ``T_range``[1]), and the entropy of the phase on
    the melting ``curve`` at ``P``: ``{"S": (ns,), "S_curve": (np,), "T", "rho", "cp",
    "alpha", "dTdPs", "cv", "K_T": (ns, np)}`` (SI; c_V and K_T are not part of a SPIDER
    set, they are here for checks). Raises EOSError unless every node and every point
    of the curve is a converged state of the phase."""
    np_, nt = P.size, LADDER.size
    length = max(ns * np_, 2 + np_ + nt * np_)
    T_curve = np.asarray(curve.temperature(P), dtype=np.float64)
    P_fwd = np.concatenate([[0.0, 0.0], P, np.tile(P, nt)])
    T_fwd = np.concatenate([np.asarray(T_range, dtype=np.float64), T_curve, np.repeat(LADDER, np_)])
    fwd = _solve(phase, P_fwd, T_fwd, np.ones(P_fwd.size, bool), T_fwd, length)
    if not fwd["ok"][:2].all():
        raise EOSError(f"{phase.name}: no state at P = 0 for T = {T_range[0]:g}-{T_range[1]:g} K "
                       "(the ends of its table's entropy axis)")
    on_curve = slice(2, 2 + np_)
    if not fwd["ok"][on_curve].all():
        bad = ~fwd["ok"][on_curve]
        raise EOSError(f"{phase.name}: no state on the {curve.name.split(' (')[0]} at P "
                       f"{_span(P[bad] / 1e9)} GPa (T {_span(T_curve[bad])} K)")
    S = np.linspace(fwd["S"][0], fwd["S"][1], ns)
    ladder = slice(2 + np_, None)
    guess = _guess_from_ladder(fwd["S"][ladder].reshape(nt, np_), fwd["ok"][ladder].reshape(nt, np_), S, P,
                               phase.name)
    grid_P = np.broadcast_to(P[None, :], (ns, np_)).ravel()
    grid_S = np.broadcast_to(S[:, None], (ns, np_)).ravel()
    out = _solve(phase, grid_P, grid_S, np.zeros(grid_P.size, bool), guess.ravel(), length)
    if not out["ok"].all():
        bad = ~out["ok"]
        raise EOSError(f"{phase.name}: no converged state at {bad.sum()} of {bad.size} table nodes "
                       f"(P {_span(grid_P[bad] / 1e9)} GPa, S {_span(grid_S[bad])} J/kg/K); narrow the "
                       "table's temperature range or pressure axis")
    shape = (ns, np_)
    tables = {k: out[k].reshape(shape) for k in ("T", "rho", "cp", "alpha", "cv", "K_T")}
    tables["dTdPs"] = out["dTdP_S"].reshape(shape)
    return {"S": S, "S_curve": fwd["S"][on_curve], **tables}


@in_float64
def generate_tables(model: MgSiO3Model = MGSIO3, np_: int | None = None, ns: int | None = None,
                    pmax: float | None = None):
    """The model's :class:`~aragog.eos._tables.EOSTables` (NumPy leaves), ``np_`` pressures
    (default :data:`~.mgsio3.DEFAULT_NP`) on [0, ``pmax``] Pa (default ``model.P_max``) x
    ``ns`` entropies per phase (default :data:`~.mgsio3.DEFAULT_NS`). No caching (see
    :func:`aragog.eos.default_table_set`)."""
    from aragog.eos._tables import EOSTables, PhaseBoundary, PhaseTable

    np_ = DEFAULT_NP if np_ is None else int(np_)
    ns = DEFAULT_NS if ns is None else int(ns)
    pmax = model.P_max if pmax is None else float(pmax)
    if np_ < 2 or ns < 2:
        raise EOSError(f"the table grid needs at least 2 points per axis, got np={np_}, ns={ns}")
    if not (np.isfinite(pmax) and pmax > 0):
        raise EOSError(f"the table's top pressure must be positive, got pmax={pmax!r} Pa")
    t0 = time.perf_counter()
    P = np.linspace(0.0, pmax, np_)
    phases, curves = {}, {}
    for name, curve_name, curve in (("melt", "liquidus", model.liquidus), ("solid", "solidus", model.solidus)):
        a = phase_arrays(model.phase(name), P, model.temperature_range(name), curve, ns)
        if a["S_curve"].min() < a["S"][0] or a["S_curve"].max() > a["S"][-1]:
            raise EOSError(f"the {curve_name} (S {_span(a['S_curve'])} J/kg/K) leaves the {name} table's "
                           f"entropy range {_span(a['S'])} J/kg/K; widen the {name}'s temperature range")
        phases[name] = PhaseTable.from_arrays(P, a["S"], a["T"], a["rho"], a["cp"], a["dTdPs"], a["alpha"],
                                              name=f"MgSiO3 {name}")
        curves[curve_name] = PhaseBoundary.from_arrays(P, a["S_curve"], name=f"MgSiO3 {curve_name}")
    tables = EOSTables(phases["melt"], phases["solid"], curves["solidus"], curves["liquidus"])
    log.info("generated the MgSiO3 EOS tables (%d x %d per phase, 0-%.4g GPa) in %.2f s",
             np_, ns, pmax / 1e9, time.perf_counter() - t0)
    return tables
