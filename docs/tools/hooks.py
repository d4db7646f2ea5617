"""MkDocs hooks (``mkdocs.yml``: ``hooks``): the generated pages, and the checks that fail a strict build.

- The generated pages (``docs/tools/reference.py``: home, API, CLI, options,
  errors) are added to the site from the code of this checkout, never written
  into ``docs/``.
- A public name without a docstring is a warning here, so ``mkdocs build
  --strict`` (what CI runs) fails on it; broken cross-references in docstrings
  are warnings of ``docs/tools/griffe_sphinx.py``; dead links between pages
  and to anchors are MkDocs' own ``validation`` warnings (``mkdocs.yml``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
# The checkout's glrec, not an installed one (the CLI, options and errors pages import it), and reference.py.
for path in (ROOT, ROOT / "docs" / "tools"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import reference  # noqa: E402

log = logging.getLogger("mkdocs.plugins.glrec")


def on_files(files: Files, config: Any) -> Files:
    pkg = reference.load()  # once for the pages and the check
    for path, text in reference.generated(pkg).items():
        old = files.get_file_from_path(path)
        if old is not None:  # docs/options.md: the committed copy, served as generated now
            files.remove(old)
        files.append(File.generated(config, path, content=text))
    for name in reference.undocumented(pkg):
        log.warning("public name without a docstring: %s", name)
    return files
