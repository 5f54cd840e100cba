"""Details of single ops, read with the lark grammar in `ops.lark`.

The structural reader gives an op's extent; this module reads the inside of the few ops the
rules and fixes reason about. Anything the grammar does not cover gives `None`, and callers
treat that as "unknown" (never as a guess).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


@dataclass(frozen=True, slots=True)
class AssertOp:
    condition: str  # SSA name without %
    message: str


@dataclass(frozen=True, slots=True)
class CmpiOp:
    predicate: str
    lhs: str
    rhs: str
    type: str


@dataclass(frozen=True, slots=True)
class ConstantOp:
    value: int | None  # None: not an integer/bool scalar (a float, a dense tensor ...)
    type: str


@dataclass(frozen=True, slots=True)
class CastOp:
    kind: str  # "index_cast", "index_castui", "extsi", "extui", "trunci"
    source: str
    source_type: str
    result_type: str


@dataclass(frozen=True, slots=True)
class LinalgIndexOp:
    dim: int


@dataclass(frozen=True, slots=True)
class AssumeRow:
    umin: int | None = None
    umax: int | None = None
    udiv: int | None = None


@dataclass(frozen=True, slots=True)
class AssumeIntOp:
    operands: tuple[tuple[str, tuple[AssumeRow, ...]], ...]
    types: tuple[str, ...]


OpDetail = AssertOp | CmpiOp | ConstantOp | CastOp | LinalgIndexOp | AssumeIntOp


@functools.cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("ops.lark")).read_text()
    # cache=True stores the built LALR tables in the temp folder: 0.12 s saved per process.
    return Lark(grammar, parser="lalr", maybe_placeholders=True, cache=True)


def _unquote(s: str) -> str:
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


class _ToDetail(Transformer):
    def start(self, items):
        return next((i for i in items if isinstance(i, OpDetail)), None)

    def results(self, items):
        return None

    def loc(self, items):
        return None

    def type(self, items):
        return str(items[0])

    def assert_op(self, items):
        return AssertOp(str(items[0])[1:], _unquote(str(items[1])))

    def cmpi_op(self, items):
        pred, lhs, rhs = items[0], items[1], items[2]
        return CmpiOp(str(pred), str(lhs)[1:], str(rhs)[1:], items[-1])

    def constant_op(self, items):
        literal = [i for i in items if isinstance(i, tuple)]
        value = literal[0][1] if literal else None
        typ = items[-1] if isinstance(items[-1], str) else ("i1" if isinstance(value, bool) else "")
        if isinstance(value, bool):
            value = int(value)
        return ConstantOp(value if isinstance(value, int) else None, typ)

    def cast_op(self, items):
        types = [i for i in items if isinstance(i, str) and not isinstance(i, Token)]
        return CastOp(str(items[0]).split(".", 1)[1], str(items[1])[1:], types[0], types[1])

    def index_op(self, items):
        return LinalgIndexOp(int(items[0]))

    def assume_field(self, items):
        return (str(items[0]), int(items[1]))

    def assume_row(self, items):
        return AssumeRow(**{k: v for k, v in (i for i in items if i is not None)})

    def assume_operand(self, items):
        return (str(items[0])[1:], tuple(items[1:]))

    def assume_op(self, items):
        operands = tuple(i for i in items if isinstance(i, tuple))
        types = tuple(i for i in items if isinstance(i, str))
        return AssumeIntOp(operands, types)

    # literals -> ("lit", value)
    def int_literal(self, items):
        return ("lit", int(items[0]))

    def hex_literal(self, items):
        return ("lit", int(str(items[0]), 16))

    def float_literal(self, items):
        return ("lit", float(items[0]))

    def true_literal(self, items):
        return ("lit", True)

    def false_literal(self, items):
        return ("lit", False)

    def opaque_literal(self, items):
        return ("lit", str(items[0]))

    def typed_literal(self, items):
        return ("attr", items[0][1], items[1] if len(items) > 1 else None)

    def string_attr(self, items):
        return ("attr", _unquote(str(items[0])), None)

    def opaque_attr(self, items):
        return ("attr", str(items[0]), None)

    def array_attr(self, items):
        return ("attr", [i for i in items if i is not None], None)

    def attr_entry(self, items):
        key = str(items[0])
        key = _unquote(key) if key.startswith('"') else key
        return ("entry", key, items[1])

    def attr_dict(self, items):
        return {i[1]: i[2] for i in items if i is not None}

    def properties(self, items):
        return ("props", items[0])

    def function_type(self, items):
        return ("fn", [i for i in items if i is not None])

    def generic_op(self, items):
        name = _unquote(str(items[0]))
        operands = [str(i)[1:] for i in items[1:] if isinstance(i, Token) and i.type == "SSA"]
        attrs: dict = {}
        fn = None
        for i in items:
            if isinstance(i, tuple) and i[0] == "props":
                attrs.update(i[1])
            elif isinstance(i, dict):
                attrs.update(i)
            elif isinstance(i, tuple) and i[0] == "fn":
                fn = i[1]
        return _generic_detail(name, operands, attrs, fn or [])


def _attr(attrs: dict, key: str):
    v = attrs.get(key)
    return None if v is None else v[1]


def _generic_detail(name: str, operands: list[str], attrs: dict, fn: list[str]) -> OpDetail | None:
    if name == "cf.assert" and len(operands) == 1:
        msg = _attr(attrs, "msg")
        return AssertOp(operands[0], msg if isinstance(msg, str) else "")
    if name == "arith.cmpi" and len(operands) == 2:
        pred = _attr(attrs, "predicate")
        if isinstance(pred, int) and 0 <= pred < len(CMPI_PREDICATES):
            return CmpiOp(CMPI_PREDICATES[pred], operands[0], operands[1], fn[0] if fn else "")
        if isinstance(pred, str) and pred.startswith("#arith<cmpi"):
            word = pred.split()[-1].rstrip(">")
            if word in CMPI_PREDICATES:
                return CmpiOp(word, operands[0], operands[1], fn[0] if fn else "")
        return None
    if name == "arith.constant" and not operands:
        v = attrs.get("value")
        typ = fn[-1] if fn else ""
        if v is not None and isinstance(v[1], (int, bool)):
            return ConstantOp(int(v[1]), typ)
        return ConstantOp(None, typ)
    kind = name.split(".", 1)[1] if name.startswith("arith.") else ""
    if kind in ("index_cast", "index_castui", "extsi", "extui", "trunci") and len(operands) == 1 and len(fn) == 2:
        return CastOp(kind, operands[0], fn[0], fn[1])
    if name == "linalg.index" and not operands:
        dim = _attr(attrs, "dim")
        return LinalgIndexOp(dim) if isinstance(dim, int) else None
    return None


@functools.lru_cache(maxsize=4096)
def parse_op(op_text: str) -> OpDetail | None:
    """Details of one op's text (results included), or None if it is not one we read."""
    if len(op_text) > 20000:  # a huge literal: not one of our small ops
        return None
    try:
        tree = _parser().parse(op_text)
    except LarkError:
        return None
    try:
        return _ToDetail().transform(tree)
    except Exception:  # noqa: BLE001 - a transformer surprise means "not one we read"
        return None


# The ops `parse_op` reads; for any other op (a 2 KB `linalg.generic`...) lark is not run at all.
READ_OPS = frozenset({"cf.assert", "arith.cmpi", "arith.constant", "arith.index_cast", "arith.index_castui",
                      "arith.extsi", "arith.extui", "arith.trunci", "linalg.index"})


def op_detail(text: str, op) -> OpDetail | None:
    """`parse_op` of an op of the index (`syntax.index.Op`) in `text`, skipping ops it never reads."""
    if op.full_name not in READ_OPS or op.regions or op.lazy_regions:
        return None
    return parse_op(text[op.start:op.end])
