"""The package's layers: old module paths still work, and imports go one way.

``mlir_scan`` is the MLIR core (``_registration``, ``_cli``, ``compiler``, ``runtime``, ``cuda``,
``dialect``, ``_dialects``), the NumPy reference interpreter (``reference``)
and the graph builder (``mlir_scan.builder``). The builder imports the core,
the core never imports the builder, the op classes never import the tensor
DSL, and no module imports another inside a function to get around a cycle.
"""

from __future__ import annotations

import ast
import importlib
import importlib.resources
from pathlib import Path

import pytest

import mlir_scan
from mlir_scan import tensor as T

ROOT = Path(mlir_scan.__file__).parent

# Paths from before ``mlir_scan.builder`` existed -> where the module lives now.
MOVED = {
    "config": "builder.config",
    "emitter": "builder.emitter",
    "function": "builder.function",
    "graph": "builder.graph",
    "ops_basic": "builder.ops.basic",
    "ops_elemwise": "builder.ops.elemwise",
    "ops_shape": "builder.ops.shape",
    "ops_subtensor": "builder.ops.subtensor",
    "random": "builder.tensor.shared_randomstreams",
    "scan_module": "builder.scan_module",
    "scan_op": "builder.ops.scan",
    "sharedvar": "builder.sharedvar",
    "tensor": "builder.tensor",
    "tensor.nnet": "builder.tensor.nnet",
    "tensor.shared_randomstreams": "builder.tensor.shared_randomstreams",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_path_is_the_same_module(old):
    assert importlib.import_module(f"mlir_scan.{old}") is importlib.import_module(f"mlir_scan.{MOVED[old]}")


def test_old_paths_share_state_and_classes():
    import mlir_scan.config
    import mlir_scan.graph
    import mlir_scan.scan_module

    assert mlir_scan.scan_module.until is mlir_scan.until
    assert mlir_scan.graph.Variable is mlir_scan.builder.graph.Variable
    saved = mlir_scan.config.floatX
    try:
        mlir_scan.config.floatX = "float32"
        assert T.vector().dtype == "float32"
    finally:
        mlir_scan.config.floatX = saved
    assert T.vector().dtype == saved


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    # Extension modules (the native call path) are modules too, with no
    # Python imports of their own.
    # (Found by name: an editable install keeps them in site-packages, away
    # from the sources.)
    for entry in importlib.resources.files("mlir_scan").iterdir():
        if entry.name.endswith(".so"):
            out["mlir_scan." + entry.name.split(".")[0]] = (Path(str(entry)), False)
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(["mlir_scan", *parts])] = (path, is_pkg)
    return out


def _imports(name: str, path: Path, is_pkg: bool, known) -> list[tuple[str, bool]]:
    """(imported package module, inside a function?) for each import of `name`."""
    base = name if is_pkg else name.rpartition(".")[0]
    found = []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            targets = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    pkg = base
                    for _ in range(child.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    module = f"{pkg}.{module}" if module else pkg
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in child.names]
            for t in targets:
                while t not in known and "." in t:
                    t = t.rpartition(".")[0]
                if t in known and t != name:
                    found.append((t, nested))
            visit(child, nested)

    if path.suffix == ".py":
        visit(ast.parse(path.read_text()), False)
    return found


def _graph():
    mods = _modules()
    return mods, {name: _imports(name, path, is_pkg, mods) for name, (path, is_pkg) in mods.items()}


def test_core_never_imports_the_builder():
    mods, graph = _graph()
    for name, deps in graph.items():
        # The PyTensor front end sits above the builder, as the builder above the core.
        if name == "mlir_scan" or name.startswith(("mlir_scan.builder", "mlir_scan.pytensor")):
            continue
        bad = [d for d, _ in deps if d == "mlir_scan" or d.startswith("mlir_scan.builder")]
        assert not bad, f"{name} (core) imports {bad}"


def test_ops_never_import_the_dsl_or_the_front_ends():
    _, graph = _graph()
    above = ("mlir_scan.builder.tensor", "mlir_scan.builder.scan_module", "mlir_scan.builder.function",
             "mlir_scan.builder.sharedvar")
    for name, deps in graph.items():
        if name.startswith(("mlir_scan.builder.ops", "mlir_scan.builder.graph", "mlir_scan.builder.emitter")):
            bad = [d for d, _ in deps if d.startswith(above)]
            assert not bad, f"{name} imports {bad}"
    assert not graph["mlir_scan.builder.graph"]
    assert {d for d, _ in graph["mlir_scan.builder.emitter"]} == {"mlir_scan.builder.graph"}


def test_no_import_cycles_and_no_imports_inside_functions():
    _, graph = _graph()
    for name, deps in graph.items():
        inner = [d for d, nested in deps if nested]
        assert not inner, f"{name} imports {inner} inside a function"
    # A package's __init__ importing its own submodules assembles it; it is not a cycle.
    edges = {name: {d for d, _ in deps if not name.startswith(d + ".")} for name, deps in graph.items()}
    state: dict[str, int] = {}

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in edges.get(node, ()):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                walk(dep, stack + [dep])
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            walk(name, [name])


def _third_party_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_pytensor_front_end_imports_pytensor():
    """PyTensor is optional (``mlir-scan[pytensor]``): only ``mlir_scan.pytensor`` imports it,
    and nothing else in the package imports ``mlir_scan.pytensor``."""
    mods, graph = _graph()
    for name, (path, _) in mods.items():
        inside = name == "mlir_scan.pytensor" or name.startswith("mlir_scan.pytensor.")
        if path.suffix == ".py" and not inside:
            assert "pytensor" not in _third_party_imports(path), f"{name} imports pytensor"
        if not inside:
            bad = [d for d, _ in graph[name] if d.startswith("mlir_scan.pytensor")]
            assert not bad, f"{name} imports {bad}"
