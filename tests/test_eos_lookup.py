"""Pure-JAX lookups: exact on grid points, linear along grid lines, clipping, derivatives."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog.eos import _lookup as lookup  # private: locate, cell_bounds, take_rows: below the exported lookups
from aragog.eos._tables import is_uniform  # private: the uniform-axis test the lookup relies on

# the lookups are pure JAX: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

EPS = np.finfo(np.float64).eps
RNG = np.random.default_rng(42)

# A non-uniform and a uniform grid, with random values.
P_NU = np.sort(np.r_[0.0, np.cumsum(RNG.random(12) + 0.2)]) * 1e10  # (13,)
S_NU = np.sort(np.r_[0.0, np.cumsum(RNG.random(8) + 0.1)]) * 300.0 + 100.0  # (9,)
Q_NU = RNG.random((9, 13)) * 1000.0 + 500.0
P_U = np.linspace(0.0, 1.5e11, 16)
S_U = np.linspace(200.0, 3200.0, 11)
Q_U = RNG.random((11, 16)) * 1000.0 + 500.0
GRIDS = [
    pytest.param(P_NU, S_NU, Q_NU, False, False, id="searchsorted"),
    pytest.param(P_U, S_U, Q_U, True, True, id="arithmetic"),
    pytest.param(P_U, S_U, Q_U, False, False, id="uniform-searchsorted"),
]


# Jitted once per shape: eager op-by-op dispatch would compile every primitive separately.
_bilinear = jax.jit(lookup.bilinear, static_argnums=(5, 6))
_interp1d = jax.jit(lookup.interp1d, static_argnums=(3,))
_interp1d_slope = jax.jit(lookup.interp1d_slope, static_argnums=(3,))
_locate = jax.jit(lookup.locate, static_argnums=(2,))


def _bl(P_ax, S_ax, Q, P, S, up, us):
    return np.asarray(_bilinear(P_ax, S_ax, Q, P, S, up, us))


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_exact_on_grid_points(P_ax, S_ax, Q, up, us):
    PP, SS = np.meshgrid(P_ax, S_ax)  # (NS, NP) like Q
    # Exact: at nodes the weights are exactly 0 and 1, and (1-0)*a + 0*b == a.
    assert np.array_equal(_bl(P_ax, S_ax, Q, PP, SS, up, us), Q)


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_linear_along_grid_lines(P_ax, S_ax, Q, up, us):
    Pm = 0.5 * (P_ax[:-1] + P_ax[1:])
    Sm = 0.5 * (S_ax[:-1] + S_ax[1:])
    # Along an S grid line (fixed S[j]), the midpoint in P is the mean of the neighbours.
    got = _bl(P_ax, S_ax, Q, Pm[None, :], S_ax[:, None], up, us)
    want = 0.5 * (Q[:, :-1] + Q[:, 1:])
    # Tolerance: the midpoint fraction t = 0.5 carries one rounding of the midpoint and of
    # the division (<= 2 eps relative in t), times |b - a| <= max|Q|, plus the final
    # rounding of the sum: 4 eps * max|Q| bounds it.
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * EPS * np.abs(Q).max())
    got = _bl(P_ax, S_ax, Q, P_ax[None, :], Sm[:, None], up, us)
    want = 0.5 * (Q[:-1, :] + Q[1:, :])
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * EPS * np.abs(Q).max())


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_bilinear_inside_cells(P_ax, S_ax, Q, up, us):
    n = 500
    P = RNG.uniform(P_ax[0], P_ax[-1], n)
    S = RNG.uniform(S_ax[0], S_ax[-1], n)
    i = np.clip(np.searchsorted(P_ax, P, side="right") - 1, 0, P_ax.size - 2)
    j = np.clip(np.searchsorted(S_ax, S, side="right") - 1, 0, S_ax.size - 2)
    tp = (P - P_ax[i]) / (P_ax[i + 1] - P_ax[i])
    ts = (S - S_ax[j]) / (S_ax[j + 1] - S_ax[j])
    want = ((1 - tp) * (1 - ts) * Q[j, i] + tp * (1 - ts) * Q[j, i + 1]
            + (1 - tp) * ts * Q[j + 1, i] + tp * ts * Q[j + 1, i + 1])
    # Same formula, different association of the products: a few eps of max|Q|.
    np.testing.assert_allclose(_bl(P_ax, S_ax, Q, P, S, up, us), want, rtol=0, atol=8 * EPS * np.abs(Q).max())


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_reproduces_a_bilinear_function(P_ax, S_ax, Q, up, us):
    a, b, c, d = 3.0, 2e-9, 0.7, 1e-12
    f = lambda P, S: a + b * P + c * S + d * P * S  # noqa: E731
    Qf = f(P_ax[None, :], S_ax[:, None])
    P = RNG.uniform(P_ax[0], P_ax[-1], 300)
    S = RNG.uniform(S_ax[0], S_ax[-1], 300)
    # Bilinear interpolation is exact for this function; rounding only (values ~1e3..1e5).
    np.testing.assert_allclose(_bl(P_ax, S_ax, Qf, P, S, up, us), f(P, S), rtol=1e-13)


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_clipping(P_ax, S_ax, Q, up, us):
    P = np.array([-1e12, P_ax[-1] * 3, -5.0, P_ax[-1] + 1.0])
    S = np.array([S_ax[0] - 1e4, S_ax[-1] + 1e4, S_ax[-1] + 1.0, -1e9])
    want = np.array([Q[0, 0], Q[-1, -1], Q[-1, 0], Q[0, -1]])
    assert np.array_equal(_bl(P_ax, S_ax, Q, P, S, up, us), want)
    # clipping one coordinate only: the other is still interpolated
    s_mid = 0.5 * (S_ax[2] + S_ax[3])
    got = _bl(P_ax, S_ax, Q, np.array([-1.0]), np.array([s_mid]), up, us)[0]
    assert got == pytest.approx(0.5 * (Q[2, 0] + Q[3, 0]), rel=4 * EPS)


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_grad_is_the_cell_slope(P_ax, S_ax, Q, up, us):
    fP = jax.jit(jax.grad(lambda P, S: lookup.bilinear(P_ax, S_ax, Q, P, S, up, us), argnums=0))
    fS = jax.jit(jax.grad(lambda P, S: lookup.bilinear(P_ax, S_ax, Q, P, S, up, us), argnums=1))
    for _ in range(30):
        i = RNG.integers(0, P_ax.size - 1)
        j = RNG.integers(0, S_ax.size - 1)
        tp, ts = RNG.uniform(0.05, 0.95, 2)
        P = P_ax[i] + tp * (P_ax[i + 1] - P_ax[i])
        S = S_ax[j] + ts * (S_ax[j + 1] - S_ax[j])
        ts_exact = (S - S_ax[j]) / (S_ax[j + 1] - S_ax[j])
        tp_exact = (P - P_ax[i]) / (P_ax[i + 1] - P_ax[i])
        dP = ((1 - ts_exact) * (Q[j, i + 1] - Q[j, i]) + ts_exact * (Q[j + 1, i + 1] - Q[j + 1, i])) / (P_ax[i + 1] - P_ax[i])
        dS = ((1 - tp_exact) * (Q[j + 1, i] - Q[j, i]) + tp_exact * (Q[j + 1, i + 1] - Q[j, i + 1])) / (S_ax[j + 1] - S_ax[j])
        gP, gS = float(fP(P, S)), float(fS(P, S))
        assert np.isfinite(gP) and np.isfinite(gS)
        # Differences of O(1e3) values divided by the cell width: relative rounding ~1e-13.
        assert gP == pytest.approx(dP, rel=1e-11, abs=1e-12 * abs(Q).max() / (P_ax[i + 1] - P_ax[i]))
        assert gS == pytest.approx(dS, rel=1e-11, abs=1e-12 * abs(Q).max() / (S_ax[j + 1] - S_ax[j]))
    # Outside the table the value is constant: zero derivative.
    assert float(fP(P_ax[-1] * 2, S_ax[3])) == 0.0
    assert float(fS(P_ax[2], S_ax[0] - 10.0)) == 0.0


def test_uniform_and_searchsorted_agree_bitwise():
    P = RNG.uniform(-1e10, 1.6e11, 2000)
    S = RNG.uniform(100.0, 3300.0, 2000)
    P = np.r_[P, P_U]
    S = np.r_[S, S_U[RNG.integers(0, S_U.size, P_U.size)]]
    a = _bl(P_U, S_U, Q_U, P, S, True, True)
    b = _bl(P_U, S_U, Q_U, P, S, False, False)
    assert np.array_equal(a, b)


def test_uniform_index_on_a_quasi_uniform_axis():
    # Nodes perturbed by up to 0.2 cell: still "uniform" for the arithmetic index, exact.
    n = 40
    ax = np.linspace(0.0, 1.0, n) + RNG.uniform(-0.2, 0.2, n) / (n - 1)
    ax[0], ax[-1] = 0.0, 1.0
    assert is_uniform(ax)
    x = np.r_[RNG.uniform(-0.1, 1.1, 5000), ax]
    ia, ta = _locate(ax, x, True)
    ib, tb = _locate(ax, x, False)
    assert np.array_equal(np.asarray(ia), np.asarray(ib)) and np.array_equal(np.asarray(ta), np.asarray(tb))
    assert not is_uniform(np.r_[0.0, 0.6, 0.7, 1.0])


def test_any_batch_shape():
    P = RNG.uniform(0, 1.5e11, (3, 4, 5))
    S = RNG.uniform(200, 3200, (3, 4, 5))
    got = _bl(P_U, S_U, Q_U, P, S, True, True)
    assert got.shape == (3, 4, 5)
    np.testing.assert_array_equal(got.ravel(), _bl(P_U, S_U, Q_U, P.ravel(), S.ravel(), True, True))
    # broadcasting a scalar P against an S array
    assert _bl(P_U, S_U, Q_U, 1e10, S[0], True, True).shape == (4, 5)
    # jit + vmap compose
    f = jax.jit(jax.vmap(lambda p, s: lookup.bilinear(P_U, S_U, Q_U, p, s, True, True)))
    # A different XLA program may contract to FMA differently: agree to a few ulp.
    np.testing.assert_allclose(np.asarray(f(P, S)), got, rtol=4 * EPS)


def test_interp1d_value_slope_and_clipping():
    xp = np.sort(RNG.random(20)) * 1e11
    fp = RNG.random(20) * 1000.0
    # exact at nodes
    assert np.array_equal(np.asarray(_interp1d(xp, fp, xp, False)), fp)
    # matches numpy.interp (which also clips) to rounding
    x = RNG.uniform(-1e10, 1.2e11, 1000)
    np.testing.assert_allclose(np.asarray(_interp1d(xp, fp, x, False)), np.interp(x, xp, fp), rtol=0,
                               atol=4 * EPS * fp.max())
    val, slope = _interp1d_slope(xp, fp, x, False)
    val, slope = np.asarray(val), np.asarray(slope)
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, 18)
    seg = (fp[i + 1] - fp[i]) / (xp[i + 1] - xp[i])
    inside = (x >= xp[0]) & (x <= xp[-1])
    np.testing.assert_allclose(slope[inside], seg[inside], rtol=1e-14)
    assert np.all(slope[~inside] == 0.0)
    # slope == jax.grad of the interpolant (also outside: zero)
    g = jax.jit(jax.vmap(jax.grad(lambda x: lookup.interp1d(xp, fp, x))))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), slope, rtol=1e-12, atol=0)


def test_interp1d_uniform_flag():
    xp = np.linspace(0, 1.5e11, 151)
    fp = np.sqrt(xp + 1.0)
    x = RNG.uniform(-1e9, 1.6e11, 3000)
    a = _interp1d_slope(xp, fp, x, True)
    b = _interp1d_slope(xp, fp, x, False)
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and np.array_equal(np.asarray(a[1]), np.asarray(b[1]))


@pytest.mark.parametrize("P_ax,S_ax,Q,up,us", GRIDS)
def test_cell_bounds_are_the_located_cell(P_ax, S_ax, Q, up, us):
    # cell_bounds returns the clipped query and the end points axis[i], axis[i + 1] of the
    # cell locate() finds; any estimate factor close to (n - 1)/(hi - lo) gives that cell.
    x = np.r_[RNG.uniform(P_ax[0] - 1e10, P_ax[-1] + 1e10, 3000), P_ax]
    cb = jax.jit(lookup.cell_bounds, static_argnums=2)
    xc, i, x0, x1 = (np.asarray(a) for a in cb(P_ax, x, up))
    cell = _locate(P_ax, x, up)
    assert np.array_equal(i, np.asarray(cell.i))
    assert np.array_equal(x0, P_ax[i]) and np.array_equal(x1, P_ax[i + 1])
    assert np.array_equal(xc, np.clip(x, P_ax[0], P_ax[-1]))
    assert np.all((x0 <= xc) & (xc <= x1))
    if up:
        inv = (P_ax.size - 1) / (P_ax[-1] - P_ax[0])
        for f in (1.0 - 1e-12, 1.0 + 1e-12):
            assert np.array_equal(np.asarray(cb(P_ax, x, True, inv * f)[1]), i)


def test_take_rows_shapes():
    a = np.arange(12.0).reshape(6, 2)
    idx = np.array([[0, 5], [3, 3], [1, 2]])
    got = np.asarray(jax.jit(lookup.take_rows)(a, idx))
    assert got.shape == (3, 2, 2) and np.array_equal(got, a[idx])
    v = np.arange(7.0)
    assert np.array_equal(np.asarray(jax.jit(lookup.take_rows)(v, np.array(4))), 4.0)
