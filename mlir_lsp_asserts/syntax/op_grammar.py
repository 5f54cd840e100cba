"""The lark grammar of `ops.lark` and its transformer: how `op_details.parse_op` reads the ops
its own short reader leaves (generic forms, attribute dictionaries, comments, `util.assume.int`).
Imported on first use, so that a check whose asserts are in the usual custom form loads no lark."""

from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from .op_values import (
    CMPI_PREDICATES,
    AssertOp,
    AssumeIntOp,
    AssumeRow,
    CastOp,
    CmpiOp,
    ConstantOp,
    LinalgIndexOp,
    OpDetail,
    unquote,
)


@functools.cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("ops.lark")).read_text()
    # cache=True stores the built LALR tables in the temp folder: 0.12 s saved per process.
    return Lark(grammar, parser="lalr", maybe_placeholders=True, cache=True)


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
        return AssertOp(str(items[0])[1:], unquote(str(items[1])))

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
        return ("attr", unquote(str(items[0])), None)

    def opaque_attr(self, items):
        return ("attr", str(items[0]), None)

    def array_attr(self, items):
        return ("attr", [i for i in items if i is not None], None)

    def attr_entry(self, items):
        key = str(items[0])
        key = unquote(key) if key.startswith('"') else key
        return ("entry", key, items[1])

    def attr_dict(self, items):
        return {i[1]: i[2] for i in items if i is not None}

    def properties(self, items):
        return ("props", items[0])

    def function_type(self, items):
        return ("fn", [i for i in items if i is not None])

    def generic_op(self, items):
        name = unquote(str(items[0]))
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


def read_with_grammar(op_text: str) -> OpDetail | None:
    """The op's details as the grammar reads them, or None."""
    try:
        tree = _parser().parse(op_text)
    except LarkError:
        return None
    try:
        return _ToDetail().transform(tree)
    except Exception:  # noqa: BLE001 - a transformer surprise means "not one we read"
        return None
