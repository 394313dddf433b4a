"""The solver's public, read-only surface (refactoring issue, part 3): accessors for the
compiled programs, inputs and options; the last solve as a frozen record; "initial" stats
shaped like every program's; no module-level import of ``aragog.io`` in ``aragog.solver``;
no private solver state read by ``tools/``."""

from __future__ import annotations

import ast
import dataclasses
import re

import numpy as np
import pytest

from aragog import EntropySolver, load_config
from aragog.solver import JitPair
from aragog.solver import LastSolve

from conftest import REPO
from _configs import TOY_EARTH

SOLVER_DIR = REPO / "src" / "aragog" / "solver"
TOOLS_DIR = REPO / "tools"
PRIVATE = ("_pair", "_inputs", "_options", "_build_pair")


@pytest.fixture(scope="module")
def solved():
    params = load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 12, "solver.end_time": 1.0})
    solver = EntropySolver(params)
    solver.initialize()
    solver.solve()
    return solver


def test_accessors_before_reset_are_none():
    solver = EntropySolver(load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 12}))
    assert solver.programs is None and solver.inputs is None and solver.options is None


def test_accessors_are_the_solver_state_and_read_only(solved):
    assert solved.programs is solved._pair and isinstance(solved.programs, JitPair)
    assert solved.inputs is solved._inputs and solved.options is solved._options
    assert int(solved.inputs.mesh.number_of_cells) == solved.n_cells == 11
    for name in ("programs", "inputs", "options"):
        prop = getattr(EntropySolver, name)
        assert isinstance(prop, property) and prop.fset is None and prop.__doc__
        with pytest.raises(AttributeError):
            setattr(solved, name, None)
    assert solved.programs is solved._pair  # nothing changed


def test_fresh_programs_are_new_and_unused(solved):
    pair = solved.fresh_programs("dense")
    assert isinstance(pair, JitPair) and pair is not solved.programs
    assert pair.jacobian == "dense" and pair.n == solved.programs.n
    assert solved.programs.jacobian == "banded"
    assert EntropySolver.fresh_programs.__doc__


