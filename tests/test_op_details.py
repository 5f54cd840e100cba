"""The short reader of `syntax/op_details.py` (the usual custom forms, read with the grammar's own
terminals so that a check needs no lark) gives what the lark grammar gives, or leaves the op to it:
every op it reads of every MLIR file of the corpus, the fixtures and tests/data, and of thousands
of mutations of them (a fixed seed), read both ways."""

from __future__ import annotations

import random
import re

import pytest

from conftest import DATA, SHARED
from mlir_lsp_asserts.syntax.op_details import READ_OPS, _short_form, parse_op
from mlir_lsp_asserts.syntax.op_grammar import read_with_grammar

_LINE = re.compile(r'^[ \t]*((?:%[^\n=]*=[ \t]*)?"?(?:' + "|".join(re.escape(n) for n in READ_OPS) + r')\b[^\n]*)$',
                   re.M)
# What mutations insert: the characters and words the terminals turn on.
_PIECES = [*' \t\n%:,=<>()[]{}"\\#!-.0123456789abxeflot_$', "loc(", "true", "false", "to", "0x", "//", "dense<",
           "index", "i64", " : ", ".5", "e5", "#1", "\\22", 'loc("a":1:2)', "tensor<4x?xf32>", "!torch.int"]


def _op_texts() -> list[str]:
    found: set[str] = set()
    for folder in (SHARED, DATA):
        for path in sorted(folder.rglob("*.mlir")):
            if path.stat().st_size > 20_000_000:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            found.update(m.group(1) for m in _LINE.finditer(text))
    return sorted(found)


@pytest.fixture(scope="module")
def op_texts() -> list[str]:
    texts = _op_texts()
    assert len(texts) > 300
    return texts


def test_the_short_reader_reads_the_usual_forms_as_the_grammar_does(op_texts):
    read = [t for t in op_texts if _short_form(t) is not None]
    assert len(read) > 0.8 * len(op_texts)  # the corpus's ops are mostly in the usual forms
    assert [(t, _short_form(t)) for t in read] == [(t, read_with_grammar(t)) for t in read]


def test_on_mutated_ops_the_short_reader_agrees_with_the_grammar_or_leaves_the_op_to_it(op_texts):
    rng = random.Random(37)
    read, differ = 0, []
    for _ in range(20_000):
        t = rng.choice(op_texts)
        for _ in range(rng.randint(1, 3)):
            i, k = rng.randrange(len(t) + 1), rng.random()
            piece = rng.choice(_PIECES)
            t = t[:i] + piece + t[i:] if k < 0.4 else t[:i] + t[i + rng.randint(1, 3):] if k < 0.7 else \
                t[:i] + piece + t[i + 1:]
        short = _short_form(t)
        if short is not None:
            read += 1
            if short != read_with_grammar(t):
                differ.append((t, short, read_with_grammar(t)))
    assert read > 1000 and differ == []


def test_forms_the_short_reader_leaves_are_read_by_the_grammar():
    generic = '%7 = "arith.cmpi"(%5, %c77) <{predicate = 2 : i64}> : (index, index) -> i1'
    assume = "%r = util.assume.int %x<umin = 0, umax = 76> : index"
    for text in (generic, assume, 'cf.assert %7, "m" {tag = 1 : i64}', "%c = arith.constant 1 : i64 // one"):
        assert _short_form(text) is None and parse_op(text) is not None
