"""Navigation: hover, go to definition, find references (SSA values, block labels, symbols),
document symbols and folding ranges.

SSA values and block labels are local to a top-level op, so a request reads the text around its
position (`LiveText.place`); a value of a big function may be defined or used outside it, which
the place looks up; symbols (`@name`) are looked up over the document.
"""

from __future__ import annotations

import re

from lsprotocol import types

from ..findings import FixMode
from ..incremental.located import Symbol
from ..syntax import name_index
from ..syntax.name_index import SYMBOL_TABLES, Binding, NameIndex, SymbolDef
from . import dispatch_feature
from .big_function_navigation import label_locations, value_definition, value_references
from .convert import span_range, to_range
from .cursor import Cursor, cursor

# -- the navigation index (syntax/name_index.py) ---------------------------------------------
# The navigation index reads a text up to this size whole for a request (0.35 s on a loaded 2-core
# machine, load 9); a bigger top-level op is read by the op tree's lazy scopes.
INDEX_MAX_CHARS = 256 * 1024


def _index(c: Cursor) -> NameIndex | None:
    """The index of the text around the cursor: a top-level op, or a small document whole. None in
    a big function's body, whose values the place looks up across its pieces
    (big_function_navigation.py), and in a top-level op too big to read whole for one request."""
    if c.place.in_big_function:
        return None
    text = c.text
    if len(text) <= INDEX_MAX_CHARS:
        return name_index.build(text)
    unit = c.result.parsed.unit_at(c.offset)
    if unit is None or unit[1].end - unit[1].start > INDEX_MAX_CHARS:
        return None
    return name_index.build(text, unit[1].start, unit[1].end)


def _name_range(c: Cursor, b: Binding | SymbolDef) -> types.Range:
    return c.range(b.at, b.at + 1 + len(b.name or ""))


def _symbol(c: Cursor, ix: NameIndex) -> tuple[Cursor, SymbolDef] | None:
    """The symbol op that the `@name` (or `@a::@b`) at the cursor names, with a cursor on its
    text: in the text around the cursor, else a top-level op of the document and the symbols
    nested in it."""
    local = ix.symbol_at(c.offset)
    if local is not None:
        return c, local
    path = ix.symbol_path_at(c.offset)
    top = symbol_definition(c.doc, path[0]) if path else None
    if top is None:
        return None
    there = Cursor(c.doc, c.doc.live.place(*top.symbol_range[0]))
    there_index = _index(there)
    found = None if there_index is None else there_index.symbol_at(there.offset)
    for part in path[1:]:
        found = None if found is None else found.children.get(part)
    return (there, found) if found is not None else None


_FULL_NAMES = {"module": "builtin.module", "func": "func.func"}


def _binding_hover(c: Cursor, b: Binding) -> str:
    line = c.place.position(b.at)[0] + 1
    op = _FULL_NAMES.get(b.op, b.op)
    if b.sigil == "^":
        block = b.block
        assert block is not None, "a label has its block"
        parts = [f"Block #{block.number} (`^{b.name}`) of `{op}`, line {line}"]
        if block.args:
            parts.append("Arguments: " + ", ".join(f"`%{a.name}: {a.type}`" for a in block.args))
        if block.preds:
            parts.append("Predecessors: " + ", ".join(p.title for p in block.preds))
        if block.succs:
            parts.append("Successors: " + ", ".join(s.title for s in block.succs))
        return "\n\n".join(parts)
    head = f"`%{b.name}` defined at line {line}"
    if b.kind == "result":
        return f"{head}: result #{b.number} of `{op}`\n\n```mlir\n{_first_line(c.text, b.op_start, len(c.text))}\n```"
    what = "block argument" if b.kind == "block argument" else "argument"
    where = f"block `^{b.block.label[1:]}`" if b.block is not None and b.block.label else "its entry block"
    text = f"{head}: {what} #{b.number} of `{op}` ({where})"
    if b.type:
        text += f"\n\nType: `{b.type}`"
    if b.kind == "header":
        text += f"\n\n```mlir\n{_first_line(c.text, b.op_start, len(c.text))}\n```"
    return text


def _symbol_hover(c: Cursor, sd: SymbolDef) -> str:
    op = _FULL_NAMES.get(sd.op, sd.op)
    line = c.place.position(sd.at)[0] + 1
    return f"`@{sd.name}` ({op}) defined at line {line}\n\n```mlir\n{_first_line(c.text, sd.op_start, sd.op_end)}\n```"


