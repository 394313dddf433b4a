"""The six test configs that upstream aragog (fwl-aragog 26.10.22) ships, for the tests.

:func:`config_text` returns the upstream file when a copy of the upstream package's
``cfg`` folder is available (``$ARAGOG_UPSTREAM_CFG``, an installed fwl-aragog
distribution, or an unpacked wheel at ``/tmp/up/x/aragog/cfg``), otherwise an equivalent file written here: the same sections,
keys and values (facts of the test cases; no comments, no text of the originals). The
data files those configs name are never shipped: :func:`write_structure_file_like_upstream`
makes the structure file ``abe_mixed_init.cfg`` expects, in five columns as Zalmoxis
writes them.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np

from aragog.structure import AdamsWilliamson

NAMES = ("abe_liquid.cfg", "abe_mixed.cfg", "abe_mixed_init.cfg", "abe_mixed_lookup.cfg", "abe_solid.cfg",
         "abe_solid.toml")

#: Where abe_mixed_init.cfg's `mesh.eos_file` points, relative to the config's folder.
EOS_FILE = "../../../data/test/eos_test.dat"


def _installed_dir() -> str | None:
    """The ``aragog/cfg`` folder of an installed fwl-aragog distribution, if any."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        return str(distribution("fwl-aragog").locate_file("aragog/cfg"))
    except (ImportError, PackageNotFoundError):
        return None


def upstream_dir() -> Path | None:
    """The upstream ``cfg`` folder if one is available here, else ``None``."""
    for candidate in (os.environ.get("ARAGOG_UPSTREAM_CFG"), _installed_dir(), "/tmp/up/x/aragog/cfg"):
        if candidate and all((Path(candidate) / n).is_file() for n in NAMES):
            return Path(candidate)
    return None


def _nuclide(name, abundance, concentration, heat_production, half_life):
    return {"name": name, "t0_years": "4.55E9", "abundance": abundance, "concentration": concentration,
            "heat_production": heat_production, "half_life_years": half_life}


_BASE = {
    "solver": {"start_time": "0", "end_time": "1000", "atol": "1e-9", "rtol": "1e-9",
               "tsurf_poststep_change": "30"},
    "boundary_conditions": {"outer_boundary_condition": "1", "outer_boundary_value": "1500",
                            "inner_boundary_condition": "2", "inner_boundary_value": "0", "emissivity": "1",
                            "equilibrium_temperature": "273", "core_heat_capacity": "880"},
    "mesh": {"outer_radius": "6371000", "inner_radius": "5371000", "number_of_nodes": "100",
             "mixing_length_profile": "constant", "core_density": "10738.332568062382",
             "surface_density": "4090", "gravitational_acceleration": "9.81", "adiabatic_bulk_modulus": "260E9"},
    "energy": {"conduction": "True", "convection": "True", "gravitational_separation": "False",
               "mixing": "False", "radionuclides": "False", "tidal": "False"},
    "initial_condition": {"surface_temperature": "3600", "basal_temperature": "4000"},
    "phase_liquid": {"density": "4000", "viscosity": "1E2", "heat_capacity": "1000", "melt_fraction": "1",
                     "thermal_conductivity": "4", "thermal_expansivity": "1.0E-5"},
    "phase_solid": {"density": "4200", "viscosity": "1E21", "heat_capacity": "1000", "melt_fraction": "0",
                    "thermal_conductivity": "4", "thermal_expansivity": "1.0E-5"},
    "phase_mixed": {"latent_heat_of_fusion": "4e6", "rheological_transition_melt_fraction": "0.4",
                    "rheological_transition_width": "0.15", "solidus": "data/test/solidus_1d_lookup.dat",
                    "liquidus": "data/test/liquidus_1d_lookup.dat", "phase": "liquid",
                    "phase_transition_width": "0.01", "grain_size": "1.0E-3"},
    "radionuclide_K40": _nuclide("K40", "1.1668E-4", "310", "2.8761E-5", "1248E6"),
    "radionuclide_Th232": _nuclide("Th232", "1.0", "0.124", "2.6368E-5", "14000E6"),
    "radionuclide_U235": _nuclide("U235", "0.0072045", "0.031 ", "5.68402E-4", "704E6"),  # trailing blank
    "radionuclide_U238": _nuclide("U238", "0.9927955", "0.031", "9.4946E-5", "4468E6"),
    "radionuclide_Al26": _nuclide("Al26", "0", "0", "0.3583", "0.717E6"),
    "radionuclide_Fe60": _nuclide("Fe60", "0", "0", "3.6579E-2", "2.62E6"),
}


