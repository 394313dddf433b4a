"""One evaluation of the right-hand side at the initial state, naming every non-finite term.

``aragog validate`` runs :func:`probe_initial_state` after the file checks
(:mod:`aragog.validation`): it builds the physics inputs the solver would build
(:mod:`aragog.solver._from_config`), makes the initial entropy profile as
:meth:`EntropySolver.initialize` does (by the same algorithm: the entropy file, or the one
NumPy inversion :func:`aragog.eos._host.entropy_of_temperature` for an isentrope), and
evaluates ``physics.rhs`` once (and, when a
value is not finite, ``physics.diagnostics``). A NaN or infinity anywhere — the EOS (T, ρ, c_p, φ,
viscosity), the heating, a flux (conductive, convective, gravitational separation,
mixing), a boundary flux, dS/dt — is reported in one line with the cells (or basic nodes)
where it occurs, counted from the CMB, so a run does not start from a state CVODE cannot
integrate.

To stay quick when all is well, one small program is compiled (the right-hand side at
the initial entropy), with XLA's cheapest backend optimisation, not the solver's RHS and
Jacobian pair; the diagnostics program that names the terms is compiled only when a value
is not finite. The persistent compilation cache
(``solver.jax_cache_dir``, on by default) applies as in a run: a later process loads the
program without tracing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from aragog._jax import in_float64
from aragog.errors import ConfigError, format_indices

__all__ = ["ProbeResult", "probe_initial_state", "nonfinite_terms", "format_indices"]

#: Diagnostics fields checked, in causal order: (field, what it is, "cell"/"node"/"").
TERMS = (
    ("S", "initial entropy S", "cell"),
    ("T", "EOS temperature T", "cell"),
    ("rho", "EOS density rho", "cell"),
    ("cp", "EOS heat capacity cp", "cell"),
    ("phi", "melt fraction phi", "cell"),
    ("visc", "viscosity", "cell"),
    ("T_basic", "EOS temperature T", "node"),
    ("phi_basic", "melt fraction phi", "node"),
    ("H_radio", "radiogenic heating H_radio", ""),
    ("H", "heating H", "cell"),
    ("jcond", "conductive flux", "node"),
    ("jconv", "convective flux", "node"),
    ("jgrav", "gravitational separation flux", "node"),
    ("jmix", "mixing flux", "node"),
    ("F_cmb", "CMB (inner boundary) flux F_cmb", ""),
    ("F_surface", "surface (outer boundary) flux F_surface", ""),
    ("heat_flux", "total heat flux", "node"),
    ("dSdt", "dS/dt", "cell"),
)


#: XLA options of the probe programs: they run once, so compile them with the cheapest
#: backend optimisation (a finiteness check does not need the fastest code).
_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


@dataclass(frozen=True)
class ProbeResult:
    """What one evaluation at the initial state gave.

    Attributes:
        time: model time [yr]; how: how the initial entropy was made;
        S_range: min and max of the initial cell entropy [J/kg/K];
        max_rate: max |dS/dt| over the cells [J/kg/K/yr].
    """

    time: float
    how: str
    S_range: tuple[float, float]
    max_rate: float

    def summary(self) -> str:
        """One line for ``aragog validate``."""
        lo, hi = self.S_range
        S = f"S = {lo:.6g} J/kg/K" if lo == hi else f"S = {lo:.6g}..{hi:.6g} J/kg/K"
        return (f"initial state (t = {self.time:g} yr, {self.how}, {S}): every right-hand-side term "
                f"finite, max |dS/dt| = {self.max_rate:.3g} J/kg/K/yr")


def nonfinite_terms(diag, rate=None) -> list[str]:
    """Descriptions of the non-finite terms of a ``physics.Diagnostics`` (and of the full
    right-hand side ``rate``, for the state slot), in :data:`TERMS` order."""
    out = []
    for name, label, where in TERMS:
        value = getattr(diag, name, None)
        if value is None:
            continue
        arr = np.asarray(value, dtype=np.float64)
        bad = ~np.isfinite(arr)
        if not bad.any():
            continue
        if arr.ndim == 0 or not where:
            out.append(f"{label} = {float(arr.ravel()[0])!r}")
        else:
            out.append(f"{label} in {where}s {format_indices(bad)} of {arr.size}")
    if rate is not None:
        rate = np.asarray(rate, dtype=np.float64)
        n_cells = np.asarray(diag.S).size
        slot, cells = rate[: rate.size - n_cells], rate[rate.size - n_cells:]
        if slot.size and not np.all(np.isfinite(slot)):
            out.append("the rate of the core state slot")
        bad = ~np.isfinite(cells)
        if bad.any() and not any(item.startswith("dS/dt") for item in out):
            # finite per second but not in the integrator's units (per year, S / 1000 J/kg/K)
            out.append(f"dS/dt in cells {format_indices(bad)} of {n_cells} (overflows per year)")
    return out


def _initial_entropy(params, mesh) -> tuple[np.ndarray | None, float, float, str]:
    """How :meth:`EntropySolver.initialize` makes the initial state: ``(S, T, P, label)``
    with ``S`` the cells' entropy from the entropy file, or ``None`` and the (T, P) point
    whose isentrope fills the mantle."""
    ic = params.initial_condition
    n_cells = int(mesh.number_of_cells)
    if ic.initial_condition == 2:
        from aragog.initial import read_entropy_profile

        S = np.asarray(read_entropy_profile(ic.init_file, n_cells), dtype=np.float64)
        return S, 0.0, 0.0, "entropy file"
    if ic.initial_condition == 3:
        return None, ic.basal_temperature, float(mesh.P_basic[0]), "isentrope through basal_temperature"
    return None, ic.surface_temperature, float(mesh.P_basic[-1]), "isentrope through surface_temperature"


def _fast(S, t, inputs, options):
    """The full right-hand side at the cells' entropy ``S`` (one program)."""
    from aragog import physics

    return physics.rhs(t, physics.join_state(S, None, inputs, options), inputs, options)


