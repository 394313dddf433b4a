"""Core-mantle boundary pieces of the core modes "gradient" and "bower2018" (the
prescribed-temperature closure of core_bc "temperature" sits with the other boundary
closures in :func:`aragog.physics._rhs.basic_node_entropy`).

Pure functions, arrays in and out, SI units. The equations follow the upstream aragog
(fwl-aragog 26.10.22, ``EntropySolver._dSdt_single`` and ``_reconstruct_entropy``; cited
as equations, not code) and are stated in docs/physics.md, "Core modes".
"""

from __future__ import annotations

from aragog._jax import jnp

__all__ = [
    "radial_basic_nodes",
    "conductive_cmb_flux",
    "core_temperature_rate",
    "gradient_layout",
    "entropy_layout",
]


def radial_basic_nodes(S, dSdr_cmb, mesh):
    """Entropy and radial gradient at the N+1 basic nodes with the stencils of the upstream
    "gradient" formulation, written over the cell entropies.

    S (N,) [J/kg/K]: cell entropies; dSdr_cmb [J/kg/K/m]: the CMB gradient (state slot).
    Returns (S_b (N+1,), dSdr_b (N+1,)) with, for r_s the cell radii and r_b the nodes:

    * G_j = (S_j - S_{j-1}) / (r_s,j - r_s,j-1), j = 1..N-1 (radial differences);
    * G_0 = dSdr_cmb; G_N = G_{N-1} (the surface gradient copies the nearest interior one:
      SPIDER's bc.c convention, which the upstream's gradient state keeps by giving G_N the
      rate of G_{N-1});
    * S_b,j = S_{j-1} + G_j (r_b,j - r_s,j-1) for j = 1..N, S_b,0 = S_0 + G_0 (r_b,0 - r_s,0)
      (the upstream's reconstruction from the surface inward, as its basic-node values).
    """
    r_s, r_b = mesh.r_stag, mesh.r_basic
    G_int = (S[1:] - S[:-1]) / (r_s[1:] - r_s[:-1])
    G = jnp.concatenate([jnp.reshape(dSdr_cmb, (1,)), G_int, G_int[-1:]])
    S_bot = S[0] + G[0] * (r_b[0] - r_s[0])
    S_up = S + G[1:] * (r_b[1:] - r_s)  # nodes 1..N from the cell below each
    return jnp.concatenate([jnp.reshape(S_bot, (1,)), S_up]), G


def conductive_cmb_flux(T_bottom, k_bottom, T_core, r_b0, r_b1):
    """CMB heat flux of core_bc "bower2018" [W/m2] (positive outward): molecular
    conduction across the bottom half cell, F_0 = -k_0 (T_0 - T_core) / (½ (r_b1 - r_b0)),
    with T_0 [K] and k_0 [W/m/K] the temperature and conductivity of the bottom cell and
    T_core [K] the state slot (upstream ``_dSdt_single``, bower2018 branch)."""
    return -k_bottom * (T_bottom - T_core) / (0.5 * (r_b1 - r_b0))


def core_temperature_rate(F_0, A_0, core_mass, core_cp):
    """dT_core/dt = -F_0 A_0 / (M_c c_c) [K/s]: the core, an isothermal reservoir of heat
    capacity M_c c_c (no tfac_core factor, as in the upstream bower2018 mode), loses the
    CMB heat flow F_0 A_0 [W]."""
    return -F_0 * A_0 / (core_mass * core_cp)



def gradient_layout(S, dSdr_cmb, mesh):
    """The upstream "gradient" state, y_g = [G_0, ..., G_N, S_{N-1}] (N+2,), of the cell
    entropies S (N,) [J/kg/K] and the CMB gradient [J/kg/K/m]: the gradients of
    :func:`radial_basic_nodes` (G_N = G_{N-1}) and the top cell's entropy.

    The upstream seeds G from its own differentiation matrix (dS/dξ · dξ/dr, a 3-point
    boundary stencil); these are the radial differences its reconstruction inverts, so
    :func:`entropy_layout` returns S exactly (to rounding)."""
    _, G = radial_basic_nodes(S, dSdr_cmb, mesh)
    return jnp.concatenate([G, S[-1:]])


def entropy_layout(y_g, mesh):
    """(S (N,), dSdr_cmb) of an upstream "gradient" state y_g (N+2,): S rebuilt by
    integrating from the top cell inward, S_i = S_{i+1} - G_{i+1} (r_s,i+1 - r_s,i)
    (upstream ``_reconstruct_entropy``), dSdr_cmb = G_0. G_N is not used: in this package's
    formulation the surface gradient is G_{N-1} (equal when the state was made that way)."""
    G_int = y_g[1:-2]
    steps = G_int * (mesh.r_stag[1:] - mesh.r_stag[:-1])  # S_{i+1} - S_i, i = 0..N-2
    below = jnp.cumsum(steps[::-1])[::-1]  # S_{N-1} - S_i for i = 0..N-2
    S = jnp.concatenate([y_g[-1] - below, y_g[-1:]])
    return S, y_g[0]
