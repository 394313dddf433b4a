"""Check a configuration as far as possible without integrating.

:func:`check_inputs` goes beyond :meth:`Config.validate` (keys, types, ranges and
consistency between keys): it opens and parses every file the configuration refers to —
the EOS table directory, the structure file, the initial-entropy file — and builds the
mesh, so that a run fails here rather than after compiling — and then evaluates the
right-hand side once at the initial state (:mod:`aragog.probe`), naming any term that is
not finite (EOS, heating, a flux, dS/dt) and the cells where it is not.
"""

from __future__ import annotations


def check_inputs(params, rhs: bool = True) -> list[str]:
    """Validate ``params`` and everything it references.

    Args:
        params: a :class:`aragog.config.Config`.
        rhs: also evaluate the right-hand side once at the initial state
            (:func:`aragog.probe.probe_initial_state`: every term must be finite).

    Returns:
        Human-readable summary lines (one fact each) of what was checked.

    Raises:
        AragogError: the first problem found, as a one-line message naming the key or file.
    """
    from aragog._jax import float64

    with float64():  # EOS data and the probe's program in float64 (docs/design.md)
        return _check_inputs(params, rhs)


def _check_inputs(params, rhs: bool) -> list[str]:
    from aragog import eos, structure
    from aragog.initial import read_entropy_profile
    from aragog.solver._from_config import generated_range  # private: the solver's choice of generated tables
    from aragog.solver._table_edge import TableEdge  # private: the solver's rule at the tables' edge

    params.validate()  # every rule on the values alone (eos.model, energy.tidal_array, ...)
    lines: list[str] = []

    mesh = structure.mesh_from_params(params.mesh)
    n_cells = int(mesh.r_stag.shape[0])
    coord = "mass coordinate" if params.mesh.mass_coordinates else "radius"
    source = "Adams-Williamson" if params.mesh.eos_method == 1 else f"structure file {params.mesh.eos_file}"
    lines.append(
        f"mesh: {n_cells} cells uniform in {coord}, r = {params.mesh.inner_radius:.6g}"
        f"..{params.mesh.outer_radius:.6g} m, {source}, "
        f"P = {float(mesh.P_basic[-1]):.4g}..{float(mesh.P_basic[0]):.4g} Pa"
    )

    if params.phase_mixed.const_properties:
        lines.append("EOS: constant-property mode (no tables)")
    elif params.eos.dir:
        tables = eos.load_table_set(params.eos.dir)
        lines.append(f"EOS: table set {params.eos.dir} ({eos.describe_table_set(tables)})")
        TableEdge.of(tables).check_pressure(mesh)  # the solver's rule: a mesh beyond the tables is refused
    else:  # params.validate() checked that eos.model names a bundled model
        _, pmax = generated_range(params, mesh)
        top = "" if pmax is None else f", generated to {pmax / 1e9:.4g} GPa for the base pressure"
        lines.append(f"EOS: bundled model {params.eos.model!r}{top}")
        note = eos.extrapolation_note(params.eos.model, pmax)
        if note is not None:
            lines.append(f"warning: {note}")

    ic = params.initial_condition
    if ic.initial_condition == 2:
        read_entropy_profile(ic.init_file, n_cells)
        lines.append(f"initial condition: entropy profile from {ic.init_file}")
    elif ic.initial_condition == 1:
        lines.append(f"initial condition: isentrope through T_surface = {ic.surface_temperature:g} K")
    else:  # 3: the isentrope through basal_temperature at the CMB (surface_temperature unused)
        lines.append(f"initial condition: isentrope through T_basal = {ic.basal_temperature:g} K at the CMB")

    if rhs:
        from aragog.probe import probe_initial_state

        lines.append(probe_initial_state(params, mesh=mesh).summary())
    return lines