def test_last_solve_is_a_frozen_record(solved):
    last = solved._last
    assert isinstance(last, LastSolve) and dataclasses.is_dataclass(last)
    assert {f.name for f in dataclasses.fields(last)} == {"status", "message", "t0", "t_final", "y", "result",
                                                         "wall"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        last.status = 1
    sp = solved.parameters.solver
    assert last.status == 0 and isinstance(last.message, str)
    assert last.t0 == float(sp.start_time) and last.t_final == pytest.approx(float(sp.end_time))
    assert last.result is solved.integration_result and last.result is not None
    assert last.wall > 0.0 and np.array_equal(last.y, solved._y0())
    out = solved.get_state()
    assert out.status == last.status and out.message == last.message
    assert out.dt_actual == pytest.approx(last.t_final - last.t0)


def test_not_integrated_record():
    rec = LastSolve.not_integrated(3.0)
    assert (rec.status, rec.message, rec.t0, rec.t_final, rec.result, rec.wall) == (
        0, "not integrated yet", 3.0, 3.0, None, 0.0)


def test_initial_stats_have_the_keys_of_every_program(solved):
    stats = solved.jit_stats
    initial = stats["initial"]
    assert initial["source"] == "numpy" and initial["calls"] >= 1
    assert initial["traces"] + initial["compiles"] + initial["loads"] == 0
    for name, entry in stats.items():
        assert set(entry) == set(initial), name


def _module_level_imports(tree: ast.Module):
    """Import statements not inside a function (class bodies and ``if`` blocks count)."""
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                found.append(base)
                found.extend(f"{base}.{alias.name}" for alias in child.names)
            visit(child)

    visit(tree)
    return found


def test_solver_imports_no_io_at_module_level():
    files = sorted(SOLVER_DIR.rglob("*.py"))
    assert files
    for path in files:
        names = _module_level_imports(ast.parse(path.read_text(), filename=str(path)))
        bad = [n for n in names if n == "aragog.io" or n.startswith("aragog.io.")]
        assert not bad, f"{path.relative_to(REPO)} imports {bad} at module level"


def test_tools_read_no_private_solver_state():
    pattern = re.compile(r"\.(" + "|".join(PRIVATE) + r")\b")
    files = sorted(TOOLS_DIR.glob("*.py"))
    assert files
    for path in files:
        text = path.read_text()
        hits = [f"{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
        assert not hits, f"{path.relative_to(REPO)} reads private solver state:\n" + "\n".join(hits)
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Attribute):
                assert node.attr not in PRIVATE, f"{path.relative_to(REPO)}:{node.lineno} .{node.attr}"
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr"):
                args = node.args[1:2]
                if args and isinstance(args[0], ast.Constant):
                    assert args[0].value not in PRIVATE, f"{path.relative_to(REPO)}:{node.lineno}"


def test_entropy_outside_the_tables_is_refused(solved, tmp_path):
    """An initial entropy outside the EOS tables (where every property is held at the
    table's edge) is refused by the API and by the config alike, with one line naming the
    cells, the values and the range; the state is unchanged. Before, -100 J/kg/K in every
    cell returned status 0 after 7 steps, and 1e9 after 197,386 steps."""

    from aragog.errors import ConfigError

    lo, hi = solved._inputs.eos.entropy_range()
    assert (lo, hi) == (0.0, 3700.0)  # the bundled tables' S axes
    before = solved.get_state().S_final.copy()
    for value in (-100.0, 1e9):
        with pytest.raises(ConfigError, match=r"set_initial_entropy\): cells 0-10 of 11 have S = .*outside the "
                                              r"EOS tables' entropy range \[0, 3700\] J/kg/K"):
            solved.set_initial_entropy(value)
    S = before.copy()
    S[[2, 3, 5]] = 5000.0
    with pytest.raises(ConfigError, match=r"cells 2-3, 5 of 11 have S = 5000\.\.5000 J/kg/K"):
        solved.set_initial_entropy(S)
    np.testing.assert_array_equal(solved.get_state().S_final, before)
    profile = tmp_path / "S.txt"
    np.savetxt(profile, np.full(7, 4000.0))
    bad = EntropySolver(load_config(TOY_EARTH, overrides={
        "mesh.number_of_nodes": 8, "initial_condition.initial_condition": 2,
        "initial_condition.init_file": str(profile)}))
    with pytest.raises(ConfigError, match=r"initial_condition = 2\): cells 0-6 of 7 have S = 4000"):
        bad.initialize()
    # a state at the edge is accepted, and so is one within the band beyond it (1e-6 of the
    # span: 3.7e-3 J/kg/K here), not one just past the band (tests/test_table_edge.py has the solves)
    solved.set_initial_entropy(np.full(11, hi))
    solved.set_initial_entropy(np.full(11, hi + 3.6e-3))
    with pytest.raises(ConfigError, match="outside the EOS tables' entropy range"):
        solved.set_initial_entropy(np.full(11, hi + 3.8e-3))
    solved.set_initial_entropy(before)


def test_clear_caches_empties_the_in_memory_programs(solved):
    """``aragog.clear_caches()``: a solver of a key already compiled in this process takes
    the shared programs (no trace); after the call the next one builds them again (compiles
    them, or loads them from the persistent store: the suite's shared one, tests/conftest.py;
    never from memory), the probe's program too, and the bundled tables are read again
    (equal values)."""
    import aragog
    from aragog import eos
    from aragog.probe import probe_initial_state

    params = solved.parameters
    again = EntropySolver(params)
    again.initialize()
    assert again.jit_stats["rhs"]["traces"] == 0
    tables = eos.default_table_set()
    aragog.clear_caches()
    fresh = EntropySolver(params)
    fresh.initialize()
    fresh.solve()
    rhs = fresh.jit_stats["rhs"]
    assert rhs["compiles"] + rhs["loads"] == 1 and rhs["source"] in ("compiled", "disk"), rhs
    assert probe_initial_state(params).summary()
    reread = eos.default_table_set()
    assert reread is not tables and np.array_equal(reread.melt.T, tables.melt.T)


def test_validate_and_run_start_from_the_same_state(solved):
    """``aragog validate``'s probe makes the initial state by the solver's own algorithm
    (the one NumPy inversion for an isentrope): the same entropy, bit for bit."""
    from aragog.probe import probe_initial_state

    fresh = EntropySolver(solved.parameters)
    fresh.initialize()
    S = fresh.get_state().S_final
    probe = probe_initial_state(solved.parameters)
    assert probe.S_range == (float(S.min()), float(S.max()))


def test_max_step_growth_reaches_cvode(monkeypatch):
    """``solver.max_step_growth`` is what the solver hands CVODE (``integrate``'s
    ``max_step_growth``; tests/test_backends.py checks CVODE keeps every step ratio under
    it); the default is 2 (CVODE's own is 10)."""
    import aragog.solver._entropy_solver as entropy_solver  # private: the solver's call of integrate

    seen = []
    real = entropy_solver.integrate

    def spy(*args, **kw):
        seen.append(kw.get("max_step_growth"))
        return real(*args, **kw)

    monkeypatch.setattr(entropy_solver, "integrate", spy)
    for over, expected in (({}, 2.0), ({"solver.max_step_growth": 10.0}, 10.0)):
        params = load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 12, "solver.end_time": 1.0, **over})
        solver = EntropySolver(params)
        solver.initialize()
        solver.solve()
        assert solver.get_state().status == 0
        assert seen[-1] == expected


