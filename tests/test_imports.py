"""aragog is layered: its import graphs have no cycle and no upward import — inside
aragog.csdl module by module, and in the package as a whole room by room (config → eos,
structure → physics → programs → solver → io, cli, grid; docs/design.md, "Layers").

Every module under ``src/aragog/csdl`` is parsed with :mod:`ast` (nothing is imported);
every ``import`` / ``from ... import`` statement counts, at module level, inside
functions and classes, and under ``if TYPE_CHECKING:`` alike, relative or absolute.
An edge A -> B means that A names B (``from aragog.csdl.operations import add`` is an
edge to ``operations``, ``from aragog.csdl.operations._shape import reshape`` one to
``operations._shape``). Importing a submodule also runs its parent package's
``__init__``; that implicit edge is not counted (a package importing its own submodules
would otherwise always be a cycle).

:data:`LAYERS` lists the layers, lowest first. A module may import modules of lower
layers and of its own layer (if that makes no cycle), never of a higher one.

For the whole package, :data:`ROOM_LAYERS` lists the rooms (``aragog.<room>``), lowest
first: a module may import modules of its own room and of rooms of lower layers, never of
a higher one; and no set of modules anywhere in the package imports itself in a circle.

``python tests/test_imports.py`` prints both graphs, their cycles and their upward edges.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "src" / "aragog" / "csdl"
PKG = "aragog.csdl"

# lowest first; names are relative to aragog.csdl ("" is the package itself)
LAYERS: list[set[str]] = [
    {"_recorder", "_variable"},
    {"_operation"},
    {"operations", "operations._custom", "operations._elementwise", "operations._implicit",
     "operations._jaxfn", "operations._linalg", "operations._loop", "operations._shape"},
    {"_derivative"},
    {"_region", "_share"},
    {"_compress"},
    {"_simulators", "_schedule"},
    {""},
]


def modules(root: pathlib.Path = ROOT) -> dict[str, pathlib.Path]:
    """Module name (relative to the package at ``root``; "" for the package) -> file."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known, pkg: str = PKG) -> str | None:
    """The module of ``pkg`` that the absolute dotted ``name`` denotes, or None."""
    if name == pkg:
        return ""
    if not name.startswith(pkg + "."):
        return None
    rel = name[len(pkg) + 1:]
    while rel and rel not in known:  # a name inside a module: aragog.csdl._variable.Variable
        rel = rel.rpartition(".")[0]
    return rel


def _nodes(tree, in_functions: bool):
    """Every node of ``tree``; with ``in_functions`` false, none inside a function."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if in_functions or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def imports_of(mod: str, path: pathlib.Path, known, pkg: str = PKG,
               in_functions: bool = True) -> list[tuple[str, int]]:
    """(imported module of ``pkg``, line) for every import statement of ``mod`` (with
    ``in_functions`` false, only those outside functions)."""
    is_pkg = path.name == "__init__.py"
    package = ".".join(p for p in (pkg, mod) if p) if is_pkg else \
        ".".join(p for p in (pkg, mod.rpartition(".")[0]) if p)
    found = []
    for node in _nodes(ast.parse(path.read_text(), str(path)), in_functions):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module
            # `from pkg import sub` names the submodule pkg.sub when there is one
            names = [f"{base}.{a.name}" for a in node.names if a.name != "*"] or [base]
            names = [n if _resolve(n, known, pkg) == n[len(pkg) + 1:] else base for n in names]
        else:
            continue
        for name in names:
            target = _resolve(name, known, pkg)
            if target is not None and target != mod:
                found.append((target, node.lineno))
    return sorted(found, key=lambda item: item[1])


def import_graph(root: pathlib.Path = ROOT, pkg: str = PKG) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line importing it}."""
    mods = modules(root)
    graph: dict[str, dict[str, int]] = {}
    for mod, path in mods.items():
        edges = graph.setdefault(mod, {})
        for target, line in imports_of(mod, path, mods, pkg):
            edges.setdefault(target, line)
    return graph


