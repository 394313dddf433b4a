"""The first solve's shortcuts (issue 11): the initial state's EOS inversion in NumPy, the
programs compiled concurrently and in the background, per-program XLA options."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import EntropySolver, load_config, physics
# private: keyed compiles into a temporary store patched in
from aragog import _compiling as compiling, _executable_store as executable_store
from aragog.errors import AragogError
from aragog.physics._boundary import INVERSION_GRID  # private: the compiled inversion's grid size
from aragog.physics._heat_content import EnthalpyEOS  # private: the NumPy EOS the inversion runs on
from aragog.solver import _from_config  # private: the solver's config -> physics options and inputs
from aragog.eos._host import entropy_of_temperature  # private: the NumPy inversion itself
from aragog.solver import JitPair
from aragog.solver import clear_shared_programs

from _configs import TOY_EARTH

# Counts each program's traces, compiles and loads: no shared store (tests/conftest.py).
pytestmark = pytest.mark.cold_compiles

EARTH = TOY_EARTH


def _solver_inputs(overrides):
    solver = EntropySolver(load_config(EARTH, overrides=overrides))
    params = solver.parameters.validate()
    options = _from_config.physics_options(params)
    mesh = solver._derived.mesh(params)
    inputs = _from_config.physics_inputs(params, mesh, solver._derived.eos(params))
    width = None if options.constant_properties else float(inputs.material.matprop_smooth_width)
    return inputs, options, EnthalpyEOS(inputs.eos, width, options.constant_properties)


@pytest.mark.usefixtures("x64")  # the solver's physics inputs and the pure inversion, in float64 as a user calls them
@pytest.mark.parametrize("constant", [False, True])
def test_numpy_inversion_equals_the_compiled_one(constant):
    overrides = {"mesh.number_of_nodes": 12}
    if constant:
        overrides.update({"phase_mixed.const_properties": True, "phase_mixed.const_T_ref": 1600.0,
                          "phase_mixed.const_S_ref": 2000.0})
    inputs, options, eos = _solver_inputs(overrides)
    P = np.concatenate([np.asarray(inputs.mesh.P_basic), np.linspace(0.0, 140e9, 8)])
    T = np.concatenate([np.linspace(300.0, 6000.0, 24), [1500.0, 2500.0, 4000.0]])
    PP, TT = (a.ravel() for a in np.meshgrid(P, T))
    if not constant:  # targets on and around the solidus and liquidus (the phase blends)
        st = physics.material_state(jnp.asarray(P), jnp.full(P.shape, 2000.0), inputs, options)
        for dT in (-30.0, -0.5, 0.0, 0.5, 30.0):
            for edge in (np.asarray(st.T_sol), np.asarray(st.T_liq)):
                PP, TT = np.append(PP, P), np.append(TT, edge + dT)
    compiled = jax.jit(physics.surface_entropy_for_temperature, static_argnums=3)
    S_jax = np.asarray(compiled(jnp.asarray(TT), jnp.asarray(PP), inputs, options))
    S_np = np.array([entropy_of_temperature(t, p, eos) for t, p in zip(TT, PP)])
    T_back = eos(PP, S_np)[0]
    inside = np.abs(T_back - TT) <= 1e-9 * TT  # a root exists (else: the bracket end)
    assert inside.sum() > 0.8 * TT.size
    np.testing.assert_allclose(S_np[inside], S_jax[inside], rtol=1e-12, atol=0.0)
    if not constant:  # out of range: both at the end of the S range (the compiled within h/2^13)
        lo = min(eos.solid["S"][0], eos.melt["S"][0])
        hi = max(eos.solid["S"][-1], eos.melt["S"][-1])
        h = (hi - lo) / (INVERSION_GRID - 1)
        assert np.all(np.isin(S_np[~inside], [lo, hi]))
        np.testing.assert_allclose(S_np[~inside], S_jax[~inside], rtol=0.0, atol=h / 2**12)


def test_entropy_at_keeps_its_errors_and_compiles_nothing():
    clear_shared_programs()
    solver = EntropySolver(load_config(EARTH, overrides={"mesh.number_of_nodes": 12}))
    with pytest.raises(AragogError, match="call initialize"):
        solver.entropy_at(4000.0, 0.0)
    solver.initialize()
    P = float(solver._inputs.mesh.P_basic[-1])
    S = solver.entropy_at(4000.0, P)
    assert np.all(solver._S == S)  # initial_condition 1: the isentrope through 4000 K at the surface
    for bad in (np.nan, np.inf):
        with pytest.raises(AragogError, match="no entropy gives"):
            solver.entropy_at(bad, P)
    stats = solver.jit_stats["initial"]
    assert stats["traces"] == stats["compiles"] == stats["loads"] == 0
    assert stats["source"] == "numpy" and stats["calls"] == 4


def _toy_pair(**kwargs):
    def rhs(t, y, args):
        return -args["k"] * y + jnp.sin(t)

    extra = {"diagnostics": lambda t, y, args: {"sum": jnp.sum(y), "k": args["k"]}}
    return JitPair(rhs, 5, {"k": np.ones(5)}, 0, 0, extra=extra, lazy=True, **kwargs)


def test_background_compile_once_and_waited_for():
    pair = _toy_pair()
    thread = pair.compile_in_background("jac", "diagnostics")
    assert isinstance(thread, threading.Thread) and not thread.daemon
    pair.compile("rhs")
    out = pair.call("diagnostics", 0.0, np.arange(5.0), {"k": np.full(5, 2.0)})  # waits for the thread
    assert float(out["sum"]) == 10.0
    pair.wait_background()
    for name in ("rhs", "jac", "diagnostics"):
        s = pair.stats[name]
        assert (s["traces"], s["compiles"], s["source"]) == (1, 1, "compiled"), (name, s)
        assert s["compile_seconds"] > 0.0
    assert pair.compile_in_background("jac") is None  # nothing left to do


def test_background_compile_failure_is_raised_by_the_caller():
    def rhs(t, y, args):
        return y

    def broken(t, y, args):
        raise RuntimeError("broken program")

    pair = JitPair(rhs, 3, {"k": np.ones(1)}, 0, 0, extra={"diagnostics": broken}, lazy=True)
    pair.compile_in_background("diagnostics")
    pair.wait_background()
    with pytest.raises(RuntimeError, match="broken program"):
        pair.call("diagnostics", 0.0, np.zeros(3), {"k": np.ones(1)})


def test_compiler_options_reach_xla_and_the_store_key(tmp_path, monkeypatch):
    opts = {"xla_backend_optimization_level": 0}
    pair = _toy_pair(compiler_options={"diagnostics": opts})
    assert pair.compiler_options == {"diagnostics": opts}
    args = {"k": np.full(5, 3.0)}
    y = np.linspace(0.0, 1.0, 5)
    plain = _toy_pair()
    assert float(pair.call("diagnostics", 0.0, y, args)["sum"]) == float(plain.call("diagnostics", 0.0, y, args)["sum"])
    with pytest.raises(ValueError, match="unknown programs"):
        _toy_pair(compiler_options={"nope": opts})
    # keyed compiles with different options are different store entries (named by key:
    # counting the folder's files would also count a save by a compile thread that an
    # earlier test in this process left running while the store is patched)
    store = executable_store.ExecutableStore(tmp_path)
    monkeypatch.setattr(executable_store, "_store", [store])
    spec = [jax.ShapeDtypeStruct((3,), jnp.float64)]
    fn = lambda x: jnp.cos(x) * 2.0  # noqa: E731
    _, first = compiling.compile_keyed(fn, spec, "f", None, "toy")
    _, other = compiling.compile_keyed(fn, spec, "f", None, "toy", opts)
    _, again = compiling.compile_keyed(fn, spec, "f", None, "toy", dict(opts))
    assert (first.source, other.source, again.source) == ("compiled", "compiled", "disk")
    entries = {store._path(executable_store.full_key("toy", o)) for o in (None, opts)}
    assert len(entries) == 2 and all(path.is_file() for path in entries)
    # an option this XLA does not know: a warning, and XLA's defaults
    exe, record = compiling.compile_keyed(fn, spec, "f", None, None, {"xla_no_such_option": 1})
    assert record.source == "compiled"
    np.testing.assert_allclose(np.asarray(exe(jnp.zeros(3))), 2.0)


def test_the_optimization_level_variable_sets_the_fused_programs_level(monkeypatch):
    """$ARAGOG_XLA_OPTIMIZATION_LEVEL: unset, every fused program states XLA's full
    optimisation; set, its level reaches every program's options and the static key (so
    that a solver never takes programs of another level from the in-memory share or the
    store); anything but 0-3 is a one-line error naming the variable."""
    from aragog.errors import ConfigError
    from aragog.solver import _fused_programs  # private: the fused programs' options, built without compiling

    variable = _fused_programs.OPTIMIZATION_LEVEL_VARIABLE
    monkeypatch.delenv(variable, raising=False)
    assert _fused_programs.optimization_level() == 3
    assert _fused_programs.compiler_options() == _fused_programs.COMPILER_OPTIONS
    assert {(o["xla_backend_optimization_level"], o["xla_llvm_disable_expensive_passes"])
            for o in _fused_programs.COMPILER_OPTIONS.values()} == {(3, False)}
    solver = EntropySolver(load_config(EARTH, overrides={"mesh.number_of_nodes": 12}))
    keys = {}
    for level in ("3", "0", " 1 "):
        monkeypatch.setenv(variable, level)
        keys[level] = solver.program_key()
        with jax.enable_x64(True):  # as the solver derives its inputs
            derived = _from_config.derive(solver.parameters.validate())
            pair = _fused_programs.fused_programs(derived.options, derived.inputs)  # lazy: compiles nothing
        assert {o["xla_backend_optimization_level"] for o in pair.compiler_options.values()} == {int(level)}
        assert {o["xla_llvm_disable_expensive_passes"] for o in pair.compiler_options.values()} == {level == "0"}
    assert len(set(keys.values())) == 3
    for bad in ("fast", "4", "-1", "0.5"):
        monkeypatch.setenv(variable, bad)
        with pytest.raises(ConfigError, match=rf"^\${variable} must be 0, 1, 2 or 3 .*got '{bad}'$"):
            solver.program_key()


def test_first_solve_counts_each_program_once_and_shares_honestly():
    clear_shared_programs()
    overrides = {"mesh.number_of_nodes": 12, "solver.end_time": 1.0}
    first = EntropySolver(load_config(EARTH, overrides=overrides)).initialize()
    second = EntropySolver(load_config(EARTH, overrides=overrides)).initialize()  # same static key
    assert second._pair is first._pair
    first.solve()
    second.solve()
    a, b = first.get_state(), second.get_state()
    assert a.T_magma == b.T_magma
    for name in ("rhs", "jac", "diagnostics"):
        s1, s2 = first.jit_stats[name], second.jit_stats[name]
        assert (s1["traces"], s1["compiles"], s1["source"]) == (1, 1, "compiled"), (name, s1)
        assert (s2["traces"], s2["compiles"], s2["source"]) == (0, 0, "memory"), (name, s2)


def test_stored_is_the_same_with_x64_off(tmp_path, monkeypatch):
    """A user's process (x64 off): a program another pair stored is found without tracing.
    (Before, stored() ran outside float64, so the store key it looked up had x64 off,
    aragog._executable_store.environment_key, and it never found an entry.)"""
    monkeypatch.setattr(executable_store, "_store", [executable_store.ExecutableStore(tmp_path)])
    _toy_pair(store_key="toy-key").compile("jac")
    assert _toy_pair(store_key="toy-key").stored("jac")


def test_stored_programs_load_without_tracing(tmp_path, monkeypatch):
    monkeypatch.setattr(executable_store, "_store", [executable_store.ExecutableStore(tmp_path)])
    opts = {"jac": {"xla_cpu_use_fusion_emitters": False}}
    first = _toy_pair(store_key="toy-key", compiler_options=opts)
    assert not first.stored("jac")
    first.prepare("jac")  # traced here, compiled later
    assert first.stats["jac"]["traces"] == 1 and first.stats["jac"]["compiles"] == 0
    first.compile_in_background("jac")
    first.wait_background()
    assert first.stats["jac"]["compiles"] == 1 and first.stored("jac")
    second = _toy_pair(store_key="toy-key", compiler_options=opts)
    assert second.stored("jac") and not second.stored("rhs")
    assert not _toy_pair(store_key="toy-key").stored("jac")  # other options: another entry
    second.compile_in_background("jac")
    second.wait_background()
    s = second.stats["jac"]
    assert (s["traces"], s["compiles"], s["loads"], s["source"]) == (0, 0, 1, "disk")
    args, y = {"k": np.full(5, 2.0)}, np.arange(5.0)
    np.testing.assert_array_equal(second.jac(0.0, y, args), first.jac(0.0, y, args))
