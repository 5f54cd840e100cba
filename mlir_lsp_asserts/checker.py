"""The checker: text in, findings out. Knows nothing of LSP or argparse.

    result = check_text(text, settings)

Finds candidate asserts with one regex over the whole text, reads in full only the top-level
ops that contain one, classifies each `cf.assert` with the rules, applies selection, severity
overrides and suppression comments, and attaches the fixes.
"""

from __future__ import annotations

import re

from .config import Settings
from .findings import Finding, Position, Related, Span
from .iree_flags.strip_assertions import reaches
from .records import field, record
from .rules import (
    RULES_BY_CODE,
    SYNTAX_ERROR_CODE,
    SYNTAX_ERROR_NAME,
    Severity,
    classify,
    doc_url,
)
from .syntax.asserts import assert_message, assert_ops, source_location
from .syntax.op_tree import Op, SyntaxIssue
from .syntax.parsed_text import ParsedText, parse
from .syntax.resource_section import NOT_CLOSED, ResourceTail

SUPPRESS = re.compile(r"//\s*mlir-lsp:\s*ignore(?:\[([^\]]*)\])?")

# A cap like other linters': past it, one summary finding instead of an avalanche.
MAX_SYNTAX_ISSUES = 100


@record
class CheckResult:
    """One text's check: its structure as read, the findings, how many a suppression comment silenced."""

    parsed: ParsedText
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0


def span_of(parsed: ParsedText, start: int, end: int) -> Span:
    lines = parsed.lines
    s = lines.position(start)
    e = lines.position(end)
    return Span(start, end, Position(*s), Position(*e))


def _suppressed(parsed: ParsedText, op: Op, code: str) -> bool:
    lines = parsed.lines
    first = lines.line_of(op.start)
    last = lines.line_of(max(op.start, op.end - 1))
    full = parsed.text
    for ln in {first - 1, first, last}:
        if ln < 0 or ln >= lines.line_count:
            continue
        ls, le = lines.line_span(ln)
        at = full.find("mlir-lsp", ls, le)
        if at == -1:
            continue
        comment = full.rfind("//", ls, at)
        if comment == -1:
            continue
        if ln == first - 1 and full[ls:comment].strip():
            continue  # a trailing comment of the op above is about that op
        text = full[comment:min(le, at + 200)]
        m = SUPPRESS.search(text)
        if m is None:
            continue
        if m.group(1) is None:
            return True
        codes = {c.strip().upper() for c in m.group(1).split(",")}
        if code in codes or RULES_BY_CODE[code].name.upper() in codes:
            return True
    return False


def check_text(text: str, settings: Settings | None = None, *, with_fixes: bool = True,
               is_bytecode: bool = False, parsed: ParsedText | None = None,
               tail: ResourceTail | None = None) -> CheckResult:
    """`text` is a whole module, or the IR part of one whose resource section `tail` was not
    read (see source.py): an unclosed section is then reported where it starts."""
    settings = settings or Settings()
    parsed = parsed or parse(text)
    result = CheckResult(parsed)
    strip = settings.strip_decision
    for op in assert_ops(parsed):
        rule, placement = classify(op)
        if not settings.enabled(rule.code):
            continue
        if _suppressed(parsed, op, rule.code):
            result.suppressed += 1
            continue
        msg_text = assert_message(parsed, op)
        message = placement.reason
        if msg_text:
            message += f': "{msg_text}"'
        severity = settings.severity_of(rule.code)
        stripped_by = None
        if strip.stripped and rule.when_stripped is not None and reaches(a.full_name for a in op.ancestors()):
            message += "; " + rule.when_stripped(strip)
            stripped_by = strip.by
            if rule.stripped_severity is not None and not settings.severity_overridden(rule.code):
                severity = rule.stripped_severity  # a severity set for the code is the user's
        related: tuple[Related, ...] = ()
        if placement.related is not None:
            r = placement.related
            related = (Related(span_of(parsed, r.name_start, r.name_start + len(r.name) + (2 if r.generic else 0)),
                               f"enclosing `{r.full_name}`"),)
        finding = Finding(
            code=rule.code,
            name=rule.name,
            severity=severity,
            message=message,
            span=span_of(parsed, op.start, op.end),
            assert_message=msg_text,
            related=related,
            doc_url=doc_url(rule.code, settings.docs_base_url),
            op_start=op.start,
            stripped_by=stripped_by,
        )
        if is_bytecode:
            finding.source_location = source_location(parsed, op)
        result.findings.append(finding)
    issues = parsed.issues
    if tail is not None and not tail.closed:
        issues = [*issues, SyntaxIssue(len(text), len(text), NOT_CLOSED + " (the file ends inside its resources)")]
    syntax_doc = doc_url(SYNTAX_ERROR_CODE, settings.docs_base_url)
    for issue in issues[:MAX_SYNTAX_ISSUES]:
        result.findings.append(Finding(SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, Severity.ERROR,
                                       issue.message, span_of(parsed, issue.start, issue.end), doc_url=syntax_doc))
    if len(issues) > MAX_SYNTAX_ISSUES:
        last = issues[MAX_SYNTAX_ISSUES]
        result.findings.append(Finding(SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, Severity.ERROR,
                                       f"{len(issues) - MAX_SYNTAX_ISSUES} more syntax errors not shown",
                                       span_of(parsed, last.start, last.end)))
    result.findings.sort(key=lambda f: (f.span.start, f.code))
    if with_fixes:
        from .fixes import attach_fixes  # here: a check whose output shows no fix needs none

        attach_fixes(result, settings)
    return result
