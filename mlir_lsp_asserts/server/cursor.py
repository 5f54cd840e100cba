"""A navigation request's position: its document, the place it resolves to, and the `%value`,
`^label` or `@symbol` under it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsprotocol import types

from ..incremental.located import Place
from .convert import to_range
from .open_documents import OpenDocument

_WORD = re.compile(r"[%^@]([\w$.\-]+)(?:#\d+)?|@\"[^\"\n]*\"")


@dataclass
class Cursor:
    """A request's position: its document and the place it resolves to."""

    doc: OpenDocument
    place: Place

    @property
    def text(self) -> str:
        return self.place.text

    @property
    def offset(self) -> int:
        return self.place.at

    @property
    def result(self):
        return self.place.result

    @property
    def lines(self):
        return self.place.lines

    def range(self, start: int, end: int) -> types.Range:
        return to_range(self.place.range(start, end))

    def word(self) -> tuple[str, str, int] | None:
        """(sigil, name, offset of the sigil) of the `%value`, `^label` or `@symbol` at the cursor."""
        text, off = self.text, self.offset
        ls = text.rfind("\n", 0, off) + 1
        le = text.find("\n", off)
        le = len(text) if le == -1 else le
        for m in _WORD.finditer(text, ls, le):
            if m.start() <= off <= m.end():
                tok = m.group(0)
                name = m.group(1) if m.group(1) is not None else tok[1:]
                return tok[0], name, m.start()
        return None


def cursor(ls, params) -> Cursor | None:
    doc = ls.document(params.text_document.uri)
    if doc is None or doc.error:
        return None
    return Cursor(doc, doc.live.place(params.position.line, params.position.character))
