"""Run aragog's public paths in a fresh process and print the results as JSON.

Used by tests/test_no_global_side_effects.py. The process starts with JAX's x64 mode off
(JAX's default, the state a user's process is in) and runs every path twice: as a user
calls it, then again inside ``jax.enable_x64(True)`` (the state aragog used to force on
the whole process), where nothing can be float32. The second pass reuses the first one's
compiled programs, so it costs the solves only. Argument: a scratch directory.

Paths: a native fused solve, a reset to new values and a second solve; a blocks-mode
solve; ``aragog.validation.check_inputs`` (the right-hand-side probe); ``EntropyEOS``
queries; PROTEUS's coupled-call sequence (constant-property mode) through the upstream
adapters. The caller's own JAX code is checked before and after.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
scratch = Path(sys.argv[1])


def callers_jax() -> dict:
    """What the caller's own JAX code sees: its x64 flag, the dtype of a new array and
    JAX's persistent-cache settings."""
    return {"x64": bool(jax.config.jax_enable_x64), "dtype": str(jnp.arange(3.0).dtype),
            "cache_dir": jax.config.jax_compilation_cache_dir,
            "min_compile_s": jax.config.jax_persistent_cache_min_compile_time_secs,
            "cache_max_size": jax.config.jax_compilation_cache_max_size}


def last(values) -> float:
    return float(np.asarray(values, dtype=np.float64).ravel()[-1])


res = {"before": callers_jax()}

from aragog import EntropySolver, load_config  # noqa: E402
from aragog import eos  # noqa: E402
from aragog.eos.entropy import EntropyEOS  # noqa: E402
from aragog.validation import check_inputs  # noqa: E402

sys.path.insert(0, str(HERE / "compat"))
import _tables  # noqa: E402
import proteus_sequence  # noqa: E402


def paths(scratch: Path) -> dict:
    """Every path once; their results (floats, strings)."""
    res = {}
    small = {"mesh.number_of_nodes": 12, "solver.end_time": 1.0}
    solver = EntropySolver(load_config(HERE / "earth_toy.toml", overrides=small))
    solver.initialize()
    solver.solve()
    out = solver.get_state(energy_budget=True)
    res["fused"] = {"status": out.status, "dtype": str(np.asarray(out.T_stag).dtype),
                    "T_top": last(out.T_stag), "F": last(out.heat_flux), "E_th": float(out.E_th),
                    "dSdr_cmb": float(out.dSdr_cmb)}
    res["stored"] = solver.programs_stored()  # aragog's persistent store holds its programs
    solver.parameters.boundary_conditions.emissivity = 0.5
    solver.reset()
    solver.solve()
    res["fused_reset"] = {"T_top": last(solver.get_state().T_stag)}

    blocks = EntropySolver(load_config(HERE / "earth_toy.toml",
                                       overrides={**small, "solver.compile_mode": "blocks"}))
    blocks.initialize()
    blocks.solve()
    res["blocks"] = {"T_top": last(blocks.get_state().T_stag)}

    res["validate"] = check_inputs(load_config(HERE / "earth_toy.toml", overrides=small))

    tables = eos.write_default_tables(scratch / "tables")
    entropy_eos = EntropyEOS(tables)
    res["entropy_eos"] = {"S": entropy_eos.invert_temperature(1e5, 3000.0),
                          "cp": float(entropy_eos.heat_capacity(5e10, 2800.0)),
                          "phi": float(entropy_eos.melt_fraction(5e10, 2800.0))}

    inputs = _tables.prepare(scratch / "proteus_inputs")
    record = proteus_sequence.run_sequence(mode="const", backend="numpy", workdir=scratch / "proteus", **inputs)
    res["proteus"] = {"ok": record["ok"], "T_magma": [c["T_magma"] for c in record["calls"]],
                      "T_core": [c["T_core"] for c in record["calls"]]}
    return res


res["off"] = paths(scratch / "off")
res["during"] = callers_jax()
with jax.enable_x64(True):
    res["on"] = paths(scratch / "on")

res["after"] = callers_jax()
res["async_dispatch"] = bool(jax.config.read("jax_cpu_enable_async_dispatch"))
print(json.dumps(res))
