"""``build_jax_rhs_and_jacobian`` (upstream name): CVODE callbacks for PROTEUS's JAX factory.

PROTEUS's ``backend = "jax"`` registers a factory with
``solver.set_jax_cvode_factory(factory)``; the solver calls ``factory(scales,
core_bc_mode)`` once per ``solve()``, and the factory returns this function's callbacks.
Upstream that builds and compiles a second, JAX copy of the physics. Here the solver's
right-hand side and analytic Jacobian are already compiled JAX programs, so the callbacks
are those programs bound to the solver's current inputs: no trace, no compile, and the
same numbers as every other path (``docs/compat.md``).
"""

from __future__ import annotations

import math

import numpy as np

from aragog._jax import in_float64
from aragog.errors import AragogError

__all__ = ["build_jax_rhs_and_jacobian"]

#: Relative difference above which a factory record disagrees with the solver's parameters.
_MATCH_RTOL = 1e-12


def build_jax_rhs_and_jacobian(eos_jax, params_jax, mesh_jax, bc_jax, heating_static, scales,
                               core_bc_mode: str = "energy_balance", radio_isotope_params=(),
                               core_module_budget=None, core_module_q_radio: float = 0.0,
                               core_module_ra_crit_cmb=None):
    """``(rhs_fn, jac_fn, info)`` for the solver that issued ``scales``.

    ``rhs_fn(t, y, ydot)`` writes dy/dt of the solver's scaled state ``y`` at time ``t``
    [yr] into ``ydot`` (n_state,); ``jac_fn(t, y, fy, J)`` writes the Jacobian in the
    solver's band (or dense) storage into ``J``. ``info`` says where they come from.

    The value records (``params_jax``, ``bc_jax``, heating) are not a second source of
    truth: the solver reads its parameters. ``bc_jax``'s surface values are checked
    against them, so a record built from stale values raises instead of integrating
    something else.

    ``core_module_budget``, ``core_module_q_radio`` and ``core_module_ra_crit_cmb`` (PROTEUS
    26.10 passes them, None and 0 outside core_bc "core_module") belong to the upstream's
    stratified core, which this package refuses (``aragog.parser``).

    Raises:
        AragogError: ``scales`` does not come from a live solver, the solver has not been
            initialised, the boundary record disagrees with the solver's parameters, or a
            core-module budget is given.
    """
    if core_module_budget is not None:
        raise AragogError("build_jax_rhs_and_jacobian: core_module_budget is given, but core_bc 'core_module' "
                          "(the upstream's stratified core) is not available here")
    solver = scales.solver() if hasattr(scales, "solver") else None
    if solver is None:
        raise AragogError("build_jax_rhs_and_jacobian: `scales` must be the NonDimScales a solver passes to "
                          "its factory (solver.set_jax_cvode_factory)")
    bound = solver.bound_programs
    if bound is None:
        raise AragogError("build_jax_rhs_and_jacobian: initialise the solver first")
    bc = solver.parameters.boundary_conditions
    checks = (("outer_bc_value", "outer_boundary_value"), ("T_eq", "equilibrium_temperature"),
              ("emissivity", "emissivity"))
    for record_name, param_name in checks:
        got, want = float(getattr(bc_jax, record_name)), float(getattr(bc, param_name))
        if not math.isclose(got, want, rel_tol=_MATCH_RTOL, abs_tol=0.0):
            raise AragogError(f"build_jax_rhs_and_jacobian: BoundaryParams.{record_name} = {got} but the solver's "
                              f"boundary_conditions.{param_name} = {want}; build the record from the live parameters")
    if core_bc_mode != bc.core_bc:
        raise AragogError(f"build_jax_rhs_and_jacobian: core_bc_mode {core_bc_mode!r} differs from the solver's "
                          f"core_bc {bc.core_bc!r}")

    @in_float64
    def rhs_fn(t, y, ydot):
        bound.rhs_into(float(t), np.asarray(y, dtype=np.float64), ydot)
        return 0

    @in_float64
    def jac_fn(t, y, fy, J):
        bound.jac_into(float(t), np.asarray(y, dtype=np.float64), J)
        return 0

    # the adapter checks that its factory returned these (UpstreamEntropySolver._call_factory)
    rhs_fn.aragog_bound_programs = jac_fn.aragog_bound_programs = bound
    info = {"source": "aragog compiled programs", "n_state": bound.n, "band": (bound.ml, bound.mu),
            "jac_layout": bound.jac_layout, "core_bc": core_bc_mode}
    return rhs_fn, jac_fn, info
