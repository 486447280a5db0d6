"""The packages' import graphs: one-way dependencies, as built by grimp from every import statement
(those inside functions too)."""

from __future__ import annotations

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