def config_dict(name: str) -> dict[str, dict[str, str]]:
    """The sections of upstream config ``name`` as INI text values."""
    d = copy.deepcopy(_BASE)
    mixed = {"phase": "mixed", "phase_transition_width": "0.1"}
    if name in ("abe_mixed.cfg", "abe_mixed_init.cfg"):
        d["solver"].update(end_time="200", atol="1e-8", rtol="1e-8")
        d["mesh"]["number_of_nodes"] = "50"
        d["phase_mixed"].update(mixed)
    if name == "abe_mixed.cfg":
        d["energy"].update(gravitational_separation="True", mixing="True")
        d["phase_mixed"]["separation_buoyancy"] = "solid"
    elif name == "abe_mixed_init.cfg":
        for key in ("surface_density", "gravitational_acceleration", "adiabatic_bulk_modulus"):
            del d["mesh"][key]
        d["mesh"].update(eos_method="2", eos_file=EOS_FILE)
        d["initial_condition"] = {"initial_condition": "3", "surface_temperature": "2800"}
    elif name == "abe_mixed_lookup.cfg":
        d["energy"]["radionuclides"] = "True"
        d["phase_liquid"]["density"] = "data/test/density_2d_lookup.dat"
        d["phase_mixed"].update(mixed)
    elif name.startswith("abe_solid"):
        d["solver"]["end_time"] = "1000000000"
        d["boundary_conditions"].update(inner_boundary_condition="3", inner_boundary_value="4000")
        d["mesh"]["mixing_length_profile"] = "nearest_boundary"
        d["phase_mixed"]["phase"] = "solid"
    return d


def _toml_value(text: str) -> str:
    text = text.strip()
    if text in ("True", "False"):
        return text.lower()
    try:
        float(text)
    except ValueError:
        return f'"{text}"'
    return text


def render(d: dict[str, dict[str, str]], syntax: str) -> str:
    """INI (``"ini"``) or TOML (``"toml"``) text of ``d``."""
    lines = []
    for section, items in d.items():
        lines.append(f"[{section}]")
        for key, value in items.items():
            lines.append(f"{key} = {_toml_value(value) if syntax == 'toml' else value}")
        lines.append("")
    return "\n".join(lines)


def config_text(name: str, prefer_upstream: bool = True) -> str:
    """The text of upstream config ``name``: the upstream file if available, else ours."""
    up = upstream_dir() if prefer_upstream else None
    if up is not None:
        return (up / name).read_text()
    return render(config_dict(name), "toml" if name.endswith(".toml") else "ini")


def write_structure_file_like_upstream(path: Path, inner=5371000.0, outer=6371000.0, n_rows=200) -> Path:
    """A structure file covering [inner, outer] m in five columns (r, P, ρ, g and a
    temperature column, as Zalmoxis writes), Adams-Williamson with this package's defaults."""
    aw = AdamsWilliamson()
    r = np.linspace(inner, outer, n_rows)
    columns = [r, aw.pressure(r, outer), aw.density(r, outer), aw.gravity_at(r, outer), np.linspace(4000, 1500, n_rows)]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, np.column_stack(columns), header="r P rho g T", comments="# ")
    return path


def write_config(directory: Path, name: str, prefer_upstream: bool = True) -> Path:
    """Write config ``name`` into ``directory/a/b/c/`` (so that ``../../../data/test/...``
    stays inside ``directory``) with the structure file ``abe_mixed_init.cfg`` needs."""
    folder = directory / "a" / "b" / "c"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(config_text(name, prefer_upstream))
    if name == "abe_mixed_init.cfg":
        write_structure_file_like_upstream((folder / EOS_FILE).resolve())
    return path