def test_state_api_reads_what_the_setters_and_the_solve_wrote():
    """The public state accessors (what the upstream adapter drives the solver with,
    docs/compat.md): ``initialize(initial_state=False)`` builds without a state; ``state()``
    returns exactly what was set, then what the solve ended with; ``last_trajectory()``'s
    last row is that state; ``diagnostics()`` is the evaluation ``get_state`` made."""
    from aragog.solver import SolverStateError

    solver = EntropySolver(load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 12, "solver.end_time": 1.0}))
    solver.initialize(initial_state=False)
    assert solver.entropy is None and solver.time is None and solver.solve_status is None
    assert solver.last_trajectory() is None
    with pytest.raises(SolverStateError, match="no state"):
        solver.state()
    S0 = np.linspace(2600.0, 2700.0, solver.n_cells)
    solver.set_initial_entropy(S0)
    solver.set_initial_dSdr_cmb(-1.0e-4)
    S, slot = solver.state()
    np.testing.assert_array_equal(S, S0)
    assert slot == -1.0e-4 and solver.time == 0.0
    S[0] = 0.0
    solver.entropy[1] = 0.0
    np.testing.assert_array_equal(solver.entropy, S0)  # copies: the state is not changed through them

    solver.solve()
    out = solver.get_state()
    status, message = solver.solve_status
    assert (status, message) == (out.status, out.message) and status == 0
    t, S_rows, slots = solver.last_trajectory()
    S_end, slot_end = solver.state()
    assert t.shape == (S_rows.shape[0],) and S_rows.shape[1] == solver.n_cells and slots.shape == t.shape
    np.testing.assert_array_equal(S_rows[-1], S_end)
    assert t[-1] == solver.time == 1.0 and slots[-1] == slot_end == out.dSdr_cmb
    np.testing.assert_array_equal(out.S_final, S_end)
    d = solver.diagnostics()
    assert d is solver.diagnostics()  # one evaluation of an unchanged state
    np.testing.assert_array_equal(np.asarray(d.T), out.T_stag)
    solver.initialize(initial_state=False)
    assert solver.entropy is None and solver.solve_status is None and solver.last_trajectory() is None


def test_reset_compression_work_is_the_next_solves_compression_term():
    """``reset_compression_work()`` is the work Σ m (h(P_new, S) − h(P_old, S)) of the mesh
    change made by the last reset, with the entropy the solve before it ended with: 0 while
    the mesh stays, and exactly the next solve's ``step_dE_compression_J`` (the same function
    of the same record and inputs) after a change of radius."""
    params = load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 12, "solver.end_time": 1.0})
    solver = EntropySolver(params)
    solver.initialize()
    assert solver.reset_compression_work() == 0.0  # no solve before the reset
    solver.solve()
    solver.reset()
    assert solver.reset_compression_work() == 0.0  # the same mesh
    params.mesh.outer_radius *= 1.002
    params.solver.start_time, params.solver.end_time = 1.0, 2.0
    solver.reset()
    work = solver.reset_compression_work()
    assert work != 0.0 and np.isfinite(work)
    solver.solve()
    assert solver.get_state(energy_budget=True).step_dE_compression_J == work


def test_compile_energy_budget_starts_the_powers_program(monkeypatch):
    """``compile_energy_budget=True`` adds the energy budget's program to the background
    compiles that the first reset starts (the upstream adapter asks for it: its get_state
    always reports the budget); without it the reset starts the diagnostics only."""
    from aragog import clear_caches

    started = []
    monkeypatch.setattr(JitPair, "start", lambda self, names, newton="jac": started.append(tuple(names)))
    params = load_config(TOY_EARTH, overrides={"mesh.number_of_nodes": 7, "solver.jax_cache_dir": "none"})
    for flag in (False, True):
        clear_caches()  # new programs for each: a reused pair starts nothing
        EntropySolver(params, compile_energy_budget=flag).reset()
    assert started == [("diagnostics",), ("diagnostics", "powers")]
