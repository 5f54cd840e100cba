"""The pygls language server: thin handlers over the core (check, fixes, syntax index)."""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..config import ConfigError, Settings, settings_from_mapping
from ..fixes import fix_text
from ..syntax.index import op_uses
from .convert import diagnostic, lsp_range, workspace_edit
from .documents import Analysis, analyse

log = logging.getLogger(__name__)
FIX_ALL_KIND = "source.fixAll.mlir-lsp"
STRIP_ALL_KIND = "source.mlir-lsp.stripAll"
ASSUME_ALL_KIND = "source.mlir-lsp.assumeAll"


class MlirLspServer(LanguageServer):
    def __init__(self):
        super().__init__("mlir-lsp", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self.analyses: dict[str, Analysis] = {}
        from .parser_feature import ParserDiagnostics

        self.parser_diagnostics = ParserDiagnostics()
        self.event_loop = None
        self.pulled: set[str] = set()  # documents whose diagnostics the client pulls

    def publish_threadsafe(self, uri: str) -> None:
        if self.event_loop is not None:
            self.event_loop.call_soon_threadsafe(self.publish, uri, True)

    def analysis(self, uri: str) -> Analysis | None:
        doc = self.workspace.get_text_document(uri)
        a = self.analyses.get(uri)
        if a is None or a.version != doc.version or a.text is not doc.source and a.text != doc.source:
            a = analyse(uri, doc.version, doc.source, self.settings)
            self.analyses[uri] = a
        return a

    def publish(self, uri: str, refresh_pull: bool = False) -> None:
        """Push diagnostics, unless the client pulls them for this document (then pushing would
        show every finding twice): clients that pull get a refresh request instead."""
        if uri in self.pulled:
            caps = self.client_capabilities
            ws = caps.workspace if caps else None
            if refresh_pull and ws and ws.diagnostics and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        a = self.analysis(uri)
        diags = [diagnostic(uri, a.result.parsed.lines, f) for f in a.result.findings]
        if a.error:
            diags.insert(0, types.Diagnostic(types.Range(types.Position(0, 0), types.Position(0, 0)),
                                             a.error, severity=types.DiagnosticSeverity.Error, source="mlir-lsp"))
        diags.extend(self.parser_diagnostics.for_version(uri, a.version))
        diags.extend(dispatch_feature.torch_diagnostics(self, dispatch_state, uri, a.version))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=a.version, diagnostics=diags))


server = MlirLspServer()


def apply_options(ls: MlirLspServer, options) -> None:
    if not isinstance(options, dict):
        return
    opts = options.get("mlirLsp", options)
    if not isinstance(opts, dict):  # e.g. an empty Lua table arrives as []
        if opts not in ([], None, ""):
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Warning, f"mlir-lsp: settings must be an object, not {type(opts).__name__}; using defaults"))
        return
    rules = {k: v for k, v in opts.items() if k in ("select", "ignore", "severity", "fixMode", "fix-mode", "fix_mode",
                                                    "profiles")}
    if "fixMode" in rules:
        rules["fix-mode"] = rules.pop("fixMode")
    for problem in dispatch_state.configure(opts):
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"mlir-lsp: {problem}; default kept"))
    try:
        ls.settings = settings_from_mapping(rules, "mlirLsp settings")
    except ConfigError as e:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"mlir-lsp: {e}; using defaults"))
        ls.settings = Settings()


@server.feature(types.INITIALIZED)
def initialized(ls: MlirLspServer, params: types.InitializedParams):
    pass


