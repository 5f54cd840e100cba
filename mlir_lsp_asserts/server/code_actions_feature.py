"""Code actions: per finding a quick fix to strip the assert and one to rewrite it to
`util.assume.int`; `source.fixAll.mlir-lsp` (safe fixes); "strip all" and "assume all".

With a client that resolves code actions (`codeAction/resolve` with the `edit` property), the
list carries no edits: the edit of the one action chosen is built on resolve.
"""

from __future__ import annotations

from typing import TypedDict

from lsprotocol import types

from ..findings import Applicability, FixMode
from ..rules import RULES_BY_CODE
from . import dispatch_feature
from .convert import diagnostic, range_edits, workspace_edit


class QuickFixData(TypedDict):
    """What a quick fix listed without its edit carries to `codeAction/resolve`."""

    uri: str
    version: int | None
    opened: int  # the document's opening (open_documents.Stamp): a reopened one is another text
    group: int  # `FindingGroup.key` in that version
    op: int  # the assert's offset in the group
    mode: str  # FixMode


class WholeDocumentData(TypedDict):
    """What a whole-document action listed without its edit carries to `codeAction/resolve`."""

    uri: str
    version: int | None
    opened: int
    kind: str


FIX_ALL_KIND = "source.fixAll.mlir-lsp"
STRIP_ALL_KIND = "source.mlir-lsp.stripAll"
ASSUME_ALL_KIND = "source.mlir-lsp.assumeAll"
KINDS = [types.CodeActionKind.QuickFix, FIX_ALL_KIND, STRIP_ALL_KIND, ASSUME_ALL_KIND]


def _whole_document_actions(ls):
    return (
        (FIX_ALL_KIND, ls.settings.fix_mode, False, "mlir-lsp: fix all safe findings"),
        (STRIP_ALL_KIND, FixMode.STRIP, True, "mlir-lsp: strip all asserts"),
        (ASSUME_ALL_KIND, FixMode.ASSUME, True, "mlir-lsp: rewrite all asserts to util.assume.int"),
    )


def _resolves_edits(ls) -> bool:
    caps = ls.client_capabilities
    td = caps.text_document if caps else None
    ca = td.code_action if td else None
    return bool(ca and ca.resolve_support and "edit" in ca.resolve_support.properties)


def quick_fixes(ls, doc, rng: types.Range, lazy: bool) -> list[types.CodeAction]:
    start, end = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
    out = []
    for group in doc.live.finding_groups(rng.start.line, rng.end.line, with_fixes=True):
        lo, hi = group.offset(start), group.offset(end)
        # The findings as the diagnostics show them (with the measured notes), so that clients
        # matching an action to its diagnostic by message find it.
        for f in dispatch_feature.measured_findings(ls, doc.uri, doc.stamp, group.findings, group.first_line):
            if not f.fixes or f.span.end < lo or f.span.start > hi:
                continue
            has_assume = any(x.mode == FixMode.ASSUME for x in f.fixes)
            for fix in f.fixes:
                preferred = (fix.applicability == Applicability.SAFE
                             and fix.mode == (FixMode.ASSUME if has_assume else FixMode.STRIP))
                # isPreferred only where true: Eglot reads `false` (:json-false) as set and would
                # offer the first action as its default
                action = types.CodeAction(
                    title=fix.title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic(doc.uri, f, group.first_line)], is_preferred=True if preferred else None)
                if lazy:
                    action.data = QuickFixData(uri=doc.uri, version=doc.version, opened=doc.opened, group=group.key,
                                               op=f.op_start, mode=fix.mode)
                else:
                    action.edit = workspace_edit(doc.uri, doc.version, range_edits(group.edits(fix.edits)))
                out.append(action)
    return out


def whole_document_edit(ls, doc, mode: str, unsafe: bool) -> list[types.TextEdit]:
    """Every fix of `mode` in the document, in document order."""
    return range_edits(sorted(doc.live.fix_all_edits(mode, unsafe), key=lambda e: e[0][0]))


def _has_fixable(doc, unsafe: bool) -> bool:
    return any(f.code in RULES_BY_CODE and (unsafe or RULES_BY_CODE[f.code].strip_is_safe)
               for _i, _l0, f in doc.live.findings())


def setup(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True))
    def code_action(ls, params: types.CodeActionParams):
        doc = ls.document(params.text_document.uri)
        if doc is None or doc.error:
            return []
        only = params.context.only
        lazy = _resolves_edits(ls)

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(k + ".") for k in only)

        actions = quick_fixes(ls, doc, params.range, lazy) if wanted(types.CodeActionKind.QuickFix) else []
        for kind, mode, unsafe, title in _whole_document_actions(ls):
            if (only and not wanted(kind)) or not _has_fixable(doc, unsafe):
                continue
            action = types.CodeAction(title=title, kind=kind)
            if lazy:
                action.data = WholeDocumentData(uri=doc.uri, version=doc.version, opened=doc.opened, kind=kind)
            else:
                edits = whole_document_edit(ls, doc, mode, unsafe)
                if not edits:
                    continue
                action.edit = workspace_edit(doc.uri, doc.version, edits)
            actions.append(action)
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    def resolve(ls, action: types.CodeAction):
        data = action.data if isinstance(action.data, dict) else {}
        doc = ls.document(data.get("uri", ""))
        if doc is None or [doc.opened, doc.version] != [data.get("opened"), data.get("version")]:
            return action  # the document changed (or was reopened): no edit (the client asks again)
        if "kind" in data:
            for kind, mode, unsafe, _title in _whole_document_actions(ls):
                if kind == data["kind"]:
                    action.edit = workspace_edit(doc.uri, doc.version, whole_document_edit(ls, doc, mode, unsafe))
            return action
        group = doc.live.finding_group(data.get("group"))
        for f in (group.findings if group else []):
            if f.op_start == data.get("op"):
                fix = next((x for x in f.fixes if x.mode == data.get("mode")), None)
                if fix is not None:
                    action.edit = workspace_edit(doc.uri, doc.version, range_edits(group.edits(fix.edits)))
        return action
