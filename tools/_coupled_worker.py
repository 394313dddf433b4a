#!/usr/bin/env python
"""Worker of ``tools/bench_coupled.py``: one cold PROTEUS-style coupled run, timed by stage.

Upstream names only (it imports ``aragog`` exactly as PROTEUS's coupling wrapper does), so
it runs unchanged under this package's interpreter and under one with the upstream
``fwl-aragog``. The set-up, the JAX factory, the initial entropy, the equilibration call
and the per-call bookkeeping are those of ``tests/compat/proteus_sequence.py`` (PROTEUS's
``AragogRunner``, table mode, ``backend = "jax"``); this script adds the clock and a
coupling loop of ``--steps`` calls of ``--years`` years each with a prescribed surface
flux that changes every call (an "atmosphere" cooling down; ``flux_schedule``).

Stages (seconds, ``perf_counter``):

- ``startup``: interpreter start to this script's first line (from ``--launch-time``).
- ``imports``: PROTEUS's module-level ``from aragog ... import ...``.
- ``tables``: ``EntropyEOS(eos_dir)`` inside ``setup_solver``.
- ``params``: the ``_*Parameters`` dataclasses and ``Parameters(...)``.
- ``solver``: ``EntropySolver(param, entropy_eos)``.
- ``initialize``: ``solver.initialize()`` (mesh, and whatever else each code does there).
- ``jax_factory``: PROTEUS's ``_maybe_install_jax_cvode_factory`` (``import jax``,
  ``EntropyEOS_JAX``, ``MeshArrays``, ``set_jax_cvode_factory``).
- ``initial_state``: ``_set_entropy_ic`` (a second ``EntropyEOS`` for the 1-bar inversion,
  as PROTEUS does, and ``set_initial_entropy``).
- ``equilibrate``: the [0, 0] call (solve + get_state).
- ``first_step``: the first ``--years`` call (update + reset + solve + get_state).
- ``first_solve``: ``tables`` through ``first_step`` (no imports, no start-up): the time a
  new user waits, after the imports, for the first coupled result.

Each step: ``update`` (update_structure + update_solver, which reads the last entropy),
``reset`` (``reset()`` + ``set_initial_entropy(last entropy)``), ``solve`` (all attempts of
PROTEUS's retry ladder), ``get_state`` (``get_state()``, ``get_state_call``, plus reading every field PROTEUS
reads, ``read_fields``), ``total``.

Beside the wall times: JAX's compile events (``jax.monitoring``, the same clock for both
codes) per stage and per call (``jax_trace_lower``, ``jax_compile``, ``jax_n_compile``,
``jax_cache_hits``) and the list ``jax_compiles`` ([stage, function, seconds]); the
upstream's own ``energy integrals in X s (solve Y s)`` log line per call
(``log_energy_integrals``, ``log_solve``); this package's ``jit_stats`` at the end.

Output: JSON (``--out``).
"""

from __future__ import annotations

import argparse
import time

_T_SCRIPT = time.time()
_PC_SCRIPT = time.perf_counter()

import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compat"))
import proteus_sequence as ps  # noqa: E402  (numpy and the standard library only)


def flux_schedule(i: int, F0: float) -> tuple[float, float]:
    """(F_atm [W/m2], T_eqm [K]) for coupled call ``i`` (1-based): a flux falling by 7 %
    a call with a +-15 % wobble, so every call has a new surface boundary value."""
    F = F0 * 0.93 ** (i - 1) * (1.0 + 0.15 * math.sin(1.3 * i))
    return F, 280.0 + 0.5 * i


class _Timer:
    """Wraps a callable; accumulates wall time and calls."""

    def __init__(self, fn):
        self.fn, self.total, self.calls = fn, 0.0, 0

    def __call__(self, *a, **k):
        t = time.perf_counter()
        try:
            return self.fn(*a, **k)
        finally:
            self.total += time.perf_counter() - t
            self.calls += 1

    def take(self) -> float:
        v, self.total = self.total, 0.0
        return v


#: JAX's own compile-time events (jax.monitoring), summed: the same clock for both codes.
_JAX_EVENTS = {"trace": 0.0, "lower": 0.0, "compile": 0.0, "n_compile": 0, "cache_hits": 0}
#: Every XLA compile (or persistent-cache retrieval, which JAX times under the same event):
#: [stage, function name, seconds]. JAX may compile in several threads at once, so the sum
#: can exceed the stage's wall time.
_COMPILES: list = []
_CURRENT = {"stage": "init"}


def _at(stage: str) -> str:
    _CURRENT["stage"] = stage
    return stage
_EVENT_KEYS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


def _on_jax_event(event, duration, **kw):
    key = _EVENT_KEYS.get(event)
    if key:
        _JAX_EVENTS[key] += duration
        if key == "compile":
            _JAX_EVENTS["n_compile"] += 1
            _COMPILES.append([_CURRENT["stage"], str(kw.get("fun_name", "?")), duration])


def _on_jax_count(event, **_):
    if event == "/jax/compilation_cache/cache_hits":
        _JAX_EVENTS["cache_hits"] += 1


