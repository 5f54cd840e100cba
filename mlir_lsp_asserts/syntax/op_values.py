"""What `op_details` reads from an op: one value class per op it understands (plain data), shared
by its short reader and the grammar (`op_grammar.py`)."""

from __future__ import annotations

from ..records import NamedTuple

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


class AssertOp(NamedTuple):
    """`cf.assert %cond, "message"`."""

    condition: str  # SSA name without %
    message: str


class CmpiOp(NamedTuple):
    """`arith.cmpi predicate, %lhs, %rhs : type`."""

    predicate: str
    lhs: str
    rhs: str
    type: str


class ConstantOp(NamedTuple):
    """`arith.constant`: its integer value (or None) and type."""

    value: int | None  # None: not an integer/bool scalar (a float, a dense tensor ...)
    type: str


class CastOp(NamedTuple):
    """An integer cast: `arith.index_cast %x : a to b` and the like."""

    kind: str  # "index_cast", "index_castui", "extsi", "extui", "trunci"
    source: str
    source_type: str
    result_type: str


class LinalgIndexOp(NamedTuple):
    """`linalg.index dim`."""

    dim: int


class AssumeRow(NamedTuple):
    """One operand's range facts in `util.assume.int`."""

    umin: int | None = None
    umax: int | None = None
    udiv: int | None = None


class AssumeIntOp(NamedTuple):
    """`util.assume.int`: each operand with its rows of range facts, and the types."""

    operands: tuple[tuple[str, tuple[AssumeRow, ...]], ...]
    types: tuple[str, ...]


OpDetail = AssertOp | CmpiOp | ConstantOp | CastOp | LinalgIndexOp | AssumeIntOp


def unquote(s: str) -> str:
    body = s[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in '"\\':
                out.append(nxt)
                i += 2
                continue
            if nxt == "n":
                out.append("\n")
                i += 2
                continue
            hexpair = body[i + 1:i + 3]
            if len(hexpair) == 2 and all(c in "0123456789abcdefABCDEF" for c in hexpair):
                out.append(chr(int(hexpair, 16)))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)