def _nested_symbols(doc, o: Symbol) -> list[types.DocumentSymbol] | None:
    """The symbols inside a top-level symbol table (`gpu.module @k`), read by the index of its op."""
    if o.full_name not in SYMBOL_TABLES or o.symbol is None:
        return None
    c = Cursor(doc, doc.live.place(*o.symbol_range[0]))
    ix = _index(c)
    table = None if ix is None else ix.symbol_at(c.offset)
    if table is None or not table.ordered:
        return None
    return _symbol_tree(c, table.ordered)


def _symbol_tree(c: Cursor, items: list[SymbolDef]) -> list[types.DocumentSymbol]:
    out = []
    for sd in items:
        op = _FULL_NAMES.get(sd.op, sd.op)
        kind = (types.SymbolKind.Module if op.endswith("module") else types.SymbolKind.Function if "func" in op
                else types.SymbolKind.Variable if "global" in op else types.SymbolKind.Object)
        out.append(types.DocumentSymbol(
            name=sd.name or f"<{op}>", kind=kind, detail=op, range=c.range(sd.op_start, sd.op_end),
            selection_range=c.range(sd.op_start, sd.op_start + len(sd.op)),
            children=_symbol_tree(c, sd.ordered) or None))
    return out


# -- the requests ---------------------------------------------------------------------------
def definition_of(c: Cursor, sigil: str, name: str, uri: str) -> types.Location | None:
    ix = _index(c)
    if ix is not None:
        if sigil != "@":
            b = ix.binding_at(c.offset)
            return types.Location(uri, _name_range(c, b)) if b is not None else None
        found_symbol = _symbol(c, ix)
        if found_symbol is not None:
            there, sd = found_symbol
            return types.Location(uri, _name_range(there, sd))
    if sigil == "%":
        found = value_definition(c, name)
        if found is None:
            where = c.place.definition_elsewhere(name)
            return types.Location(uri, to_range(where.range)) if where else None
        return types.Location(uri, c.range(found[1], found[1] + 1 + len(name)))
    if sigil == "^":
        locs = label_locations(c, name, include_declaration=True, uses=False)
        return types.Location(uri, locs[0]) if locs else None
    d = symbol_definition(c.doc, name)
    return types.Location(uri, to_range(d.symbol_range)) if d else None


def references_of(c: Cursor, sigil: str, name: str, decl: bool) -> list[types.Range]:
    ix = _index(c)
    if ix is not None:
        if sigil != "@":
            b = ix.binding_at(c.offset)
            return [] if b is None else [c.range(at, at + 1 + len(b.name)) for at in ix.references(b)
                                         if decl or at != b.at]
        found_symbol = _symbol(c, ix)
        if found_symbol is not None and not c.doc.live.in_pieces:  # the whole document is indexed
            there, sd = found_symbol
            return [there.range(at, at + 1 + len(name)) for at in ix.references(sd) if decl or at != sd.at]
    if sigil == "%":
        return value_references(c, name, decl)
    if sigil == "^":
        return label_locations(c, name, decl, uses=True)
    d = symbol_definition(c.doc, name)
    skip = to_range(d.symbol_range) if d and not decl else None
    return [r for r in symbol_references(c.doc, name) if r != skip]


# -- symbols --------------------------------------------------------------------------------
def symbol_definition(doc, name: str) -> Symbol | None:
    """The top-level op that defines `@name`."""
    return next((s for s in doc.live.symbols() if s.symbol == name), None)


def symbol_references(doc, name: str) -> list[types.Range]:
    """Every `@name` of the document outside comments and strings (a match of group 1)."""
    end = "" if name.startswith('"') else r"(?![\w$.\-])"
    pat = re.compile(r'//[^\n]*|"(?:[^"\\\n]|\\.)*"|(@' + re.escape(name) + end + ")")
    return [to_range(r) for r in doc.live.find_all(pat, "@" + name, group=1)]


# -- hover ----------------------------------------------------------------------------------
def assert_hover(ls, c: Cursor) -> types.Hover | None:
    result = c.place.with_fixes()
    if result is None:
        return None
    line0 = c.place.first_line
    # At the severity the diagnostic shows (measuredSeverity); the measurement itself is listed
    # by dispatch_note below
    for f in dispatch_feature.measured_findings(ls, c.doc.uri, c.doc.stamp, result.findings, line0):
        if not (f.span.start <= c.offset <= f.span.end and f.code.startswith("MLA")):
            continue
        parts = [f"**{f.code} {f.name}** ({f.severity.value})", "", f.message]
        for r in f.related:
            parts.append(f"- {r.message} (line {r.span.start_pos.line + line0 + 1})")
        assume = next((x for x in f.fixes if x.mode == FixMode.ASSUME), None)
        if assume:
            parts.append(f"- fix: {assume.title.split(': ', 1)[1]}")
        elif f.assume_unavailable:
            parts.append(f"- no util.assume.int rewrite: {f.assume_unavailable}")
        parts.extend(dispatch_note(ls, c.doc, f.span.start_pos.line + line0))
        if f.doc_url:
            parts.append(f"\n[{f.code} documentation]({f.doc_url})")
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, "\n".join(parts)),
                           span_range(f.span, line0))
    return None


