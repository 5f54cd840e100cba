"""The reading pass of the navigation index (name_index.py): tokens in, bindings and uses out.

One regex pass cuts the text into the tokens that matter (names, brackets, `=`, `:`, `,`,
newlines, words; comments dropped, strings kept whole), then `NameReader` walks them once,
keeping the regions (`{...}` that are not attribute dictionaries) as scopes, the open `(` groups
with what their names are, and the header arguments that wait for their op's first region.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .bindings import Binding, Block, Scope, SymbolDef, add, current_block, find_symbol, lookup

TOKEN = re.compile(
    r'(?P<s>"(?:[^"\\\n]|\\.)*"?)'
    r"|//[^\n]*"
    r"|(?P<v>%[\w$.\-]+)(?:#\d+)?"
    r"|(?P<l>\^[\w$.\-]+)"
    r'|(?P<y>@(?:[\w$.\-]+|"(?:[^"\\\n]|\\.)*"))'
    r"|(?P<a>->)"
    r"|(?P<e>==?)"
    r"|(?P<p>::|[{}()\[\]<:,\n])"
    r"|(?P<w>[#!]?[A-Za-z_][\w$.\-]*)"
)
_DIGITS = re.compile(r"\s*\d+")
# Ops whose `@name` defines a symbol (the last part of their name).
_SYMBOL_OPS = frozenset("func module global named_sequence executable variant export binary pattern "
                        "dialect comdat initializer".split())
SYMBOL_TABLES = frozenset({"builtin.module", "module", "gpu.module", "spirv.module", "hal.executable",
                            "hal.executable.variant", "flow.executable", "stream.executable", "transform.library"})
# Words before a typed `(%a: T)` group that binds the names in it (gpu.func attributions).
_ATTRIBUTION_WORDS = frozenset({"workgroup", "private"})
# Words before an untyped `(%i, %j)` group that binds its names when `=` or `in` follows.
_LOOP_GROUP_WORDS = frozenset({"blocks", "threads", "clusters"})
_ARGUMENT_KINDS = {"block": "block argument", "args": "function argument", "attribution": "header"}


@dataclass(slots=True)
class _Statement:
    op: str = ""
    start: int = 0
    symbol: SymbolDef | None = None


@dataclass(slots=True)
class _Level:
    """One `{...}` being read: a region (with its scope) or an attribute dictionary (`region`
    False: its scope is the region around it)."""

    scope: Scope
    paren: int = 0
    statement: _Statement = field(default_factory=_Statement)
    table: SymbolDef | None = None  # the symbol table whose region this is
    region: bool = True


@dataclass(slots=True)
class _Group:
    """An open `(`: what its names are (see `_group_role`), where it opened, and for a loop
    group the names in it so far (bound or used once its `)` is seen)."""

    role: str
    paren: int
    level: int
    count: int = 0
    names: list[int] = field(default_factory=list)


class NameReader:
    """Reads text[start:end] into `resolved` (per token: the binding or symbol it names) and the
    root scope and symbol table. Offsets are the text's."""

    def __init__(self, text: str, start: int = 0, end: int | None = None):
        self.text = text
        end = len(text) if end is None else end
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.kinds: list[str] = []
        self.names: list[str] = []
        for m in TOKEN.finditer(text, start, end):
            kind = m.lastgroup
            if kind is None:
                continue  # a comment
            self.starts.append(m.start())
            self.ends.append(m.end(kind))
            self.kinds.append(kind)
            self.names.append(m.group(kind))
        self.resolved: list[Binding | SymbolDef | None] = [None] * len(self.starts)
        self.root = Scope(start, None, "", start)
        self.symbols = SymbolDef(None, start, "", start, end, None)  # the text's own symbol table
        self.levels = [_Level(self.root, table=self.symbols)]
        self.pending: list[Binding] = []  # header arguments waiting for their op's region
        self.pending_level = -1
        self.uses: list[tuple[int, Scope, object]] = []  # (token, scope, its block or symbol table)
        self.groups: list[_Group] = []  # the open `(`

    def read(self) -> NameReader:
        i, n = 0, len(self.kinds)
        step = {"v": self._value, "l": self._label, "y": self._symbol, "p": self._punctuation}
        while i < n:
            read = step.get(self.kinds[i])
            i = read(i) if read is not None else self._word(i)
        self._drop()
        self._resolve()
        return self

    # -- helpers -------------------------------------------------------------------------------
    def _line_start(self, j: int) -> bool:
        return j == 0 or self.kinds[j - 1] == "p" and self.names[j - 1] in "\n{"

    def _next(self, j: int) -> int:
        """The token after j, newlines skipped."""
        names, n = self.names, len(self.names)
        j += 1
        while j < n and names[j] == "\n":
            j += 1
        return j

    def _name_after(self, j: int) -> str:
        k = self._next(j)
        return self.names[k] if k < len(self.names) else ""

    def _drop(self) -> None:
        """Forget the pending arguments: a declaration's have no value (nothing to navigate)."""
        for b in self.pending:
            self.resolved[bisect.bisect_left(self.starts, b.at)] = None
        self.pending, self.pending_level = [], -1

    def _wait(self, b: Binding) -> None:
        """`b` is bound in the region of the op being read (the next one at this level)."""
        self.pending.append(b)
        self.pending_level = len(self.levels) - 1

    def _statement(self, level: _Level, op: str, start: int) -> None:
        level.statement = _Statement(op, start)
        if self.pending and self.pending_level >= len(self.levels) - 1:
            self._drop()  # a declaration without a body
        if level.scope is not self.root:
            current_block(level.scope)

    def _group(self) -> _Group | None:
        """The `(` group that the current token is directly in, if any."""
        g, level = self.groups[-1] if self.groups else None, self.levels[-1]
        return g if g is not None and (g.paren + 1, g.level) == (level.paren, len(self.levels)) else None

    # -- tokens ----------------------------------------------------------------------------------
    def _value(self, i: int) -> int:
        name, at, level = self.names[i], self.starts[i], self.levels[-1]
        scope, st = level.scope, level.statement
        if level.region and level.paren == 0 and self._line_start(i) and (run := self._results(i)) is not None:
            bound, eq = run
            op = self._name_after(eq).strip('"')
            self._statement(level, op, at)
            number = 0
            for j, count in bound:
                b = self.resolved[j] = Binding("%", self.names[j][1:], self.starts[j], "result", scope, op, at, number)
                add(scope, b)
                number += count
            return eq + 1
        group, after = self._group(), self._name_after(i)
        if after == "=" or i and self.names[i - 1] == "as":
            # `scf.for %i =`, `iter_args(%a = %x)`, `in (%sx = %c1)`, `async.execute (%f as %b : ...)`
            if group is not None and group.role == "loop":
                group.role = "uses"
                self.uses.extend((t, scope, None) for t in group.names)
            b = self.resolved[i] = Binding("%", name[1:], at, "header", scope, st.op, st.start)
            self._wait(b)
        elif group is not None and group.role in _ARGUMENT_KINDS and after == ":":
            b = self.resolved[i] = Binding("%", name[1:], at, _ARGUMENT_KINDS[group.role], scope, st.op, st.start,
                                           group.count, self._type_after(self._next(i)))
            group.count += 1
            if group.role == "block":  # `^bb0(%a: f32):` binds in the region of the label
                b.block = current_block(scope)
                b.op, b.op_start = scope.op, scope.op_start
                b.block.args.append(b)
                add(scope, b)
            else:
                self._wait(b)
        elif group is not None and group.role == "loop":
            group.names.append(i)
        else:
            self.uses.append((i, scope, None))
        return i + 1

    def _label(self, i: int) -> int:
        name, at, level = self.names[i], self.starts[i], self.levels[-1]
        scope = level.scope
        if level.region and scope is not self.root and self._line_start(i) and self._name_after(i) in ("(", ":"):
            block = Block(len(scope.blocks), name, at)
            scope.blocks.append(block)
            b = self.resolved[i] = Binding("^", name[1:], at, "label", scope, scope.op, scope.op_start, block.number,
                                           block=block)
            scope.labels.setdefault(name[1:], b)
        else:
            self.uses.append((i, scope, current_block(scope) if scope is not self.root else None))
        return i + 1

    def _symbol(self, i: int) -> int:
        name, at, level = self.names[i], self.starts[i], self.levels[-1]
        st = level.statement
        if level.region and st.symbol is None and st.op and level.paren == 0 \
                and st.op.rsplit(".", 1)[-1] in _SYMBOL_OPS and (i == 0 or self.names[i - 1] != "::"):
            end = self.text.find("\n", at)
            sd = st.symbol = SymbolDef(name[1:], at, st.op, st.start, len(self.text) if end == -1 else end, level.table)
            if level.table is not None:
                level.table.children.setdefault(name[1:], sd)
                level.table.ordered.append(sd)
            self.resolved[i] = sd
        else:
            self.uses.append((i, level.scope, level.table))  # resolved among the symbols at the end
        return i + 1

    def _word(self, i: int) -> int:
        k, name, level = self.kinds[i], self.names[i], self.levels[-1]
        if level.region and level.paren == 0 and (k == "s" or _is_op_name(name)) and (
                self._line_start(i) or not level.statement.op):
            self._statement(level, name.strip('"'), self.starts[i])
        return i + 1

    def _punctuation(self, i: int) -> int:
        name, level = self.names[i], self.levels[-1]
        if name == "(":
            self.groups.append(_Group(self._group_role(i), level.paren, len(self.levels)))
            level.paren += 1
        elif name == ")":
            level.paren = max(0, level.paren - 1)
            g = self.groups[-1] if self.groups else None
            if g is not None and (g.paren, g.level) == (level.paren, len(self.levels)):
                self.groups.pop()
                if g.role == "loop" and g.names:
                    self._loop_group(i, g)
        elif name == "[":
            level.paren += 1
        elif name == "]":
            level.paren = max(0, level.paren - 1)
        elif name == "{":
            self._open(i, level)
        elif name == "}" and len(self.levels) > 1:
            done = self.levels.pop()
            while self.groups and self.groups[-1].level > len(self.levels):
                self.groups.pop()
            if done.region:
                done.scope.end = self.ends[i]
                st = self.levels[-1].statement
                if st.symbol is not None:
                    st.symbol.op_end = self.ends[i]
            if self.pending_level >= len(self.levels):
                self._drop()
        return i + 1

    def _open(self, i: int, level: _Level) -> None:
        """A `{`: a region of the op being read (its header arguments bound in it), or a dictionary."""
        if not (level.region and self._is_region(i)):
            self.levels.append(_Level(level.scope, table=level.table, region=False))
            return
        st = level.statement
        inner = Scope(self.starts[i], level.scope, st.op, st.start)
        table = level.table
        if st.op in SYMBOL_TABLES or (st.symbol is not None and st.op.rsplit(".", 1)[-1] == "module"):
            if st.symbol is None:  # `module {`: a symbol table without a name
                st.symbol = SymbolDef(None, st.start, st.op, st.start, self.starts[i], level.table)
                if level.table is not None:
                    level.table.ordered.append(st.symbol)
            table = st.symbol
        if self.pending and self.pending_level == len(self.levels) - 1:
            entry = current_block(inner)
            for number, b in enumerate(self.pending):
                b.scope, b.number = inner, number
                add(inner, b)
                entry.args.append(b)
            self.pending, self.pending_level = [], -1
        self.levels.append(_Level(inner, table=table))

    # -- what a token sequence is --------------------------------------------------------------
    def _results(self, i: int) -> tuple[list[tuple[int, int]], int] | None:
        """The names of a result list starting at token i (`%a, %b:2\n = `) with how many values
        each is, and the token of its `=`; None if it is not one."""
        kinds, names, n = self.kinds, self.names, len(self.kinds)
        bound = []
        j = i
        while j < n and kinds[j] == "v":
            count, k = 1, self._next(j)
            if k < n and names[k] == ":":
                m = _DIGITS.match(self.text, self.ends[k])
                if m is None:
                    return None
                count, k = int(m.group().strip()), self._next(k)
            bound.append((j, count))
            if k < n and names[k] == "=":
                return bound, k
            if k >= n or names[k] != ",":
                return None
            j = self._next(k)
        return None

    def _group_role(self, i: int) -> str:
        """What a `(` at token i opens: a function's arguments (`@f(`), a block's (`^bb0(` at the
        start of a line), region arguments (`outs(...) (` or `] (`), gpu.func attributions, an
        untyped loop group (`scf.parallel (`, `blocks(`), or anything else ("uses")."""
        j = i - 1
        while j >= 0 and self.names[j] == "\n":
            j -= 1
        if j < 0:
            return "uses"
        k, name = self.kinds[j], self.names[j]
        if k == "y" or name in (")", "]"):
            return "args"
        if k == "l":
            return "block" if self._line_start(j) else "uses"
        if k == "w" and name in _ATTRIBUTION_WORDS:
            return "attribution"
        if k == "w" and (name in _LOOP_GROUP_WORDS or "." in name):
            return "loop"
        return "uses"

    def _loop_group(self, close: int, g: _Group) -> None:
        """`(%i, %j)` closed at token `close`: loop variables when `=` or `in` follows, else uses."""
        level = self.levels[-1]
        if self._name_after(close) not in ("=", "in"):
            self.uses.extend((t, level.scope, None) for t in g.names)
            return
        st = level.statement
        for t in g.names:
            b = self.resolved[t] = Binding("%", self.names[t][1:], self.starts[t], "header", level.scope, st.op,
                                           st.start)
            self._wait(b)

    def _type_after(self, colon: int) -> str:
        """The type written after the `:` at token `colon` (up to `,` `)` `{` or a newline at its depth)."""
        text, start = self.text, self.ends[colon]
        depth, j = 0, start
        while j < len(text):
            ch = text[j]
            if ch in "<([":
                depth += 1
            elif ch in ">)]":
                if depth == 0:
                    break
                depth -= 1
            elif ch in ",{\n" and depth == 0:
                break
            j += 1
        return text[start:j].strip().split(" loc(")[0]

    def _is_region(self, i: int) -> bool:
        """Is the `{` at token i a region (not an attribute dictionary)?"""
        kinds, names, text = self.kinds, self.names, self.text
        j = i - 1
        while j >= 0 and names[j] == "\n":
            j -= 1
        if j >= 0 and names[j] == "attributes":
            return False
        c = self.starts[i] - 1
        while c >= 0 and text[c] in " \t\r\n":
            c -= 1
        if c >= 0 and text[c] in "<=[:":
            return False
        k = self._next(i)
        return not (k + 1 < len(names) and (kinds[k] == "w" and names[k + 1] in ("=", ",")
                                            or kinds[k] == "s" and names[k + 1] == "="))

    def _resolve(self) -> None:
        kinds, names, starts = self.kinds, self.names, self.starts
        for i, scope, extra in self.uses:
            k, at = kinds[i], starts[i]
            found: Binding | SymbolDef | None
            if k == "v":
                found = lookup(scope, names[i][1:], at)
            elif k == "l":
                found = scope.labels.get(names[i][1:])
                if found is not None and isinstance(extra, Block) and found.block is not None \
                        and extra not in found.block.preds:
                    found.block.preds.append(extra)  # the block that names a label branches to it
                    extra.succs.append(found.block)
            else:
                found = find_symbol(self.symbol_path(i), extra if isinstance(extra, SymbolDef) else self.symbols)
            if found is not None:
                found.uses.append(at)
                self.resolved[i] = found

    def symbol_path(self, i: int) -> list[str]:
        """The names of `@a::@b` up to the one at token i (["a", "b"])."""
        path = [self.names[i][1:]]
        while i >= 2 and self.names[i - 1] == "::" and self.kinds[i - 2] == "y":
            i -= 2
            path.insert(0, self.names[i][1:])
        return path


def _is_op_name(word: str) -> bool:
    return ("." in word and word[0] not in "#!") or word in ("return", "module", "func")
