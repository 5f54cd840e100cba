"""Mutations of real IR and the invariants they must keep, shared by the fuzz tests (hypothesis,
sized for CI) and `make soak` (bench/soak.py: atheris, coverage-guided, long runs).

A mutation draws its choices from a `Chooser`, so one mutation set serves hypothesis (`draw`),
atheris (libFuzzer's bytes) and a plain seeded `random.Random`.

Two oracles:
- `check_reader(text)`: the reader and the rules never raise, the index is consistent (every
  op's range inside its parent's region, children in source order), every diagnostic, related
  range and fix edit inside the document, positions matching the offsets.
- `check_fixes(text)`: when IREE's real parser accepts `text`, every fix offered (each finding's
  own fixes and the fix-all of both modes) yields text it accepts too, and no fix edits text
  outside the assert ops and the ops it removes (the one exception, the assume fix's rewiring of
  later uses, may only replace an SSA name `%x` by another SSA name).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Protocol

from conftest import SHARED  # noqa: E402 - the one definition of the paths

FIXTURES = SHARED / "fixtures"
CORPUS_FILES = SHARED / "corpus" / "files"


class Chooser(Protocol):
    def int(self, lo: int, hi: int) -> int: ...  # lo <= n <= hi


class RandomChooser:
    def __init__(self, rnd: random.Random):
        self.rnd = rnd

    def int(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)


class DrawChooser:
    """hypothesis: `DrawChooser(draw)` inside an `@st.composite`."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def int(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))


def pick(c: Chooser, seq):
    return seq[c.int(0, len(seq) - 1)]


# -- sources: real IR ------------------------------------------------------------------------

def _read(p: Path, limit: int | None = None) -> str:
    t = p.read_text(encoding="utf-8", errors="replace")
    return t[:limit] if limit else t


def reader_sources() -> list[str]:
    """Real IR of every kind the reader meets: the issue's seed (old syntax), the repro, slices
    of exported models, and public test files (torch-mlir, old upstream MLIR syntax)."""
    out = [
        _read(FIXTURES / "seed" / "sdxl_clip_extra_dispatches.mlir"),
        _read(FIXTURES / "repro" / "hoisted_gather.mlir"),
        _read(FIXTURES / "models" / "clip_l.input.mlir", 40000),
        _read(FIXTURES / "models" / "clip_l.torch.mlir", 30000),
    ]
    enc = _read(FIXTURES / "models" / "sdxl_prompt_encoder.input.mlir")
    i = enc.find("cf.assert")
    out.append(enc[max(0, i - 20000):i + 10000])
    for rel in ("llvm/torch-mlir/test/Conversion/TorchToLinalg/constraints.mlir",
                "llvm/torch-mlir/test/Conversion/TorchToLinalg/view.mlir",
                "llvm/torch-mlir/test/Dialect/TorchConversion/verify-linalg-on-tensors-backend-contract.mlir",
                "tensorflow/mlir/test/IR/parser.mlir",
                "tensorflow/mlir/test/IR/invalid.mlir",
                "tensorflow/mlir/test/IR/core-ops.mlir"):
        p = CORPUS_FILES / rel
        if p.exists():
            out.append(_read(p, 30000))
    return out


HOST_ASSERT = """func.func @mm(%a: tensor<4x?xf32>, %b: tensor<?x8xf32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c1 : tensor<4x?xf32>
  %d1 = tensor.dim %b, %c0 : tensor<?x8xf32>
  %eq = arith.cmpi eq, %d0, %d1 : index
  cf.assert %eq, "mismatching contracting dimension for aten.mm"
  return %d0 : index
}
"""

