"""Output formats of `mlir-lsp --check`: concise, full, json, json-lines, github, sarif, junit."""

from __future__ import annotations

from collections import Counter

from .. import __version__
from ..findings import Finding
from ..records import record
from ..rules import RULES, doc_url


@record
class FileReport:
    """One file's findings as an output format takes them."""

    path: str
    findings: list[Finding]
    text: str | None = None  # for `full` (source lines)
    lines: object = None  # LineIndex of the text the findings refer to (fix edit ranges)


def finding_json(path: str, f: Finding, lines=None) -> dict:
    out = {
        "path": path,
        "code": f.code,
        "name": f.name,
        "severity": f.severity.value,
        "message": f.message,
        "range": f.span.as_json(),
        "fixes": [fix_json(x, lines) for x in f.fixes] if lines is not None else [],
        "url": f.doc_url,
        "assert_message": f.assert_message,
        "related": [{"range": r.span.as_json(), "message": r.message} for r in f.related],
    }
    if f.assume_unavailable:
        out["assume_unavailable"] = f.assume_unavailable
    if f.source_location:
        out["source_location"] = f.source_location
    if f.measured is not None:
        out["measured"] = f.measured.as_json()
    if f.stripped_by is not None:
        out["stripped_by"] = f.stripped_by
    return out


def fix_json(fix, lines) -> dict:
    def rng(e):
        s = lines.position(e.start)
        t = lines.position(e.end)
        return {"start": {"line": s[0], "character": s[1]}, "end": {"line": t[0], "character": t[1]}}

    return {
        "title": fix.title,
        "mode": fix.mode,
        "applicability": fix.applicability,
        "edits": [{"range": rng(e), "newText": e.new_text} for e in fix.edits],
    }


def _loc(f: Finding) -> tuple[int, int, int, int]:
    s, e = f.span.start_pos, f.span.end_pos
    return s.line + 1, s.character + 1, e.line + 1, e.character + 1


# The formats that show the findings' fixes (the others, concise first, are checked without them).
SHOW_FIXES = frozenset({"full", "json", "json-lines"})


def render_concise(reports: list[FileReport]) -> str:
    out = []
    for r in reports:
        for f in r.findings:
            line, col, _, _ = _loc(f)
            extra = f" (from {f.source_location})" if f.source_location else ""
            out.append(f"{r.path}:{line}:{col}: {f.code} {f.full_message}{extra}")
    return "\n".join(out) + ("\n" if out else "")


def render_full(reports: list[FileReport]) -> str:
    out = []
    for r in reports:
        lines = r.text.split("\n") if r.text is not None else []
        for f in r.findings:
            line, col, eline, ecol = _loc(f)
            out.append(f"{r.path}:{line}:{col}: {f.code} [{f.severity.value}] {f.message}")
            if 0 < line <= len(lines):
                src = lines[line - 1].rstrip("\r")
                width = (ecol - col) if eline == line else max(1, len(src) - col + 1)
                gutter = f"{line:>5} | "
                out.append(gutter + src[:400])
                out.append(" " * (len(gutter) + col - 1) + "^" * max(1, min(width, 400)))
            for rel in f.related:
                out.append(f"      = note: {rel.message} at line {rel.span.start_pos.line + 1}")
            if f.measured is not None:
                out.append(f"      = {f.measured.note}")
            if f.fixes:
                out.append("      = fix: " + "; ".join(f"{x.title} [{x.applicability}]" for x in f.fixes))
            elif f.assume_unavailable:
                out.append(f"      = note: no util.assume.int rewrite: {f.assume_unavailable}")
            if f.doc_url:
                out.append(f"      = help: {f.doc_url}")
            out.append("")
    return "\n".join(out) + ("\n" if out else "")


def render_json(reports: list[FileReport]) -> str:
    import json  # in the formats that write JSON only (each mode imports what it uses: cli/main.py)

    # One finding per line: readable, and encoded by json's C encoder (indent= is pure Python).
    items = [json.dumps(finding_json(r.path, f, r.lines)) for r in reports for f in r.findings]
    return "[\n" + ",\n".join(items) + "\n]\n" if items else "[]\n"


def render_json_lines(reports: list[FileReport]) -> str:
    import json

    return "".join(json.dumps(finding_json(r.path, f, r.lines)) + "\n" for r in reports for f in r.findings)


def gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def render_github(reports: list[FileReport]) -> str:
    level = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}
    out = []
    for r in reports:
        for f in r.findings:
            line, col, eline, ecol = _loc(f)
            props = (f"file={gh_escape(r.path, True)},line={line},col={col},endLine={eline},endColumn={ecol},"
                     f"title={gh_escape(f.code + ' ' + f.name, True)}")
            out.append(f"::{level[f.severity.value]} {props}::{gh_escape(f.code + ' ' + f.full_message)}")
    return "\n".join(out) + ("\n" if out else "")


