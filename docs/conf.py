"""Sphinx configuration of dperm's documentation site.

Build (from the repository root; the README gives the same command)::

    pip install ".[docs]" && sphinx-build -W --keep-going -b html docs docs/_build/html

The API pages are generated from the docstrings (autodoc + autosummary, numpydoc layout);
the examples under docs/examples/ run at build time (sphinx-gallery) and draw their figures;
the Markdown pages (user guide, privacy analysis, specification, benchmarks) are read by
myst-parser.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")

import dperm  # noqa: E402  (the installed package, built by pip install)

project = "dperm"
author = "the dperm developers"
copyright = "2026, the dperm developers"
release = dperm.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json", "report/*/**", "examples/*",
                    "generated/*.md"]

# --- autodoc / autosummary / numpydoc
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"inherited-members": False}
autodoc_typehints = "none"          # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# numpydoc's validation: every parameter documented (PR01), none that does not exist
# (PR02), in the signature's order (PR03), with numpydoc's type names (PR06) and colon
# spacing (PR10); a Returns section where something is returned (RT01), Yields for a
# generator (YD01); a docstring (GL08) with a summary (SS01), known sections (GL06) in
# numpydoc's order (GL07).  tests/test_docstrings.py checks PR01 without Sphinx.
numpydoc_validation_checks = {"GL06", "GL07", "GL08", "PR01", "PR02", "PR03", "PR06", "PR10",
                              "RT01", "SS01", "YD01"}
# Left out of the validation: nothing today.  (A name goes here, as a regular expression,
# only with a comment saying why and what change would let it back in.)
numpydoc_validation_exclude: set[str] = set()

# --- myst (Markdown pages)
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4
# The Markdown pages were written for GitHub: their links to files of the repository
# (tests/..., dperm/..., ../BENCHMARKS.md) are not pages of this site.
# "ref.python": an attribute named in two classes (``privacy_``) is ambiguous to the
# Python domain when numpydoc links a class's Attributes entries.
suppress_warnings = ["myst.xref_missing", "myst.header", "ref.python"]

# --- sphinx-gallery: every example runs at build time and its figures are kept
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "show_memory": False,
    "show_signature": False,
}

intersphinx_mapping = {}

# --- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"dperm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False

sys.path.insert(0, os.path.abspath(os.path.dirname(__file__)))

# --- the module pages (docs/api/<module>.rst), written from each module's __all__ at every
# build, so a name added to a module's __all__ gets its entry without editing the docs:
# functions and classes through autodoc, constants with their type and (short) value.
PUBLIC_MODULES = ("calibration", "datasets", "erm", "exact_noise", "losses", "mechanisms",
                  "noise", "regularization")


def _module_page(name):
    module = getattr(dperm, name)
    title = f"dperm.{name}"
    constants = [n for n in module.__all__ if not callable(getattr(module, n))]
    lines = [title, "=" * len(title), "",
             f"The module's public names (``dperm.{name}.__all__``; the code lives in "
             f"``{module.__name__}``).", "",
             f".. automodule:: {module.__name__}", "   :members:", "   :imported-members:"]
    if constants:
        lines.append(f"   :exclude-members: {', '.join(constants)}")
    lines.append("")
    try:                              # the constants' ``#:`` comments in the defining module
        from sphinx.pycode import ModuleAnalyzer

        comments = {k[1]: " ".join(v) for k, v in
                    ModuleAnalyzer.for_module(module.__name__).find_attr_docs().items()}
    except Exception:                 # a package's __init__ without comments, say
        comments = {}
    if constants:
        lines += ["Constants", "---------", ""]
        for const in constants:
            value = getattr(module, const)
            text = repr(value)
            if len(text) > 160:
                text = text[:150] + " ..."
            lines += [f".. py:data:: {const}", f"   :module: {module.__name__}",
                      f"   :type: {type(value).__name__}", ""]
            if comments.get(const):
                lines += [f"   {comments[const].strip()}", ""]
            lines += [f"   Value: ``{text}``", ""]
    return "\n".join(lines) + "\n"


def _write_module_pages():
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api")
    os.makedirs(folder, exist_ok=True)
    for name in PUBLIC_MODULES:
        path = os.path.join(folder, f"{name}.rst")
        text = _module_page(name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if text != old:                      # unchanged pages keep their time stamp
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)


_write_module_pages()
