"""Graph operations, grouped by family; the functional API is re-exported here."""

from aragog.csdl.operations.custom import CustomExplicitOperation
from aragog.csdl.operations.elementwise import (
    add, cos, div, exp, greater, greater_equal, log, maximum, minimum, mul, neg, power,
    sin, sqrt, sub, tanh, where,
)
from aragog.csdl.operations.implicit import ImplicitOperation, solve_implicit
from aragog.csdl.operations.jaxfn import JaxFunctionOperation, jax_function
from aragog.csdl.operations.linalg import matmul, matvec, norm
from aragog.csdl.operations.loop import LoopOperation, graph_function, loop
from aragog.csdl.operations.shape import (
    broadcast_to, expand, getitem, reshape, stack, sum, transpose,
)

__all__ = [
    "add", "sub", "mul", "div", "power", "neg", "sin", "cos", "tanh", "exp", "log", "sqrt",
    "maximum", "minimum", "where", "greater", "greater_equal",
    "matmul", "matvec", "norm",
    "reshape", "broadcast_to", "expand", "sum", "getitem", "transpose", "stack",
    "jax_function", "JaxFunctionOperation", "CustomExplicitOperation",
    "solve_implicit", "ImplicitOperation", "loop", "LoopOperation", "graph_function",
]