DISPATCH_REGION = """func.func @d(%t: tensor<77x768xf16>, %i: tensor<64xi64>) -> tensor<64x768xf16> {
  %r = flow.dispatch.region -> (tensor<64x768xf16>) {
    %c77 = arith.constant 77 : index
    %e = tensor.empty() : tensor<64x768xf16>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i : tensor<64xi64>) outs(%e : tensor<64x768xf16>) {
    ^bb0(%in: i64, %out: f16):
      %x = arith.index_cast %in : i64 to index
      %y = linalg.index 1 : index
      %ok = arith.cmpi slt, %x, %c77 : index
      cf.assert %ok, "index must be smaller than dim size"
      %v = tensor.extract %t[%x, %y] : tensor<77x768xf16>
      linalg.yield %v : f16
    } -> tensor<64x768xf16>
    %k = arith.constant 3 : index
    %kk = arith.cmpi ult, %k, %c77 : index
    cf.assert %kk, "in the dispatch, outside linalg"
    flow.return %g : tensor<64x768xf16>
  }
  return %r : tensor<64x768xf16>
}
"""


def fix_sources() -> list[str]:
    """Real IR that IREE 3.13's parser accepts, with asserts of all three rules."""
    out = [_read(FIXTURES / "repro" / "hoisted_gather.mlir"), HOST_ASSERT, DISPATCH_REGION]
    p = CORPUS_FILES / "llvm/torch-mlir/test/Dialect/TorchConversion/verify-linalg-on-tensors-backend-contract.mlir"
    if p.exists():
        out.append(_read(p).split("// -----")[0])
    return out


def clip_gathers() -> str:
    """clip_l's input IR whole (400 kB, two real embedding gathers with their asserts)."""
    return _read(FIXTURES / "models" / "clip_l.input.mlir")


# -- mutations --------------------------------------------------------------------------------

TOKENS = ['{', '}', '(', ')', '[', ']', '<', '>', '"', '//', '\n', '%x = ', 'cf.assert %0, "m"\n', '^bb1:',
          '"cf.assert"(%0) ({', '{-#', '#-}', '#map = ', '// -----\n', 'linalg.generic {', 'loc(', '\\', ':', '=',
          '\ufeff', '\x00', '\r\n', '\t', 'dense<"0x', '%', '@', 'module {', 'func.func @f() {']
BRACKETS = '{}()[]<>"'
MUTATIONS = ("truncate", "flip_byte", "flip_char", "delete_brace", "insert", "splice", "duplicate", "delete_line",
             "swap_lines")


def mutate(c: Chooser, sources: list[str], rounds: int | None = None) -> str:
    """Real IR with 1-4 mutations: truncations, byte flips, brace deletions, token insertions,
    splices of two files, duplicated or deleted ranges."""
    text = pick(c, sources)
    for _ in range(rounds if rounds is not None else c.int(1, 4)):
        text = mutate_once(c, text, sources)
    return text


def mutate_once(c: Chooser, text: str, sources: list[str]) -> str:
    kind = pick(c, MUTATIONS)
    if not text:
        return pick(c, sources)[:c.int(0, 200)] if kind == "splice" else text
    n = len(text)
    i = c.int(0, n - 1)
    if kind == "truncate":
        return text[:i]
    if kind == "flip_byte":  # a byte of the UTF-8 form, decoded back as an editor would
        data = bytearray(text.encode("utf-8", "surrogatepass"))
        j = min(len(data) - 1, len(text[:i].encode("utf-8", "surrogatepass")))
        data[j] ^= 1 << c.int(0, 7)
        return data.decode("utf-8", "replace")
    if kind == "flip_char":
        return text[:i] + chr(c.int(0, 0x2FFF)) + text[i + 1:]
    if kind == "delete_brace":
        j = text.find(pick(c, BRACKETS), i)
        return text if j == -1 else text[:j] + text[j + 1:]
    if kind == "insert":
        return text[:i] + pick(c, TOKENS) + text[i:]
    if kind == "splice":
        other = pick(c, sources)
        j = c.int(0, len(other))
        return text[:i] + other[j:j + c.int(0, 4000)]
    if kind == "duplicate":
        j = min(n, i + c.int(1, 2000))
        return text[:j] + text[i:j] + text[j:]
    if kind == "delete_line":
        a = text.rfind("\n", 0, i) + 1
        b = text.find("\n", i)
        return text[:a] + (text[b + 1:] if b != -1 else "")
    # swap_lines: two lines exchanged (ops moved before their operands' definitions)
    lines = text.split("\n")
    a, b = c.int(0, len(lines) - 1), c.int(0, len(lines) - 1)
    lines[a], lines[b] = lines[b], lines[a]
    return "\n".join(lines)


