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
  from ``c = 0`` with a new matrix, as SUNDIALS' Newton solver does: a refactorisation of
  the held Jacobian here, or, when ``|gamma / gamma_p - 1| < 0.2`` (cvLsSetup's rule for a
  new Jacobian), a return with :data:`FLAG_JAC` so that the caller evaluates the Jacobian
  and calls again;
- a non-finite right-hand side is a recoverable failure (CVODE then retries with a smaller
  step).

When a new matrix is due at the start (CVODE's rules, applied by the caller: the first step,
``gamma`` moved by 30 %, 20 steps since the last factorisation, after a failed step;
a new Jacobian after 51 steps or a convergence failure), the caller asks for it with
``setup`` = 1 (factor ``I - gamma J`` with the held ``J``) or 2 (the same, with a ``J`` it
has just evaluated at ``(t_n, y_pred)`` and put in the held matrix: the matrix is then from
a current Jacobian). The Jacobian is the band one of the problem (``(ml + mu + 1, n)``),
evaluated by the problem's own Jacobian program: inside this program it would double its
compile time (XLA's default fusion emitters, which this program needs, compile the
Jacobian in 2.4 s at 60 cells), for a call more on 5-8 % of the steps. The matrix is
factored densely by LAPACK's LU with partial pivoting (``n`` is at most a few hundred), and
the factors are returned to be passed back in: the program holds nothing between calls.

The program is two nested loops: passes (the factorisation that is due, then iterations
from ``c = 0``) and, inside, iterations of one residual and one linear solve each, whose
first part ends the test of the previous update. So the RHS, the LU and the triangular
solve each appear once in the program, and the set-up's branches stay out of the
iterations (replayed on 2000 steps of the demo: 237-250 us a call, against 258-322 us for
an earlier form with the RHS twice and 266-286 us with the set-up inside the one loop).
The linear solve holds the LU's row permutation, not LAPACK's pivots: jax.scipy's
``lu_solve`` converts pivots to a permutation in a loop of n steps at every call, which
inside the iteration loop cost 8-10 % of the program (tools/profile_solves.py step-cost
on tests/earth_toy.toml, pinned: 312-327 us a step against 335-361, the same steps).
It keeps XLA's default fusion emitters: compiled with the older ones (as the RHS and the
Jacobian programs are), the right-hand side inside its loop came out 2e-10 from the RHS
program's (1e-13 with the default emitters), the corrections 1e-7 apart, and the mush
matrix's freezing cases took 28-85 % more steps (docs/solver.md).
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
from aragog.programs._band import band_indices

__all__ = ["make_corrector", "lapack_ready", "CorrectorLayout", "FLAG_SUCCESS", "FLAG_CONV", "FLAG_RHS", "FLAG_JAC",
           "INFO_FIELDS", "MAX_ATTEMPTS"]

#: The program's outcome (the ``flag`` entry of its info vector): converged; failed to
#: converge; a non-finite right-hand side; failed with a matrix from an old Jacobian where
#: CVODE's rule redoes the solve with a new Jacobian, which the caller evaluates (the
#: Jacobian program is not part of this one) before it calls again with ``setup`` = 2.
FLAG_SUCCESS, FLAG_CONV, FLAG_RHS, FLAG_JAC = 0, 1, 2, 3
#: Fields of the info vector the program returns, in order (``jac``: always 0 here, the
#: caller counts the Jacobians it evaluates; ``passes``: the passes made for this step
#: attempt, the caller's earlier calls included).
INFO_FIELDS = ("flag", "crate", "jcur", "iters", "rhs", "jac", "setups", "checks", "checks_failed",
               "conv_fails", "delp", "passes")
#: At most this many passes (a first one and the redos with a new matrix; cvLsSetup's rule
#: makes the third pass's Jacobian current at the latest).
MAX_ATTEMPTS = 3
_CRDOWN, _RDIV, _DGMAX_JBAD = 0.3, 2.0, 0.2  # cvode_nls.c; cvode_ls.c (CVLS_DGMAX)


