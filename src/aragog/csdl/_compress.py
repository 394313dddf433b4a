"""``compress``: replace the operations between some inputs and outputs by ONE operation.

The new :class:`JaxCompressedOperation` produces the *same output Variable objects*, so
downstream operations, derivatives and simulators keep working. It runs its region as one
jitted JAX function (see :mod:`aragog.csdl._region`):

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
:class:`Region`, with ``compile_count``; shared by every operation of a sharing group);
``perm`` (region input i is the operation's input ``perm[i]``); ``shared_from`` (the
earlier compressed operation whose compiled functions this one uses, or ``None``) and
``repeats`` (the copies compressed by ``find_repeats=True``).

Sharing (:mod:`aragog.csdl._share`): regions with the same structural signature share
one Region, hence one compiled forward function and, since derivative regions are
cached on the Region per (seeded outputs, differentiated inputs), one compiled function
per derivative. :func:`~aragog.csdl._region.compiled_function_count` counts compilations.
"""

from __future__ import annotations

import heapq

import jax

from aragog.csdl._derivative import _path_ops
from aragog.csdl._operation import Operation
from aragog.csdl._recorder import get_current_recorder, next_op_id
from aragog.csdl._region import Region
from aragog.csdl._share import canonical, freeze
from aragog.csdl._share import op_key as _op_key
from aragog.csdl._variable import Constant, Variable

_INTERMEDIATES = ("none", "used", "all")


class JaxCompressedOperation(Operation):
    name = "compressed"

    def __init__(self, region: Region, inputs, outputs=None, label=None, n_listed=(0, 0),
                 perm=None, shared_from=None):
        self.region = region
        self.label = label or region.label
        # region input i is this operation's input perm[i] (sharing permutes arguments)
        self.perm = tuple(range(len(inputs))) if perm is None else tuple(perm)
        self.shared_from = shared_from
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

    def share_key(self):
        """Keyed by its (possibly shared) region and argument permutation."""
        return ("compressed", id(self.region), tuple(self.perm)), False

    def compute(self, xp, *vals):
        vals = [vals[j] for j in self.perm]
        if xp is jax.numpy:
            return self.region.jax_call(*vals)
        return self.region.call_numpy(*vals)

    def vjp(self, cots, needs):
        given = tuple(i for i, c in enumerate(cots) if c is not None)
        inv = {j: i for i, j in enumerate(self.perm)}
        wanted = tuple(sorted(inv[j] for j, n in enumerate(needs) if n))
        # cached per (given, wanted) on the (possibly shared) region: every operation of
        # a sharing group gets the same derivative region, compiled once
        back = self.region.vjp_region(given, wanted)
        op = JaxCompressedOperation(back, [self.inputs[j] for j in self.perm] + [cots[i] for i in given],
                                    label=f"vjp({self.label})")
        result = [None] * len(self.inputs)
        for i, v in zip(wanted, op.outputs):
            result[self.perm[i]] = v
        return result


def _as_list(x, what):
    xs = [x] if isinstance(x, Variable) else list(x)
    if not xs:
        raise ValueError(f"compress: no {what} given")
    for v in xs:
        if not isinstance(v, Variable):
            raise TypeError(f"compress: {what} entry {v!r} is not a Variable")
    return xs


def _resolve_device(device):
    if device is None or isinstance(device, jax.Device):
        return device
    if isinstance(device, str) and device.lower() in ("cpu", "gpu"):
        kind = device.lower()
        try:
            devs = jax.devices(kind)
        except RuntimeError:
            devs = []
        if not devs:
            raise ValueError(f"compress: device={device!r}: no {kind.upper()} is available to JAX "
                             f"(available: {[str(d) for d in jax.devices()]})")
        return devs[0]
    raise ValueError(f"compress: unknown device {device!r}; expected 'cpu', 'gpu' or a jax.Device")


def _feeders(recorder, op_ids, input_ids):
    """Operations outside the region whose outputs only the region (and other feeders)
    read; none of them may produce a listed input."""
    users: dict[int, set] = {}
    for op in recorder.nodes:
        for v in op.inputs:
            users.setdefault(id(v), set()).add(id(op))
    taken = set(op_ids)
    found = []
    for op in reversed(recorder.nodes):  # reverse topological: users before producers
        if id(op) in taken or any(id(v) in input_ids for v in op.outputs):
            continue
        us = set().union(*(users.get(id(v), set()) for v in op.outputs))
        if us and us <= taken:
            taken.add(id(op))
            found.append(op)
    return found


def _registry(recorder) -> dict:
    reg = getattr(recorder, "_compressed_registry", None)
    if reg is None:
        reg = recorder._compressed_registry = {}
    return reg


