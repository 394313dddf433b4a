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
import os

from aragog import physics
from aragog._jax import jnp
from aragog.errors import ConfigError
from aragog.solver._budget import power_columns
from aragog.programs._jitpair import JitPair

__all__ = ["COMPILER_OPTIONS", "OPTIMIZATION_LEVEL_VARIABLE", "POWERS_CHUNK", "compiler_options", "fused_programs",
           "optimization_level"]


# XLA options per program of the fused mode (passed to jax.stages.Lowered.compile; the
# user's XLA_FLAGS are never touched; part of each program's persistent-store key),
# chosen by the end-to-end cost: compile time + calls x time per call over a run
# (docs/solver.md, "First solve"; 60 cells, quiet 2-core machine). XLA:CPU's older
# elemental fusion emitters (``xla_cpu_use_fusion_emitters = False``) compile in 0.55-0.7
# of the wall time, on one thread (the default emitters use a second core at times, which
# the other compile of the first solve needs), with the same results to 1e-14: the RHS
# 0.8 -> 0.55 s at +2 % per call (+1.5 us: +0.015-0.15 s over a run's 10^4-10^5 calls; a
# first solve 0.36 s shorter with it than without), the Jacobian 2.4 -> 1.6 s (the first
# solve's critical path) at +6 % per call (+9 us; ~40 calls in a first solve, ~10^3 in the
# demo), the diagnostics 1.7 -> 0.9 s at the same time per call, and the energy budget's
# powers program likewise. A lower LLVM optimisation level (``xla_backend_optimization_level``
# 0 or 1) compiles faster still but slows every call: level 0 the RHS and the Jacobian 2-3x,
# the diagnostics 1.3-1.5x (+60-100 us a call, at every output time and get_state of a
# coupling run); level 1 with the older emitters the RHS +13 %, the Jacobian +6 %, for no
# shorter compile. Every program here is called at each step or output time, so each
# states XLA's full LLVM optimisation (its defaults: level 3, the expensive passes on)
# rather than inheriting it: a process whose XLA_FLAGS lower the level for its own code
# still gets these at full speed, unless it asks for less with the variable below.
# melt_fraction (the phase step cap's event, called every step) keeps XLA's default
# fusion emitters.
#
# ARAGOG_XLA_OPTIMIZATION_LEVEL (0-3, default 3) lowers that level for a process whose
# compiles outweigh its calls: a test suite, a quick look at a new configuration. At 0
# (the expensive LLVM passes off as well) the fused programs compile in about half the
# time (the toy demo's first solve: 5.4 -> 2.2 s of compiling) and run 2-3x slower a
# call, with the same results to rounding (not to the bit: a solve may take a few steps
# more or fewer). The level is part of the static key and of every program's store key.

#: the environment variable that sets the fused programs' LLVM optimisation level
OPTIMIZATION_LEVEL_VARIABLE = "ARAGOG_XLA_OPTIMIZATION_LEVEL"
#: XLA's own default level: the fused programs' level when the variable is unset
DEFAULT_OPTIMIZATION_LEVEL = 3


def optimization_level() -> int:
    """The LLVM optimisation level of the fused programs: ``$ARAGOG_XLA_OPTIMIZATION_LEVEL``
    (0, 1, 2 or 3), else 3, XLA's default.

    Raises:
        ConfigError: the variable is set to anything else (naming it and the value).
    """
    text = os.environ.get(OPTIMIZATION_LEVEL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_OPTIMIZATION_LEVEL
    if text not in ("0", "1", "2", "3"):
        raise ConfigError(f"${OPTIMIZATION_LEVEL_VARIABLE} must be 0, 1, 2 or 3 (XLA's LLVM optimisation level "
                          f"of aragog's compiled programs; unset: 3), got '{text}'")
    return int(text)


def compiler_options(level: int = DEFAULT_OPTIMIZATION_LEVEL) -> dict[str, dict]:
    """XLA options per fused program at LLVM optimisation ``level`` (3: XLA's defaults, the
    expensive passes on; 0: the expensive passes off too)."""
    llvm = {"xla_backend_optimization_level": int(level), "xla_llvm_disable_expensive_passes": level == 0}
    return {
        **{name: {**llvm, "xla_cpu_use_fusion_emitters": False} for name in ("rhs", "jac", "diagnostics", "powers")},
        "melt_fraction": dict(llvm),
        # the older emitters compile the RHS inside the corrector's loops 2e-10 away from the
        # RHS program's value (1e-13 with the default ones), enough to cost the mush matrix's
        # freezing cases 28-85 % more steps: it keeps the default emitters
        # (aragog.programs._corrector, docs/solver.md)
        "corrector": dict(llvm),
    }


#: The XLA options of every fused program at the default level (the comment above says why
#: each is chosen).
COMPILER_OPTIONS: dict[str, dict] = compiler_options()


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
    called. ``store``: the persistent-store key of the static configuration. The programs'
    LLVM optimisation level is :func:`optimization_level`'s, read here."""
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
                   compiler_options={k: v for k, v in compiler_options(optimization_level()).items()
                                     if k != "corrector" or corrector})


# ---------------------------------------------------------------------- compiled bodies
def _rhs(t, y, args, options):
    return physics.rhs(t, y, args, options)


def _diagnostics(t, y, args, options):
    return physics.diagnostics(t, y, args, options)


def _powers(t, y, args, options):
    return jnp.stack(power_columns(physics.diagnostics(t, y, args, options)))


def _melt_fraction(t, y, args, options):
    return physics.global_melt_fraction(y, args, options)