def _first_line(text: str, start: int, end: int) -> str:
    nl = text.find("\n", start, end)
    return text[start:nl if nl != -1 else end][:300]


def word_hover(c: Cursor) -> types.Hover | None:
    w = c.word()
    if w is None:
        return None
    sigil, name, _at = w
    ix = _index(c)
    if ix is not None:
        b = ix.binding_at(c.offset)
        if b is not None:
            return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, _binding_hover(c, b)))
        if sigil == "@" and (found_symbol := _symbol(c, ix)) is not None:
            there, sd = found_symbol
            return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, _symbol_hover(there, sd)))
        if sigil != "@":
            return None
    if sigil == "%":
        found = value_definition(c, name)
        if found is None:
            where = c.place.definition_elsewhere(name)
            if where is None:
                return None
            md = f"`%{name}` defined at line {where.range[0][0] + 1}\n\n```mlir\n{where.line_text.strip()}\n```"
            return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, md))
        op, start, _d, _scope = found
        line = c.place.position(start)[0] + 1
        if op is not None:
            code = _first_line(c.text, op.start, op.end)
        else:  # a block argument: its declaration with its type
            m = re.compile(r"%" + re.escape(name) + r"\s*:\s*([^,)\n{]+)").match(c.text, start)
            code = f"%{name}: {m.group(1).strip()}" if m else f"%{name}"
        md = f"`%{name}` defined at line {line}\n\n```mlir\n{code}\n```"
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, md))
    if sigil == "@":
        d = symbol_definition(c.doc, name)
        if d is None:
            return None
        md = f"`@{name}` ({d.full_name}) defined at line {d.range[0][0] + 1}\n\n```mlir\n{d.line_text}\n```"
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, md))
    return None


def dispatch_note(ls, doc, line: int) -> list[str]:
    """What the last dispatch count says about the assert at `line` (nothing if none yet)."""
    out = []
    saved = dispatch_feature.saved_dispatches(ls.dispatch, doc.uri, doc.stamp)
    if saved is not None:
        out.append(f"- removing this file's asserts saves {saved} dispatch{'es' if saved != 1 else ''} "
                   f"(iree-compile, {ls.options.dispatch.profile})")
    return out + dispatch_feature.hover_lines(ls.dispatch, doc.uri, doc.stamp, line)


def setup(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: types.HoverParams):
        c = cursor(ls, params)
        if c is None:
            return None
        # a value, label or symbol under the cursor first (also inside an assert's line)
        return word_hover(c) or assert_hover(ls, c)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls, params: types.DefinitionParams):
        c = cursor(ls, params)
        w = None if c is None else c.word()
        if c is None or w is None:  # no open document, or no word at the position
            return None
        return definition_of(c, w[0], w[1], params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(ls, params: types.ReferenceParams):
        c = cursor(ls, params)
        w = None if c is None else c.word()
        if c is None or w is None:  # no open document, or no word at the position
            return []
        uri = params.text_document.uri
        return [types.Location(uri, r) for r in references_of(c, w[0], w[1], params.context.include_declaration)]

    def symbols(params) -> list[Symbol]:
        doc = server.document(params.text_document.uri)
        return [] if doc is None or doc.error else doc.live.symbols()

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls, params: types.DocumentSymbolParams):
        doc = server.document(params.text_document.uri)
        if doc is not None and not doc.error and not doc.live.in_pieces and doc.live.size <= INDEX_MAX_CHARS:
            c = Cursor(doc, doc.live.place(0, 0))  # the whole text: nested, as the real server lists them
            return _symbol_tree(c, name_index.build(c.text).symbol_list())
        out = []
        for o in symbols(params):
            kind = types.SymbolKind.Function if "func" in o.full_name else (
                types.SymbolKind.Variable if "global" in o.full_name else types.SymbolKind.Object)
            out.append(types.DocumentSymbol(name=o.symbol or o.full_name, kind=kind, detail=o.full_name,
                                            range=to_range(o.range), selection_range=to_range(o.selection),
                                            children=_nested_symbols(doc, o)))
        return out

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    def folding_ranges(ls, params: types.FoldingRangeParams):
        out = []
        for o in symbols(params):
            (s, _sc), (e, ec) = o.range
            e -= 1 if ec == 0 else 0
            if e > s:
                out.append(types.FoldingRange(start_line=s, end_line=e))
        return out
