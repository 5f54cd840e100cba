"""The navigation index: every name of a text, where it is bound and what each use refers to.

MLIR binds names in many places, and navigation (definition, references, hover, document symbols)
must know them all, the way the real parser does:

- `%values`: the results of an op (`%a, %b:2 =`, a list that may run over several lines); the
  arguments of a block (`^bb1(%x: f32):`); the entry arguments of a region written in its op's
  own syntax: a function's signature (`func.func @f(%a: i32)`), a loop's header (`scf.for %i =`,
  `scf.parallel (%i, %j) =`, `affine.parallel (%i) =`, `scf.forall (%i) in`, `iter_args(%acc =
  %init)`, `shared_outs(%o = %t)`, `scf.while (%a = %x)`), `gpu.launch blocks(%bx, ...) in (%sx =
  ...)`, `gpu.func ... workgroup(%w : ...)` and the region arguments after `ins`/`outs`
  (`linalg.map ... outs(...) (%in: f32) {`).
- `^labels`: a block's label at the start of its line, visible in its region.
- `@symbols`: the name of a symbol op (`func.func @f`, `module @m`, `gpu.module @k`,
  `memref.global "private" @g`), in the symbol table of the op around it; `@k::@f` walks into
  nested symbol tables.

Scopes are regions: a value bound in a region is seen in that region and the regions nested in
it; a name bound again in a nested region is another value there (`%acc = scf.for ...
iter_args(%acc = ...)`), and sibling regions may reuse names. Results are bound in the region of
their op, header arguments in the op's first region. Comments and strings are never code.

The index is one regex pass over the text (a top-level op, or a small document), then one pass
over its tokens (name_reader.py); `build` keeps the last few texts' indexes. What it holds is in
bindings.py.
"""

from __future__ import annotations

import bisect
from functools import lru_cache

from .bindings import Binding, Block, Scope, SymbolDef
from .name_reader import SYMBOL_TABLES, NameReader

__all__ = ["SYMBOL_TABLES", "Binding", "Block", "NameIndex", "Scope", "SymbolDef", "build"]


class NameIndex:
    """Bindings and uses of every `%value`, `^label` and `@symbol` in text[start:end] (offsets
    are the text's)."""

    def __init__(self, text: str, start: int = 0, end: int | None = None):
        self.text = text
        r = NameReader(text, start, end).read()
        self.root, self.symbols = r.root, r.symbols
        self._reader = r

    def token_at(self, offset: int) -> int | None:
        """The index of the name token (`%`, `^`, `@`) at `offset` (its sigil to its end)."""
        r = self._reader
        i = bisect.bisect_right(r.starts, offset) - 1
        if i >= 0 and r.kinds[i] in "vly" and offset <= r.ends[i]:
            return i
        return None

    def binding_at(self, offset: int) -> Binding | None:
        """The binding of the `%value` or `^label` at `offset` (on its definition or a use)."""
        i = self.token_at(offset)
        found = None if i is None else self._reader.resolved[i]
        return found if isinstance(found, Binding) else None

    def symbol_at(self, offset: int) -> SymbolDef | None:
        """The symbol op that the `@name` at `offset` names, when this text defines it."""
        i = self.token_at(offset)
        found = None if i is None else self._reader.resolved[i]
        return found if isinstance(found, SymbolDef) else None

    def symbol_path_at(self, offset: int) -> list[str]:
        """The names of `@a::@b` up to the one at `offset` (["a", "b"]); [] off a symbol."""
        i = self.token_at(offset)
        return [] if i is None or self._reader.kinds[i] != "y" else self._reader.symbol_path(i)

    @staticmethod
    def references(b: Binding | SymbolDef) -> list[int]:
        """Offsets of the definition and every use (a name used twice by one op: each time)."""
        return sorted([b.at, *b.uses]) if b.name is not None else sorted(b.uses)

    def symbol_list(self) -> list[SymbolDef]:
        """The symbols as the real server lists them: symbol ops, and unnamed symbol tables
        (`module {`), nested in the symbol tables that hold them."""
        return self.symbols.ordered


@lru_cache(maxsize=8)
def build(text: str, start: int = 0, end: int | None = None) -> NameIndex:
    """The index of text[start:end] (the last few are kept: a request after another on the same
    version reads nothing again)."""
    return NameIndex(text, start, end)
