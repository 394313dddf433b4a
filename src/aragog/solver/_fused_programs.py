"""The solver's fused programs: what it compiles, their bodies and XLA options.

:func:`fused_programs` builds the :class:`~aragog.programs.JitPair` of one static
configuration: "rhs", its banded Jacobian "jac", "diagnostics" (get_state, the output),
"melt_fraction" (the phase step cap's event), "powers" (the energy budget's seven powers
per state, :func:`aragog.solver._budget.power_columns`) and "corrector" (CVODE's Newton
solve of a step, with the CVODE back end's iteration limit and check). It stays with the
solver because it names the solver's own programs (the energy budget, the CVODE back end);
the machinery that compiles, shares, stores and counts them is :mod:`aragog.programs`,
whose :class:`~aragog.programs.Programs` is what the solver asks of them in either compile
mode (compile_mode "blocks" is :mod:`aragog.programs._blocks`).
"""

from __future__ import annotations

import functools

from aragog import physics
from aragog._jax import jnp
from aragog.solver._budget import power_columns
from aragog.programs._jitpair import JitPair

__all__ = ["COMPILER_OPTIONS", "POWERS_CHUNK", "fused_programs"]


#: XLA options per program of the fused mode (passed to jax.stages.Lowered.compile; the
#: user's XLA_FLAGS are never touched; part of each program's persistent-store key),
#: chosen by the end-to-end cost: compile time + calls x time per call over a run
#: (docs/solver.md, "First solve"; 60 cells, quiet 2-core machine). XLA:CPU's older
#: elemental fusion emitters (``xla_cpu_use_fusion_emitters = False``) compile in 0.55-0.7
#: of the wall time, on one thread (the default emitters use a second core at times, which
#: the other compile of the first solve needs), with the same results to 1e-14: the RHS
#: 0.8 -> 0.55 s at +2 % per call (+1.5 us: +0.015-0.15 s over a run's 10^4-10^5 calls; a
#: first solve 0.36 s shorter with it than without), the Jacobian 2.4 -> 1.6 s (the first
#: solve's critical path) at +6 % per call (+9 us; ~40 calls in a first solve, ~10^3 in the
#: demo), the diagnostics 1.7 -> 0.9 s at the same time per call, and the energy budget's
#: powers program likewise. A lower LLVM optimisation level (``xla_backend_optimization_level``
#: 0 or 1) compiles faster still but slows every call: level 0 the RHS and the Jacobian 2-3x,
#: the diagnostics 1.3-1.5x (+60-100 us a call, at every output time and get_state of a
#: coupling run); level 1 with the older emitters the RHS +13 %, the Jacobian +6 %, for no
#: shorter compile. Every program here is called at each step or output time, so each
#: states XLA's full LLVM optimisation (its defaults: level 3, the expensive passes on)
#: rather than inheriting it: a process whose XLA_FLAGS lower the level for its own code
#: (the test suite does, for its one-off jits) still gets these at full speed.
#: melt_fraction (the phase step cap's event, called every step) keeps XLA's default
#: fusion emitters.
_FULL_OPTIMISATION = {"xla_backend_optimization_level": 3, "xla_llvm_disable_expensive_passes": False}
COMPILER_OPTIONS: dict[str, dict] = {
    **{name: {**_FULL_OPTIMISATION, "xla_cpu_use_fusion_emitters": False}
       for name in ("rhs", "jac", "diagnostics", "powers")},
    "melt_fraction": dict(_FULL_OPTIMISATION),
    # the older emitters compile the RHS inside the corrector's loops 2e-10 away from the
    # RHS program's value (1e-13 with the default ones), enough to cost the mush matrix's
    # freezing cases 28-85 % more steps: it keeps the default emitters
    # (aragog.programs._corrector, docs/solver.md)
    "corrector": dict(_FULL_OPTIMISATION),
}


#: states per call of the energy budget's "powers" program (compiled for a chunk of states,
#: ``BoundPair.call_many``): get_state evaluates it at every output time of a solve (and at
#: its steps where a boundary flux depends on the state). One state a call cost ~90 us at 60
#: cells, nearly all of it the crossing into XLA; a chunk of 32 costs ~20-30 us a state.
POWERS_CHUNK = 32


def fused_programs(options, inputs, jacobian: str = "banded", store: str | None = None) -> JitPair:
    """Compiled programs for ``options`` and inputs shaped like ``inputs`` (compiled at first
    use, or by :meth:`JitPair.start`). ``jacobian``: "banded" (colored forward-mode
    products, CVODE's band solver; the default) or "dense" (jacfwd; kept for comparison in
    tools/profile_solves.py, stage first-solve). With ``solver.jacobian = "fd"`` the Jacobian program is never
    called. ``store``: the persistent-store key of the static configuration."""
    from aragog.solver.backends._cvode import MAX_NEWTON_ITERS, NEWTON_CHECK

    n_state = physics.state_size(inputs.mesh.number_of_cells, options)
    # CVODE's Newton solve of a step as one program (docs/solver.md, "One compiled call per step")
    corrector = (MAX_NEWTON_ITERS, NEWTON_CHECK) if jacobian == "banded" else None
    ml, mu = physics.band_widths(options)
    extra = {
        "diagnostics": functools.partial(_diagnostics, options=options),
        "melt_fraction": functools.partial(_melt_fraction, options=options),
        "powers": functools.partial(_powers, options=options),
    }
    return JitPair(functools.partial(_rhs, options=options), n_state, inputs, ml, mu, jacobian=jacobian,
                   extra=extra, lazy=True, store_key=store, corrector=corrector, batched={"powers": POWERS_CHUNK},
                   compiler_options={k: v for k, v in COMPILER_OPTIONS.items() if k != "corrector" or corrector})


# ---------------------------------------------------------------------- compiled bodies
def _rhs(t, y, args, options):
    return physics.rhs(t, y, args, options)


def _diagnostics(t, y, args, options):
    return physics.diagnostics(t, y, args, options)


def _powers(t, y, args, options):
    return jnp.stack(power_columns(physics.diagnostics(t, y, args, options)))


def _melt_fraction(t, y, args, options):
    return physics.global_melt_fraction(y, args, options)