def render_sarif(reports: list[FileReport]) -> str:
    level = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}
    # The findings' links follow the docs-base-url setting; rules without findings get the page
    # installed with the package.
    urls = {f.code: f.doc_url for rep in reports for f in rep.findings if f.doc_url}
    rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "helpUri": urls.get(r.code, r.doc_url),
            "defaultConfiguration": {"level": level[r.severity.value]},
        }
        for r in RULES
    ]
    rules.append({"id": "MLS001", "name": "syntax-error", "shortDescription": {"text": "text the reader cannot follow"},
                  "helpUri": urls.get("MLS001", doc_url("MLS001")), "defaultConfiguration": {"level": "error"}})
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for rep in reports:
        for f in rep.findings:
            line, col, eline, ecol = _loc(f)
            res = {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": level[f.severity.value],
                "message": {"text": f.full_message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": rep.path.replace("\\", "/")},
                        "region": {"startLine": line, "startColumn": col, "endLine": eline, "endColumn": ecol},
                    }
                }],
            }
            if f.measured is not None:
                res["properties"] = {"measured": f.measured.as_json()}
            if f.related:
                res["relatedLocations"] = [{
                    "id": i,
                    "message": {"text": rel.message},
                    "physicalLocation": {
                        "artifactLocation": {"uri": rep.path.replace("\\", "/")},
                        "region": {"startLine": rel.span.start_pos.line + 1,
                                   "startColumn": rel.span.start_pos.character + 1},
                    },
                } for i, rel in enumerate(f.related)]
            results.append(res)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mlir-lsp", "version": __version__, "rules": rules}},
            "results": results,
        }],
    }
    import json

    return json.dumps(doc, indent=2) + "\n"


def render_junit(reports: list[FileReport]) -> str:
    from xml.sax.saxutils import (
        quoteattr,  # here: it imports urllib (~60 ms of every start-up)
    )

    total = sum(len(r.findings) for r in reports)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="mlir-lsp" tests="{max(total, len(reports))}" failures="{total}">']
    for r in reports:
        n = len(r.findings)
        out.append(f'  <testsuite name={quoteattr(r.path)} tests="{max(n, 1)}" failures="{n}">')
        if not r.findings:
            out.append(f'    <testcase name={quoteattr(r.path)} classname={quoteattr(r.path)}/>')
        for f in r.findings:
            line, col, _, _ = _loc(f)
            name = f"{f.code} at {line}:{col}"
            out.append(f'    <testcase name={quoteattr(name)} classname={quoteattr(r.path)} line="{line}">')
            out.append(f'      <failure message={quoteattr(f.full_message)} type={quoteattr(f.code)}>'
                       f'{r.path}:{line}:{col}: {f.code} {_xml_text(f.full_message)}</failure>')
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _xml_text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


RENDERERS = {
    "concise": render_concise,
    "full": render_full,
    "json": render_json,
    "json-lines": render_json_lines,
    "github": render_github,
    "sarif": render_sarif,
    "junit": render_junit,
}


def render_statistics(reports: list[FileReport]) -> str:
    counts = Counter((f.code, f.name) for r in reports for f in r.findings)
    fixable = Counter(f.code for r in reports for f in r.findings if f.fixes)
    lines = []
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = " [*]" if fixable.get(code) else ""
        lines.append(f"{n:>6}\t{code}\t{name}{mark}")
    return "\n".join(lines) + ("\n" if lines else "")


# -- a shard's findings, merged (`--merge-results`) ----------------------------------------------
MERGED_FORMATS = ("concise", "full", "json", "json-lines", "github")


def check_records(outcomes) -> list[dict]:
    """Per file, what each format a merge can print says of it (each of these formats is the
    files' parts one after the other; json's items are json-lines' lines)."""
    out = []
    for oc in outcomes:
        if oc.error:
            out.append({"path": oc.path, "error": oc.error})
            continue
        rep = [FileReport(oc.path, oc.findings, oc.text, oc.lines)]
        out.append({"path": oc.path, "error": oc.write_error, "findings": len(oc.findings),
                    **{f: RENDERERS[f](rep) for f in MERGED_FORMATS if f != "json"}})
    return out


def render_check_records(records: list[dict], fmt: str) -> str:
    done = [r for r in records if "findings" in r]
    if fmt == "json":
        items = [line for r in done for line in r["json-lines"].split("\n") if line]
        return "[\n" + ",\n".join(items) + "\n]\n" if items else "[]\n"
    return "".join(r[fmt] for r in done)
