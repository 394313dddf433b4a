"""Boundary conditions: surface (grey body, prescribed flux, prescribed temperature) and
core-mantle boundary (prescribed flux, quasi-steady core cooling, core energy balance).

Equations: docs/physics.md, "Boundary conditions"; the ultra-thin boundary layer follows
SPIDER (Bower et al. 2018, eq. 18). The assembly that uses these pieces is in
:mod:`aragog.physics._rhs`.
"""

from __future__ import annotations

from aragog._jax import jax, jnp
from aragog.eos._host import INVERSION_GRID
from aragog.physics._inputs import SIGMA_SB
from aragog.physics._transport import material_state

__all__ = [
    "grey_body_flux",
    "utbl_radiating_temperature",
    "surface_flux",
    "quasi_steady_cmb_flux",
    "core_entropy_rate",
    "surface_entropy_for_temperature",
    "INVERSION_ITERATIONS",
    "INVERSION_GRID",
]

#: Table-mode inversion (:func:`surface_entropy_for_temperature`): T(P, S) is first
#: evaluated on INVERSION_GRID entropies (:data:`aragog.eos._host.INVERSION_GRID`, the grid
#: of the NumPy inversion too) spanning the tables' S range (one vectorised EOS
#: call), which brackets the root to one grid interval (<= ~15 J/kg/K for the bundled
#: tables); then INVERSION_ITERATIONS safeguarded Newton steps refine it. T is linear in
#: S inside a table cell (bilinear lookup along a grid line) and smooth in the phase
#: blends, so Newton converges in a few steps; a bracket interval holds at most a few
#: kinks. Worst case (bisection only): interval / 2^INVERSION_ITERATIONS.
INVERSION_ITERATIONS = 12


def grey_body_flux(T_rad, T_eq, emissivity):
    """F = ε σ (T_rad^4 - T_eq^4) [W/m2] (docs/physics.md, "Boundary conditions", surface 1)."""
    return emissivity * SIGMA_SB * (T_rad**4 - T_eq**4)


def utbl_radiating_temperature(T_magma, c):
    """Radiating temperature of the ultra-thin boundary layer (SPIDER ``tsurf_param``;
    Bower et al. 2018 eq. 18): the temperature drop across the layer is c T_rad^3, so
    T_rad is the real root of c T^3 + T - T_magma = 0 [c in K^-2].

    The depressed cubic x^3 + x/c - T_magma/c = 0 has one real root, written in the
    hyperbolic form  T_rad = 2/sqrt(3c) sinh( asinh( (3/2) sqrt(3c) T_magma ) / 3 ),
    free of the cancellation of Cardano's two-cube-root form as c -> 0 (where T_rad -> T_magma).
    c <= 0 returns T_magma (no layer).
    """
    positive = c > 0.0
    a = jnp.sqrt(3.0 * jnp.where(positive, c, 1.0))
    root = (2.0 / a) * jnp.sinh(jnp.arcsinh(1.5 * a * T_magma) / 3.0)
    return jnp.where(positive, root, T_magma)


def surface_flux(T_surface, boundary, options):
    """F_N [W/m2] for outer_boundary_condition 1 (grey body, with the UTBL when ``options.utbl``) and 4
    (``boundary.outer_boundary_value``). Surface bc 5 takes F_N from the flux laws instead (see
    :mod:`aragog.physics._rhs`)."""
    if options.outer_boundary_condition == 4:
        return jnp.asarray(boundary.outer_boundary_value, dtype=jnp.float64)
    if options.outer_boundary_condition != 1:
        raise ValueError(f"surface_flux: outer_boundary_condition {options.outer_boundary_condition} "
                         "has no closed-form flux")
    T_rad = utbl_radiating_temperature(T_surface, boundary.param_utbl_const) if options.utbl else T_surface
    return grey_body_flux(T_rad, boundary.equilibrium_temperature, boundary.emissivity)


def quasi_steady_cmb_flux(F_1, H_0, rho_0, cp_0, V_0, A_0, A_1, core_mass, core_cp, tfac_core):
    """Quasi-steady core cooling (docs/physics.md, "Boundary conditions", CMB "quasi_steady"):

    F_0 = (A_1/A_0) (F_1 - H_0 ρ_0 V_0 / A_1) / (1 + ρ_0 c_p,0 V_0 / (M_c c_c f)),

    ((r_1/r_0)^2 = A_1/A_0). It follows from the core energy M_c c_c f dT_cmb/dt = -F_0 A_0
    with the core cooling in step with the lowest cell, dT_cmb/dt = (T_0/c_p,0) dS_0/dt.
    """
    ratio = rho_0 * cp_0 * V_0 / (core_mass * core_cp * tfac_core)
    return (A_1 / A_0) * (F_1 - H_0 * rho_0 * V_0 / A_1) / (1.0 + ratio)


