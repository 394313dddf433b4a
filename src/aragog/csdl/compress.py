"""``compress``: replace the operations between some inputs and outputs by ONE operation.

The new :class:`JaxCompressedOperation` produces the *same output Variable objects*, so
downstream operations, derivatives and simulators keep working. It runs its region as one
jitted JAX function (see :mod:`aragog.csdl.region`):

- inline recording and :class:`PySimulator`: one call of the compiled function;
- :class:`JaxSimulator`: ``compile_separately=True`` → a host callback to the region's
  own compiled function; ``False`` → the region is traced into the program;
- reverse mode: the region's VJP is recorded (op by op) into a copy of the region and
  wrapped as another ``JaxCompressedOperation`` — one node, itself differentiable.

Any variable the region reads that is not a listed input (a parameter, or the output of
an operation upstream) becomes an *extra input* read at run time; only
:class:`Constant` values are compiled in.

Operation attributes: ``inputs`` = listed inputs followed by ``extra_inputs``;
``outputs`` = listed outputs followed by ``extra_outputs``; ``region`` (the
:class:`Region`, with ``compile_count``); ``shared_from`` (always ``None`` here) and
``repeats`` (always ``[]``): sharing is not implemented yet.
"""

from __future__ import annotations

import heapq

import jax

from aragog.csdl.derivative import _path_ops
from aragog.csdl.operation import Operation
from aragog.csdl.recorder import get_current_recorder, next_op_id
from aragog.csdl.region import Region
from aragog.csdl.variable import Constant, Variable

_INTERMEDIATES = ("none", "used", "all")


class JaxCompressedOperation(Operation):
    name = "compressed"

    def __init__(self, region: Region, inputs, outputs=None, label=None, n_listed=(0, 0)):
        self.region = region
        self.label = label or region.label
        self.shared_from = None
        self.repeats: list = []
        if outputs is None:
            super().__init__(inputs, region.out_shapes)
        else:  # adopt existing Variables (compress keeps downstream wiring intact)
            recorder = get_current_recorder()
            self.inputs = list(inputs)
            self.params = {}
            self.id = next_op_id()
            self.outputs = list(outputs)
            for v in self.outputs:
                v.op = self
            recorder._add(self)
        self.extra_inputs = self.inputs[n_listed[0]:] if n_listed[0] else []
        self.extra_outputs = self.outputs[n_listed[1]:] if n_listed[1] else []

    def compute(self, xp, *vals):
        if xp is jax.numpy:
            return self.region.jax_call(*vals)
        return self.region.call_numpy(*vals)

    def vjp(self, cots, needs):
        given = tuple(i for i, c in enumerate(cots) if c is not None)
        wanted = tuple(i for i, n in enumerate(needs) if n)
        back = self.region.vjp_region(given, wanted)
        op = JaxCompressedOperation(back, self.inputs + [cots[i] for i in given],
                                    label=f"vjp({self.label})")
        result = [None] * len(self.inputs)
        for i, v in zip(wanted, op.outputs):
            result[i] = v
        return result


def _as_list(x, what):
    xs = [x] if isinstance(x, Variable) else list(x)
    if not xs:
        raise ValueError(f"compress: no {what} given")
    for v in xs:
        if not isinstance(v, Variable):
            raise TypeError(f"compress: {what} entry {v!r} is not a Variable")
    return xs