def _detailed(S, t, inputs, options):
    """The diagnostics (every term) at the cells' entropy ``S``, for naming what is not finite."""
    from aragog import physics

    return physics.diagnostics(t, physics.join_state(S, None, inputs, options), inputs, options)


def _run_once(fn, args, options, static_key):
    """Compile ``fn`` for these argument shapes and call it once. The program comes from
    the process's program cache (:func:`aragog.programs._shared.shared_programs`,
    which :func:`aragog.clear_caches` empties), else from the persistent store (loaded
    without tracing, as the solver's are), else it is compiled and stored."""
    from aragog._jax import jax
    # private: the keyed compile of the solver's programs (the persistent store's lookup first)
    from aragog._compiling import compile_keyed
    from aragog.programs._shared import shared_programs, store_key

    shapes = tuple((getattr(a, "shape", ()), str(getattr(a, "dtype", type(a).__name__)))
                   for a in jax.tree_util.tree_leaves(args))
    key = ("probe", fn.__name__, static_key, shapes)

    def build():
        compiled, _ = compile_keyed(functools.partial(fn, options=options), args, label=f"probe:{fn.__name__}",
                                    key=store_key(key), compiler_options=_COMPILER_OPTIONS)
        return compiled

    compiled, _ = shared_programs(key, build)
    return compiled(*args)


@in_float64
def probe_initial_state(params, mesh=None, eos_dir=None) -> ProbeResult:
    """Evaluate the right-hand side once at the initial state; when a value is not finite,
    evaluate the diagnostics too and name every non-finite term.

    Args:
        params: validated :class:`aragog.config.Config`.
        mesh: its ``Mesh`` if already built (else built here).
        eos_dir: EOS table directory overriding ``params.eos.dir`` (``--eos-dir``).

    Returns:
        A :class:`ProbeResult` when every term is finite.

    Raises:
        ConfigError: one line naming each non-finite term and its cells or nodes.
    """
    from aragog._jax import jax
    from aragog.eos._host import NumpyEOS, entropy_of_temperature
    from aragog.solver._from_config import derive
    from aragog.programs._disk_cache import configure_compilation_cache
    from aragog.solver._table_edge import TableEdge

    configure_compilation_cache(params.solver.jax_cache_dir, params.solver.jax_cache_max_mb)
    # the solver's own derivation: the same options, mesh, packed EOS data and static key
    _, options, mesh, inputs, static_key = derive(params, eos_dir, mesh=mesh)
    S_file, T, P, how = _initial_entropy(params, mesh)
    n_cells = int(mesh.number_of_cells)
    edge = None if options.constant_properties else TableEdge.of(inputs.eos)  # the solver's rule
    if S_file is not None:
        S = np.asarray(S_file, dtype=np.float64)
    else:  # an isentrope: the solver's own inversion (EntropySolver.entropy_at)
        host = NumpyEOS(jax.device_get(inputs.eos), inputs.material.matprop_smooth_width, options.constant_properties)
        S = np.full(n_cells, entropy_of_temperature(T, P, host))
        key = "basal_temperature" if params.initial_condition.initial_condition == 3 else "surface_temperature"
        if not np.all(np.isfinite(S)):
            raise ConfigError(f"initial state: no entropy gives T = {T:g} K at P = {P:.4g} Pa in the EOS "
                              f"(`initial_condition.{key}`)")
        if edge is not None:
            edge.check_temperature(T, P, float(S[0]), host.T, f"initial_condition.{key}")
    if edge is not None:
        edge.check_pressure(mesh)
        edge.check_entropy(S, f"initial entropy ({how})")
    t = float(params.solver.start_time)
    args = (S, t, inputs)
    try:
        rate = np.asarray(_run_once(_fast, args, options, static_key), dtype=np.float64)
    except ValueError as exc:  # the physics refusing these inputs (e.g. a mesh it cannot discretise)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"cannot evaluate the right-hand side at the initial state ({how}): {first}") from None
    if np.all(np.isfinite(rate)):
        scale = float(inputs.scales.S)
        return ProbeResult(time=t, how=how, S_range=(float(S.min()), float(S.max())),
                           max_rate=float(np.max(np.abs(rate[-n_cells:]))) * scale)
    diag = jax.tree_util.tree_map(np.asarray, _run_once(_detailed, args, options, static_key))
    bad = nonfinite_terms(diag, rate) or ["dS/dt (the right-hand side)"]
    raise ConfigError(f"the right-hand side is not finite at the initial state (t = {t:g} yr, {how}): "
                      f"{'; '.join(bad)} (cells and nodes counted from the CMB)")