def compress(inputs, outputs, name: str | None = None, absorb_feeders: bool = False,
             intermediates: str = "none", device=None, jit_kwargs: dict | None = None,
             compile_separately: bool = True, share_compiled: bool = True,
             find_repeats: bool = False, share_with=None, assume_custom_ops_match: bool = False):
    """Replace the operations between ``inputs`` and ``outputs`` (in the active recorder)
    by one :class:`JaxCompressedOperation`; returns it.

    Implemented: ``name``, ``absorb_feeders``, ``intermediates`` ('none' | 'used' |
    'all'), ``device``, ``jit_kwargs``, ``compile_separately``, ``share_compiled``,
    ``share_with``, ``assume_custom_ops_match``, ``find_repeats``. All validation
    happens before the graph changes.

    Sharing: the region's structural signature (:mod:`aragog.csdl._share`) is looked up
    among earlier compressed operations of the recorder with the same
    ``compile_separately``, ``jit_kwargs`` and device; on a match the new operation
    calls the earlier one's region (same compiled functions, arguments permuted) and
    ``shared_from`` names that operation. Regions with custom operations match only
    with ``assume_custom_ops_match=True`` or through ``share_with``. ``share_with=op``
    forces sharing with ``op`` (error if the regions differ); ``jit_kwargs`` / ``device``
    left at ``None`` are then taken from ``op``.

    ``find_repeats``: after compressing this region, compress every other copy of it
    in the graph (same structure from the first output back to the inputs; same
    options), greedily in topological order, never overlapping; a copy whose
    intermediate escapes (or that fails any other check) is skipped. The copies are
    listed in ``repeats`` and share the compiled functions.

    ``device``: where the region's own compiled function runs (inline, PySimulator,
    host callback); a region traced into a program (``compile_separately=False``) runs
    wherever that program runs.
    """
    # --- option validation (nothing changed yet) -------------------------------------
    if intermediates not in _INTERMEDIATES:
        raise ValueError(f"compress: intermediates={intermediates!r}; expected one of {_INTERMEDIATES}")
    dev = _resolve_device(device)
    if jit_kwargs is not None:
        if not isinstance(jit_kwargs, dict):
            raise TypeError(f"compress: jit_kwargs must be a dict, got {type(jit_kwargs).__name__}")
        try:
            jax.jit(lambda: None, **jit_kwargs)
        except TypeError as e:
            raise ValueError(f"compress: invalid jit_kwargs {jit_kwargs!r}: {e}") from None
    if share_with is not None:
        if not isinstance(share_with, JaxCompressedOperation):
            raise TypeError(f"compress: share_with={share_with!r} is not a compressed operation")
        if jit_kwargs is not None and dict(jit_kwargs) != share_with.region.jit_kwargs:
            raise ValueError(f"compress: jit_kwargs {jit_kwargs!r} differ from share_with's "
                             f"{share_with.region.jit_kwargs!r}")
        if dev is not None and dev != share_with.region.device:
            raise ValueError(f"compress: device {dev} differs from share_with's {share_with.region.device}")
        if bool(compile_separately) != share_with.region.compile_separately:
            raise ValueError("compress: compile_separately differs from share_with's")
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
    if absorb_feeders:
        extra_ops = _feeders(recorder, op_ids, in_ids)
        ops = sorted(ops + extra_ops, key=lambda o: o.id)
        op_ids = {id(op) for op in ops}
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
    all_in, all_out = inputs + extra_in_list, outputs + extra_out

    # --- sharing (decided before the graph changes) ------------------------------------
    sig, order, has_custom = canonical(all_in, ops, all_out)
    target = None  # (region, its canonical order, owner operation)
    if share_with is not None:
        t_sig, t_order, _ = share_with.region.canonical()
        if t_sig != sig:
            raise ValueError(f"compress {label!r}: the region does not match share_with's "
                             f"{share_with.label!r} (different operations, parameters, constants or wiring)")
        target = (share_with.region, t_order, share_with.shared_from or share_with)
        dev = share_with.region.device
        jit_kwargs = share_with.region.jit_kwargs
    key = (sig, bool(compile_separately), tuple(sorted((k, repr(v)) for k, v in (jit_kwargs or {}).items())),
           None if dev is None else str(dev))
    registry = _registry(recorder)
    if target is None and share_compiled and (not has_custom or assume_custom_ops_match):
        hit = registry.get(key)
        if hit is not None:
            target = hit
    if target is not None:
        region, t_order, owner = target
        perm = [0] * len(all_in)
        for k in range(len(order)):
            perm[t_order[k]] = order[k]
        shared_from = owner
    else:
        region = Region(all_in, ops, all_out, label=label, compile_separately=compile_separately,
                        jit_kwargs=jit_kwargs, device=dev)
        region._canonical = (sig, order, has_custom)
        perm, shared_from = None, None

    # --- change the graph ----------------------------------------------------------------
    last = max(ops, key=lambda o: o.id)
    recorder.nodes = [op for op in recorder.nodes if id(op) not in op_ids]
    new = JaxCompressedOperation(region, all_in, all_out, label=label,
                                 n_listed=(len(inputs), len(outputs)), perm=perm, shared_from=shared_from)
    if target is None:
        registry.setdefault(key, (region, order, new))
    else:  # keep this copy's own sub-graph for inspection
        new.own_nodes = ops
    _place(recorder, new, last)
    if find_repeats:
        new.repeats = _compress_repeats(recorder, new, ops, inputs, outputs, all_in, dict(
            name=label, absorb_feeders=absorb_feeders, intermediates=intermediates,
            compile_separately=compile_separately, assume_custom_ops_match=assume_custom_ops_match))
    return new


