"""``BlockSimulator``: run a graph as a schedule of separately compiled programs, without
host callbacks.

:class:`~aragog.csdl.JaxSimulator` turns the whole graph into one jitted program, so a
separately compiled block is reached through a host callback (tens of microseconds per
call on CPU, and every operand crosses to the host and back). :class:`BlockSimulator`
instead walks the graph in topological order and calls

- each separately compiled :class:`~aragog.csdl.JaxCompressedOperation` *directly*: its
  region's ahead-of-time executable (:meth:`Region.executable`, compiled once per region,
  so shared regions and every simulator using them compile it once), with device arrays
  in and out; and
- each maximal run of other operations between two blocks as one jitted *glue* program
  (compiled ahead of time on first use).

Values stay on the device between steps: a large operand (a table) is never copied to
the host. This is the fast way to evaluate a graph of separately compiled blocks many
times (an ODE right-hand side); JaxSimulator remains the way to embed it in a JAX program.

Derivatives: :meth:`BlockSimulator.compute_totals` records them like the other
simulators. With ``loop=True`` every row is its own recorded reverse pass, whose block
VJPs are direct-call blocks; with ``loop=False`` the recorded reverse pass runs once on
the whole batch of rows, each block VJP as one batched (vmapped) direct call.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from aragog._compiling import compile_keyed
from aragog.csdl._compress import JaxCompressedOperation
from aragog.csdl._derivative import VmappedJacobianOperation
from aragog._float64 import in_float64
from aragog.csdl._operation import ancestors, evaluate_nodes, leaf_value
from aragog.csdl._simulators import _Base, _check_leaves
from aragog.csdl._variable import Constant


class _BlockStep:
    """A separately compiled block: the region's executable, arguments permuted."""

    kind = "block"

    def __init__(self, op: JaxCompressedOperation, slot: dict):
        self.op = op
        self.region = op.region
        self.label = op.region.label
        self.in_vars = [op.inputs[j] for j in op.perm]  # in the region's order
        self.ins = [slot[id(v)] for v in self.in_vars]
        self.outs = [slot[id(v)] for v in op.outputs]
        self.device = op.region.device
        self.axes = None  # set by batch(): inputs carrying a leading batch axis

    def batch(self, axes, size) -> None:
        self.axes, self.size = tuple(axes), int(size)

    def __call__(self, *vals):
        region = self.region
        region.direct_calls += 1
        if self.device is not None:
            vals = jax.device_put(vals, self.device)
        if self.axes is not None:
            return region.batched_executable(self.axes, self.size)(*vals)
        return region.executable()(*vals)

    @property
    def compile_records(self) -> list:
        return self.region.compile_records


class _GlueStep:
    """Consecutive non-block operations as one jitted program (compiled on first call)."""

    kind = "glue"

    def __init__(self, ops, in_vars, out_vars, slot: dict, label: str, device, store_key=None):
        self.ops, self.in_vars, self.out_vars = ops, in_vars, out_vars
        self.ins = [slot[id(v)] for v in in_vars]
        self.outs = [slot[id(v)] for v in out_vars]
        self.label = label
        self.device = device
        self.compile_records: list = []
        self.traces = 0
        self.store_key = store_key
        self._exe = None
        self.axes = None

    def batch(self, axes, size) -> None:
        self.axes, self.size = tuple(axes), int(size)

    def _fn(self, *vals):
        self.traces += 1
        env = dict(zip(self.in_vars, vals))
        evaluate_nodes(self.ops, env, jnp)
        return tuple(jnp.asarray(env[v], dtype=jnp.float64) for v in self.out_vars)

    @in_float64  # traced on float64 arguments, in whichever thread compiles it
    def _compile(self):
        from jax.sharding import SingleDeviceSharding

        sharding = SingleDeviceSharding(self.device or jax.devices("cpu")[0])
        axes = self.axes or (None,) * len(self.in_vars)
        lead = lambda a: (self.size,) if a == 0 else ()  # noqa: E731
        specs = [jax.ShapeDtypeStruct(lead(a) + v.shape, jnp.float64, sharding=sharding)
                 for v, a in zip(self.in_vars, axes)]
        fn = self._fn if self.axes is None else jax.vmap(self._fn, in_axes=self.axes)
        key = None if self.store_key is None else f"{self.store_key}|vmap{self.axes}"
        self._exe, record = compile_keyed(fn, specs, self.label, None, key)
        self.compile_records.append(record)

    def __call__(self, *vals):
        if self._exe is None:
            self._compile()
        if self.device is not None:
            vals = jax.device_put(vals, self.device)
        return self._exe(*vals)