@server.feature(types.INITIALIZE)
def initialize(ls: MlirLspServer, params: types.InitializeParams):
    import asyncio

    ls.event_loop = asyncio.get_event_loop()  # background threads publish through it
    apply_options(ls, params.initialization_options)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: MlirLspServer, params: types.DidChangeConfigurationParams):
    apply_options(ls, params.settings)
    ls.analyses.clear()
    for uri in list(ls.workspace.text_documents):
        ls.publish(uri)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: MlirLspServer, params: types.DidOpenTextDocumentParams):
    ls.publish(params.text_document.uri)
    dispatch_feature.schedule(ls, dispatch_state, params.text_document.uri, "open")
    ls.parser_diagnostics.schedule(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: MlirLspServer, params: types.DidChangeTextDocumentParams):
    ls.publish(params.text_document.uri)
    dispatch_feature.schedule(ls, dispatch_state, params.text_document.uri, "change")
    ls.parser_diagnostics.schedule(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: MlirLspServer, params: types.DidSaveTextDocumentParams):
    dispatch_feature.schedule(ls, dispatch_state, params.text_document.uri, "save")


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: MlirLspServer, params: types.DidCloseTextDocumentParams):
    ls.analyses.pop(params.text_document.uri, None)
    ls.pulled.discard(params.text_document.uri)
    dispatch_state.cancel(params.text_document.uri)
    ls.parser_diagnostics.forget(params.text_document.uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND,
                                               STRIP_ALL_KIND, ASSUME_ALL_KIND]),
)
def code_action(ls: MlirLspServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    a = ls.analysis(uri)
    lines = a.result.parsed.lines
    start = lines.offset(params.range.start.line, params.range.start.character)
    end = lines.offset(params.range.end.line, params.range.end.character)
    only = params.context.only
    actions: list[types.CodeAction] = []

    def wanted(kind: str) -> bool:
        return not only or any(kind == k or kind.startswith(k + ".") for k in only)

    if wanted(types.CodeActionKind.QuickFix):
        for f in a.result.findings:
            if not f.fixes or f.span.end < start or f.span.start > end:
                continue
            diag = diagnostic(uri, lines, f)
            for fix in f.fixes:
                preferred = fix.applicability == "safe" and fix.mode == ("assume" if any(x.mode == "assume" for x in f.fixes) else "strip")
                actions.append(types.CodeAction(
                    title=fix.title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                    is_preferred=preferred,
                    edit=workspace_edit(uri, a.version, lines, list(fix.edits))))
    for kind, mode, unsafe, title in (
        (FIX_ALL_KIND, ls.settings.fix_mode, False, "mlir-lsp: fix all safe findings"),
        (STRIP_ALL_KIND, "strip", True, "mlir-lsp: strip all asserts"),
        (ASSUME_ALL_KIND, "assume", True, "mlir-lsp: rewrite all asserts to util.assume.int"),
    ):
        if only and not wanted(kind):
            continue
        fo = fix_text(a.result, mode, unsafe=unsafe)
        if fo.edits:
            actions.append(types.CodeAction(title=title, kind=kind,
                                            edit=workspace_edit(uri, a.version, lines, fo.edits)))
    return actions


def _cursor(ls: MlirLspServer, params):
    """The document's analysis, its line index, and the offset of the request's position."""
    a = ls.analysis(params.text_document.uri)
    lines = a.result.parsed.lines
    return a, lines, lines.offset(params.position.line, params.position.character)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: MlirLspServer, params: types.HoverParams):
    a, lines, off = _cursor(ls, params)
    for f in a.result.findings:
        if f.span.start <= off <= f.span.end and f.code.startswith("MLA"):
            parts = [f"**{f.code} {f.name}** ({f.severity.value})", "", f.message]
            for r in f.related:
                parts.append(f"- {r.message} (line {r.span.start_pos.line + 1})")
            assume = next((x for x in f.fixes if x.mode == "assume"), None)
            if assume:
                parts.append(f"- fix: {assume.title.split(': ', 1)[1]}")
            elif f.assume_unavailable:
                parts.append(f"- no util.assume.int rewrite: {f.assume_unavailable}")
            saved = dispatch_feature.saved_dispatches(dispatch_state, params.text_document.uri, a.version)
            if saved is not None:
                parts.append(f"- removing this file's asserts saves {saved} dispatch{'es' if saved != 1 else ''} "
                             f"(iree-compile, {dispatch_state.profile})")
            if f.doc_url:
                parts.append(f"\n[{f.code} documentation]({f.doc_url})")
            return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, "\n".join(parts)),
                               lsp_range(lines, f.span.start, f.span.end))
    d = _value_at(a, off)
    if d is not None:
        name, defn_op, start = d
        text = a.text[defn_op.start:defn_op.end] if defn_op is not None else ""
        first = text.split("\n", 1)[0][:300]
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown,
                                               f"`%{name}` defined at line {lines.position(start)[0] + 1}\n\n```mlir\n{first}\n```"))
    return None


