"""Navigation: hover, go to definition, find references (SSA values, block labels, symbols),
document symbols and folding ranges.

SSA values and block labels are local to a top-level op, so a request reads the text around its
position (`LiveText.place`); a value of a big function may be defined or used outside it, which
the place looks up; symbols (`@name`) are looked up over the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsprotocol import types

from ..findings import FixMode
from ..incremental.located import Place, Symbol
from ..syntax.op_tree import Op
from ..syntax.scope import Definition, Scope, containing
from ..syntax.statements import name_pattern
from . import dispatch_feature
from .convert import span_range, to_range
from .open_documents import OpenDocument

_WORD = re.compile(r"[%^@]([\w$.\-]+)(?:#\d+)?|@\"[^\"\n]*\"")


@dataclass
class Cursor:
    """A request's position: its document and the place it resolves to."""

    doc: OpenDocument
    place: Place

    @property
    def text(self) -> str:
        return self.place.text

    @property
    def offset(self) -> int:
        return self.place.at

    @property
    def result(self):
        return self.place.result

    @property
    def lines(self):
        return self.place.lines

    def range(self, start: int, end: int) -> types.Range:
        return to_range(self.place.range(start, end))

    def word(self) -> tuple[str, str, int] | None:
        """(sigil, name, offset of the sigil) of the `%value`, `^label` or `@symbol` at the cursor."""
        text, off = self.text, self.offset
        ls = text.rfind("\n", 0, off) + 1
        le = text.find("\n", off)
        le = len(text) if le == -1 else le
        for m in _WORD.finditer(text, ls, le):
            if m.start() <= off <= m.end():
                tok = m.group(0)
                name = m.group(1) if m.group(1) is not None else tok[1:]
                return tok[0], name, m.start()
        return None


def cursor(ls, params) -> Cursor | None:
    doc = ls.document(params.text_document.uri)
    if doc is None or doc.error:
        return None
    return Cursor(doc, doc.live.place(params.position.line, params.position.character))


# -- SSA values ---------------------------------------------------------------------------------
def _innermost(c: Cursor) -> Op | None:
    unit = c.result.parsed.unit_at(c.offset)
    if unit is None:
        return None
    chunk, top = unit
    chunk.reader.expand(top)
    inner = top
    for o in top.walk():
        if o.start <= c.offset < max(o.end, o.start + 1) and o.start >= inner.start:
            inner = o
    return inner


def value_definition(c: Cursor, name: str):
    """(defining op or None, offset of the definition, Definition, Scope) of `%name`, or None."""
    inner = _innermost(c)
    if inner is None:
        return None
    scope = Scope(c.text)
    for rname, roff, _n in inner.results:
        if rname == name:  # the cursor is on a result of this op
            where = containing(inner)
            region, block = (where[0], where[1]) if where else (None, None)
            return inner, roff, Definition(name, inner, block, region), scope
    for r in inner.regions:  # on a block argument of one of its regions (`^bb0(%in: f32)`)
        for b in r.blocks:
            for arg, aoff in b.args:
                if arg == name and r.start <= c.offset < r.end:
                    return None, aoff, Definition(name, None, b, r), scope
    d = scope.find_def(name, inner)
    if d is None:
        return None
    if d.op is not None:
        return d.op, next((ro for rn, ro, _n in d.op.results if rn == name), d.op.start), d, scope
    for arg, aoff in (d.block.args if d.block is not None else []):
        if arg == name:
            return None, aoff, d, scope
    # an entry argument written in the op's header: `func.func @f(%a: i32)`
    if d.region is not None and (owner := _owner(c, d.region)) is not None:
        m = re.compile(r"%" + re.escape(name) + r"(?![\w$.\-])").search(c.text, owner.name_start, d.region.start)
        if m:
            return None, m.start(), d, scope
    return None


def _owner(c: Cursor, region) -> Op | None:
    unit = c.result.parsed.unit_at(region.start)
    if unit is None:
        return None
    for o in unit[1].walk():
        if any(r is region for r in o.regions):
            return o
    return None


def _function_level(c: Cursor, d: Definition) -> bool:
    """Is `d` a value of a big function's own block (its uses may sit elsewhere)?"""
    return c.place.in_big_function and d.region is not None and d.region.sparse is not None


