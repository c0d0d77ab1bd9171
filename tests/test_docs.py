"""The documentation: the API reference lists every public name, and Sphinx builds it with -W
(its code examples run in tests/test_docs_examples.py).

The build runs offline (intersphinx is off unless ``CLUSTERKIT_DOCS_INTERSPHINX=1``) and is
skipped only when Sphinx itself is not installed.
"""
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import clusterkit

DOCS = Path(__file__).resolve().parent.parent / "docs"
API = DOCS / "api.rst"
PUBLIC_MODULES = ("clusterkit.presets", "clusterkit.metrics", "clusterkit.datasets")

# (abstract strategy, method) whose signatures docs/composing.rst spells out
STRATEGY_VERBS = [
    ("DataReducer", "reduce"),
    ("Seeder", "seed"),
    ("EStep", "assign"),
    ("EStep", "init_state"),
    ("MStep", "update"),
    ("MStep", "init_state"),
    ("Schedule", "batches"),
    ("Schedule", "should_stop"),
]


def _import_optional(name):
    """The module, or ``None`` if it does not exist (any other import error propagates)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def _public_functions(module):
    """``__all__`` if the module defines it, else its own functions without a leading _."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, obj in vars(module).items()
            if not name.startswith("_") and inspect.isfunction(obj)
            and obj.__module__ == module.__name__]


def _autosummary_entries(text):
    """Fully qualified names listed in the autosummary tables of an rst file."""
    entries, module, in_table = set(), None, False
    for line in text.splitlines():
        stripped = line.strip()
        match = re.match(r"\.\. currentmodule:: (\S+)", stripped)
        if match:
            module, in_table = match.group(1), False
            continue
        if stripped.startswith(".. autosummary::"):
            in_table = True
            continue
        if not in_table:
            continue
        if line and not line[0].isspace():
            in_table = False
        elif stripped and not stripped.startswith(":"):
            name = stripped.lstrip("~")
            entries.add(name if module is None else f"{module}.{name}")
    return entries


@pytest.fixture(scope="module")
def api_entries():
    return _autosummary_entries(API.read_text(encoding="utf-8"))


def test_api_lists_every_public_name(api_entries):
    missing = sorted(set(clusterkit.__all__) - {name.rsplit(".", 1)[-1] for name in api_entries
                                               if name.rsplit(".", 1)[0] == "clusterkit"})
    assert not missing, (
        f"docs/api.rst does not list these names of clusterkit.__all__: {missing}; add them to "
        f"an autosummary table under '.. currentmodule:: clusterkit'.")


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_api_lists_every_public_function_of_submodules(module_name, api_entries):
    module = _import_optional(module_name)
    if module is None:
        pytest.skip(f"{module_name} does not exist in this version")
    text = API.read_text(encoding="utf-8")
    assert f".. automodule:: {module_name}" in text, (
        f"docs/api.rst has no section for {module_name}.")
    missing = sorted(f"{module_name}.{name}" for name in _public_functions(module)
                     if f"{module_name}.{name}" not in api_entries)
    assert not missing, (
        f"docs/api.rst does not list {missing}; add them to the autosummary table under "
        f"'.. currentmodule:: {module_name}'.")


def test_api_lists_only_existing_names(api_entries):
    unknown = []
    for full_name in sorted(api_entries):
        module_name, _, attr = full_name.rpartition(".")
        module = _import_optional(module_name)
        if module is None or not hasattr(module, attr):
            unknown.append(full_name)
    assert not unknown, f"docs/api.rst lists names that do not exist: {unknown}"


@pytest.mark.parametrize("cls_name, method", STRATEGY_VERBS)
def test_composing_page_shows_current_strategy_signatures(cls_name, method):
    text = " ".join((DOCS / "composing.rst").read_text(encoding="utf-8").split())
    params = list(inspect.signature(getattr(getattr(clusterkit, cls_name), method)).parameters)
    shown = f"{method}({', '.join(params[1:])})"
    assert f":meth:`{shown} <clusterkit.{cls_name}.{method}>`" in text, (
        f"docs/composing.rst should show {cls_name}.{method} as {shown}, its signature in "
        f"clusterkit/_engine/contracts.py.")


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx is not installed; pip install '.[docs]'")
    env = dict(os.environ)
    env.pop("CLUSTERKIT_DOCS_INTERSPHINX", None)  # the build must pass without network
    # build against the clusterkit this test imported (in place or installed)
    package_root = str(Path(clusterkit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-j", "1",
               "-b", "html", "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (
        f"python -m sphinx -W failed (exit {result.returncode}):\n{result.stderr}\n"
        f"{result.stdout}")
    for page in ("index", "install", "quickstart", "composing", "api", "paper_var_gmm",
                 "paper_vc_gmm", "paper_nmbatch", "paper_sbe", "paper_slk"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), f"{page}.html was not built"
    for name in clusterkit.__all__:
        assert (tmp_path / "html" / "generated" / f"clusterkit.{name}.html").is_file(), (
            f"no API page was generated for clusterkit.{name}")