def _jax_snapshot() -> dict:
    return dict(_JAX_EVENTS)


def _jax_delta(before: dict) -> dict:
    return {"jax_trace_lower": (_JAX_EVENTS["trace"] + _JAX_EVENTS["lower"]
                                - before["trace"] - before["lower"]),
            "jax_compile": _JAX_EVENTS["compile"] - before["compile"],
            "jax_n_compile": _JAX_EVENTS["n_compile"] - before["n_compile"],
            "jax_cache_hits": _JAX_EVENTS["cache_hits"] - before["cache_hits"]}


class _LogTail:
    """New lines of the aragog log file since the last call; the upstream logs
    ``energy integrals in X s (solve Y s)`` once per solve (the integration and the
    step's energy integrals, JIT compiling included)."""

    _RE = re.compile(r"energy integrals in ([0-9.]+) s \(solve ([0-9.]+) s\)")

    def __init__(self, path: Path):
        self.path, self.pos = path, 0

    def read(self) -> dict:
        try:
            with open(self.path, errors="replace") as f:
                f.seek(self.pos)
                text = f.read()
                self.pos = f.tell()
        except OSError:
            return {}
        hits = self._RE.findall(text)
        if not hits:
            return {}
        return {"log_energy_integrals": sum(float(a) for a, _ in hits),
                "log_solve": sum(float(b) for _, b in hits)}


def _read_outputs(out) -> int:
    """Touch every SolverOutput field PROTEUS reads (helpfile row, T_pot, netCDF)."""
    n = 0
    for name in ps.PROTEUS_OUTPUT_FIELDS:
        v = getattr(out, name, None)
        if v is not None:
            n += np.asarray(v).size
    return n


