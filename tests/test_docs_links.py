"""The front page and the docs site: every link of README.md and of the docs pages (the rule
pages included) resolves to a file of the checkout and, with `#anchor`, to one of its headings;
README.md stays a front page (at most 250 lines); the site builds with `mkdocs build --strict`
(which fails on a broken link, a page missing from the nav or an unknown anchor)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

DOCS = REPO / "docs"
RULE_DOCS = REPO / "mlir_lsp_asserts" / "rules" / "docs"
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    """The heading ids of a page, as GitHub and mkdocs (toc's slugify) make them."""
    out = set()
    for line in _prose(path.read_text(encoding="utf-8")).splitlines():
        m = HEADING.match(line)
        if m:
            words = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(words.replace(" ", "-"))  # GitHub
            out.add(re.sub(r"[-\s]+", "-", words).strip("-"))  # mkdocs
    return out


def _site_path(page: Path, target: str) -> Path:
    """Where a link of `page` points; in the site, docs/rules/CODE.md is the rule page that the
    mkdocs hook adds from mlir_lsp_asserts/rules/docs/."""
    resolved = (page.parent / target).resolve()
    if resolved.parent == (DOCS / "rules").resolve() and page.is_relative_to(DOCS):
        return RULE_DOCS / resolved.name
    if page.parent == RULE_DOCS and "/" not in target:
        return RULE_DOCS / target
    return resolved


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """`page: target: why` for each link of the page that does not resolve (paths from `root`)."""
    out = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = _site_path(page, file_part) if file_part else page
        if not dest.exists():
            out.append(f"{page.relative_to(root)}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            out.append(f"{page.relative_to(root)}: {target}: no heading #{anchor}")
    return out


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts),
            *sorted(RULE_DOCS.glob("*.md"))]


def test_every_readme_and_docs_link_resolves():
    pages = _pages()
    assert len(pages) > 15 and (DOCS / "index.md") in pages
    links = sum(len(LINK.findall(_prose(p.read_text(encoding="utf-8")))) for p in pages)
    assert links > 50  # the check looked at the links there are
    broken = [b for p in pages for b in broken_links(p)]
    assert broken == [], "\n".join(broken)


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Two words\n\nsee [b](b.md), [here](#two-words), [gone](#nope)\n"
                                   "`[not a link](x.md)`\n", encoding="utf-8")
    found = broken_links(tmp_path / "a.md", root=tmp_path)
    assert [f.split(": ", 1)[1] for f in found] == ["b.md: no such file", "#nope: no heading #nope"]


def test_the_readme_is_a_front_page():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for command in ("make demo", "make test"):
        assert command in text
    images = [t for t in LINK.findall(_prose(text)) if t.endswith(".png")]
    assert images == ["docs/images/vscode-dispatch-graph/1-vscode-show-dispatch-graph.png"]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="the docs extra: pip install -e '.[docs]'")
def test_the_site_builds_strict(tmp_path):
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert p.returncode == 0, p.stderr[-4000:]
    for page in ("index.html", "rules/MLA001/index.html", "architecture/index.html", "editors/vscode/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert "which-optimization-levels-keep-the-asserts" in (tmp_path / "site/rules/MLA001/index.html").read_text()
