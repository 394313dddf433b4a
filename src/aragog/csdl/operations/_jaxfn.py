"""Record a pure JAX function of arrays as one operation.

``jax_function(fn, *inputs)`` records ``fn`` (arrays in, an array or a tuple/list of
arrays out, float64) as a single :class:`JaxFunctionOperation`. Output shapes come from
``jax.eval_shape``. Under :class:`~aragog.csdl.JaxSimulator` ``fn`` is traced into the
program; under :class:`~aragog.csdl.PySimulator` / inline recording it runs as its own
jitted function.

Reverse mode records another ``JaxFunctionOperation`` whose function is
``jax.vjp(fn, *inputs)`` applied to the output cotangents, so it is differentiable again
(to any order).
"""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp
import numpy as np

from aragog._float64 import float64
from aragog.csdl._operation import Operation
from aragog.csdl._variable import as_variable


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


class _Wrapped:
    """``fn`` returning a tuple, and its jitted form (made once per user function, so
    operations recording the same function share one compiled program)."""

    def __init__(self, fn):
        self.tuple_fn = lambda *xs: _as_tuple(fn(*xs))  # noqa: E731
        self._jitted = None
        self.vjp_fns: dict = {}  # (given, wanted, input shapes) -> vjp function

    @property
    def jitted(self):
        if self._jitted is None:
            self._jitted = jax.jit(self.tuple_fn)
        return self._jitted


_WRAPPED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _wrapped(fn) -> _Wrapped:
    try:
        w = _WRAPPED.get(fn)
        if w is None:
            w = _WRAPPED[fn] = _Wrapped(fn)
        return w
    except TypeError:  # not weak-referenceable: no sharing
        return _Wrapped(fn)


class JaxFunctionOperation(Operation):
    name = "jax_function"

    def __init__(self, fn, inputs, name: str | None = None, out_shapes=None):
        if out_shapes is None:
            try:
                with float64():  # fn traced on float64 inputs, as the simulators run it
                    raw = jax.eval_shape(fn, *[jax.ShapeDtypeStruct(v.shape, jnp.float64) for v in inputs])
            except Exception as e:  # shape errors in the user function
                raise ValueError(
                    f"jax_function {name or getattr(fn, '__name__', fn)!r}: evaluating on input "
                    f"shapes {[v.shape for v in inputs]} failed: {e}"
                ) from e
            self.single = not isinstance(raw, (tuple, list))
            out_specs = _as_tuple(raw)
        else:  # known by construction (a VJP returns the shapes of its inputs): no trace
            self.single = False
            out_specs = [jax.ShapeDtypeStruct(tuple(s), jnp.float64) for s in out_shapes]
        self._wrapped = _wrapped(fn)
        self.fn = self._wrapped.tuple_fn
        self.label = name or getattr(fn, "__name__", "jax_function")
        super().__init__(inputs, [s.shape for s in out_specs], fn=fn)

    @property
    def jitted(self):
        return self._wrapped.jitted

    def compute(self, xp, *xs):
        if xp is np:
            return tuple(np.asarray(o, dtype=np.float64) for o in self.jitted(*xs))
        return self.fn(*xs)

    def vjp(self, cots, needs):
        n_in = len(self.inputs)
        given = [i for i, c in enumerate(cots) if c is not None]
        wanted = [i for i in range(n_in) if needs[i]]

        # One vjp function per (function, seeding, shapes): every row of a loop=True
        # Jacobian records the same function, so it is compiled once.
        key = (tuple(given), tuple(wanted), tuple(v.shape for v in self.inputs))
        cache = self._wrapped.vjp_fns
        if key not in cache:
            cache[key] = self._make_vjp_fn(given, wanted)
        fn_vjp = cache[key]
        op = JaxFunctionOperation(
            fn_vjp, self.inputs + [cots[i] for i in given], name=f"vjp({self.label})",
            out_shapes=[self.inputs[i].shape for i in wanted],
        )
        result = [None] * n_in
        for i, out in zip(wanted, op.outputs):
            result[i] = out
        return result

    def _make_vjp_fn(self, given, wanted):
        fn = self.fn
        n_in = len(self.inputs)
        out_shapes = [v.shape for v in self.outputs]

        def fn_vjp(*args):
            xs, cs = args[:n_in], args[n_in:]
            _, pull = jax.vjp(fn, *xs)
            full = [jnp.zeros(s, jnp.float64) for s in out_shapes]
            for i, c in zip(given, cs):
                full[i] = c
            grads = pull(tuple(full))
            return tuple(grads[i] for i in wanted)

        return fn_vjp


def jax_function(fn, *inputs, name: str | None = None):
    """Record ``fn(*inputs)``; returns one Variable, or a tuple if ``fn`` returns a
    tuple/list."""
    inputs = [as_variable(x) for x in inputs]
    op = JaxFunctionOperation(fn, inputs, name=name)
    return op.outputs[0] if op.single else tuple(op.outputs)