def run(args) -> dict:
    rec: dict = {"ok": False, "stages": {}, "steps": [], "argv": sys.argv[1:]}
    st = rec["stages"]
    if args.launch_time:
        st["startup"] = _T_SCRIPT - args.launch_time
    stage = _at("init")
    try:
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_coupled_"))
        workdir.mkdir(parents=True, exist_ok=True)
        seq = ps.Sequence("table", args.backend, args.eos_dir, args.lookup_dir, args.melting_dir,
                          workdir, args.nodes, reject_first_attempt=False, tsurf_init=args.tsurf)
        if args.rtol is not None:
            seq.cfg["rtol"] = args.rtol
        if args.atol is not None:
            seq.cfg["atol_temperature_equivalent"] = args.atol
        rec["config"] = {k: seq.cfg[k] for k in ("num_levels", "rtol", "atol_temperature_equivalent",
                                                  "tsurf_init", "core_bc", "surface_bc_mode")}
        stage = _at("imports")
        t = time.perf_counter()
        seq.A = ps.proteus_imports()
        st["imports"] = time.perf_counter() - t
        # JAX's compile events (both codes compile through jax); PROTEUS imports jax for
        # backend = "jax" anyway, so its import time stays in ``imports``.
        t = time.perf_counter()
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(_on_jax_event)
        jax.monitoring.register_event_listener(_on_jax_count)
        st["imports"] += time.perf_counter() - t
        import aragog

        rec["aragog_version"] = str(getattr(aragog, "__version__", None))
        rec["aragog_file"] = getattr(aragog, "__file__", None)
        seq.A.aragog_file_logger(console_level=logging.WARNING, file_level=logging.INFO,
                                 log_dir=str(workdir))
        log_tail = _LogTail(workdir / "aragog.log")
        rec["stage_jax"] = {}
        ev = _jax_snapshot()
        eos_timer = _Timer(seq.A.EntropyEOS)
        solver_timer = _Timer(seq.A.EntropySolver)
        seq.A.EntropyEOS, seq.A.EntropySolver = eos_timer, solver_timer

        seq.tides = np.zeros(1)
        stage = _at("setup_solver")
        t = time.perf_counter()
        seq.setup_solver()
        setup = time.perf_counter() - t
        st["tables"] = eos_timer.take()
        st["solver"] = solver_timer.take()
        st["params"] = setup - st["tables"] - st["solver"]
        rec["stage_jax"]["setup_solver"] = _jax_delta(ev)
        solver = seq.solver

        def timed_stage(name, fn):  # wall time and JAX compile events of one set-up stage
            nonlocal stage
            stage = _at(name)
            before = _jax_snapshot()
            t = time.perf_counter()
            fn()
            st[name] = time.perf_counter() - t
            rec["stage_jax"][name] = _jax_delta(before)

        timed_stage("initialize", solver.initialize)
        timed_stage("jax_factory", seq.maybe_install_jax_cvode_factory)
        ev = _jax_snapshot()
        rec["jax_factory_installed"] = seq.record.get("jax_factory_installed")
        if seq.record.get("jax_factory_install_error"):
            rec["jax_factory_install_error"] = seq.record["jax_factory_install_error"]
        stage = _at("initial_state")
        t = time.perf_counter()
        seq.set_entropy_ic()
        st["initial_state"] = time.perf_counter() - t
        rec["stage_jax"]["initial_state"] = _jax_delta(ev)
        log_tail.read()
        rec["S_target"] = seq.record.get("S_target")
        rec["n_stag"] = seq.record.get("n_stag")

        # Time solve() and get_state() inside PROTEUS's retry ladder (instance attributes).
        solve_timer = _Timer(solver.solve)
        state_timer = _Timer(solver.get_state)
        solver.solve, solver.get_state = solve_timer, state_timer

        def call(label: str, dt: float | None, F_atm=None, T_eqm=None) -> dict:
            nonlocal stage
            t_all = time.perf_counter()
            ev_call = _jax_snapshot()
            row = {"label": label}
            if dt is not None:  # a coupled call: update, reset, last entropy
                seq.hf_row["F_atm"], seq.hf_row["T_eqm"] = F_atm, T_eqm
                stage = _at(f"{label}: update")
                t = time.perf_counter()
                seq.update_structure()
                seq.update_solver(dt)
                row["update"] = time.perf_counter() - t
                stage = _at(f"{label}: reset")
                t = time.perf_counter()
                solver.reset()
                if seq.last_entropy is not None:
                    solver.set_initial_entropy(seq.last_entropy)
                row["reset"] = time.perf_counter() - t
            t0_yr = float(solver.parameters.solver.start_time)
            stage = _at(f"{label}: solve")
            t = time.perf_counter()
            out, retry = seq.solve_with_retry()
            t_ladder = time.perf_counter() - t
            t = time.perf_counter()
            _read_outputs(out)
            t_read = time.perf_counter() - t
            row["solve"] = solve_timer.take()
            row["get_state_call"] = state_timer.take()
            row["read_fields"] = t_read
            row["get_state"] = row["get_state_call"] + t_read
            row["ladder_overhead"] = t_ladder - row["solve"] - row["get_state_call"]
            row["total"] = time.perf_counter() - t_all
            row.update(_jax_delta(ev_call))
            row.update(log_tail.read())
            seq.hf_row["Time"] = seq.hf_row["Time"] + float(out.dt_actual)
            seq.hf_row["T_cmb"] = float(out.T_core)
            row.update({
                "t_start": t0_yr, "dt_actual": float(out.dt_actual), "F_atm": seq.hf_row["F_atm"],
                "T_eqm": seq.hf_row["T_eqm"], "status": int(out.status),
                "attempts": len(retry["attempts"]), "T_magma": float(out.T_magma),
                "T_core": float(out.T_core), "Phi_global": float(out.Phi_global),
                "F_cmb": float(np.asarray(out.F_cmb).ravel()[-1]),
            })
            return row

        rec["steps"].append(call("equilibrate", None))
        st["equilibrate"] = rec["steps"][0]["total"]
        for i in range(1, args.steps + 1):
            F_atm, T_eqm = flux_schedule(i, args.flux)
            rec["steps"].append(call(f"step{i}", args.years, F_atm, T_eqm))
            if i == 1:
                st["first_step"] = rec["steps"][-1]["total"]
                st["first_solve"] = sum(st[k] for k in ("tables", "params", "solver", "initialize",
                                                        "jax_factory", "initial_state",
                                                        "equilibrate", "first_step"))
        jit_stats = getattr(getattr(solver, "native", solver), "jit_stats", None)  # this package's counters
        if jit_stats is not None:
            rec["jit_stats"] = ps._jsonable({k: dict(v) if isinstance(v, dict) else v
                                             for k, v in dict(jit_stats).items()})
        rec["jax_factory_calls"] = getattr(solver, "_jax_factory_call_count", None)
        rec["warnings"] = seq.record["warnings"]
        rec["jax_compiles"] = _COMPILES
        rec["ok"] = True
    except Exception as exc:
        rec["error"] = {"stage": stage, "type": type(exc).__name__, "message": str(exc),
                        "traceback": traceback.format_exc()}
    rec["worker_wall"] = time.perf_counter() - _PC_SCRIPT
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eos-dir", required=True)
    ap.add_argument("--lookup-dir", required=True)
    ap.add_argument("--melting-dir", required=True)
    ap.add_argument("--nodes", type=int, default=60)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--years", type=float, default=100.0)
    ap.add_argument("--flux", type=float, default=1.0e5, help="F_atm of the first call [W/m2]")
    ap.add_argument("--tsurf", type=float, default=3500.0, help="planet.tsurf_init [K]")
    ap.add_argument("--rtol", type=float, default=None,
                    help="solver rtol (default: PROTEUS's interior_energetics.rtol, %g)" % ps.CONFIG["rtol"])
    ap.add_argument("--atol", type=float, default=None,
                    help="atol_temperature_equivalent (default: PROTEUS's, %g)"
                    % ps.CONFIG["atol_temperature_equivalent"])
    ap.add_argument("--backend", choices=("jax", "numpy"), default="jax")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--launch-time", type=float, default=None, help="time.time() at launch")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    rec = run(args)
    Path(args.out).write_text(json.dumps(ps._jsonable(rec), indent=1))
    if not rec["ok"]:
        print(f"FAILED at {rec['error']['stage']}: {rec['error']['type']}: {rec['error']['message']}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
