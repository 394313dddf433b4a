"""JitPair (compile once, count everything) and the banded Jacobian by colored JVPs."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

from aragog.programs._jacobian import banded_jacobian, dense_jacobian  # private: the solver's Jacobian builders
from aragog.solver.backends import (
    BandConverter,
    band_to_dense,
    dense_to_band,
)
from aragog.solver import JitPair

# the pairs here compile the tests' own JAX functions of their own JAX arrays, and the bound
# calls (rhs_into, jac_into, scalar_fn) run in the caller's x64 mode as the solver's do: float64
# as a user does it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

# Jacobians computed by colored forward-mode products and by jacfwd execute the same
# floating-point operations per entry (one tangent propagation each), so they agree to
# rounding: 1e-14 relative to the largest entry is a strict bound.
EXACT = 1e-14


def stencil(y, k, s):
    """Nonlinear tridiagonal stencil plus one coupling of row 0 to y[2] (ml = 1, mu = 2)."""
    n = y.shape[0]
    left = jnp.concatenate([y[:1], y[:-1]])
    right = jnp.concatenate([y[1:], y[-1:]])
    f = k * (jnp.sin(left) - 2.0 * y * jnp.exp(0.1 * y) + right**3) - s * y**2
    if n >= 3:
        f = f.at[0].add(jnp.tanh(y[2]) * y[0])
    return f


def rhs(t, y, args, *, power=1.0):
    """An ODE right-hand side with traced args; ``power`` is a static option."""
    return stencil(y, args["k"], args["s"]) * (1.0 + t) ** power + args["heat"]


def make_args(n, rng, scale=1.0):
    return {
        "k": jnp.asarray(0.7 * scale),
        "s": jnp.asarray(rng.uniform(0.5, 1.5, n)),
        "heat": jnp.asarray(rng.normal(size=n) * scale),
    }


def rel_err(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(np.asarray(b))), 1e-300)


# --------------------------------------------------------------------------- jacobian.py
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 40])
def test_banded_equals_dense(n):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n)
    k, s = 1.3, rng.uniform(0.5, 2.0, n)
    ml, mu = 1, 2
    band = jax.jit(banded_jacobian(stencil, ml, mu))(y, k, s)
    dense = jax.jit(dense_jacobian(stencil))(y, k, s)
    assert band.shape == (ml + mu + 1, n)
    assert rel_err(band_to_dense(np.asarray(band), ml, mu), dense) <= EXACT
    # and jacrev gives the same dense matrix
    dense_rev = jax.jit(dense_jacobian(stencil, mode="rev"))(y, k, s)
    assert rel_err(dense_rev, dense) <= EXACT


def test_banded_wider_band_than_needed_is_exact():
    """True widths (1, 2) inside declared (2, 3): still exact, extra diagonals are zero."""
    rng = np.random.default_rng(1)
    n = 12
    y = rng.normal(size=n)
    s = np.ones(n)
    band = np.asarray(jax.jit(banded_jacobian(stencil, 2, 3))(y, 0.4, s))
    dense = np.asarray(jax.jit(dense_jacobian(stencil))(y, 0.4, s))
    assert rel_err(band_to_dense(band, 2, 3), dense) <= EXACT


def test_band_storage_layout():
    """band[mu + i - j, j] == J[i, j]; outside the matrix zero; equals scipy's DIA data."""
    rng = np.random.default_rng(2)
    n, ml, mu = 6, 1, 2
    J = rng.normal(size=(n, n))
    i, j = np.indices((n, n))
    J[(i - j > ml) | (j - i > mu)] = 0.0
    band = dense_to_band(J, ml, mu)
    for a in range(n):
        for b in range(n):
            if -mu <= a - b <= ml:
                assert band[mu + a - b, b] == J[a, b]
    assert band[0, 0] == 0.0 and band[0, 1] == 0.0 and band[-1, -1] == 0.0
    np.testing.assert_array_equal(band_to_dense(band, ml, mu), J)
    dia = scipy.sparse.dia_matrix((band, [mu - d for d in range(ml + mu + 1)]), shape=(n, n))
    np.testing.assert_array_equal(dia.toarray(), J)
    conv = BandConverter(n, ml, mu)
    dense = conv.new_dense()
    conv.to_dense_into(band, dense)
    np.testing.assert_array_equal(dense, J)
    back = np.full((ml + mu + 1, n), np.nan)
    conv.to_band_into(J, back)
    np.testing.assert_array_equal(back, band)