class _JacobianStep:
    """A ``loop=False`` Jacobian (:class:`~aragog.csdl._derivative.VmappedJacobianOperation`):
    its recorded reverse pass as an inner schedule run once on the whole batch of seeds
    (the rows of the identity), each block of it one batched direct call."""

    kind = "jacobian"

    def __init__(self, op: VmappedJacobianOperation, slot: dict, label: str, store_key):
        b = op.batch
        self.label = label
        self.in_vars = list(op.inputs)
        self.ins = [slot[id(v)] for v in self.in_vars]
        self.outs = [slot[id(v)] for v in op.outputs]
        self.cots, self.wsizes, self.rows = b["cots"], b["wsizes"], b["n_rows"]
        wanted = [c for c in self.cots if c is not None]
        self.inner = Schedule(list(b["ext_vars"]) + [b["seed"]], wanted, label=label, store_key=store_key,
                              nodes=b["nodes"], batched=(len(b["ext_vars"]),), batch_size=self.rows)
        # host arrays: eager JAX operations would each compile a small program
        self.seeds = np.eye(self.rows).reshape((self.rows,) + tuple(b["of_shape"]))
        self.compile_records: list = []
        self.traces = 0

    def batch(self, axes, size) -> None:
        raise NotImplementedError(
            f"BlockSimulator: {self.label} is a loop=False derivative inside a batched one; "
            "record the outer derivative with loop=True")

    def __call__(self, *vals):
        res = iter(self.inner(*vals, self.seeds))
        batched = iter(self.inner.out_batched)
        out = []
        for c, n in zip(self.cots, self.wsizes):
            if c is None:
                out.append(np.zeros((self.rows, n)))
                continue
            r, is_batched = next(res), next(batched)
            r = np.asarray(r)
            out.append(r.reshape((self.rows, n)) if is_batched else np.broadcast_to(r.reshape(n), (self.rows, n)))
        return out


