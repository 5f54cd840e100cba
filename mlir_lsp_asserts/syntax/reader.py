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

import re
import sys
from typing import Protocol, cast

from .op_tree import Block, ChildPairs, Op, Region, SyntaxIssue
from .tokens import STRING, STRING_BODY


class Matches(Protocol):  # `re.Pattern.match` of a pattern that matches the empty string: never None
    def __call__(self, string: str, pos: int = ..., endpos: int = ..., /) -> re.Match[str]: ...


# Python frames per nesting level are few; this allows thousands of nested regions.
DEEP_RECURSION = 40000

# Structural tokens only: strings (possibly unterminated), comments, brackets, newlines.
# A string of LONG_STRING characters or more (the hex of a dense literal: 16 MB on one line) is
# matched by its opening quote alone (group `long`) and its end found by `string_end` with str.find
# (memchr speed) instead of by the regex engine (100 ms per 16 MB).
LONG_STRING = 4096
# The quote of a long string (group `long`, the lookahead matches nothing) is tried inside the
# string alternative, not as an alternative of its own: that kept the regex's fast scan to the
# next quote, comment or bracket (as an alternative of its own it made the scan 50 % slower).
_LONG = r'(?P<long>(?=[^"\\\n]{' + str(LONG_STRING) + '}))|'
TOKEN = re.compile(f'"(?:{_LONG}{STRING_BODY}(?P<closed>")?)' + r"|//[^\n]*|[{}()\[\]\n]")
BRACES = re.compile(f'"(?:{_LONG}{STRING_BODY}"?)' + r"|//[^\n]*|[{}]")
STRING_TOKEN = re.compile(f'"{STRING_BODY}(")?')
# A `{...}` whose braces balance within BALANCED_DEPTH levels, matched by the regex engine alone
# (C speed): the same tokens as BRACES (a string, possibly unterminated, or a comment hides its
# braces). Possessive quantifiers and atomic groups: a text it does not fit (deeper nesting, an
# unclosed brace) fails in one pass, never by backtracking, and `_skip_braces` reads it instead.
_BRACE_FREE = r'(?>[^{}"/]++|"' + STRING_BODY + r'"?|//[^\n]*+|/)'
BALANCED_DEPTH = 6


def _balanced(depth: int) -> str:
    inner = r"\{" + _BRACE_FREE + r"*+\}"
    for _ in range(depth - 1):
        inner = r"\{(?:" + _BRACE_FREE + "|" + inner + r")*+\}"
    return inner


BALANCED = re.compile(_balanced(BALANCED_DEPTH))
# Regions up to this size are matched by BALANCED first: the small functions of a module of many
# (85,000 in 50 MB: their brace scan was a third of a server's open). A larger one is scanned by
# `_skip_braces`, which also records its child pairs (a big function is read statement by statement).
BALANCED_CHARS = 64 * 1024
# A top-level op whose header is one plain line: a bare name, then text without strings, comments,
# brackets or braces, parentheses one level deep, and the `{` of its region at the line's end
# (`func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {`). `Reader._read_plain_unit` reads such an
# op with this match and BALANCED (its body) where the token loop took a dozen steps.
_PLAIN = r'[^\n{}()\[\]"/]*+'
PLAIN_UNIT_HEAD = re.compile(r"[A-Za-z_][\w$.\-]*" + _PLAIN + r"(?:\(" + _PLAIN + r"\)" + _PLAIN + r")*+\{")
LINE_REST = re.compile(r"[ \t]*\n")
# What surely does not continue an op after its `}` (`Reader.continues` says False): the end, a
# `}`, or a dotted op name not followed by `=` (the next function).
NOT_CONTINUED = re.compile(r"\s*+(?:\}|\Z|[A-Za-z_][\w$\-]*+\.[\w$.\-]*+[ \t]*+(?:[^=]|\Z))")
SKIP_WS = re.compile(r"(?:\s+|//[^\n]*)*")
SPACES = re.compile(r"[ \t\r]*")
skip_ws, spaces = cast(Matches, SKIP_WS.match), cast(Matches, SPACES.match)  # both match "": everywhere
NO_RESULTS = cast("list[tuple[str, int, int]]", ())  # shared by the ops without results (not a list each)
RESULTS = re.compile(r"(%[\w$.\-]+(?::\d+)?(?:[ \t]*,[ \t]*%[\w$.\-]+(?::\d+)?)*)\s*=(?!=)\s*")
RESULT_ITEM = re.compile(r"%([\w$.\-]+)(?::(\d+))?")
BARE_ID = re.compile(r"[A-Za-z_][\w$.\-]*")
LABEL = re.compile(r"\^[\w$.\-]+")
BLOCK_ARG = re.compile(f'"{STRING_BODY}"' + r"|%([\w$.\-]+)")
BARE_ASSERT = re.compile(r"(?<![\w.$#!\-])cf\.assert(?=\s+%)")
ALIAS_DEF = re.compile(r"[#!][\w$.\-]+[ \t]*=")