def test_band_helpers_reject_bad_shapes():
    with pytest.raises(ValueError):
        band_to_dense(np.zeros((3, 4)), 1, 2)
    with pytest.raises(ValueError):
        dense_to_band(np.zeros((3, 4)), 1, 1)
    with pytest.raises(ValueError):
        banded_jacobian(stencil, -1, 0)


# --------------------------------------------------------------------------- JitPair
N = 9


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(0)
    fn = functools.partial(rhs, power=2.0)
    extra = {
        "diagnostics": lambda t, y, args: {"sum": jnp.sum(y), "flux": args["k"] * y[1:] - y[:-1]},
        "event": lambda t, y, args: y[0] - args["k"],
    }
    return JitPair(fn, N, make_args(N, rng), ml=1, mu=2, extra=extra)


def test_counters_one_trace_one_compile(pair):
    rng = np.random.default_rng(5)
    pair.reset_call_counters()
    for i in range(20):
        args = make_args(N, rng, scale=1.0 + i)
        y = rng.normal(size=N)
        pair.rhs(0.1 * i, y, args)
        pair.jac(0.1 * i, y, args)
        bound = pair.bind(args)
        bound.rhs_into(0.2, y, np.empty(N))
        bound.jac_into(0.2, y, np.empty((4, N)))
    stats = pair.stats
    for name in ("rhs", "jac", "diagnostics", "event"):
        assert stats[name]["traces"] == 1, (name, stats[name])
        assert stats[name]["compiles"] == 1, (name, stats[name])
        assert stats[name]["trace_seconds"] > 0.0 and stats[name]["compile_seconds"] > 0.0
    assert stats["rhs"]["calls"] == 40 and stats["jac"]["calls"] == 40
    assert stats["rhs"]["call_seconds"] > 0.0
    pair.reset_call_counters()
    assert pair.stats["rhs"]["calls"] == 0 and pair.stats["rhs"]["traces"] == 1


def test_results_equal_plain_jit(pair):
    rng = np.random.default_rng(6)
    ref = jax.jit(functools.partial(rhs, power=2.0))
    ref_jac = jax.jit(jax.jacfwd(functools.partial(rhs, power=2.0), argnums=1))
    for i in range(3):
        args = make_args(N, rng, scale=0.5 + i)
        y = rng.normal(size=N)
        t = 0.3 * i
        out = pair.rhs(t, y, args)
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
        # same XLA operations on the same inputs: identical up to fusion-order rounding
        np.testing.assert_allclose(out, np.asarray(ref(t, y, args)), rtol=1e-14, atol=1e-14)
        band = pair.jac(t, y, args)
        assert band.shape == (4, N)
        assert rel_err(band_to_dense(band, 1, 2), ref_jac(t, y, args)) <= EXACT
        bound = pair.bind(args)
        buf = np.empty(N)
        bound.rhs_into(t, y, buf)
        np.testing.assert_array_equal(buf, out)
        jbuf = np.empty((4, N))
        bound.jac_into(t, y, jbuf)
        np.testing.assert_array_equal(jbuf, band)


def test_reused_pair_matches_fresh_pair(pair):
    """No stale closure: new args values give what a freshly built pair gives."""
    rng = np.random.default_rng(7)
    args = make_args(N, rng, scale=3.0)
    y = rng.normal(size=N)
    fresh = JitPair(functools.partial(rhs, power=2.0), N, args, ml=1, mu=2)
    np.testing.assert_array_equal(pair.rhs(0.4, y, args), fresh.rhs(0.4, y, args))
    np.testing.assert_array_equal(pair.jac(0.4, y, args), fresh.jac(0.4, y, args))


