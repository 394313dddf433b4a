"""A loop recorded once as one operation.

``loop(body, carry_init, n_iter, *params)`` records ``n_iter`` applications of ``body``
as a single :class:`LoopOperation` (a :class:`JaxFunctionOperation` whose function is a
``jax.lax.scan``). Calling convention of ``body``: *flat* — ``body(*carries, *params)``
returns the new carries (one array, or a tuple of as many arrays as there are carries,
each with the shape of its initial value). With one carry this is ``body(carry,
*params)``. ``carry_init`` is one Variable/array or a tuple/list of them; the result has
the same structure (the final carries). ``n_iter`` is static (a Python int).

``body`` is a pure JAX function, or a body built from graph operations turned into one
with :func:`~aragog.csdl._region.graph_function` (which lets the body itself contain
``compress``-ed blocks, called from inside the scan). Reverse mode is the JaxFunctionOperation one: another
recorded JaxFunctionOperation computing ``jax.vjp`` of the scan (JAX's scan transpose), so
derivatives of any order work under PySimulator, JaxSimulator, ``derivative`` and
``compress``.
"""

from __future__ import annotations

import jax

from aragog.csdl.operations._jaxfn import JaxFunctionOperation
from aragog.csdl._variable import as_variable


class LoopOperation(JaxFunctionOperation):
    """``n_iter`` steps of ``body`` as one scan (see module doc)."""

    name = "loop"

    def __init__(self, body, n_carry: int, n_iter: int, inputs, name: str | None = None):
        if not isinstance(n_iter, int) or isinstance(n_iter, bool) or n_iter < 0:
            raise ValueError(f"loop: n_iter must be a non-negative int, got {n_iter!r}")
        self.body, self.n_carry, self.n_iter = body, n_carry, n_iter
        carry_shapes = [v.shape for v in inputs[:n_carry]]
        label = name or f"loop({getattr(body, '__name__', 'body')})"

        def step(carry, params):
            new = body(*carry, *params)
            new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            if len(new) != n_carry or any(
                tuple(jax.numpy.shape(a)) != s for a, s in zip(new, carry_shapes)
            ):
                raise ValueError(
                    f"{label}: body must return {n_carry} carr{'y' if n_carry == 1 else 'ies'}"
                    f" of shapes {carry_shapes}, got {[jax.numpy.shape(a) for a in new]}"
                )
            return tuple(jax.numpy.asarray(a, jax.numpy.float64) for a in new)

        def run(*xs):
            carry, params = tuple(xs[:n_carry]), tuple(xs[n_carry:])
            final, _ = jax.lax.scan(lambda c, _: (step(c, params), None), carry, None,
                                    length=n_iter)
            return tuple(final)

        run.__name__ = label
        super().__init__(run, inputs, name=label)


def loop(body, carry_init, n_iter: int, *params, name: str | None = None):
    """Record ``n_iter`` steps ``carry = body(*carry, *params)`` as one operation; returns
    the final carry (a Variable, or a tuple if ``carry_init`` is a tuple/list)."""
    single = not isinstance(carry_init, (tuple, list))
    carries = [as_variable(c) for c in ((carry_init,) if single else carry_init)]
    inputs = carries + [as_variable(p) for p in params]
    op = LoopOperation(body, len(carries), n_iter, inputs, name=name)
    return op.outputs[0] if single else tuple(op.outputs)
