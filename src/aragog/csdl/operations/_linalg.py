"""Linear algebra: matmul (``@``), matvec, norm."""

from __future__ import annotations

from aragog.csdl._operation import Operation
from aragog.csdl.operations._elementwise import mul, sqrt
from aragog.csdl.operations._shape import reshape, sum, transpose
from aragog.csdl._variable import as_variable


class MatMul(Operation):
    """``a @ b`` for 1-D and 2-D operands (NumPy matmul semantics)."""

    name = "matmul"

    def __init__(self, a, b):
        if a.ndim not in (1, 2) or b.ndim not in (1, 2):
            raise NotImplementedError(
                f"matmul: only 1-D and 2-D operands are supported, got {a.shape} @ {b.shape}"
            )
        if a.shape[-1] != b.shape[0]:
            raise ValueError(f"matmul: shape mismatch {a.shape} @ {b.shape}")
        out = a.shape[:-1] + b.shape[1:]
        super().__init__([a, b], [out])

    def compute(self, xp, a, b):
        return (xp.matmul(a, b),)

    def vjp(self, cots, needs):
        a, b = self.inputs
        # Work with 2-D views: A (m, n), B (n, k), G (m, k).
        a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
        b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
        g2 = reshape(cots[0], (a2.shape[0], b2.shape[1]))
        ga = reshape(g2 @ transpose(b2), a.shape) if needs[0] else None
        gb = reshape(transpose(a2) @ g2, b.shape) if needs[1] else None
        return [ga, gb]


def matmul(a, b):
    return MatMul(as_variable(a), as_variable(b)).output


def matvec(a, x):
    """Matrix (m, n) times vector (n,)."""
    a, x = as_variable(a), as_variable(x)
    if a.ndim != 2 or x.ndim != 1:
        raise ValueError(f"matvec: expected a matrix and a vector, got {a.shape} and {x.shape}")
    return matmul(a, x)


def norm(x, axis=None):
    """Euclidean norm over all elements or along ``axis`` (not differentiable at 0)."""
    x = as_variable(x)
    return sqrt(sum(mul(x, x), axis=axis))
