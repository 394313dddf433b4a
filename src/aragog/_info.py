"""What this installation is: the report of ``aragog info``.

When a run behaves differently on two machines, the first question is what each has:
which ``aragog`` and from where (and whether another distribution installs the same import
package), Python, NumPy, SciPy, JAX and its devices, the SUNDIALS CVODE library and where
it came from, the persistent compilation cache and the EOS table cache. One dict
(:func:`installation_report`, JSON-able) and its text (:func:`format_report`).
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

__all__ = ["installation_report", "format_report"]


def _folder_size(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path`` (0, 0 when it does not exist)."""
    files = size = 0
    if path.is_dir():
        for entry in path.rglob("*"):
            if entry.is_file():
                files += 1
                size += entry.stat().st_size
    return files, size


def _jax_report() -> dict:
    try:
        import jax
        import jaxlib
    except Exception as exc:  # noqa: BLE001 - a report: say what failed
        return {"error": f"{type(exc).__name__}: {exc}"}
    out = {"version": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "?")}
    try:
        out["backend"] = jax.default_backend()
        out["devices"] = [str(d) for d in jax.devices()]
    except Exception as exc:  # noqa: BLE001
        out["devices_error"] = f"{type(exc).__name__}: {exc}"
    return out


def _compile_cache_report() -> dict:
    from aragog.config._schema import keys_of
    from aragog.programs import _disk_cache as cache

    choice = cache.resolve_cache_dir(None)
    max_mb = keys_of("solver")["jax_cache_max_mb"].default
    out = {"directory": choice.directory, "why": choice.reason, "cap_mb": max_mb}
    if choice.directory is not None and "://" not in choice.directory:
        found = cache.cache_contents(choice.directory)
        out.update(exists=Path(choice.directory).is_dir(), jax_entries=found.jax_entries,
                   aragog_executables=found.own_entries, bytes=found.jax_bytes + found.own_bytes)
    return out


def _eos_cache_report() -> dict:
    from aragog.eos import bundled_cache_root

    root = bundled_cache_root()
    files, size = _folder_size(root)
    sets = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return {"directory": str(root), "exists": root.is_dir(), "table_sets": sets, "files": files, "bytes": size}


def installation_report() -> dict:
    """Everything ``aragog info`` prints, as a JSON-able dict. Imports JAX and lists its
    devices (which starts its back end), loads the CVODE library; writes nothing."""
    import numpy
    import scipy

    from aragog._environment import other_distributions
    from aragog._version import __version__
    from aragog.solver.backends import cvode_library_info

    return {
        "aragog": {"version": __version__, "location": str(Path(__file__).resolve().parent),
                   "other_distributions": [f"{n} {v}" for n, v in other_distributions()]},
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "platform": platform.platform()},
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "jax": _jax_report(),
        "sundials": cvode_library_info(),
        "compile_cache": _compile_cache_report(),
        "eos_cache": _eos_cache_report(),
        "environment": {k: os.environ[k] for k in ("ARAGOG_SUNDIALS_CVODE", "ARAGOG_JAX_CACHE_DIR",
                                                   "ARAGOG_XLA_OPTIMIZATION_LEVEL", "JAX_COMPILATION_CACHE_DIR",
                                                   "JAX_PLATFORMS", "XDG_CACHE_HOME")
                        if k in os.environ},
    }


def format_report(report: dict) -> str:
    """The report as aligned text lines (what ``aragog info`` prints)."""
    from aragog.programs._disk_cache import format_bytes

    a, py, jx, sd = report["aragog"], report["python"], report["jax"], report["sundials"]
    rows = [("aragog", f"{a['version']} ({a['location']})")]
    for other in a["other_distributions"]:
        rows.append(("  warning", f"{other} also installs the import package 'aragog' here "
                                  "(docs/compat.md, 'Using this package in PROTEUS')"))
    rows += [("python", f"{py['version']} ({py['executable']})"), ("platform", py["platform"]),
             ("numpy", report["numpy"]), ("scipy", report["scipy"])]
    if "error" in jx:
        rows.append(("jax", f"not importable: {jx['error']}"))
    else:
        rows.append(("jax", f"{jx['version']} (jaxlib {jx['jaxlib']})"))
        rows.append(("  devices", ", ".join(jx.get("devices", [])) or jx.get("devices_error", "?")))
    if sd["available"]:
        rows.append(("sundials", f"{sd['version']} ({sd['index_bits']}-bit indices) [{sd['source']}]"))
        rows.append(("  library", sd["path"]))
    else:
        rows.append(("sundials", f"no CVODE library: {sd['error']}"))
    cc = report["compile_cache"]
    if cc["directory"] is None:
        rows.append(("compile cache", f"off ({cc['why']})"))
    else:
        rows.append(("compile cache", cc["directory"]))
        rows.append(("  why", cc["why"]))
        if "bytes" in cc:
            state = (f"{cc['jax_entries']} JAX entries, {cc['aragog_executables']} aragog executables, "
                     f"{format_bytes(cc['bytes'])}" if cc["exists"] else "not created yet")
            rows.append(("  contents", state))
        rows.append(("  cap", f"{cc['cap_mb']} MB" if cc["cap_mb"] else "none"))
    ec = report["eos_cache"]
    rows.append(("eos table cache", ec["directory"]))
    rows.append(("  contents", f"{len(ec['table_sets'])} table sets, {format_bytes(ec['bytes'])}" if ec["exists"]
                 else "not created yet"))
    for key, value in report["environment"].items():
        rows.append((f"${key}", value))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
