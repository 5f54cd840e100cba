"""The structural reader and the checker against the real MLIR parser, on the real corpus.

`../shared/corpus` holds the `.mlir` test files of torch-mlir and of the standalone MLIR
repository, split on `// -----` into 3,439 chunks, with ground truth made with the real parser of
iree-base-compiler 3.13 (`ground_truth.jsonl`, see its README). Here:

* on every chunk the real parser accepts, our reader gives the same ops (full names), the same
  nesting (regions, blocks, block arguments of labelled blocks), the same number of results where
  the text names them, the same locations, and no syntax issue;
* `check_text` on that chunk reports exactly the ground-truth asserts (line, column, code, message,
  ancestors);
* on every chunk, also the rejected ones, and on every whole file: no exception, and every issue
  and finding range lies inside the text.

Ground-truth `line`s are taken as lines of the whole file, like `chunk_start_line`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

import pytest
from iree.compiler import ir

from conftest import CORPUS, DISPATCH_OPS, assert_spans_inside
from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.rules import SYNTAX_ERROR_CODE
from mlir_lsp_asserts.syntax.asserts import assert_ops
from mlir_lsp_asserts.syntax.lines import LineIndex
from mlir_lsp_asserts.syntax.reader import Reader

# What the corpus holds (its README): a change here means the data or the split changed.
N_CHUNKS = 3439
N_ACCEPTED = 1616
N_FILES = 346
N_GT_ASSERTS = 1
# Ops compared between the real parser and our reader over all accepted chunks (implicit
# terminators excluded, see `real_ops`); pinned so a silently shrinking comparison shows.
N_OPS_COMPARED = 10451

LOC = re.compile(r'^loc\("-":(\d+):(\d+)\)$')


@dataclass
class Chunk:
    gt: dict
    path: str
    text: str  # the chunk alone
    file_text: str

    @property
    def first_line(self) -> int:  # 1-based line of the chunk's first line in the file
        return self.gt["chunk_start_line"]

    @property
    def label(self) -> str:
        return f"{self.path}#{self.gt['chunk_index']}"


@functools.cache
def corpus() -> tuple[list[Chunk], dict[str, str]]:
    gts = [json.loads(line) for line in (CORPUS / "ground_truth.jsonl").read_text().splitlines() if line.strip()]
    files: dict[str, str] = {}
    chunks = []
    for g in gts:
        path = f"{g['repo']}/{g['path']}"
        if path not in files:
            files[path] = (CORPUS / "files" / path).read_text(encoding="utf-8")
        lines = files[path].split("\n")
        text = "\n".join(lines[g["chunk_start_line"] - 1:g["chunk_end_line"]])
        chunks.append(Chunk(g, path, text, files[path]))
    return chunks, files


def accepted() -> list[Chunk]:
    return [c for c in corpus()[0] if c.gt["ok"]]


# --- the two trees, flattened in pre-order ---------------------------------------------------
# One record per op: (full name, depth, location or None, results or None, region shape).
# Region shape: for each region that holds ops, for each block that holds ops or is labelled,
# (number of block arguments, or -1 for an unlabelled entry block, number of ops).


def real_ops(module: ir.Module, chunk: str) -> list[tuple]:
    """The real parser's ops, without what the text does not show: implicit terminators and
    implicit regions (ops located at their parent's location, at `loc(unknown)`, or at a `}`)."""
    li = LineIndex(chunk)
    out: list[tuple] = []

    def kept(op, parent_loc: str) -> bool:
        loc = str(op.location)
        if loc == parent_loc or loc == "loc(unknown)":
            return False
        m = LOC.match(loc)
        if m and chunk[li.offset(int(m.group(1)) - 1, int(m.group(2)) - 1):][:1] == "}":
            return False
        return True

    def visit(op, depth: int) -> None:
        loc = str(op.location)
        regions = []
        kids_per_region = []
        for region in op.regions:
            blocks, kids = [], []
            for block in region.blocks:
                ks = [o.operation for o in block.operations if kept(o.operation, loc)]
                if ks or len(block.arguments):
                    blocks.append([len(block.arguments), len(ks)])
                kids.extend(ks)
            if kids:
                regions.append([b for b in blocks if b[1] or b[0]])
                kids_per_region.append(kids)
        m = LOC.match(loc)
        out.append([op.name, depth, (int(m.group(1)), int(m.group(2))) if m else None, len(op.results), regions])
        for kids in kids_per_region:
            for k in kids:
                visit(k, depth + 1)

    top = module.operation
    for region in top.regions:
        for block in region.blocks:
            for o in block.operations:
                if kept(o.operation, str(top.location)):
                    visit(o.operation, 0)
    return out


def our_ops(chunk: str, implicit_module: bool) -> tuple[list[tuple], Reader]:
    reader = Reader(chunk, lazy=False)
    ops = reader.read()
    li = LineIndex(chunk)
    out: list[tuple] = []

    def visit(op, depth: int) -> None:
        regions = []
        for r in op.regions:
            blocks = [[len(b.args) if b.label else -1, len(b.ops)] for b in r.blocks if b.ops or b.label]
            if any(b.ops for b in r.blocks):
                regions.append(blocks)
        line, col = li.position(op.name_start)
        nres = sum(n for _, _, n in op.results)
        out.append([op.full_name, depth, (line + 1, col + 1), nres if chunk[op.start] == "%" else None, regions])
        for r in op.regions:
            for b in r.blocks:
                for k in b.ops:
                    visit(k, depth + 1)

    if implicit_module:
        tops = ops
    else:  # an explicit `module { ... }`: the real parser returns that module itself
        tops = [k for o in ops for r in o.regions for b in r.blocks for k in b.ops]
    for o in tops:
        visit(o, 0)
    return out, reader


def _normalise(real: list, ours: list) -> None:
    """Blank out, in `real`, what the text cannot tell (see the record description)."""
    for r, o in zip(real, ours, strict=False):
        if r[2] is None:  # a location that is not a position in this chunk
            o[2] = None
        if o[3] is None:  # results not written in the text (e.g. `torch.nn_module { } : T`)
            r[3] = None
        if len(r[4]) == len(o[4]):
            for rr, orr in zip(r[4], o[4], strict=True):
                for rb, ob in zip(rr, orr, strict=False):
                    if ob[0] == -1:  # entry block args are in the op's signature, not a label
                        rb[0] = -1


def _ctx() -> ir.Context:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    return ctx


def test_corpus_is_the_one_described():
    chunks, files = corpus()
    assert len(chunks) == N_CHUNKS
    assert len(accepted()) == N_ACCEPTED
    assert len(files) == N_FILES
    assert sum(len(c.gt["asserts"]) for c in chunks) == N_GT_ASSERTS


def test_reader_matches_real_parser_on_every_accepted_chunk():
    ctx = _ctx()
    mismatches, with_issues = [], []
    compared = 0
    for c in accepted():
        real = real_ops(ir.Module.parse(c.text, ctx), c.text)
        ours, reader = our_ops(c.text, c.gt["implicit_module"])
        if reader.issues:
            with_issues.append((c.label, reader.issues[:2]))
        assert len(real) <= c.gt["n_ops_inner"], c.label  # the README's count includes terminators
        _normalise(real, ours)
        compared += len(real)
        if real != ours:
            first = next((i for i, (a, b) in enumerate(zip(real, ours, strict=False)) if a != b),
                         min(len(real), len(ours)))
            mismatches.append((c.label, "real", real[first:first + 1], "ours", ours[first:first + 1],
                               len(real), len(ours)))
    assert not with_issues, f"{len(with_issues)} accepted chunks get syntax issues, e.g. {with_issues[:5]}"
    assert not mismatches, f"{len(mismatches)} of {N_ACCEPTED} chunks differ, e.g. {mismatches[:5]}"
    assert compared == N_OPS_COMPARED


def _gt_expected(c: Chunk) -> set[tuple]:
    out = set()
    for a in c.gt["asserts"]:
        if a["in_linalg"]:
            code = "MLA001"
        elif any(x in DISPATCH_OPS for x in a["ancestor_ops"]):
            code = "MLA002"
        else:
            code = "MLA003"
        out.add((a["line"], a["col"], code, a["msg"]))
    return out


def test_check_text_reports_exactly_the_ground_truth_asserts():
    wrong = []
    seen = 0
    for c in accepted():
        result = check_text(c.text)
        off = c.first_line - 1
        got = {(f.span.start_pos.line + 1 + off, f.span.start_pos.character + 1, f.code, f.assert_message)
               for f in result.findings}
        syntax = [f for f in result.findings if f.code == SYNTAX_ERROR_CODE]
        expected = _gt_expected(c)
        seen += len(expected)
        if got != expected or syntax:
            wrong.append((c.label, "expected", sorted(expected), "got", sorted(got)))
            continue
        # the ancestors the rules saw are the real parser's
        gt_anc = {(a["line"], a["col"]): a["ancestor_ops"] for a in c.gt["asserts"]}
        li = result.parsed.lines
        for op in assert_ops(result.parsed):
            line, col = li.position(op.name_start)
            anc = [a.full_name for a in op.ancestors()]
            if c.gt["implicit_module"]:
                anc.append("builtin.module")
            if gt_anc[(line + 1 + off, col + 1)] != anc:
                wrong.append((c.label, "ancestors", gt_anc[(line + 1 + off, col + 1)], anc))
        assert len(result.findings) == len(expected)
    assert not wrong, f"{len(wrong)} chunks disagree with the ground truth: {wrong[:5]}"
    assert seen == N_GT_ASSERTS


def test_rejected_chunks_never_crash_and_stay_in_range():
    rejected = [c for c in corpus()[0] if not c.gt["ok"]]
    assert len(rejected) == N_CHUNKS - N_ACCEPTED
    for c in rejected:
        for lazy in (True, False):
            reader = Reader(c.text, lazy=lazy)
            ops = reader.read()
            for op in ops:
                reader.expand(op)
                for o in op.walk():
                    assert 0 <= o.start <= o.name_start < o.end <= len(c.text), c.label
            for issue in reader.issues:
                assert 0 <= issue.start <= issue.end <= len(c.text), (c.label, issue)
        result = check_text(c.text)
        assert_spans_inside(c.text, result.findings)


def test_whole_files_agree_with_the_chunks():
    chunks, files = corpus()
    by_file: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_file.setdefault(c.path, []).append(c)
    problems = []
    clean_files = 0
    for path, text in files.items():
        result = check_text(text)
        assert_spans_inside(text, result.findings)
        cs = by_file[path]
        expected = set().union(*(_gt_expected(c) for c in cs if c.gt["ok"]))
        got = {(f.span.start_pos.line + 1, f.span.start_pos.character + 1, f.code, f.assert_message)
               for f in result.findings if f.code != SYNTAX_ERROR_CODE}
        lines = text.split("\n")
        for line, _, code, _ in got:  # `// CHECK: cf.assert ...` is a comment, never a finding
            if lines[line - 1].lstrip().startswith("//"):
                problems.append((path, line, code, "finding on a comment line"))
        if all(c.gt["ok"] for c in cs):
            clean_files += 1
            if got != expected or any(f.code == SYNTAX_ERROR_CODE for f in result.findings):
                problems.append((path, "expected", sorted(expected), "got", sorted(got)))
        else:
            missing = expected - got
            rejected_lines = [(c.gt["chunk_start_line"], c.gt["chunk_end_line"]) for c in cs if not c.gt["ok"]]
            extra = [g for g in got - expected if not any(s <= g[0] <= e for s, e in rejected_lines)]
            if missing or extra:
                problems.append((path, "missing", sorted(missing), "extra outside rejected chunks", extra))
    assert not problems, f"{len(problems)} files: {problems[:5]}"
    assert clean_files > 100  # most files are accepted whole


@pytest.mark.parametrize("name", [
    "llvm/torch-mlir/test/Conversion/TorchToLinalg/constraints.mlir",
    "llvm/torch-mlir/test/Conversion/TorchToLinalg/squeeze.mlir",
    "llvm/torch-mlir/test/Conversion/TorchToLinalg/view.mlir",
])
def test_check_comments_naming_cf_assert_are_not_findings(name):
    text = (CORPUS / "files" / name).read_text(encoding="utf-8")
    assert "CHECK" in text and "cf.assert" in text
    result = check_text(text)
    assert [f for f in result.findings if f.code.startswith("MLA")] == []