def test_dense_mode_equals_banded(pair):
    rng = np.random.default_rng(8)
    args = make_args(N, rng)
    dense_pair = JitPair(functools.partial(rhs, power=2.0), N, args, ml=1, mu=2, jacobian="dense")
    assert dense_pair.jac_layout == "dense"
    y = rng.normal(size=N)
    dense = dense_pair.jac(0.7, y, args)
    assert dense.shape == (N, N)
    assert rel_err(band_to_dense(pair.jac(0.7, y, args), 1, 2), dense) <= EXACT
    out = np.empty((N, N))
    dense_pair.bind(args).jac_into(0.7, y, out)
    np.testing.assert_array_equal(out, dense)


def test_extra_programs(pair):
    rng = np.random.default_rng(9)
    args = make_args(N, rng)
    y = rng.normal(size=N)
    diag = pair.call("diagnostics", 0.0, y, args)
    assert set(diag) == {"sum", "flux"}
    np.testing.assert_allclose(diag["sum"], y.sum(), rtol=1e-14)
    np.testing.assert_allclose(diag["flux"], float(args["k"]) * y[1:] - y[:-1], rtol=1e-14, atol=1e-15)
    bound = pair.bind(args)
    g = bound.scalar_fn("event")
    assert g(0.0, y) == pytest.approx(y[0] - float(args["k"]), abs=1e-15)
    assert bound.call("diagnostics", 0.0, y)["sum"] == pytest.approx(y.sum(), rel=1e-14)
    with pytest.raises(ValueError, match="no program named"):
        pair.call("nope", 0.0, y, args)


def test_mismatched_args_raise_clear_errors(pair):
    rng = np.random.default_rng(10)
    args = make_args(N, rng)
    y = rng.normal(size=N)
    bad_shape = dict(args, s=jnp.ones(N + 1))
    with pytest.raises(ValueError, match=r"\['s'\] has shape \(10,\).*\(9,\)"):
        pair.rhs(0.0, y, bad_shape)
    with pytest.raises(ValueError, match="shape"):
        pair.bind(bad_shape)
    with pytest.raises(ValueError, match="structure"):
        pair.rhs(0.0, y, {"k": args["k"], "s": args["s"]})
    with pytest.raises(ValueError, match="structure"):
        pair.bind(dict(args, extra=1.0))
    with pytest.raises(ValueError, match="dtype"):
        pair.rhs(0.0, y, dict(args, k=jnp.asarray(1.0 + 2.0j)))
    with pytest.raises(ValueError, match=r"y has shape \(8,\)"):
        pair.rhs(0.0, y[:-1], args)
    # Python scalars and integer arrays are cast safely to the compiled float64 leaves
    same = pair.rhs(0.0, y, dict(args, k=float(args["k"])))
    np.testing.assert_array_equal(same, pair.rhs(0.0, y, args))
    ints = dict(args, heat=np.arange(N))
    np.testing.assert_array_equal(
        pair.rhs(0.0, y, ints), pair.rhs(0.0, y, dict(args, heat=np.arange(N, dtype=float)))
    )


def test_bad_construction():
    rng = np.random.default_rng(11)
    args = make_args(4, rng)
    with pytest.raises(ValueError, match="shape"):
        JitPair(lambda t, y, a: y[:-1], 4, args, 1, 1)
    with pytest.raises(ValueError, match="reserved"):
        JitPair(functools.partial(rhs), 4, args, 1, 2, extra={"jac": lambda t, y, a: y})
    with pytest.raises(ValueError, match="jacobian"):
        JitPair(functools.partial(rhs), 4, args, 1, 2, jacobian="sparse")