# Mutations that often keep the text valid MLIR, so the fix oracle sees many parsable inputs.
_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPI = re.compile(r"arith\.cmpi (\w+),")
_INT_CONST = re.compile(r"arith\.constant (-?\d+) : (index|i\d+)")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ASSERT_LINE = re.compile(r"^([ \t]*)cf\.assert (%[\w$.\-]+), .*$", re.M)
_LINE_COMMENT = re.compile(r"//[^\n]*")
VALID_MUTATIONS = ("predicate", "constant", "in_string", "comment", "dup_assert", "use_condition",
                   "generic_form", "second_message", "blank", "loc")


def mutate_valid(c: Chooser, sources: list[str]) -> str:
    text = pick(c, sources)
    for _ in range(c.int(1, 4)):
        text = mutate_valid_once(c, text)
    return text


def _nth(c: Chooser, matches: list[re.Match]) -> re.Match | None:
    return pick(c, matches) if matches else None


def mutate_valid_once(c: Chooser, text: str) -> str:
    kind = pick(c, VALID_MUTATIONS)
    if kind == "predicate":
        m = _nth(c, list(_CMPI.finditer(text)))
        if m:
            return text[:m.start(1)] + pick(c, _PREDICATES) + text[m.end(1):]
    elif kind == "constant":
        m = _nth(c, list(_INT_CONST.finditer(text)))
        if m:
            v = pick(c, ["0", "1", "-1", "2", "76", "77", "78", "127", "255", "65535", "-9223372036854775808",
                         "9223372036854775807", "4294967296", str(c.int(-1000, 1000))])
            return text[:m.start(1)] + v + text[m.end(1):]
    elif kind == "in_string":  # a character of a string literal (assert messages) changed
        m = _nth(c, list(_STRING.finditer(text)))
        if m and m.end() - m.start() > 2:
            j = c.int(m.start() + 1, m.end() - 2)
            ch = pick(c, ["x", " ", "{", "}", "(", "%", "\u00e9", "\U0001d11e", "#", "cf.assert", "//", "'"])
            return text[:j] + ch + text[j + 1:]
    elif kind == "comment":  # a comment with braces and fake asserts, before a random line
        lines = text.split("\n")
        k = c.int(0, len(lines))
        lines.insert(k, pick(c, ['// } {', '// cf.assert %0, "x"', '  // mlir-lsp: ignore MLA001', '// -----x',
                                  '// "unterminated']))
        return "\n".join(lines)
    elif kind == "dup_assert":  # the same assert twice (both must be fixed, once each)
        m = _nth(c, list(_ASSERT_LINE.finditer(text)))
        if m:
            return text[:m.end()] + "\n" + m.group(0) + text[m.end():]
    elif kind == "use_condition":  # the condition gets another user: the fix must keep its cmpi
        m = _nth(c, list(_ASSERT_LINE.finditer(text)))
        if m:
            k = c.int(0, 99)
            extra = f"\n{m.group(1)}%keep_{k} = arith.extui {m.group(2)} : i1 to i32"
            return text[:m.end()] + extra + text[m.end():]
    elif kind == "generic_form":  # `cf.assert %c, "m"` -> `"cf.assert"(%c) <{msg = "m"}> : (i1) -> ()`
        m = _nth(c, list(re.finditer(r'cf\.assert (%[\w$.\-]+), ("(?:[^"\\\n]|\\.)*")', text)))
        if m:
            generic = f'"cf.assert"({m.group(1)}) <{{msg = {m.group(2)}}}> : (i1) -> ()'
            return text[:m.start()] + generic + text[m.end():]
    elif kind == "second_message":
        m = _nth(c, list(re.finditer(r'cf\.assert (%[\w$.\-]+), "', text)))
        if m:
            return text[:m.end()] + "see https://x.y/{a}; " + text[m.end():]
    elif kind == "blank":  # whitespace and blank lines around ops
        i = c.int(0, len(text))
        a = text.rfind("\n", 0, i) + 1
        return text[:a] + pick(c, ["\n", "  \n", "\t\n", "\n\n"]) + text[a:]
    elif kind == "loc":  # a trailing location on an assert
        m = _nth(c, list(_ASSERT_LINE.finditer(text)))
        if m:
            loc = pick(c, [' loc("x.py":1:2)', " loc(unknown)", ' loc(callsite("a":1:1 at "b":2:2))'])
            return text[:m.end()] + loc + text[m.end():]
    return text


