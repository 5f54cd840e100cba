"""The assert rules, one module per code. Each `cf.assert` belongs to exactly one rule:
the first in `RULES` whose `match` accepts it (MLA003 accepts everything left)."""

from __future__ import annotations

import os

from ..kinds import Severity
from .base import DOCS_FOLDER, Placement, Rule, doc_url
from .mla001_assert_in_linalg_region import RULE as MLA001
from .mla002_assert_in_dispatch import RULE as MLA002
from .mla003_assert_on_host import RULE as MLA003
from .mla004_torch_op_lowers_to_assert import RULE as MLA004

TYPE_CHECKING = False  # typing's, without importing it (rules/base.py)
if TYPE_CHECKING:
    from pathlib import Path

RULES: tuple[Rule, ...] = (MLA001, MLA002, MLA003, MLA004)
RULES_BY_CODE = {r.code: r for r in RULES}
RULES_BY_NAME = {r.name: r for r in RULES}

# Reported for text the structural reader cannot follow (always shown, like ruff's syntax errors).
SYNTAX_ERROR_CODE = "MLS001"
SYNTAX_ERROR_NAME = "syntax-error"


def classify(assert_op) -> tuple[Rule, Placement]:
    for rule in RULES:
        placement = rule.match(assert_op)
        if placement is not None:
            return rule, placement
    raise AssertionError("MLA003 matches every assert")


def resolve_code(token: str) -> list[str]:
    """`MLA001`, a prefix (`MLA`, `MLA00`), a rule name, or `ALL` -> codes."""
    t = token.strip()
    if t.upper() == "ALL":
        return [r.code for r in RULES]
    if t in RULES_BY_NAME:
        return [RULES_BY_NAME[t].code]
    codes = [r.code for r in RULES if r.code.startswith(t.upper())]
    if not codes:
        raise ValueError(f"unknown rule {t!r} (known: {', '.join(r.code for r in RULES)})")
    return codes


__all__ = ["RULES", "RULES_BY_CODE", "Rule", "Severity", "Placement", "classify", "resolve_code", "doc_url",
           "explain", "DOCS_DIR"]


def explain(token: str) -> tuple[str, str, str]:
    """(code, name, page text) of one rule, by code or name (`mlir-lsp --explain`)."""
    t = token.strip()
    if t.upper() == SYNTAX_ERROR_CODE or t == SYNTAX_ERROR_NAME:
        code, name = SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME
    else:
        rule = RULES_BY_NAME.get(t) or RULES_BY_CODE.get(t.upper())
        if rule is None:
            known = ", ".join([r.code for r in RULES] + [SYNTAX_ERROR_CODE])
            raise ValueError(f"unknown rule {t!r} (known: {known})")
        code, name = rule.code, rule.name
    with open(os.path.join(DOCS_FOLDER, f"{code}.md"), encoding="utf-8") as f:
        return code, name, f.read()


def __getattr__(name: str) -> Path:
    """`DOCS_DIR` (rules/base.py's), made when asked."""
    if name == "DOCS_DIR":
        from . import base

        return base.DOCS_DIR
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
