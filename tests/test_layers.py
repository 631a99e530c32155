"""The package reads in one direction: each module imports only its own layer and the layers
below (polyimage.LAYERS), and no two modules import each other, directly or around a loop
(polyimage.apps and polyimage.autotune, which live in top-level folders, included); imports
under `if TYPE_CHECKING:`, which never run, count too: a module whose types need another's
that imports it takes a protocol (dsl.expr.Stage, measured.Candidate) instead."""

import ast
import importlib.util
from pathlib import Path

import polyimage
import polyimage.apps
import polyimage.autotune

PACKAGE = Path(polyimage.__file__).resolve().parent
# each installed package and the folder its files are in (apps/ and autotune/ sit beside polyimage/)
ROOTS = {
    "polyimage": PACKAGE,
    "polyimage.apps": Path(polyimage.apps.__file__).resolve().parent,
    "polyimage.autotune": Path(polyimage.autotune.__file__).resolve().parent,
}


def _module_name(path: Path, root: str) -> str:
    parts = path.relative_to(ROOTS[root]).with_suffix("").parts
    parts = root.split(".") + list(parts[:-1] if parts[-1] == "__init__" else parts)
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set:
    """The ids of the nodes under `if TYPE_CHECKING:` (imports only type checkers read)."""
    blocks = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    ]
    return {id(inner) for block in blocks for stmt in block.body for inner in ast.walk(stmt)}


def _imports(path: Path, root: str, type_checking: bool = True) -> set:
    """polyimage modules `path` imports anywhere in its body (functions included; under `if
    TYPE_CHECKING:` too unless `type_checking` is False)."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text())
    skipped = set() if type_checking else _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("polyimage")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("polyimage"):
                continue
            for alias in node.names:  # `from . import expr` names a module
                sub = f"{target}.{alias.name}"
                found.add(sub if _exists(sub) else target)
    return {m for m in found if m != name}


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a name inside a module that is not a package
        return False


def _graph(type_checking: bool = True) -> dict:
    graph = {}
    for root, folder in ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            if root == "polyimage" and path.relative_to(folder).parts[0] in ("apps", "autotune"):
                continue  # a non-editable install copies them under polyimage/
            graph[_module_name(path, root)] = _imports(path, root, type_checking)
    return graph


def _layer_or_none(module: str):
    """The index in polyimage.LAYERS of the layer `module` belongs to, None if none."""
    parts = module.split(".")
    for depth in (2, 1):
        name = ".".join(parts[1 : 1 + depth])
        for k, layer in enumerate(polyimage.LAYERS):
            if name in layer:
                return k
    return None


def _layer(module: str) -> int:
    layer = _layer_or_none(module)
    assert layer is not None, f"{module} is in no layer of polyimage.LAYERS"
    return layer


def test_every_module_is_in_a_layer():
    unplaced = [
        module
        for module in _graph()
        if module not in ("polyimage", "polyimage.__main__") and _layer_or_none(module) is None
    ]
    assert unplaced == [], f"in no layer of polyimage.LAYERS: {unplaced}"


def test_imports_go_down_the_layers():
    upward = []
    for module, imported in _graph().items():
        if module in ("polyimage", "polyimage.__main__"):
            continue
        for target in imported - {"polyimage"}:  # the top package loads its layers lazily
            if _layer(target) > _layer(module):
                upward.append(
                    f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
                )
    assert upward == [], "\n".join(upward)


def test_no_import_cycles():
    graph = _graph(type_checking=True)
    state, cycles = {}, []

    def visit(module, path):
        if state.get(module) == "done":
            return
        if state.get(module) == "active":
            cycles.append(" -> ".join(path[path.index(module) :] + [module]))
            return
        state[module] = "active"
        for target in sorted(graph.get(module, ())):
            if target != "polyimage":
                visit(target, path + [module])
        state[module] = "done"

    for module in graph:
        if module != "polyimage":
            visit(module, [])
    assert cycles == [], "\n".join(cycles)


def test_the_checker_sees_relative_and_nested_imports():
    graph = _graph()
    assert "polyimage.dsl.printer" in graph["polyimage.dsl.expr"]
    assert (
        "polyimage.tools.report" in graph["polyimage.driver.pipeline"]
    )  # imported inside a method
    assert "polyimage.algebra.affine" in graph["polyimage.algebra.evaluate"]
    assert "polyimage.commands.cli_arguments" in graph["polyimage.commands.batch"]
    assert "polyimage.apps.inputs" in graph["polyimage.apps.harris"]
    assert "polyimage.autotune.store" in graph["polyimage.autotune.tuner"]
    # report.py names lower.Compiled only in annotations: an edge all the same
    assert "polyimage.driver.lower" in graph["polyimage.tools.report"]
    assert "polyimage.driver.lower" not in _graph(type_checking=False)["polyimage.tools.report"]
