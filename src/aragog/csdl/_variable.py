"""Variables (graph edges) and constants.

A :class:`Variable` is either a *leaf* (``op is None``: an input or parameter whose
``value`` is set by the user or a simulator) or the output of an operation (``op`` is
that operation). A :class:`Constant` is a leaf whose value is a literal: simulators
compile it into the program, everything else is a run-time argument.

Values are float64 NumPy arrays. Python numbers and arrays used in arithmetic with a
variable become constants. Binary operations accept equal shapes, or one operand of size
one (a scalar), which is broadcast by a recorded ``broadcast_to`` (constants are simply
made at full shape); any other shape mismatch is a ``ValueError`` naming both shapes.

This module is the bottom layer of aragog.csdl and imports none of it: the operator
methods that record operations are attached to :class:`Variable` by
:mod:`aragog.csdl.operations`.
"""

from __future__ import annotations

import itertools

import numpy as np

_VAR_IDS = itertools.count()


def normalize_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class Variable:
    """A node value of the graph.

    Args:
        shape: tuple of ints (an int means a vector); taken from ``value`` when omitted.
        value: initial value, broadcast to ``shape`` (so ``Variable((3,), value=0.0)``).
        name: label used in messages and reprs.
    """

    __array_priority__ = 1000  # make `ndarray + Variable` use Variable.__radd__

    def __init__(self, shape=None, value=None, name: str | None = None):
        if value is not None:
            value = np.asarray(value, dtype=np.float64)
            if shape is None:
                shape = value.shape
            else:
                shape = normalize_shape(shape)
                try:
                    value = np.array(np.broadcast_to(value, shape))
                except ValueError:
                    raise ValueError(
                        f"Variable {name!r}: value of shape {value.shape} does not fit shape {shape}"
                    ) from None
        elif shape is None:
            raise ValueError(f"Variable {name!r}: give a shape or a value")
        self.shape: tuple[int, ...] = normalize_shape(shape)
        self.value = value
        self.name = name
        self.op = None  # producing operation; None for a leaf
        self.id = next(_VAR_IDS)

    @classmethod
    def _from_op(cls, shape, op, index: int) -> "Variable":
        v = cls.__new__(cls)
        v.shape = normalize_shape(shape)
        v.value = None
        v.name = f"{op.name}_{op.id}_out{index}"
        v.op = op
        v.id = next(_VAR_IDS)
        return v

    # basic properties -------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    def set_value(self, value) -> None:
        """Set the value of a leaf (broadcasting a scalar); shape must match."""
        value = np.asarray(value, dtype=np.float64)
        try:
            self.value = np.array(np.broadcast_to(value, self.shape))
        except ValueError:
            raise ValueError(
                f"value of shape {value.shape} does not fit {self!r} of shape {self.shape}"
            ) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, shape={self.shape})"

    # Identity semantics: variables are dict keys. (__eq__ is NOT an operation.)
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(
            f"{self!r} has no truth value (it is a graph node); use csdl.where / maximum "
            "for branches"
        )

    def __iter__(self):
        raise TypeError(f"{self!r} is not iterable; index it explicitly (x[i])")

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of a scalar {self!r}")
        return self.shape[0]

    def __pos__(self):
        return self

    def flatten(self):
        return self.reshape((self.size,))

    # The operators (+ - * / ** unary -, @, [], < <= > >=), ``reshape`` and ``T`` are
    # recorded operations: aragog.csdl.operations attaches them to this class (it is
    # imported with aragog.csdl, so every Variable has them).


class Constant(Variable):
    """A literal: its value is compiled into programs and never changes."""

    def __init__(self, value, name: str | None = None):
        super().__init__(value=value, name=name)
        self.value.setflags(write=False)

    def set_value(self, value) -> None:
        raise TypeError(f"{self!r} is a Constant; its value cannot change")


def as_variable(x) -> Variable:
    """A Variable as is; anything array-like as a Constant."""
    if isinstance(x, Variable):
        return x
    return Constant(x)
