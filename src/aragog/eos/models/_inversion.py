"""A phase's state at given pressure and specific entropy (or temperature): the Newton
solve that turns a Helmholtz model (:mod:`._thermo`) into SPIDER-style (P, S) tables.

At each target a 2-D Newton iteration in (ln V, ln T) solves

    P(V, T) = P₀   and   S(V, T) = S₀ M   (molar S; S₀ per kg)       "fixed S" targets
    P(V, T) = P₀   and   ln T = ln T₀                                "fixed T" targets

with the exact Jacobian from the model's own derivatives (Maxwell: (∂S/∂V)_T = α K_T):

    | ∂P/∂lnV  ∂P/∂lnT |   | -K_T       α K_T T |      (fixed T: second row 0, 1)
    | ∂S/∂lnV  ∂S/∂lnT | = | α K_T V    C_V     |

vectorised over flat arrays of targets (``jax.vmap``), a fixed number of steps in one
``lax.scan``, each step limited to a factor e^0.3 in V and T. Fixed-T targets make the
same program a V(P, T) solve, so one compiled program per phase serves the forward
(P, T) states and the (P, S) table.

The properties returned are those of the last iterate the scan evaluated (the state
before its final update), carried out of the loop. So the model is traced once, and the
residuals ``P_error`` and ``S_error`` belong to exactly the state whose properties are
reported. A caller checks them for convergence, or to mark states that do not exist, for
example beyond a phase's spinodal.
"""

from __future__ import annotations

from aragog._jax import jax, jnp
from aragog.eos.models._thermo import HelmholtzPhase, state_functions

__all__ = ["solve_states", "volume_temperature", "state_PS"]

#: Largest change of ln V and ln T in one Newton step.
MAX_STEP = 0.3
#: Molar properties carried out of the iteration (the rest are derived from them).
_CARRIED = ("V", "T", "P", "S", "cv", "cp", "alpha", "K_T", "dTdP_S")


def solve_states(phase: HelmholtzPhase, P, target, fixed_T, V_guess, T_guess, *, iterations: int = 40) -> dict:
    """States of ``phase`` at flat arrays (n,) of pressure ``P`` [Pa] and ``target``: the
    specific entropy [J/kg/K], or the temperature [K] where ``fixed_T`` is true; from
    ``V_guess`` [m³/mol] and ``T_guess`` [K]. Traceable (jit it).

    Returns specific properties (``T``, ``V``, ``P``, ``S``, ``rho``, ``cp``, ``cv``,
    ``alpha``, ``K_T``, ``dTdP_S``) of the last state evaluated, plus ``P_error``
    (P − P₀ relative to max(|P₀|, K_T)) and ``S_error`` (S − S₀ [J/kg/K]; 0 for fixed-T
    targets)."""
    M = phase.molar_mass
    at = jax.vmap(state_functions(phase))
    P = jnp.asarray(P, dtype=jnp.float64)
    target = jnp.asarray(target, dtype=jnp.float64)
    s_molar = jnp.where(fixed_T, 0.0, target * M)
    ln_target = jnp.log(jnp.where(fixed_T, target, 1.0))

    def step(carry, _):
        lnv, lnt, _ = carry
        st = at(jnp.exp(lnv), jnp.exp(lnt))
        aK = st["alpha"] * st["K_T"]
        a11, a12 = -st["K_T"], aK * st["T"]
        a21 = jnp.where(fixed_T, 0.0, aK * st["V"])
        a22 = jnp.where(fixed_T, 1.0, st["cv"])
        r1 = st["P"] - P
        r2 = jnp.where(fixed_T, lnt - ln_target, st["S"] - s_molar)
        det = a11 * a22 - a12 * a21
        dlnv = -(a22 * r1 - a12 * r2) / det
        dlnt = -(a11 * r2 - a21 * r1) / det
        new = (lnv + jnp.clip(dlnv, -MAX_STEP, MAX_STEP), lnt + jnp.clip(dlnt, -MAX_STEP, MAX_STEP))
        return (*new, {k: st[k] for k in _CARRIED}), None

    lnv0 = jnp.log(jnp.asarray(V_guess, dtype=jnp.float64))
    lnt0 = jnp.log(jnp.asarray(T_guess, dtype=jnp.float64))
    empty = {k: jnp.zeros_like(P) for k in _CARRIED}
    (_, _, st), _ = jax.lax.scan(step, (lnv0, lnt0, empty), None, length=iterations)
    out = dict(st)
    for key in ("S", "cv", "cp"):
        out[key] = st[key] / M
    out["rho"] = M / st["V"]
    out["P_error"] = (st["P"] - P) / jnp.maximum(jnp.abs(P), st["K_T"])
    out["S_error"] = jnp.where(fixed_T, 0.0, out["S"] - target)
    return out


def state_PS(phase: HelmholtzPhase, P, S, T_guess, *, iterations: int = 40) -> dict:
    """Properties (as :func:`solve_states`) at (``P`` [Pa], ``S`` [J/kg/K]), arrays of any
    common shape, from ``T_guess`` [K] and ``phase.volume_guess(P, T_guess)``."""
    P, S, T0 = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=jnp.float64) for x in (P, S, T_guess)))
    p, t0 = P.ravel(), T0.ravel()
    out = solve_states(phase, p, S.ravel(), jnp.zeros(p.shape, bool), phase.volume_guess(p, t0), t0,
                       iterations=iterations)
    return {k: v.reshape(P.shape) for k, v in out.items()}


def volume_temperature(phase: HelmholtzPhase, P, S, T_guess, *, iterations: int = 40):
    """``(V [m³/mol], T [K])`` with P(V, T) = ``P`` [Pa] and S(V, T) = ``S`` [J/kg/K]
    (arrays of any common shape), from ``T_guess`` [K]."""
    out = state_PS(phase, P, S, T_guess, iterations=iterations)
    return out["V"], out["T"]
