"""State layout of the physics: the nondimensional state vector y and its Jacobian band.

State vector y (nondimensional, float64, shape ``(state_size(N, options),)``):

* core_bc "energy_balance" or "gradient": y[0] = (dS/dr)_cmb / Scales.dSdr, y[1:] =
  S_cells / Scales.S (the extra slot first keeps the Jacobian banded: lower bandwidth 1,
  upper 2);
* core_bc "bower2018": y[0] = T_core / Scales.T, y[1:] = S_cells / Scales.S (tridiagonal);
* core_bc "flux", "temperature" or "quasi_steady": y = S_cells / Scales.S (N slots).

Time t is nondimensional: t_seconds = t * Scales.t (docs/physics.md, "State vector").
"""

from __future__ import annotations

from aragog._jax import jnp
from aragog.physics import _transport as tr
from aragog.physics._inputs import PhysicsInputs, PhysicsOptions

__all__ = ["state_size", "band_widths", "split_state", "join_state"]


def state_size(n_cells: int, options: PhysicsOptions) -> int:
    """Length of y: N cells, plus the (dS/dr)_cmb or T_core slot (see the module docstring)."""
    return int(n_cells) + options.extra_slots


def band_widths(options: PhysicsOptions) -> tuple[int, int]:
    """(lower, upper) bandwidths of d(dy/dt)/dy: (1, 2) with the dS/dr_cmb slot (row 0
    depends on the slot, S_0 and S_1), (1, 1) otherwise (tridiagonal; the T_core slot's
    row depends on T_core and S_0 only)."""
    return (1, 2) if options.energy_balance else (1, 1)


def split_state(y, inputs: PhysicsInputs, options: PhysicsOptions):
    """(S_cells [J/kg/K] shape (N,), slot): the slot is (dS/dr)_cmb [J/kg/K/m] ("energy_balance",
    "gradient"), T_core [K] ("bower2018"), else None."""
    sc = inputs.scales
    if options.energy_balance:
        return y[1:] * sc.S, y[0] * sc.dSdr
    if options.core_temperature_slot:
        return y[1:] * sc.S, y[0] * sc.T
    return y * sc.S, None


def join_state(S_cells, dSdr_cmb, inputs: PhysicsInputs, options: PhysicsOptions):
    """Nondimensional y from S_cells [J/kg/K] (N,) and the slot value ``dSdr_cmb``.

    The slot is (dS/dr)_cmb [J/kg/K/m] with core_bc "energy_balance" or "gradient" (there
    ``None`` takes the radial gradient of the two lowest cells, (S_1 - S_0)/(r_s1 - r_s0),
    0 for an isentrope) and T_core [K] with "bower2018" (``None``: the bottom cell's
    temperature); it is ignored otherwise.
    """
    sc = inputs.scales
    S = jnp.asarray(S_cells, dtype=jnp.float64)
    y = S / sc.S
    if options.energy_balance:
        if dSdr_cmb is None:
            r = inputs.mesh.r_stag
            dSdr_cmb = (S[1] - S[0]) / (r[1] - r[0])
        slot = jnp.asarray(dSdr_cmb, dtype=jnp.float64) / sc.dSdr
    elif options.core_temperature_slot:
        if dSdr_cmb is None:
            dSdr_cmb = tr.material_state(inputs.mesh.P_stag[:1], S[:1], inputs, options).T[0]
        slot = jnp.asarray(dSdr_cmb, dtype=jnp.float64) / sc.T
    else:
        return y
    return jnp.concatenate([jnp.reshape(slot, (1,)), y])
