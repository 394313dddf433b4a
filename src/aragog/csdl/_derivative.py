"""Reverse-mode derivatives recorded into the graph.

``derivative(ofs, wrts)`` records, in the active recorder, operations that compute the
Jacobians d(of)/d(wrt), each of shape ``(of.size, wrt.size)`` (row-major flattening of
both). Because the reverse pass is made of ordinary graph operations, a derivative can
be differentiated again (Hessians).

- ``loop=True``: one recorded reverse pass per element of ``of`` (seeded with a constant
  one-hot cotangent), rows stacked. Graph size grows with ``of.size``.
- ``loop=False``: the reverse pass is recorded once, into a private sub-recorder, with a
  symbolic seed; the Jacobian is then recorded as ONE :class:`JaxFunctionOperation` whose
  function ``jax.vmap``-s that sub-graph over the rows of the identity. Its own
  derivative comes from ``jax.vjp`` of that function (so it is differentiable again).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from aragog.csdl._operation import evaluate_nodes, lookup
from aragog.csdl.operations._elementwise import add
from aragog.csdl.operations._jaxfn import JaxFunctionOperation
from aragog.csdl.operations._shape import reshape, stack
from aragog.csdl._recorder import Recorder
from aragog.csdl._variable import Constant, Variable


def _path_ops(ofs, wrts) -> tuple[list, set]:
    """Operations on a path from ``wrts`` to ``ofs`` (topological order) and the ids of
    the variables on those paths (the 'active' variables)."""
    anc: dict[int, object] = {}
    stack_, seen = list(ofs), set()
    while stack_:
        v = stack_.pop()
        if id(v) in seen or v.op is None:
            continue
        seen.add(id(v))
        if id(v.op) not in anc:
            anc[id(v.op)] = v.op
            stack_.extend(v.op.inputs)
    active = {id(w) for w in wrts}
    ops = []
    for op in sorted(anc.values(), key=lambda o: o.id):
        if any(id(v) in active for v in op.inputs):
            ops.append(op)
            active.update(id(v) for v in op.outputs)
    return ops, active


def vjp_pass(ops, active: set, seeds: dict) -> dict:
    """Record the reverse pass through ``ops`` given ``seeds`` (Variable -> cotangent
    Variable); returns id(Variable) -> accumulated cotangent Variable."""
    cot: dict[int, Variable] = {id(v): c for v, c in seeds.items()}
    for op in reversed(ops):
        out_cots = [cot.get(id(v)) for v in op.outputs]
        if all(c is None for c in out_cots):
            continue
        needs = [id(v) in active for v in op.inputs]
        in_cots = op.vjp(out_cots, needs)
        for v, c, need in zip(op.inputs, in_cots, needs):
            if c is None or not need:
                continue
            if c.shape != v.shape:
                raise RuntimeError(
                    f"{type(op).__name__}.vjp returned shape {c.shape} for input of shape {v.shape}"
                )
            cot[id(v)] = c if id(v) not in cot else add(cot[id(v)], c)
    return cot


def _as_list(x) -> tuple[list, bool]:
    if isinstance(x, Variable):
        return [x], True
    return list(x), False


def derivative(ofs, wrts, loop: bool = True):
    """Record the Jacobians of ``ofs`` with respect to ``wrts``.

    Returns a Variable of shape ``(of.size, wrt.size)`` when both arguments are single
    Variables, else a dict ``{(of, wrt): Variable}``.
    """
    of_list, single_of = _as_list(ofs)
    wrt_list, single_wrt = _as_list(wrts)
    for v in of_list + wrt_list:
        if not isinstance(v, Variable):
            raise TypeError(f"derivative: {v!r} is not a Variable")
    result = {}
    for of in of_list:
        ops, active = _path_ops([of], wrt_list)
        jacs = _jac_loop(of, wrt_list, ops, active) if loop else _jac_vmap(of, wrt_list, ops, active)
        for w, j in zip(wrt_list, jacs):
            result[(of, w)] = j
    if single_of and single_wrt:
        return result[(of_list[0], wrt_list[0])]
    return result


def _jac_loop(of, wrts, ops, active):
    rows: list[list] = [[] for _ in wrts]
    for i in range(of.size):
        onehot = np.zeros(of.size)
        onehot[i] = 1.0
        cot = vjp_pass(ops, active, {of: Constant(onehot.reshape(of.shape))})
        for k, w in enumerate(wrts):
            c = cot.get(id(w))
            rows[k].append(None if c is None else reshape(c, (w.size,)))
    out = []
    for k, w in enumerate(wrts):
        if all(r is None for r in rows[k]):
            out.append(Constant(np.zeros((of.size, w.size))))
        else:
            zero = Constant(np.zeros(w.size))
            out.append(stack([zero if r is None else r for r in rows[k]], axis=0))
    return out


def _jac_vmap(of, wrts, ops, active):
    sub = Recorder(name="vjp_subgraph")
    seed = Variable(shape=of.shape, name="seed")
    with sub:
        cot = vjp_pass(ops, active, {of: seed})
    cots = [cot.get(id(w)) for w in wrts]
    nodes = list(sub.nodes)
    produced = {id(v) for op in nodes for v in op.outputs}
    ext: dict[int, Variable] = {}
    for op in nodes:
        for v in op.inputs:
            if id(v) not in produced and v is not seed and not isinstance(v, Constant):
                ext[id(v)] = v
    for c in cots:  # a cotangent may be an outside variable itself (e.g. d(x*p)/dx = p)
        if c is not None and id(c) not in produced and c is not seed and not isinstance(c, Constant):
            ext[id(c)] = c
    ext_vars = sorted(ext.values(), key=lambda v: v.id)
    if all(c is None for c in cots):
        return [Constant(np.zeros((of.size, w.size))) for w in wrts]
    n_of = of.size
    wsizes = [w.size for w in wrts]

    def jacobian(*ext_vals):
        def one_row(s):
            env = dict(zip(ext_vars, ext_vals))
            env[seed] = s
            evaluate_nodes(nodes, env, jnp)
            return tuple(
                jnp.zeros(n) if c is None else jnp.reshape(jnp.asarray(lookup(env, c)), (n,))
                for c, n in zip(cots, wsizes)
            )

        eye = jnp.eye(n_of, dtype=jnp.float64).reshape((n_of,) + of.shape)
        return jax.vmap(one_row)(eye)

    # the shapes are known ((rows, wrt size) each): no trace of the vmapped pass to find them
    op = VmappedJacobianOperation(jacobian, ext_vars, name="vmapped_jacobian",
                                  out_shapes=[(n_of, n) for n in wsizes])
    # The structure of the batched reverse pass, for simulators that schedule it themselves
    # (BlockSimulator: one batched direct call per block instead of a callback).
    op.batch = dict(nodes=nodes, seed=seed, ext_vars=ext_vars, cots=cots, of_shape=of.shape,
                    n_rows=n_of, wsizes=wsizes)
    return list(op.outputs)


class VmappedJacobianOperation(JaxFunctionOperation):
    """The ``loop=False`` Jacobian: a :class:`JaxFunctionOperation` (one ``jax.vmap`` of the
    recorded reverse pass over the rows of the identity) that also exposes that pass in
    ``batch`` (its nodes, the seed Variable, the outside Variables it reads, the cotangent
    Variables of the ``wrts``, the rows)."""