# Words that continue an op on the next line instead of starting a new one.
CONTINUATION_WORDS = frozenset(
    """ins outs to step else attributes iter_args into do count dimensions permutation
    inits offsets sizes strides reduction workgroups bindings layout objects ordinal
    outer_dims_perm inner_dims_pos inner_tiles padding_value then from by with
    indexing_maps iterator_types lowering_config translation_info uses_of in at on
    default case and or unique_id""".split()
)


def string_end(text: str, s: int, end: int) -> tuple[int, bool]:
    """Where the string token at `s` ends (as `"STRING_BODY"?` matches it, before `end`) and
    whether its closing quote is there. A string without backslashes is measured with str.find."""
    q = text.find('"', s + 1, end)
    limit = end if q == -1 else q
    if (nl := text.find("\n", s + 1, limit)) != -1:
        limit = nl
    if text.find("\\", s + 1, limit) == -1:
        return (limit + 1, True) if limit == q else (limit, False)
    m = STRING_TOKEN.match(text, s, end)
    assert m is not None, "a quote starts a string token"
    return m.end(), m.group(1) is not None


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
        body = BALANCED.match(text, brace, min(end, brace + BALANCED_CHARS))
        if body is None:
            return None
        close = body.end()
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
                if self.is_region(s):
                    if self.lazy and is_unit(op):
                        children: ChildPairs | None = None  # not recorded for a small region
                        if (b := BALANCED.match(text, s, min(end, s + BALANCED_CHARS))) is not None:
                            close = b.end()
                        else:
                            children = ChildPairs()
                            close = self._skip_braces(s, children)
                        if not (isinstance(op.lazy_regions, list) and isinstance(op.lazy_children, list)):
                            op.lazy_regions, op.lazy_children = [], []
                        op.lazy_regions.append((s, close))
                        op.lazy_children.append(children)
                        last = pos = close
                    else:
                        region = Region(s, s)
                        last = pos = self._read_region(s, op, region)
                        if not isinstance(op.regions, list):
                            op.regions = []
                        op.regions.append(region)
                else:
                    b = BALANCED.match(text, s, min(end, s + BALANCED_CHARS))
                    last = pos = b.end() if b is not None else self._skip_braces(s)
                continue
            # c == "}": the enclosing region ends inside this op's line
            if nesting:
                self._issue(op.start, s, "unbalanced '(' or '[' in operation")
            op.end = last
            return s

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
        """Offset after the `}` matching the `{` at `brace` (strings and comments skipped).
        With `children`, the pairs directly inside it are recorded there (statements.py)."""
        text, end = self.text, self.end
        depth = 0
        opens, closes = (children.opens, children.closes) if children is not None else (None, None)
        pos = brace
        while pos < end:  # once more after each long string (`string_end`), else one pass
            for m in BRACES.finditer(text, pos, end):
                c = text[m.start()]
                if c == "{":
                    depth += 1
                    if depth == 2 and opens is not None:
                        opens.append(m.start())
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        return m.end()
                    if depth == 1 and closes is not None:
                        closes.append(m.end())
                elif m.lastgroup == "long":
                    pos = string_end(text, m.start(), end)[0]
                    break
            else:
                break
        if children is not None:
            del children.opens[len(children.closes):]  # a pair left open at the end of the text
        self._issue(brace, brace + 1, "'{' is never closed")
        return end

    def _match_paren(self, p: int) -> int:
        """Offset of the `)` matching the `(` at p (or end of line on error)."""
        text, end = self.text, self.end
        depth = 0
        pos = p
        while pos < end:  # once more after each long string (`string_end`), else one pass
            for m in TOKEN.finditer(text, pos, end):
                c = text[m.start()]
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        return m.start()
                elif c in "{}":
                    pos = end
                    break
                elif m.lastgroup == "long":
                    pos = string_end(text, m.start(), end)[0]
                    break
            else:
                break
        self._issue(p, p + 1, "unmatched '('")
        return self._line_end(p)

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


MODULE_NAMES = frozenset({"module", "builtin.module"})


def is_unit(op: Op) -> bool:
    """A top-level op: not a module, and every ancestor is a module (a function, a global...)."""
    if op.name in MODULE_NAMES:
        return False
    p = op.parent
    while p is not None:
        if p.name not in MODULE_NAMES:
            return False
        p = p.parent
    return True
