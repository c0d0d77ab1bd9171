"""Sphinx configuration of the clusterkit documentation.

Build with ``python -m sphinx -W -b html docs docs/_build/html`` from the repository root (the
package must be importable: installed, or compiled in place). The build needs no network:
intersphinx links to NumPy, SciPy and scikit-learn are only set up when the environment
variable ``CLUSTERKIT_DOCS_INTERSPHINX=1`` is set.
"""
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

DOCS = Path(__file__).resolve().parent

try:
    import clusterkit
except ImportError:  # running from a source checkout that was compiled in place
    sys.path.insert(0, str(DOCS.parent))
    import clusterkit

# -- project -----------------------------------------------------------------------------------

project = "clusterkit"
author = "the clusterkit developers"
copyright = "the clusterkit developers"
version = release = clusterkit.__version__

# -- general -----------------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store"]
default_role = "literal"
pygments_style = "sphinx"

# autodoc / autosummary: one stub page per public name, written to docs/generated/ at build
# time (the folder is git-ignored).
autosummary_generate = True
autosummary_generate_overwrite = True
autodoc_typehints = "none"

# numpydoc renders the Parameters/Attributes/... sections; member tables come from the
# autosummary class template, so numpydoc must not add its own.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# CLUSTERKIT_DOCS_VALIDATE=1 also reports numpydoc's docstring checks as build warnings (left
# out: extended summary, See Also, Examples, and the checks that reject the "name : type"
# Returns lines and bare parameter lines the code base uses on purpose).
if os.environ.get("CLUSTERKIT_DOCS_VALIDATE", "0") not in ("", "0"):
    numpydoc_validation_checks = {"all", "ES01", "SA01", "EX01", "RT02", "RT03", "PR07"}

# -- intersphinx: only on request, so that the offline -W build never touches the network ---

intersphinx_mapping = {}
if os.environ.get("CLUSTERKIT_DOCS_INTERSPHINX", "0") not in ("", "0"):
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
    }

# -- HTML --------------------------------------------------------------------------------------

if importlib.util.find_spec("pydata_sphinx_theme") is not None:
    html_theme = "pydata_sphinx_theme"
    html_theme_options = {
        "navigation_with_keys": False,
        "show_toc_level": 2,
        "secondary_sidebar_items": ["page-toc"],
    }
    # the left sidebar lists a page's sub-pages: only the API reference has any
    html_sidebars = {page: [] for page in ("index", "install", "quickstart", "composing",
                                           "paper_*")}
else:
    html_theme = "alabaster"
    html_theme_options = {"description": "Composable k-means and GMMs for many clusters"}
html_title = f"clusterkit {release}"
html_static_path = []
html_show_sourcelink = False


# -- the :ck: role: a strategy name that links when it exists and says "planned" otherwise ----


def _available(name):
    """Whether ``name`` (``"PartialEStep"`` or ``"presets.vc_gmm"``) is public in clusterkit."""
    module, _, attr = name.rpartition(".")
    if not module:
        return attr in getattr(clusterkit, "__all__", ())
    try:
        mod = importlib.import_module(f"clusterkit.{module}")
    except ImportError:
        return False
    return attr in getattr(mod, "__all__", ()) or (
        not attr.startswith("_") and callable(getattr(mod, attr, None)))


def ck_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    """``:ck:`PartialEStep(G=5)``` -> a link to ``clusterkit.PartialEStep`` titled with the
    full text if that name is public, else the literal text followed by "(planned)"."""
    shown = text.strip()
    target = shown.split("(", 1)[0].strip()
    if _available(target):
        py_obj = inliner.document.settings.env.get_domain("py").role("obj")
        return py_obj("py:obj", rawtext, f"{shown} <clusterkit.{target}>", lineno, inliner,
                      options or {}, content)
    return [nodes.literal(rawtext, shown), nodes.emphasis("", " (planned)")], []


class CkPlanned(SphinxDirective):
    """``.. ck-planned:: NameA NameB`` -> a note naming those of the strategies that are not
    public yet (nothing once all are); the directive's content is appended to the note."""

    required_arguments = 1
    optional_arguments = 20
    has_content = True

    def run(self):
        missing = [name for name in self.arguments if not _available(name)]
        if not missing:
            return []
        note = nodes.note()
        para = nodes.paragraph()
        para += nodes.Text("Planned: ")
        for i, name in enumerate(missing):
            if i:
                para += nodes.Text(", ")
            para += nodes.literal(name, name)
        para += nodes.Text(". These strategies are not available in this version yet; the "
                           "mapping below shows where each step of the paper is meant to go.")
        note += para
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, note)
        return [note]


def skip_member(app, what, name, obj, skip, options):
    """Skip the ``set_<method>_request`` methods scikit-learn generates for metadata routing:
    their docstrings point into scikit-learn's own documentation."""
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_member)
    app.add_role("ck", ck_role)
    app.add_directive("ck-planned", CkPlanned)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
