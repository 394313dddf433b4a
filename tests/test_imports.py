"""aragog.csdl is layered: its import graph has no cycle and no upward import.

Every module under ``src/aragog/csdl`` is parsed with :mod:`ast` (nothing is imported);
every ``import`` / ``from ... import`` statement counts, at module level, inside
functions and classes, and under ``if TYPE_CHECKING:`` alike, relative or absolute.
An edge A -> B means that A names B (``from aragog.csdl.operations import add`` is an
edge to ``operations``, ``from aragog.csdl.operations.shape import reshape`` one to
``operations.shape``). Importing a submodule also runs its parent package's
``__init__``; that implicit edge is not counted (a package importing its own submodules
would otherwise always be a cycle).

:data:`LAYERS` lists the layers, lowest first. A module may import modules of lower
layers and of its own layer (if that makes no cycle), never of a higher one.

``python tests/test_imports.py`` prints the graph, its cycles and its upward edges.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "src" / "aragog" / "csdl"
PKG = "aragog.csdl"

# lowest first; names are relative to aragog.csdl ("" is the package itself)
LAYERS: list[set[str]] = [
    {"recorder", "variable", "compiling"},
    {"operation"},
    {"operations", "operations.custom", "operations.elementwise", "operations.implicit",
     "operations.jaxfn", "operations.linalg", "operations.loop", "operations.shape"},
    {"derivative"},
    {"region", "share"},
    {"compress"},
    {"simulators", "schedule"},
    {""},
]


def modules() -> dict[str, pathlib.Path]:
    """Module name (relative to aragog.csdl; "" for the package) -> file."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known) -> str | None:
    """The csdl module that the absolute dotted ``name`` denotes, or None."""
    if name == PKG:
        return ""
    if not name.startswith(PKG + "."):
        return None
    rel = name[len(PKG) + 1:]
    while rel and rel not in known:  # a name inside a module: aragog.csdl.variable.Variable
        rel = rel.rpartition(".")[0]
    return rel


def imports_of(mod: str, path: pathlib.Path, known) -> list[tuple[str, int]]:
    """(imported csdl module, line) for every import statement of ``mod``."""
    is_pkg = path.name == "__init__.py"
    package = ".".join(p for p in (PKG, mod) if p) if is_pkg else \
        ".".join(p for p in (PKG, mod.rpartition(".")[0]) if p)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
            names = [n if _resolve(n, known) == n[len(PKG) + 1:] else base for n in names]
        else:
            continue
        for name in names:
            target = _resolve(name, known)
            if target is not None and target != mod:
                found.append((target, node.lineno))
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line importing it}."""
    mods = modules()
    graph: dict[str, dict[str, int]] = {}
    for mod, path in mods.items():
        edges = graph.setdefault(mod, {})
        for target, line in imports_of(mod, path, mods):
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
    ("from aragog.csdl.operations.shape import reshape", "operations.shape"),
    ("from aragog.csdl import region", "region"),
    ("import aragog.csdl.variable", "variable"),
    ("from .. import operation", "operation"),
    ("from .shape import reshape", "operations.shape"),
    ("from . import shape", "operations.shape"),
])
def test_graph_reader_resolves_imports(tmp_path, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(f"def f():\n    {source}\n")
    assert imports_of("operations.probe", path, modules()) == [(expected, 2)]


if __name__ == "__main__":
    print(report())