def _match(t_out, c_out, t_producer, t_inputs, live_ids, assume_custom, op_key):
    """Map the template region (walked back from ``t_out``) onto the graph from
    ``c_out``: {id(template var): graph var}, or None where the structure differs.
    ``op_key(op)`` is :func:`aragog.csdl._share.op_key`, memoised by the caller."""
    fwd: dict[int, Variable] = {}
    back: dict[int, int] = {}
    stack = [(t_out, c_out)]
    while stack:
        tv, cv = stack.pop()
        if id(tv) in fwd:
            if fwd[id(tv)] is not cv:
                return None
            continue
        if id(cv) in back or tv.shape != cv.shape:
            return None
        fwd[id(tv)], back[id(cv)] = cv, id(tv)
        if id(tv) in t_inputs:
            continue
        top = t_producer.get(id(tv))
        if top is None:  # a compiled-in constant
            if not isinstance(cv, Constant) or freeze(tv.value) != freeze(cv.value):
                return None
            continue
        cop = cv.op
        if cop is None or id(cop) not in live_ids or len(cop.inputs) != len(top.inputs):
            return None
        (tk, custom), (ck, _) = op_key(top), op_key(cop)
        if tk != ck or (custom and not assume_custom):
            return None
        j = next(k for k, w in enumerate(top.outputs) if w is tv)
        if cop.outputs[j] is not cv:
            return None
        for tw, cw in zip(top.outputs, cop.outputs):
            if tw is not tv:
                stack.append((tw, cw))
        stack.extend(zip(top.inputs, cop.inputs))
    return fwd


def _compress_repeats(recorder, template, ops, inputs, outputs, all_in, kwargs) -> list:
    """Compress every other copy of the template's region (greedily, in topological
    order; copies never overlap since a compressed copy's operations leave the graph);
    a copy that fails compress's checks (an intermediate escapes, an input depends on
    another, the region differs) is skipped."""

    keys: dict[int, tuple] = {}  # op_key per operation, computed once (the walk revisits)

    def op_key(op):
        k = keys.get(id(op))
        if k is None:
            k = keys[id(op)] = (_op_key(op), op)  # keep op alive: ids stay unique
        return k[0]

    t_producer = {id(v): op for op in ops for v in op.outputs}
    t_inputs = {id(v) for v in all_in}
    anchor = t_producer[id(outputs[0])]
    key = op_key(anchor)[0]
    found = []
    live_ids = {id(op) for op in recorder.nodes}  # refreshed only when a copy is compressed
    for cand in list(recorder.nodes):
        if id(cand) not in live_ids or isinstance(cand, JaxCompressedOperation) and cand is template:
            continue
        if op_key(cand)[0] != key or len(cand.outputs) != len(anchor.outputs):
            continue
        j = next(k for k, w in enumerate(anchor.outputs) if w is outputs[0])
        fwd = _match(outputs[0], cand.outputs[j], t_producer, t_inputs, live_ids,
                     kwargs["assume_custom_ops_match"], op_key)
        if fwd is None or any(id(v) not in fwd for v in list(inputs) + list(outputs)):
            continue
        try:
            op = compress([fwd[id(v)] for v in inputs], [fwd[id(v)] for v in outputs],
                          share_with=template, **kwargs)
        except ValueError:
            continue
        found.append(op)
        live_ids = {id(n) for n in recorder.nodes}
    return found


def _place(recorder, new, last) -> None:
    """Put the new operation where the region's last operation ``last`` was (taking its
    id, now free in the graph), which keeps ``recorder.nodes`` topological unless an
    outside operation between the region's first and last ones reads a region output;
    checked in one pass, with a full :func:`_toposort` as the fallback."""
    nodes = recorder.nodes
    nodes.pop()  # the constructor appended it
    pos = next((i for i, op in enumerate(nodes) if op.id > last.id), len(nodes))
    nodes.insert(pos, new)
    new.id = last.id
    produced: set[int] = set()
    graph_vars = {id(v) for op in nodes for v in op.outputs}
    for op in nodes:
        if any(id(v) in graph_vars and id(v) not in produced for v in op.inputs):
            _toposort(recorder)
            return
        produced.update(id(v) for v in op.outputs)


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
