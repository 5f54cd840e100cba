"""The structural reader: MLIR text -> op index, fast and tolerant.

It never needs a dialect to be registered. Whole-file work is done with compiled regexes
(`TOKEN` finds only strings, comments, brackets and newlines; everything else is skipped by the
regex engine), and nested regions below the top-level ops are skipped with a brace matcher and
read only on demand (`Reader.expand`), so a 50 MB module costs one brace scan plus the ops the
caller asks about.

How an op's extent is found: an op starts at a statement start (results `%a, %b:2 =`, a bare or
quoted name) and runs until, outside parentheses and brackets, a line ends that is not
continued (the line ends in `,` `=` `:` `->` `(`, or the next line starts with `->` `:` `,` `{` `(`
`[` `=`, a keyword such as `ins`/`outs`/`to`/`step`/`attributes`/`else`, or `word(`), or the
enclosing region's `}` comes. `{` opens a region when what follows is an op, a block label or
`%`; otherwise it opens an attribute dictionary, which is skipped as a whole.
"""

from __future__ import annotations

import sys

from .op_tree import Block, ChildPairs, Op, Region, SyntaxIssue, is_unit
from .reader_patterns import (
    ALIAS_DEF,
    BALANCED,
    BALANCED_CHARS,
    BARE_ASSERT,
    BARE_ID,
    BLOCK_ARG,
    CONTINUATION_WORDS,
    LABEL,
    LINE_REST,
    NO_RESULTS,
    NOT_CONTINUED,
    PLAIN_UNIT_HEAD,
    RESULT_ITEM,
    RESULTS,
    TOKEN,
    match_paren,
    skip_braces,
    skip_ws,
    spaces,
    string_end,
)
from .tokens import STRING

# Python frames per nesting level are few; this allows thousands of nested regions.
DEEP_RECURSION = 40000


