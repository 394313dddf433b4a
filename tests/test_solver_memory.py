"""What a solver keeps between solves (aragog.solver._records; docs/solver.md, "Memory of a
long coupling loop"): the history of a coupling loop is the same as with every solve's
inputs kept, and its memory grows by the documented few floats a solve, nothing more.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

from aragog import EntropySolver, load_config
from aragog.fields import SCALAR_FIELDS
# private: one state's output fields, the reference of the history's rows
from aragog.solver._results import output_fields

from _configs import TOY_EARTH

N_NODES = 16  # 15 cells and the energy-balance slot


def _solver(**overrides):
    params = load_config(TOY_EARTH, overrides={
        "mesh.number_of_nodes": N_NODES, "solver.output_points": 9,
        "boundary_conditions.outer_boundary_condition": 4, "boundary_conditions.outer_boundary_value": 2.0e4,
        **overrides})
    solver = EntropySolver(params)
    solver.initialize()
    return solver


def _step(solver, t0: float, years: float, flux: float, radius: float | None = None, budget: bool = True):
    p = solver.parameters
    p.solver.start_time, p.solver.end_time = t0, t0 + years
    p.boundary_conditions.outer_boundary_value = flux
    if radius is not None:
        p.mesh.outer_radius = radius
    solver.reset()
    solver.solve()
    return solver.get_state(energy_budget=budget)


def test_history_of_a_coupling_loop_evaluates_each_solve_with_its_own_inputs():
    """A flux that changes every solve and a mesh that changes twice (three segments of
    earlier solves): each earlier solve's row of history() is its final state evaluated
    with the inputs of that solve, as when the solver kept every solve's inputs."""
    solver = _solver()
    R = float(solver.parameters.mesh.outer_radius)
    kept = []  # (t_final, y_final, inputs) of each solve, as the solver used to keep them
    t = 0.0
    for i in range(7):
        radius = R * (1.0 + 1e-3 * (i >= 3) + 1e-3 * (i >= 5))
        out = _step(solver, t, 50.0, 2.0e4 * (1.0 + 0.1 * i), radius)
        assert out.status == 0
        t_rec, y_rec, inp = solver._records.latest
        kept.append((float(t_rec[-1]), np.array(y_rec[-1]), inp))
        t += 50.0
    records = solver._records
    assert len(records) == 7 and len(records._segments) == 3
    history = solver.history()
    assert len(history.time) == 6 + len(records.latest[0])
    options = solver._options
    for i, (t_final, y_final, inp) in enumerate(kept[:-1]):
        d = solver._bind(inp).call("diagnostics", t_final, y_final)
        ref = output_fields(d, inp, options)
        ref.update(solver._energy.state_fields(d, inp, options))
        assert history.time[i] == t_final
        assert ref["F_surface"] == 2.0e4 * (1.0 + 0.1 * i)
        for key in SCALAR_FIELDS:
            if ref.get(key) is not None:
                assert history.scalars[key][i] == ref[key], key
    prev = records.previous_final()
    assert prev[0][0] == kept[-2][0] and np.array_equal(prev[1][0], kept[-2][1])
    for a, b in zip(_leaves(prev[2]), _leaves(kept[-2][2])):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def _leaves(tree):
    import jax

    return jax.tree_util.tree_leaves(tree)


def test_a_coupling_loop_keeps_a_few_floats_a_solve():
    """200 short coupled solves with a new surface flux each (get_state with the energy
    budget after each, as PROTEUS asks): the Python memory the solver keeps grows by what
    the history needs of a solve and nothing else.

    By design a solve leaves behind its final time and state (1 + n floats, n = 16 here),
    the input that changed (the flux: 1 float) and the energy budget's totals (10 floats):
    28 floats, 224 bytes. They are rows of arrays whose capacity doubles, so between two
    doublings up to twice that is allocated: 448 bytes a solve. The slack of 1 KB a solve
    covers the allocator's and Python's own bookkeeping (measured: about 590 bytes a solve
    in all). Before the solver kept its history compactly, each solve left its output
    arrays and its inputs behind: 20 KB a solve here (measured), 38-40 KB at 60 nodes and
    65 output times."""
    solver = _solver()
    t = 0.0
    for i in range(25):  # compile, fill the caches
        _step(solver, t, 1.0, 2.0e4 * (1.0 + 0.1 * np.sin(i)))
        t += 1.0
        if i == 19:  # background compiles (the compiled Newton solve's, from the second solve
            solver.wait_for_programs()  # on) finished, and used by the solves after
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        n = 200
        for i in range(n):
            out = _step(solver, t, 1.0, 2.0e4 * (1.0 + 0.1 * np.sin(25 + i)))
            assert out.status == 0
            t += 1.0
        del out
        gc.collect()
        growth = (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()
    by_design = 2 * 8 * (1 + N_NODES + 1 + 10)
    assert growth < by_design + 1024, f"{growth:.0f} bytes a solve"


def test_records_without_the_budget():
    """Without the energy budget nothing of it is kept, and the history's blocks hold
    1 + n + 1 floats a solve (time, state, the flux), within their doubling capacity."""
    solver = _solver()
    t = 0.0
    for i in range(40):
        _step(solver, t, 1.0, 2.0e4 * (1.0 + 0.1 * np.sin(i)), budget=False)
        t += 1.0
    assert solver._energy._n_totals == 0
    assert len(solver._records) == 40
    assert solver._records.nbytes() <= 2 * 8 * (1 + N_NODES + 1) * 40
