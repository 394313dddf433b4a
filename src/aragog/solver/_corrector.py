"""CVODE's corrector iteration as one compiled program: the Newton solve of a BDF step.

CVODE (BDF, Newton) solves at every step, for the correction ``c`` to the predicted state
``y_pred``, the corrector equation

    G(c) = rl1 * zn1 + c - gamma * f(t_n, y_pred + c) = 0                       (1)

(``zn1``, ``rl1``, ``gamma``: CVODE's Nordsieck column, its scaling and the step's
coefficient, from ``CVodeGetNonlinearSystemData``) with Newton's method and the matrix
``M = I - gamma_p J`` (``J`` the Jacobian of ``f`` at some earlier predicted state, ``gamma_p``
the ``gamma`` when ``M`` was factored). :func:`make_corrector` builds that whole solve as a
pure JAX function, so the integrator crosses from C into XLA once per step attempt instead
of once per right-hand side, Jacobian and linear solve
(:mod:`aragog.solver.backends._cvode_newton` hands it to CVODE as a SUNNonlinearSolver;
docs/solver.md, "One compiled call per step").

It is the algorithm of SUNDIALS' Newton solver with CVODE's convergence test, as CVODE
would run it with a direct linear solver:

- the correction starts at 0; each iteration solves ``M x = -G(c)``, scales ``x`` by
  ``2 / (1 + gamma / gamma_p)`` when ``gamma`` moved since the factorisation (cvLsSolve), and
  sets ``c += x``;
- convergence: ``del = ||x||`` (CVODE's weighted RMS norm with the error weights ``ewt``),
  the rate ``crate = max(0.3 crate, del / del_prev)`` from the second iteration on, and
  ``del * min(1, crate) <= tol`` (``tol = nlscoef / tq[2]``, CVODE's own); divergence:
  ``del > 2 del_prev``; at most ``max_iters`` iterations (cvNlsConvTest, SUNNonlinSol_Newton);
- the checked iterate (``check=True``; docs/solver.md, "Integrator accuracy"): an iterate the
  test accepts is taken only when the next correction from it, ``M x' = -G(c)``, also has
  ``||x'|| <= tol``; else the iteration goes on from ``c`` with ``x'`` as its next step;
- a recoverable failure with a matrix not made from a current Jacobian redoes the solve
  from ``c = 0`` with a new matrix (a new Jacobian when ``|gamma / gamma_p - 1| < 0.2``,
  cvLsSetup's rule), as SUNDIALS' Newton solver does;
- a non-finite right-hand side is a recoverable failure (CVODE then retries with a smaller
  step).

When a new matrix is due at the start (CVODE's rules, applied by the caller: the first step,
``gamma`` moved by 30 %, 20 steps since the last factorisation, after a failed step;
a new Jacobian after 51 steps or a convergence failure), the caller asks for it with
``setup`` = 1 (factor ``I - gamma J`` with the held ``J``) or 2 (a new ``J`` at ``(t_n, y_pred)``
first). The Jacobian is the band one of the problem (``(ml + mu + 1, n)``); the matrix is
factored densely by LAPACK's LU with partial pivoting (``n`` is at most a few hundred), and
the factors are returned to be passed back in: the program holds nothing between calls.
Measured alternatives (docs/solver.md, "One compiled call per step"): the inverse, for one
matrix-vector product per iteration, from LAPACK (its many-column triangular solve runs
on OpenBLAS's threads: 16-100 ms for one 80-100 inverse on a busy 2-core machine) or by
Gauss-Jordan in XLA operations (200-800 us at 60-100 cells: n sequential steps).
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numpy as np

from aragog._jax import jax, jnp
from aragog.solver.backends._band import band_indices

__all__ = ["make_corrector", "lapack_ready", "CorrectorLayout", "FLAG_SUCCESS", "FLAG_CONV", "FLAG_RHS", "INFO_FIELDS",
           "MAX_ATTEMPTS"]

#: The program's outcome (the ``flag`` entry of its info vector).
FLAG_SUCCESS, FLAG_CONV, FLAG_RHS = 0, 1, 2
#: Fields of the info vector the program returns, in order.
INFO_FIELDS = ("flag", "crate", "jcur", "iters", "rhs", "jac", "setups", "checks", "checks_failed",
               "conv_fails", "delp")
#: At most this many passes (a first one and the redos with a new matrix; cvLsSetup's rule
#: makes the third pass's Jacobian current at the latest).
MAX_ATTEMPTS = 3
_CRDOWN, _RDIV, _DGMAX_JBAD = 0.3, 2.0, 0.2  # cvode_nls.c; cvode_ls.c (CVLS_DGMAX)


class CorrectorLayout(NamedTuple):
    """The shapes of the program's step inputs and of its held matrix (``n`` state size,
    ``ml``, ``mu`` Jacobian bandwidths).

    - ``vectors`` ``(2, n)``: ``zn1`` and the error weights ``ewt``;
    - ``scalars`` ``(6,)``: ``rl1``, ``gamma``, ``tol``, ``crate`` (the convergence rate CVODE
      carries from step to step), ``setup`` (0, 1 or 2, above) and ``delp`` (the norm of the
      last correction CVODE's test did not accept, which CVODE also carries on);
    - ``held`` ``(n + ml + mu + 3, n)``: rows ``0..n-1`` the LU factors of ``M``, then the
      band Jacobian (``ml + mu + 1`` rows), the pivots (as floats) and one row whose first
      entry is ``gamma_p``.
    """

    n: int
    ml: int
    mu: int

    def info_index(self, field: str) -> int:
        """Where ``field`` (one of :data:`INFO_FIELDS`) sits in the program's info vector."""
        return INFO_FIELDS.index(field)

    @property
    def flag_rhs(self) -> int:
        """The info vector's ``flag`` for a non-finite right-hand side (:data:`FLAG_RHS`)."""
        return FLAG_RHS

    @property
    def held_rows(self) -> int:
        return self.n + self.ml + self.mu + 3

    def initial_held(self) -> np.ndarray:
        """A held matrix with nothing factored yet (``gamma_p`` = NaN: the first step sets it up)."""
        held = np.zeros((self.held_rows, self.n))
        held[-2] = np.arange(self.n)
        held[-1, 0] = np.nan
        return held

    def abstract_inputs(self) -> tuple:
        sds = jax.ShapeDtypeStruct
        return (sds((2, self.n), jnp.float64), sds((6,), jnp.float64),
                sds((self.held_rows, self.n), jnp.float64))


@functools.lru_cache(maxsize=1)
def lapack_ready() -> None:
    """Make jaxlib's LAPACK kernels usable in this process (once). The corrector program
    calls LAPACK's LU (``getrf``) and triangular solves through jaxlib, which gets LAPACK's
    functions from scipy when a program *lowers* such an operation; an executable loaded
    from the persistent store lowers nothing, and jaxlib 0.10 then crashes in its first
    LU (a segmentation fault). Lowering one 2 x 2 LU (public API, a few milliseconds, no
    compile) sets them."""
    jax.jit(jax.lax.linalg.lu).lower(jax.ShapeDtypeStruct((2, 2), jnp.float32))


def make_corrector(rhs: Callable, jac_band: Callable, layout: CorrectorLayout, max_iters: int,
                   check: bool) -> Callable:
    """The corrector solve of one CVODE step attempt as a pure JAX function.

    Args:
        rhs: ``rhs(t, y, args) -> (n,)`` [1/yr in the state's units].
        jac_band: ``jac_band(t, y, args) -> (ml + mu + 1, n)``, band storage of d rhs / dy.
        layout: the sizes (:class:`CorrectorLayout`).
        max_iters: Newton iterations per pass (CVODE's ``maxcor``).
        check: whether an accepted iterate is checked (module docstring).

    Returns:
        ``corrector(t, y_pred, args, vectors, scalars, held) -> (c, f, info, held)``: the
        correction ``c`` (n,) (valid when ``info[0]`` is :data:`FLAG_SUCCESS`), ``f`` the
        right-hand side at ``y_pred + c`` when it was evaluated there (with ``check``; else
        NaN), ``info`` (:data:`INFO_FIELDS`, float64) and the held matrix to pass next.
    """
    n, ml, mu = layout.n, layout.ml, layout.mu
    rows, cols, valid = band_indices(n, ml, mu)
    rows_v, cols_v = rows[valid], cols[valid]
    eye = np.eye(n)
    r_jac, r_end = n, n + ml + mu + 1
    max_iters = int(max_iters)

    def corrector(t, y_pred, args, vectors, scalars, held):
        zn1, ewt = vectors[0], vectors[1]
        rl1, gamma, tol, crate0, setup0, delp0 = (scalars[k] for k in range(6))

        def wrms(v):
            return jnp.sqrt(jnp.mean((v * ewt) ** 2))

        def residual(c):
            f = rhs(t, y_pred + c, args)
            return rl1 * zn1 + c - gamma * f, f, jnp.all(jnp.isfinite(f))

        def factor(J):
            dense = jnp.zeros((n, n), J.dtype).at[rows_v, cols_v].set(J[valid])
            lu, pivots, _ = jax.lax.linalg.lu(eye - gamma * dense)
            return lu, pivots.astype(jnp.float64)

        def solve(factors, gamma_p, b):
            lu, pivots = factors
            x = jax.scipy.linalg.lu_solve((lu, pivots.astype(jnp.int32)), b)
            ratio = gamma / gamma_p
            return jnp.where(ratio != 1.0, x * (2.0 / (1.0 + ratio)), x)

        def newton(factors, gamma_p, crate, delp, res, counts):
            """One pass of Newton iterations from c = 0 with residual ``res`` = G(0)."""
            zero = jnp.zeros(n)

            def cond(s):
                return s[0] == 0  # status: 0 iterating, 1 converged, 2 failed (conv), 3 failed (rhs)

            def body(s):
                status, m, c, res, delp, crate, f_acc, counts = s
                x = solve(factors, gamma_p, -res)
                c_new = c + x
                dl = wrms(x)
                crate = jnp.where(m > 0, jnp.maximum(_CRDOWN * crate, dl / delp), crate)
                converged = dl * jnp.minimum(1.0, crate) <= tol
                counts = counts.at[0].add(1)  # iterations
                if check:
                    res_new, f_new, ok = residual(c_new)
                    counts = counts.at[1].add(1)
                    x_next = solve(factors, gamma_p, -res_new)
                    passed = converged & ok & (wrms(x_next) <= tol)
                    counts = counts.at[4].add(converged.astype(jnp.int32))
                    counts = counts.at[5].add((converged & ~passed).astype(jnp.int32))
                else:
                    # the residual is needed only to iterate on
                    res_new, f_new, ok = jax.lax.cond(
                        converged, lambda: (res, jnp.full(n, jnp.nan), jnp.array(True)), lambda: residual(c_new))
                    counts = counts.at[1].add((~converged).astype(jnp.int32))
                    passed = converged
                diverging = (~converged) & (m >= 1) & (dl > _RDIV * delp)
                out_of_iters = m + 1 >= max_iters
                status = jnp.where(passed, 1,
                                   jnp.where(~ok, 3, jnp.where(diverging | out_of_iters, 2, 0))).astype(jnp.int32)
                # CVODE's test keeps the last norm only of an iterate it did not accept
                # (cvNlsConvTest: an accepted one whose check failed leaves it as it was)
                delp = jnp.where(converged, delp, dl)
                return (status, m + 1, c_new, res_new, delp, crate, jnp.where(passed, f_new, f_acc), counts)

            init = (jnp.int32(0), jnp.int32(0), zero, res, delp, crate, jnp.full(n, jnp.nan), counts)
            status, _, c, _, delp, crate, f_acc, counts = jax.lax.while_loop(cond, body, init)
            return status, c, crate, delp, f_acc, counts

        def attempt_cond(s):
            return (s[0] == 0) & (s[1] < MAX_ATTEMPTS)

        def attempt(s):
            _, k, setup, c, f_acc, flag, held, crate, delp, jcur, counts = s
            res0, _, ok0 = residual(jnp.zeros(n))
            counts = counts.at[1].add(1)
            J = held[r_jac:r_end]
            new_jac = setup == 2
            J = jax.lax.cond(new_jac, lambda: jac_band(t, y_pred, args), lambda: J)
            counts = counts.at[2].add(new_jac.astype(jnp.int32))
            do_factor = setup >= 1
            factors = jax.lax.cond(do_factor, lambda: factor(J), lambda: (held[:n], held[r_end]))
            counts = counts.at[3].add(do_factor.astype(jnp.int32))
            gamma_p = jnp.where(do_factor, gamma, held[-1, 0])
            crate = jnp.where(do_factor, 1.0, crate)
            jcur = jnp.where(do_factor, new_jac, jcur)
            held = jnp.concatenate([factors[0], J, factors[1][None, :], jnp.zeros((1, n)).at[0, 0].set(gamma_p)])
            status, c, crate, delp, f_acc, counts = newton(factors, gamma_p, crate, delp, res0, counts)
            status = jnp.where(ok0, status, 3)
            flag = jnp.where(status == 1, FLAG_SUCCESS, jnp.where(status == 3, FLAG_RHS, FLAG_CONV)).astype(jnp.int32)
            # a failure with a matrix from an old Jacobian: again with a new matrix
            # (SUNNonlinSol_Newton; not after a failed first residual, which it returns)
            redo = ((status == 2) | ((status == 3) & ok0)) & ~jcur
            counts = counts.at[6].add((status != 1).astype(jnp.int32))
            next_setup = jnp.where(jnp.abs(gamma / gamma_p - 1.0) < _DGMAX_JBAD, 2, 1).astype(jnp.int32)
            done = jnp.where(redo, 0, 1).astype(jnp.int32)
            return (done, k + 1, next_setup, c, f_acc, flag, held, crate, delp, jcur, counts)

        counts = jnp.zeros(7, jnp.int32)  # iters, rhs, jac, setups, checks, checks_failed, conv_fails
        init = (jnp.int32(0), jnp.int32(0), jnp.round(setup0).astype(jnp.int32), jnp.zeros(n), jnp.full(n, jnp.nan),
                jnp.int32(FLAG_CONV), held, crate0, delp0, jnp.array(False), counts)
        _, _, _, c, f_acc, flag, held, crate, delp, jcur, counts = jax.lax.while_loop(attempt_cond, attempt, init)
        info = jnp.concatenate([jnp.stack([flag.astype(jnp.float64), crate, jcur.astype(jnp.float64)]),
                                counts.astype(jnp.float64), delp[None]])
        return c, f_acc, info, held

    return corrector