def value_references(c: Cursor, name: str, include_declaration: bool) -> list[types.Range]:
    found = value_definition(c, name)
    if found is None:  # defined elsewhere in a big function (or an argument of it)
        where = c.place.definition_elsewhere(name)
        if where is None:
            return []
        out = [to_range(r) for r in c.place.uses_elsewhere(name) if include_declaration or r != where.range]
        out.extend(c.range(x.start(), x.end()) for x in name_pattern(name).finditer(c.text))
        return out
    _op, start, d, scope = found
    if _function_level(c, d):
        out = [c.range(start, start + 1 + len(name))] if include_declaration else []
        out.extend(c.range(off, off + 1 + len(name)) for _o, off in scope.users(d))
        out.extend(to_range(r) for r in c.place.uses_elsewhere(name))
        return out
    out = [c.range(start, start + 1 + len(name))] if include_declaration else []
    region = d.region
    if region is None:
        return out
    # Uses inside the region of the definition (isolated ops excluded), plus uses in the
    # header of the region's owner for header-declared arguments (`iter_args`, ...).
    for _o, off in scope.users(d):
        out.append(c.range(off, off + 1 + len(name)))
    return out


# -- block labels ---------------------------------------------------------------------------
def _label_region(c: Cursor, name: str):
    """The innermost region around the cursor that has a block labelled `^name`."""
    unit = c.result.parsed.unit_at(c.offset)
    if unit is None:
        return None
    unit[0].reader.expand(unit[1])
    best = None
    for o in unit[1].walk():
        for r in o.regions:
            if r.start <= c.offset < r.end and any(b.label == "^" + name for b in r.blocks):
                if best is None or r.start >= best.start:
                    best = r
    return best


def label_locations(c: Cursor, name: str, include_declaration: bool, uses: bool) -> list[types.Range]:
    region = _label_region(c, name)
    if region is None:
        return []
    block = next(b for b in region.blocks if b.label == "^" + name)
    out = [c.range(block.label_start, block.label_start + 1 + len(name))] if include_declaration else []
    if uses:
        pat = re.compile(r"\^" + re.escape(name) + r"(?![\w$.\-])")
        for m in pat.finditer(c.text, region.start, region.end):
            if m.start() != block.label_start:
                out.append(c.range(m.start(), m.end()))
    return out


# -- symbols --------------------------------------------------------------------------------
def symbol_definition(doc, name: str) -> Symbol | None:
    """The top-level op that defines `@name`."""
    return next((s for s in doc.live.symbols() if s.symbol == name), None)


def symbol_references(doc, name: str) -> list[types.Range]:
    pat = re.compile(r"@" + re.escape(name) + r"(?![\w$.\-])") if not name.startswith('"') else re.compile(
        "@" + re.escape(name))
    return [to_range(r) for r in doc.live.find_all(pat, "@" + name)]


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
        sigil, name, _at = w
        uri = params.text_document.uri
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

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(ls, params: types.ReferenceParams):
        c = cursor(ls, params)
        w = None if c is None else c.word()
        if c is None or w is None:  # no open document, or no word at the position
            return []
        sigil, name, _at = w
        uri = params.text_document.uri
        decl = params.context.include_declaration
        if sigil == "%":
            return [types.Location(uri, r) for r in value_references(c, name, decl)]
        if sigil == "^":
            return [types.Location(uri, r) for r in label_locations(c, name, decl, uses=True)]
        d = symbol_definition(c.doc, name)
        skip = to_range(d.symbol_range) if d and not decl else None
        return [types.Location(uri, r) for r in symbol_references(c.doc, name) if r != skip]

    def symbols(params) -> list[Symbol]:
        doc = server.document(params.text_document.uri)
        return [] if doc is None or doc.error else doc.live.symbols()

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls, params: types.DocumentSymbolParams):
        out = []
        for o in symbols(params):
            kind = types.SymbolKind.Function if "func" in o.full_name else (
                types.SymbolKind.Variable if "global" in o.full_name else types.SymbolKind.Object)
            out.append(types.DocumentSymbol(name=o.symbol or o.full_name, kind=kind, detail=o.full_name,
                                            range=to_range(o.range), selection_range=to_range(o.selection)))
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
