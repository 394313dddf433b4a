"""A *region*: a sub-graph packaged as one function of arrays.

A :class:`Region` holds ``in_vars`` (Variables bound to the function's arguments, in
order), ``nodes`` (operations, topologically ordered) and ``out_vars`` (Variables whose
values are returned; ``None`` means a zero array of the matching ``out_shapes``). It can
run as

- ``fn``: a pure JAX function (traced into whatever program calls it);
- ``jitted``: its own compiled program (``compile_count`` counts its compilations);
- ``jax_call``: what a JAX program calls. With ``compile_separately`` it is a
  ``jax.pure_callback`` to ``jitted`` — the enclosing program contains only the callback,
  so the region compiles on its own. Under ``jax.vmap`` the callback receives the whole
  batch at once (``vmap_method='broadcast_all'``) and runs one vmapped compiled call, not
  one round trip per element. The callback is wrapped in ``jax.custom_vjp`` whose
  backward pass calls the region's *recorded* reverse mode (another Region, itself
  separately compiled), so JAX transformations (``jax.vjp``/``grad`` of a
  ``jax_function`` or of a ``loop=False`` Jacobian containing it) work to any order.

``device`` (a ``jax.Device`` or ``None`` = cpu 0) is where ``jitted``/``batched`` run
(inline, PySimulator, host callback); it is inherited by the VJP regions. A region
traced into a program (``compile_separately=False``) runs where that program runs.
:func:`compiled_function_count` counts compilations of all regions since import.

``vjp_region(given, wanted)`` records the reverse pass of the region's operations (each
op's ``vjp``) into a private recorder and returns the Region computing the cotangents of
the ``wanted`` inputs from the inputs and the cotangents of the ``given`` outputs (its
nodes: the forward nodes, then the recorded reverse nodes). Cached per key.

``graph_function(build, *in_shapes)`` records ``build(*placeholders)`` (graph operations
on placeholder Variables of ``in_shapes``) into a private recorder and returns a pure JAX
function of arrays evaluating that graph (``Region.fn``; e.g. a ``loop`` body or an
implicit residual built from graph operations). ``build`` may only read its placeholders
and literal constants; reading another graph's Variable is an error (pass it as an
argument instead).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

from aragog._compiling import compile_keyed
from aragog.csdl._derivative import vjp_pass
from aragog._float64 import in_float64
from aragog.csdl._operation import ancestors, evaluate_nodes, lookup
from aragog.csdl.operations._elementwise import add
from aragog.csdl._recorder import Recorder
from aragog.csdl._share import canonical
from aragog.csdl._variable import Constant, Variable, as_variable


_COMPILED = 0  # compilations (traces) of all regions' own jitted functions


def compiled_function_count() -> int:
    """How many times any region's own jitted function (plain or batched) was traced
    for compilation, since import. Differences of it count compilations."""
    return _COMPILED


class Region:
    #: How the host callback meets ``jax.vmap``: "broadcast_all" (one batched call) or
    #: "sequential" (one round trip per batch element; kept to measure the difference).
    vmap_method = "broadcast_all"

    def __init__(self, in_vars, nodes, out_vars, out_shapes=None, *, label="region",
                 compile_separately=True, jit_kwargs=None, device=None):
        self.in_vars = list(in_vars)
        self.nodes = list(nodes)
        self.out_vars = list(out_vars)
        self.out_shapes = [v.shape for v in out_vars] if out_shapes is None else list(out_shapes)
        self.label = label
        self.compile_separately = bool(compile_separately)
        self.jit_kwargs = dict(jit_kwargs or {})
        self.device = device  # a jax.Device or None (= cpu 0, JAX's callback default)
        self.compile_count = 0  # traces of its own jitted functions (plain and batched)
        self.host_calls = 0  # calls through the host callback
        self._jitted = None
        self._batched = None
        self._executable = None  # ahead-of-time executable (BlockSimulator's direct calls)
        self._batched_exes: dict = {}  # (in_axes, batch) -> vmapped executable
        self.compile_records: list = []  # CompileRecord of each ahead-of-time compilation
        self.direct_calls = 0  # calls of the executable by BlockSimulator
        # A key that determines this region's program (set by an owner that knows one):
        # lets executable() load it from the active ExecutableStore without tracing.
        self.store_key: str | None = None
        self._vjp_regions: dict = {}
        self._call = None

    # the function -------------------------------------------------------------------
    def fn(self, *vals):
        env = dict(zip(self.in_vars, vals))
        evaluate_nodes(self.nodes, env, jnp)
        return tuple(
            jnp.zeros(s, jnp.float64) if v is None else jnp.asarray(lookup(env, v), jnp.float64)
            for v, s in zip(self.out_vars, self.out_shapes)
        )

    def _counted(self, f):
        def traced(*vals):
            global _COMPILED
            _COMPILED += 1
            self.compile_count += 1
            return f(*vals)

        return traced

    @property
    def jitted(self):
        if self._jitted is None:
            self._jitted = jax.jit(self._counted(self.fn), **self.jit_kwargs)
        return self._jitted

    @property
    def batched(self):
        if self._batched is None:
            self._batched = jax.jit(self._counted(jax.vmap(self.fn)), **self.jit_kwargs)
        return self._batched

    def executable(self):
        """The region's ahead-of-time compiled function of device arrays (lowered for
        ``device``; compiled on first use, counted in ``compile_count`` and
        ``compile_records``). Used by :class:`~aragog.csdl.BlockSimulator`."""
        if self._executable is None:
            self._executable = self._compile(self.fn, (None,) * len(self.in_vars), 0, "", "")
        return self._executable

    def batched_executable(self, axes: tuple, batch: int):
        """The ahead-of-time executable of ``jax.vmap(fn, in_axes=axes)`` for a batch of
        ``batch`` (``axes[i]`` 0: input i carries a leading batch axis, None: shared);
        every output has the leading batch axis. Compiled once per (axes, batch)."""
        key = (tuple(axes), int(batch))
        if key not in self._batched_exes:
            self._batched_exes[key] = self._compile(jax.vmap(self.fn, in_axes=key[0]), key[0], key[1],
                                                    f"[batch {batch}]", f"|vmap{key}")
        return self._batched_exes[key]

    @in_float64
    def _compile(self, fn, axes, batch, label_suffix, key_suffix):
        sharding = SingleDeviceSharding(self._device())
        specs = [jax.ShapeDtypeStruct(((batch,) if a == 0 else ()) + v.shape, jnp.float64, sharding=sharding)
                 for v, a in zip(self.in_vars, axes)]
        key = None if self.store_key is None else f"{self.store_key}|{self._device()}{key_suffix}"
        exe, record = compile_keyed(self._counted(fn), specs, self.label + label_suffix, self.jit_kwargs, key)
        self.compile_records.append(record)
        return exe

    @in_float64
    def call_numpy(self, *vals) -> tuple:
        """One call of the compiled function, NumPy in and out.

        Runs under ``jax.default_device(cpu 0)``: JAX sets that default inside host
        callbacks and it is part of jit's cache key, so doing the same outside a callback
        (inline recording, PySimulator) lets both share one compiled function."""
        with jax.default_device(self._device()):
            return tuple(np.asarray(o, dtype=np.float64) for o in self.jitted(*vals))

    def _device(self):
        return self.device if self.device is not None else jax.devices("cpu")[0]

    @in_float64
    def host_call(self, *vals):
        """The host-callback target: NumPy in, NumPy out; leading batch axes (from
        vmap, all arguments batched: ``broadcast_all``) handled in one vmapped call. In
        float64 whichever thread JAX runs the callback in (``jax.enable_x64`` is set per
        thread)."""
        self.host_calls += 1
        vals = [np.asarray(v, dtype=np.float64) for v in vals]
        nb = vals[0].ndim - len(self.in_vars[0].shape) if vals else 0
        if nb == 0:
            return self.call_numpy(*vals)
        bshape = vals[0].shape[:nb]
        flat = [v.reshape((-1,) + v.shape[nb:]) for v in vals]
        with jax.default_device(self._device()):
            outs = self.batched(*flat)
        return tuple(np.asarray(o).reshape(bshape + o.shape[1:]) for o in outs)

    def jax_call(self, *vals):
        if not self.compile_separately:
            return self.fn(*vals)
        if self._call is None:
            self._call = self._make_callback()
        return self._call(*vals)

    def _make_callback(self):
        shapes = tuple(jax.ShapeDtypeStruct(s, jnp.float64) for s in self.out_shapes)
        n_in, n_out = len(self.in_vars), len(self.out_shapes)

        @jax.custom_vjp
        def call(*vals):
            return jax.pure_callback(self.host_call, shapes, *vals, vmap_method=self.vmap_method)

        def fwd(*vals):
            return call(*vals), vals

        def bwd(vals, cts):
            back = self.vjp_region(tuple(range(n_out)), tuple(range(n_in)))
            return tuple(back.jax_call(*vals, *cts))

        call.defvjp(fwd, bwd)
        return call

    def canonical(self):
        """(signature, order, has_custom): see :mod:`aragog.csdl._share`. Cached."""
        if getattr(self, "_canonical", None) is None:
            self._canonical = canonical(self.in_vars, self.nodes, self.out_vars)
        return self._canonical

    # reverse mode --------------------------------------------------------------------
    @property
    def vjp_regions(self) -> dict:
        """``{(given, wanted): Region}`` of the VJP regions :meth:`vjp_region` made so far
        (a copy)."""
        return dict(self._vjp_regions)

    def vjp_region(self, given, wanted) -> "Region":
        """Region: (inputs..., cotangents of outputs ``given``) -> cotangents of inputs
        ``wanted``."""
        key = (tuple(given), tuple(wanted))
        if key in self._vjp_regions:
            return self._vjp_regions[key]
        sub = Recorder(name=f"vjp({self.label})")
        seeds = [Variable(shape=self.out_shapes[i], name=f"cot_{i}") for i in given]
        active = {id(self.in_vars[i]) for i in wanted}
        ops = []
        for op in self.nodes:
            if any(id(v) in active for v in op.inputs):
                ops.append(op)
                active.update(id(v) for v in op.outputs)
        with sub:
            seed_map: dict = {}
            for i, s in zip(given, seeds):
                v = self.out_vars[i]
                if v is None:
                    continue
                seed_map[v] = add(seed_map[v], s) if v in seed_map else s
            cot = vjp_pass(ops, active, seed_map)
        grads = [cot.get(id(self.in_vars[i])) for i in wanted]
        region = Region(
            self.in_vars + seeds, self.nodes + sub.nodes, grads,
            [self.in_vars[i].shape for i in wanted], label=f"vjp({self.label})",
            compile_separately=self.compile_separately, jit_kwargs=self.jit_kwargs,
            device=self.device,
        )
        self._vjp_regions[key] = region
        return region


def graph_function(build, *in_shapes, name: str | None = None):
    """A pure JAX function evaluating the graph that ``build`` records (see module doc)."""
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
