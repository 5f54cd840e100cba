"""What the navigation index holds (name_index.py): the bindings of `%values` and `^labels`, the
regions they are bound in, their blocks, and the symbol ops (`@name`) with their symbol tables.
Plain data with offsets into the text indexed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Block:
    """A block of a region: its label (None: the unlabelled entry block), arguments and
    predecessors (the blocks whose ops name its label)."""

    number: int
    label: str | None
    at: int  # offset of the label's `^` (or of the region's `{`)
    args: list[Binding] = field(default_factory=list)
    preds: list[Block] = field(default_factory=list)
    succs: list[Block] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.label or f"<Block #{self.number}>"


@dataclass(eq=False)
class Scope:
    """A region: its names (`%` and `^`), blocks and the op that owns it."""

    start: int
    parent: Scope | None
    op: str  # the owning op's name ("" at the top)
    op_start: int
    values: dict[str, list[Binding]] = field(default_factory=dict)
    labels: dict[str, Binding] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    end: int = -1


@dataclass(eq=False)
class Binding:
    """A name bound in the text: a value (`%`) or a block label (`^`)."""

    sigil: str
    name: str
    at: int  # offset of the sigil
    kind: str  # "result", "function argument", "block argument", "header", "label"
    scope: Scope
    op: str  # the op that binds it (results, header arguments) or owns the region
    op_start: int  # where that op's text starts
    number: int = 0  # which result or argument
    type: str | None = None
    block: Block | None = None  # a label's block, a block argument's block
    uses: list[int] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.at + len(self.sigil) + len(self.name)


@dataclass(eq=False)
class SymbolDef:
    """An op with a symbol name (`name` None: an unnamed symbol table, `module {`), and the
    symbols of its region when it is a symbol table."""

    name: str | None
    at: int  # offset of its `@` (of the op's name when unnamed)
    op: str
    op_start: int
    op_end: int
    parent: SymbolDef | None
    children: dict[str, SymbolDef] = field(default_factory=dict)
    ordered: list[SymbolDef] = field(default_factory=list)
    uses: list[int] = field(default_factory=list)


def current_block(scope: Scope) -> Block:
    """The block being read in `scope` (its unlabelled entry block when none was named yet)."""
    if not scope.blocks:
        scope.blocks.append(Block(0, None, scope.start))
    return scope.blocks[-1]


def add(scope: Scope, b: Binding) -> None:
    scope.values.setdefault(b.name, []).append(b)


def lookup(scope: Scope | None, name: str, at: int) -> Binding | None:
    """The binding of `%name` seen from `scope` at offset `at`: the innermost region that binds it
    (the last binding before `at` when a region binds it twice)."""
    while scope is not None:
        found = scope.values.get(name)
        if found:
            before = [b for b in found if b.at <= at]
            return before[-1] if before else found[0]
        scope = scope.parent
    return None


def find_symbol(path: list[str], table: SymbolDef | None) -> SymbolDef | None:
    """The symbol that `@path[0]::@path[1]...` names, from the symbol table `table` outward."""
    if not path:
        return None
    found = None
    while table is not None and found is None:
        found = table.children.get(path[0])
        table = table.parent
    for part in path[1:]:
        found = None if found is None else found.children.get(part)
    return found
