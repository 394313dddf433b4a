"""User operations written in NumPy: :class:`CustomExplicitOperation`.

Subclass it and implement::

    def compute(self, inputs, outputs):            # dicts name -> ndarray
        outputs["y"] = ...
    def compute_derivatives(self, inputs, outputs, derivatives):
        derivatives["y", "x"] = ...                # d y / d x, shape (y.size, x.size)

then record it with ``outs = MyOp().apply({"x": x}, {"y": (3,)})`` (a dict name ->
output Variable). Pairs left out of ``derivatives`` are zero.

NumPy evaluation calls ``compute`` directly; inside a JAX program it is a host callback
(``jax.pure_callback``, one call per element under vmap) — JAX cannot see through it, so
derivatives come only from ``compute_derivatives``: reverse mode records a
:class:`CustomDerivativeOperation` (a callback producing the Jacobian blocks) and
contracts the cotangents with them. The JAX callback is wrapped in ``jax.custom_vjp``
with the same rule, so JAX transformations of an enclosing function work to first
order. Second derivatives would need second derivatives from the user: not supported
(``NotImplementedError``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from aragog.csdl._operation import Operation
from aragog.csdl.operations._shape import reshape
from aragog.csdl._variable import Variable, normalize_shape


class CustomExplicitOperation:
    """Base class of user NumPy operations (see the module docstring)."""

    def compute(self, inputs: dict, outputs: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__}.compute")

    def compute_derivatives(self, inputs: dict, outputs: dict, derivatives: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__}.compute_derivatives")

    def apply(self, inputs: dict, outputs: dict) -> dict:
        """Record this operation: ``inputs`` name -> Variable, ``outputs`` name -> shape."""
        for k, v in inputs.items():
            if not isinstance(v, Variable):
                raise TypeError(f"{type(self).__name__}.apply: input {k!r} is not a Variable")
        op = CustomOperation(self, dict(inputs), {k: normalize_shape(s) for k, s in outputs.items()})
        return dict(zip(op.out_names, op.outputs))

    # -- NumPy entry points used by the graph operations --------------------------------
    def _run(self, in_names, out_names, out_shapes, *vals):
        ins = {k: np.asarray(v, dtype=np.float64) for k, v in zip(in_names, vals)}
        outs: dict = {}
        self.compute(ins, outs)
        missing = [k for k in out_names if k not in outs]
        if missing:
            raise ValueError(f"{type(self).__name__}.compute did not set outputs {missing}")
        return tuple(np.asarray(np.broadcast_to(np.asarray(outs[k], np.float64), s))
                     for k, s in zip(out_names, out_shapes))

    def _jac(self, in_names, out_names, in_shapes, out_shapes, pairs, *vals):
        ins = {k: np.asarray(v, dtype=np.float64) for k, v in zip(in_names, vals)}
        outs = dict(zip(out_names, self._run(in_names, out_names, out_shapes, *vals)))
        ders: dict = {}
        self.compute_derivatives(ins, outs, ders)
        res = []
        for o, i in pairs:
            n_o = int(np.prod(out_shapes[o], dtype=np.int64))
            n_i = int(np.prod(in_shapes[i], dtype=np.int64))
            d = ders.get((out_names[o], in_names[i]))
            res.append(np.zeros((n_o, n_i)) if d is None else
                       np.asarray(d, dtype=np.float64).reshape(n_o, n_i))
        return tuple(res)


class CustomOperation(Operation):
    name = "custom"

    def __init__(self, user, inputs: dict, outputs: dict):
        self.user = user
        self.in_names = list(inputs)
        self.out_names = list(outputs)
        super().__init__(list(inputs.values()), list(outputs.values()), user=user)
        self._jax_call = None

    def share_key(self):
        """Keyed by the user class and port names only (its state is hidden)."""
        return (type(self), type(self.user), tuple(self.in_names), tuple(self.out_names)), True

    def _host(self, *vals):
        return self.user._run(self.in_names, self.out_names, [v.shape for v in self.outputs], *vals)

    def compute(self, xp, *vals):
        if xp is np:
            return self._host(*vals)
        if self._jax_call is None:
            self._jax_call = self._make_jax_call()
        return self._jax_call(*vals)

    def _make_jax_call(self):
        shapes = tuple(jax.ShapeDtypeStruct(v.shape, jnp.float64) for v in self.outputs)
        n_in, n_out = len(self.inputs), len(self.outputs)
        pairs = [(o, i) for o in range(n_out) for i in range(n_in)]
        jac_host = self._jac_host(pairs)
        jac_shapes = tuple(jax.ShapeDtypeStruct((self.outputs[o].size, self.inputs[i].size), jnp.float64)
                           for o, i in pairs)

        @jax.custom_vjp
        def call(*vals):
            return jax.pure_callback(self._host, shapes, *vals, vmap_method="sequential")

        def fwd(*vals):
            return call(*vals), vals

        def bwd(vals, cts):
            jacs = jax.pure_callback(jac_host, jac_shapes, *vals, vmap_method="sequential")
            grads = [jnp.zeros(v.shape, jnp.float64) for v in self.inputs]
            for (o, i), j in zip(pairs, jacs):
                grads[i] = grads[i] + jnp.reshape(jnp.reshape(cts[o], (-1,)) @ j, self.inputs[i].shape)
            return tuple(grads)

        call.defvjp(fwd, bwd)
        return call

    def _jac_host(self, pairs):
        in_shapes = [v.shape for v in self.inputs]
        out_shapes = [v.shape for v in self.outputs]
        return lambda *vals: self.user._jac(self.in_names, self.out_names, in_shapes, out_shapes,
                                            pairs, *vals)

    def vjp(self, cots, needs):
        pairs = [(o, i) for o, c in enumerate(cots) if c is not None
                 for i, n in enumerate(needs) if n]
        if not pairs:
            return [None] * len(self.inputs)
        jac = CustomDerivativeOperation(self, pairs)
        result = [None] * len(self.inputs)
        for (o, i), J in zip(pairs, jac.outputs):
            term = reshape(reshape(cots[o], (1, self.outputs[o].size)) @ J, self.inputs[i].shape)
            result[i] = term if result[i] is None else result[i] + term
        return result


class CustomDerivativeOperation(Operation):
    """The Jacobian blocks d out_o / d in_i of a :class:`CustomOperation` (from the
    user's ``compute_derivatives``), each of shape (out.size, in.size)."""

    name = "custom_derivative"

    def __init__(self, fwd: CustomOperation, pairs):
        self.fwd = fwd
        self.pairs = list(pairs)
        self._host = fwd._jac_host(self.pairs)
        shapes = [(fwd.outputs[o].size, fwd.inputs[i].size) for o, i in pairs]
        super().__init__(list(fwd.inputs), shapes, pairs=tuple(pairs))

    def share_key(self):
        """Keyed like its forward operation, plus the Jacobian blocks it computes."""
        f = self.fwd
        return (type(self), type(f.user), tuple(f.in_names), tuple(f.out_names),
                tuple(self.pairs)), True

    def compute(self, xp, *vals):
        if xp is np:
            return self._host(*vals)
        shapes = tuple(jax.ShapeDtypeStruct(v.shape, jnp.float64) for v in self.outputs)
        return jax.pure_callback(self._host, shapes, *vals, vmap_method="sequential")

    def vjp(self, cots, needs):
        raise NotImplementedError(
            f"second derivatives through {type(self.fwd.user).__name__} (a "
            "CustomExplicitOperation): compute_derivatives gives first derivatives only"
        )
