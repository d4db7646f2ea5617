"""The documentation site (mkdocs.yml, docs/): it builds with warnings as errors, and what must fail it does.

``mkdocs build --strict`` fails on a public name without a docstring (docs/tools/hooks.py), a broken
cross-reference in a docstring (docs/tools/griffe_sphinx.py) and a dead link between pages or to an
anchor (MkDocs' validation). The site's code blocks are run by tests/test_readme.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from where import ROOT

pytest.importorskip("mkdocstrings", reason="pip install glrec[docs] (MkDocs, Material, mkdocstrings)")
griffe = pytest.importorskip("griffe")

sys.path.insert(0, str(ROOT / "docs" / "tools"))
import griffe_sphinx  # noqa: E402
import reference  # noqa: E402


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # not -q: MkDocs' quiet mode stops counting warnings, and a strict build then passes with them
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _text(html: Path) -> str:
    """The words of a page, tags removed and spaces squeezed out (what a reader sees, near enough to search)."""
    text = re.sub(r"<[^>]+>", " ", html.read_text()).replace("&quot;", '"').replace("&gt;", ">")
    return re.sub(r"\s+", "", text)


def test_the_site_builds_with_warnings_as_errors_and_holds_the_reference(tmp_path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = tmp_path / "site"
    api = _text(site / "reference" / "api" / "glrec" / "index.html")
    # a class's arguments and defaults, and the keywords of **options from the declarations
    assert "glrec.Recorder" in api and "overwrite:bool=True" in api, api[:2000]
    assert "crf—`--crf`" not in api and "crf—--crfconstantquality(x264default20" in api  # record()'s keywords
    gym = _text(site / "reference" / "api" / "glrec.gym" / "index.html")
    assert "episode_trigger" in gym and 'name_prefix:str="rl-video"' in gym
    cli = _text(site / "reference" / "cli" / "index.html")
    for command in ("record", "transcode", "stream", "serve", "dataset", "doctor", "info", "bench"):
        assert f"$glrec{command}--help" in cli, command
    errors = _text(site / "reference" / "errors" / "index.html")
    assert "ConfigError—alsoValueError" in errors
    home = (site / "index.html").read_text()
    assert 'href="get-started/"' in home  # the README's links into docs/ are the site's links


def test_a_dead_link_a_broken_reference_and_an_undocumented_name_fail_the_build(tmp_path):
    """A copy of the site and of glrec with one of each: the strict build fails, naming all three."""
    for name in ("README.md", "benchmarks", "examples", "shaders"):
        (tmp_path / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copytree(ROOT / "glrec", tmp_path / "glrec", ignore=shutil.ignore_patterns("__pycache__"))
    guide = tmp_path / "docs" / "guides" / "recording.md"
    guide.write_text(guide.read_text() + "\nSee [the old page](gone-away.md).\n")
    api = tmp_path / "glrec" / "_api.py"
    api.write_text(api.read_text().replace(":class:`~glrec.Recorder`'s keyword", ":class:`~glrec.Recordr`'s keyword"))
    sources = tmp_path / "glrec" / "sources" / "__init__.py"
    text = sources.read_text().replace('__all__ = ["', '__all__ = ["probe_input", "', 1)
    sources.write_text(text + "\n\ndef probe_input(name: str) -> str:\n    return name\n")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]
    assert "gone-away.md" in out, out[-3000:]
    assert "broken cross-reference :class:`~glrec.Recordr`" in out, out[-3000:]
    assert "public name without a docstring: glrec.sources.probe_input" in out, out[-3000:]


def test_every_public_name_has_a_docstring():
    assert reference.undocumented() == []


def _load_package(tmp_path: Path, source: str) -> griffe.Module:
    (tmp_path / "pkgdoc").mkdir()
    (tmp_path / "pkgdoc" / "__init__.py").write_text(textwrap.dedent(source))
    extensions = griffe.load_extensions(griffe_sphinx.SphinxToMarkdown())
    return griffe.load("pkgdoc", search_paths=[str(tmp_path)], extensions=extensions)


def test_roles_become_checked_cross_references(tmp_path, caplog):
    griffe_sphinx.BROKEN.clear()
    pkg = _load_package(
        tmp_path,
        '''
        class Thing:
            """Made by :func:`make`; see :meth:`grow` and :class:`ValueError`, not :class:`Nothing`."""

            def grow(self):
                """Grow."""

        def make():
            """Make a :class:`~pkgdoc.Thing`."""
    ''',
    )
    doc = pkg["Thing"].docstring.value
    assert '<autoref identifier="pkgdoc.make" optional><code>make</code></autoref>' in doc
    assert '<autoref identifier="pkgdoc.Thing.grow" optional><code>grow</code></autoref>' in doc
    assert "<code>ValueError</code>" in doc and 'autoref identifier="ValueError"' not in doc  # a builtin: code
    assert griffe_sphinx.BROKEN == ["pkgdoc.Thing: :class:`Nothing`"]
    assert "<code>Thing</code></autoref>" in pkg["make"].docstring.value  # ~ shows the last name


def test_doctests_literal_blocks_comments_and_overrides_are_rendered(tmp_path):
    pkg = _load_package(
        tmp_path,
        '''
        #: How many there are.
        COUNT = 3

        class Base:
            def run(self):
                """Run once."""

        class Child(Base):
            """Layout::

                a  b
                c  d

            >>> Child().run()  # doctest: +SKIP
            """

            def run(self):
                pass
    ''',
    )
    assert pkg["COUNT"].docstring.value == "How many there are."
    assert pkg["Child.run"].docstring.value == "Run once."  # inherited, as help() shows it
    doc = pkg["Child"].docstring.value
    assert "```text\na  b\nc  d\n```" in doc and doc.startswith("Layout:\n")
    assert "```pycon\n>>> Child().run()\n```" in doc  # the doctest directive is the runner's, not the reader's
