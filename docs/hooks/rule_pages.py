"""mkdocs hook: the rule pages, written once in mlir_lsp_asserts/rules/docs/ (package data that
`mlir-lsp --explain` prints), become the site's docs/rules/CODE.md at build time; nothing is
copied into the checkout."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

RULE_DOCS = Path(__file__).resolve().parents[2] / "mlir_lsp_asserts" / "rules" / "docs"


def on_files(files: Files, config) -> Files:
    pages = sorted(RULE_DOCS.glob("*.md"))
    if not pages:
        raise SystemExit(f"no rule pages in {RULE_DOCS}")
    for page in pages:
        files.append(File.generated(config, f"rules/{page.name}", abs_src_path=str(page)))
    return files
