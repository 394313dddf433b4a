"""What the solver asks of its compiled programs, whichever the compile mode
(:class:`Programs`): a fused :class:`~aragog.programs.JitPair`
(:func:`aragog.solver._fused_programs.fused_programs`) or the blocks'
:class:`~aragog.programs.BlockPrograms` (:mod:`aragog.programs._blocks`) satisfy it.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Programs"]


class Programs(Protocol):
    """What the solver asks of its compiled programs, whichever the compile mode: a fused
    :class:`~aragog.programs.JitPair` or the blocks'
    :class:`~aragog.programs.BlockPrograms` (both satisfy it; nothing tells them
    apart by type).

    Attributes ``n``, ``ml``, ``mu`` (state size and Jacobian bandwidths) and
    ``jac_layout``; ``programs``: the program names.
    """

    n: int
    ml: int
    mu: int
    jac_layout: str

    @property
    def programs(self) -> tuple[str, ...]: ...

    def bind(self, inputs, call_stats=None):
        """The integrator's callback object for ``inputs`` (an
        :class:`aragog.solver.backends.OdeProblem`, with ``call``, ``scalar_fn``)."""

    def start(self, background: tuple[str, ...], newton: str = "jac") -> None:
        """Compile (or load) what a first solve needs, ``background`` overlapping it;
        ``newton`` the program of CVODE's Newton iteration ("jac" or "corrector")."""

    def wait_background(self) -> None:
        """Wait for the compiles :meth:`start` left running."""

    def compile_stats(self) -> dict:
        """``{program: {traces, compiles, loads, trace_seconds, compile_seconds, source}}``."""

    def blocks(self) -> dict:
        """``{name: region}`` of separately compiled blocks (empty for a fused pair)."""

    def compiled_program(self, name: str):
        """``(executable, XLA options)`` of program ``name`` as compiled so far, or ``None``."""