class Reader:
    """Reads one chunk of text. `read()` gives the top-level ops; `expand(op)` reads deeper."""

    def __init__(self, text: str, start: int = 0, end: int | None = None, lazy: bool = True):
        self.text = text
        self.start = start
        self.end = len(text) if end is None else end
        self.issues: list[SyntaxIssue] = []
        self._issue_starts: set[int] = set()
        # When set, the regions of top-level ops (children of the outer `module`s) are skipped
        # and read on demand with `expand`: an edit or a query touches one of them only.
        self.lazy = lazy

    def _issue(self, start: int, end: int, message: str) -> None:
        """Record a syntax issue, clamped into the chunk; one per place (lazy re-reads repeat)."""
        start = max(self.start, min(start, self.end))
        end = max(start, min(end, self.end))
        if start in self._issue_starts:
            return
        self._issue_starts.add(start)
        self.issues.append(SyntaxIssue(start, end, message))

    # -- entry points -----------------------------------------------------------------
    def read(self) -> list[Op]:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_RECURSION))
        try:
            return self._read()
        except RecursionError:
            self._issue(self.start, self.start, "nesting too deep to read")
            return []
        finally:
            sys.setrecursionlimit(limit)

    def _read(self) -> list[Op]:
        # The ops of every block: a label at the top level (not valid MLIR, typed while editing)
        # starts a block of its own, whose ops are read and checked all the same.
        blocks = [Block(None, self.start)]
        pos = self.read_block_ops(self.start, None, blocks)
        while pos < self.end:  # a stray '}' at top level
            self._issue(pos, pos + 1, "unmatched '}'")
            pos += 1
            if pos < self.end:
                more = [Block(None, pos)]
                pos = self.read_block_ops(pos, None, more)
                blocks.extend(more)
        return [op for b in blocks for op in b.ops]

    def expand(self, op: Op) -> None:
        """Read the lazily skipped regions of `op` and of everything nested in it."""
        saved = self.lazy
        self.lazy = False
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_RECURSION))
        try:
            stack = [op]
            while stack:
                cur = stack.pop()
                if cur.lazy_regions:
                    lazy, cur.lazy_regions = cur.lazy_regions, ()
                    if not isinstance(cur.regions, list):
                        cur.regions = []
                    for s, e in lazy:
                        # The brace matcher's extent is authoritative: reading stays inside it,
                        # so broken text can never make two regions overlap.
                        region = Region(s, s)
                        chunk_end, self.end = self.end, e
                        try:
                            self._read_region(s, cur, region)
                        finally:
                            self.end = chunk_end
                        cur.regions.append(region)
                    cur.regions.sort(key=lambda r: r.start)
                for r in cur.regions:
                    for b in r.blocks:
                        stack.extend(b.ops)
        except RecursionError:
            self._issue(op.start, op.start, "nesting too deep to read")
        finally:
            self.lazy = saved
            sys.setrecursionlimit(limit)

    # -- blocks and regions -----------------------------------------------------------
    def _read_region(self, brace: int, parent: Op, region: Region) -> int:
        """Read a region whose `{` is at `brace`; returns the offset after its `}`."""
        blocks = [Block(None, brace + 1)]
        pos = self.read_block_ops(brace + 1, parent, blocks)
        region.blocks = blocks
        if pos >= self.end:
            self._issue(brace, brace + 1, "region '{' is never closed")
            region.end = self.end
            return self.end
        region.end = pos + 1
        return pos + 1

    def read_block_ops(self, pos: int, parent: Op | None, blocks: list[Block]) -> int:
        """Read ops until the enclosing `}` (returns its offset) or the end of the chunk."""
        text, end = self.text, self.end
        while True:
            pos = skip_ws(text, pos, end).end()
            if pos >= end:
                return end
            c = text[pos]
            if c == "}":
                return pos
            if c == "^":
                pos = self._read_label(pos, blocks)
                continue
            if parent is None and c in "#!":
                pos = self._skip_statement(pos)  # attribute / type alias definition
                continue
            if parent is None and text.startswith("{-#", pos):
                close = text.find("#-}", pos, end)
                if close == -1:
                    self._issue(pos, pos + 3, "'{-#' metadata is never closed")
                    return end
                pos = close + 3
                continue
            op, pos = self._read_op(pos, parent)
            if op is not None:
                blocks[-1].ops.append(op)

    def _read_label(self, pos: int, blocks: list[Block]) -> int:
        text = self.text
        m = LABEL.match(text, pos, self.end)
        if m is None:
            self._issue(pos, pos + 1, "expected a block label after '^'")
            return self._skip_line(pos)
        block = Block(m.group(0), pos)
        p = m.end()
        if p < self.end and text[p] == "(":
            close = self._match_paren(p)
            for a in BLOCK_ARG.finditer(text, p, close):
                if a.group(1) is not None:
                    block.args.append((a.group(1), a.start()))
            p = min(close + 1, self.end)  # an unmatched '(' on the last line ends at the text's end
        p = spaces(text, p, self.end).end()
        if p < self.end and text[p] == ":":
            p += 1
        else:
            self._issue(pos, m.end(), "expected ':' after block label")
        if len(blocks) == 1 and blocks[0].label is None and not blocks[0].ops:
            blocks[0] = block
        else:
            blocks.append(block)
        return p

    # -- ops --------------------------------------------------------------------------
    def _read_op(self, pos: int, parent: Op | None) -> tuple[Op | None, int]:
        text, end = self.text, self.end
        start = pos
        results = NO_RESULTS
        if text[pos] == "%":
            m = RESULTS.match(text, pos, end)
            if m is None:
                self._issue(pos, self._line_end(pos), "expected '=' after SSA result names")
                return None, self._skip_line(pos)
            results = [(r.group(1), r.start(), int(r.group(2) or 1))
                       for r in RESULT_ITEM.finditer(text, m.start(1), m.end(1))]
            pos = m.end()
        name_start = pos
        generic = False
        if pos < end and text[pos] == '"':
            m = STRING.match(text, pos, end)
            if m is None:
                self._issue(pos, self._line_end(pos), "unterminated string")
                return None, self._skip_line(pos)
            name = m.group(0)[1:-1]
            generic = True
        else:
            if not results and self.lazy and (plain := self._read_plain_unit(pos, parent)) is not None:
                return plain
            m = BARE_ID.match(text, pos, end)
            if m is None:
                stop = self._line_end(pos)
                self._issue(pos, max(stop, pos + 1), "expected an operation")
                return None, self._skip_line(pos)
            name = m.group(0)
        op = Op(name, start, m.end(), name_start, results, generic, parent)
        pos = self._read_op_body(m.end(), op)
        return op, pos

    def _read_plain_unit(self, pos: int, parent: Op | None) -> tuple[Op, int] | None:
        """A top-level op with a plain one-line header (PLAIN_UNIT_HEAD) and a small region that
        ends its line, read as `_read_op_body` reads it, in three matches; None for any other op
        (then the token loop reads it). The many small functions of a large module are such ops."""
        text, end = self.text, self.end
        head = PLAIN_UNIT_HEAD.match(text, pos, end)
        if head is None:
            return None
        brace = head.end() - 1
        close = self._small_braces_end(brace)
        if close is None:
            return None
        rest = LINE_REST.match(text, close, end)
        if rest is None or not self.is_region(brace) or text.find("cf.assert", pos, brace) != -1:
            return None
        name = BARE_ID.match(text, pos, end)
        assert name is not None, "PLAIN_UNIT_HEAD starts with a bare identifier"
        op = Op(name.group(0), pos, name.end(), pos, NO_RESULTS, False, parent)
        nxt = rest.end()
        if not is_unit(op) or (NOT_CONTINUED.match(text, nxt, end) is None and self.continues(close, nxt)):
            return None
        op.lazy_regions, op.lazy_children, op.end = [(brace, close)], [None], close
        return op, nxt

    def _read_op_body(self, pos: int, op: Op) -> int:
        """Scan from after the op name to its end; read or skip its regions. Sets `op.end`."""
        text, end = self.text, self.end
        search = TOKEN.search
        nesting = 0  # ( and [
        last = pos  # end of the last significant text seen on the current line
        while True:
            m = search(text, pos, end)
            if m is None:
                tail = text[pos:end].rstrip()
                op.end = pos + len(tail) if tail else last
                if nesting:
                    self._issue(op.start, op.end, "unbalanced '(' or '[' in operation")
                return end
            s = m.start()
            c = text[s]
            if s > pos:
                gap = text[pos:s].rstrip()
                if gap:
                    if nesting == 0 and "cf.assert" in gap:
                        a = BARE_ASSERT.search(text, pos, pos + len(gap))
                        if a is not None:  # `%0 = arith.constant 1 : i32 cf.assert %c, "a"`
                            op.end = pos + len(text[pos:a.start()].rstrip()) if text[pos:a.start()].strip() else last
                            return a.start()
                    last = pos + len(gap)
            if c == "\n":
                if nesting == 0 and not self.continues(last, s + 1):
                    op.end = last
                    return s + 1
                pos = s + 1
                continue
            if c == '"':
                if m.lastgroup == "long":
                    token_end, closed = string_end(text, s, end)
                else:
                    token_end, closed = m.end(), m.group("closed") is not None
                    if nesting == 0 and m.group(0) == '"cf.assert"' and text.startswith("(", token_end):
                        op.end = last
                        return s
                if not closed:
                    self._issue(s, token_end, "unterminated string")
                last = pos = token_end
                continue
            if c == "/":
                pos = m.end()
                continue
            if c in "([":
                nesting += 1
                last = pos = s + 1
                continue
            if c in ")]":
                nesting -= 1
                if nesting < 0:
                    self._issue(s, s + 1, f"unmatched '{c}'")
                    nesting = 0
                last = pos = s + 1
                continue
            if c == "{":
                last = pos = self._region_or_dictionary(s, op)
                continue
            # c == "}": the enclosing region ends inside this op's line
            if nesting:
                self._issue(op.start, s, "unbalanced '(' or '[' in operation")
            op.end = last
            return s

    def _small_braces_end(self, brace: int) -> int | None:
        """Offset after the `}` matching the `{` at `brace` when BALANCED matches the pair whole
        within BALANCED_CHARS; None for a larger or deeper one (`_skip_braces` reads it)."""
        m = BALANCED.match(self.text, brace, min(self.end, brace + BALANCED_CHARS))
        return m.end() if m is not None else None

    def _region_or_dictionary(self, s: int, op: Op) -> int:
        """Read (or skip, for a top-level op in a lazy read) the region whose `{` is at `s`, or skip
        the attribute dictionary there; the offset after its `}`."""
        if not self.is_region(s):
            small = self._small_braces_end(s)
            return small if small is not None else self._skip_braces(s)
        if not (self.lazy and is_unit(op)):
            region = Region(s, s)
            close = self._read_region(s, op, region)
            if not isinstance(op.regions, list):
                op.regions = []
            op.regions.append(region)
            return close
        children: ChildPairs | None = None  # not recorded for a small region
        if (small := self._small_braces_end(s)) is not None:
            close = small
        else:
            children = ChildPairs()
            close = self._skip_braces(s, children)
        if not (isinstance(op.lazy_regions, list) and isinstance(op.lazy_children, list)):
            op.lazy_regions, op.lazy_children = [], []
        op.lazy_regions.append((s, close))
        op.lazy_children.append(children)
        return close

    def continues(self, code_end: int, next_pos: int) -> bool:
        """Does the op go on past the newline? `code_end` ends this line's significant text."""
        text, end = self.text, self.end
        if code_end > 0:
            prev = text[code_end - 1]
            if prev in ",=:(" or text.startswith("->", code_end - 2):
                return True
        q = skip_ws(text, next_pos, end).end()
        if q >= end:
            return False
        c = text[q]
        if c in ":{([=@-<," or c.isdigit():
            return True
        if c == "%":  # operands on the next line, unless a new op `%a, %b = ...` starts
            return RESULTS.match(text, q, end) is None
        if c in "#!":  # an attribute or type, unless an alias definition starts
            return ALIAS_DEF.match(text, q, end) is None
        if (c.isascii() and c.isalpha()) or c == "_":
            m = BARE_ID.match(text, q, end)
            assert m is not None, "a letter or '_' starts a bare identifier"
            word = m.group(0)
            if word in CONTINUATION_WORDS:
                return True
            after = m.end()
            if after < end and text[after] in "(<[" and "." not in word:
                return True
            a2 = spaces(text, after, end).end()
            if a2 < end and text[a2] == "=" and not text.startswith("==", a2):
                return True
        return False

    def is_region(self, brace: int) -> bool:
        """Does the `{` at `brace` open a region (True) or an attribute dictionary (False)?"""
        text, end = self.text, self.end
        q = skip_ws(text, brace + 1, end).end()
        if q >= end:
            return True  # `{` then end of text: an unclosed region (reported by the caller)
        c = text[q]
        if c in "%^":
            return True
        if c == '"':
            m = STRING.match(text, q, end)
            if m is None:
                return False
            a = spaces(text, m.end(), end).end()
            return a < end and text[a] == "("
        if (c.isascii() and c.isalpha()) or c == "_":
            m = BARE_ID.match(text, q, end)
            assert m is not None, "a letter or '_' starts a bare identifier"
            a = spaces(text, m.end(), end).end()
            nc = text[a] if a < end else ""
            if nc == "=" and not text.startswith("==", a):
                return False
            if nc == ",":
                return False
            if nc == "}":
                if "." not in m.group(0):
                    return False
                before = text[max(0, brace - 16):brace].rstrip()
                return not (before.endswith("attributes") or before.endswith(")"))
            return True
        if c == "}":
            # `{}`: an empty region after `)` in generic form `({})` or an empty dictionary.
            before = text[max(0, brace - 2):brace].rstrip()
            return before.endswith("(") or before.endswith(",")
        return False

    def _skip_braces(self, brace: int, children: ChildPairs | None = None) -> int:
        """Offset after the `}` matching the `{` at `brace` (`reader_patterns.skip_braces`)."""
        close = skip_braces(self.text, brace, self.end, children)
        if close is None:
            self._issue(brace, brace + 1, "'{' is never closed")
            return self.end
        return close

    def _match_paren(self, p: int) -> int:
        """Offset of the `)` matching the `(` at p (or end of line on error)."""
        close = match_paren(self.text, p, self.end)
        if close is None:
            self._issue(p, p + 1, "unmatched '('")
            return self._line_end(p)
        return close

    def _skip_statement(self, pos: int) -> int:
        """Skip an alias definition (`#map = ...`, `!t = ...`), which may span lines."""
        op = Op("#alias", pos, pos, pos, [])
        return self._read_op_body(pos + 1, op)

    def _line_end(self, pos: int) -> int:
        e = self.text.find("\n", pos, self.end)
        return self.end if e == -1 else e

    def _skip_line(self, pos: int) -> int:
        e = self._line_end(pos)
        return e + 1 if e < self.end else self.end