# -- the oracles ------------------------------------------------------------------------------

def check_index(text: str, parsed) -> int:
    """The index of a parsed text is consistent; returns the number of ops it has."""
    parsed.expand_all()
    n = len(text)
    count = 0
    for chunk in parsed.chunks:
        assert 0 <= chunk.start <= chunk.end <= n
        prev_top = -1
        for op in chunk.ops:
            assert op.parent is None and op.start >= prev_top
            prev_top = op.start
        stack = list(chunk.ops)
        while stack:
            op = stack.pop()
            count += 1
            assert chunk.start <= op.start <= op.name_start <= n, (op.name, op.start, op.name_start)
            assert op.start < op.end <= n or op.start == op.end == n, (op.name, op.start, op.end, n)
            assert op.end <= chunk.end, (op.name, op.end, chunk.end)
            prev = op.start
            for r in op.regions:
                assert op.start <= r.start < r.end <= op.end, (op.name, op.start, op.end, r.start, r.end)
                for b in r.blocks:
                    for child in b.ops:
                        assert child.parent is op, (child.name, op.name)
                        assert r.start < child.start and child.end <= r.end, (child.name, child.start, child.end,
                                                                              r.start, r.end)
                        assert child.start >= prev, (child.name, child.start, prev)
                        prev = child.end
                        stack.append(child)
    for issue in parsed.issues:
        assert 0 <= issue.start <= issue.end <= n, issue
    return count


def check_reader(text: str, settings=None) -> dict:
    """The reader and rules on `text`: never an exception, everything inside the document.
    Returns a few figures for targeted search (ops, issues, findings, depth)."""
    from mlir_lsp_asserts.checker import check_text
    from mlir_lsp_asserts.syntax.lines import LineIndex
    from mlir_lsp_asserts.syntax.parsed_text import parse

    ops = check_index(text, parse(text))
    result = check_text(text, settings)
    n = len(text)
    li = LineIndex(text)
    for f in result.findings:
        for s in [f.span] + [r.span for r in f.related]:
            assert 0 <= s.start <= s.end <= n, (f.code, s)
            assert (s.start_pos.line, s.start_pos.character) == li.position(s.start), (f.code, s)
            assert (s.end_pos.line, s.end_pos.character) == li.position(s.end), (f.code, s)
            assert 0 <= s.start_pos.line < li.line_count and 0 <= s.end_pos.line < li.line_count
        for fix in f.fixes:
            last = -1
            for e in sorted(fix.edits, key=lambda e: e.start):
                assert 0 <= e.start <= e.end <= n, (f.code, fix.title, e)
                assert e.start >= last, ("overlapping edits", fix.title)
                last = e.end
    return {"ops": ops, "issues": len(result.parsed.issues), "findings": len(result.findings),
            "asserts": sum(1 for f in result.findings if f.code.startswith("MLA"))}


_SSA = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_WS = " \t\r\n"


class FixViolation(AssertionError):
    pass


