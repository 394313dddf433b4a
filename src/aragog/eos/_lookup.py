"""Pure-JAX table lookups: bilinear on a (P, S) grid, linear on a 1-D curve.

Every function takes the table arrays as arguments (so under ``jax.jit`` they are traced
inputs, never constants) and works elementwise on query arrays of any (common,
broadcastable) shape. Queries are clipped to the table range (constant extrapolation, zero
derivative outside). Interpolation uses the form ``(1 - t) a + t b`` so that it is exact on
grid points (t is exactly 0 or 1 there) and linear along grid lines; inside a cell the 2-D
lookup is the bilinear form. ``jax.grad`` gives the piecewise-constant cell slope
(one-sided at interior grid nodes, taken from the cell the node opens).

Cell search: for a *uniform* axis (static flag, see :func:`aragog.eos._tables.is_uniform`)
the index is ``floor((x - x0)/h)`` followed by one exact correction step against the axis
values; otherwise ``jnp.searchsorted`` (binary search; its default "scan" method was the
fastest of JAX's four on the CPU). The correction step and the cell end points come from one
gather of the four axis values around the estimate (:func:`cell_bounds`); the result is the
same cell and the same fraction as comparing against ``axis[i]``, ``axis[i + 1]`` one by one.
"""

from __future__ import annotations

from typing import NamedTuple

from aragog._jax import jax, jnp

__all__ = ["Cell", "locate", "cell_bounds", "take_rows", "bilinear_at", "bilinear", "interp1d",
           "interp1d_slope", "lookup_phase", "PHASE_FIELDS"]

PHASE_FIELDS = ("T", "rho", "cp", "alpha", "dTdPs")


class Cell(NamedTuple):
    """Position of queries on an axis: cell index ``i`` in [0, n-2] and fraction ``t`` in [0, 1]
    (``x = axis[i] + t (axis[i+1] - axis[i])`` after clipping)."""

    i: jnp.ndarray
    t: jnp.ndarray


