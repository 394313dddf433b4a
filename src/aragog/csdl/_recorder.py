"""The recorder: the list of operations of one model, in the order they were recorded.

A :class:`Recorder` is made active with ``with Recorder() as rec:`` or ``rec.start()`` /
``rec.stop()``. Every operation created while a recorder is active is appended to its
``nodes``. Recording order is a topological order (an operation can only read variables
that exist), which the simulators and :func:`~aragog.csdl._derivative` rely on.

``inline=True`` evaluates each operation with NumPy as soon as it is recorded (when all
its inputs have values), so ``variable.value`` is available immediately.
"""

from __future__ import annotations

import itertools

_STACK: list["Recorder"] = []
# One counter for operations of all recorders: a global creation order, so that sorting
# operations by ``id`` gives a topological order even across sub-recorders.
_OP_IDS = itertools.count()


class Recorder:
    """Collects operations into a graph.

    Attributes:
        nodes: the recorded operations, in recording (topological) order.
        inline: evaluate each operation with NumPy when it is recorded.
    """

    def __init__(self, inline: bool = False, name: str | None = None):
        self.inline = bool(inline)
        self.name = name
        self.nodes: list = []

    # activation -------------------------------------------------------------------
    def start(self) -> "Recorder":
        _STACK.append(self)
        return self

    def stop(self) -> None:
        if not _STACK or _STACK[-1] is not self:
            raise RuntimeError("Recorder.stop(): this recorder is not the active one")
        _STACK.pop()

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def active(self) -> bool:
        return self in _STACK

    # recording --------------------------------------------------------------------
    def _add(self, op) -> None:
        self.nodes.append(op)
        if self.inline:
            op.evaluate_inline()

    def __repr__(self) -> str:
        return f"Recorder(name={self.name!r}, nodes={len(self.nodes)}, inline={self.inline})"


def get_current_recorder() -> Recorder:
    """The active recorder; ``RuntimeError`` when none is active."""
    if not _STACK:
        raise RuntimeError(
            "no active csdl Recorder: record operations inside `with Recorder():` "
            "or after `Recorder().start()`"
        )
    return _STACK[-1]


def next_op_id() -> int:
    return next(_OP_IDS)
