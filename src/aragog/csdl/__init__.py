"""``aragog.csdl``: a small CSDL-style computational-graph library.

Record a model as Variables and operations, differentiate it by *recorded* reverse mode
(:func:`derivative`, differentiable again), and run it op by op with NumPy
(:class:`PySimulator`), as one jitted JAX program (:class:`JaxSimulator`), or as a
schedule of directly called compiled blocks and jitted glue (:class:`BlockSimulator`).

Depends on JAX and NumPy only (no other part of aragog but its compile service, below).
It computes in float64 whatever the caller's JAX setting, and leaves JAX's configuration
alone: every public call that traces, compiles or runs JAX code (the simulators'
``run``/``compute_totals``/``call``, inline recording, a region's compile and host
callback) runs inside ``jax.enable_x64(True)``, a thread-local setting restored on return
(``aragog._float64``), so the caller's own JAX code keeps its dtypes; values come back as float64
NumPy arrays. The pure JAX functions a graph becomes (:func:`graph_function`) follow the
caller's setting, like any JAX function.

Modules: ``recorder`` (Recorder), ``variable`` (Variable, Constant), ``operation``
(Operation base class, graph evaluator),
``operations/`` (one module per family:
elementwise, shape, linalg, jaxfn = record a JAX function, custom = NumPy user ops,
implicit = Newton-solved states with implicit-function-theorem derivatives,
loop = a scan recorded as one operation), ``derivative`` (recorded reverse mode),
``simulators`` (PySimulator, JaxSimulator), ``schedule`` (BlockSimulator), ``region`` (a
sub-graph as one jitted / host-callback function, and graph_function), ``share``
(structural signatures of regions, for sharing compiled functions) and ``compress``.
Regions and schedules compile through aragog's compile service, which the solver's fused
programs use too: :mod:`aragog._compiling` (ahead-of-time compiles with counters) and
:mod:`aragog._executable_store` (the on-disk store of serialized executables that keyed
compiles load from); both import only JAX, and they are all csdl imports from aragog.

The modules form layers, each importing only lower ones (tests/test_imports.py checks
it, no cycle either): recorder, variable → operation → operations → derivative →
region, share → compress → simulators, schedule. ``variable`` imports nothing of csdl:
``operations`` attaches Variable's operators when it is imported, which this package does.

Example::

    from aragog import csdl
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[0.1, 0.2], name="x")
        d = csdl.derivative(2 * csdl.sum(csdl.sin(x) * x), x)
    d.value  # [[0.39866767, 0.78936529]]
"""

from aragog.csdl._compress import JaxCompressedOperation, compress
from aragog.csdl._derivative import derivative
from aragog.csdl._operation import Operation
from aragog.csdl.operations import *  # noqa: F401,F403
from aragog.csdl.operations import __all__ as _ops_all
from aragog.csdl._recorder import Recorder, get_current_recorder
from aragog.csdl._region import compiled_function_count, graph_function
from aragog.csdl._simulators import JaxSimulator, PySimulator
from aragog.csdl._schedule import BlockSimulator
from aragog.csdl._variable import Constant, Variable

__all__ = [
    "Recorder", "get_current_recorder", "Variable", "Constant", "Operation",
    "derivative", "compress", "JaxCompressedOperation", "compiled_function_count",
    "PySimulator", "JaxSimulator", "BlockSimulator", *_ops_all, "graph_function",
]