def compress(inputs, outputs, name: str | None = None, absorb_feeders: bool = False,
             intermediates: str = "none", device=None, jit_kwargs: dict | None = None,
             compile_separately: bool = True, share_compiled: bool = False,
             find_repeats: bool = False, share_with=None, assume_custom_ops_match: bool = False):
    """Replace the operations between ``inputs`` and ``outputs`` (in the active recorder)
    by one :class:`JaxCompressedOperation`; returns it.

    Implemented: ``name``, ``intermediates`` ('none' | 'used' | 'all'), ``jit_kwargs``,
    ``compile_separately``. Not yet (``NotImplementedError``): ``absorb_feeders``,
    ``device``, ``share_compiled``, ``find_repeats``, ``share_with``,
    ``assume_custom_ops_match``. All validation happens before the graph changes.
    """
    # --- option validation (nothing changed yet) -------------------------------------
    if intermediates not in _INTERMEDIATES:
        raise ValueError(f"compress: intermediates={intermediates!r}; expected one of {_INTERMEDIATES}")
    for flag, value, default in [("absorb_feeders", absorb_feeders, False),
                                 ("device", device, None),
                                 ("share_compiled", share_compiled, False),
                                 ("find_repeats", find_repeats, False),
                                 ("share_with", share_with, None),
                                 ("assume_custom_ops_match", assume_custom_ops_match, False)]:
        if value is not default and value != default:
            raise NotImplementedError(f"compress: option {flag}={value!r} is not implemented yet")
    if jit_kwargs is not None:
        if not isinstance(jit_kwargs, dict):
            raise TypeError(f"compress: jit_kwargs must be a dict, got {type(jit_kwargs).__name__}")
        try:
            jax.jit(lambda: None, **jit_kwargs)
        except TypeError as e:
            raise ValueError(f"compress: invalid jit_kwargs {jit_kwargs!r}: {e}") from None
    recorder = get_current_recorder()
    inputs, outputs = _as_list(inputs, "inputs"), _as_list(outputs, "outputs")
    label = name or "compressed"

    # --- the region ------------------------------------------------------------------
    for x in inputs:
        others = [y for y in inputs if y is not x]
        _, dep = _path_ops([x], others)
        if id(x) in dep:
            raise ValueError(f"compress {label!r}: input {x!r} depends on another input")
    ops, active = _path_ops(outputs, inputs)
    in_ids = {id(v) for v in inputs}
    for out in outputs:
        if id(out) not in active or id(out) in in_ids:
            raise ValueError(f"compress {label!r}: the inputs do not affect output {out!r}")
    op_ids = {id(op) for op in ops}
    node_ids = {id(op) for op in recorder.nodes}
    if not op_ids <= node_ids:
        raise ValueError(f"compress {label!r}: the region's operations are not all in the active recorder")
    produced = {id(v): v for op in ops for v in op.outputs}
    out_ids = {id(v) for v in outputs}
    escaping: dict[int, Variable] = {}
    for op in recorder.nodes:
        if id(op) in op_ids:
            continue
        for v in op.inputs:
            if id(v) in produced and id(v) not in out_ids:
                escaping[id(v)] = v
    if escaping and intermediates == "none":
        raise ValueError(
            f"compress {label!r}: intermediate(s) {sorted(escaping.values(), key=lambda v: v.id)} "
            "are used outside the region; pass intermediates='used' to make them outputs"
        )
    if intermediates == "used":
        extra_out = sorted(escaping.values(), key=lambda v: v.id)
    elif intermediates == "all":
        extra_out = sorted((v for k, v in produced.items() if k not in out_ids), key=lambda v: v.id)
    else:
        extra_out = []
    extra_in: dict[int, Variable] = {}
    for op in ops:
        for v in op.inputs:
            if id(v) not in produced and id(v) not in in_ids and not isinstance(v, Constant):
                extra_in[id(v)] = v
    extra_in_list = sorted(extra_in.values(), key=lambda v: v.id)
    region = Region(inputs + extra_in_list, ops, outputs + extra_out, label=label,
                    compile_separately=compile_separately, jit_kwargs=jit_kwargs)

    # --- change the graph ----------------------------------------------------------------
    recorder.nodes = [op for op in recorder.nodes if id(op) not in op_ids]
    new = JaxCompressedOperation(region, inputs + extra_in_list, outputs + extra_out,
                                 label=label, n_listed=(len(inputs), len(outputs)))
    _toposort(recorder)
    return new


def _toposort(recorder) -> None:
    """Reorder ``recorder.nodes`` topologically (stable) and renumber their ids so that
    sorting by id stays a topological order."""
    nodes = recorder.nodes
    index = {id(op): i for i, op in enumerate(nodes)}
    producer = {id(v): op for op in nodes for v in op.outputs}
    users: dict[int, list] = {id(op): [] for op in nodes}
    indeg = {id(op): 0 for op in nodes}
    for op in nodes:
        deps = {id(producer[id(v)]) for v in op.inputs if id(v) in producer}
        deps.discard(id(op))
        indeg[id(op)] = len(deps)
        for d in deps:
            users[d].append(op)
    heap = [(index[id(op)], op.id, op) for op in nodes if indeg[id(op)] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, _, op = heapq.heappop(heap)
        order.append(op)
        for u in users[id(op)]:
            indeg[id(u)] -= 1
            if indeg[id(u)] == 0:
                heapq.heappush(heap, (index[id(u)], u.id, u))
    if len(order) != len(nodes):
        raise RuntimeError("compress: the graph has a cycle after compression (internal error)")
    ids = sorted(op.id for op in nodes)
    for op, i in zip(order, ids):
        op.id = i
    recorder.nodes = order