def test_batched_program_evaluates_every_state_once_per_chunk():
    """A batched extra program (``batched={name: C}``) evaluated at K states by
    ``BoundPair.call_many``: ceil(K/C) compiled calls whatever K (one compile, one trace),
    each state's result that of the one-state function (the same arithmetic, vectorised by
    XLA: 1e-14 relative; a padding row or a shifted state would be off by O(1)), K = 0
    gives empty outputs; a one-state call of it, a batch that is not an extra and a chunk
    size below 1 are refused with messages that say so."""
    rng = np.random.default_rng(21)
    args = make_args(N, rng)

    def diag(t, y, a):
        return {"sum": jnp.sum(y) * (1.0 + t), "flux": a["k"] * y[1:] - y[:-1]}

    batched = JitPair(functools.partial(rhs), N, args, 1, 2, lazy=True, extra={"diag": diag}, batched={"diag": 4})
    assert batched.batched_programs == {"diag": 4}
    bound = batched.bind(args)
    calls = 0
    for k in (1, 3, 4, 5, 11, 0):
        t = rng.uniform(0.0, 2.0, k)
        y = rng.normal(size=(k, N))
        out = bound.call_many("diag", t, y)
        calls += max(1, -(-k // 4))
        assert out["sum"].shape == (k,) and out["flux"].shape == (k, N - 1)
        if k:
            np.testing.assert_allclose(out["sum"], y.sum(axis=1) * (1.0 + t), rtol=1e-14)
            np.testing.assert_allclose(out["flux"], float(args["k"]) * y[:, 1:] - y[:, :-1], rtol=1e-14, atol=1e-15)
    stats = batched.stats["diag"]
    assert stats["calls"] == calls and stats["traces"] == 1 and stats["compiles"] == 1
    with pytest.raises(ValueError, match="batched.*call_many"):
        bound.call("diag", 0.0, np.zeros(N))
    with pytest.raises(ValueError, match="batched.*call_many"):
        batched.call("diag", 0.0, np.zeros(N), args)
    with pytest.raises(ValueError, match="not batched"):
        bound.call_many("rhs", np.zeros(2), np.zeros((2, N)))
    with pytest.raises(ValueError, match="'nope' is not an extra"):
        JitPair(functools.partial(rhs), N, args, 1, 2, extra={"diag": diag}, batched={"nope": 4})
    with pytest.raises(ValueError, match="chunk size >= 1"):
        JitPair(functools.partial(rhs), N, args, 1, 2, extra={"diag": diag}, batched={"diag": 0})


def test_lazy_compiles_on_first_use():
    rng = np.random.default_rng(12)
    args = make_args(5, rng)
    lazy = JitPair(functools.partial(rhs), 5, args, 1, 2, lazy=True,
                   extra={"diag": lambda t, y, a: jnp.sum(y)})
    assert all(s["compiles"] == 0 and s["traces"] == 0 for s in lazy.stats.values())
    lazy.rhs(0.0, np.ones(5), args)
    assert lazy.stats["rhs"]["compiles"] == 1 and lazy.stats["jac"]["compiles"] == 0
    lazy.compile()
    assert all(s["compiles"] == 1 and s["traces"] == 1 for s in lazy.stats.values())


@pytest.mark.parametrize("pack_max", [0, 1, 4096])
def test_packing_of_args_is_transparent(pack_max):
    """Small leaves packed per dtype, big ones passed as they are: same numbers either way."""
    rng = np.random.default_rng(13)
    n = 6

    def fn(t, y, args):
        table = args["table"]  # (50, 50): above pack_max=1 and 0, below 4096
        idx = args["index"]  # int64 scalar
        return y * args["scale"] + table[idx, :n] * args["flags"].astype(y.dtype) + t

    args = {
        "scale": 2.0,
        "table": rng.normal(size=(50, 50)),
        "index": np.int64(3),
        "flags": np.array([True, False, True, True, False, True]),
    }
    pair = JitPair(fn, n, args, 0, 0, pack_max=pack_max)
    y = rng.normal(size=n)
    expected = y * 2.0 + args["table"][3, :n] * args["flags"] + 0.5
    np.testing.assert_allclose(pair.rhs(0.5, y, args), expected, rtol=1e-15)
    out = np.empty(n)
    pair.bind(dict(args, index=np.int64(7))).rhs_into(0.5, y, out)
    np.testing.assert_allclose(out, y * 2.0 + args["table"][7, :n] * args["flags"] + 0.5, rtol=1e-15)
    assert pair.stats["rhs"]["traces"] == 1


def test_pair_without_args():
    pair = JitPair(lambda t, y, args: -y, 3, (), 0, 0)
    np.testing.assert_array_equal(pair.rhs(0.0, np.ones(3), ()), -np.ones(3))
    band = np.empty((1, 3))
    pair.bind(()).jac_into(0.0, np.ones(3), band)
    np.testing.assert_array_equal(band, -np.ones((1, 3)))
