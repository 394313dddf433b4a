"""Structural identity of regions, for sharing compiled functions.

:func:`canonical` walks a region from its outputs (in order) back to its inputs, each
operation's inputs port by port, and lists every operation as (type, frozen static
parameters, canonical labels of its inputs, output shapes). Leaves are labelled by
first visit: a region input becomes ``("in", shape)`` wherever it is met first, a
:class:`Constant` carries its compiled-in value. Two regions with equal signatures
compute the same function up to a permutation of their inputs; ``order[k]`` is the
region-input index of the k-th input met by the walk, so a caller of region B can use
region A's compiled function with ``args_A[order_A[k]] = args_B[order_B[k]]``.

Each operation is keyed by its :meth:`~aragog.csdl._operation.Operation.share_key`
(type and :func:`freeze`-d parameters unless a subclass overrides it). Operations with
hidden Python state (custom NumPy operations) are keyed by their user class only; the
caller decides (``assume_custom_ops_match``) whether that is enough — :func:`canonical`
reports whether the region contains any.
"""

from __future__ import annotations

from aragog.csdl._operation import freeze
from aragog.csdl._variable import Constant

__all__ = ["canonical", "freeze", "op_key"]


def op_key(op):
    """(key, is_custom) for one operation: its :meth:`Operation.share_key`."""
    return op.share_key()


def canonical(in_vars, nodes, out_vars):
    """(signature, order, has_custom) of the region (see the module docstring)."""
    producer = {id(v): op for op in nodes for v in op.outputs}
    in_index = {id(v): i for i, v in enumerate(in_vars)}
    labels: dict[int, object] = {}
    entries: list = []
    order: list[int] = []
    has_custom = False
    stack = [(v, False) for v in reversed([v for v in out_vars if v is not None])]
    while stack:
        v, expanded = stack.pop()
        if id(v) in labels:
            continue
        if id(v) in in_index:
            labels[id(v)] = len(entries)
            entries.append(("in", v.shape))
            order.append(in_index[id(v)])
            continue
        op = producer.get(id(v))
        if op is None:
            if isinstance(v, Constant) or v.op is None:
                labels[id(v)] = len(entries)
                entries.append(("const", freeze(v.value), v.shape))
                continue
            raise ValueError(f"region reads {v!r}, which is neither an input nor computed in it")
        if not expanded:
            stack.append((v, True))
            stack.extend((u, False) for u in reversed(op.inputs))
            continue
        key, custom = op_key(op)
        has_custom = has_custom or custom
        k = len(entries)
        entries.append(("op", key, tuple(labels[id(u)] for u in op.inputs),
                        tuple(w.shape for w in op.outputs)))
        for j, w in enumerate(op.outputs):
            labels[id(w)] = (k, j)
    for i, v in enumerate(in_vars):  # inputs that no output reads
        if id(v) not in labels:
            labels[id(v)] = len(entries)
            entries.append(("unused", v.shape))
            order.append(i)
    sig = (tuple(entries), tuple(None if v is None else labels[id(v)] for v in out_vars))
    return sig, tuple(order), has_custom
