"""Sphinx configuration for the tensorprob documentation.

Build (from the repository root, with the ``docs`` extra installed)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Generated at build time, never committed (see .gitignore):

- ``docs/api/``: the API reference. One page lists every name in the ``__all__`` of
  :mod:`tensorprob` and of each public subpackage (found with :mod:`pkgutil`, so a package or a
  name added to an ``__all__`` appears without editing these docs); autosummary writes one page
  per name from its numpydoc docstring.
- ``docs/notebooks/``: copies of ``notebooks/*.ipynb``, rendered by myst-nb. They are committed
  without outputs, so they are executed here in their small setting
  (``TENSORPROB_NOTEBOOK_SMALL=1``, the setting ``tests/test_notebooks.py`` runs), with the
  inline matplotlib backend so that their figures appear on the pages.
  ``TENSORPROB_DOCS_EXECUTE=off`` renders them unexecuted (a quick local build).
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document this checkout, installed or not

import tensorprob  # noqa: E402

project = "tensorprob"
author = "the tensorprob developers"
copyright = "2026, the tensorprob developers"
version = release = tensorprob.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "reproductions/overview_table.md"]
templates_path = ["_templates"]
root_doc = "index"

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"tensorprob {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False

# -- MyST / notebooks -----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = os.environ.get("TENSORPROB_DOCS_EXECUTE", "auto")  # auto: run notebooks without outputs
nb_execution_timeout = 600  # seconds per cell
nb_execution_raise_on_error = True
nb_execution_show_tb = True
os.environ.setdefault("TENSORPROB_NOTEBOOK_SMALL", "1")  # inherited by the notebook kernels
# The kernels draw with IPython's inline backend, so every figure a cell makes is shown on the page
# (under Agg, which a plain script gets, none would be: an environment that sets MPLBACKEND=Agg
# must not empty the notebook pages, hence no setdefault).
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])

# -- autodoc / autosummary / numpydoc -----------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc sections carry the types
add_module_names = False

numpydoc_show_class_members = False  # the class template lists members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True
# numpydoc's docstring validation: every check except those listed. A failing check is a
# warning, and the CI build (-W) turns it into an error.
numpydoc_validation_checks = {
    "all",
    "ES01",  # extended summary: optional
    "EX01",  # Examples: wanted for the headline API, not for every helper
    "SA01",  # See Also: optional
    "GL08",  # no docstring: applies to inherited scikit-learn members we do not document
    "RT02",  # "the first line of Returns should contain only the type": named returns are used
    "PR02",  # unknown parameters: false positives on classes documented with their __init__
    "SS05",  # "summary must start with infinitive verb": property docstrings are noun phrases
    "YD01",  # Yields: context managers (config_context) are generators without a Yields section
}
numpydoc_validation_exclude = {
    r"\.[A-Z][A-Z0-9]*_[A-Z0-9_]+$",  # module constants (PLANTED_SHAPES): documented where they are used
    r"\.__init__$",
    r"\.__\w+__$",  # special methods
    r"\.set_\w*request$",  # scikit-learn's metadata-routing helpers
}

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "torch": ("https://docs.pytorch.org/docs/stable", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
if os.environ.get("TENSORPROB_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}  # CI has no network; links to other projects are plain text then

nitpicky = False

# -- build-time generation ----------------------------------------------------------------------


def _public_subpackages() -> list[str]:
    """Public subpackages of tensorprob (no leading underscore), sorted by name."""
    return sorted(m.name for m in pkgutil.iter_modules(tensorprob.__path__) if m.ispkg and not m.name.startswith("_"))


def _names(module) -> list[str]:
    return [n for n in getattr(module, "__all__", []) if not inspect.ismodule(getattr(module, n, None))]


def _autosummary(module: str, names: list[str]) -> str:
    if not names:
        return ""
    rows = "\n".join(f"   {n}" for n in names)
    return f".. currentmodule:: {module}\n\n.. autosummary::\n   :toctree: generated\n   :nosignatures:\n\n{rows}\n\n"


def write_api_reference() -> None:
    """Write docs/api/index.rst from the ``__all__`` lists (names at the top level are documented
    there once; a subpackage section lists the rest and points to the top-level ones)."""
    out = DOCS / "api"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    top = _names(tensorprob)
    text = ["API reference", "=============", "",
            "Generated from the ``__all__`` lists of :mod:`tensorprob` and of its public subpackages:",
            "every public name has a page built from its docstring. Modules and names with a leading",
            "underscore are private.", "",
            "tensorprob", "----------", "", ".. automodule:: tensorprob", "   :no-members:", "",
            _autosummary("tensorprob", top)]
    for sub in _public_subpackages():
        mod = importlib.import_module(f"tensorprob.{sub}")
        full = f"tensorprob.{sub}"
        own, shared = [], []
        for n in _names(mod):
            (shared if n in top and getattr(tensorprob, n) is getattr(mod, n) else own).append(n)
        text += [full, "-" * len(full), "", f".. automodule:: {full}", "   :no-members:", ""]
        if shared:
            refs = ", ".join(f":obj:`~tensorprob.{n}`" for n in shared)
            text += [f"Also exported here (documented under :mod:`tensorprob`): {refs}.", ""]
        text.append(_autosummary(full, own))
    (out / "index.rst").write_text("\n".join(text))


def copy_notebooks() -> None:
    """Copy notebooks/*.ipynb to docs/notebooks/ (Sphinx reads sources only below docs/)."""
    out = DOCS / "notebooks"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.ipynb"):
        old.unlink()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(nb, out / nb.name)


_SKLEARN_GENERATED = re.compile(r"^set_\w+_request$")


def _skip_generated_members(app, what, name, obj, skip, options):
    """Leave out members whose text is generated elsewhere: the "Alias for field number N"
    properties of named tuples (the class docstring documents the fields) and scikit-learn's
    metadata-routing ``set_*_request`` methods (documented by scikit-learn, whose glossary
    their docstrings link to)."""
    if not callable(obj) and (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    if _SKLEARN_GENERATED.match(name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_generated_members)


def write_reproduction_summary() -> None:
    """docs/reproductions/summary.md from benchmarks/REPRODUCTIONS.md when it exists (links into
    results/ pointed at the pages that include those reports, other local links at the files),
    else from the table kept in docs/reproductions/overview_table.md."""
    import re

    src = ROOT / "benchmarks" / "REPRODUCTIONS.md"
    page = DOCS / "reproductions" / "summary.md"
    if not src.exists():
        page.write_text("# Summary\n\n```{include} overview_table.md\n```\n")
        return

    def relink(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        if re.match(r"[a-z]+:|#", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        name = Path(path).stem
        if path.startswith("results/") and path.endswith(".md") and (DOCS / "reproductions" / f"{name}.md").exists():
            return f"[{text}]({name}.md{'#' + anchor if anchor else ''})"
        if (ROOT / "benchmarks" / path).exists():
            return f"[{text}](../../benchmarks/{path})"
        return text  # a link to nothing in this checkout: keep the words

    body = re.sub(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)", relink, src.read_text())
    body = re.sub(r"!\[([^\]]*)\]\((?![a-z]+:)([^)\s]+)\)", r"![\1](../../benchmarks/\2)", body)
    page.write_text("<!-- generated by docs/conf.py from benchmarks/REPRODUCTIONS.md -->\n" + body)


write_api_reference()
copy_notebooks()
write_reproduction_summary()
