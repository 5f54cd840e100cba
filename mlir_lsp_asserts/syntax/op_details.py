"""Details of single ops, read as the lark grammar in `ops.lark` reads them.

The structural reader gives an op's extent; this module reads the inside of the few ops the
rules and fixes reason about. Anything the grammar does not cover gives `None`, and callers
treat that as "unknown" (never as a guess).

The usual custom forms (`cf.assert %7, "msg"`, `arith.cmpi slt, %5, %c77 : index`, constants,
casts, `linalg.index`) are read by `_short_form` with the grammar's own terminals; anything else
(generic forms, attribute dictionaries, comments, `util.assume.int`) goes to the grammar itself
(`op_grammar.py`), so that a check of ordinary IR never loads lark (0.1 s of start-up).
`tests/test_op_details.py` compares both readers on every op of the corpus.
"""

from __future__ import annotations

import functools
import re

from .op_values import AssertOp, CastOp, CmpiOp, ConstantOp, LinalgIndexOp, OpDetail, unquote

__all__ = ["READ_OPS", "AssertOp", "CastOp", "CmpiOp", "ConstantOp", "LinalgIndexOp", "OpDetail", "op_detail",
           "parse_op"]

# The grammar's terminals (ops.lark), each matched once and never given back (atomic groups), as
# lark's lexer matches a token: a text these patterns read is tokenized as the grammar's lexer
# tokenizes it.
_WS = r"[ \t\f\r\n]*+"
_SSA = r"(?>%[\w$.\-]+(?:#\d+)?)"
_STRING = r'(?>"[^"\\\n]*(?:\\.[^"\\\n]*)*")'
_TYPE = r"(?>!?[A-Za-z_][\w$.]*(?:<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>)?)"
_LOC = r'(?>loc\((?:[^()"]|"(?:[^"\\\n]|\\.)*"|\((?:[^()"]|"(?:[^"\\\n]|\\.)*")*\))*\))'
_ATTR_TOKEN = r'(?>[#!]?[A-Za-z_][\w$.\-]*(?:<(?:[^<>"]|"(?:[^"\\]|\\.)*"|<(?:[^<>]|<[^<>]*>)*>)*>)?)'
_RESULTS = rf"(?:{_SSA}(?::\d+)?{_WS}(?:,{_WS}{_SSA}(?::\d+)?{_WS})*={_WS})?"
_END = rf"{_WS}(?:{_LOC}{_WS})?\Z"
# A literal of arith.constant, in the order the lexer tries them (FLOAT, HEX_INT, SIGNED_INT,
# true/false, then ATTR_TOKEN at its lower priority), each ending where a token must end.
_LITERAL = (r"(?P<float>-?\d+\.\d*(?:[eE][+-]?\d+)?+)(?![\w.])|(?P<hex>0x[0-9a-fA-F]+)(?![\w.])"
            r"|(?P<int>-?\d+)(?![\w.])|(?P<bool>true|false)(?![\w$.\-<])|(?!true|false)(?P<attr>" + _ATTR_TOKEN + ")")
# cf.assert alone: what a check reads (its message) compiles in a fraction of the whole pattern's
# time (~2.5 ms); the whole one is compiled when a fix first reads the other ops.
_ASSERT = re.compile(rf"\A{_WS}{_RESULTS}cf\.assert{_WS}(?P<cond>{_SSA}){_WS},{_WS}(?P<msg>{_STRING}){_END}")
_SHORT_PATTERN = (
    rf"\A{_WS}{_RESULTS}(?:"
    rf"cf\.assert{_WS}(?P<cond>{_SSA}){_WS},{_WS}(?P<msg>{_STRING})"
    rf"|arith\.cmpi{_WS}(?P<pred>eq|ne|slt|sle|sgt|sge|ult|ule|ugt|uge)(?![\w$.])"
    rf"{_WS},{_WS}(?P<lhs>{_SSA}){_WS},{_WS}(?P<rhs>{_SSA}){_WS}:{_WS}(?P<cmp_type>{_TYPE})"
    rf"|arith\.constant(?![\w$.\-]){_WS}(?:{_LITERAL})(?:{_WS}:{_WS}(?P<const_type>{_TYPE}))?"
    rf"|arith\.(?P<cast>index_castui|index_cast|extsi|extui|trunci)(?![\w$.\-]){_WS}(?P<src>{_SSA}){_WS}:{_WS}"
    rf"(?P<src_type>{_TYPE}){_WS}to(?![\w$.<]){_WS}(?P<dst_type>{_TYPE})"
    rf"|linalg\.index(?![\w$.\-]){_WS}(?P<dim>\d+){_WS}:{_WS}{_TYPE}"
    rf"){_END}")


@functools.cache
def _short() -> re.Pattern[str]:
    return re.compile(_SHORT_PATTERN)


def _short_form(op_text: str) -> OpDetail | None:
    """The details of an op in one of the usual custom forms, or None: the grammar's to read."""
    if "//" in op_text:  # comments: the grammar's
        return None
    m = _ASSERT.match(op_text)
    if m is not None:  # the whole pattern's first branch, the same match
        return AssertOp(m.group("cond")[1:], unquote(m.group("msg")))
    m = _short().match(op_text)
    if m is None:
        return None
    g = m.group
    if g("cond") is not None:
        return AssertOp(g("cond")[1:], unquote(g("msg")))
    if g("pred") is not None:
        return CmpiOp(g("pred"), g("lhs")[1:], g("rhs")[1:], g("cmp_type"))
    if g("cast") is not None:
        return CastOp(g("cast"), g("src")[1:], g("src_type"), g("dst_type"))
    if g("dim") is not None:
        return LinalgIndexOp(int(g("dim")))
    typ = g("const_type")
    if g("bool") is not None:
        return ConstantOp(int(g("bool") == "true"), typ if typ is not None else "i1")
    if g("int") is not None or g("hex") is not None:
        value = int(g("int")) if g("int") is not None else int(g("hex"), 16)
        return ConstantOp(value, typ if typ is not None else "")
    return ConstantOp(None, typ if typ is not None else "")


@functools.lru_cache(maxsize=4096)
def parse_op(op_text: str) -> OpDetail | None:
    """Details of one op's text (results included), or None if it is not one we read."""
    if len(op_text) > 20000:  # a huge literal: not one of our small ops
        return None
    short = _short_form(op_text)
    if short is not None:
        return short
    from .op_grammar import read_with_grammar

    return read_with_grammar(op_text)


# The ops `parse_op` reads; for any other op (a 2 KB `linalg.generic`...) lark is not run at all.
READ_OPS = frozenset({"cf.assert", "arith.cmpi", "arith.constant", "arith.index_cast", "arith.index_castui",
                      "arith.extsi", "arith.extui", "arith.trunci", "linalg.index"})


def op_detail(text: str, op) -> OpDetail | None:
    """`parse_op` of an op of the index (`syntax.index.Op`) in `text`, skipping ops it never reads."""
    if op.full_name not in READ_OPS or op.regions or op.lazy_regions:
        return None
    return parse_op(text[op.start:op.end])