def core_entropy_rate(F_0, A_0, cp_b0, T_b0, core_mass, core_cp, tfac_core):
    """dS_b0/dt = -F_0 A_0 c_p,b0 / (c_c T_b0 f M_c) [J/kg/K/s] (docs/physics.md,
    "Boundary conditions", CMB "energy_balance": the core, heat capacity M_c c_c f, loses
    F_0 A_0 and the CMB node follows it,
    dT_b0 = (T_b0/c_p,b0) dS_b0)."""
    return -F_0 * A_0 * cp_b0 / (core_cp * T_b0 * tfac_core * core_mass)


def surface_entropy_for_temperature(T, P, inputs, options, iterations: int = INVERSION_ITERATIONS,
                                    grid: int = INVERSION_GRID):
    """Entropy S [J/kg/K] with T(P, S) = ``T`` [K] at pressure ``P`` [Pa] (broadcast shapes).

    Constant-property mode: S = S_ref + c_p ln(T/T_ref) (exact inverse).
    Table mode (T increases with S): T(P, ·) is evaluated at ``grid`` entropies uniform
    over the tables' S range [min S_axis, max S_axis]; the root is bracketed by the last
    grid point with T <= target and the next one; then ``iterations`` safeguarded Newton
    steps: f = T(P, S) - target, f' = dT/dS (forward-mode derivative of the evaluator),
    the bracket shrinks by the sign of f, and the Newton point is taken when f' > 0 and it
    lies in the bracket (up to a rounding slack, then clipped into it), else the midpoint.
    A temperature outside the table's range at P converges to the bracket end (the lookup
    clips). Fixed trip count: jittable, and
    forward-mode differentiable with respect to T, P and the inputs.
    """
    T = jnp.asarray(T, dtype=jnp.float64)
    P = jnp.asarray(P, dtype=jnp.float64)
    T, P = jnp.broadcast_arrays(T, P)
    if options.constant_properties:
        p = inputs.eos
        return p.const_S_ref + p.const_Cp * jnp.log(T / p.const_T_ref)

    tables = inputs.eos
    lo0 = jnp.minimum(tables.solid.S[0], tables.melt.S[0])
    hi0 = jnp.maximum(tables.solid.S[-1], tables.melt.S[-1])

    def temperature(S):
        return material_state(P, S, inputs, options).T

    # Bracket on a grid: S_k = lo0 + k h, k = 0..grid-1 (a trailing axis of length grid).
    frac = jnp.linspace(0.0, 1.0, grid, dtype=jnp.float64)
    S_grid = lo0 + (hi0 - lo0) * frac
    T_grid = material_state(P[..., None], S_grid, inputs, options).T
    k = jnp.clip(jnp.sum(T_grid <= T[..., None], axis=-1) - 1, 0, grid - 2)
    lo = S_grid[k]
    hi = S_grid[k + 1]

    def step(_, carry):
        lo, hi, S = carry
        f, df = jax.jvp(temperature, (S,), (jnp.ones_like(S),))
        f = f - T
        lo = jnp.where(f <= 0.0, S, lo)
        hi = jnp.where(f > 0.0, S, hi)
        good = df > 0.0
        newton = S - f / jnp.where(good, df, 1.0)
        # Accept a Newton point up to a rounding slack outside the bracket and clip it in:
        # XLA may evaluate f in two fusions with different roundings (FMA contraction), so
        # at convergence the sign used for the bracket and the f of the Newton step can
        # disagree by ~1e-13 K; a strict test would then throw a converged S to the midpoint.
        slack = 1e-9 * (jnp.abs(S) + 1.0)
        ok = good & (newton >= lo - slack) & (newton <= hi + slack)
        return lo, hi, jnp.where(ok, jnp.clip(newton, lo, hi), 0.5 * (lo + hi))

    _, _, S = jax.lax.fori_loop(0, iterations, step, (lo, hi, 0.5 * (lo + hi)))
    return S
