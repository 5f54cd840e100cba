"""From asserted comparisons to `util.assume.int` facts.

For each `cf.assert` whose condition is `arith.cmpi PRED, %x, %c` (a constant anywhere visible,
either operand order), `%x` is traced up through extensions and casts to a root value; asserts
in one block on the same root form a group, and the group's conditions give the range of
every value derived from the root (see ranges.py). One `util.assume.int` is emitted for each
derived value that has other uses, and those later uses read the assumed value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..syntax.op_details import AssertOp, CastOp, CmpiOp, ConstantOp, op_detail
from ..syntax.op_tree import Block, Op
from ..syntax.scope import Definition, Scope, containing
from .ranges import SWAPPED, Constraint, Derivation, NoRange, derive_range

CAST_KINDS = {
    "extsi": "sext", "extui": "zext", "index_cast": "sext", "index_castui": "zext",
}


def width_of(type_text: str) -> int | None:
    t = type_text.strip()
    if t == "index":
        return 64
    if t.startswith("i") and t[1:].isdigit():
        return int(t[1:])
    return None


@dataclass
class AssertCondition:
    """`value PRED constant` read from one assert, with the ops it came from."""

    assert_op: Op
    cmpi_op: Op
    value: str
    pred: str
    constant: int
    width: int
    type: str


@dataclass
class Member:
    name: str
    type: str
    derivation: Derivation
    defining_op: Op | None  # None for the root when it is a block argument / other op
    definition: Definition | None


@dataclass
class AssumeTarget:
    member: Member
    umin: int
    umax: int
    new_name: str = ""

    @property
    def fact(self) -> str:
        return f"<umin = {self.umin}, umax = {self.umax}>"


@dataclass
class AssumeGroup:
    block: Block
    root: str
    asserts: list[Op]
    conditions: list[AssertCondition]
    targets: list[AssumeTarget] = field(default_factory=list)

    @property
    def fact(self) -> str:
        return ", ".join(t.fact for t in self.targets)


def read_condition(scope: Scope, text: str, op: Op) -> AssertCondition:
    detail = op_detail(text, op)
    if not isinstance(detail, AssertOp):
        raise NoRange("the cf.assert could not be read")
    d = scope.find_def(detail.condition, op)
    if d is None:
        raise NoRange(f"the condition %{detail.condition} is not defined in scope")
    if d.op is None:
        raise NoRange(f"the condition %{detail.condition} is a block argument, not a comparison")
    cmp = op_detail(text, d.op)
    if not isinstance(cmp, CmpiOp):
        raise NoRange(f"the condition is `{d.op.full_name}`, not an arith.cmpi comparison")
    width = width_of(cmp.type)
    if width is None:
        raise NoRange(f"the comparison is on `{cmp.type}`, not a scalar integer or index")
    lc, rc = constant_value(scope, text, cmp.lhs, d.op), constant_value(scope, text, cmp.rhs, d.op)
    if lc is not None and rc is not None:
        raise NoRange("the comparison is between two constants")
    if rc is not None:
        value, pred, const = cmp.lhs, cmp.predicate, rc
    elif lc is not None:
        value, pred, const = cmp.rhs, SWAPPED[cmp.predicate], lc
    else:
        raise NoRange("the bound is not a constant (a dynamic bound cannot be written as a fact)")
    if pred == "ne":
        raise NoRange("`ne` excludes one value: not one interval")
    return AssertCondition(op, d.op, value, pred, const, width, cmp.type)


def constant_value(scope: Scope, text: str, name: str, at: Op) -> int | None:
    d = scope.find_def(name, at)
    if d is None or d.op is None:
        return None
    c = op_detail(text, d.op)
    if isinstance(c, ConstantOp) and c.value is not None and width_of(c.type) is not None:
        return c.value
    return None


def _cast_of(text: str, op: Op) -> CastOp | None:
    c = op_detail(text, op)
    if isinstance(c, CastOp) and c.kind in CAST_KINDS:
        return c
    return None


def trace_root(scope: Scope, text: str, name: str, at: Op, type_hint: str) -> tuple[str, Definition | None, str, list]:
    """Follow casts up from `%name`: (root name, root def, root type, steps root->name)."""
    steps = []  # (kind, to_width, name, type, defining op, definition) from value up
    cur, cur_type = name, type_hint
    d = scope.find_def(cur, at)
    while d is not None and d.op is not None:
        cast = _cast_of(text, d.op)
        if cast is None:
            break
        steps.append((CAST_KINDS[cast.kind], cur, cast.result_type, d))
        cur, cur_type = cast.source, cast.source_type
        d = scope.find_def(cur, d.op)
    steps.reverse()
    return cur, d, cur_type, steps


def build_groups(scope: Scope, text: str, asserts: list[Op]) -> tuple[list[AssumeGroup], dict[int, str]]:
    """Assume groups for `asserts`, and for each assert not in a group, the reason."""
    reasons: dict[int, str] = {}
    by_key: dict[tuple[int, str], AssumeGroup] = {}
    members_of: dict[tuple[int, str], dict[str, Member]] = {}
    for op in asserts:
        where = containing(op)
        if where is None:
            reasons[id(op)] = "the assert is not inside a block"
            continue
        _region, block, _i = where
        try:
            cond = read_condition(scope, text, op)
            root, root_def, root_type, steps = trace_root(scope, text, cond.value, cond.cmpi_op, cond.type)
            rw = width_of(root_type)
            if rw is None:
                raise NoRange(f"the value's root type `{root_type}` is not an integer or index")
            deriv = Derivation(rw)
            members = members_of.setdefault((id(block), root), {})
            members.setdefault(root, Member(root, root_type, deriv, root_def.op if root_def else None, root_def))
            for kind, name, typ, d in steps:
                w = width_of(typ)
                if w is None:
                    raise NoRange(f"cast to `{typ}` is not an integer or index")
                deriv = deriv.extend(kind, w)
                members.setdefault(name, Member(name, typ, deriv, d.op if d else None, d))
        except NoRange as e:
            reasons[id(op)] = str(e)
            continue
        key = (id(block), root)
        g = by_key.get(key)
        if g is None:
            g = by_key[key] = AssumeGroup(block, root, [], [])
        g.asserts.append(op)
        g.conditions.append(cond)
    groups = []
    for key, g in by_key.items():
        members = members_of[key]
        _add_cast_users(scope, text, g, members)
        constraints = [Constraint(members[c.value].derivation, c.pred, c.constant) for c in g.conditions]
        try:
            root_width = members[g.root].derivation.width
            targets = []
            why: NoRange | None = None
            for m in members.values():
                if not _has_other_uses(scope, m, g):
                    continue
                if m.derivation.width > 64:
                    # util.assume.int's umin/umax are uint64: wider values cannot be described
                    why = why or NoRange(f"`{m.type}` is wider than the 64-bit util.assume.int ranges")
                    continue
                try:
                    umin, umax = derive_range(root_width, constraints, m.derivation)
                except NoRange as e:
                    why = why or e
                    continue
                targets.append(AssumeTarget(m, umin, umax))
            if not targets:
                raise why or NoRange("no later op uses the checked value, so a fact would inform nothing")
        except NoRange as e:
            for op in g.asserts:
                reasons[id(op)] = str(e)
            continue
        g.targets = targets
        groups.append(g)
    return groups, reasons


def _add_cast_users(scope: Scope, text: str, g: AssumeGroup, members: dict[str, Member]) -> None:
    """Values cast from group members in the same block (e.g. the index used by an extract)."""
    changed = True
    while changed:
        changed = False
        for o in g.block.ops:
            if not o.results or o.results[0][0] in members:
                continue
            c = op_detail(text, o)
            if not isinstance(c, CastOp) or c.kind not in CAST_KINDS or c.source not in members:
                continue
            w = width_of(c.result_type)
            if w is None:
                continue
            try:
                deriv = members[c.source].derivation.extend(CAST_KINDS[c.kind], w)
            except NoRange:
                continue
            where = containing(o)
            assert where is not None  # o is in g.block, which `containing` gave for an assert
            d = Definition(o.results[0][0], o, g.block, where[0])
            members[o.results[0][0]] = Member(o.results[0][0], c.result_type, deriv, o, d)
            changed = True


def _has_other_uses(scope: Scope, m: Member, g: AssumeGroup) -> bool:
    if m.definition is None:
        return False
    skip = {id(c.cmpi_op) for c in g.conditions} | {id(a) for a in g.asserts}
    for user, _off in scope.users(m.definition):
        if id(user) in skip:
            continue
        c = op_detail(scope.text, user)
        if isinstance(c, CastOp):
            continue  # casts of members are members themselves
        return True
    return False
