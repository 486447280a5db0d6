"""The suite's own shape: test modules share helpers through conftest.py and helper modules, never
through each other (importing a test module runs its tests twice and ties unrelated files together)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def suite_modules(folder: Path = TESTS) -> set[str]:
    """The names of the test modules in a folder (test_*.py)."""
    return {path.stem for path in folder.rglob("test_*.py")}


def imported_test_modules(source: str, modules: set[str]) -> list[str]:
    """The modules among `modules` that this source imports, anywhere in it (functions too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in modules]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in modules:
                found.append(node.module)
    return found


def test_no_test_module_or_helper_imports_a_test_module():
    modules = suite_modules()
    offenders = {
        path.name: imported_test_modules(path.read_text(), modules)
        for path in sorted(TESTS.rglob("*.py"))
        if "fixtures" not in path.parts
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_an_import_of_a_test_module_is_found_wherever_it_is_written():
    modules = {"test_indexer", "test_serve"}
    source = (
        "from test_indexer import vocab\nimport test_serve as served\ndef later():\n    from test_serve import Server\n"
    )
    assert imported_test_modules(source, modules) == ["test_indexer", "test_serve", "test_serve"]
    helpers = "from indexed import vocab\nimport servers\nfrom pimem_index import indexer\n"
    assert imported_test_modules(helpers, modules) == []


def test_test_module_names_are_unique_across_folders():
    """The folders have no __init__.py (pytest's rootdir import mode), so two test files may not share a name."""
    names = [path.name for path in TESTS.rglob("test_*.py") if "fixtures" not in path.parts]
    assert sorted(names) == sorted(set(names))


def test_the_suite_has_tests_in_every_package_folder():
    folders = {"index", "search", "session", "manage", "redaction", "cli", "plugin", "server"}
    assert {f for f in folders if list((TESTS / f).glob("test_*.py"))} == folders
