"""An implicit operation: a state solved by Newton so that a residual vanishes.

``solve_implicit(residual, state_shape, inputs, initial_guess=None, tol=1e-12,
max_iter=50)`` records the state ``x`` (shape ``state_shape``) with
``residual(x, *inputs) == 0`` as one :class:`ImplicitOperation`.

- ``residual`` is a pure JAX function ``(x, *params) -> array`` with as many elements as
  ``x`` (a graph can be turned into one with :func:`~aragog.csdl.graph_function`).
- Forward: Newton's method with the dense Jacobian ``jax.jacfwd`` of the flattened
  residual, from ``initial_guess`` (a constant array, default zeros; it is compiled in,
  not an input), until ``max|R| <= tol`` or ``max_iter`` steps (a ``lax.while_loop``).
  Not converged: inline / PySimulator (NumPy path) raise a ``RuntimeError`` naming the
  residual and iteration count; inside a JAX program (JaxSimulator, a compressed region)
  where no exception can be raised, the state is NaN.
- Derivatives come from the implicit function theorem, ``dx = -(dR/dx)^{-1} (dR/dp) dp``,
  as the ``jax.custom_jvp`` rule of the solve — the Newton iterations are never
  differentiated. The operation is a :class:`JaxFunctionOperation`, so its reverse mode
  is recorded as another JaxFunctionOperation (``jax.vjp`` of the solve, i.e. the
  transposed IFT rule): it works in PySimulator, JaxSimulator, ``derivative`` (both loop
  modes) and ``compress``. Because the IFT rule is itself differentiable JAX code (it
  calls the solve again and differentiates ``R``), second and higher derivatives work.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from aragog.csdl.operations._jaxfn import JaxFunctionOperation
from aragog.csdl._variable import as_variable, normalize_shape


def _make_solver(residual, shape, x0, tol, max_iter):
    size = math.prod(shape)

    def R(xf, ps):
        r = jnp.reshape(jnp.asarray(residual(xf.reshape(shape), *ps), jnp.float64), (-1,))
        if r.shape != (size,):
            raise ValueError(
                f"solve_implicit: the residual has {r.shape[0]} elements, the state {size}"
            )
        return r

    def newton(ps):
        def cond(s):
            _, r, k = s
            return (r > tol) & (k < max_iter)

        def body(s):
            x, _, k = s
            x = x - jnp.linalg.solve(jax.jacfwd(R)(x, ps), R(x, ps))
            return x, jnp.max(jnp.abs(R(x, ps))), k + 1

        xi = jnp.asarray(x0).reshape(-1)
        r0 = jnp.max(jnp.abs(R(xi, ps))) if size else jnp.float64(0.0)
        return jax.lax.while_loop(cond, body, (xi, r0, 0))

    @jax.custom_jvp
    def solve(*ps):
        x, r, _ = newton(ps)
        return jnp.where(r <= tol, x, jnp.nan).reshape(shape)

    @solve.defjvp
    def solve_jvp(primals, tangents):
        x = solve(*primals)
        xf = x.reshape(-1)
        _, r_dot = jax.jvp(lambda *p: R(xf, p), tuple(primals), tuple(tangents))
        jac = jax.jacfwd(R)(xf, tuple(primals))
        return x, (-jnp.linalg.solve(jac, r_dot)).reshape(shape)

    return solve, jax.jit(lambda *ps: newton(ps)[1:])


class ImplicitOperation(JaxFunctionOperation):
    """The state of ``residual(x, *inputs) = 0`` (see module doc)."""

    name = "implicit"

    def __init__(self, residual, state_shape, inputs, initial_guess=None, tol=1e-12,
                 max_iter=50, name=None):
        shape = normalize_shape(state_shape)
        x0 = np.zeros(shape) if initial_guess is None else np.asarray(initial_guess, np.float64)
        if x0.shape != shape:
            raise ValueError(f"solve_implicit: initial_guess has shape {x0.shape}, "
                             f"state_shape is {shape}")
        if not (tol > 0) or int(max_iter) < 1:
            raise ValueError(f"solve_implicit: need tol > 0 and max_iter >= 1, got {tol}, {max_iter}")
        self.residual, self.tol, self.max_iter = residual, float(tol), int(max_iter)
        label = name or f"implicit({getattr(residual, '__name__', 'residual')})"
        solve, self._check = _make_solver(residual, shape, x0, self.tol, self.max_iter)
        solve.__name__ = label
        super().__init__(solve, inputs, name=label)

    def compute(self, xp, *xs):
        out = super().compute(xp, *xs)
        if xp is np and not np.all(np.isfinite(out[0])):
            r, k = self._check(*xs)
            raise RuntimeError(
                f"{self.label}: Newton did not converge: max|residual| = {float(r):.3e} > "
                f"tol = {self.tol:g} after {int(k)} of max_iter = {self.max_iter} iterations"
            )
        return out


def solve_implicit(residual, state_shape, inputs, initial_guess=None, tol: float = 1e-12,
                   max_iter: int = 50, name: str | None = None):
    """Record the state ``x`` with ``residual(x, *inputs) = 0``; returns its Variable."""
    if not isinstance(inputs, (tuple, list)):
        inputs = [inputs]
    op = ImplicitOperation(residual, state_shape, [as_variable(p) for p in inputs],
                           initial_guess=initial_guess, tol=tol, max_iter=max_iter, name=name)
    return op.outputs[0]
