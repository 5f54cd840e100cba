"""Debug locations (`loc(...)`) in MLIR text, blanked out with every op kept on its line.

A bytecode file's text is printed with its debug locations (so that findings can say where an op
came from: `(from model.mlir:18:5)`). For a compile, those locations would win over the compiled
file's own lines, and the dispatch attribution, which follows locations back to the file being
counted, would find no op of it. `blank_locations` gives the same text without them: each
`loc(...)` after an op or a block argument removed, each location alias definition
(`#loc3 = loc(...)`) an empty line. The compiler then locates every op at its line of that text,
which is its line in the text the findings are about.
"""

from __future__ import annotations

import re

# ` loc(` where a location starts (after an op, a block argument, a function argument).
_LOC_START = re.compile(r"[ \t]loc\(")
# In a location: a string (which may hold parentheses), or a parenthesis.
_LOC_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[()]')
_ALIAS_LINE = re.compile(r"^#loc\w*\s*=\s*loc\(.*$", re.MULTILINE)
_QUOTE = re.compile(r'\\.|"')


def _in_string(text: str, at: int) -> bool:
    """Whether offset `at` is inside a string literal of its line (strings do not span lines)."""
    start = text.rfind("\n", 0, at) + 1
    return sum(1 for q in _QUOTE.finditer(text, start, at) if q.group() == '"') % 2 == 1


def blank_locations(text: str) -> str:
    """`text` without its `loc(...)` annotations; the same lines (alias lines left empty)."""
    if "loc(" not in text:
        return text
    text = _ALIAS_LINE.sub("", text)
    out: list[str] = []
    pos = 0
    for m in _LOC_START.finditer(text):
        if m.start() < pos or _in_string(text, m.start()):  # in a location removed, or a string
            continue
        depth, end = 0, None
        for t in _LOC_TOKEN.finditer(text, m.end() - 1):
            tok = t.group()
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
                if depth == 0:
                    end = t.end()
                    break
        if end is None or "\n" in text[m.start():end]:
            continue  # not a location as the printer writes one (on one line): left as it is
        out.append(text[pos:m.start()])
        pos = end
    out.append(text[pos:])
    return "".join(out)
