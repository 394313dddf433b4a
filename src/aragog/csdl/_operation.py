"""The base class of operations and the graph evaluator shared by the simulators.

An operation has ``inputs`` (Variables), ``outputs`` (Variables it creates) and static
parameters. Subclasses implement

- ``compute(xp, *values) -> tuple``: the outputs, with ``xp`` either ``numpy`` or
  ``jax.numpy`` (the same code serves :class:`PySimulator` and :class:`JaxSimulator`);
- ``vjp(cotangents, needs) -> list``: *record* (as graph operations, in the active
  recorder) the cotangent of each input given the cotangent Variables of the outputs
  (``None`` = zero). ``needs[i]`` says whether input ``i`` is wanted; return ``None`` for
  inputs that are not wanted or get a zero cotangent. Because the VJP is itself recorded
  with graph operations, derivatives can be differentiated again.

``share_key()`` is the operation's part of a region's structural signature
(:mod:`aragog.csdl._share`): by default its type and its frozen static parameters
(:func:`freeze`); operations with hidden state or identity (custom NumPy operations,
compressed regions) override it.
"""

from __future__ import annotations

import numpy as np

from aragog._float64 import float64
from aragog.csdl._recorder import get_current_recorder, next_op_id
from aragog.csdl._variable import Constant, Variable


def freeze(x):
    """A hashable, value-based key for a static parameter."""
    if isinstance(x, (bool, int, float, str, type(None))):
        return (type(x).__name__, x)
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        a = np.asarray(x)
        return ("arr", a.dtype.str, a.shape, a.tobytes())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(freeze(e) for e in x))
    if isinstance(x, slice):
        return ("slice", freeze(x.start), freeze(x.stop), freeze(x.step))
    if x is Ellipsis:
        return ("ellipsis",)
    if isinstance(x, dict):
        return ("dict", tuple(sorted((repr(k), freeze(v)) for k, v in x.items())))
    # functions and other objects: identity (the caller keeps them alive)
    return ("obj", id(x))


class Operation:
    name = "op"

    def __init__(self, inputs, out_shapes, **params):
        recorder = get_current_recorder()
        for v in inputs:
            if not isinstance(v, Variable):
                raise TypeError(f"{type(self).__name__}: input {v!r} is not a Variable")
        self.inputs: list[Variable] = list(inputs)
        self.params = params
        self.id = next_op_id()
        self.outputs: list[Variable] = [
            Variable._from_op(shape, self, i) for i, shape in enumerate(out_shapes)
        ]
        recorder._add(self)

    # to implement ---------------------------------------------------------------
    def compute(self, xp, *values) -> tuple:
        raise NotImplementedError(f"{type(self).__name__}.compute")

    def vjp(self, cotangents, needs) -> list:
        raise NotImplementedError(f"{type(self).__name__} has no reverse mode (vjp)")

    def share_key(self) -> tuple:
        """(key, is_custom): equal keys mean the same computation given equal inputs
        (see :mod:`aragog.csdl._share`); ``is_custom`` marks a key that identifies only
        the user class of an operation with hidden Python state."""
        return (type(self), freeze(self.params)), False

    # helpers --------------------------------------------------------------------
    @property
    def output(self) -> Variable:
        if len(self.outputs) != 1:
            raise ValueError(f"{type(self).__name__} has {len(self.outputs)} outputs")
        return self.outputs[0]

    def evaluate_inline(self) -> None:
        vals = [v.value for v in self.inputs]
        if any(v is None for v in vals):
            return
        with float64():  # a JAX-backed operation (jax_function, a compressed region) runs here
            outs = self.compute(np, *vals)
        for var, val in zip(self.outputs, outs):
            var.value = np.asarray(val, dtype=np.float64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, inputs={len(self.inputs)}, outputs={len(self.outputs)})"


def leaf_value(var: Variable):
    if var.value is None:
        raise ValueError(f"{var!r} is a leaf without a value: set it before running")
    return var.value


def lookup(env: dict, var: Variable):
    """Value of ``var`` in ``env``; constants and leaves fall back to their own value."""
    try:
        return env[var]
    except KeyError:
        if var.op is None:
            return leaf_value(var)
        raise KeyError(f"{var!r} (output of {var.op!r}) has not been computed") from None


def evaluate_nodes(nodes, env: dict, xp) -> dict:
    """Evaluate ``nodes`` in order, reading and writing ``env`` (Variable -> value)."""
    for op in nodes:
        vals = [lookup(env, v) for v in op.inputs]
        outs = op.compute(xp, *vals)
        for var, val in zip(op.outputs, outs):
            env[var] = val
    return env


def ancestors(outputs) -> tuple[list, list]:
    """The operations ``outputs`` depend on (sorted topologically) and their
    non-constant leaves (sorted by creation)."""
    seen_ops: dict[int, Operation] = {}
    leaves: dict[int, Variable] = {}
    stack = list(outputs)
    seen_vars = set()
    while stack:
        v = stack.pop()
        if id(v) in seen_vars:
            continue
        seen_vars.add(id(v))
        if v.op is None:
            if not isinstance(v, Constant):
                leaves[id(v)] = v
            continue
        if id(v.op) not in seen_ops:
            seen_ops[id(v.op)] = v.op
            stack.extend(v.op.inputs)
    ops = sorted(seen_ops.values(), key=lambda o: o.id)
    return ops, sorted(leaves.values(), key=lambda v: v.id)
