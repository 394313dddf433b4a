"""Graph operations, grouped by family; the functional API is re-exported here.

Importing this package also gives :class:`~aragog.csdl._variable.Variable` its operators
(``+ - * / **``, unary ``-``, ``@``, ``[]``, ``< <= > >=``), ``reshape`` and ``T``:
they record the operations defined here, so they are attached from here rather than
defined in the (lower) variable module. ``import aragog.csdl`` imports this package.
"""

import numpy as np

from aragog.csdl.operations._custom import CustomExplicitOperation
from aragog.csdl.operations._elementwise import (
    add, cos, div, exp, greater, greater_equal, log, maximum, minimum, mul, neg, power,
    sin, sqrt, sub, tanh, where,
)
from aragog.csdl.operations._implicit import ImplicitOperation, solve_implicit
from aragog.csdl.operations._jaxfn import JaxFunctionOperation, jax_function
from aragog.csdl.operations._linalg import matmul, matvec, norm
from aragog.csdl.operations._loop import LoopOperation, loop
from aragog.csdl.operations._shape import (
    broadcast_to, expand, getitem, reshape, stack, sum, transpose,
)
from aragog.csdl._variable import Variable

__all__ = [
    "add", "sub", "mul", "div", "power", "neg", "sin", "cos", "tanh", "exp", "log", "sqrt",
    "maximum", "minimum", "where", "greater", "greater_equal",
    "matmul", "matvec", "norm",
    "reshape", "broadcast_to", "expand", "sum", "getitem", "transpose", "stack",
    "jax_function", "JaxFunctionOperation", "CustomExplicitOperation",
    "solve_implicit", "ImplicitOperation", "loop", "LoopOperation",
]


# Variable's operators -------------------------------------------------------------
def __add__(self, other):
    return add(self, other)


def __radd__(self, other):
    return add(other, self)


def __sub__(self, other):
    return sub(self, other)


def __rsub__(self, other):
    return sub(other, self)


def __mul__(self, other):
    return mul(self, other)


def __rmul__(self, other):
    return mul(other, self)


def __truediv__(self, other):
    return div(self, other)


def __rtruediv__(self, other):
    return div(other, self)


def __pow__(self, other):
    return power(self, other)


def __rpow__(self, other):
    return power(other, self)


def __neg__(self):
    return neg(self)


def __matmul__(self, other):
    return matmul(self, other)


def __rmatmul__(self, other):
    return matmul(other, self)


def __getitem__(self, index):
    return getitem(self, index)


def __gt__(self, other):
    return greater(self, other)


def __lt__(self, other):
    return greater(other, self)


def __ge__(self, other):
    return greater_equal(self, other)


def __le__(self, other):
    return greater_equal(other, self)


def _reshape(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return reshape(self, shape)


def _T(self):
    return transpose(self)


_OPERATORS = {
    "__add__": __add__, "__radd__": __radd__, "__sub__": __sub__, "__rsub__": __rsub__,
    "__mul__": __mul__, "__rmul__": __rmul__, "__truediv__": __truediv__,
    "__rtruediv__": __rtruediv__, "__pow__": __pow__, "__rpow__": __rpow__,
    "__neg__": __neg__, "__matmul__": __matmul__, "__rmatmul__": __rmatmul__,
    "__getitem__": __getitem__, "__gt__": __gt__, "__lt__": __lt__, "__ge__": __ge__,
    "__le__": __le__, "reshape": _reshape, "T": property(_T),
}
for _name, _method in _OPERATORS.items():
    if callable(_method):
        _method.__name__ = _name
        _method.__qualname__ = f"Variable.{_name}"
    setattr(Variable, _name, _method)
del _name, _method
