"""``solver.compile_mode = "blocks"``: the right-hand side as separately compiled blocks.

The right-hand side is *recorded* with :mod:`aragog.csdl` from the same pure JAX
functions the fused mode compiles (:func:`aragog.physics.structure_stage`,
:func:`~aragog.physics.thermal_stage`, :func:`~aragog.physics.state_rate`,
:func:`~aragog.physics.diagnostics_of`), each as one JAX-function operation, and
``csdl.compress`` makes three separately compiled blocks:

- ``structure``: y -> basic-node entropy and gradient, EOS and phase state at the cells
  and basic nodes (the EOS tables are read here);
- ``thermal``: (t, structure) -> dy/dt (fluxes, heating, boundary conditions, dS/dt);
- ``diagnostics``: (t, structure) -> every output field (used at output times only).

The Jacobian is the graph's recorded reverse-mode derivative through the blocks, seeded
by colour (Curtis-Powell-Reid compression of the rows): d(W dy)/dy with W the
``(c, n)`` 0/1 matrix of row colours ``i mod c``, ``c = ml + mu + 1``, so ``c`` reverse
passes give every band entry (rows of one colour never share a column inside the band).
The passes are recorded once (``loop=False``) and run as one batch: each block's VJP is
one batched call, compiled once.

Everything traced is an argument: ``t``, ``y``, the small inputs packed into one float64
buffer and each EOS table as it is (the :class:`~aragog.programs._jitpair.JitPair`
packing), so a :class:`BlockPrograms` depends only on the static key and is shared by all
solvers of a process with that key (:mod:`aragog.programs._shared`). Evaluation is a
:class:`aragog.csdl.BlockSimulator` schedule: blocks are called directly, values stay on
the device.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from aragog import csdl, physics
from aragog._jax import in_float64, jax
from aragog.csdl._schedule import Schedule
from aragog.programs._band import band_indices
from aragog.programs._counters import ProgramStats
from aragog.programs._packing import PackLayout

logger = logging.getLogger("aragog.solver")

__all__ = ["BlockPrograms", "BoundBlocks", "BLOCK_NAMES"]

#: The separately compiled blocks and their recorded derivatives, in jit_stats.
BLOCK_NAMES = ("structure", "thermal", "diagnostics", "vjp(structure)", "vjp(thermal)")
_PROGRAMS = ("rhs", "jac", "diagnostics", "melt_fraction")


class BlockPrograms:
    """The recorded graph of one static key, its blocks and its four schedules (rhs, jac,
    diagnostics, melt_fraction). Shape checking and calls go through :meth:`bind`.

    Args:
        options: :class:`aragog.physics.PhysicsOptions` (static).
        inputs_example: a :class:`aragog.physics.PhysicsInputs` like every later one (only
            structure, shapes and dtypes are used).
        n_state, ml, mu: state size and Jacobian bandwidths.
        store_key: a string that determines the whole graph (static key and code
            identity): blocks and glue programs are then looked up in the active
            :class:`~aragog._executable_store.ExecutableStore` before tracing.
    """

    jac_layout = "band"

    @in_float64
    def __init__(self, options, inputs_example, n_state: int, ml: int, mu: int, pack_max: int = 4096,
                 store_key: str | None = None):
        t0 = time.perf_counter()
        self.options = options
        self.n, self.ml, self.mu = int(n_state), int(ml), int(mu)
        leaves, self._treedef = jax.tree_util.tree_flatten(inputs_example)
        specs = [(tuple(np.shape(x)), np.dtype(x.dtype)) for x in leaves]
        bad = [d for _, d in specs if d != np.float64]
        if bad:
            raise TypeError(f"compile_mode 'blocks' needs float64 inputs, got {bad[0]}")
        self._specs = specs
        self._layout = PackLayout(specs, pack_max)
        self.store_key = store_key
        self._record()
        if store_key is not None:
            for name, region in self.blocks().items():
                region.store_key = f"{store_key}|block:{name}"
        #: seconds spent recording the graph (JAX traces the functions for their output
        #: shapes): reported as the "record" entry of compile_stats
        self.record_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------------ the graph
    def _unpack(self, arrays):
        return jax.tree_util.tree_unflatten(self._treedef, self._layout.unpack(list(arrays)))

    def _record(self) -> None:
        options = self.options
        unpack = self._unpack
        struct_tree = []  # the StructureState treedef, set while recording

        def structure(y, *arrays):
            s = physics.structure_stage(y, unpack(arrays), options)
            leaves, tree = jax.tree_util.tree_flatten(s)
            struct_tree[:] = [tree, len(leaves)]
            return tuple(leaves)

        def evaluation(t, xs):
            k = struct_tree[1]
            inputs = unpack(xs[k:])
            s = jax.tree_util.tree_unflatten(struct_tree[0], list(xs[:k]))
            return physics.thermal_stage(t, s, inputs, options), inputs

        def thermal(t, *xs):
            ev, inputs = evaluation(t, xs)
            return physics.state_rate(ev, inputs, options)

        diag_tree = []

        def diagnostics(t, *xs):
            ev, inputs = evaluation(t, xs)
            leaves, tree = jax.tree_util.tree_flatten(physics.diagnostics_of(ev, inputs, options))
            diag_tree[:] = [tree]
            return tuple(leaves)

        def melt_fraction(phi, *arrays):  # phi at the cells, then at the basic nodes
            mesh = unpack(arrays).mesh
            return physics.mass_weighted_melt_fraction(phi[: mesh.number_of_cells], mesh)

        c = self.ml + self.mu + 1
        colours = np.zeros((c, self.n))
        colours[np.arange(self.n) % c, np.arange(self.n)] = 1.0
        self.recorder = rec = csdl.Recorder(name="aragog_rhs")
        with rec:
            t = csdl.Variable(shape=(), name="t")
            y = csdl.Variable(shape=(self.n,), name="y")
            args = [csdl.Variable(shape=s, name=f"inputs{k}") for k, s in enumerate(self._arg_shapes())]
            st = csdl.jax_function(structure, y, *args, name="structure")
            st = st if isinstance(st, tuple) else (st,)
            self.ops = {"structure": csdl.compress([y], list(st), name="structure")}
            dy = csdl.jax_function(thermal, t, *st, *args, name="thermal")
            self.ops["thermal"] = csdl.compress([t, *st], [dy], name="thermal")
            diag = csdl.jax_function(diagnostics, t, *st, *args, name="diagnostics")
            diag = diag if isinstance(diag, tuple) else (diag,)
            self.ops["diagnostics"] = csdl.compress([t, *st], list(diag), name="diagnostics")
            # position of the melt fraction (st.phi: cells, then basic nodes) among the
            # structure outputs: unflatten the recorded structure with leaves = their index
            phi_index = jax.tree_util.tree_unflatten(struct_tree[0], list(range(struct_tree[1]))).st.phi
            phi_global = csdl.jax_function(melt_fraction, st[phi_index], *args, name="melt_fraction")
            # (c, n): one reverse pass on the batch of c colour seeds, each block VJP one
            # batched call (BlockSimulator schedules the loop=False derivative)
            jac_c = csdl.derivative(csdl.Constant(colours) @ dy, y, loop=False)
        self._diag_tree = diag_tree[0]
        self.variables = [t, y, *args]
        outputs = {"rhs": [dy], "jac": [jac_c], "diagnostics": list(diag), "melt_fraction": [phi_global]}
        self.schedules = {name: Schedule(self.variables, outs, label=name, store_key=self.store_key)
                          for name, outs in outputs.items()}
        rows, cols, valid = band_indices(self.n, self.ml, self.mu)
        self._band_colour = rows % c
        self._band_cols = cols
        self._band_valid = valid.astype(np.float64)

    def _arg_shapes(self) -> list:
        shapes = [(total,) for _, _, total in self._layout.groups]
        return shapes + [self._specs[i][0] for i in self._layout.big]

    # ------------------------------------------------------------------ use
    @in_float64
    def pack(self, inputs) -> tuple:
        """Check ``inputs`` against the recorded signature; the packed device arrays."""
        leaves, treedef = jax.tree_util.tree_flatten(inputs)
        if treedef != self._treedef:
            raise ValueError("compile_mode 'blocks': inputs pytree structure differs from the recorded one")
        for leaf, (shape, _) in zip(leaves, self._specs):
            if tuple(np.shape(leaf)) != shape:
                raise ValueError(f"compile_mode 'blocks': an input has shape {np.shape(leaf)}, recorded {shape}")
        return tuple(jax.device_put(x) for x in self._layout.pack(leaves))

    @in_float64
    def bind(self, inputs, call_stats=None) -> "BoundBlocks":
        return BoundBlocks(self, inputs, call_stats)

    def start(self, background: tuple[str, ...] = (), newton: str = "jac") -> None:
        """Nothing to start: each block and glue program compiles (or loads from the store)
        at its first call, and the blocks are shared by every schedule."""

    def wait_background(self) -> None:
        """No background compiles (see :meth:`start`)."""

    def compiled_program(self, name: str):
        """``None``: the blocks' programs are csdl regions (:meth:`blocks`), not one
        executable per program."""
        return None

    def diagnostics_from(self, values) -> object:
        """The ``Diagnostics`` (NumPy) from the values of the "diagnostics" schedule."""
        return jax.tree_util.tree_unflatten(self._diag_tree, [np.array(v) for v in values])

    def band_from_colours(self, jac_c: np.ndarray) -> np.ndarray:
        """Band storage (ml + mu + 1, n) from the colour-compressed rows (c, n)."""
        return jac_c[self._band_colour, self._band_cols] * self._band_valid

    @property
    def programs(self) -> tuple[str, ...]:
        return _PROGRAMS

    def blocks(self) -> dict:
        """``{name: Region}`` of the compiled blocks and of their recorded VJPs."""
        out = {}
        for name in ("structure", "thermal", "diagnostics"):
            region = self.ops[name].region
            out[name] = region
            for vjp in region.vjp_regions.values():
                out[f"vjp({name})"] = vjp
        return out

    def compile_stats(self) -> dict:
        """``{program or "block:<name>": {traces, compiles, loads, trace_seconds,
        compile_seconds, source}}``: for the four schedules, their glue programs; for the
        blocks, the blocks' own compilations (``loads``: taken from the persistent cache);
        "record": the recording of the graph (its tracing for output shapes)."""
        out = {"record": {"traces": 1, "compiles": 0, "loads": 0, "trace_seconds": self.record_seconds,
                          "compile_seconds": 0.0, "source": "compiled"}}
        for name, sched in self.schedules.items():
            out[name] = _summary(sched.glue_compile_records(), sched.glue_traces())
        for name, region in self.blocks().items():
            out[f"block:{name}"] = _summary(region.compile_records, region.compile_count)
        return out


def _summary(records, traces) -> dict:
    compiled = [r for r in records if r.source == "compiled"]
    loaded = [r for r in records if r.source == "disk"]
    source = records[-1].source if records else "none"
    return {
        "traces": int(traces), "compiles": len(compiled), "loads": len(loaded),
        "trace_seconds": sum(r.lower_seconds for r in records),
        "compile_seconds": sum(r.compile_seconds for r in records),
        "source": source,
    }


class BoundBlocks:
    """:class:`BlockPrograms` with one ``inputs`` bound (packed and on the device once):
    the integrator's callback object, like :class:`~aragog.programs._jitpair.BoundPair`."""

    @in_float64
    def __init__(self, programs: BlockPrograms, inputs, call_stats=None):
        self.programs = programs
        self.n, self.ml, self.mu = programs.n, programs.ml, programs.mu
        self.jac_layout = "band"
        self._args = programs.pack(inputs)
        self.call_stats = call_stats if call_stats is not None else {}
        for k in _PROGRAMS:
            self.call_stats.setdefault(k, ProgramStats())
        rhs = programs.schedules["rhs"]
        jac = programs.schedules["jac"]
        args = self._args
        band = programs.band_from_colours
        clock = time.perf_counter
        copyto = np.copyto
        s_rhs, s_jac = self.call_stats["rhs"], self.call_stats["jac"]

        def rhs_into(t, y, out):
            t0 = clock()
            copyto(out, rhs(float(t), y, *args)[0])
            s_rhs.calls += 1
            s_rhs.call_seconds += clock() - t0

        def jac_into(t, y, out):
            t0 = clock()
            copyto(out, band(np.asarray(jac(float(t), y, *args)[0])))
            s_jac.calls += 1
            s_jac.call_seconds += clock() - t0

        self.rhs_into, self.jac_into = rhs_into, jac_into

    @in_float64
    def call(self, name: str, t: float, y) -> object:
        """Program ``name`` ("rhs", "jac", "diagnostics", "melt_fraction") at ``(t, y)``;
        NumPy values (``Diagnostics`` for "diagnostics")."""
        t0 = time.perf_counter()
        y = np.asarray(y, dtype=np.float64)
        out = self.programs.schedules[name](float(t), y, *self._args)
        if name == "diagnostics":
            result = self.programs.diagnostics_from(out)
        elif name == "jac":
            result = self.programs.band_from_colours(np.asarray(out[0]))
        else:
            result = np.array(out[0])
        stats = self.call_stats[name]
        stats.calls += 1
        stats.call_seconds += time.perf_counter() - t0
        return result

    @in_float64
    def scalar_fn(self, name: str):
        sched = self.programs.schedules[name]
        args, stats, clock = self._args, self.call_stats[name], time.perf_counter

        def g(t, y):
            t0 = clock()
            value = float(sched(float(t), y, *args)[0])
            stats.calls += 1
            stats.call_seconds += clock() - t0
            return value

        return g

    @in_float64
    def rhs(self, t, y):
        out = np.empty(self.n)
        self.rhs_into(t, y, out)
        return out

    @in_float64
    def jac(self, t, y):
        out = np.empty((self.ml + self.mu + 1, self.n))
        self.jac_into(t, y, out)
        return out