def take_rows(arr, idx):
    """``arr[idx]`` along axis 0 for int ``idx`` of any shape (shape ``idx.shape + arr.shape[1:]``).

    One XLA gather; indices must be in range (they are clipped by the callers).
    """
    arr = jnp.asarray(arr)
    idx = jnp.asarray(idx, dtype=jnp.int32)
    dnums = jax.lax.GatherDimensionNumbers(offset_dims=tuple(range(idx.ndim, idx.ndim + arr.ndim - 1)),
                                           collapsed_slice_dims=(0,), start_index_map=(0,))
    return jax.lax.gather(arr, idx[..., None], dnums, (1,) + arr.shape[1:],
                          mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def cell_bounds(axis, x, uniform: bool = False, inv_step=None):
    """Clipped ``x``, cell index ``i`` (int32, in [0, n-2]) and the cell's end points.

    Returns ``(xc, i, x0, x1)`` with ``x0 = axis[i] <= xc <= axis[i + 1] = x1`` (``xc`` is ``x``
    clipped to the axis range, derivative 1 up to and including the end points, 0 beyond).
    ``uniform`` (static) selects the arithmetic estimate ``floor((xc - x0) inv_step)``, then one
    exact correction; it must only be True for axes whose nodes lie within a quarter cell of a
    uniform grid (the estimate is then the true cell or a neighbour). ``inv_step`` is
    ``(n - 1)/(axis[-1] - axis[0])`` (computed here when None; any value within a few
    rounding errors gives the same cell).
    """
    axis = jnp.asarray(axis)
    x = jnp.asarray(x, dtype=axis.dtype)
    n = axis.shape[0]
    lo, hi = axis[0], axis[-1]
    # where() rather than jnp.clip: the derivative is 1 up to and including the end points
    # (jnp.clip gives 0.5 there) and 0 beyond them.
    xc = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
    if uniform:
        if inv_step is None:
            inv_step = (n - 1) / (hi - lo)
        i0 = jnp.clip(jnp.floor((xc - lo) * inv_step).astype(jnp.int32), 0, n - 2)
        # axis[i0 - 1 .. i0 + 2] in one gather: enough to correct the estimate by one cell
        # either way and to read the corrected cell's end points.
        w = take_rows(axis, jnp.clip(i0[..., None] + jnp.arange(-1, 3, dtype=jnp.int32), 0, n - 1))
        a_m, a_0, a_1, a_2 = w[..., 0], w[..., 1], w[..., 2], w[..., 3]
        down = xc < a_0  # never at i0 = 0 (xc >= axis[0])
        up = (~down) & (xc >= a_1) & (i0 < n - 2)
        i = i0 - down.astype(jnp.int32) + up.astype(jnp.int32)
        x0 = jnp.where(down, a_m, jnp.where(up, a_1, a_0))
        x1 = jnp.where(down, a_0, jnp.where(up, a_2, a_1))
    else:
        i = jnp.clip(jnp.searchsorted(axis, xc, side="right").astype(jnp.int32) - 1, 0, n - 2)
        w = take_rows(axis, i[..., None] + jnp.arange(2, dtype=jnp.int32))
        x0, x1 = w[..., 0], w[..., 1]
    return xc, i, x0, x1


def locate(axis, x, uniform: bool = False) -> Cell:
    """Locate ``x`` (any shape) on the strictly increasing ``axis`` (n,), clipping to its range.

    ``uniform`` (static) selects the arithmetic index; it must only be True for axes whose
    nodes lie within a quarter cell of a uniform grid (then the result is exact).
    """
    xc, i, x0, x1 = cell_bounds(axis, x, uniform)
    return Cell(i, (xc - x0) / (x1 - x0))


def bilinear_at(values, cp: Cell, cs: Cell):
    """Bilinear value of ``values`` (NS, NP) at located queries (``cp`` on P, ``cs`` on S).

    The four corners are read from the flattened table with the 1-D indices ``j NP + i``
    (one scalar gather each; 2-D ``(j, i)`` pairs would first be assembled into an index
    array by an XLA kernel of their own).
    """
    values = jnp.asarray(values)
    n_p = values.shape[1]
    flat = jnp.reshape(values, (-1,))
    i, tp = cp
    j, ts = cs
    k = j * n_p + i
    lo = (1.0 - tp) * take_rows(flat, k) + tp * take_rows(flat, k + 1)
    hi = (1.0 - tp) * take_rows(flat, k + n_p) + tp * take_rows(flat, k + n_p + 1)
    return (1.0 - ts) * lo + ts * hi


def bilinear(P_axis, S_axis, values, P, S, P_uniform: bool = False, S_uniform: bool = False):
    """Bilinear interpolation of ``values`` (NS, NP) at (P, S) (broadcast shapes), clipped."""
    P, S = jnp.broadcast_arrays(jnp.asarray(P, dtype=jnp.float64), jnp.asarray(S, dtype=jnp.float64))
    return bilinear_at(values, locate(P_axis, P, P_uniform), locate(S_axis, S, S_uniform))


def interp1d(xp, fp, x, uniform: bool = False):
    """Linear interpolation of fp(xp) at ``x`` (any shape), clipped to [xp[0], xp[-1]]."""
    fp = jnp.asarray(fp)
    i, t = locate(xp, x, uniform)
    return (1.0 - t) * fp[i] + t * fp[i + 1]


def interp1d_slope(xp, fp, x, uniform: bool = False):
    """Value and derivative d fp/d x of the clipped linear interpolant at ``x``.

    The derivative is the segment slope inside [xp[0], xp[-1]] (end points included) and 0
    outside, i.e. exactly what ``jax.grad`` of :func:`interp1d` gives.
    """
    xp, fp = jnp.asarray(xp), jnp.asarray(fp)
    x = jnp.asarray(x, dtype=xp.dtype)
    i, t = locate(xp, x, uniform)
    f0, f1 = fp[i], fp[i + 1]
    slope = (f1 - f0) / (xp[i + 1] - xp[i])
    inside = (x >= xp[0]) & (x <= xp[-1])
    return (1.0 - t) * f0 + t * f1, jnp.where(inside, slope, 0.0)


def lookup_phase(table, P, S, fields=PHASE_FIELDS) -> dict:
    """Bilinear values of a :class:`~aragog.eos._tables.PhaseTable` at (P, S).

    Returns ``{field: array}`` for the requested ``fields`` (subset of T, rho, cp, alpha,
    dTdPs; SI units), sharing one cell search. When the table has no ``alpha``, alpha is
    computed pointwise from the interpolated values: alpha = (dT/dP)_S rho c_p / T.
    """
    P, S = jnp.broadcast_arrays(jnp.asarray(P, dtype=jnp.float64), jnp.asarray(S, dtype=jnp.float64))
    cp_ = locate(table.P, P, table.P_uniform)
    cs_ = locate(table.S, S, table.S_uniform)
    need = set(fields)
    if "alpha" in need and table.alpha is None:
        need |= {"T", "rho", "cp", "dTdPs"}
    out = {}
    for f in ("T", "rho", "cp", "dTdPs", "alpha"):
        if f not in need:
            continue
        if f == "alpha" and table.alpha is None:
            out[f] = out["dTdPs"] * out["rho"] * out["cp"] / out["T"]
        else:
            out[f] = bilinear_at(getattr(table, f), cp_, cs_)
    return {f: out[f] for f in fields}
