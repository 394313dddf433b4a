"""Variables (graph edges) and constants.

A :class:`Variable` is either a *leaf* (``op is None``: an input or parameter whose
``value`` is set by the user or a simulator) or the output of an operation (``op`` is
that operation). A :class:`Constant` is a leaf whose value is a literal: simulators
compile it into the program, everything else is a run-time argument.

Values are float64 NumPy arrays. Python numbers and arrays used in arithmetic with a
variable become constants. Binary operations accept equal shapes, or one operand of size
one (a scalar), which is broadcast by a recorded ``broadcast_to`` (constants are simply
made at full shape); any other shape mismatch is a ``ValueError`` naming both shapes.
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

    # operators (implemented in aragog.csdl.operations) -----------------------------
    def __add__(self, other):
        from aragog.csdl.operations import add
        return add(self, other)

    def __radd__(self, other):
        from aragog.csdl.operations import add
        return add(other, self)

    def __sub__(self, other):
        from aragog.csdl.operations import sub
        return sub(self, other)

    def __rsub__(self, other):
        from aragog.csdl.operations import sub
        return sub(other, self)

    def __mul__(self, other):
        from aragog.csdl.operations import mul
        return mul(self, other)

    def __rmul__(self, other):
        from aragog.csdl.operations import mul
        return mul(other, self)

    def __truediv__(self, other):
        from aragog.csdl.operations import div
        return div(self, other)

    def __rtruediv__(self, other):
        from aragog.csdl.operations import div
        return div(other, self)

    def __pow__(self, other):
        from aragog.csdl.operations import power
        return power(self, other)

    def __rpow__(self, other):
        from aragog.csdl.operations import power
        return power(other, self)

    def __neg__(self):
        from aragog.csdl.operations import neg
        return neg(self)

    def __pos__(self):
        return self

    def __matmul__(self, other):
        from aragog.csdl.operations import matmul
        return matmul(self, other)

    def __rmatmul__(self, other):
        from aragog.csdl.operations import matmul
        return matmul(other, self)

    def __getitem__(self, index):
        from aragog.csdl.operations import getitem
        return getitem(self, index)

    def __gt__(self, other):
        from aragog.csdl.operations import greater
        return greater(self, other)

    def __lt__(self, other):
        from aragog.csdl.operations import greater
        return greater(other, self)

    def __ge__(self, other):
        from aragog.csdl.operations import greater_equal
        return greater_equal(self, other)

    def __le__(self, other):
        from aragog.csdl.operations import greater_equal
        return greater_equal(other, self)

    def reshape(self, *shape):
        from aragog.csdl.operations import reshape
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return reshape(self, shape)

    def flatten(self):
        return self.reshape((self.size,))

    @property
    def T(self):
        from aragog.csdl.operations import transpose
        return transpose(self)


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
