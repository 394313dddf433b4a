"""Elementwise operations: arithmetic, powers, transcendental functions, comparisons,
maximum/minimum and where.

Binary operations see operands of equal shape: :func:`binary_operands` broadcasts a
size-one operand first (a recorded ``broadcast_to``; constants are made at full shape).
"""

from __future__ import annotations

import numpy as np

from aragog.csdl._operation import Operation
from aragog.csdl.operations._shape import broadcast_to
from aragog.csdl._variable import Constant, Variable, as_variable


def binary_operands(a, b, opname: str) -> tuple[Variable, Variable]:
    """Both operands as Variables of one shape (scalar broadcasting only)."""
    a, b = as_variable(a), as_variable(b)
    if a.shape == b.shape:
        return a, b

    def widen(x, shape):
        if isinstance(x, Constant):
            return Constant(np.broadcast_to(x.value, shape))
        return broadcast_to(x, shape)

    if a.size == 1 and a.ndim <= b.ndim:
        return widen(a, b.shape), b
    if b.size == 1 and b.ndim <= a.ndim:
        return a, widen(b, a.shape)
    raise ValueError(
        f"{opname}: shape mismatch {a.shape} vs {b.shape} "
        "(only equal shapes or a size-one operand are broadcast; use broadcast_to/expand)"
    )


def zeros_like(v: Variable) -> Constant:
    return Constant(np.zeros(v.shape))


# --- unary -------------------------------------------------------------------------
class Unary(Operation):
    fn = ""  # name of the numpy / jax.numpy function

    def __init__(self, x):
        super().__init__([x], [x.shape])

    def compute(self, xp, x):
        return (getattr(xp, self.fn)(x),)


class Neg(Unary):
    name, fn = "neg", "negative"

    def vjp(self, cots, needs):
        return [neg(cots[0])]


class Sin(Unary):
    name, fn = "sin", "sin"

    def vjp(self, cots, needs):
        return [cots[0] * cos(self.inputs[0])]


class Cos(Unary):
    name, fn = "cos", "cos"

    def vjp(self, cots, needs):
        return [-(cots[0] * sin(self.inputs[0]))]


class Tanh(Unary):
    name, fn = "tanh", "tanh"

    def vjp(self, cots, needs):
        y = self.outputs[0]
        return [cots[0] * (1.0 - y * y)]


class Exp(Unary):
    name, fn = "exp", "exp"

    def vjp(self, cots, needs):
        return [cots[0] * self.outputs[0]]


class Log(Unary):
    name, fn = "log", "log"

    def vjp(self, cots, needs):
        return [cots[0] / self.inputs[0]]


class Sqrt(Unary):
    name, fn = "sqrt", "sqrt"

    def vjp(self, cots, needs):
        return [cots[0] * (0.5 / self.outputs[0])]


class PowerConst(Operation):
    """x ** p with a compiled-in number p."""

    name = "power_const"

    def __init__(self, x, p: float):
        super().__init__([x], [x.shape], exponent=float(p))

    def compute(self, xp, x):
        return (xp.power(x, self.params["exponent"]),)

    def vjp(self, cots, needs):
        p = self.params["exponent"]
        if p == 0.0:
            return [None]
        if p == 1.0:
            return [cots[0]]
        if p == 2.0:
            return [cots[0] * (2.0 * self.inputs[0])]
        return [cots[0] * (p * power(self.inputs[0], p - 1.0))]


# --- binary (equal shapes) -----------------------------------------------------------
class Binary(Operation):
    fn = ""

    def __init__(self, a, b):
        super().__init__([a, b], [a.shape])

    def compute(self, xp, a, b):
        return (getattr(xp, self.fn)(a, b),)


class Add(Binary):
    name, fn = "add", "add"

    def vjp(self, cots, needs):
        return [cots[0], cots[0]]


class Sub(Binary):
    name, fn = "sub", "subtract"

    def vjp(self, cots, needs):
        return [cots[0], neg(cots[0]) if needs[1] else None]


class Mul(Binary):
    name, fn = "mul", "multiply"

    def vjp(self, cots, needs):
        a, b = self.inputs
        g = cots[0]
        return [g * b if needs[0] else None, g * a if needs[1] else None]


