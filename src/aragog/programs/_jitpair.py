"""Compile the right-hand side and its Jacobian once, call them many times, count everything.

A :class:`JitPair` holds ahead-of-time compiled XLA programs for ``rhs(t, y, args)``, its
Jacobian ``d rhs / d y`` (band storage by default, see :mod:`aragog.programs._jacobian`) and any
extra programs of the same signature (diagnostics, event functions). ``args`` is a pytree of
arrays that is *traced*: every call may pass different values (a new mesh, new boundary
values, new EOS table contents) without a retrace, as long as the tree structure, the leaf
shapes and the dtypes are those of the example the pair was built from. Static options are
closed over by the caller (``functools.partial`` with hashable options); when they change the
caller builds a new pair.

Two call paths:

- ``pair.rhs(t, y, args)`` / ``pair.jac`` / ``pair.call(name, ...)``: convenient, checks and
  flattens ``args`` on every call.
- ``bound = pair.bind(args)``: checks and flattens ``args`` once, packs the small leaves into
  one buffer per dtype (every call argument costs dispatch time) and puts everything on the
  device; ``bound.rhs_into(t, y, out)`` and ``bound.jac_into(t, y, out)`` then call the
  compiled executables with the fewest Python operations and write into a preallocated
  array. This is what integrator callbacks use (``bound`` satisfies
  :class:`aragog.solver.backends.OdeProblemLike`).

Tracing, compiling and the convenient calls run in JAX's x64 mode (:func:`aragog._jax.float64`,
per thread; the caller's setting is left alone). The bound callbacks ``rhs_into``/``jac_into``
do not enter it on every call: the solver calls them inside its own :func:`~aragog._jax.float64`.

``pair.stats`` reports per program: traces (counted by a Python counter inside the traced
body), compiles, seconds spent tracing + lowering and compiling, calls and seconds in calls.

Compiling off the critical path: :meth:`JitPair.compile_in_background` compiles programs in
a thread (XLA's compile releases the GIL; tracing and lowering do not), and the first
call of such a program waits for it. Each program compiles at most once whichever
thread gets there first (a lock per program), so the counters are those of one compile.
``compiler_options`` gives each program its own XLA options (e.g. a lower LLVM
optimisation level for a rarely called program); they are part of its persistent-store key.

Batched programs: an extra program named in ``batched`` is compiled for a chunk of C states
at once (``jax.vmap`` over ``t`` (C,) and ``y`` (C, n), ``args`` shared), and
:meth:`BoundPair.call_many` evaluates it at any number K of states in ceil(K/C) calls: one
crossing into XLA per chunk instead of one per state (the energy budget's powers at every
quadrature node of a solve).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aragog._jax import in_float64, jax, jnp
from aragog._compiling import compile_lowered, lower, store_lookup, store_save
from aragog._executable_store import store_has
from aragog.programs._corrector import CorrectorLayout, lapack_ready, make_corrector
from aragog.programs._counters import ProgramStats
from aragog.programs._jacobian import banded_jacobian, dense_jacobian
from aragog.programs._packing import PackLayout

__all__ = ["JitPair", "BoundPair", "ProgramStats"]  # ProgramStats re-exported from aragog.programs._counters

logger = logging.getLogger("aragog.programs._jitpair")

_RESERVED = ("rhs", "jac")


class PairProgram:
    """One program of a :class:`JitPair` (:meth:`JitPair.program`): its function of ``(t, y,
    *flat_args)``, once compiled its executable (``compiled``), its counters (``stats``),
    its XLA options and, for a batched program, its states per call (``chunk``)."""

    __slots__ = ("name", "flat_fn", "compiled", "stats", "out_tree", "lock", "options", "lowered", "more", "chunk")

    def __init__(self, name: str, flat_fn: Callable, stats: ProgramStats, options=None, more=(), chunk=None):
        self.name = name
        self.flat_fn = flat_fn
        self.more = tuple(more)  # abstract inputs after the args' (the corrector's step inputs)
        self.chunk = chunk  # states per call of a batched program (None: one state)
        self.compiled = None
        self.stats = stats
        self.out_tree = None
        self.lock = threading.Lock()  # held while compiling: one compile, whichever thread
        self.options = dict(options or {})
        self.lowered = None  # (jax.stages.Lowered, seconds) between prepare() and the compile


class JitPair:
    """Ahead-of-time compiled ``rhs``, Jacobian and extra programs of ``(t, y, args)``.

    Args:
        rhs_fn: pure JAX function ``rhs_fn(t, y, args) -> (n_state,)``; ``t`` a float64
            scalar, ``y`` float64 ``(n_state,)``, ``args`` a pytree of arrays. Static options
            must already be closed over.
        n_state: size of the state vector.
        args_example: a pytree like the ``args`` of every later call. Only its structure,
            leaf shapes and dtypes are used (values are not baked in).
        ml, mu: lower and upper bandwidths of ``d rhs / d y``.
        jacobian: ``"banded"`` (default; band storage ``(ml + mu + 1, n_state)`` by colored
            forward-mode products) or ``"dense"`` (``(n_state, n_state)`` by ``jax.jacfwd``).
        extra: optional mapping ``name -> fn(t, y, args)`` of further programs compiled with
            the same signature (e.g. ``"diagnostics"`` returning a pytree, ``"event"``
            returning a scalar). Names ``"rhs"`` and ``"jac"`` are reserved.
        lazy: compile each program at its first call instead of in the constructor.
        pack_max: leaves of ``args`` with at most this many elements are packed into one
            buffer per dtype for the call (fewer arguments, less dispatch time); larger
            leaves are passed separately. 0 disables packing.
        name: prefix of the compiled programs' names (appears in XLA dumps and logs).
        store_key: a string that determines ``rhs_fn`` and the extras (the caller's static
            configuration and code identity). With it, each program is looked up in the
            active :class:`~aragog._executable_store.ExecutableStore` (persistent cache
            directory) *before tracing*, and saved there after compiling.
        compiler_options: optional mapping ``program name -> {XLA option: value}`` passed
            to ``jax.stages.Lowered.compile`` for that program (others: XLA's defaults).
        corrector: ``(max_iters, check)`` adds the program ``"corrector"``: CVODE's Newton
            solve of one step (:func:`aragog.programs._corrector.make_corrector`), called as
            ``corrector(t, y_pred, *inputs, vectors, scalars, held)`` (banded Jacobian only).
        batched: optional mapping ``extra name -> chunk size C``: that extra program is
            compiled for C states per call, ``t`` (C,) and ``y`` (C, n_state), its outputs
            with a leading axis C (:meth:`BoundPair.call_many`).

    Raises:
        ValueError: ``rhs_fn`` does not return shape ``(n_state,)``, a bad ``jacobian`` mode,
            a reserved or duplicate extra name, a batched name that is not an extra or a
            chunk size below 1.
    """

    @in_float64
    def __init__(
        self,
        rhs_fn: Callable,
        n_state: int,
        args_example: Any,
        ml: int,
        mu: int,
        jacobian: str = "banded",
        extra: Mapping[str, Callable] | None = None,
        *,
        lazy: bool = False,
        pack_max: int = 4096,
        name: str = "aragog",
        store_key: str | None = None,
        compiler_options: Mapping[str, Mapping[str, Any]] | None = None,
        corrector: tuple[int, bool] | None = None,
        batched: Mapping[str, int] | None = None,
    ):
        if jacobian not in ("banded", "dense"):
            raise ValueError(f"JitPair: jacobian must be 'banded' or 'dense', got {jacobian!r}")
        self.n = int(n_state)
        self.ml = int(ml)
        self.mu = int(mu)
        if self.n < 1:
            raise ValueError(f"JitPair: n_state must be >= 1, got {n_state}")
        if self.ml < 0 or self.mu < 0:
            raise ValueError(f"JitPair: band widths must be >= 0, got ml={ml}, mu={mu}")
        self.jacobian = jacobian
        #: layout of ``jac`` output: ``"band"`` (ml + mu + 1, n) or ``"dense"`` (n, n)
        self.jac_layout = "band" if jacobian == "banded" else "dense"
        self.rhs_fn = rhs_fn
        self.name = name
        self.store_key = store_key

        # Signature of args: tree structure, leaf names, shapes, dtypes.
        path_leaves, self._treedef = jax.tree_util.tree_flatten_with_path(args_example)
        self._leaf_names = tuple(jax.tree_util.keystr(path) or "<root>" for path, _ in path_leaves)
        specs = []
        for _, leaf in path_leaves:
            arr = jnp.asarray(leaf) if not isinstance(leaf, np.ndarray) else leaf
            specs.append((tuple(np.shape(arr)), np.dtype(arr.dtype)))
        self._leaf_specs = tuple(specs)
        self._layout = PackLayout(self._leaf_specs, int(pack_max))

        treedef = self._treedef
        ml_, mu_ = self.ml, self.mu

        def rhs_of(t, y, args):
            return rhs_fn(t, y, args)

        if jacobian == "banded":
            jac_y = banded_jacobian(lambda y, t, args: rhs_fn(t, y, args), ml_, mu_)
        else:
            jac_y = dense_jacobian(lambda y, t, args: rhs_fn(t, y, args))

        def jac_of(t, y, args):
            return jac_y(y, t, args)

        functions: dict[str, Callable] = {"rhs": rhs_of, "jac": jac_of}
        more: dict[str, tuple] = {}
        #: the corrector program's input shapes (``None``: no corrector program)
        self.corrector_layout = None
        self._corrector_options = None if corrector is None else (int(corrector[0]), bool(corrector[1]))
        if corrector is not None:
            if jacobian != "banded":
                raise ValueError("JitPair: the corrector program needs the banded Jacobian")
            self.corrector_layout = CorrectorLayout(self.n, ml_, mu_)
            max_iters, check = corrector
            functions["corrector"] = make_corrector(rhs_of, self.corrector_layout, int(max_iters), bool(check))
            more["corrector"] = self.corrector_layout.abstract_inputs()
        for key, fn in (extra or {}).items():
            if key in _RESERVED:
                raise ValueError(f"JitPair: extra program name {key!r} is reserved")
            if not callable(fn):
                raise ValueError(f"JitPair: extra program {key!r} is not callable")
            functions[str(key)] = fn

        options = dict(compiler_options or {})
        unknown = set(options) - set(functions)
        if unknown:
            raise ValueError(f"JitPair: compiler_options for unknown programs {sorted(unknown)}")
        chunks = {str(k): int(c) for k, c in (batched or {}).items()}
        for key, size in chunks.items():
            if key not in (extra or {}):
                raise ValueError(f"JitPair: batched program {key!r} is not an extra program")
            if size < 1:
                raise ValueError(f"JitPair: batched program {key!r} needs a chunk size >= 1, got {size}")
        self._programs: dict[str, PairProgram] = {}
        for key, fn in functions.items():
            stats = ProgramStats()
            if key in chunks:  # every state of the chunk against the same args
                fn = jax.vmap(fn, in_axes=(0, 0, None))
            self._programs[key] = PairProgram(key, self._make_flat(key, fn, treedef, stats, len(more.get(key, ()))),
                                           stats, options.get(key), more.get(key, ()), chunks.get(key))
        self._background: list[threading.Thread] = []

        if not lazy:
            for key in self._programs:
                self._compile(key)

    # ------------------------------------------------------------------ compilation
    def _make_flat(self, key: str, fn: Callable, treedef, stats: ProgramStats, n_more: int = 0) -> Callable:
        layout = self._layout
        n_args = layout.n_inputs

        def flat(t, y, *inputs):
            stats.traces += 1  # runs only while JAX traces this function
            args = jax.tree_util.tree_unflatten(treedef, layout.unpack(inputs[:n_args]))
            return fn(t, y, args, *inputs[n_args:n_args + n_more])

        flat.__name__ = f"{self.name}_{key}"
        flat.__qualname__ = flat.__name__
        return flat

    def _abstract_inputs(self, more=(), chunk=None) -> list:
        sds = jax.ShapeDtypeStruct
        lead = () if chunk is None else (chunk,)
        inputs = [sds(lead, jnp.float64), sds(lead + (self.n,), jnp.float64)]
        return inputs + self._layout.abstract_inputs() + list(more)

    @in_float64
    def _compile(self, key: str) -> PairProgram:
        prog = self._programs[key]
        if prog.compiled is not None:
            return prog
        with prog.lock:  # another thread may be compiling it: wait, then use its executable
            if prog.compiled is None:
                self._compile_locked(prog)
        return prog

    def _store_key(self, key: str) -> str | None:
        if self.store_key is None:
            return None
        chunk = self._programs[key].chunk
        if key == "corrector":
            program = (key, self._corrector_options)
        elif chunk is not None:
            program = (key, "batched", chunk)
        else:
            program = key
        return repr((self.store_key, self.name, program, self.n, self.ml, self.mu, self.jacobian,
                     self._leaf_specs, self._layout.n_inputs, str(self._treedef)))

    def _prepare_locked(self, prog: PairProgram) -> None:
        """The store's executable (then compiled), or trace and lower (``prog.lowered``)."""
        if prog.compiled is not None or prog.lowered is not None:
            return
        hit = store_lookup(self._store_key(prog.name), prog.name, prog.options)
        if hit is not None:
            self._finish(prog, *hit)
            return
        prog.lowered = lower(prog.flat_fn, self._abstract_inputs(prog.more, prog.chunk))

    def _compile_locked(self, prog: PairProgram) -> None:
        self._prepare_locked(prog)
        if prog.compiled is not None:
            return
        lowered, seconds = prog.lowered
        compiled, record = compile_lowered(lowered, prog.name, seconds, prog.options)
        prog.lowered = None
        store_save(self._store_key(prog.name), compiled, record, prog.options)
        self._finish(prog, compiled, record)

    def _finish(self, prog: PairProgram, compiled, record) -> None:
        key = prog.name
        prog.stats.trace_seconds += record.lower_seconds
        prog.stats.compile_seconds += record.compile_seconds
        if record.source == "disk":
            prog.stats.loads += 1
        else:
            prog.stats.compiles += 1
        prog.stats.source = record.source
        if record.source == "disk" and key == "corrector":
            lapack_ready()  # the corrector's LU, in an executable nothing here lowered
        prog.out_tree = compiled.out_tree
        self._check_output(key, compiled)
        prog.compiled = compiled

    def _check_output(self, key: str, compiled) -> None:
        if key not in _RESERVED:
            return
        out = compiled.out_info
        expected = (self.n,) if key == "rhs" else (
            (self.ml + self.mu + 1, self.n) if self.jac_layout == "band" else (self.n, self.n)
        )
        shape = getattr(out, "shape", None)
        if shape != expected:
            raise ValueError(
                f"JitPair: {key} returns {out}, expected an array of shape {expected} "
                f"(n_state={self.n}, ml={self.ml}, mu={self.mu})"
            )

    def compile(self, *names: str) -> None:
        """Compile the named programs now (all when none is named); already compiled ones are kept."""
        for key in names or tuple(self._programs):
            self.program(key, compile=True)

    @in_float64
    def stored(self, name: str, store=None) -> bool:
        """Whether program ``name`` is compiled already or has an entry in the active
        persistent store, or in ``store`` (an :class:`aragog._executable_store.ExecutableStore`)
        when given (then no tracing is needed to get it)."""
        prog = self.program(name, compile=False)
        return prog.compiled is not None or store_has(self._store_key(name), prog.options, store)

    @in_float64
    def prepare(self, *names: str) -> None:
        """Look the named programs up in the store, or trace and lower them, now in this
        thread (Python work, it holds the GIL); the XLA compile is left to whoever needs
        the program first, e.g. :meth:`compile_in_background`."""
        for key in names:
            prog = self.program(key, compile=False)
            with prog.lock:
                self._prepare_locked(prog)

    def compile_in_background(self, *names: str) -> threading.Thread | None:
        """Compile the named programs, in this order, in a thread; return it (``None`` when
        all are compiled already). A call of one of them meanwhile waits for its compile.
        The thread is not a daemon: the interpreter waits for it at exit (a compile cut
        off by the interpreter's shutdown could crash it). An exception in the thread is
        not raised there: the program stays uncompiled and its first call compiles it again
        (and raises)."""
        todo = [self.program(key, compile=False).name for key in names]
        todo = [key for key in todo if self._programs[key].compiled is None]
        if not todo:
            return None

        def run():  # a thread of its own: _compile enters JAX's x64 mode, which is per thread
            for key in todo:
                try:
                    self._compile(key)
                except Exception as exc:  # noqa: BLE001 - the caller's own compile raises it
                    logger.debug("background compile of %s failed (%s: %s)", key, type(exc).__name__, exc)

        thread = threading.Thread(target=run, name=f"{self.name}-compile-{'+'.join(todo)}", daemon=False)
        self._background = [t for t in self._background if t.is_alive()] + [thread]
        thread.start()
        return thread

    def start(self, background: tuple[str, ...] = ("diagnostics",), newton: str = "jac") -> None:
        """Compile a new pair's programs, overlapping what can overlap on two cores.

        XLA's compile releases the GIL (tracing and lowering do not). So the program CVODE's
        Newton iteration calls besides the RHS (``newton``: ``"jac"``, the Jacobian, for
        SUNDIALS' Newton solver; ``"corrector"``, the whole Newton solve of a step,
        :mod:`aragog.programs._corrector`, with the Jacobian it asks for), the longest
        compile, is traced here and compiled in a thread (one each) while this one traces
        and compiles the RHS; then, once it is ready, the
        diagnostics are traced and compiled in a thread that overlaps the integration (only
        get_state, the output and the temperature step cap call them, and they wait for it).
        Started during the long compile instead, the diagnostics' compile slowed it down by
        more than it saved (one XLA compile already uses more than one core at times). A
        program in the persistent store is loaded in the thread (loading releases the GIL
        too) while this one loads or compiles the RHS. "corrector", with ``newton="jac"``,
        is compiled when something first calls it."""
        if newton not in ("jac", "corrector") or newton not in self._programs:
            raise ValueError(f"JitPair.start: newton must name the pair's 'jac' or 'corrector' program, got {newton!r}")
        # the compiled Newton solve calls the Jacobian program for a new Jacobian
        longest = ("corrector", "jac") if newton == "corrector" else ("jac",)
        for name in longest:
            if not self.stored(name):
                self.prepare(name)  # trace before the RHS's tracing competes for the GIL
        for name in longest:
            self.compile_in_background(name)
        self.compile("rhs")
        self.compile(*longest)  # waits for the threads
        self.compile_in_background(*background)

    def wait_background(self) -> None:
        """Wait for every compile started by :meth:`compile_in_background`."""
        for thread in self._background:
            thread.join()
        self._background = []

    @property
    def compiler_options(self) -> dict[str, dict[str, Any]]:
        """``{program: XLA options}`` of the programs compiled with non-default options."""
        return {key: dict(prog.options) for key, prog in self._programs.items() if prog.options}

    # ------------------------------------------------------------------ args checking
    @property
    def programs(self) -> tuple[str, ...]:
        """Names of the programs of this pair (``"rhs"``, ``"jac"`` and the extras)."""
        return tuple(self._programs)

    @property
    def batched_programs(self) -> dict[str, int]:
        """``{name: states per call}`` of the batched programs (``BoundPair.call_many``)."""
        return {key: prog.chunk for key, prog in self._programs.items() if prog.chunk is not None}

    @property
    def corrector_check(self) -> bool | None:
        """Whether the corrector program checks its accepted iterates (``None``: the pair
        has no corrector program)."""
        return None if self._corrector_options is None else self._corrector_options[1]

    @property
    def args_signature(self) -> tuple:
        """``(treedef, ((leaf name, shape, dtype), ...))`` the pair was compiled for."""
        return self._treedef, tuple(
            (name, shape, dtype) for name, (shape, dtype) in zip(self._leaf_names, self._leaf_specs)
        )

    def flatten_args(self, args: Any) -> list:
        """Check ``args`` against the compiled signature and return its leaves as arrays.

        Leaves are converted to the compiled dtype when the cast is of the same kind or safe
        (a Python float for a float64 scalar, an int array for a float array); a different
        tree structure, a different leaf shape or an unsafe cast raises ``ValueError`` naming
        the leaf (the caller must build a new pair).
        """
        leaves, treedef = jax.tree_util.tree_flatten(args)
        if treedef != self._treedef:
            raise ValueError(
                "JitPair: args pytree structure differs from the compiled one "
                f"(got {treedef}, compiled for {self._treedef}); build a new JitPair"
            )
        out = []
        for leaf, name, (shape, dtype) in zip(leaves, self._leaf_names, self._leaf_specs):
            leaf_shape = tuple(np.shape(leaf))
            if leaf_shape != shape:
                raise ValueError(
                    f"JitPair: args leaf {name} has shape {leaf_shape}, the pair was compiled "
                    f"for shape {shape}; build a new JitPair"
                )
            leaf_dtype = np.result_type(leaf) if not hasattr(leaf, "dtype") else np.dtype(leaf.dtype)
            if leaf_dtype != dtype:
                if not np.can_cast(leaf_dtype, dtype, casting="same_kind"):
                    raise ValueError(
                        f"JitPair: args leaf {name} has dtype {leaf_dtype}, the pair was "
                        f"compiled for {dtype} (no safe cast); build a new JitPair"
                    )
                leaf = np.asarray(leaf, dtype=dtype)
            out.append(leaf)
        return out

    def pack_args(self, args: Any) -> list:
        """The call inputs of ``args`` (checked by :meth:`flatten_args`): the small leaves
        packed into one buffer per dtype, the large ones as they are."""
        return self._layout.pack(self.flatten_args(args))

    def _check_state(self, t, y) -> tuple[float, np.ndarray]:
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (self.n,):
            raise ValueError(f"JitPair: y has shape {y.shape}, the pair was compiled for ({self.n},)")
        return float(t), y

    def program(self, key: str, compile: bool = True) -> PairProgram:
        """Program ``key`` (compiled now unless ``compile`` is false); ``ValueError`` names
        the pair's programs when it has no such one."""
        try:
            prog = self._programs[key]
        except KeyError:
            raise ValueError(
                f"JitPair: no program named {key!r} (have {', '.join(self._programs)})"
            ) from None
        if prog.compiled is None and compile:
            self._compile(key)
        return prog

    # ------------------------------------------------------------------ convenient calls
    @in_float64
    def call(self, name: str, t: float, y: np.ndarray, args: Any) -> Any:
        """Evaluate program ``name`` at ``(t, y, args)``; returns NumPy arrays (same pytree)."""
        prog = self.program(name)
        _one_state(prog)
        t, y = self._check_state(t, y)
        inputs = self.pack_args(args)
        t0 = time.perf_counter()
        out = prog.compiled(t, y, *inputs)
        out = jax.tree_util.tree_map(np.array, out)
        prog.stats.calls += 1
        prog.stats.call_seconds += time.perf_counter() - t0
        return out

    def rhs(self, t: float, y: np.ndarray, args: Any) -> np.ndarray:
        """``dy/dt`` as a float64 NumPy array ``(n,)``."""
        return self.call("rhs", t, y, args)

    def jac(self, t: float, y: np.ndarray, args: Any) -> np.ndarray:
        """Jacobian as float64 NumPy: band storage ``(ml + mu + 1, n)`` or dense ``(n, n)``."""
        return self.call("jac", t, y, args)

    def bind(self, args: Any, call_stats: Mapping[str, ProgramStats] | None = None) -> "BoundPair":
        """Check and flatten ``args`` once; return the fast callback object for one solve.
        ``call_stats``: where calls are counted (``{program: ProgramStats}``; default the
        pair's own ``stats``), so solvers sharing one pair count their own calls."""
        return BoundPair(self, args, call_stats)

    # ------------------------------------------------------------------ counters
    @property
    def stats(self) -> dict[str, dict[str, int | float]]:
        """Snapshot ``{program: {'traces', 'compiles', 'trace_seconds', 'compile_seconds',
        'calls', 'call_seconds'}}``."""
        return {key: prog.stats.as_dict() for key, prog in self._programs.items()}

    def compile_stats(self) -> dict:
        """``{program: {traces, compiles, loads, trace_seconds, compile_seconds, source}}``
        (no call counters: those are per solver)."""
        keys = ("traces", "compiles", "loads", "trace_seconds", "compile_seconds", "source")
        return {name: {k: s[k] for k in keys} for name, s in self.stats.items()}

    def blocks(self) -> dict:
        """No separately compiled blocks in a fused pair: ``{}``."""
        return {}

    def compiled_program(self, name: str):
        """``(executable, XLA options)`` of program ``name`` as compiled so far (compiles
        nothing), or ``None``: not compiled yet, or no such program."""
        prog = self._programs.get(name)
        if prog is None or prog.compiled is None:
            return None
        return prog.compiled, dict(prog.options)

    def reset_call_counters(self) -> None:
        """Zero ``calls`` and ``call_seconds`` of every program (trace/compile counts stay)."""
        for prog in self._programs.values():
            prog.stats.calls = 0
            prog.stats.call_seconds = 0.0

    def __repr__(self) -> str:
        return (
            f"JitPair(name={self.name!r}, n={self.n}, ml={self.ml}, mu={self.mu}, "
            f"jacobian={self.jacobian!r}, programs={list(self._programs)})"
        )


def _one_state(prog: PairProgram) -> None:
    """Refuse a one-state call of a batched program (it takes chunks of states)."""
    if prog.chunk is not None:
        raise ValueError(f"program {prog.name!r} is batched ({prog.chunk} states a call): "
                         "use BoundPair.call_many")


class BoundPair:
    """A :class:`JitPair` with one ``args`` bound: the integrator's callback object.

    Attributes ``n``, ``ml``, ``mu``, ``jac_layout`` and the methods ``rhs_into``,
    ``jac_into`` make it an :class:`aragog.solver.backends.OdeProblem`.

    ``rhs_into(t, y, out)`` writes ``dy/dt`` into ``out`` (float64 ``(n,)``), ``jac_into(t, y,
    out)`` writes the Jacobian (band storage ``(ml + mu + 1, n)`` or dense ``(n, n)``, as
    ``jac_layout`` says). Both count calls and seconds in the pair's ``stats``. Exceptions of
    the compiled call propagate (the integrator adapters turn them into recoverable errors).
    """

    @in_float64
    def __init__(self, pair: Any, args: Any, call_stats: Mapping[str, ProgramStats] | None = None):
        # pair: the JitPair that owns the executables
        self.pair = pair
        self._call_stats = call_stats
        self.n = pair.n
        self.ml = pair.ml
        self.mu = pair.mu
        self.jac_layout = pair.jac_layout
        inputs = pair.pack_args(args)
        # Device-resident, packed inputs: no host->device transfer of args per call.
        self._inputs = tuple(jax.device_put(x) for x in inputs)
        self.rhs_into = self._make_into("rhs")
        self.jac_into = self._first_use_into("jac")  # a solve on the compiled Newton solve never calls it
        #: the corrector program's layout and whether it checks its accepted iterates
        #: (``None``: the pair has no corrector program)
        self.corrector_layout = pair.corrector_layout
        self.corrector_check = pair.corrector_check
        self._corrector = None
        #: the programs :meth:`call_many` evaluates (compiled for chunks of states)
        self.batched_programs = pair.batched_programs

    @property
    def corrector(self) -> Callable | None:
        """``corrector(t, y_pred, vectors, scalars, held) -> (c, f, info, held)``: CVODE's
        Newton solve of one step in one call (:mod:`aragog.programs._corrector`; compiled at
        the first use), or ``None`` without a corrector program."""
        if self.corrector_layout is None:
            return None
        if self._corrector is None:
            compiled = self.pair.program("corrector").compiled
            stats = self._stats("corrector")
            inputs = self._inputs
            clock = time.perf_counter

            def corrector(t, y_pred, vectors, scalars, held):
                t0 = clock()
                out = compiled(float(t), y_pred, *inputs, vectors, scalars, held)
                stats.calls += 1
                stats.call_seconds += clock() - t0
                return out

            self._corrector = corrector
        return self._corrector

    def _first_use_into(self, key: str) -> Callable[[float, np.ndarray, np.ndarray], None]:
        """:meth:`_make_into` of ``key`` when it is first called (its program is compiled or
        loaded then, not before)."""
        made = []

        def into(t, y, out):
            if not made:
                made.append(self._make_into(key))
            made[0](t, y, out)

        into.__name__ = f"{key}_into"
        return into

    def _make_into(self, key: str) -> Callable[[float, np.ndarray, np.ndarray], None]:
        prog = self.pair.program(key)
        compiled = prog.compiled
        stats = self._stats(key)
        inputs = self._inputs
        clock = time.perf_counter
        copyto = np.copyto

        def into(t, y, out):
            t0 = clock()
            copyto(out, compiled(float(t), y, *inputs))
            stats.calls += 1
            stats.call_seconds += clock() - t0

        into.__name__ = f"{key}_into"
        return into

    @in_float64
    def call(self, name: str, t: float, y: np.ndarray) -> Any:
        """Evaluate program ``name`` with the bound args; NumPy arrays (same pytree)."""
        prog = self.pair.program(name)
        _one_state(prog)
        t0 = time.perf_counter()
        out = prog.compiled(float(t), np.asarray(y, dtype=np.float64), *self._inputs)
        out = jax.tree_util.tree_map(np.array, out)
        stats = self._stats(name)
        stats.calls += 1
        stats.call_seconds += time.perf_counter() - t0
        return out

    @in_float64
    def call_many(self, name: str, t: np.ndarray, y: np.ndarray) -> Any:
        """Evaluate the batched program ``name`` at K states: ``t`` (K,) [the program's time
        unit], ``y`` (K, n); returns its outputs (NumPy, same pytree) with a leading axis K.

        ceil(K/C) calls of the compiled chunk of C states (the last chunk filled with copies
        of the last state, whose results are dropped); calls and seconds counted once per
        chunk. K = 0 returns arrays with a leading axis 0 (the program is compiled for their
        shapes)."""
        prog = self.pair.program(name)
        if prog.chunk is None:
            raise ValueError(f"BoundPair.call_many: program {name!r} is not batched (use call)")
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        y = np.asarray(y, dtype=np.float64).reshape(len(t), self.n)
        size = prog.chunk
        k = len(t)
        n_chunks = max(1, -(-k // size))
        pad = n_chunks * size - k
        if pad:
            last_t = t[-1:] if k else np.zeros(1)
            last_y = y[-1:] if k else np.zeros((1, self.n))
            t = np.concatenate([t, np.repeat(last_t, pad)])
            y = np.concatenate([y, np.repeat(last_y, pad, axis=0)])
        compiled, inputs = prog.compiled, self._inputs
        t0 = time.perf_counter()
        parts = [compiled(t[i:i + size], y[i:i + size], *inputs) for i in range(0, n_chunks * size, size)]
        out = jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs])[:k], *parts)
        stats = self._stats(name)
        stats.calls += n_chunks
        stats.call_seconds += time.perf_counter() - t0
        return out

    def _stats(self, name: str) -> ProgramStats:
        if self._call_stats is None:
            return self.pair.program(name, compile=False).stats
        stats = self._call_stats.get(name)
        if stats is None:  # the solver's own counters of a program it had not called yet
            stats = self._call_stats[name] = ProgramStats()
        return stats

    @in_float64
    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        out = np.empty(self.n)
        self.rhs_into(t, y, out)
        return out

    @in_float64
    def jac(self, t: float, y: np.ndarray) -> np.ndarray:
        shape = (self.ml + self.mu + 1, self.n) if self.jac_layout == "band" else (self.n, self.n)
        out = np.empty(shape)
        self.jac_into(t, y, out)
        return out

    @in_float64
    def scalar_fn(self, name: str) -> Callable[[float, np.ndarray], float]:
        """``g(t, y) -> float`` from a scalar-valued program (e.g. an event function)."""
        prog = self.pair.program(name)
        compiled = prog.compiled
        stats = self._stats(name)
        inputs = self._inputs
        clock = time.perf_counter

        def g(t, y):
            t0 = clock()
            value = float(compiled(float(t), y, *inputs))
            stats.calls += 1
            stats.call_seconds += clock() - t0
            return value

        g.__name__ = name
        return g

    def bare_executables(self, names) -> tuple[dict, tuple]:
        """``(executables, inputs)``: ``executables[name](t, y, *inputs)`` calls program
        ``name`` (compiled now if needed) with the bound, packed device inputs and no checks
        or counters (benchmarks' "bare" call costs, against ``rhs_into`` / ``jac_into``)."""
        return {name: self.pair.program(name).compiled for name in names}, self._inputs

    def __repr__(self) -> str:
        return f"BoundPair({self.pair!r})"