def _all_ops(parsed):
    parsed.expand_all()
    for chunk in parsed.chunks:
        stack = list(chunk.ops)
        while stack:
            op = stack.pop()
            yield op
            stack.extend(c for r in op.regions for b in r.blocks for c in b.ops)


def check_fix_edits(text: str, parsed, asserts: set[int], title: str, edits) -> None:
    """Each edit removes or replaces whole ops (asserts, or pure ops whose results die with
    them), inserts `util.assume.int` lines, or replaces one SSA name by another."""
    from mlir_lsp_asserts.fixes.plan import PURE_OPS

    by_span = {(o.start, o.end): o for o in _all_ops(parsed)}
    touched_assert = False
    for e in edits:
        old = text[e.start:e.end]
        if _SSA.fullmatch(old) and _SSA.fullmatch(e.new_text):
            continue  # the assume fix rewiring a later use to the assumed value
        if not old.strip(_WS):
            # a pure insertion (or whitespace): only an assume op, never other text
            assert not e.new_text.strip(_WS) or "util.assume.int" in e.new_text, (title, e)
            continue
        s = e.start + (len(old) - len(old.lstrip(_WS)))
        t = e.end - (len(old) - len(old.rstrip(_WS)))
        op = by_span.get((s, t))
        if op is None:
            raise FixViolation(f"{title}: edit {e.start}-{e.end} {old!r} is not one whole op")
        if op.start in asserts:
            touched_assert = True
        elif op.full_name not in PURE_OPS and op.full_name != "cf.assert":
            raise FixViolation(f"{title}: removes `{op.full_name}`, which is neither an assert nor pure")
        if e.new_text.strip(_WS):
            assert "util.assume.int" in e.new_text and "cf.assert" not in e.new_text, (title, e)
            assert op.full_name == "cf.assert", (title, e)
    if not touched_assert:
        raise FixViolation(f"{title}: none of its edits removes its assert")


def parse_chunks(text: str) -> str | None:
    """The real parser's verdict, chunk by chunk where the text has `// -----` markers (as
    `--split-input-file` and the reader treat them); None when every chunk parses."""
    from mlir_lsp_asserts.fixes.verify import real_parse_error
    from mlir_lsp_asserts.syntax.parsed_text import split_chunks

    for s, e in split_chunks(text):
        err = real_parse_error(text[s:e])
        if err is not None:
            return err
    return None


def check_fixes(text: str, parse_error=None) -> dict:
    """When the real parser accepts `text`, every fix offered keeps it accepted, and edits only
    the asserts and the ops the fix removes. Returns figures (parsed, fixes tried)."""
    from mlir_lsp_asserts.checker import check_text
    from mlir_lsp_asserts.fixes import fix_text
    from mlir_lsp_asserts.fixes.plan import apply_edits

    if parse_error is None:
        parse_error = parse_chunks
    if parse_error(text) is not None:
        return {"parsed": 0, "fixes": 0}
    result = check_text(text)
    parsed = result.parsed
    tried = 0
    asserts = {f.op_start for f in result.findings if f.code.startswith("MLA")}
    for f in result.findings:
        for fix in f.fixes:
            # a single fix may remove the other assert of its group (assume), both are asserts
            check_fix_edits(text, parsed, asserts if fix.mode == "assume" else {f.op_start}, fix.title, fix.edits)
            after = apply_edits(text, list(fix.edits))
            err = parse_error(after)
            if err is not None:
                raise FixViolation(f"{fix.title} (line {f.span.start_pos.line + 1}) "
                                   f"gives text the parser rejects: {err}")
            tried += 1
    for mode in ("strip", "assume"):
        fo = fix_text(result, mode, unsafe=True)
        if fo.edits:
            check_fix_edits(text, parsed, asserts, f"fix all ({mode})", fo.edits)
            err = parse_error(fo.text)
            if err is not None:
                raise FixViolation(f"fix all ({mode}) gives text the parser rejects: {err}")
            tried += 1
    return {"parsed": 1, "fixes": tried}