class CorrectorLayout(NamedTuple):
    """The shapes of the program's step inputs and of its held matrix (``n`` state size,
    ``ml``, ``mu`` Jacobian bandwidths).

    - ``vectors`` ``(2, n)``: ``zn1`` and the error weights ``ewt``;
    - ``scalars`` ``(7,)``: ``rl1``, ``gamma``, ``tol``, ``crate`` (the convergence rate CVODE
      carries from step to step), ``setup`` (0, 1 or 2, above), ``delp`` (the norm of the
      last correction CVODE's test did not accept, which CVODE also carries on) and the
      passes already made for this step attempt (by an earlier call that returned
      :data:`FLAG_JAC`; else 0);
    - ``held`` ``(n + ml + mu + 3, n)``: rows ``0..n-1`` the LU factors of ``M``, then the
      band Jacobian (``ml + mu + 1`` rows), the row permutation of the LU (as floats) and
      one row whose first entry is ``gamma_p``.
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
    def flag_jac(self) -> int:
        """The info vector's ``flag`` asking for a new Jacobian and a call again (:data:`FLAG_JAC`)."""
        return FLAG_JAC

    @property
    def max_attempts(self) -> int:
        """At most this many passes per step attempt (:data:`MAX_ATTEMPTS`)."""
        return MAX_ATTEMPTS

    @property
    def jacobian_rows(self) -> slice:
        """The rows of the held matrix that hold the band Jacobian."""
        return slice(self.n, self.n + self.ml + self.mu + 1)

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
        return (sds((2, self.n), jnp.float64), sds((7,), jnp.float64),
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


def make_corrector(rhs: Callable, layout: CorrectorLayout, max_iters: int, check: bool) -> Callable:
    """The corrector solve of one CVODE step attempt as a pure JAX function.

    Args:
        rhs: ``rhs(t, y, args) -> (n,)`` [1/yr in the state's units].
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
        rl1, gamma, tol, crate0, setup0, delp0, passes0 = (scalars[k] for k in range(7))
        J = held[r_jac:r_end]

        def wrms(v):
            return jnp.sqrt(jnp.mean((v * ewt) ** 2))

        def factor():
            dense = jnp.zeros((n, n), J.dtype).at[rows_v, cols_v].set(J[valid])
            lu, _, perm = jax.lax.linalg.lu(eye - gamma * dense)
            return lu, perm.astype(jnp.float64)

        # P M = L U with the row permutation ``perm`` (held as floats, converted once a
        # pass): M x = b is L U x = b[perm], two triangular solves. (jax.scipy's lu_solve
        # turns LAPACK's pivots into that permutation in a loop of n steps at every call:
        # inside the iteration loop that loop cost more than the solves.)
        def solve(lu, perm, gamma_p, b):
            z = jax.lax.linalg.triangular_solve(lu, b[perm][:, None], left_side=True, lower=True,
                                                unit_diagonal=True)
            x = jax.lax.linalg.triangular_solve(lu, z, left_side=True, lower=False)[:, 0]
            ratio = gamma / gamma_p
            return jnp.where(ratio != 1.0, x * (2.0 / (1.0 + ratio)), x)

        # One iteration = one residual G(c) and one linear solve: its first part ends the
        # test of the previous update (the check needs G at the updated iterate), its
        # second takes the next update.
        def iterate(p):
            p = dict(p)
            m, counts, lu, perm, gamma_p = p["m"], p["counts"], p["lu"], p["perm"], p["gamma_p"]
            start = m == 0
            c = p["c"]
            f = rhs(t, y_pred + c, args)
            ok = jnp.all(jnp.isfinite(f))
            counts = counts.at[1].add(1)
            x = solve(lu, perm, gamma_p, -(rl1 * zn1 + c - gamma * f))
            dl = wrms(x)

            # the previous update's outcome: 0 iterating, 1 converged, 2 failed (conv), 3 failed (rhs)
            conv = p["conv"] & ~start
            if check:  # accepted only when the next correction from it is within tol too
                passed = conv & ok & (dl <= tol)
                counts = counts.at[4].add(conv.astype(jnp.int32)).at[5].add((conv & ~passed).astype(jnp.int32))
            else:  # (a converged update ended the pass at once)
                passed = jnp.array(False)
            status = jnp.where(passed, 1, jnp.where(~ok, 3, jnp.where(p["stop"] & ~start, 2, 0)))

            # the next update, from c
            iterating = status == 0
            crate = jnp.where(iterating & (m > 0), jnp.maximum(_CRDOWN * p["crate"], dl / p["delp"]), p["crate"])
            converged = dl * jnp.minimum(1.0, crate) <= tol
            counts = counts.at[0].add(iterating.astype(jnp.int32))
            diverging = (~converged) & (m >= 1) & (dl > _RDIV * p["delp"])
            stop = diverging | (m + 1 >= max_iters)
            # CVODE's test keeps the last norm only of an iterate it did not accept
            # (cvNlsConvTest: an accepted one whose check failed leaves it as it was)
            delp = jnp.where(iterating & ~converged, dl, p["delp"])
            if not check:  # the update's test ends the pass: nothing more to evaluate
                status = jnp.where(iterating & converged, 1, jnp.where(iterating & stop, 2, status))
            p.update(status=status.astype(jnp.int32), m=m + 1, c=jnp.where(iterating, c + x, c),
                     conv=converged & iterating, stop=stop & iterating, crate=crate, delp=delp, counts=counts,
                     ok0=jnp.where(start, ok, p["ok0"]), f=jnp.where(check & (status == 1), f, jnp.nan))
            return p

        # A pass: the factorisation that is due, then iterations from c = 0 until the pass
        # ends; a failure with a matrix not made from a current Jacobian is redone with a
        # new matrix: refactored here, or with a new Jacobian by the caller (FLAG_JAC).
        def attempt(s):
            s = dict(s)
            setup = s["setup"]
            do_factor = setup >= 1
            lu, perm = jax.lax.cond(do_factor, factor, lambda: (s["lu"], s["perm"]))
            gamma_p = jnp.where(do_factor, gamma, s["gamma_p"])
            jcur = jnp.where(do_factor, setup == 2, s["jcur"])
            p = {"status": jnp.int32(0), "m": jnp.int32(0), "c": jnp.zeros(n), "conv": jnp.array(False),
                 "stop": jnp.array(False), "ok0": jnp.array(True), "f": jnp.full(n, jnp.nan),
                 "crate": jnp.where(do_factor, 1.0, s["crate"]), "delp": s["delp"],
                 "counts": s["counts"].at[3].add(do_factor.astype(jnp.int32)),
                 "lu": lu, "perm": jnp.round(perm).astype(jnp.int32), "gamma_p": gamma_p}
            p = jax.lax.while_loop(lambda p: p["status"] == 0, iterate, p)
            status = p["status"]
            failed = (status == 2) | ((status == 3) & p["ok0"])  # not after a failed first residual
            redo = failed & ~jcur & (s["k"] + 1 < MAX_ATTEMPTS)
            new_jacobian = jnp.abs(gamma / gamma_p - 1.0) < _DGMAX_JBAD  # cvLsSetup's rule
            flag = jnp.where(status == 1, FLAG_SUCCESS, jnp.where(status == 3, FLAG_RHS, FLAG_CONV))
            flag = jnp.where(redo & new_jacobian, FLAG_JAC, flag)
            return {"running": redo & ~new_jacobian, "k": s["k"] + 1, "setup": jnp.int32(1), "c": p["c"],
                    "f": p["f"], "flag": flag.astype(jnp.int32), "lu": lu, "perm": perm,
                    "gamma_p": gamma_p, "crate": p["crate"], "delp": p["delp"], "jcur": jcur,
                    "counts": p["counts"].at[6].add((status != 1).astype(jnp.int32))}

        init = {
            "running": jnp.array(True), "k": jnp.round(passes0).astype(jnp.int32),
            "setup": jnp.round(setup0).astype(jnp.int32), "c": jnp.zeros(n), "f": jnp.full(n, jnp.nan),
            "flag": jnp.int32(FLAG_CONV), "lu": held[:n], "perm": held[r_end], "gamma_p": held[-1, 0],
            "crate": crate0, "delp": delp0, "jcur": jnp.array(False),
            "counts": jnp.zeros(7, jnp.int32),  # iters, rhs, jac (0), setups, checks, checks_failed, conv_fails
        }
        s = jax.lax.while_loop(lambda s: s["running"] & (s["k"] < MAX_ATTEMPTS), attempt, init)
        held = jnp.concatenate([s["lu"], J, s["perm"][None, :], jnp.zeros((1, n)).at[0, 0].set(s["gamma_p"])])
        info = jnp.concatenate([jnp.stack([s["flag"].astype(jnp.float64), s["crate"], s["jcur"].astype(jnp.float64)]),
                                s["counts"].astype(jnp.float64), jnp.stack([s["delp"], s["k"].astype(jnp.float64)])])
        return s["c"], s["f"], info, held

    return corrector