class Schedule:
    """The operations from ``args`` to ``outputs`` as a list of steps (see the module
    docstring). ``schedule(*arrays)`` takes one array per ``args`` Variable and returns
    a tuple of output arrays (device arrays). ``store_key``: a key that determines the
    whole graph (the caller's), so glue programs can be loaded from the active
    :class:`~aragog._executable_store.ExecutableStore` without tracing."""

    def __init__(self, args, outputs, label: str = "schedule", store_key: str | None = None, *,
                 nodes=None, batched=(), batch_size: int | None = None):
        self.args = list(args)
        self.outputs = list(outputs)
        self.label = label
        if nodes is None:
            nodes, _ = ancestors(self.outputs)
        slot: dict[int, int] = {}
        template: list = []

        def give(v, value=None):
            if id(v) not in slot:
                slot[id(v)] = len(template)
                template.append(value)
            return slot[id(v)]

        for v in self.args:
            give(v)
        groups: list = []  # ("block", op) or ("glue", [ops])
        for op in nodes:
            if isinstance(op, JaxCompressedOperation) and op.region.compile_separately:
                groups.append(("block", op))
            elif isinstance(op, VmappedJacobianOperation):
                groups.append(("jacobian", op))
            elif groups and groups[-1][0] == "glue":
                groups[-1][1].append(op)
            else:
                groups.append(("glue", [op]))
        for op in nodes:
            for v in op.outputs:
                give(v)
        for kind, item in groups:  # a literal read directly by a block
            if kind == "block":
                for v in item.inputs:
                    if isinstance(v, Constant):
                        give(v, np.asarray(v.value, dtype=np.float64))
        for v in self.outputs:
            if id(v) not in slot:  # a Constant output
                give(v, np.asarray(v.value, dtype=np.float64))
        # Liveness, backwards: a glue step returns only what later steps or outputs read.
        needed = {id(v) for v in self.outputs}
        plan: list = []
        devices = {op.region.device for kind, op in groups if kind == "block"} - {None}
        glue_device = jax.devices("cpu")[0] if devices else None
        for k, (kind, item) in reversed(list(enumerate(groups))):
            if kind in ("block", "jacobian"):
                if any(id(v) in needed for v in item.outputs):
                    if kind == "block":
                        step = _BlockStep(item, slot)
                    else:
                        key = None if store_key is None else f"{store_key}|{label}/jacobian{k}"
                        step = _JacobianStep(item, slot, f"{label}/jacobian{k}", key)
                    plan.append(step)
                    needed.update(id(v) for v in item.inputs)
                continue
            produced = {id(v) for op in item for v in op.outputs}
            outs = [v for op in item for v in op.outputs if id(v) in needed]
            if not outs:
                continue
            ins: dict[int, object] = {}
            for op in item:
                for v in op.inputs:
                    if id(v) not in produced and not isinstance(v, Constant):
                        ins[id(v)] = v
            in_vars = sorted(ins.values(), key=lambda v: v.id)
            for v in in_vars:
                give(v)
            key = None if store_key is None else f"{store_key}|{label}/glue{k}"
            plan.append(_GlueStep(item, in_vars, outs, slot, f"{label}/glue{k}", glue_device, key))
            needed.update(ins)
        self.steps = list(reversed(plan))
        # Batching (an inner schedule of a loop=False Jacobian): a step with a batched
        # input runs vmapped over the leading axis, and all its outputs are batched.
        is_batched = {id(self.args[i]) for i in batched}
        for step in self.steps:
            axes = [0 if id(v) in is_batched else None for v in step.in_vars]
            if any(a == 0 for a in axes):
                step.batch(axes, batch_size)
                is_batched.update(id(v) for v in (step.op.outputs if step.kind == "block" else step.out_vars))
        self.out_batched = [id(v) in is_batched for v in self.outputs]
        self._template = template
        self._n_args = len(self.args)
        self._out_slots = [slot[id(v)] for v in self.outputs]
        self._plan = [(s, s.ins, s.outs) for s in self.steps]

    def __call__(self, *arrays):
        if len(arrays) != self._n_args:
            raise TypeError(f"{self.label}: expected {self._n_args} arrays, got {len(arrays)}")
        vals = list(self._template)
        vals[: self._n_args] = arrays
        for step, ins, outs in self._plan:
            res = step(*[vals[i] for i in ins])
            for i, r in zip(outs, res):
                vals[i] = r
        return tuple(vals[i] for i in self._out_slots)

    def _steps(self, kind: str) -> list:
        """The steps of ``kind`` ("block" or "glue"), those of inner Jacobian schedules included."""
        out = []
        for s in self.steps:
            if s.kind == kind:
                out.append(s)
            elif s.kind == "jacobian":
                out += s.inner._steps(kind)
        return out

    @property
    def blocks(self) -> list:
        """The block steps (one per separately compiled operation, inner ones included)."""
        return self._steps("block")

    def glue_compile_records(self) -> list:
        return [r for s in self._steps("glue") for r in s.compile_records]

    def glue_traces(self) -> int:
        return sum(s.traces for s in self._steps("glue"))