class Div(Binary):
    name, fn = "div", "divide"

    def vjp(self, cots, needs):
        a, b = self.inputs
        g = cots[0]
        return [g / b if needs[0] else None,
                neg(g * self.outputs[0] / b) if needs[1] else None]


class Power(Binary):
    """a ** b with both operands variables."""

    name, fn = "power", "power"

    def vjp(self, cots, needs):
        a, b = self.inputs
        g = cots[0]
        return [g * b * power(a, b - 1.0) if needs[0] else None,
                g * log(a) * self.outputs[0] if needs[1] else None]


class Maximum(Binary):
    """Elementwise maximum; at ties the whole cotangent goes to the first operand."""

    name, fn = "maximum", "maximum"

    def vjp(self, cots, needs):
        a, b = self.inputs
        mask = greater_equal(a, b)
        g = cots[0]
        return [g * mask if needs[0] else None, g * (1.0 - mask) if needs[1] else None]


class Minimum(Binary):
    """Elementwise minimum; at ties the whole cotangent goes to the first operand."""

    name, fn = "minimum", "minimum"

    def vjp(self, cots, needs):
        a, b = self.inputs
        mask = greater_equal(b, a)
        g = cots[0]
        return [g * mask if needs[0] else None, g * (1.0 - mask) if needs[1] else None]


class Compare(Binary):
    """1.0 where the comparison holds, else 0.0; piecewise constant (zero derivative)."""

    name = "compare"

    def __init__(self, a, b, kind: str):
        Operation.__init__(self, [a, b], [a.shape], kind=kind)

    def compute(self, xp, a, b):
        fn = {"gt": xp.greater, "ge": xp.greater_equal}[self.params["kind"]]
        return (fn(a, b).astype(np.float64),)

    def vjp(self, cots, needs):
        return [None, None]


class Where(Operation):
    """where(cond != 0, a, b); no derivative with respect to cond."""

    name = "where"

    def __init__(self, cond, a, b):
        super().__init__([cond, a, b], [a.shape])

    def compute(self, xp, c, a, b):
        return (xp.where(c != 0, a, b),)

    def vjp(self, cots, needs):
        c = self.inputs[0]
        g = cots[0]
        z = zeros_like(g)
        return [None, where(c, g, z) if needs[1] else None, where(c, z, g) if needs[2] else None]


# --- functional API -------------------------------------------------------------------
def _unary(cls):
    def f(x):
        return cls(as_variable(x)).output

    f.__name__ = cls.name
    f.__doc__ = f"Elementwise {cls.name} of a Variable (same shape)."
    return f


neg = _unary(Neg)
sin = _unary(Sin)
cos = _unary(Cos)
tanh = _unary(Tanh)
exp = _unary(Exp)
log = _unary(Log)
sqrt = _unary(Sqrt)


def _binary(cls, opname):
    def f(a, b):
        a, b = binary_operands(a, b, opname)
        return cls(a, b).output

    f.__name__ = opname
    f.__doc__ = f"Elementwise {opname} (equal shapes, or a size-one operand broadcast)."
    return f


add = _binary(Add, "add")
sub = _binary(Sub, "sub")
mul = _binary(Mul, "mul")
div = _binary(Div, "div")
maximum = _binary(Maximum, "maximum")
minimum = _binary(Minimum, "minimum")


def power(a, b):
    """a ** b. A plain-number exponent is compiled in (``PowerConst``)."""
    if isinstance(b, (int, float, np.integer, np.floating)) and isinstance(a, Variable):
        return PowerConst(a, float(b)).output
    a, b = binary_operands(a, b, "power")
    return Power(a, b).output


def greater(a, b):
    a, b = binary_operands(a, b, "greater")
    return Compare(a, b, "gt").output


def greater_equal(a, b):
    a, b = binary_operands(a, b, "greater_equal")
    return Compare(a, b, "ge").output


def where(cond, a, b):
    """Elementwise ``a`` where ``cond`` is nonzero, else ``b`` (shapes as for binary ops)."""
    a, b = binary_operands(a, b, "where")
    cond = as_variable(cond)
    if cond.shape != a.shape:
        cond, _ = binary_operands(cond, a, "where (condition)")
    return Where(cond, a, b).output
