"""The package's layout: every module is on the documentation's layout page, no modules
import each other in a cycle, and layers import downwards (imports inside functions
included), read from the source with :mod:`ast`."""
import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "clusterkit"
LAYOUT = PACKAGE.parent / "docs" / "layout.rst"


def _modules():
    """``{dotted name: path}`` of every Python and Cython module of the package (a
    package's ``__init__.py`` under the package's name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
            continue
        parts = ("clusterkit",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(name, path):
    """The modules of the package that ``name`` (at ``path``) imports anywhere in its
    source: at the top, inside functions or under conditions. ``from package import
    module`` imports that module; ``from package import name`` the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in MODULES else source)
    return {module for module in found if module in MODULES and module != name}


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_modules_import_each_other():
    """(The Cython modules import only NumPy, SciPy's BLAS and each other's ``.pxd``.)"""
    graph = {name: _imports(name, path) if path.suffix == ".py" else set()
             for name, path in MODULES.items()}
    assert graph["clusterkit._estimator.clusterer"]  # the reader finds imports
    assert _cycles(graph) == []


def test_no_packages_import_each_other():
    """The same for the folders (a module of one importing a module of the other)."""
    def folder(name):
        return name.split(".")[1] if "." in name else ""
    graph = {}
    for name, path in MODULES.items():
        imported = _imports(name, path) if path.suffix == ".py" else set()
        graph.setdefault(folder(name), set()).update(
            folder(other) for other in imported if folder(other) != folder(name))
    assert graph["_engine"]  # the folders import each other downwards
    assert _cycles(graph) == []


def test_no_import_after_the_module_code():
    """Imports come first (after the docstring and ``from __future__``): an import at the
    end of a module re-exports or breaks a cycle, which the layout forbids."""
    for name, path in MODULES.items():
        if path.suffix != ".py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        seen_code = False
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                assert not seen_code, f"{name}: import at line {node.lineno} after code"
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                seen_code = True


#: The layers, lowest first: a module may import from its own layer and those below.
LAYERS = [("_kernels", "_reference"), ("_data",), ("_engine",),
          ("seeding", "reduction", "estep", "mstep", "schedules", "refine", "slk"),
          ("_estimator",),
          ("presets", "metrics", "datasets", "ablation", "__main__", "_demo", "")]



def _layer(name):
    """The index in :data:`LAYERS` of the module ``name`` (``""``: the package itself, whose
    public names the command line and the demo use)."""
    part = name.split(".")[1] if "." in name else ""
    return next(i for i, layer in enumerate(LAYERS) if part in layer)


def test_layers_import_downwards():
    upward = {(name, other) for name, path in MODULES.items() if path.suffix == ".py"
              for other in _imports(name, path) if _layer(other) > _layer(name)}
    assert upward == set()


def test_examples_import_downwards():
    """Examples (``>>>`` lines) below the estimator face import neither it nor the presets,
    the command line or the ablation API; the estimator's examples not the presets (they may
    use the package's public names, ``from clusterkit import ...``)."""
    pattern = re.compile(r">>>\s*(?:from|import)\s+(clusterkit(?:\.\w+)+)")
    estimator = _layer("clusterkit._estimator")
    top = {"clusterkit.presets", "clusterkit.ablation", "clusterkit.__main__"}
    upward = [(name, other) for name, path in MODULES.items() if path.suffix == ".py"
              for other in pattern.findall(path.read_text(encoding="utf-8"))
              if other in top and _layer(name) <= estimator
              or _layer(other) == estimator and _layer(name) < estimator]
    assert upward == []


@pytest.mark.parametrize("name", sorted(name for name, path in MODULES.items()
                                         if path.name != "__init__.py" or name == "clusterkit"))
def test_every_module_is_on_the_layout_page(name):
    """Every module by its path under ``clusterkit/`` (a subpackage's ``__init__.py`` holds
    only its map; the page says so once)."""
    page = LAYOUT.read_text(encoding="utf-8")
    relative = MODULES[name].relative_to(PACKAGE).as_posix()
    assert f"``{relative}``" in page, f"docs/layout.rst does not list {relative}"


def test_the_rows_kind_is_asked_in_one_place():
    """Whether rows are dense or CSR is asked by ``_data/sparse.py`` (``kernels_for``);
    elsewhere code binds the kind's kernels. The kNN graph parameter of Laplacian K-modes is
    a sparse matrix by contract, not rows."""
    allowed = {"_data/sparse.py", "slk/laplacian.py"}
    asking = {path.relative_to(PACKAGE).as_posix() for path in MODULES.values()
              if "is_sparse" in path.read_text(encoding="utf-8")
              or "issparse" in path.read_text(encoding="utf-8")}
    assert asking <= allowed
