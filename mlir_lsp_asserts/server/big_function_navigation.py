"""Navigation in the body of a big function (kept in several pieces, incremental/big_function.py):
`%values` and `^labels` looked up with the op tree's scopes (syntax/scope.py) and, for a value of
the function's own block, across its pieces. Elsewhere the navigation index answers
(syntax/name_index.py, navigation_feature.py)."""

from __future__ import annotations

import re

from lsprotocol import types

from ..syntax.op_tree import Op
from ..syntax.scope import Definition, Scope, containing
from ..syntax.statements import name_pattern
from .convert import to_range
from .cursor import Cursor


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