def find_cycles(graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each
    listed as one cycle through some of its modules where possible."""
    index, low, on, stack, sccs = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs


def one_cycle(graph, comp) -> list[str]:
    """A cycle inside the strongly connected ``comp`` (breadth-first, shortest back to
    its first module)."""
    start, members = comp[0], set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def layer_of(mod: str) -> int:
    for i, layer in enumerate(LAYERS):
        if mod in layer:
            return i
    raise KeyError(mod)


def upward_edges(graph) -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import of a higher layer."""
    return [(a, b, line) for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
            if layer_of(b) > layer_of(a)]


def _name(mod: str) -> str:
    return mod or "__init__"


def report(graph=None) -> str:
    """The graph (one line per module, with its layer), cycles and upward edges."""
    graph = import_graph() if graph is None else graph
    lines = ["graph (module [layer] -> imports):"]
    for mod in sorted(graph, key=lambda m: (layer_of(m) if any(m in s for s in LAYERS) else -1, m)):
        lay = layer_of(mod) if any(mod in s for s in LAYERS) else "?"
        lines.append(f"  {_name(mod)} [{lay}] -> {', '.join(_name(t) for t in sorted(graph[mod])) or '-'}")
    cycles = find_cycles(graph)
    lines.append(f"cycles (strongly connected components): {len(cycles)}")
    for comp in cycles:
        lines.append(f"  {len(comp)} modules: {', '.join(_name(m) for m in comp)}")
        lines.append(f"    e.g. {' -> '.join(_name(m) for m in one_cycle(graph, comp))}")
    up = upward_edges(graph)
    lines.append(f"upward edges: {len(up)}")
    for a, b, line in up:
        lines.append(f"  {_name(a)} [{layer_of(a)}] -> {_name(b)} [{layer_of(b)}]  "
                     f"({graph_path(a)}:{line})")
    return "\n".join(lines)


def graph_path(mod: str) -> str:
    return str(modules()[mod].relative_to(ROOT.parents[2]))


# tests -------------------------------------------------------------------------------
def test_every_module_has_a_layer():
    missing = sorted(_name(m) for m in modules() if not any(m in s for s in LAYERS))
    assert not missing, f"modules in no layer of LAYERS: {missing}"
    stale = sorted(_name(m) for s in LAYERS for m in s if m not in modules())
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_import_cycle():
    graph = import_graph()
    cycles = [one_cycle(graph, comp) for comp in find_cycles(graph)]
    assert not cycles, "import cycles in aragog.csdl: " + "; ".join(
        " -> ".join(_name(m) for m in c) for c in cycles)


def test_no_upward_import():
    up = upward_edges(import_graph())
    assert not up, "imports of a higher layer in aragog.csdl: " + "; ".join(
        f"{_name(a)} -> {_name(b)} ({graph_path(a)}:{line})" for a, b, line in up)


@pytest.mark.parametrize("source, expected", [
    ("from aragog.csdl.operations import add", "operations"),
    ("from aragog.csdl.operations._shape import reshape", "operations._shape"),
    ("from aragog.csdl import _region", "_region"),
    ("import aragog.csdl._variable", "_variable"),
    ("from .. import _operation", "_operation"),
    ("from ._shape import reshape", "operations._shape"),
    ("from . import _shape", "operations._shape"),
])
def test_graph_reader_resolves_imports(tmp_path, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(f"def f():\n    {source}\n")
    assert imports_of("operations.probe", path, modules()) == [(expected, 2)]


# the package as a whole ---------------------------------------------------------------
PACKAGE_ROOT = ROOT.parent
PACKAGE = "aragog"

#: rooms of aragog (first component of the module name), lowest layer first ("" is the
#: package's __init__). io (netCDF files, figures) reads and writes a RunHistory and knows
#: nothing of the solver, which writes its history with it. programs (the compiled
#: programs: compiled, shared, stored, counted) sits below the solver, which asks them for
#: its programs, and above physics, whose functions they compile. _compat, the upstream
#: aragog's interface, sits on top: it adapts the solver and the config.
ROOM_LAYERS: list[set[str]] = [
    {"errors", "_jax", "_float64", "_pytree", "_version", "_atomic", "integrator_names", "logs", "fields",
     "_environment", "_executable_store", "_compiling", "units", "_lazy"},
    {"_run_history"},
    {"config", "csdl"},
    {"eos", "structure"},
    {"physics", "initial", "io"},
    {"programs"},
    {"solver"},
    {"probe"},
    {"validation", "_info", "_run_progress"},
    {"cli", "grid", "_compat"},
    {"", "__main__"},
]

#: Thin modules at the upstream aragog's import paths (PROTEUS imports them): they belong
#: to the _compat room wherever they sit, and hold only re-exports from aragog._compat
#: (test_upstream_import_paths_are_thin).
UPSTREAM_PATHS = {"parser", "mesh", "jax", "jax.eos", "jax.nondim", "jax.phase", "jax.solver",
                  "solver.entropy_solver", "solver.cvode_jax"}
#: Upstream import paths whose adapter lives in the room of the path, over that room's own
#: code (no re-export from aragog._compat): ``aragog.eos.entropy`` (``EntropyEOS``).
UPSTREAM_ADAPTERS_IN_ROOM = {"eos.entropy"}

#: The deliberate exceptions, each with its reason (any other upward edge or cycle fails).
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def room_of(mod: str) -> str:
    return "_compat" if mod in UPSTREAM_PATHS else mod.split(".")[0]


def room_layer(mod: str) -> int:
    room = room_of(mod)
    for i, layer in enumerate(ROOM_LAYERS):
        if room in layer:
            return i
    raise KeyError(room)


def package_upward_edges(graph) -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import of a room of a higher layer (the
    :data:`ALLOWED_UPWARD` ones included)."""
    return [(a, b, line) for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
            if room_layer(b) > room_layer(a)]


def package_report() -> str:
    graph = import_graph(PACKAGE_ROOT, PACKAGE)
    rooms: dict[str, set[str]] = {}
    for a, edges in graph.items():
        for b in edges:
            if room_of(a) != room_of(b):
                rooms.setdefault(room_of(a), set()).add(room_of(b))
    lines = ["rooms (room [layer] -> rooms it imports):"]
    for room in sorted(rooms, key=lambda r: (room_layer(r), r)):
        lines.append(f"  {room or '__init__'} [{room_layer(room)}] -> {', '.join(sorted(rooms[room]))}")
    cycles = find_cycles(graph)
    lines.append(f"module cycles: {len(cycles)}")
    lines += [f"  {' -> '.join(one_cycle(graph, comp))}" for comp in cycles]
    up = package_upward_edges(graph)
    lines.append(f"upward edges: {len(up)}")
    lines += [f"  {a} -> {b} (line {line})" for a, b, line in up]
    return "\n".join(lines)


def test_every_room_has_a_layer():
    rooms = {room_of(m) for m in modules(PACKAGE_ROOT)}
    missing = sorted(r for r in rooms if not any(r in layer for layer in ROOM_LAYERS))
    assert not missing, f"rooms of aragog in no layer of ROOM_LAYERS: {missing}"


def test_package_has_no_import_cycle():
    """No cycle but the :data:`ALLOWED_CYCLES`, and each of those still exists (else the
    exception is stale and goes)."""
    graph = import_graph(PACKAGE_ROOT, PACKAGE)
    comps = find_cycles(graph)
    cycles = [one_cycle(graph, comp) for comp in comps if frozenset(comp) not in ALLOWED_CYCLES]
    assert not cycles, "import cycles in aragog: " + "; ".join(" -> ".join(c) for c in cycles)
    assert set(ALLOWED_CYCLES) <= {frozenset(c) for c in comps}, "a listed cycle is gone: drop it"


def test_package_has_no_upward_import():
    """No import of a higher layer but the :data:`ALLOWED_UPWARD` ones, which must all be
    inside functions (a module-level import of a higher room would load it with ours)."""
    graph = import_graph(PACKAGE_ROOT, PACKAGE)
    up = [(a, b, line) for a, b, line in package_upward_edges(graph) if (a, b) not in ALLOWED_UPWARD]
    assert not up, "imports of a higher layer in aragog: " + "; ".join(
        f"aragog.{a} -> aragog.{b} (line {line})" for a, b, line in up)
    module_level = {(a, b) for a, b in ALLOWED_UPWARD if b in top_level_imports(a)}
    assert not module_level, f"allowed upward imports made at module level: {sorted(module_level)}"


def test_upstream_import_paths_are_thin():
    """Each module at an upstream import path is a docstring, imports from
    ``aragog._compat`` and ``__all__``: the upstream's code lives in one room."""
    mods = modules(PACKAGE_ROOT)
    assert UPSTREAM_PATHS | UPSTREAM_ADAPTERS_IN_ROOM <= set(mods), \
        f"missing: {sorted((UPSTREAM_PATHS | UPSTREAM_ADAPTERS_IN_ROOM) - set(mods))}"
    for mod in sorted(UPSTREAM_PATHS):
        tree = ast.parse(mods[mod].read_text())
        for node in tree.body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]
            reexport = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aragog._compat")
            names = isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]
            assert docstring or reexport or names, \
                f"aragog.{mod} line {node.lineno}: an upstream import path holds only re-exports from aragog._compat"
        exported = set(ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign))))
        imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        assert exported == imported, f"aragog.{mod}: __all__ {sorted(exported)} != imported {sorted(imported)}"


def test_no_native_room_imports_the_upstream_layer():
    """Nothing outside _compat (and its thin import paths) imports it."""
    graph = import_graph(PACKAGE_ROOT, PACKAGE)
    bad = sorted((a, b) for a, edges in graph.items() for b in edges
                 if room_of(b) == "_compat" and room_of(a) not in ("_compat",))
    assert not bad, f"native modules importing the upstream layer: {bad}"


def top_level_imports(mod: str) -> set[str]:
    """The package modules ``mod`` imports at module level (outside any function)."""
    mods = modules(PACKAGE_ROOT)
    return {target for target, _ in imports_of(mod, mods[mod], mods, PACKAGE, in_functions=False)}


if __name__ == "__main__":
    print(report())
    print()
    print(package_report())