class BlockSimulator(_Base):
    """The graph from ``inputs`` to ``outputs`` as a schedule of directly called blocks
    and jitted glue (module docstring). Same use as :class:`~aragog.csdl.JaxSimulator`:
    ``sim[x] = value``, ``run()``, ``sim[y]``, ``compute_totals()``; plus
    :attr:`arguments` and :meth:`call` for callers that keep their own device arrays.

    ``trace_count`` counts traces of glue programs (blocks are counted by
    :func:`~aragog.csdl.compiled_function_count`)."""

    def __init__(self, recorder, inputs, outputs, loop: bool = True):
        super().__init__(recorder, loop=loop)
        self.inputs = _check_leaves(inputs, "inputs")
        self.outputs = _check_leaves(outputs, "outputs")
        for v in self.inputs:
            if v.op is not None or isinstance(v, Constant):
                raise ValueError(f"BlockSimulator: input {v!r} is not a non-constant leaf variable")
        self.schedule = self._schedule(self.outputs, "run")
        self._totals_schedule = None
        self.run_seconds = 0.0

    def _schedule(self, outs, label) -> Schedule:
        _, leaves = ancestors(outs)
        ids = {id(v) for v in self.inputs}
        args = list(self.inputs) + [v for v in leaves if id(v) not in ids]
        return Schedule(args, outs, label=label)

    @property
    def arguments(self) -> list:
        """The Variables whose values :meth:`call` takes, in order: ``inputs`` then every
        other non-constant leaf the outputs read."""
        return self.schedule.args

    @property
    def parameters(self) -> list:
        ids = {id(v) for v in self.inputs}
        return [v for v in self.schedule.args if id(v) not in ids]

    @property
    def trace_count(self) -> int:
        s = self.schedule.glue_traces()
        return s + (self._totals_schedule.glue_traces() if self._totals_schedule else 0)

    @in_float64
    def call(self, *arrays) -> tuple:
        """Outputs (float64 device arrays) for one array per :attr:`arguments` entry (no
        Variable is changed). Arrays are float64 (NumPy, or JAX arrays made in x64 mode),
        or anything that converts to float64 exactly (ints, Python numbers); a float32 one
        is a ``TypeError``: its value has been rounded already, and rounding every
        argument would silently give float32 results."""
        return self.schedule(*(self._float64_array(a, v) for a, v in zip(arrays, self.schedule.args)),
                             *arrays[len(self.schedule.args):])

    @staticmethod
    def _float64_array(array, var):
        dtype = getattr(array, "dtype", None)
        if dtype is None or dtype == np.float64:
            return array
        if np.issubdtype(dtype, np.inexact):
            raise TypeError(f"BlockSimulator.call: the array for {var.name or var!r} is {dtype}, not float64 "
                            "(a JAX array made with x64 off is float32: make it inside jax.enable_x64(True), "
                            "or pass the NumPy array)")
        return jnp.asarray(array, dtype=jnp.float64)

    @staticmethod
    def _arg_arrays(args):
        return [jnp.asarray(leaf_value(v), dtype=jnp.float64) for v in args]

    @in_float64
    def run(self) -> None:
        t0 = time.perf_counter()
        results = self.schedule(*self._arg_arrays(self.schedule.args))
        self._values = {}
        for var, val in zip(self.outputs, results):
            val = np.asarray(val)
            var.value = val
            self._values[var] = val
        self.run_seconds += time.perf_counter() - t0

    @in_float64
    def totals_schedule(self) -> Schedule:
        """The schedule of the recorded totals (outputs: ``totals_keys`` order)."""
        totals = self._record_totals(self.outputs, self.inputs)
        if self._totals_schedule is None:
            self.totals_keys = list(totals)
            self._totals_schedule = self._schedule([totals[k] for k in self.totals_keys], "totals")
        return self._totals_schedule

    @in_float64
    def compute_totals(self) -> dict:
        """``{(output, input): d output / d input}`` as arrays ``(out.size, in.size)``."""
        sched = self.totals_schedule()
        results = sched(*self._arg_arrays(sched.args))
        return {k: np.asarray(r) for k, r in zip(self.totals_keys, results)}
