"""A loop recorded once as one operation, and graph-built functions as JAX functions.

``loop(body, carry_init, n_iter, *params)`` records ``n_iter`` applications of ``body``
as a single :class:`LoopOperation` (a :class:`JaxFunctionOperation` whose function is a
``jax.lax.scan``). Calling convention of ``body``: *flat* — ``body(*carries, *params)``
returns the new carries (one array, or a tuple of as many arrays as there are carries,
each with the shape of its initial value). With one carry this is ``body(carry,
*params)``. ``carry_init`` is one Variable/array or a tuple/list of them; the result has
the same structure (the final carries). ``n_iter`` is static (a Python int).

``body`` is a pure JAX function, or a body built from graph operations turned into one
with :func:`graph_function` (which lets the body itself contain ``compress``-ed blocks,
called from inside the scan). Reverse mode is the JaxFunctionOperation one: another
recorded JaxFunctionOperation computing ``jax.vjp`` of the scan (JAX's scan transpose), so
derivatives of any order work under PySimulator, JaxSimulator, ``derivative`` and
``compress``.

``graph_function(build, *in_shapes)`` records ``build(*placeholders)`` (graph operations
on placeholder Variables of ``in_shapes``) into a private recorder and returns a pure JAX
function of arrays evaluating that graph (``Region.fn``). ``build`` may only read its
placeholders and literal constants; reading another graph's Variable is an error (pass
it as an argument instead).
"""

from __future__ import annotations

import jax

from aragog.csdl.operation import ancestors
from aragog.csdl.operations.jaxfn import JaxFunctionOperation
from aragog.csdl.recorder import Recorder
from aragog.csdl.variable import Constant, Variable, as_variable


def graph_function(build, *in_shapes, name: str | None = None):
    """A pure JAX function evaluating the graph that ``build`` records (see module doc)."""
    from aragog.csdl.region import Region

    label = name or getattr(build, "__name__", "graph_function")
    rec = Recorder(name=label)
    with rec:
        ins = [Variable(shape=s, name=f"{label}_arg{i}") for i, s in enumerate(in_shapes)]
        raw = build(*ins)
    single = not isinstance(raw, (tuple, list))
    outs = [as_variable(o) for o in ((raw,) if single else raw)]
    nodes, leaves = ancestors(outs)
    in_ids = {id(v) for v in ins}
    outside = [v for v in leaves if id(v) not in in_ids and not isinstance(v, Constant)]
    if outside:
        raise ValueError(
            f"graph_function {label!r}: the graph reads {outside[0]!r}, which is not one of "
            "its arguments; pass it as an argument"
        )
    foreign = [op for op in nodes if op not in rec.nodes]
    if foreign:
        raise ValueError(
            f"graph_function {label!r}: the graph uses {foreign[0]!r}, recorded elsewhere"
        )
    region = Region(ins, nodes, outs, label=label, compile_separately=False)

    def fn(*xs):
        out = region.fn(*xs)
        return out[0] if single else out

    fn.__name__ = label
    fn.region = region
    return fn


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
