"""A phase's state at given pressure and specific entropy: the (P, S) → (V, T) inversion
that turns a Helmholtz model (:mod:`.thermo`) into SPIDER-style (P, S) tables.

At each target (P₀, S₀) a 2-D Newton iteration in (ln V, ln T) solves

    P(V, T) = P₀,        S(V, T) = S₀ M          (molar S; S₀ per kg)

with the exact Jacobian from the model's own derivatives (Maxwell: (∂S/∂V)_T = α K_T):

    | ∂P/∂lnV  ∂P/∂lnT |   | -K_T       α K_T T |
    | ∂S/∂lnV  ∂S/∂lnT | = | α K_T V    C_V     |

vectorised over any array of targets (``jax.vmap``), a fixed number of steps in one
``lax.scan``, each step limited to a factor e^0.3 in V and T. :func:`state_PS` returns the
properties there and how far the residuals are from zero, so that a caller can check
convergence (or mark states that do not exist, e.g. beyond a phase's spinodal).
"""

from __future__ import annotations

from aragog._jax import jax, jnp
from aragog.eos.models.thermo import HelmholtzPhase, properties_VT, state_functions

__all__ = ["volume_temperature", "state_PS"]

#: Largest change of ln V and ln T in one Newton step.
MAX_STEP = 0.3


def volume_temperature(phase: HelmholtzPhase, P, S, T_guess, *, iterations: int = 40):
    """``(V [m³/mol], T [K])`` with P(V, T) = ``P`` [Pa] and S(V, T) = ``S`` [J/kg/K] (arrays of
    any common shape), from ``T_guess`` [K] and ``phase.volume_guess(P, T_guess)``."""
    P, S, T0 = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=jnp.float64) for x in (P, S, T_guess)))
    at = jax.vmap(state_functions(phase))
    p, s = P.ravel(), S.ravel() * phase.molar_mass
    lnt0 = jnp.log(T0.ravel())
    lnv0 = jnp.log(jnp.asarray(phase.volume_guess(p, jnp.exp(lnt0)), dtype=jnp.float64))

    def step(carry, _):
        lnv, lnt = carry
        st = at(jnp.exp(lnv), jnp.exp(lnt))
        aK = st["alpha"] * st["K_T"]
        a11, a12 = -st["K_T"], aK * st["T"]
        a21, a22 = aK * st["V"], st["cv"]
        r1, r2 = st["P"] - p, st["S"] - s
        det = a11 * a22 - a12 * a21
        dlnv = -(a22 * r1 - a12 * r2) / det
        dlnt = -(a11 * r2 - a21 * r1) / det
        return (lnv + jnp.clip(dlnv, -MAX_STEP, MAX_STEP), lnt + jnp.clip(dlnt, -MAX_STEP, MAX_STEP)), None

    (lnv, lnt), _ = jax.lax.scan(step, (lnv0, lnt0), None, length=iterations)
    return jnp.exp(lnv).reshape(P.shape), jnp.exp(lnt).reshape(P.shape)


def state_PS(phase: HelmholtzPhase, P, S, T_guess, *, iterations: int = 40) -> dict:
    """Every property (:data:`aragog.eos.models.thermo.PROPERTY_UNITS`) at (``P`` [Pa], ``S``
    [J/kg/K]), plus ``"P_error"`` (relative) and ``"S_error"`` [J/kg/K]: the residuals left
    (rounding where the state exists and the guess is on its branch)."""
    V, T = volume_temperature(phase, P, S, T_guess, iterations=iterations)
    props = properties_VT(phase, V, T)
    P = jnp.asarray(P, dtype=jnp.float64)
    props["P_error"] = (props["P"] - P) / jnp.maximum(jnp.abs(P), props["K_T"] * 1e-6)
    props["S_error"] = props["S"] - jnp.asarray(S, dtype=jnp.float64)
    return props
