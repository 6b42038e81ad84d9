"""The layer rules of docs/internals.md, checked on the source: the import graph between our modules
(every import, also those inside functions) has no circles and only points down the layers, and no
production module grows past the size where it usually does more than one job."""
from __future__ import annotations

import ast
import os

import pytest

from bench.graph_cycles import cycles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ["codec", "store", "interop", "security", "semantics", "cluster", "tables", "gateway", "client", "spark"]
# What each package may import of ours (besides itself).
ALLOWED = {
    "codec": set(),
    "store": {"codec"},
    "client": {"codec"},
    "interop": {"codec"},
    "security": {"codec", "store"},
    "semantics": {"codec", "store", "interop"},
    "cluster": {"codec"},  # etcd client and cluster model: not the gateway, semantics or store
    "tables": {"codec", "store", "interop", "semantics"},  # Iceberg table topics (docs/tables.md)
    "gateway": {"codec", "store", "interop", "security", "semantics", "cluster", "tables"},
    "spark": {"codec", "client"},
}
MAX_LINES = 450
DECLARATIONS = {os.path.join("codec", "kafka", "apis.py")}  # one schema table per API: long, one job


def _modules() -> dict[str, str]:
    found = {}
    for pkg in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, pkg)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    mod = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
                    found[mod] = path
    return found


def _resolve(name: str, known) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str, path: str, known) -> set[str]:
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for name in names:  # `from a.b import c` runs a.b (and its package) and maybe module a.b.c
            target = _resolve(name, known)
            if target and target != mod:
                out.add(target)
    return out


def _graph():
    known = _modules()
    return known, {mod: _imports(mod, path, known) for mod, path in known.items()}


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module."""
    return cycles(graph)


def test_no_import_circles():
    _, graph = _graph()
    assert _cycles(graph) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_layers_point_down(package):
    _, graph = _graph()
    wrong = sorted(f"{mod} imports {dep}" for mod, deps in graph.items() if mod.split(".")[0] == package
                   for dep in deps if dep.split(".")[0] not in ALLOWED[package] | {package})
    assert wrong == []


def test_modules_stay_small():
    known, _ = _graph()
    big = []
    for path in known.values():
        rel = os.path.relpath(path, ROOT)
        lines = sum(1 for _ in open(path, encoding="utf-8"))
        if lines > MAX_LINES and rel not in DECLARATIONS:
            big.append(f"{rel}: {lines} lines")
    assert big == []


def test_the_checker_sees_a_circle_and_a_wrong_layer():
    """The checks above fail when the rules are broken (so a green run means something)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    known = {"codec": "", "codec.x": "", "store": "", "store.y": ""}
    assert _resolve("store.y.Thing", known) == "store.y"
    assert _resolve("trio.lowlevel", known) is None
