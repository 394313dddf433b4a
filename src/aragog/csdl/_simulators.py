"""Simulators: run a recorded graph op by op with NumPy, or as one jitted JAX program.

Setting inputs: ``sim[x] = value`` sets the value of a leaf Variable ``x`` (its
``x.value``; shape checked, scalars broadcast). ``sim[v]`` reads the value of any
variable after ``run()``. Any non-constant leaf the outputs depend on is read at run
time (never frozen), whether or not it was listed in ``inputs``; only
:class:`Constant` values are compiled in.

``compute_totals()`` records the derivatives of the outputs with respect to the inputs
into the recorder the first time it is called (``derivative(..., loop=...)``), then
evaluates them; it returns ``{(of, wrt): ndarray of shape (of.size, wrt.size)}``.

The simulators compute in float64 whatever the caller's JAX setting: ``run()``,
``compute_totals()`` and ``jaxpr()`` enter ``jax.enable_x64(True)`` (thread-local, restored
on return, so the caller's own JAX code keeps its dtypes), and values come back as
float64 NumPy arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from aragog.csdl._derivative import derivative
from aragog._float64 import in_float64
from aragog.csdl._operation import ancestors, evaluate_nodes, leaf_value, lookup
from aragog.csdl._recorder import Recorder
from aragog.csdl._variable import Constant, Variable


def _check_leaves(vars_, what: str) -> list[Variable]:
    vars_ = [vars_] if isinstance(vars_, Variable) else list(vars_)
    for v in vars_:
        if not isinstance(v, Variable):
            raise TypeError(f"{what}: {v!r} is not a Variable")
    return vars_


class _Base:
    def __init__(self, recorder: Recorder, loop: bool = True):
        if not isinstance(recorder, Recorder):
            raise TypeError(f"expected a Recorder, got {recorder!r}")
        self.recorder = recorder
        self.loop = loop
        self._values: dict[Variable, np.ndarray] = {}
        self._totals: dict | None = None
        self._totals_key = None

    def __setitem__(self, var: Variable, value) -> None:
        if not isinstance(var, Variable) or var.op is not None or isinstance(var, Constant):
            raise KeyError(f"{var!r} is not an input: only non-constant leaf variables can be set")
        var.set_value(value)

    def __getitem__(self, var: Variable):
        if var in self._values:
            return self._values[var]
        if var.op is None:
            return leaf_value(var)
        raise KeyError(f"{var!r} has no value yet: call run()")

    def _record_totals(self, ofs, wrts):
        key = (tuple(id(v) for v in ofs), tuple(id(v) for v in wrts))
        if self._totals_key != key:
            with self.recorder:
                self._totals = derivative(list(ofs), list(wrts), loop=self.loop)
            self._totals_key = key
        return self._totals


class PySimulator(_Base):
    """Evaluates every operation of the recorder in order with NumPy."""

    @in_float64
    def run(self) -> None:
        env: dict = {}
        evaluate_nodes(self.recorder.nodes, env, np)
        for var, val in env.items():
            val = np.asarray(val, dtype=np.float64)
            var.value = val
        self._values = env

    @in_float64
    def compute_totals(self, ofs, wrts) -> dict:
        ofs, wrts = _check_leaves(ofs, "ofs"), _check_leaves(wrts, "wrts")
        totals = self._record_totals(ofs, wrts)
        self.run()
        return {k: self[v] for k, v in totals.items()}


class JaxSimulator(_Base):
    """The graph from ``inputs`` to ``outputs`` as one jitted JAX program.

    Only the operations the outputs depend on are evaluated. Program arguments are the
    listed ``inputs`` followed by every other non-constant leaf the outputs read
    (``parameters``), all passed at run time, so changing any value never retraces
    (``trace_count`` counts traces of the forward and the totals programs together).
    """

    def __init__(self, recorder: Recorder, inputs, outputs, loop: bool = True):
        super().__init__(recorder, loop=loop)
        self.inputs = _check_leaves(inputs, "inputs")
        self.outputs = _check_leaves(outputs, "outputs")
        for v in self.inputs:
            if v.op is not None or isinstance(v, Constant):
                raise ValueError(f"JaxSimulator: input {v!r} is not a non-constant leaf variable")
        self.trace_count = 0
        self._run_fn, self._run_args = self._build(self.outputs)
        self._forward_program = self._program
        self._totals_fn = None

    @property
    def parameters(self) -> list[Variable]:
        """Leaves read at run time that are not listed in ``inputs``."""
        ids = {id(v) for v in self.inputs}
        return [v for v in self._run_args if id(v) not in ids]

    def _build(self, outs):
        nodes, leaves = ancestors(outs)
        ids = {id(v) for v in self.inputs}
        args = list(self.inputs) + [v for v in leaves if id(v) not in ids]

        def program(arg_values):
            self.trace_count += 1
            env = dict(zip(args, arg_values))
            evaluate_nodes(nodes, env, jnp)
            return tuple(jnp.asarray(lookup(env, o)) for o in outs)

        self._program = program
        return jax.jit(program), args

    @in_float64
    def jaxpr(self):
        """The jaxpr of the forward program (for inspection; not counted as a trace)."""
        count = self.trace_count
        try:
            return jax.make_jaxpr(self._forward_program)(self._arg_values(self._run_args))
        finally:
            self.trace_count = count

    @staticmethod
    def _arg_values(args):
        return tuple(jnp.asarray(leaf_value(v), dtype=jnp.float64) for v in args)

    @in_float64
    def run(self) -> None:
        results = self._run_fn(self._arg_values(self._run_args))
        self._values = {}
        for var, val in zip(self.outputs, results):
            val = np.asarray(val)
            var.value = val
            self._values[var] = val

    @in_float64
    def compute_totals(self) -> dict:
        """``{(output, input): d output / d input}`` as arrays ``(out.size, in.size)``."""
        totals = self._record_totals(self.outputs, self.inputs)
        if self._totals_fn is None:
            keys = list(totals)
            self._totals_fn, self._totals_args = self._build([totals[k] for k in keys])
            self._totals_keys = keys
        results = self._totals_fn(self._arg_values(self._totals_args))
        return {k: np.asarray(r) for k, r in zip(self._totals_keys, results)}
