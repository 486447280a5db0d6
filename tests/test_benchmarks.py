"""The benchmarks are a package whose modules import cleanly, so a change to the library that breaks one
fails here, not months later when someone measures."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import benchmarks

ROOT = Path(__file__).resolve().parent.parent
HELPERS = {"docs_figures", "before"}  # imported by the others (before by run.py --before), not run


def benchmark_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__))


def test_every_benchmark_module_imports_without_touching_sys_path_or_the_environment():
    path_before, env_before = list(sys.path), dict(os.environ)
    names = benchmark_modules()
    modules = {name: importlib.import_module(f"benchmarks.{name}") for name in names}
    assert {"run", "corpus", "floor", "bench_redact", "ranking"} <= set(modules)
    assert all(callable(getattr(m, "main", None)) for name, m in modules.items() if name not in HELPERS)
    assert sys.path == path_before
    assert dict(os.environ) == env_before


def test_the_benchmarks_run_as_modules_of_the_package_from_the_repository_root():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    as_module = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--help"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert as_module.returncode == 0, as_module.stderr
    assert "--quick" in as_module.stdout
    edits_sys_path = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*(\+?=|\[)")
    assert [p.name for p in (ROOT / "benchmarks").glob("*.py") if edits_sys_path.search(p.read_text())] == []


def test_run_before_a_folder_without_its_own_venv_is_refused_in_one_line_with_an_example(tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--before", str(tmp_path), "--work", str(tmp_path / "work")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"{tmp_path} has no .venv/bin/python: give a checkout with its own venv, e.g. --before /work/old"
    ]
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "work" / "before").exists()