def _value_at(a: Analysis, off: int):
    """(name, defining op, offset of definition) of the SSA value under the cursor."""
    import re

    text = a.text
    ls_ = text.rfind("\n", 0, off) + 1
    le = text.find("\n", off)
    le = len(text) if le == -1 else le
    for m in re.finditer(r"%([\w$.\-]+)", text[ls_:le]):
        if m.start() + ls_ <= off <= m.end() + ls_:
            name = m.group(1)
            break
    else:
        return None
    unit = a.result.parsed.unit_at(off)
    if unit is None:
        return None
    chunk, top = unit
    chunk.reader.expand(top)
    from ..fixes.scope import Scope

    inner = top
    for o in top.walk():
        if o.start <= off < max(o.end, o.start + 1) and o.start >= inner.start:
            inner = o
    for rname, roff, _n in inner.results:
        if rname == name:
            return name, inner, roff
    for r in inner.regions:
        for b in r.blocks:
            for arg, aoff in b.args:
                if arg == name:
                    return name, None, aoff
    d = Scope(text).find_def(name, inner)
    if d is None:
        return None
    if d.op is not None:
        roff = next((ro for rn, ro, _n in d.op.results if rn == name), d.op.start)
        return name, d.op, roff
    if d.block is not None:
        for arg, aoff in d.block.args:
            if arg == name:
                return name, None, aoff
    return None


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(ls: MlirLspServer, params: types.DefinitionParams):
    a, lines, off = _cursor(ls, params)
    d = _value_at(a, off)
    if d is None:
        return None
    name, _op, start = d
    return types.Location(params.text_document.uri, lsp_range(lines, start, start + 1 + len(name)))


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(ls: MlirLspServer, params: types.ReferenceParams):
    a, lines, off = _cursor(ls, params)
    d = _value_at(a, off)
    if d is None:
        return []
    name, _op, start = d
    chunk, top = a.result.parsed.unit_at(off)
    out = []
    if params.context.include_declaration:
        out.append(types.Location(params.text_document.uri, lsp_range(lines, start, start + 1 + len(name))))
    for o in top.walk():
        for uname, uoff in op_uses(a.text, o):
            if uname.split("#")[0] == name:
                out.append(types.Location(params.text_document.uri, lsp_range(lines, uoff, uoff + 1 + len(uname))))
    return out


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls: MlirLspServer, params: types.DocumentSymbolParams):
    import re

    a = ls.analysis(params.text_document.uri)
    lines = a.result.parsed.lines
    out = []
    sym = re.compile(r'@([\w$.\-]+|"[^"]*")')
    for _chunk, op in a.result.parsed.units():
        header = a.text[op.name_start:min(op.end, op.name_start + 400)]
        m = sym.search(header)
        name = (m.group(1) if m else op.full_name)
        kind = types.SymbolKind.Function if "func" in op.full_name else (
            types.SymbolKind.Variable if "global" in op.full_name else types.SymbolKind.Object)
        rng = lsp_range(lines, op.start, op.end)
        sel = lsp_range(lines, op.name_start, op.name_start + len(op.name))
        out.append(types.DocumentSymbol(name=name or op.full_name, kind=kind, range=rng, selection_range=sel,
                                        detail=op.full_name))
    return out


@server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
def folding_ranges(ls: MlirLspServer, params: types.FoldingRangeParams):
    a = ls.analysis(params.text_document.uri)
    lines = a.result.parsed.lines
    out = []
    for _chunk, op in a.result.parsed.units():
        s, e = lines.line_of(op.start), lines.line_of(max(op.start, op.end - 1))
        if e > s:
            out.append(types.FoldingRange(start_line=s, end_line=e))
    return out


from . import dispatch_feature, tokens_feature  # noqa: E402

tokens_feature.setup(server)


@server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(inter_file_dependencies=False, workspace_diagnostics=False))
def pull_diagnostics(ls: MlirLspServer, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    if uri not in ls.pulled:  # from now on this client pulls: clear what was pushed
        ls.pulled.add(uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    a = ls.analysis(params.text_document.uri)
    diags = [diagnostic(params.text_document.uri, a.result.parsed.lines, f) for f in a.result.findings]
    diags.extend(ls.parser_diagnostics.for_version(params.text_document.uri, a.version))
    diags.extend(dispatch_feature.torch_diagnostics(ls, dispatch_state, uri, a.version))
    return types.RelatedFullDocumentDiagnosticReport(items=diags)


@server.feature("mlirLsp/bytecodeToText")
def bytecode_to_text(ls: MlirLspServer, params):
    """Textual form of a `.mlirbc` file (like mlir-lsp-server's bytecode conversion)."""
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    from ..source import SourceError, decode

    uri = params.uri if hasattr(params, "uri") else params["uri"]
    path = Path(unquote(urlparse(uri).path))
    try:
        src = decode(path.read_bytes())
    except (OSError, SourceError) as e:
        return {"error": f"{path.name}: {getattr(e, 'strerror', None) or e}"}
    return {"text": src.text, "isBytecode": src.is_bytecode}


dispatch_state = dispatch_feature.DispatchState()
dispatch_feature.setup(server, dispatch_state)


def run_server(tcp: str | None = None) -> int:
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0
