"""The packages' import graphs: one-way dependencies, as built by grimp from every import statement
(those inside functions too)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

PACKAGES = ("pimem_index", "datasette_pi_memory")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One cycle (its modules in import order, the first repeated at the end) per tangle of modules
    that import each other, found by a depth-first walk of the direct imports."""
    imports = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in sorted(graph.modules)}
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" after
    path: list[str] = []
    cycles: list[list[str]] = []

    def walk(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for imported in imports[module]:
            if state.get(imported) == "open":
                cycles.append(path[path.index(imported) :] + [imported])
            elif imported not in state:
                walk(imported)
        path.pop()
        state[module] = "done"

    for module in imports:
        if module not in state:
            walk(module)
    return cycles


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_has_an_import_cycle(package):
    cycles = import_cycles(grimp.build_graph(package, cache_dir=None))
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_names_the_modules_of_a_cycle():
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
    graph.remove_import(importer="p.c", imported="p.a")
    assert import_cycles(graph) == []


def test_the_library_never_imports_datasette_or_the_plugin():
    graph = grimp.build_graph("pimem_index", "datasette_pi_memory", include_external_packages=True, cache_dir=None)
    found = [
        f"{d['importer']}:{d['line_number']} {d['line_contents']}"
        for module in sorted(graph.find_children("pimem_index") | graph.find_descendants("pimem_index"))
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if imported.split(".")[0] in ("datasette", "datasette_pi_memory")
        for d in graph.get_import_details(importer=module, imported=imported)
    ]
    assert found == [], "the library imports Datasette or the plugin: " + "; ".join(found)


# The library's layers, highest first (docs/design.md draws them). A module imports its own layer and those
# below it; `index` and `search` stand side by side and never import each other (reading needs nothing of how
# the index is written). The package's __init__ (the public surface) and the CLI on top import anything.
LIBRARY_LAYERS = (
    "cli",
    "manage",
    "session",
    grimp.Layer("index", "search", independent=True),
    "redaction",
    grimp.Layer("store", "locations", "db", "memo", "journal", "replies", "humanize", "errors", independent=False),
)


def _describe(dependencies) -> list[str]:
    return [
        f"{route.heads} -> {route.tails} (via {route.middle})"
        for dependency in dependencies
        for route in dependency.routes
    ]


def test_the_library_layers_import_only_downwards():
    graph = grimp.build_graph("pimem_index", cache_dir=None)
    illegal = graph.find_illegal_dependencies_for_layers(layers=LIBRARY_LAYERS, containers={"pimem_index"})
    assert not illegal, "a layer imports one above it: " + "; ".join(_describe(illegal))


def test_the_redaction_layer_imports_nothing_else_of_the_library():
    graph = grimp.build_graph("pimem_index", cache_dir=None)
    found = {
        (module, imported)
        for module in graph.find_descendants("pimem_index.redaction") | {"pimem_index.redaction"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("pimem_index") and not imported.startswith("pimem_index.redaction")
    }
    assert found == set()


def _plugin_imports() -> list[tuple[str, str, str]]:
    """(importer, imported, line) for every import of the library by the plugin, the server application apart."""
    graph = grimp.build_graph("pimem_index", "datasette_pi_memory", cache_dir=None)
    plugin = graph.find_descendants("datasette_pi_memory") | {"datasette_pi_memory"}
    return [
        (module, imported, d["line_contents"])
        for module in sorted(plugin)
        if not module.startswith("datasette_pi_memory.server")
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if imported.split(".")[0] in ("pimem_index", "datasette_pi_memory")
        for d in graph.get_import_details(importer=module, imported=imported)
    ]


def test_the_plugin_imports_only_the_librarys_public_surface():
    import pimem_index

    public = set(pimem_index.__all__)
    # a name of the surface that is itself a module (query, db, ...) shows in the graph as that module
    found = [
        (m, imported, line)
        for m, imported, line in _plugin_imports()
        if imported.startswith("pimem_index") and imported not in {"pimem_index"} | {f"pimem_index.{n}" for n in public}
    ]
    assert found == [], "the plugin reaches past pimem_index's public surface: " + "; ".join(map(str, found))
    plugin = Path(__file__).parent.parent / "datasette_pi_memory"
    names = {
        alias.name
        for path in plugin.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "pimem_index"
        for alias in node.names
    }
    assert names and names <= public, f"not in pimem_index.__all__: {sorted(names - public)}"


def test_the_plugin_never_imports_the_server_application():
    found = [(m, i) for m, i, _ in _plugin_imports() if i.startswith("datasette_pi_memory.server")]
    assert found == []


def test_importing_the_plugin_loads_neither_the_cli_nor_the_server_application():
    code = (
        "import sys, datasette_pi_memory; "
        "print(sorted(m for m in sys.modules if m == 'pimem_index.cli' or m.startswith('datasette_pi_memory.server')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
