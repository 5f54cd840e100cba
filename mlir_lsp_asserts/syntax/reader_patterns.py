"""The patterns the structural reader (reader.py) scans with, and its scans of brackets: a brace's
or a parenthesis's match (`skip_braces`, `match_paren`), a small `{...}` matched whole by one regex
(BALANCED), a long string measured with str.find (`string_end`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..records import Protocol
from .op_tree import ChildPairs
from .tokens import STRING_BODY


class Matches(Protocol):  # `re.Pattern.match` of a pattern that matches the empty string: never None
    def __call__(self, string: str, pos: int = ..., endpos: int = ..., /) -> re.Match[str]: ...


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
skip_ws: Matches = SKIP_WS.match  # type: ignore[assignment]  # both match "": everywhere
spaces: Matches = SPACES.match  # type: ignore[assignment]
NO_RESULTS: list[tuple[str, int, int]] = ()  # type: ignore[assignment]  # shared by the ops without results (not a list each)
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


def tokens(pattern: re.Pattern[str], text: str, pos: int, end: int) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text, pos, end)` (TOKEN or BRACES) with each long string stepped over
    whole (`string_end`): the matches of what is not a long string, in order."""
    while pos < end:
        for m in pattern.finditer(text, pos, end):
            if m.lastgroup == "long":
                pos = string_end(text, m.start(), end)[0]
                break
            yield m
        else:
            return


def skip_braces(text: str, brace: int, end: int, children: ChildPairs | None = None) -> int | None:
    """Offset after the `}` matching the `{` at `brace` (strings and comments skipped), None when
    it is never closed before `end`. With `children`, the pairs directly inside it are recorded
    there (statements.py); a pair left open at `end` is not."""
    depth = 0
    opens, closes = (children.opens, children.closes) if children is not None else (None, None)
    for m in tokens(BRACES, text, brace, end):
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
    if children is not None:
        del children.opens[len(children.closes):]
    return None


def match_paren(text: str, p: int, end: int) -> int | None:
    """Offset of the `)` matching the `(` at p, None when a brace or `end` comes first."""
    depth = 0
    for m in tokens(TOKEN, text, p, end):
        c = text[m.start()]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return m.start()
        elif c in "{}":
            return None
    return None
